// SPDX-License-Identifier: MIT
/*
 * Which libibverbs providers a host's devices need (rn_provider_plan), over a sysfs and
 * /etc fixture: by ibdev name, by kernel driver, software devices by their parent; and
 * every case where libibverbs must be left its own scan.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture_sysfs.h"
#include "rn_provider.h"

static struct rn_provider_plan plan;

static int setup(void **state)
{
	fixture_sysfs_create();
	unsetenv("RDMAV_DRIVERS");
	unsetenv("IBV_DRIVERS");
	return 0;
}

static int teardown(void **state)
{
	fixture_sysfs_destroy();
	unsetenv("RDMAV_DRIVERS");
	unsetenv("IBV_DRIVERS");
	return 0;
}

static void configured(const char *name, const char *text)
{
	char path[128];

	snprintf(path, sizeof(path), "/etc/libibverbs.d/%s.driver", name);
	fixture_sysfs_write(path, text);
}

/* The providers Debian 12 configures that matter here, and one that must not match. */
static void debian_config(void)
{
	configured("mlx4", "driver mlx4\n");
	configured("mlx5", "driver mlx5\n");
	configured("rxe", "driver rxe\n");
	configured("siw", "driver siw\n");
	configured("bnxt_re", "driver bnxt_re\n");
}

/* uverbs<n> -> ibdev @name; with @driver, its device's driver link. */
static void uverbs(int n, const char *name, const char *driver)
{
	char path[128], target[128];

	snprintf(path, sizeof(path), "/sys/class/infiniband_verbs/uverbs%d/ibdev", n);
	fixture_sysfs_write(path, name);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_type", name);
	fixture_sysfs_write(path, "1: CA");
	if (!driver)
		return;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/driver", name);
	snprintf(target, sizeof(target), "../../../../bus/pci/drivers/%s", driver);
	fixture_sysfs_symlink(path, target);
}

/* a software device: no device behind it, a parent netdev */
static void soft(int n, const char *name, const char *parent, const char *node_type)
{
	char path[128];

	uverbs(n, name, NULL);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent", name);
	fixture_sysfs_write(path, parent);
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_type", name);
	fixture_sysfs_write(path, node_type);
}

static int planned(const char *name)
{
	int i;

	for (i = 0; i < plan.n; i++)
		if (!strcmp(plan.name[i], name))
			return 1;
	return 0;
}

static void test_by_name_and_by_driver(void **state)
{
	debian_config();
	uverbs(0, "mlx5_0", "mlx5_core");
	uverbs(1, "rocep59s0f1", "mlx5_core"); /* renamed by udev: the driver names it */
	uverbs(2, "bnxt_re0", "bnxt_en");      /* the name does */
	soft(3, "rxe0", "eth3", "1: CA");
	rn_provider_plan(&plan);
	assert_int_equal(plan.ndevs, 4);
	assert_int_equal(plan.nconfigured, 5);
	assert_int_equal(plan.n, 3);
	assert_true(planned("mlx5"));
	assert_true(planned("bnxt_re"));
	assert_true(planned("rxe"));
	assert_false(planned("mlx4")); /* "mlx5_0" is no mlx4 */
	assert_false(planned("siw"));
}

static void test_renamed_soft_devices_by_parent(void **state)
{
	debian_config();
	soft(0, "roce_a", "eth1", "1: CA");
	soft(1, "iw_b", "eth2", "4: RNIC");
	rn_provider_plan(&plan);
	assert_int_equal(plan.n, 2);
	assert_true(planned("rxe"));
	assert_true(planned("siw"));
}

static void test_device_nobody_names_leaves_the_scan(void **state)
{
	debian_config();
	uverbs(0, "mlx5_0", "mlx5_core");
	uverbs(1, "hfi1_0", "hfi1"); /* served by hfi1verbs, which is not configured here */
	rn_provider_plan(&plan);
	assert_int_equal(plan.n, 0);
	assert_non_null(strstr(plan.why, "hfi1_0 (driver hfi1) names none of the 5 configured"));
}

static void test_user_providers_leave_the_scan(void **state)
{
	debian_config();
	uverbs(0, "mlx5_0", "mlx5_core");
	setenv("RDMAV_DRIVERS", "/opt/mine/libmlx5", 1);
	rn_provider_plan(&plan);
	assert_int_equal(plan.n, 0);
	assert_string_equal(plan.why, "RDMAV_DRIVERS is set");
	unsetenv("RDMAV_DRIVERS");
	setenv("IBV_DRIVERS", "mlx5", 1);
	rn_provider_plan(&plan);
	assert_int_equal(plan.n, 0);
	assert_string_equal(plan.why, "IBV_DRIVERS is set");
}

static void test_config_lines(void **state)
{
	/* comments, other keywords, a provider given by path, a file that is no .driver */
	configured("local", "# a comment\ndriver /opt/x/libmlx5\n  driver   rxe  \nbogus line\n");
	fixture_sysfs_write("/etc/libibverbs.d/mlx5.driver.dpkg-old", "driver mlx5\n");
	uverbs(0, "rxe0", NULL);
	uverbs(1, "mlx5_0", "mlx5_core");
	rn_provider_plan(&plan);
	assert_int_equal(plan.nconfigured, 1);
	assert_int_equal(plan.n, 0); /* mlx5 is configured only by path: not ours to load */
	assert_non_null(strstr(plan.why, "mlx5_0 (driver mlx5_core) names none of the 1"));
}

/* Eight providers is a plan; a ninth is more than the plan holds: libibverbs scans. */
static void test_as_many_providers_as_the_plan_holds(void **state)
{
	char name[8], dev[8], line[32];
	int i;

	for (i = 0; i <= RN_PROVIDER_MAX; i++) {
		snprintf(name, sizeof(name), "p%c", 'a' + i);
		snprintf(dev, sizeof(dev), "p%c0", 'a' + i);
		snprintf(line, sizeof(line), "driver %s\n", name);
		configured(name, line);
		if (i < RN_PROVIDER_MAX)
			uverbs(i, dev, NULL);
	}
	rn_provider_plan(&plan);
	assert_int_equal(plan.ndevs, RN_PROVIDER_MAX);
	assert_int_equal(plan.n, RN_PROVIDER_MAX);
	uverbs(RN_PROVIDER_MAX, "pi0", NULL);
	rn_provider_plan(&plan);
	assert_int_equal(plan.n, 0);
	assert_non_null(strstr(plan.why, "more than 8 providers"));
}

static void test_nothing_to_plan(void **state)
{
	rn_provider_plan(&plan);
	assert_int_equal(plan.n, 0);
	assert_non_null(strstr(plan.why, "no providers configured"));
	debian_config();
	rn_provider_plan(&plan);
	assert_int_equal(plan.n, 0);
	assert_int_equal(plan.ndevs, 0);
	assert_non_null(strstr(plan.why, "no uverbs device"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_by_name_and_by_driver, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renamed_soft_devices_by_parent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_device_nobody_names_leaves_the_scan, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_user_providers_leave_the_scan, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_config_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_as_many_providers_as_the_plan_holds, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_nothing_to_plan, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
