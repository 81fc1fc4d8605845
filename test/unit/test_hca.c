// SPDX-License-Identifier: MIT
/* NCCL_IB_HCA matching, as NCCL: prefix unless '=', '^' excludes, ports, any number of entries, rail/plane. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rn_dev.h"

static void test_empty_selects_all(void **state)
{
	assert_true(rn_hca_match("", "mlx5_0", 1));
	assert_true(rn_hca_match(NULL, "rxe0", 2));
}

static void test_prefix_match(void **state)
{
	assert_true(rn_hca_match("mlx5", "mlx5_0", 1));
	assert_true(rn_hca_match("mlx5_1", "mlx5_1", 1));
	/* NCCL's documented quirk: mlx5_1 also selects mlx5_10 */
	assert_true(rn_hca_match("mlx5_1", "mlx5_10", 1));
	assert_false(rn_hca_match("mlx5_1", "mlx5_2", 1));
	assert_false(rn_hca_match("mlx5_10", "mlx5_1", 1));
	assert_false(rn_hca_match("rxe", "mlx5_0", 1));
}

static void test_exact_match(void **state)
{
	assert_true(rn_hca_match("=mlx5_1", "mlx5_1", 1));
	assert_false(rn_hca_match("=mlx5_1", "mlx5_10", 1));
	assert_false(rn_hca_match("=mlx5", "mlx5_0", 1));
	assert_true(rn_hca_match("=rxe0,rxe1", "rxe1", 1));
	assert_false(rn_hca_match("=rxe0,rxe1", "rxe10", 1));
}

static void test_ports(void **state)
{
	assert_true(rn_hca_match("mlx5_0:1", "mlx5_0", 1));
	assert_false(rn_hca_match("mlx5_0:1", "mlx5_0", 2));
	assert_true(rn_hca_match("mlx5_0:1,mlx5_0:2", "mlx5_0", 2));
	assert_true(rn_hca_match("mlx5_0:2,mlx5_1", "mlx5_1", 2));
	assert_false(rn_hca_match("mlx5_0:2,mlx5_1:1", "mlx5_1", 2));
	assert_true(rn_hca_match("=mlx5_0:1", "mlx5_0", 1));
	assert_false(rn_hca_match("=mlx5_0:1", "mlx5_0", 2));
}

static void test_exclusion(void **state)
{
	assert_false(rn_hca_match("^mlx5_0", "mlx5_0", 1));
	assert_true(rn_hca_match("^mlx5_0", "mlx5_1", 1));
	/* prefix exclusion takes mlx5_1x with it, exact does not */
	assert_false(rn_hca_match("^mlx5_1", "mlx5_10", 1));
	assert_true(rn_hca_match("^=mlx5_1", "mlx5_10", 1));
	assert_false(rn_hca_match("^=mlx5_1", "mlx5_1", 1));
	/* a port-qualified exclusion drops only that port */
	assert_false(rn_hca_match("^mlx5_0:2", "mlx5_0", 2));
	assert_true(rn_hca_match("^mlx5_0:2", "mlx5_0", 1));
}

static void test_list_edges(void **state)
{
	char spec[1024] = "";
	int i;

	assert_true(rn_hca_match(",,rxe0,", "rxe0", 1));
	assert_false(rn_hca_match(",,rxe0,", "rxe1", 1));
	/*
	 * NOTE: NCCL reads only the first 32 entries; we read them all, because a long
	 * exclusion list cut short silently uses NICs the user excluded.
	 */
	strcpy(spec, "=");
	for (i = 0; i < 40; i++)
		snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "dev%d,", i);
	strcat(spec, "late");
	assert_true(rn_hca_match(spec, "dev31", 1));
	assert_false(rn_hca_match(spec, "dev3x", 1));
	assert_true(rn_hca_match(spec, "late", 1));
	spec[0] = '^';
	assert_false(rn_hca_match(spec, "late", 1));
	assert_false(rn_hca_match(spec, "dev39", 1));
	assert_true(rn_hca_match(spec, "other", 1));
}

/* An exclusion list far past 256 characters (a 64-NIC host) is honoured to its end. */
static void test_long_exclusion(void **state)
{
	char spec[4096] = "^=";
	int i;

	for (i = 0; i < 200; i++)
		snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%smlx5_bond_%d:1",
			 i ? "," : "", i);
	assert_true(strlen(spec) > 2000);
	assert_false(rn_hca_match(spec, "mlx5_bond_0", 1));
	assert_false(rn_hca_match(spec, "mlx5_bond_199", 1));
	assert_true(rn_hca_match(spec, "mlx5_bond_199", 2));
	assert_true(rn_hca_match(spec, "mlx5_bond_200", 1));
}

/* NCCL 2.30's name[:port[:rail[:plane]]]: empty fields are "any"/absent. */
static void test_rail_plane(void **state)
{
	int rail, plane;

	assert_true(rn_hca_lookup("mlx5_0::3:1,mlx5_1:1:4", "mlx5_0", 2, &rail, &plane));
	assert_int_equal(rail, 3);
	assert_int_equal(plane, 1);
	assert_true(rn_hca_lookup("mlx5_0::3:1,mlx5_1:1:4", "mlx5_1", 1, &rail, &plane));
	assert_int_equal(rail, 4);
	assert_int_equal(plane, -1);
	assert_false(rn_hca_lookup("mlx5_0::3:1,mlx5_1:1:4", "mlx5_1", 2, &rail, &plane));
	assert_true(rn_hca_lookup("mlx5_2", "mlx5_2", 1, &rail, &plane));
	assert_int_equal(rail, -1);
	assert_int_equal(plane, -1);
	/* an exclusion gives no rail */
	assert_true(rn_hca_lookup("^mlx5_0::3:1", "mlx5_1", 1, &rail, &plane));
	assert_int_equal(rail, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_selects_all), cmocka_unit_test(test_prefix_match),
		cmocka_unit_test(test_exact_match),       cmocka_unit_test(test_ports),
		cmocka_unit_test(test_exclusion),         cmocka_unit_test(test_list_edges),
		cmocka_unit_test(test_long_exclusion),    cmocka_unit_test(test_rail_plane),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
