// SPDX-License-Identifier: MIT
/*
 * The logger bridge as NCCL sees it: NCCL drops a line whose flags miss
 * NCCL_DEBUG_SUBSYS (default INIT,BOOTSTRAP,ENV), WARNs included, so every WARN
 * the plugin emits must carry NCCL_ALL while INFO keeps its subsystem. Checked on
 * the bridge for every level and subsystem, and on the real WARN paths of init
 * (no device, every NIC refused, bad env value, a misused call). Also: the first
 * INFO line names the plugin's version and the table NCCL chose.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "double_net.c"
#include "double_path.c"
#include "fake_verbs.h"
#include "fixture_sysfs.h"
#include "plugin.h"
#include "rn_log.h"
#include "rn_version.h"

#define MAX_LINES 64

static struct line {
	ncclDebugLogLevel level;
	unsigned long flags;
	char msg[512];
} lines[MAX_LINES];
static int nlines;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	va_list ap;

	if (nlines == MAX_LINES)
		return;
	lines[nlines].level = level;
	lines[nlines].flags = flags;
	va_start(ap, fmt);
	vsnprintf(lines[nlines].msg, sizeof(lines[nlines].msg), fmt, ap);
	va_end(ap);
	nlines++;
}

/* What NCCL's filter lets through for @mask (its debug.cc rule). */
static int nccl_shows(const struct line *l, unsigned long mask)
{
	return (l->flags & mask) != 0;
}

#define NCCL_DEFAULT_SUBSYS (NCCL_INIT | NCCL_BOOTSTRAP | NCCL_ENV)

/* Every WARN seen so far carries NCCL_ALL; returns how many there were. */
static int check_warns(void)
{
	int i, n = 0;

	for (i = 0; i < nlines; i++) {
		if (lines[i].level != NCCL_LOG_WARN)
			continue;
		n++;
		assert_int_equal(lines[i].flags, (unsigned long)NCCL_ALL);
		/* visible whatever subsystem a user asked for */
		assert_true(nccl_shows(&lines[i], NCCL_DEFAULT_SUBSYS));
		assert_true(nccl_shows(&lines[i], NCCL_COLL));
		assert_true(nccl_shows(&lines[i], ~(unsigned long)NCCL_NET));
	}
	return n;
}

static const char *find(const char *what)
{
	int i;

	for (i = 0; i < nlines; i++)
		if (strstr(lines[i].msg, what))
			return lines[i].msg;
	return NULL;
}

static struct fake_dev devs[] = {
	{ .name = "mlx5_0", .guid = 0x1234, .nports = 1 },
	{ .name = "mlx5_1", .guid = 0x5678, .nports = 1 },
};

static int setup(void **state)
{
	fixture_sysfs_create();
	double_path_reset();
	double_net_reset();
	memset(lines, 0, sizeof(lines));
	nlines = 0;
	fake_verbs_install(devs, 2);
	return 0;
}

static int teardown(void **state)
{
	assert_null(rn_engine_current());
	assert_int_equal(rn_engine_unload(), 0); /* as dlclose */
	assert_int_equal(fake_verbs_uninstall(), 0);
	fixture_sysfs_destroy();
	rn_plugin_log_attach(NULL);
	unsetenv("NCCL_IB_TIMEOUT");
	return 0;
}

/* Runs first: the version line is logged once per process, by the first init. */
static void test_first_info_names_version_and_abi(void **state)
{
	int i;

	fake_verbs_install(NULL, 0);
	/* NCCL 2.18 would pick v9: the legacy init, which here finds no device */
	assert_int_equal(ncclNetPlugin_v9.init(logger), ncclSystemError);
	assert_int_equal(rn_plugin_abi(), 9);
	for (i = 0; i < nlines && lines[i].level != NCCL_LOG_INFO; i++)
		;
	assert_true(i < nlines);
	assert_non_null(strstr(lines[i].msg, "nccl-net-roce " RN_VERSION));
	assert_non_null(strstr(lines[i].msg, "ABI v9"));
	/* an init-time line: shown under NCCL's default subsystems at NCCL_DEBUG=INFO */
	assert_true(nccl_shows(&lines[i], NCCL_DEFAULT_SUBSYS));
	assert_true(lines[i].flags & NCCL_NET);
	assert_string_not_equal(RN_VERSION, "unknown");
	assert_int_equal(check_warns(), 1);
	assert_non_null(find("no RoCE device: no RDMA devices found"));
}

/* The bridge itself: every level and subsystem combination the library can pass. */
static void test_bridge_flags(void **state)
{
	static const unsigned long subs[] = {
		0,
		RN_SUB_INIT,
		RN_SUB_NET,
		RN_SUB_ENV,
		RN_SUB_INIT | RN_SUB_NET,
		RN_SUB_INIT | RN_SUB_ENV,
		RN_SUB_INIT | RN_SUB_NET | RN_SUB_ENV,
	};
	size_t i;

	rn_plugin_log_attach(logger);
	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		nlines = 0;
		rn_warn(subs[i], "w");
		rn_info(subs[i], "i");
		rn_trace(subs[i], "t");
		assert_int_equal(nlines, 3);
		assert_int_equal(lines[0].flags, (unsigned long)NCCL_ALL);
		/* INFO and TRACE keep what the caller said; none said means NET */
		assert_int_equal(lines[1].flags, subs[i] ? subs[i] : (unsigned long)NCCL_NET);
		assert_int_equal(lines[2].flags, lines[1].flags);
		assert_int_equal(rn_plugin_log_flags(RN_LOG_WARN, subs[i]),
				 (unsigned long)NCCL_ALL);
	}
	/* the config line (INIT|ENV) is not a NET line: NCCL_DEBUG_SUBSYS=NET hides it */
	assert_int_equal(rn_plugin_log_flags(RN_LOG_INFO, RN_SUB_INIT | RN_SUB_ENV),
			 (unsigned long)(NCCL_INIT | NCCL_ENV));
	/* NCCL's numbers, which the bridge passes through */
	assert_int_equal(RN_SUB_INIT, NCCL_INIT);
	assert_int_equal(RN_SUB_NET, NCCL_NET);
	assert_int_equal(RN_SUB_ENV, NCCL_ENV);
	assert_int_equal(RN_LOG_WARN, NCCL_LOG_WARN);
	assert_int_equal(RN_LOG_INFO, NCCL_LOG_INFO);
}

/* Every NIC refused by the route check: the WARN that says why and what fixes it. */
static void test_refusal_warn(void **state)
{
	void *ctx = (void *)0x1;

	double_path_plan[0] = (struct double_nic_plan){ "mlx5_0", 1, 3, RN_VERDICT_REFUSED,
							RN_CAUSE_ARP_FLUX };
	double_path_plan[1] = (struct double_nic_plan){ "mlx5_1", 1, 3, RN_VERDICT_REFUSED,
							RN_CAUSE_NO_RULE };
	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, NULL, logger, NULL), ncclSystemError);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
	assert_true(check_warns() >= 1);
	assert_non_null(find("refused by the route check"));
	assert_non_null(find("arp-flux"));
}

/* A bad value in the environment (an ENV-only WARN in the code) and plugin misuse. */
static void test_env_and_misuse_warns(void **state)
{
	void *ctx = NULL;
	int n = 0;

	setenv("NCCL_IB_TIMEOUT", "99", 1);
	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, NULL, logger, NULL), ncclSuccess);
	assert_non_null(find("NCCL_IB_TIMEOUT='99' is not valid"));
	assert_int_equal(ncclNetPlugin_v12.getProperties(7, NULL), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.finalize((void *)&n), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
	assert_int_equal(check_warns(), 3);
	/* the INFO lines kept their subsystems: none is NCCL_ALL */
	for (n = 0; n < nlines; n++)
		if (lines[n].level == NCCL_LOG_INFO)
			assert_int_not_equal(lines[n].flags, (unsigned long)NCCL_ALL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_first_info_names_version_and_abi),
		T(test_bridge_flags),
		T(test_refusal_warn),
		T(test_env_and_misuse_warns),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
