// SPDX-License-Identifier: MIT
/*
 * The fleet sweep's MPI-free half (src/doctor/doctor_sweep.c, compiled in here with the
 * JSON writer): the round-robin tournament meets every pair of hosts exactly once in
 * N-1 rounds (N odd: N rounds, one bye each), the cells' worst cause, the firewall
 * inference (a NIC that times out with every peer, not one that fails with one host
 * only), the exit status and the JSON report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../src/doctor/doctor_util.c"
#include "../../src/doctor/doctor_sweep.c"
#include "../../src/doctor/doctor_json.c"
#include "../../src/doctor/doctor_wire.c"

/* doctor_host.c is the CLI's report: a one-line stand-in for the grouped findings. */
void rn_doctor_print_grouped(FILE *f, const struct rn_doctor_item *it, int n, int all)
{
	int i;

	for (i = 0; i < n; i++)
		fprintf(f, "%s %s\n", it[i].who, rn_cause_id(it[i].f->cause));
}

static void test_schedule(void **state)
{
	int n, r, k, p;

	for (n = 1; n <= 70; n++) {
		char *met = calloc((size_t)(n * n), 1);

		assert_non_null(met);
		assert_int_equal(rn_sweep_rounds(n), n < 2 ? 0 : n % 2 ? n : n - 1);
		for (r = 0; r < rn_sweep_rounds(n); r++) {
			int byes = 0;

			for (k = 0; k < n; k++) {
				p = rn_sweep_partner(n, r, k);
				if (p < 0) {
					byes++;
					continue;
				}
				assert_true(p < n);
				assert_int_not_equal(p, k);
				assert_int_equal(rn_sweep_partner(n, r, p), k);
				if (k < p) {
					assert_int_equal(met[k * n + p], 0);
					met[k * n + p] = 1;
				}
			}
			assert_int_equal(byes, n % 2);
		}
		for (k = 0; k < n; k++)
			for (p = k + 1; p < n; p++)
				assert_int_equal(met[k * n + p], 1);
		assert_int_equal(rn_sweep_partner(n, rn_sweep_rounds(n), 0), -1);
		free(met);
	}
	assert_int_equal(rn_sweep_pair_index(4, 0, 1), 0);
	assert_int_equal(rn_sweep_pair_index(4, 3, 2), 5);
	assert_int_equal(rn_sweep_pair_index(1000, 998, 999), 1000L * 999 / 2 - 1);
}

/* 3 hosts x 2 NICs, every pair checked, every probe ok. */
static void fleet(struct rn_sweep *s)
{
	int h, a, b, c;

	assert_int_equal(rn_sweep_init(s, 3), 0);
	for (h = 0; h < 3; h++) {
		s->hosts[h].facts = s->hosts[h].results = 1;
		snprintf(s->hosts[h].name, sizeof(s->hosts[h].name), "h%d", h);
		s->hosts[h].inv = calloc(1, sizeof(struct rn_dw_inv));
		assert_non_null(s->hosts[h].inv);
		s->hosts[h].inv->nnics = 2;
		strcpy(s->hosts[h].inv->nics[0].netdev, "eth0");
		strcpy(s->hosts[h].inv->nics[1].netdev, "eth1");
	}
	for (a = 0; a < 3; a++)
		for (b = a + 1; b < 3; b++) {
			struct rn_sweep_pair *p = calloc(1, sizeof(*p));

			assert_non_null(p);
			p->a = a;
			p->b = b;
			p->na = p->nb = 2;
			p->cells = calloc(4, sizeof(*p->cells));
			assert_non_null(p->cells);
			for (c = 0; c < 4; c++) {
				p->cells[c].a_checked = p->cells[c].b_checked = 1;
				p->cells[c].rdma = RN_SW_RDMA_OK;
			}
			s->pairs[rn_sweep_pair_index(3, a, b)] = p;
		}
}

static struct rn_sweep_cell *cell(struct rn_sweep *s, int a, int i, int b, int j)
{
	struct rn_sweep_pair *p = s->pairs[rn_sweep_pair_index(s->n, a, b)];

	return &p->cells[i * p->nb + j];
}

static void test_cells_and_exit(void **state)
{
	struct rn_sweep s;
	char buf[64];

	fleet(&s);
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_OK);
	assert_string_equal(rn_sweep_cell_str(cell(&s, 0, 0, 1, 0), buf, sizeof(buf)), "ok");
	/* the worse side wins, a route cause before the probe's timeout */
	cell(&s, 0, 1, 2, 0)->b_cause = RN_CAUSE_ROUTE_WRONG_NIC;
	cell(&s, 0, 1, 2, 0)->b_sev = RN_SEV_FATAL;
	cell(&s, 0, 1, 2, 0)->a_cause = RN_CAUSE_MTU_MISMATCH;
	cell(&s, 0, 1, 2, 0)->a_sev = RN_SEV_WARN;
	cell(&s, 0, 1, 2, 0)->rdma = RN_SW_RDMA_TIMEOUT;
	assert_string_equal(rn_sweep_cell_str(cell(&s, 0, 1, 2, 0), buf, sizeof(buf)), "route-wrong-nic");
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_PROBLEMS);
	*cell(&s, 0, 1, 2, 0) = (struct rn_sweep_cell){ 0 };
	assert_string_equal(rn_sweep_cell_str(cell(&s, 0, 1, 2, 0), buf, sizeof(buf)), "-");
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_OK);
	/* a host whose results never came: incomplete, exit 2 */
	s.hosts[2].results = 0;
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_ERROR);
	rn_sweep_free(&s);
}

static void test_infer(void **state)
{
	struct rn_sweep s;
	int o, y;

	fleet(&s);
	/* h2:eth1 times out with every NIC of every peer; its eth0 gets through */
	for (o = 0; o < 2; o++)
		for (y = 0; y < 2; y++)
			cell(&s, o, y, 2, 1)->rdma = RN_SW_RDMA_TIMEOUT;
	/* h1:eth0 times out with h0 only (one pair of hosts): not the NIC's firewall */
	cell(&s, 0, 0, 1, 0)->rdma = RN_SW_RDMA_TIMEOUT;
	cell(&s, 0, 1, 1, 0)->rdma = RN_SW_RDMA_TIMEOUT;
	rn_sweep_infer(&s);
	assert_int_equal(s.hosts[2].drops[1].cause, RN_CAUSE_FIREWALL);
	assert_int_equal(s.hosts[2].drops[0].cause, 0);
	assert_int_equal(s.hosts[1].drops[0].cause, 0);
	assert_int_equal(s.hosts[0].drops[0].cause, 0);
	assert_int_equal(s.hosts[0].drops[1].cause, 0);
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_PROBLEMS);
	rn_sweep_free(&s);
}

static void test_json(void **state)
{
	struct rn_sweep s;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	fleet(&s);
	cell(&s, 1, 0, 2, 1)->rdma = RN_SW_RDMA_ERROR;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	rn_sweep_json(f, &s, rn_sweep_exit(&s));
	fclose(f);
	assert_non_null(strstr(text, "\"schema\": \"roce-doctor-sweep/1\""));
	assert_non_null(strstr(text, "\"host_a\": \"h1\""));
	assert_non_null(strstr(text, "\"nic_b\": \"eth1\""));
	assert_non_null(strstr(text, "\"result\": \"rdma-error\""));
	assert_non_null(strstr(text, "\"bad_nic_pairs\": 1"));
	assert_non_null(strstr(text, "\"exit\": 1"));
	free(text);
	rn_sweep_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_cells_and_exit),
		cmocka_unit_test(test_infer),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
