// SPDX-License-Identifier: MIT
/*
 * One NIC pair's result, judged once (doctor_result.h): peer and the sweep fill the same
 * cell from the pair runner's output and word what rn_pair_judge says, so the two reports
 * cannot disagree on a pair.
 */
#include <errno.h>
#include <string.h>

#include "doctor_result.h"

void rn_pair_cell_checks(struct rn_pair_cell *c, const struct rn_dw_pair *q, int by_b)
{
	uint16_t *cause = by_b ? &c->b_cause : &c->a_cause;
	uint8_t *sev = by_b ? &c->b_sev : &c->a_sev;
	int k, worst = -1;

	if (!q)
		return;
	*(by_b ? &c->b_checked : &c->a_checked) = q->status != 2;
	/* the worst finding worth showing, the first of equals */
	for (k = 0; k < q->nfindings; k++)
		if (q->findings[k].sev >= RN_SEV_WARN && (int)q->findings[k].sev > worst) {
			worst = (int)q->findings[k].sev;
			*cause = (uint16_t)q->findings[k].cause;
			*sev = (uint8_t)worst;
		}
}

void rn_pair_cell_probe(struct rn_pair_cell *c, const struct rn_pair_probe *pr)
{
	if (!pr->tried)
		return;
	c->rdma_us = (uint32_t)(pr->ms * 1000);
	if (pr->ret || pr->peer_ret) {
		c->rdma = pr->timeout ? RN_PAIR_RDMA_TIMEOUT : RN_PAIR_RDMA_ERROR;
		c->diag = (uint16_t)pr->diag.cause;
		return;
	}
	c->rdma = RN_PAIR_RDMA_OK;
	if (!pr->bw.want)
		return;
	c->bw = pr->bw.ret ? RN_PAIR_BW_FAILED : RN_PAIR_BW_OK;
	c->bw_mbps = pr->bw.ret ? 0 : (uint32_t)RN_MIN(pr->bw.gbps * 1000, (double)UINT32_MAX);
}

enum rn_pair_judged rn_pair_judge(const struct rn_pair_cell *c, int *cause)
{
	int unused;

	if (!cause)
		cause = &unused;
	*cause = 0;
	/* a finding of either side comes first, the worse one (a's of equals: it leads) */
	if (c->a_cause && c->a_sev >= c->b_sev) {
		*cause = c->a_cause;
		return RN_PAIR_BY_A;
	}
	if (c->b_cause) {
		*cause = c->b_cause;
		return RN_PAIR_BY_B;
	}
	if (c->rdma == RN_PAIR_RDMA_TIMEOUT)
		return RN_PAIR_TIMEOUT;
	if (c->rdma == RN_PAIR_RDMA_ERROR)
		return RN_PAIR_ERROR;
	if (c->slow)
		return RN_PAIR_SLOW;
	if (!c->a_checked && !c->b_checked && c->rdma == RN_PAIR_RDMA_SKIPPED)
		return RN_PAIR_UNCHECKED;
	return RN_PAIR_OK;
}

int rn_pair_cell_bad(const struct rn_pair_cell *c)
{
	enum rn_pair_judged v = rn_pair_judge(c, NULL);

	return v != RN_PAIR_OK && v != RN_PAIR_UNCHECKED;
}

int rn_pair_drops(const struct rn_pair_grid *g, int h, int x, const char *netdev,
		  struct rn_finding *f)
{
	struct rn_vars v = RN_VARS_INIT;
	int o, y, k, tried = 0, bad = 0, sib_ok = 0;

	for (o = 0; o < g->nhosts; o++) {
		for (y = 0; o != h && y < g->nnics(g->arg, o); y++) {
			const struct rn_pair_cell *c = g->cell(g->arg, h, x, o, y);

			if (!c || c->rdma == RN_PAIR_RDMA_SKIPPED)
				continue;
			tried++;
			if (c->rdma != RN_PAIR_RDMA_TIMEOUT || c->diag)
				continue;
			bad++;
			for (k = 0; k < g->nnics(g->arg, h); k++) {
				const struct rn_pair_cell *q = k == x ? NULL : g->cell(g->arg, h, k, o, y);

				sib_ok |= q && q->rdma == RN_PAIR_RDMA_OK;
			}
		}
	}
	if (!tried || bad != tried || !sib_ok)
		return 0;
	rn_vars_set(&v, "dev", "%s", netdev);
	k = rn_finding_render(f, RN_CAUSE_FIREWALL, &v);
	rn_vars_free(&v);
	return k ? k : 1;
}
