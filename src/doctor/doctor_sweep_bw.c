// SPDX-License-Identifier: MIT
/*
 * The sweep's bandwidth gate (--min-gbps): pairs under the bar are slow, a second pass
 * measures each end of a slow pair against a witness, and the blame of every slow pair
 * (one end, both, or the path between them) is judged from both passes' figures.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_probe.h"
#include "doctor_sweep.h"

/* ---- bandwidth: the gate, and which end of a slow pair is the bad one ------------------ */

void rn_sweep_bw_judge(struct rn_sweep *s)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int c;

	for (k = 0; k < np; k++) {
		struct rn_pair_result *p = s->pairs[k];

		for (c = 0; p && c < p->na * p->nb; c++) {
			struct rn_pair_cell *e = &p->cells[c];

			e->slow = s->min_gbps > 0 &&
				  (e->bw == RN_PAIR_BW_FAILED ||
				   (e->bw == RN_PAIR_BW_OK && e->bw_mbps < s->min_gbps * 1000));
			e->blame = RN_SW_BLAME_NONE;
		}
	}
}

/* The second pass's result for the pair (h1, i1) x (h2, i2), NULL when it did not run. */
static const struct rn_sweep_recheck *recheck_of(const struct rn_sweep *s, int h1, int i1, int h2,
						 int i2)
{
	int k;

	for (k = 0; k < s->nrechecks; k++) {
		const struct rn_sweep_recheck *r = &s->rechecks[k];

		if (r->bw != RN_PAIR_BW_NONE &&
		    ((r->h == h1 && r->i == i1 && r->w == h2 && r->k == i2) ||
		     (r->h == h2 && r->i == i2 && r->w == h1 && r->k == i1)))
			return r;
	}
	return NULL;
}

int rn_sweep_recheck_slow(const struct rn_sweep *s, const struct rn_sweep_recheck *r)
{
	return r->bw == RN_PAIR_BW_FAILED || r->mbps < s->min_gbps * 1000;
}

/* A measured pair: 0 fast, 1 slow, -1 not measured (the second pass wins: it ran alone). */
static int edge(const struct rn_sweep *s, int h1, int i1, int h2, int i2, uint32_t *mbps)
{
	const struct rn_sweep_recheck *r = recheck_of(s, h1, i1, h2, i2);
	const struct rn_pair_cell *c;

	if (r) {
		*mbps = r->bw == RN_PAIR_BW_OK ? r->mbps : 0;
		return rn_sweep_recheck_slow(s, r);
	}
	c = h1 == h2 ? NULL : rn_sweep_cell_of(s, h1, i1, h2, i2);
	if (!c || c->bw == RN_PAIR_BW_NONE)
		return -1;
	*mbps = c->bw == RN_PAIR_BW_OK ? c->bw_mbps : 0;
	return c->slow;
}

struct nic_bw {
	int fast, slow;
	uint32_t best; /* Mbit/s */
};

/* Every measured pair of NIC (@h, @x), but those with (@skip_h, @skip_i). */
static struct nic_bw nic_bw(const struct rn_sweep *s, int h, int x, int skip_h, int skip_i)
{
	struct nic_bw b = { 0 };
	uint32_t m;
	int o, y, e;

	for (o = 0; o < s->n; o++)
		for (y = 0; o != h && y < rn_sweep_nnics(s, o); y++) {
			if (o == skip_h && y == skip_i)
				continue;
			e = edge(s, h, x, o, y, &m);
			if (e < 0)
				continue;
			if (e)
				b.slow++;
			else
				b.fast++;
			b.best = RN_MAX(b.best, m);
		}
	return b;
}

enum { END_UNKNOWN, END_GOOD, END_BAD };

/*
 * One end (@h, @x) of a slow pair with (@ph, @pi): good when it is fast with some peer;
 * bad when it is slow with a peer (not @ph:@pi) that is itself fast with others, the
 * witness in @wh, @wi; unknown when no such peer was measured. The second pass's result
 * against its witness decides when it ran.
 */
static int end_state(const struct rn_sweep *s, int h, int x, int ph, int pi, int *wh, int *wi)
{
	uint32_t m;
	int k, o, y;

	*wh = *wi = -1;
	for (k = 0; k < s->nrechecks; k++) {
		const struct rn_sweep_recheck *r = &s->rechecks[k];

		if (r->h == h && r->i == x && r->bw != RN_PAIR_BW_NONE) {
			*wh = r->w;
			*wi = r->k;
			return rn_sweep_recheck_slow(s, r) ? END_BAD : END_GOOD;
		}
	}
	if (nic_bw(s, h, x, -1, -1).fast)
		return END_GOOD;
	for (o = 0; o < s->n; o++)
		for (y = 0; o != h && y < rn_sweep_nnics(s, o); y++)
			if (!(o == ph && y == pi) && edge(s, h, x, o, y, &m) == 1 &&
			    nic_bw(s, o, y, h, x).fast) {
				*wh = o;
				*wi = y;
				return END_BAD;
			}
	return END_UNKNOWN;
}

const char *rn_sweep_blame_str(int blame)
{
	static const char *const b[] = { "none", "a", "b", "both", "path", "unknown" };

	return blame >= 0 && blame <= RN_SW_BLAME_UNKNOWN ? b[blame] : "?";
}

/* A NIC that can vouch for another: fast with some peer, slow with none. */
static int witness_score(const struct rn_sweep *s, int o, int y, int h, int x)
{
	struct nic_bw b = nic_bw(s, o, y, h, x);

	return b.fast ? b.fast * 2 + !b.slow : 0;
}

/* Host @o holds a slow partner of (@h, @x). */
static int partner_host(const struct rn_sweep *s, int h, int x, int o)
{
	uint32_t m;
	int y;

	for (y = 0; y < rn_sweep_nnics(s, o); y++)
		if (edge(s, h, x, o, y, &m) == 1)
			return 1;
	return 0;
}

static int add_recheck(struct rn_sweep *s, int h, int x, int **used)
{
	struct rn_sweep_recheck *r;
	int o, y, sc, best = 0, bo = -1, by = -1, third, r_no;

	for (r_no = 0; r_no < s->nrechecks; r_no++)
		if (s->rechecks[r_no].h == h && s->rechecks[r_no].i == x)
			return 0;
	if (s->nrechecks >= RN_SW_MAX_RECHECKS)
		return 0; /* the rest are judged by the rounds alone */
	/* a third host's NIC first; the slow partner's sibling when there is no third host */
	for (third = 1; third >= 0 && bo < 0; third--)
		for (o = 0; o < s->n; o++)
			for (y = 0; o != h && y < rn_sweep_nnics(s, o); y++) {
				if (third == partner_host(s, h, x, o))
					continue;
				sc = witness_score(s, o, y, h, x);
				if (sc > best) {
					best = sc;
					bo = o;
					by = y;
				}
			}
	if (bo < 0)
		return 0;
	r = realloc(s->rechecks, (size_t)(s->nrechecks + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	s->rechecks = r;
	r = &s->rechecks[s->nrechecks++];
	memset(r, 0, sizeof(*r));
	r->h = h;
	r->i = x;
	r->w = bo;
	r->k = by;
	/* the first round in which both hosts are free, or already meet each other */
	for (r->round = 0;; r->round++) {
		int *u = used[r->round];

		if ((u[h] < 0 || u[h] == bo) && (u[bo] < 0 || u[bo] == h)) {
			u[h] = bo;
			u[bo] = h;
			break;
		}
	}
	s->recheck_rounds = RN_MAX(s->recheck_rounds, r->round + 1);
	return 0;
}

int rn_sweep_bw_plan(struct rn_sweep *s)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int **used, r, i, j, ret = 0, nslots;

	free(s->rechecks);
	s->rechecks = NULL;
	s->nrechecks = s->recheck_rounds = 0;
	/* at most one round per recheck, at most one recheck per end of a slow pair */
	for (k = 0, nslots = 0; k < np; k++)
		for (i = 0;
		     s->pairs[k] && !s->pairs[k]->status && i < s->pairs[k]->na * s->pairs[k]->nb;
		     i++)
			nslots += 2 * s->pairs[k]->cells[i].slow;
	if (!nslots)
		return 0;
	nslots = RN_MIN(nslots, RN_SW_MAX_RECHECKS);
	used = calloc((size_t)nslots, sizeof(*used));
	for (r = 0; used && r < nslots; r++) {
		used[r] = malloc((size_t)s->n * sizeof(int));
		if (!used[r])
			break;
		for (i = 0; i < s->n; i++)
			used[r][i] = -1;
	}
	if (!used || r < nslots) {
		ret = -ENOMEM;
		goto out;
	}
	for (k = 0; k < np && !ret; k++) {
		const struct rn_pair_result *p = s->pairs[k];

		for (i = 0; p && !p->status && i < p->na && !ret; i++)
			for (j = 0; j < p->nb && !ret; j++) {
				if (!p->cells[i * p->nb + j].slow)
					continue;
				/* an end that is fast elsewhere needs no second look */
				if (!nic_bw(s, p->a, i, -1, -1).fast)
					ret = add_recheck(s, p->a, i, used);
				if (!ret && !nic_bw(s, p->b, j, -1, -1).fast)
					ret = add_recheck(s, p->b, j, used);
			}
	}
out:
	for (r = 0; used && r < nslots; r++)
		free(used[r]);
	free(used);
	return ret;
}

/* slow-nic on (@h, @x), once, with the evidence. */
static void slow_nic(struct rn_sweep *s, int h, int x, int wh, int wi)
{
	struct nic_bw b = nic_bw(s, h, x, -1, -1);
	const struct rn_sweep_recheck *r = wh >= 0 ? recheck_of(s, h, x, wh, wi) : NULL;
	struct rn_vars v = RN_VARS_INIT;

	if (!s->hosts[h].slow)
		s->hosts[h].slow = calloc((size_t)rn_sweep_nnics(s, h), sizeof(struct rn_finding));
	if (!s->hosts[h].slow || s->hosts[h].slow[x].cause)
		return;
	rn_vars_set(&v, "nic", "%s:%s", s->hosts[h].name, rn_sweep_nic_name(s, h, x));
	rn_vars_set(&v, "slow", "%d", b.slow);
	rn_vars_set(&v, "tried", "%d", b.slow + b.fast);
	rn_vars_set(&v, "min", "%g", s->min_gbps);
	rn_vars_set(&v, "best", "%.2f", b.best / 1000.0);
	rn_vars_set(&v, "witness", "%s:%s", wh >= 0 ? s->hosts[wh].name : "?",
		    wh >= 0 ? rn_sweep_nic_name(s, wh, wi) : "?");
	if (r && r->bw == RN_PAIR_BW_OK)
		rn_vars_set(&v, "recheck", " (measured again alone against it: %.2f Gbit/s)",
			    r->mbps / 1000.0);
	else if (r)
		rn_vars_set(&v, "recheck", " (measured again alone against it: the stream failed)");
	else
		rn_vars_set(&v, "recheck", "%s", "");
	rn_vars_set(&v, "host", "%s", s->hosts[h].name);
	rn_vars_set(&v, "dev", "%s", rn_sweep_nic_name(s, h, x));
	rn_finding_render(&s->hosts[h].slow[x], RN_CAUSE_SLOW_NIC, &v);
	rn_vars_free(&v);
}

static void bw_low(struct rn_sweep *s, struct rn_pair_result *p, int i, int j)
{
	const struct rn_pair_cell *c = &p->cells[i * p->nb + j];
	struct rn_vars v = RN_VARS_INIT;
	struct rn_finding f = { 0 };
	char a[160], b[160];

	snprintf(a, sizeof(a), "%s:%s", s->hosts[p->a].name, rn_sweep_nic_name(s, p->a, i));
	snprintf(b, sizeof(b), "%s:%s", s->hosts[p->b].name, rn_sweep_nic_name(s, p->b, j));
	rn_vars_set(&v, "a", "%s", a);
	rn_vars_set(&v, "b", "%s", b);
	rn_vars_set(&v, "gbps", "%.2f", c->bw == RN_PAIR_BW_OK ? c->bw_mbps / 1000.0 : 0.0);
	rn_vars_set(&v, "mib", "%llu", (unsigned long long)(RN_BW_BYTES >> 20));
	rn_vars_set(&v, "min", "%g", s->min_gbps);
	switch (c->blame) {
	case RN_SW_BLAME_A:
	case RN_SW_BLAME_B:
		rn_vars_set(&v, "blame", "the slow end is %s (slow with other peers too)",
			    c->blame == RN_SW_BLAME_A ? a : b);
		break;
	case RN_SW_BLAME_BOTH:
		rn_vars_set(&v, "blame", "both ends are slow with other peers too");
		break;
	case RN_SW_BLAME_PATH:
		rn_vars_set(&v, "blame",
			    "both ends are fast with other peers, so the path "
			    "between them is slow");
		break;
	default:
		rn_vars_set(&v, "blame",
			    "no third NIC was measured against an end, so which "
			    "end is slow cannot be told");
		break;
	}
	if (!rn_finding_render(&f, RN_CAUSE_BANDWIDTH_LOW, &v))
		rn_pair_result_add_find(p, i, j, RN_PAIR_FROM_BW, &f);
	rn_finding_clear(&f);
	rn_vars_free(&v);
}

void rn_sweep_bw_blame(struct rn_sweep *s)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int h, i, j, sa, sb, ah, ai, bh, bi;

	for (h = 0; h < s->n; h++)
		rn_sweep_findings_free(&s->hosts[h].slow, rn_sweep_nnics(s, h));
	for (k = 0; k < np; k++) {
		struct rn_pair_result *p = s->pairs[k];

		for (i = 0; p && !p->status && i < p->na; i++)
			for (j = 0; j < p->nb; j++) {
				struct rn_pair_cell *c = &p->cells[i * p->nb + j];

				if (!c->slow)
					continue;
				sa = end_state(s, p->a, i, p->b, j, &ah, &ai);
				sb = end_state(s, p->b, j, p->a, i, &bh, &bi);
				if (sa == END_BAD && sb == END_BAD)
					c->blame = RN_SW_BLAME_BOTH;
				else if (sa == END_BAD)
					c->blame = RN_SW_BLAME_A;
				else if (sb == END_BAD)
					c->blame = RN_SW_BLAME_B;
				else if (sa == END_GOOD && sb == END_GOOD)
					c->blame = RN_SW_BLAME_PATH;
				else
					c->blame = RN_SW_BLAME_UNKNOWN;
				if (sa == END_BAD)
					slow_nic(s, p->a, i, ah, ai);
				if (sb == END_BAD)
					slow_nic(s, p->b, j, bh, bi);
				bw_low(s, p, i, j);
			}
	}
}
