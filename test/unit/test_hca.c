// SPDX-License-Identifier: MIT
/* NCCL_IB_HCA matching, as NCCL: prefix unless '=', '^' excludes, ports, 32 entries. */
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
	/* only the first 32 entries count, as in NCCL */
	strcpy(spec, "=");
	for (i = 0; i < 32; i++)
		snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "dev%d,", i);
	strcat(spec, "late");
	assert_true(rn_hca_match(spec, "dev31", 1));
	assert_false(rn_hca_match(spec, "dev3x", 1));
	assert_false(rn_hca_match(spec, "late", 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_selects_all), cmocka_unit_test(test_prefix_match),
		cmocka_unit_test(test_exact_match),       cmocka_unit_test(test_ports),
		cmocka_unit_test(test_exclusion),         cmocka_unit_test(test_list_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
