// SPDX-License-Identifier: MIT
/*
 * The engine's lifecycle over fake verbs and the scripted route core: refcount,
 * the route check's effect on what is offered, and the one-line reasons.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "double_path.c"
#include "fake_verbs.h"
#include "fixture_sysfs.h"
#include "rn_dev.h"
#include "rn_log.h"
#include "rn_verbs.h"

static char warns[8][1024];
static int nwarn;

static void sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		 const char *msg)
{
	if (level == RN_LOG_WARN && nwarn < 8)
		snprintf(warns[nwarn++], sizeof(warns[0]), "%s", msg);
}

static struct fake_dev two[] = {
	{ .name = "rxe0", .nports = 1 },
	{ .name = "rxe1", .nports = 1 },
};

static int setup(void **state)
{
	fixture_sysfs_create();
	rn_log_set_sink(sink);
	double_path_reset();
	nwarn = 0;
	unsetenv("NCCL_ROCE_ROUTE_CHECK");
	unsetenv("NCCL_IB_HCA");
	return 0;
}

static int teardown(void **state)
{
	assert_null(rn_engine_current());
	/* the library's unload: what the engine kept goes, and nothing else is left */
	assert_int_equal(rn_engine_unload(), 0);
	assert_int_equal(fake_verbs_uninstall(), 0);
	assert_int_equal(double_path_snapshots, double_path_frees + !!double_path_snapshot_ret);
	fixture_sysfs_destroy();
	rn_log_set_sink(NULL);
	return 0;
}

static void test_no_device_clean_error(void **state)
{
	struct rn_engine *eng = (void *)1;

	fake_verbs_install(NULL, 0);
	assert_int_equal(rn_engine_get(&eng), -ENODEV);
	assert_null(eng);
	assert_null(rn_engine_current());
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(warns[0], "NET/RoCE : no RoCE device: no RDMA devices found"));
	/* safe after a failed get, and it does not go negative */
	rn_engine_put();
	rn_engine_put();
	assert_int_equal(double_path_snapshots, 0);
}

static void test_refcount(void **state)
{
	struct rn_engine *a, *b;

	fake_verbs_install(two, 2);
	assert_int_equal(rn_engine_get(&a), 0);
	assert_int_equal(rn_engine_get(&b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(a->ndevs, 2);
	/* initialised once */
	assert_int_equal(double_path_snapshots, 1);
	assert_int_equal(double_path_assessed, 2);
	assert_int_equal(double_path_logged, 2);
	rn_engine_put();
	assert_ptr_equal(rn_engine_current(), a);
	rn_engine_put();
	assert_null(rn_engine_current());
	/* unloading while a reference is held frees nothing */
	assert_int_equal(rn_engine_get(&a), 0);
	assert_int_equal(rn_engine_unload(), -EBUSY);
	assert_int_not_equal(fake_verbs_live_objects(), 0);
	rn_engine_put();
	/* the library's unload frees the devices; the next first reference starts over */
	assert_int_equal(rn_engine_unload(), 0);
	assert_int_equal(fake_verbs_live_objects(), 0);
	assert_int_equal(rn_engine_get(&a), 0);
	assert_int_equal(double_path_snapshots, 2);
	rn_engine_put();
	assert_int_equal(nwarn, 0);
}

/*
 * NCCL caches the device count and makes its vNICs once per load of the library: with
 * the library kept loaded (NCCL_NET_PLUGIN_REF_COUNT=1) the communicator made after
 * the last one was finalized still finds the same devices and the same vNIC index.
 */
static void test_discovery_outlives_last_reference(void **state)
{
	const int members[2] = { 0, 1 };
	struct rn_engine *eng;
	struct rn_dev *dev0;
	int vdev = -1;

	fake_verbs_install(two, 2);
	assert_int_equal(rn_engine_get(&eng), 0);
	dev0 = eng->devs[0];
	assert_int_equal(rn_vdev_make(eng, members, 2, &vdev), 0);
	assert_int_equal(vdev, 2);
	rn_engine_put();
	assert_null(rn_engine_current());
	/* still open: NCCL may make the next communicator on these indices at any time */
	assert_int_not_equal(fake_verbs_live_objects(), 0);
	assert_int_equal(rn_engine_get(&eng), 0);
	assert_int_equal(double_path_snapshots, 1); /* no second discovery */
	assert_int_equal(rn_engine_ndevs_all(eng), 3);
	assert_ptr_equal(eng->devs[0], dev0);
	assert_non_null(rn_engine_vdev(eng, 2));
	assert_string_equal(rn_engine_vdev(eng, 2)->name, "rxe0+rxe1");
	rn_engine_put();
	assert_int_equal(nwarn, 0);
}

/* A discovery that failed keeps nothing: the next communicator discovers again. */
static void test_failed_discovery_retried(void **state)
{
	struct rn_engine *eng;

	fake_verbs_install(NULL, 0);
	assert_int_equal(rn_engine_get(&eng), -ENODEV);
	rn_engine_put();
	assert_int_equal(fake_verbs_uninstall(), 0);
	fake_verbs_install(two, 2);
	assert_int_equal(rn_engine_get(&eng), 0);
	assert_int_equal(eng->ndevs, 2);
	rn_engine_put();
}

static void test_strict_drops_refused(void **state)
{
	struct rn_engine *eng;

	fake_verbs_install(two, 2);
	double_path_plan[0] = (struct double_nic_plan){ "rxe0", 1, 3, RN_VERDICT_REFUSED,
							RN_CAUSE_ARP_FLUX };
	assert_int_equal(rn_engine_get(&eng), 0);
	assert_int_equal(eng->ndevs, 1);
	assert_string_equal(eng->devs[0]->nic.ibdev, "rxe1");
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(warns[0], "1 RoCE NIC refused by the route check: rxe0:1"));
	assert_non_null(strstr(warns[0], "arp-flux"));
	rn_engine_put();
}

static void test_strict_all_refused(void **state)
{
	struct rn_engine *eng;

	fake_verbs_install(two, 2);
	double_path_plan[0] = (struct double_nic_plan){ "rxe0", 1, 3, RN_VERDICT_REFUSED,
							RN_CAUSE_ARP_FLUX };
	double_path_plan[1] = (struct double_nic_plan){ "rxe1", 1, 3, RN_VERDICT_REFUSED,
							RN_CAUSE_NO_RULE };
	assert_int_equal(rn_engine_get(&eng), -ENODEV);
	assert_int_equal(nwarn, 1);
	/* each NIC with the cause id that refused it, and the installed fix command */
	assert_non_null(strstr(warns[0], "rxe0:1 - arp-flux, rxe1:1 - no-rule"));
	assert_non_null(strstr(warns[0], "roce-policy-routing"));
	assert_null(strstr(warns[0], "scripts/"));
	assert_null(strchr(warns[0], '?'));
	assert_int_equal(fake_verbs_live_objects(), 0);
}

static void test_warn_keeps_refused(void **state)
{
	struct rn_engine *eng;

	setenv("NCCL_ROCE_ROUTE_CHECK", "warn", 1);
	fake_verbs_install(two, 2);
	double_path_plan[0] = (struct double_nic_plan){ "rxe0", 1, 3, RN_VERDICT_REFUSED,
							RN_CAUSE_ARP_FLUX };
	assert_int_equal(rn_engine_get(&eng), 0);
	assert_int_equal(eng->ndevs, 2);
	assert_int_equal(eng->cfg.route_check, RN_ROUTE_CHECK_WARN);
	rn_engine_put();
}

static void test_no_gid_never_offered(void **state)
{
	struct rn_engine *eng;

	setenv("NCCL_ROCE_ROUTE_CHECK", "off", 1);
	fake_verbs_install(two, 2);
	double_path_plan[1] = (struct double_nic_plan){ "rxe1", 1, -1, RN_VERDICT_REFUSED,
							RN_CAUSE_NO_GID };
	assert_int_equal(rn_engine_get(&eng), 0);
	assert_int_equal(eng->ndevs, 1);
	assert_string_equal(eng->devs[0]->nic.ibdev, "rxe0");
	rn_engine_put();
}

/* Every NIC without a GID: the summary names that, not the route check's remedies. */
static void test_all_no_gid_names_the_gid(void **state)
{
	struct rn_engine *eng;

	fake_verbs_install(two, 2);
	double_path_plan[0] = (struct double_nic_plan){ "rxe0", 1, -1, RN_VERDICT_REFUSED,
							RN_CAUSE_NO_GID };
	double_path_plan[1] = (struct double_nic_plan){ "rxe1", 1, -1, RN_VERDICT_REFUSED,
							RN_CAUSE_NO_GID };
	assert_int_equal(rn_engine_get(&eng), -ENODEV);
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(warns[0], "no RoCE device: all 2 RoCE NICs refused: "
					 "rxe0:1 - no-gid, rxe1:1 - no-gid"));
	assert_null(strstr(warns[0], "route check"));
	assert_null(strstr(warns[0], "roce-policy-routing"));
	assert_int_equal(fake_verbs_live_objects(), 0);
}

static int fork_inits, fork_init_live;

static int fork_init_stub(void)
{
	fork_inits++;
	fork_init_live = fake_verbs_live_objects();
	return 0;
}

/* ibv_fork_init() runs at init, before any verbs object exists (it fails after). */
static void test_fork_init_first(void **state)
{
	struct rn_verbs_ops o = { .fork_init = fork_init_stub };
	struct rn_engine *eng;

	fake_verbs_install(two, 2);
	rn_verbs_set_ops(&o);
	fork_inits = 0;
	fork_init_live = -1;
	assert_int_equal(rn_engine_get(&eng), 0);
	assert_int_equal(fork_inits, 1);
	assert_int_equal(fork_init_live, 0);
	rn_engine_put();
}

/* NCCL_IB_DISABLE=1: no device offered, nothing opened, as net_ib's init. */
static void test_ib_disable(void **state)
{
	struct rn_engine *eng = (void *)1;

	setenv("NCCL_IB_DISABLE", "1", 1);
	fake_verbs_install(two, 2);
	assert_int_equal(rn_engine_get(&eng), -ENODEV);
	assert_null(eng);
	assert_int_equal(double_path_snapshots, 0);
	assert_int_equal(fake_verbs_live_objects(), 0);
	assert_int_equal(nwarn, 0); /* asked for: not a warning */
	unsetenv("NCCL_IB_DISABLE");
	assert_int_equal(rn_engine_get(&eng), 0);
	rn_engine_put();
}

static void test_snapshot_failure(void **state)
{
	struct rn_engine *eng;

	fake_verbs_install(two, 2);
	double_path_snapshot_ret = -EPERM;
	assert_int_equal(rn_engine_get(&eng), -EPERM);
	assert_int_equal(nwarn, 1);
	assert_non_null(strstr(warns[0], "cannot read the host's addresses and routes"));
	assert_int_equal(fake_verbs_live_objects(), 0);
}

static void test_assess_failure_drops_nic(void **state)
{
	struct rn_engine *eng;

	fake_verbs_install(two, 2);
	double_path_assess_ret = -EIO;
	assert_int_equal(rn_engine_get(&eng), -ENODEV);
	/* one line per NIC that could not be judged, one for the outcome */
	assert_int_equal(nwarn, 3);
	assert_non_null(strstr(warns[2], "unassessed"));
}

static void test_hca_from_env(void **state)
{
	struct rn_engine *eng;

	setenv("NCCL_IB_HCA", "=rxe1", 1);
	fake_verbs_install(two, 2);
	assert_int_equal(rn_engine_get(&eng), 0);
	assert_int_equal(eng->ndevs, 1);
	assert_string_equal(eng->devs[0]->nic.ibdev, "rxe1");
	assert_string_equal(eng->cfg.ib_hca, "=rxe1");
	rn_engine_put();
}

static void *getter(void *arg)
{
	struct rn_engine *eng;
	int i;

	for (i = 0; i < 50; i++) {
		if (rn_engine_get(&eng))
			return (void *)1;
		rn_engine_put();
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t th[4];
	struct rn_engine *eng;
	void *ret;
	int i;

	fake_verbs_install(two, 2);
	/* a held reference keeps the engine alive: the threads only count */
	assert_int_equal(rn_engine_get(&eng), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, getter, NULL), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(double_path_snapshots, 1);
	assert_ptr_equal(rn_engine_current(), eng);
	rn_engine_put();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_device_clean_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refcount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_discovery_outlives_last_reference, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_failed_discovery_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strict_drops_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strict_all_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_warn_keeps_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_gid_never_offered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_all_no_gid_names_the_gid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ib_disable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fork_init_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_snapshot_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_assess_failure_drops_nic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hca_from_env, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
