// SPDX-License-Identifier: MIT
/*
 * One NIC pair's result and its one judgment (src/doctor/doctor_result.c): a cell filled
 * from both sides' checks and a probe, judged as peer and the sweep word it; the firewall
 * inference over a grid; RESULTS, the sweep's pair results in the peer protocol, round
 * trip whole, and a rank of another build (the raw format before it, another version) is
 * refused with a reason, never read as garbage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../src/doctor/doctor_result.h"
#include "rn_codec.h"

static void pair_with(struct rn_dw_pair *q, int status, enum rn_cause cause, enum rn_severity sev)
{
	memset(q, 0, sizeof(*q));
	q->status = status;
	if (cause) {
		q->nfindings = 1;
		assert_int_equal(rn_finding_set(&q->findings[0], cause, sev, "m", "f"), 0);
	}
}

static void judged_once(void **state)
{
	struct rn_pair_cell c = { 0 };
	struct rn_dw_pair a, b;
	struct rn_pair_probe pr = { 0 };
	int cause;

	assert_int_equal(rn_pair_judge(&c, &cause), RN_PAIR_UNCHECKED);
	assert_false(rn_pair_cell_bad(&c));
	pair_with(&a, 0, RN_CAUSE_NONE, RN_SEV_INFO);
	rn_pair_cell_checks(&c, &a, 0);
	assert_int_equal(rn_pair_judge(&c, &cause), RN_PAIR_OK);
	/* the worse side wins, a of equals */
	pair_with(&b, 1, RN_CAUSE_MTU_MISMATCH, RN_SEV_WARN);
	rn_pair_cell_checks(&c, &b, 1);
	assert_int_equal(rn_pair_judge(&c, &cause), RN_PAIR_BY_B);
	assert_int_equal(cause, RN_CAUSE_MTU_MISMATCH);
	rn_finding_clear(&a.findings[0]);
	pair_with(&a, 1, RN_CAUSE_ROUTE_WRONG_NIC, RN_SEV_WARN);
	rn_pair_cell_checks(&c, &a, 0);
	assert_int_equal(rn_pair_judge(&c, &cause), RN_PAIR_BY_A);
	assert_int_equal(cause, RN_CAUSE_ROUTE_WRONG_NIC);
	assert_true(rn_pair_cell_bad(&c));
	/* clean checks, a probe that timed out */
	memset(&c, 0, sizeof(c));
	pr.tried = 1;
	pr.ret = -ETIMEDOUT;
	pr.timeout = 1;
	pr.ms = 2.5;
	rn_pair_cell_probe(&c, &pr);
	assert_int_equal(rn_pair_judge(&c, NULL), RN_PAIR_TIMEOUT);
	assert_int_equal(c.rdma_us, 2500);
	c.rdma = RN_PAIR_RDMA_OK;
	c.slow = 1;
	assert_int_equal(rn_pair_judge(&c, NULL), RN_PAIR_SLOW);
	rn_finding_clear(&a.findings[0]);
	rn_finding_clear(&b.findings[0]);
}

/* Two hosts of two NICs: host 0's NIC 1 times out with both of host 1's, NIC 0 does not. */
static struct rn_pair_cell grid2[2][2];

static int g_nnics(const void *arg, int h)
{
	return 2;
}

static const struct rn_pair_cell *g_cell(const void *arg, int h1, int i1, int h2, int i2)
{
	return h1 == h2 ? NULL : h1 ? &grid2[i2][i1] : &grid2[i1][i2];
}

static void firewall_inferred(void **state)
{
	struct rn_pair_grid g = { 2, g_nnics, g_cell, NULL };
	struct rn_finding f = { 0 };

	grid2[0][0].rdma = grid2[0][1].rdma = RN_PAIR_RDMA_OK;
	grid2[1][0].rdma = grid2[1][1].rdma = RN_PAIR_RDMA_TIMEOUT;
	assert_int_equal(rn_pair_drops(&g, 0, 1, "eth1", &f), 1);
	assert_int_equal(f.cause, RN_CAUSE_FIREWALL);
	assert_non_null(strstr(f.msg, "eth1"));
	rn_finding_clear(&f);
	assert_int_equal(rn_pair_drops(&g, 0, 0, "eth0", &f), 0);
	/* remote NIC 0 has a good sibling too, but did not time out with every NIC */
	assert_int_equal(rn_pair_drops(&g, 1, 0, "r0", &f), 0);
	/* a diagnosis explains the timeout: no firewall */
	grid2[1][0].diag = RN_CAUSE_MTU_MISMATCH;
	assert_int_equal(rn_pair_drops(&g, 0, 1, "eth1", &f), 0);
	memset(grid2, 0, sizeof(grid2));
}

static struct rn_pair_result *took[4];
static int ntook;

static void take(void *arg, struct rn_pair_result *p)
{
	took[ntook++] = p;
}

static void results_round_trip(void **state)
{
	struct rn_pair_result p = { .a = 1, .b = 3, .na = 2, .nb = 1, .ms = 12.5 };
	struct rn_pair_result *list[] = { &p };
	struct rn_pair_cell cells[2] = {
		{ .a_cause = 999,
		  .a_sev = RN_SEV_WARN,
		  .a_checked = 1,
		  .b_checked = 1,
		  .rdma = RN_PAIR_RDMA_OK,
		  .rdma_us = 77,
		  .bw = RN_PAIR_BW_OK,
		  .bw_mbps = 9000 },
		{ .rdma = RN_PAIR_RDMA_TIMEOUT, .diag = RN_CAUSE_MTU_MISMATCH },
	};
	struct rn_finding f = { 0 };
	uint8_t *buf = NULL;
	size_t len = 0;
	char why[256] = "";

	p.cells = cells;
	snprintf(p.err, sizeof(p.err), "partial");
	assert_int_equal(rn_finding_set(&f, RN_CAUSE_MTU_MISMATCH, RN_SEV_WARN, "msg", "fix"), 0);
	assert_int_equal(rn_pair_result_add_find(&p, 1, 0, RN_PAIR_FROM_RDMA, &f), 0);
	rn_finding_clear(&f);
	assert_int_equal(rn_pair_results_encode(list, 1, &buf, &len), 0);
	assert_int_equal(rn_get_be16(buf + 4), RN_DW_RESULTS_VERSION);
	assert_int_equal(rn_pair_results_decode(buf, len, 1, 4, take, NULL, why, sizeof(why)), 0);
	assert_int_equal(ntook, 1);
	assert_int_equal(took[0]->b, 3);
	assert_int_equal(took[0]->na * took[0]->nb, 2);
	assert_memory_equal(took[0]->cells, cells, sizeof(cells));
	assert_true(took[0]->ms == 12.5);
	assert_string_equal(took[0]->err, "partial");
	assert_int_equal(took[0]->nfind, 1);
	assert_int_equal(took[0]->finds[0].by, RN_PAIR_FROM_RDMA);
	assert_string_equal(took[0]->finds[0].f.msg, "msg");
	rn_pair_result_free(took[0]);
	ntook = 0;
	/* from a rank that did not lead it */
	assert_int_equal(rn_pair_results_decode(buf, len, 2, 4, take, NULL, why, sizeof(why)),
			 -EBADMSG);
	/* another version in the header: a rank of another build, said so */
	rn_put_be16(buf + 4, 3);
	assert_int_equal(rn_pair_results_decode(buf, len, 1, 4, take, NULL, why, sizeof(why)),
			 -EPROTO);
	assert_non_null(strstr(why, "protocol version 3"));
	free(buf);
	for (int k = 0; k < p.nfind; k++)
		rn_finding_clear(&p.finds[k].f);
	free(p.finds);
	assert_int_equal(ntook, 0);
}

/* The raw format before RESULTS (be32 a, b, ...) is refused by name, not decoded. */
static void old_build_refused(void **state)
{
	uint8_t old[64] = { 0, 0, 0, 1, 0, 0, 0, 3 };
	char why[256] = "";

	assert_int_equal(rn_pair_results_decode(old, sizeof(old), 1, 4, take, NULL, why,
						sizeof(why)),
			 -EBADMSG);
	assert_non_null(strstr(why, "another roce-doctor-mpi build"));
	assert_int_equal(ntook, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(judged_once),
		cmocka_unit_test(firewall_inferred),
		cmocka_unit_test(results_round_trip),
		cmocka_unit_test(old_build_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
