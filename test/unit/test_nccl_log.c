// SPDX-License-Identifier: MIT
/*
 * The tools' copy of NCCL's log filter (src/tools/nccl_log.c): NCCL_DEBUG's names,
 * NCCL_DEBUG_SUBSYS with '^', ALL and unknown words, NCCL_DEBUG_FILE's %h/%p.
 * The tools do not link the core, so the file is compiled in here directly.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../src/tools/nccl_log.c"

static void test_levels(void **state)
{
	assert_int_equal(nccl_log_parse_level(NULL, NCCL_LOG_WARN), NCCL_LOG_WARN);
	assert_int_equal(nccl_log_parse_level("VERSION", NCCL_LOG_WARN), NCCL_LOG_VERSION);
	assert_int_equal(nccl_log_parse_level("warn", NCCL_LOG_NONE), NCCL_LOG_WARN);
	assert_int_equal(nccl_log_parse_level("Info", NCCL_LOG_WARN), NCCL_LOG_INFO);
	assert_int_equal(nccl_log_parse_level("ABORT", NCCL_LOG_WARN), NCCL_LOG_ABORT);
	assert_int_equal(nccl_log_parse_level("trace", NCCL_LOG_WARN), NCCL_LOG_TRACE);
	/* NCCL shows nothing for a word it does not know */
	assert_int_equal(nccl_log_parse_level("verbose", NCCL_LOG_WARN), NCCL_LOG_NONE);
	assert_int_equal(nccl_log_parse_level("", NCCL_LOG_WARN), NCCL_LOG_NONE);
}

static void test_subsys(void **state)
{
	assert_int_equal(nccl_log_parse_subsys(NULL), NCCL_INIT | NCCL_BOOTSTRAP | NCCL_ENV);
	assert_int_equal(nccl_log_parse_subsys("NET"), NCCL_NET);
	assert_int_equal(nccl_log_parse_subsys("init,net"), NCCL_INIT | NCCL_NET);
	assert_int_equal(nccl_log_parse_subsys(
				 "COLL,P2P,SHM,GRAPH,TUNING,ALLOC,CALL,PROXY,NVLS,REG,PROFILE,RAS"),
			 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x100 | 0x200 | 0x400 | 0x800 | 0x2000 |
				 0x4000 | 0x8000);
	assert_true(nccl_log_parse_subsys("ALL") == ~0ull);
	assert_true(nccl_log_parse_subsys("^NET") == ~(uint64_t)NCCL_NET);
	assert_true(nccl_log_parse_subsys("^INIT,ENV") == ~(uint64_t)(NCCL_INIT | NCCL_ENV));
	assert_int_equal(nccl_log_parse_subsys("^ALL"), 0);
	/* unknown words and empty items count for nothing */
	assert_int_equal(nccl_log_parse_subsys("NETWORK,,NET,"), NCCL_NET);
	assert_int_equal(nccl_log_parse_subsys(""), 0);
	assert_true(nccl_log_parse_subsys("^") == ~0ull);
}

static void test_wanted(void **state)
{
	/* default mask (the test runs without NCCL_DEBUG_SUBSYS) */
	unsetenv("NCCL_DEBUG_SUBSYS");
	assert_true(nccl_log_wanted(NCCL_LOG_WARN, (unsigned long)NCCL_ALL, NCCL_LOG_WARN));
	/* a NET-only WARN is what NCCL hides by default: the bug this filter exposes */
	assert_false(nccl_log_wanted(NCCL_LOG_WARN, NCCL_NET, NCCL_LOG_WARN));
	assert_true(nccl_log_wanted(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, NCCL_LOG_INFO));
	assert_false(nccl_log_wanted(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, NCCL_LOG_WARN));
	assert_false(nccl_log_wanted(NCCL_LOG_INFO, NCCL_NET, NCCL_LOG_TRACE));
	assert_false(nccl_log_wanted(NCCL_LOG_NONE, (unsigned long)NCCL_ALL, NCCL_LOG_TRACE));
	assert_false(nccl_log_wanted(NCCL_LOG_WARN, (unsigned long)NCCL_ALL, NCCL_LOG_NONE));
}

static void test_file_pattern(void **state)
{
	char out[64];

	assert_int_equal(nccl_log_expand_file("/tmp/nccl.%h.%p", "node7", 4242, out, sizeof(out)),
			 0);
	assert_string_equal(out, "/tmp/nccl.node7.4242");
	assert_int_equal(nccl_log_expand_file("a%%b%xc%", "h", 1, out, sizeof(out)), 0);
	assert_string_equal(out, "a%b%xc%");
	assert_int_equal(nccl_log_expand_file("%h%h%h", "0123456789abcdef0123456789", 1, out, 40),
			 -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_subsys),
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_file_pattern),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
