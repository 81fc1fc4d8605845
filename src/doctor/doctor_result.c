// SPDX-License-Identifier: MIT
/*
 * One NIC pair's result, judged once (doctor_result.h): peer and the sweep fill the same
 * cell from the pair runner's output and word what rn_pair_judge says, so the two reports
 * cannot disagree on a pair.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_result.h"
#include "rn_codec.h"

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
				const struct rn_pair_cell *q = k == x ? NULL :
									g->cell(g->arg, h, k, o, y);

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

/* ---- a host pair's result ------------------------------------------------------------ */

void rn_pair_result_clear(struct rn_pair_result *p)
{
	int k;

	for (k = 0; p->finds && k < p->nfind; k++)
		rn_finding_clear(&p->finds[k].f);
	free(p->cells);
	free(p->finds);
	p->cells = NULL;
	p->finds = NULL;
	p->nfind = 0;
}

void rn_pair_result_free(struct rn_pair_result *p)
{
	if (!p)
		return;
	rn_pair_result_clear(p);
	free(p);
}

int rn_pair_result_add_find(struct rn_pair_result *p, int i, int j, int by,
			    const struct rn_finding *f)
{
	struct rn_pair_find *x = realloc(p->finds, (size_t)(p->nfind + 1) * sizeof(*x));

	if (!x)
		return -ENOMEM;
	p->finds = x;
	x = &p->finds[p->nfind++];
	memset(x, 0, sizeof(*x));
	x->i = (int16_t)i;
	x->j = (int16_t)j;
	x->by = (int16_t)by;
	return rn_finding_copy(&x->f, f);
}

/* ---- a run into a host pair's result ---------------------------------------------------- */

/* One side's checks into the cells and their findings: @by_b when they are b's (local = b's NIC). */
static void result_checks(struct rn_pair_result *p, const struct rn_dw_checks *c, int by_b)
{
	int n, k;

	for (n = 0; n < c->npairs; n++) {
		const struct rn_dw_pair *q = &c->pairs[n];
		int i = by_b ? q->remote : q->local, j = by_b ? q->local : q->remote;

		if (i < 0 || i >= p->na || j < 0 || j >= p->nb)
			continue;
		rn_pair_cell_checks(&p->cells[i * p->nb + j], q, by_b);
		for (k = 0; k < q->nfindings; k++)
			if (q->findings[k].sev >= RN_SEV_WARN)
				rn_pair_result_add_find(p, i, j,
							by_b ? RN_PAIR_FROM_B : RN_PAIR_FROM_A,
							&q->findings[k]);
	}
}

/* A finding without a cause of NIC pair (@i, @j): what a probe or a stream said. */
static void result_note(struct rn_pair_result *p, int i, int j, int by, const char *msg)
{
	struct rn_finding f = { 0 };

	rn_finding_set(&f, RN_CAUSE_NONE, RN_SEV_INFO, msg, "");
	rn_pair_result_add_find(p, i, j, by, &f);
	rn_finding_clear(&f);
}

/* A failed probe's finding: its diagnosis (fixes, advice) with the probe's error, whole, as
 * the message (the sweep's report carries the diagnosis, not the counters). */
static void result_probe_failed(struct rn_pair_result *p, int i, int j,
				const struct rn_pair_probe *pr)
{
	struct rn_finding f = { 0 };
	char *msg = NULL;

	if (asprintf(&msg, "%s%s%s", pr->ret ? pr->why : "",
		     pr->ret && pr->peer_ret ? "; peer: " :
		     pr->peer_ret            ? "peer: " :
					       "",
		     pr->peer_ret ? pr->peer_why : "") < 0)
		msg = NULL;
	if (!pr->diag.cause) {
		result_note(p, i, j, RN_PAIR_FROM_RDMA, msg ? msg : "probe failed");
		free(msg);
		return;
	}
	if (!rn_finding_copy(&f, &pr->diag)) {
		char *m = strdup(msg ? msg : "probe failed");

		if (m) {
			free(f.msg);
			f.msg = m;
		}
		rn_pair_result_add_find(p, i, j, RN_PAIR_FROM_RDMA, &f);
	}
	rn_finding_clear(&f);
	free(msg);
}

void rn_pair_result_run(struct rn_pair_result *p, const struct rn_pair_run *r, const char *peer)
{
	char msg[128];
	int i, j;

	result_checks(p, &r->ours, 0);
	if (r->step < RN_PAIR_STEP_PROBES)
		return; /* the other side's checks never came whole */
	result_checks(p, &r->theirs, 1);
	for (i = 0; r->probes && i < p->na; i++)
		for (j = 0; j < p->nb; j++) {
			const struct rn_pair_probe *pr = &r->probes[i][j];
			struct rn_pair_cell *c = &p->cells[i * p->nb + j];

			if (!pr->tried)
				continue;
			if (r->stop && r->at_i == i && r->at_j == j) {
				/* the other end stopped answering in this one */
				snprintf(msg, sizeof(msg), "%s did not answer the probe request",
					 peer);
				c->rdma = RN_PAIR_RDMA_TIMEOUT;
				result_note(p, i, j, RN_PAIR_FROM_RDMA, msg);
				p->status = -ETIMEDOUT;
				continue;
			}
			rn_pair_cell_probe(c, pr);
			if (c->rdma == RN_PAIR_RDMA_OK && c->bw == RN_PAIR_BW_FAILED)
				result_note(p, i, j, RN_PAIR_FROM_BW,
					    pr->bw.why[0] ? pr->bw.why : "the stream failed");
			else if (c->rdma != RN_PAIR_RDMA_OK)
				result_probe_failed(p, i, j, pr);
		}
}

int rn_pair_result_bad(const struct rn_pair_result *p)
{
	int c, n = 0;

	for (c = 0; !p->status && c < p->na * p->nb; c++)
		n += rn_pair_cell_bad(&p->cells[c]);
	return n;
}

/* ---- RESULTS (doctor_result.h) ---------------------------------------------------------- */

static void put_result(struct rn_wbuf *b, const struct rn_pair_result *p)
{
	uint64_t bits;
	int c, q;

	rn_wb_u32(b, (uint32_t)p->a);
	rn_wb_u32(b, (uint32_t)p->b);
	rn_wb_u32(b, (uint32_t)p->status);
	rn_wb_u32(b, (uint32_t)p->na);
	rn_wb_u32(b, (uint32_t)p->nb);
	rn_wb_u32(b, (uint32_t)p->nfind);
	memcpy(&bits, &p->ms, sizeof(bits));
	rn_wb_u64(b, bits);
	rn_wb_field(b, p->err, sizeof(p->err));
	for (c = 0; c < p->na * p->nb; c++) {
		const struct rn_pair_cell *e = &p->cells[c];

		rn_wb_u16(b, e->a_cause);
		rn_wb_u8(b, e->a_sev);
		rn_wb_u16(b, e->b_cause);
		rn_wb_u8(b, e->b_sev);
		rn_wb_u8(b, e->a_checked);
		rn_wb_u8(b, e->b_checked);
		rn_wb_u8(b, e->rdma);
		rn_wb_u16(b, e->diag);
		rn_wb_u32(b, e->rdma_us);
		rn_wb_u8(b, e->bw);
		rn_wb_u32(b, e->bw_mbps);
	}
	for (q = 0; q < p->nfind; q++) {
		rn_wb_u16(b, (uint16_t)p->finds[q].i);
		rn_wb_u16(b, (uint16_t)p->finds[q].j);
		rn_wb_u16(b, (uint16_t)p->finds[q].by);
		rn_dw_put_finding(b, &p->finds[q].f);
	}
}

int rn_pair_results_encode(struct rn_pair_result *const *p, int n, uint8_t **out, size_t *len)
{
	struct rn_wbuf b = { 0 };
	static const uint8_t room[RN_DW_HDR_LEN];
	int k, ret;

	rn_wb_put(&b, room, sizeof(room)); /* the header's place: its length comes last */
	for (k = 0; k < n; k++)
		put_result(&b, p[k]);
	ret = b.err ? b.err : rn_dw_encode_hdr(b.p, RN_DW_RESULTS, b.len - RN_DW_HDR_LEN);
	if (ret) {
		free(b.p);
		return ret;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

static int bad_cell(const struct rn_pair_cell *e)
{
	return e->a_sev > RN_SEV_FATAL || e->b_sev > RN_SEV_FATAL || e->a_checked > 1 ||
	       e->b_checked > 1 || e->rdma > RN_PAIR_RDMA_ERROR || e->bw > RN_PAIR_BW_FAILED;
}

static void get_cell(struct rn_rbuf *b, struct rn_pair_cell *e)
{
	e->a_cause = rn_rb_u16(b);
	e->a_sev = (uint8_t)rn_rb_u8(b);
	e->b_cause = rn_rb_u16(b);
	e->b_sev = (uint8_t)rn_rb_u8(b);
	e->a_checked = (uint8_t)rn_rb_u8(b);
	e->b_checked = (uint8_t)rn_rb_u8(b);
	e->rdma = (uint8_t)rn_rb_u8(b);
	e->diag = rn_rb_u16(b);
	e->rdma_us = rn_rb_u32(b);
	e->bw = (uint8_t)rn_rb_u8(b);
	e->bw_mbps = rn_rb_u32(b);
}

/* One pair at @b, checked against who sent it: 0, -EBADMSG, -ENOMEM. */
static int get_result(struct rn_rbuf *b, int from, int nhosts, struct rn_pair_result *p)
{
	uint64_t bits;
	int c;

	p->a = (int32_t)rn_rb_u32(b);
	p->b = (int32_t)rn_rb_u32(b);
	p->status = (int32_t)rn_rb_u32(b);
	p->na = (int32_t)rn_rb_u32(b);
	p->nb = (int32_t)rn_rb_u32(b);
	p->nfind = (int32_t)rn_rb_u32(b);
	bits = rn_rb_u64(b);
	memcpy(&p->ms, &bits, sizeof(p->ms));
	rn_rb_field(b, p->err, sizeof(p->err));
	if (b->err || p->a != from || p->b <= p->a || p->b >= nhosts || p->na < 0 || p->nb < 0 ||
	    p->na > RN_DOCTOR_MAX_NICS || p->nb > RN_DOCTOR_MAX_NICS || p->nfind < 0 ||
	    p->nfind > RN_DOCTOR_MAX_NICS * RN_DOCTOR_MAX_NICS * 2 * RN_DW_PAIR_FINDINGS) {
		p->nfind = 0;
		return -EBADMSG;
	}
	p->cells = calloc((size_t)RN_MAX(p->na * p->nb, 1), sizeof(*p->cells));
	p->finds = calloc((size_t)RN_MAX(p->nfind, 1), sizeof(*p->finds));
	if (!p->cells || !p->finds)
		return -ENOMEM;
	for (c = 0; c < p->na * p->nb; c++) {
		get_cell(b, &p->cells[c]);
		if (b->err || bad_cell(&p->cells[c]))
			return -EBADMSG;
	}
	for (c = 0; c < p->nfind && !b->err; c++) {
		p->finds[c].i = (int16_t)rn_rb_u16(b);
		p->finds[c].j = (int16_t)rn_rb_u16(b);
		p->finds[c].by = (int16_t)rn_rb_u16(b);
		rn_dw_get_finding(b, &p->finds[c].f);
	}
	return b->err ? -EBADMSG : 0;
}

int rn_pair_results_decode(const uint8_t *buf, size_t len, int from, int nhosts,
			   void (*take)(void *arg, struct rn_pair_result *p), void *arg, char *why,
			   size_t why_len)
{
	struct rn_rbuf b = { buf, len, RN_DW_HDR_LEN, 0 };
	uint32_t plen;
	int ret = rn_dw_decode_results_hdr(buf, len, &plen, why, why_len);

	if (ret == -EBADMSG && len >= 4 && rn_get_be32(buf) != RN_DW_MAGIC)
		snprintf(why, why_len,
			 "not pair results in the peer protocol (a rank of another "
			 "roce-doctor-mpi build?)");
	while (!ret && b.off < b.len) {
		struct rn_pair_result *p = calloc(1, sizeof(*p));

		ret = p ? get_result(&b, from, nhosts, p) : -ENOMEM;
		if (ret) {
			rn_pair_result_free(p);
			snprintf(why, why_len, "%s",
				 ret == -ENOMEM ? "out of memory" :
						  "pair results that do not decode");
			break;
		}
		take(arg, p);
	}
	return ret;
}
