// SPDX-License-Identifier: MIT
/*
 * The host's failover record (src/fostate.c): lines appended by the plugin, counted per NIC
 * by the doctor; a missing record is no move, a cut or foreign line counts nothing, a name
 * with a blank cannot shift the fields, a record over its cap takes no more lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "rn_fostate.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rn-fostate-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char p[128];

	(void)state;
	snprintf(p, sizeof(p), "%s/%s", dir, RN_FOSTATE_FILE);
	unlink(p);
	snprintf(p, sizeof(p), "%s/sub/%s", dir, RN_FOSTATE_FILE);
	unlink(p);
	snprintf(p, sizeof(p), "%s/sub", dir);
	rmdir(p);
	rmdir(dir);
	return 0;
}

static void counts_per_nic(void **state)
{
	uint64_t n, last;

	(void)state;
	assert_int_equal(rn_fostate_count(dir, "mlx5_0", 1, &n, &last), 0);
	assert_int_equal(n, 0);
	assert_int_equal(last, 0);
	assert_int_equal(rn_fostate_add(dir, "mlx5_0", 1, "ens1f0np0", "mlx5_1", "port-down"), 0);
	assert_int_equal(rn_fostate_add(dir, "mlx5_0", 1, "ens1f0np0", "mlx5_2", "completion"), 0);
	assert_int_equal(rn_fostate_add(dir, "mlx5_1", 1, "ens1f1np1", "mlx5_2", "peer-moved"), 0);
	assert_int_equal(rn_fostate_add(dir, "mlx5_0", 2, "ens1f0np0", "mlx5_2", "completion"), 0);
	assert_int_equal(rn_fostate_count(dir, "mlx5_0", 1, &n, &last), 0);
	assert_int_equal(n, 2);
	assert_true(last > 1700000000);
	assert_int_equal(rn_fostate_count(dir, "mlx5_1", 1, &n, &last), 0);
	assert_int_equal(n, 1);
	assert_int_equal(rn_fostate_count(dir, "mlx5_0", 2, &n, &last), 0);
	assert_int_equal(n, 1);
	/* every NIC named, in the order first seen, with its netdev */
	{
		struct rn_fostate_nic nics[4];

		assert_int_equal(rn_fostate_nics(dir, nics, 4), 3);
		assert_string_equal(nics[0].ibdev, "mlx5_0");
		assert_int_equal(nics[0].port, 1);
		assert_string_equal(nics[0].netdev, "ens1f0np0");
		assert_int_equal(nics[0].n, 2);
		assert_string_equal(nics[1].ibdev, "mlx5_1");
		assert_int_equal(nics[2].port, 2);
		assert_int_equal(rn_fostate_nics(dir, nics, 1), 1); /* no room: dropped */
	}
	/* a prefix of a name is another NIC */
	assert_int_equal(rn_fostate_count(dir, "mlx5_", 1, &n, &last), 0);
	assert_int_equal(n, 0);
}

static void bad_lines_count_nothing(void **state)
{
	char p[128], line[160];
	uint64_t n, last;
	FILE *f;

	(void)state;
	snprintf(p, sizeof(p), "%s/%s", dir, RN_FOSTATE_FILE);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("garbage\n-5 mlx5_0 1 eth0 mlx5_1 1 completion\n1700000000 mlx5_0 1 eth0 mlx5_1 1 "
	      "completion\n1700000001 mlx5_0 1 eth0",
	      f); /* the last line was cut */
	fclose(f);
	assert_int_equal(rn_fostate_count(dir, "mlx5_0", 1, &n, &last), 0);
	assert_int_equal(n, 1);
	assert_int_equal(last, 1700000000);
	/* a blank inside a name is written as "-": the fields after it stay in place */
	assert_int_equal(rn_fostate_add(dir, "mlx5_0", 1, "bad name", "mlx5_1", "completion"), 0);
	f = fopen(p, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		;
	fclose(f);
	assert_non_null(strstr(line, " mlx5_0 1 - mlx5_1 "));
	assert_int_equal(rn_fostate_count(dir, "mlx5_0", 1, &n, &last), 0);
	assert_int_equal(n, 2);
}

static void makes_its_directory_and_caps(void **state)
{
	char sub[128], p[160];
	uint64_t n, last;
	FILE *f;

	(void)state;
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	assert_int_equal(rn_fostate_add(sub, "rxe0", 1, "eth0", "rxe1", "port-down"), 0);
	assert_int_equal(rn_fostate_count(sub, "rxe0", 1, &n, &last), 0);
	assert_int_equal(n, 1);
	snprintf(p, sizeof(p), "%s/%s", sub, RN_FOSTATE_FILE);
	assert_int_equal(truncate(p, RN_FOSTATE_MAX + 1), 0);
	assert_int_equal(rn_fostate_add(sub, "rxe0", 1, "eth0", "rxe1", "port-down"), -EFBIG);
	f = fopen(p, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	assert_int_equal(ftell(f), RN_FOSTATE_MAX + 1);
	fclose(f);
	/* the directory comes from the environment */
	setenv("NCCL_ROCE_STATE_DIR", sub, 1);
	assert_string_equal(rn_fostate_dir(), sub);
	setenv("NCCL_ROCE_STATE_DIR", "", 1);
	assert_string_equal(rn_fostate_dir(), RN_FOSTATE_DIR);
	unsetenv("NCCL_ROCE_STATE_DIR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(counts_per_nic, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_lines_count_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(makes_its_directory_and_caps, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
