// SPDX-License-Identifier: MIT
/* The knob table: defaults, good values, bad values warned and defaulted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "rn_dev.h"
#include "rn_log.h"
#include "rn_param.h"

static char last_warn[1024];
static int nwarn;

static void sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		 const char *msg)
{
	if (level == RN_LOG_WARN) {
		nwarn++;
		snprintf(last_warn, sizeof(last_warn), "%s", msg);
	}
}

static int setup(void **state)
{
	static const char *vars[] = { "NCCL_IB_HCA",           "NCCL_IB_GID_INDEX",
				      "NCCL_IB_ADDR_FAMILY",   "NCCL_IB_TIMEOUT",
				      "NCCL_ROCE_ROUTE_CHECK", "NCCL_IB_TC",
				      "NCCL_IB_ADDR_RANGE",    "NCCL_IB_DISABLE",
				      "NCCL_IB_MQP_RETRY_CNT" };
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	nwarn = 0;
	last_warn[0] = 0;
	rn_log_set_sink(sink);
	return 0;
}

static int teardown(void **state)
{
	rn_log_set_sink(NULL);
	return 0;
}

static void test_defaults_are_ncclS(void **state)
{
	struct rn_config c;

	assert_int_equal(rn_config_load(&c), 0);
	assert_int_equal(c.gid_index, -1);
	assert_int_equal(c.addr_family, AF_INET);
	assert_int_equal(c.roce_version, 2);
	assert_int_equal(c.timeout, 20);
	assert_int_equal(c.retry_cnt, 7);
	assert_int_equal(c.tc, -1);
	assert_int_equal(c.qps_per_conn, 1);
	assert_int_equal(c.route_check, RN_ROUTE_CHECK_STRICT);
	assert_string_equal(c.ib_hca, "");
	assert_int_equal(nwarn, 0);
}

static void test_good_values(void **state)
{
	struct rn_config c;

	setenv("NCCL_IB_GID_INDEX", "3", 1);
	setenv("NCCL_IB_ADDR_FAMILY", "af_inet6", 1);
	setenv("NCCL_ROCE_ROUTE_CHECK", "warn", 1);
	setenv("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1", 1);
	setenv("NCCL_IB_TC", "0x68", 1);
	assert_int_equal(rn_config_load(&c), 0);
	assert_int_equal(c.gid_index, 3);
	assert_int_equal(c.addr_family, AF_INET6);
	assert_int_equal(c.route_check, RN_ROUTE_CHECK_WARN);
	assert_string_equal(c.ib_hca, "=mlx5_0:1,mlx5_1");
	assert_int_equal(c.tc, 104);
}

static void test_bad_values_warn_and_default(void **state)
{
	struct rn_config c;

	setenv("NCCL_IB_TIMEOUT", "40", 1);          /* out of range */
	setenv("NCCL_IB_GID_INDEX", "three", 1);     /* not a number */
	setenv("NCCL_ROCE_ROUTE_CHECK", "maybe", 1); /* not a choice */
	assert_int_equal(rn_config_load(&c), 3);
	assert_int_equal(nwarn, 3);
	assert_int_equal(c.timeout, 20);
	assert_int_equal(c.gid_index, -1);
	assert_int_equal(c.route_check, RN_ROUTE_CHECK_STRICT);
	/* The WARN names the variable and what it accepts. */
	assert_non_null(strstr(last_warn, "NCCL_ROCE_ROUTE_CHECK"));
	assert_non_null(strstr(last_warn, "strict, warn, off"));
}

/* NCCL_IB_ADDR_RANGE: garbage, a bad prefix, the other family: each defaulted, one WARN. */
static void test_addr_range_checked(void **state)
{
	static const char *bad[] = { "garbage", "/99", "198.18.0.0/99", "198.18.0.0/",
				     "fd00::/64" };
	struct rn_config c;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nwarn = 0;
		setenv("NCCL_IB_ADDR_RANGE", bad[i], 1);
		assert_int_equal(rn_config_load(&c), 1);
		assert_int_equal(nwarn, 1);
		assert_string_equal(c.addr_range, "");
		assert_non_null(strstr(last_warn, "NCCL_IB_ADDR_RANGE"));
		assert_non_null(strstr(last_warn, "default"));
	}
	nwarn = 0;
	setenv("NCCL_IB_ADDR_RANGE", "198.18.0.0/15", 1);
	assert_int_equal(rn_config_load(&c), 0);
	assert_string_equal(c.addr_range, "198.18.0.0/15");
	setenv("NCCL_IB_ADDR_FAMILY", "AF_INET6", 1);
	setenv("NCCL_IB_ADDR_RANGE", "fd00::/64", 1);
	assert_int_equal(rn_config_load(&c), 0);
	assert_string_equal(c.addr_range, "fd00::/64");
	assert_int_equal(nwarn, 0);
}

/* NCCL_IB_HCA: a list far past 256 characters is kept whole; a list of bad entries selects none. */
static void test_hca_long_and_malformed(void **state)
{
	struct rn_config c;
	char spec[3000] = "^";
	int i;

	for (i = 0; i < 150; i++)
		snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%smlx5_%d:1",
			 i ? "," : "", i);
	assert_true(strlen(spec) > 1000);
	setenv("NCCL_IB_HCA", spec, 1);
	assert_int_equal(rn_config_load(&c), 0);
	assert_string_equal(c.ib_hca, spec);
	setenv("NCCL_IB_HCA", "mlx5_0::3:1,mlx5_1:1", 1); /* NCCL 2.30 rail/plane */
	assert_int_equal(rn_config_load(&c), 0);
	assert_int_equal(nwarn, 0);
	/* its only entry bad: nothing selected, never every NIC */
	setenv("NCCL_IB_HCA", "mlx5_0:one", 1);
	assert_int_equal(rn_config_load(&c), 1);
	assert_false(rn_hca_match(c.ib_hca, "mlx5_0", 1));
	assert_false(rn_hca_match(c.ib_hca, "mlx5_1", 1));
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(last_warn, "NCCL_IB_HCA"));
	assert_non_null(strstr(last_warn, "'mlx5_0:one'"));
	assert_non_null(strstr(last_warn, "name[:port[:rail[:plane]]]"));
	assert_non_null(strstr(last_warn, "no NIC is selected"));
}

/* As NCCL: a bad entry of an inclusion list is left out alone, one WARN naming it. */
static void test_hca_bad_entry_alone(void **state)
{
	struct rn_config c;

	setenv("NCCL_IB_HCA", "mlx5_0,mlx5_1:x,mlx5_2:1,:3", 1);
	assert_int_equal(rn_config_load(&c), 1);
	assert_string_equal(c.ib_hca, "mlx5_0,mlx5_2:1");
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(last_warn, "'mlx5_1:x', ':3'"));
	assert_non_null(strstr(last_warn, "using the other 2"));
	assert_true(rn_hca_match(c.ib_hca, "mlx5_0", 1));
	assert_true(rn_hca_match(c.ib_hca, "mlx5_2", 1));
	assert_false(rn_hca_match(c.ib_hca, "mlx5_2", 2));
	assert_false(rn_hca_match(c.ib_hca, "mlx5_1", 1));
	/* the exact-match marker stays with the entries kept */
	nwarn = 0;
	setenv("NCCL_IB_HCA", "=mlx5_0,mlx5_1:1:2:3:4", 1);
	assert_int_equal(rn_config_load(&c), 1);
	assert_string_equal(c.ib_hca, "=mlx5_0");
	assert_int_equal(nwarn, 1);
}

/*
 * An exclusion list that cannot be read whole (a bad entry, or longer than the field)
 * selects no NIC: the entry lost might be the one NIC the user keeps out (issue #21).
 */
static void test_hca_unreadable_exclusion_selects_none(void **state)
{
	static char spec[6000];
	struct rn_config c;
	int i;

	setenv("NCCL_IB_HCA", "^mlx5_0,mlx5_1:bad", 1);
	assert_int_equal(rn_config_load(&c), 1);
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(last_warn, "'mlx5_1:bad'"));
	assert_non_null(strstr(last_warn, "no NIC is selected"));
	assert_false(rn_hca_match(c.ib_hca, "mlx5_0", 1));
	assert_false(rn_hca_match(c.ib_hca, "mlx5_2", 1));
	strcpy(spec, "^");
	for (i = 0; strlen(spec) < RN_HCA_STR_MAX + 100; i++)
		snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%smlx5_%d:1",
			 i ? "," : "", i);
	nwarn = 0;
	setenv("NCCL_IB_HCA", spec, 1);
	assert_int_equal(rn_config_load(&c), 1);
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(last_warn, "longer than 4095 characters"));
	assert_false(rn_hca_match(c.ib_hca, "mlx5_0", 1));
	assert_false(rn_hca_match(c.ib_hca, "other0", 1));
	/* an inclusion list that long keeps the whole entries that fit */
	spec[0] = ',';
	nwarn = 0;
	setenv("NCCL_IB_HCA", spec + 1, 1);
	assert_int_equal(rn_config_load(&c), 1);
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(last_warn, "entries that fit"));
	assert_true(strlen(c.ib_hca) < RN_HCA_STR_MAX);
	assert_true(rn_hca_match(c.ib_hca, "mlx5_0", 1));
	assert_true(rn_hca_match(c.ib_hca, "mlx5_300", 1));
	assert_false(rn_hca_match(c.ib_hca, "other0", 1));
	assert_int_not_equal(c.ib_hca[strlen(c.ib_hca) - 1], ',');
	/* what came out loads again as it is, without a WARN */
	{
		struct rn_config c2;
		char *copy = strdup(c.ib_hca);

		setenv("NCCL_IB_HCA", copy, 1);
		nwarn = 0;
		assert_int_equal(rn_config_load(&c2), 0);
		assert_string_equal(c2.ib_hca, copy);
		free(copy);
	}
}

/* The knobs net_ib has that we honour, at NCCL's defaults. */
static void test_net_ib_knobs(void **state)
{
	struct rn_config c;

	assert_int_equal(rn_config_load(&c), 0);
	assert_int_equal(c.ib_disable, 0);
	assert_int_equal(c.mqp_retry_all, 0);
	assert_int_equal(c.mqp_retry_cnt, 34);
	assert_int_equal(c.mqp_retry_sleep_ms, 100);
	setenv("NCCL_IB_DISABLE", "1", 1);
	setenv("NCCL_IB_MQP_RETRY_CNT", "-3", 1);
	assert_int_equal(rn_config_load(&c), 1);
	assert_int_equal(c.ib_disable, 1);
	assert_int_equal(c.mqp_retry_cnt, 34);
	assert_non_null(strstr(last_warn, "NCCL_IB_MQP_RETRY_CNT"));
}

static void test_format_lists_knobs(void **state)
{
	struct rn_config c;
	char buf[2048];

	setenv("NCCL_IB_HCA", "mlx5_2", 1);
	rn_config_load(&c);
	assert_int_equal(rn_config_format(&c, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "IB_HCA=mlx5_2"));
	assert_non_null(strstr(buf, "ROCE_ROUTE_CHECK=strict"));
	assert_int_equal(rn_config_format(&c, buf, 16), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults_are_ncclS, setup, teardown),
		cmocka_unit_test_setup_teardown(test_good_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_values_warn_and_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_format_lists_knobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_addr_range_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hca_long_and_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hca_bad_entry_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hca_unreadable_exclusion_selects_none, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_net_ib_knobs, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
