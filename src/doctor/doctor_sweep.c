// SPDX-License-Identifier: MIT
/*
 * The fleet sweep's schedule and report, without MPI (doctor_mpi.c carries the
 * bytes): a round-robin tournament (the circle method: host n-1 stays, the others
 * rotate; odd n adds a phantom host whose partner sits the round out), and rank 0's
 * per-host summary, bad NIC pairs with causes and fixes, heat map, JSON and SVG.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor_sweep.h"

int rn_sweep_rounds(int n)
{
	return n < 2 ? 0 : (n % 2 ? n : n - 1);
}

int rn_sweep_partner(int n, int round, int rank)
{
	int m = n % 2 ? n + 1 : n, k = m - 1, p;

	if (n < 2 || rank < 0 || rank >= n || round < 0 || round >= k)
		return -1;
	if (rank == k)
		p = round;
	else if (rank == round)
		p = k;
	else
		p = ((2 * round - rank) % k + k) % k;
	return p >= n ? -1 : p;
}

long rn_sweep_pair_index(int n, int a, int b)
{
	if (a > b) {
		int t = a;

		a = b;
		b = t;
	}
	return (long)a * n - (long)a * (a + 1) / 2 + (b - a - 1);
}

int rn_sweep_init(struct rn_sweep *s, int n)
{
	long np = (long)n * (n - 1) / 2;

	memset(s, 0, sizeof(*s));
	s->n = n;
	s->rounds = rn_sweep_rounds(n);
	s->hosts = calloc((size_t)n, sizeof(*s->hosts));
	s->pairs = calloc((size_t)(np ? np : 1), sizeof(*s->pairs));
	if (!s->hosts || !s->pairs) {
		free(s->hosts);
		free(s->pairs);
		return -ENOMEM;
	}
	return 0;
}

void rn_sweep_pair_free(struct rn_sweep_pair *p)
{
	int k;

	if (!p)
		return;
	for (k = 0; p->finds && k < p->nfind; k++)
		rn_finding_clear(&p->finds[k].f);
	free(p->cells);
	free(p->finds);
	free(p);
}

static int nnics(const struct rn_sweep *s, int h);

/* A host's drops: each one's text, then the array. */
static void drops_free(struct rn_sweep *s, int h)
{
	int x;

	for (x = 0; s->hosts[h].drops && x < nnics(s, h); x++)
		rn_finding_clear(&s->hosts[h].drops[x]);
	free(s->hosts[h].drops);
	s->hosts[h].drops = NULL;
}

void rn_sweep_free(struct rn_sweep *s)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int h;

	for (k = 0; s->pairs && k < np; k++)
		rn_sweep_pair_free(s->pairs[k]);
	for (h = 0; s->hosts && h < s->n; h++) {
		drops_free(s, h);
		if (s->hosts[h].inv)
			rn_dw_inv_clear(s->hosts[h].inv);
		free(s->hosts[h].inv);
	}
	free(s->pairs);
	free(s->hosts);
	memset(s, 0, sizeof(*s));
}

const char *rn_sweep_cell_str(const struct rn_sweep_cell *c, char *buf, size_t len)
{
	if (c->a_cause && c->a_sev >= c->b_sev)
		snprintf(buf, len, "%s", rn_cause_id((enum rn_cause)c->a_cause));
	else if (c->b_cause)
		snprintf(buf, len, "%s", rn_cause_id((enum rn_cause)c->b_cause));
	else if (c->rdma == RN_SW_RDMA_TIMEOUT || c->rdma == RN_SW_RDMA_ERROR)
		snprintf(buf, len, "%s", c->rdma == RN_SW_RDMA_TIMEOUT ? "rdma-timeout" : "rdma-error");
	else if (!c->a_checked && !c->b_checked && c->rdma == RN_SW_RDMA_SKIPPED)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "ok");
	return buf;
}

int rn_sweep_cell_bad(const struct rn_sweep_cell *c)
{
	return c->a_cause || c->b_cause || c->rdma == RN_SW_RDMA_TIMEOUT ||
	       c->rdma == RN_SW_RDMA_ERROR;
}

static int nnics(const struct rn_sweep *s, int h)
{
	return s->hosts[h].inv ? s->hosts[h].inv->nnics : 0;
}

static const char *nic_name(const struct rn_sweep *s, int h, int i)
{
	return s->hosts[h].inv ? s->hosts[h].inv->nics[i].netdev : "?";
}

/* The cell of (h1, i1) x (h2, i2) in either order, NULL when that pair has no result. */
static const struct rn_sweep_cell *cell_of(const struct rn_sweep *s, int h1, int i1, int h2,
					   int i2)
{
	const struct rn_sweep_pair *p = s->pairs[rn_sweep_pair_index(s->n, h1, h2)];
	int i = h1 < h2 ? i1 : i2, j = h1 < h2 ? i2 : i1;

	if (!p || p->status || i >= p->na || j >= p->nb)
		return NULL;
	return &p->cells[i * p->nb + j];
}

/* Probe results of host @h's NIC @x: tried, timed out without a diagnosis, and whether a
 * sibling NIC of @h got through to a peer that @x timed out with. */
static void nic_probes(const struct rn_sweep *s, int h, int x, int *tried, int *bad, int *sib_ok)
{
	int o, k, y;

	*tried = *bad = *sib_ok = 0;
	for (o = 0; o < s->n; o++) {
		if (o == h)
			continue;
		for (y = 0; y < nnics(s, o); y++) {
			const struct rn_sweep_cell *c = cell_of(s, h, x, o, y);

			if (!c || c->rdma == RN_SW_RDMA_SKIPPED)
				continue;
			(*tried)++;
			if (c->rdma != RN_SW_RDMA_TIMEOUT || c->diag)
				continue;
			(*bad)++;
			for (k = 0; k < nnics(s, h); k++) {
				const struct rn_sweep_cell *q = k == x ? NULL : cell_of(s, h, k, o, y);

				*sib_ok |= q && q->rdma == RN_SW_RDMA_OK;
			}
		}
	}
}

void rn_sweep_infer(struct rn_sweep *s)
{
	int h, x, tried, bad, sib_ok;

	for (h = 0; h < s->n; h++) {
		if (!nnics(s, h))
			continue;
		drops_free(s, h);
		s->hosts[h].drops = calloc((size_t)nnics(s, h), sizeof(struct rn_finding));
		if (!s->hosts[h].drops)
			continue;
		for (x = 0; x < nnics(s, h); x++) {
			struct rn_vars v = RN_VARS_INIT;

			nic_probes(s, h, x, &tried, &bad, &sib_ok);
			if (!tried || bad != tried || !sib_ok)
				continue;
			rn_vars_set(&v, "dev", "%s", nic_name(s, h, x));
			rn_finding_render(&s->hosts[h].drops[x], RN_CAUSE_FIREWALL, &v);
			rn_vars_free(&v);
		}
	}
}

static int host_nic_problem(const struct rn_dw_nic *n)
{
	int k;

	for (k = 0; k < n->nfindings; k++)
		if (n->findings[k].sev >= RN_SEV_WARN)
			return 1;
	return n->verdict != RN_VERDICT_OK;
}

/* Bad NIC pairs that involve host @h (or every host when @h < 0). */
static int bad_pairs(const struct rn_sweep *s, int h)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int c, n = 0;

	for (k = 0; k < np; k++) {
		const struct rn_sweep_pair *p = s->pairs[k];

		if (!p || (h >= 0 && p->a != h && p->b != h))
			continue;
		for (c = 0; !p->status && c < p->na * p->nb; c++)
			n += rn_sweep_cell_bad(&p->cells[c]);
	}
	return n;
}

static int host_missing(const struct rn_sweep *s, int h)
{
	return !s->hosts[h].facts || !s->hosts[h].results;
}

/* A pair whose partner did not answer: the hung host is the one that never reported. */
static int unanswered_pairs(const struct rn_sweep *s, int h)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int n = 0;

	for (k = 0; k < np; k++) {
		const struct rn_sweep_pair *p = s->pairs[k];

		n += p && p->status && (h < 0 || p->a == h || p->b == h);
	}
	return n;
}

int rn_sweep_exit(const struct rn_sweep *s)
{
	int h, i;

	if (s->aborted)
		return RN_DOCTOR_ERROR;
	for (h = 0; h < s->n; h++)
		if (host_missing(s, h) || s->hosts[h].gather_err)
			return RN_DOCTOR_ERROR;
	if (bad_pairs(s, -1) || unanswered_pairs(s, -1))
		return RN_DOCTOR_PROBLEMS;
	for (h = 0; h < s->n; h++) {
		if (!nnics(s, h))
			return RN_DOCTOR_PROBLEMS;
		for (i = 0; i < nnics(s, h); i++)
			if (host_nic_problem(&s->hosts[h].inv->nics[i]) ||
			    (s->hosts[h].drops && s->hosts[h].drops[i].cause))
				return RN_DOCTOR_PROBLEMS;
	}
	return RN_DOCTOR_OK;
}

static const char *host_status(const struct rn_sweep *s, int h)
{
	int i;

	if (!s->hosts[h].facts)
		return "missing";
	if (!s->hosts[h].results)
		return "hung";
	if (s->hosts[h].gather_err)
		return "error";
	if (!nnics(s, h) || bad_pairs(s, h))
		return "problem";
	for (i = 0; i < nnics(s, h); i++)
		if (host_nic_problem(&s->hosts[h].inv->nics[i]))
			return "problem";
	return "ok";
}

/* ---- text ------------------------------------------------------------------------------ */

/* The heat map's mark for one NIC pair. */
static char mark(const struct rn_sweep *s, int h1, int i1, int h2, int i2)
{
	const struct rn_sweep_cell *c;

	if (h1 == h2)
		return i1 == i2 ? '\\' : ' ';
	c = cell_of(s, h1, i1, h2, i2);
	if (!c)
		return '?';
	if (rn_sweep_cell_bad(c))
		return 'X';
	return !c->a_checked && !c->b_checked && c->rdma == RN_SW_RDMA_SKIPPED ? '-' : '.';
}

static char host_mark(const struct rn_sweep *s, int h1, int h2)
{
	char m = '.', c;
	int i, j;

	if (h1 == h2)
		return '\\';
	for (i = 0; i < nnics(s, h1); i++)
		for (j = 0; j < nnics(s, h2); j++) {
			c = mark(s, h1, i, h2, j);
			if (c == 'X' || (c == '?' && m != 'X'))
				m = c;
		}
	return nnics(s, h1) && nnics(s, h2) ? m : '?';
}

static void print_heatmap(FILE *f, const struct rn_sweep *s)
{
	int h, i, h2, i2, total = 0, w = 0;
	char label[96];

	for (h = 0; h < s->n; h++) {
		total += nnics(s, h);
		w = RN_MAX(w, (int)strlen(s->hosts[h].name) + 17);
	}
	w = RN_MIN(w, 40);
	if (total > 64) {
		/* Thousands of NICs do not fit a terminal: hosts only, the list has the NICs. */
		fprintf(f, "\nheat map (host x host, X: a bad NIC pair, ?: no result)\n");
		for (h = 0; h < s->n; h++) {
			fprintf(f, "%-*.*s ", w, w, s->hosts[h].name);
			for (h2 = 0; h2 < s->n; h2++)
				fputc(host_mark(s, h, h2), f);
			fputc('\n', f);
		}
		return;
	}
	fprintf(f, "\nheat map (host:NIC x host:NIC; . ok, X bad, - not checked, ? no result)\n");
	for (h = 0; h < s->n; h++)
		for (i = 0; i < nnics(s, h); i++) {
			snprintf(label, sizeof(label), "%s:%s", s->hosts[h].name, nic_name(s, h, i));
			fprintf(f, "  %-*.*s ", w, w, label);
			for (h2 = 0; h2 < s->n; h2++) {
				fputc('|', f);
				for (i2 = 0; i2 < nnics(s, h2); i2++)
					fputc(mark(s, h, i, h2, i2), f);
			}
			fprintf(f, "|\n");
		}
}

static int collect_items(const struct rn_sweep *s, struct rn_doctor_item **itp, char (**whop)[160])
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int h, i, n = 0, max = 0, f;
	struct rn_doctor_item *it;
	char (*who)[160];

	for (h = 0; h < s->n; h++)
		for (i = 0; i < nnics(s, h); i++)
			max += s->hosts[h].inv->nics[i].nfindings + 1;
	for (k = 0; k < np; k++)
		max += s->pairs[k] ? s->pairs[k]->nfind : 0;
	it = calloc((size_t)max + 1, sizeof(*it));
	who = calloc((size_t)max + 1, sizeof(*who));
	if (!it || !who) {
		free(it);
		free(who);
		return -ENOMEM;
	}
	for (h = 0; h < s->n; h++)
		for (i = 0; i < nnics(s, h); i++) {
			const struct rn_dw_nic *nic = &s->hosts[h].inv->nics[i];

			for (f = 0; f < nic->nfindings; f++) {
				if (nic->findings[f].sev < RN_SEV_WARN)
					continue;
				snprintf(who[n], sizeof(who[n]), "%s:%s", s->hosts[h].name, nic->netdev);
				it[n].who = who[n];
				it[n].host = s->hosts[h].name;
				it[n++].f = &nic->findings[f];
			}
			if (s->hosts[h].drops && s->hosts[h].drops[i].cause) {
				snprintf(who[n], sizeof(who[n]), "%s:%s", s->hosts[h].name, nic->netdev);
				it[n].who = who[n];
				it[n].host = s->hosts[h].name;
				it[n++].f = &s->hosts[h].drops[i];
			}
		}
	for (k = 0; k < np; k++) {
		const struct rn_sweep_pair *p = s->pairs[k];

		for (f = 0; p && f < p->nfind; f++) {
			const struct rn_sweep_find *x = &p->finds[f];
			int from = x->by == RN_SW_BY_B ? p->b : p->a, to = x->by == RN_SW_BY_B ? p->a : p->b;
			int fi = x->by == RN_SW_BY_B ? x->j : x->i, ti = x->by == RN_SW_BY_B ? x->i : x->j;

			if (!x->f.cause || x->f.sev < RN_SEV_WARN)
				continue;
			snprintf(who[n], sizeof(who[n]), "%s:%s->%s:%s%s", s->hosts[from].name,
				 nic_name(s, from, fi), s->hosts[to].name, nic_name(s, to, ti),
				 x->by == RN_SW_BY_RDMA ? "(rdma)" : "");
			it[n].who = who[n];
			it[n].host = s->hosts[from].name;
			it[n++].f = &x->f;
		}
	}
	*itp = it;
	*whop = who;
	return n;
}

void rn_sweep_print(FILE *f, const struct rn_sweep *s, int verbose)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	struct rn_doctor_item *it = NULL;
	char (*who)[160] = NULL;
	char c[64];
	int h, i, j, nbad = 0, n, rc = rn_sweep_exit(s), pairs = 0;

	for (k = 0; k < np; k++)
		pairs += s->pairs[k] && !s->pairs[k]->status;
	fprintf(f, "roce-doctor-mpi %s: %d host%s, %d round%s, %d of %ld host pairs checked\n",
		RN_DOCTOR_VERSION, s->n, s->n == 1 ? "" : "s", s->rounds, s->rounds == 1 ? "" : "s",
		pairs, np);
	fprintf(f, "\n%-24s %-8s %-5s %-9s %s\n", "host", "status", "NICs", "bad pairs", "NICs (own verdict)");
	for (h = 0; h < s->n; h++) {
		fprintf(f, "%-24.24s %-8s %-5d %-9d", s->hosts[h].name, host_status(s, h), nnics(s, h),
			bad_pairs(s, h));
		for (i = 0; i < nnics(s, h); i++) {
			const struct rn_dw_nic *nic = &s->hosts[h].inv->nics[i];

			fprintf(f, " %s=%s", nic->netdev,
				rn_verdict_str((enum rn_verdict_kind)nic->verdict));
		}
		if (!s->hosts[h].facts)
			fprintf(f, " (no facts: it never answered)");
		else if (!s->hosts[h].results)
			fprintf(f, " (no results: it hung or died during the rounds)");
		else if (s->hosts[h].gather_err)
			fprintf(f, " (cannot read its facts: %s)", strerror(-s->hosts[h].gather_err));
		fputc('\n', f);
	}

	for (k = 0; k < np; k++) {
		const struct rn_sweep_pair *p = s->pairs[k];

		if (!p)
			continue;
		if (p->status) {
			if (!nbad++)
				fprintf(f, "\nbad NIC pairs:\n");
			fprintf(f, "  %s <-> %s: %s\n", s->hosts[p->a].name, s->hosts[p->b].name,
				p->err[0] ? p->err : strerror(-p->status));
			continue;
		}
		for (i = 0; i < p->na; i++)
			for (j = 0; j < p->nb; j++) {
				const struct rn_sweep_cell *x = &p->cells[i * p->nb + j];

				if (!rn_sweep_cell_bad(x))
					continue;
				if (!nbad++)
					fprintf(f, "\nbad NIC pairs:\n");
				fprintf(f, "  %s:%s <-> %s:%s  %s", s->hosts[p->a].name, nic_name(s, p->a, i),
					s->hosts[p->b].name, nic_name(s, p->b, j),
					rn_sweep_cell_str(x, c, sizeof(c)));
				if (x->a_cause && x->b_cause && x->a_cause != x->b_cause)
					fprintf(f, ", %s", rn_cause_id((enum rn_cause)(x->a_sev >= x->b_sev ? x->b_cause : x->a_cause)));
				if ((x->a_cause || x->b_cause) &&
				    (x->rdma == RN_SW_RDMA_TIMEOUT || x->rdma == RN_SW_RDMA_ERROR))
					fprintf(f, ", %s", x->rdma == RN_SW_RDMA_TIMEOUT ? "rdma-timeout" : "rdma-error");
				fputc('\n', f);
			}
	}
	if (!nbad)
		fprintf(f, "\nbad NIC pairs: none\n");
	print_heatmap(f, s);
	fputc('\n', f);
	n = collect_items(s, &it, &who);
	if (n > 0)
		rn_doctor_print_grouped(f, it, n, verbose);
	free(it);
	free(who);
	/* Probe errors without a diagnosis say what the wire did. */
	for (k = 0, nbad = 0; k < np; k++) {
		const struct rn_sweep_pair *p = s->pairs[k];
		int q;

		for (q = 0; p && q < p->nfind; q++) {
			const struct rn_sweep_find *x = &p->finds[q];

			if (x->by != RN_SW_BY_RDMA || (!verbose && nbad >= 8))
				continue;
			if (!nbad++)
				fprintf(f, "rdma probes that failed:\n");
			fprintf(f, "  %s:%s->%s:%s: %s\n", s->hosts[p->a].name, nic_name(s, p->a, x->i),
				s->hosts[p->b].name, nic_name(s, p->b, x->j), x->f.msg);
		}
	}
	fprintf(f, "time: ranks up %.1f s, facts %.0f ms, %d round%s %.1f s (slowest %.1f s), total %.1f s\n",
		s->startup_ms / 1000, s->facts_ms, s->rounds, s->rounds == 1 ? "" : "s", s->rounds_ms / 1000,
		s->round_max_ms / 1000, s->total_ms / 1000);
	fprintf(f, "verdict: %s\n",
		rc == RN_DOCTOR_OK ? "all good" :
		rc == RN_DOCTOR_PROBLEMS ? "problems found: apply the fixes above on the host each names" :
		"incomplete: a host did not answer (named above); its pairs were not checked");
}

/* ---- JSON ------------------------------------------------------------------------------ */

static const char *rdma_str(int r)
{
	return r == RN_SW_RDMA_OK ? "ok" : r == RN_SW_RDMA_TIMEOUT ? "timeout" :
	       r == RN_SW_RDMA_ERROR ? "error" : "skipped";
}

void rn_sweep_json(FILE *f, const struct rn_sweep *s, int rc)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	struct rn_json j;
	char b[INET6_ADDRSTRLEN], c[64];
	int h, i, q, x, pairs = 0;

	rn_json_begin(&j, f);
	rn_json_str(&j, "schema", "roce-doctor-sweep/1");
	rn_json_str(&j, "version", RN_DOCTOR_VERSION);
	rn_json_str(&j, "command", "sweep");
	rn_json_arr(&j, "hosts");
	for (h = 0; h < s->n; h++) {
		rn_json_obj(&j, NULL);
		rn_json_int(&j, "rank", h);
		rn_json_str(&j, "host", s->hosts[h].name);
		rn_json_str(&j, "status", host_status(s, h));
		rn_json_int(&j, "bad_pairs", bad_pairs(s, h));
		rn_json_int(&j, "gather_us", (long long)(s->hosts[h].gather_ms * 1000));
		rn_json_arr(&j, "nics");
		for (i = 0; i < nnics(s, h); i++) {
			const struct rn_dw_nic *n = &s->hosts[h].inv->nics[i];

			rn_json_obj(&j, NULL);
			rn_json_str(&j, "netdev", n->netdev);
			rn_json_str(&j, "ibdev", n->ibdev[0] ? n->ibdev : NULL);
			rn_json_str(&j, "ip", n->ip.family ? rn_ip_str(&n->ip, b, sizeof(b)) : NULL);
			rn_json_str(&j, "verdict", rn_verdict_str((enum rn_verdict_kind)n->verdict));
			rn_json_arr(&j, "findings");
			for (q = 0; q < n->nfindings; q++)
				rn_json_finding(&j, &n->findings[q], s->hosts[h].name);
			if (s->hosts[h].drops && s->hosts[h].drops[i].cause)
				rn_json_finding(&j, &s->hosts[h].drops[i], s->hosts[h].name);
			rn_json_close(&j, ']');
			rn_json_close(&j, '}');
		}
		rn_json_close(&j, ']');
		rn_json_close(&j, '}');
	}
	rn_json_close(&j, ']');
	rn_json_arr(&j, "bad_pairs");
	for (k = 0; k < np; k++) {
		const struct rn_sweep_pair *p = s->pairs[k];

		if (!p)
			continue;
		pairs += !p->status;
		if (p->status) {
			rn_json_obj(&j, NULL);
			rn_json_str(&j, "host_a", s->hosts[p->a].name);
			rn_json_null(&j, "nic_a");
			rn_json_str(&j, "host_b", s->hosts[p->b].name);
			rn_json_null(&j, "nic_b");
			rn_json_str(&j, "result", "no-answer");
			rn_json_str(&j, "error", p->err);
			rn_json_close(&j, '}');
			continue;
		}
		for (i = 0; i < p->na; i++)
			for (x = 0; x < p->nb; x++) {
				const struct rn_sweep_cell *cl = &p->cells[i * p->nb + x];

				if (!rn_sweep_cell_bad(cl))
					continue;
				rn_json_obj(&j, NULL);
				rn_json_str(&j, "host_a", s->hosts[p->a].name);
				rn_json_str(&j, "nic_a", nic_name(s, p->a, i));
				rn_json_str(&j, "host_b", s->hosts[p->b].name);
				rn_json_str(&j, "nic_b", nic_name(s, p->b, x));
				rn_json_str(&j, "result", rn_sweep_cell_str(cl, c, sizeof(c)));
				rn_json_arr(&j, "causes");
				if (cl->a_cause)
					rn_json_str(&j, NULL, rn_cause_id((enum rn_cause)cl->a_cause));
				if (cl->b_cause && cl->b_cause != cl->a_cause)
					rn_json_str(&j, NULL, rn_cause_id((enum rn_cause)cl->b_cause));
				if (cl->rdma == RN_SW_RDMA_TIMEOUT || cl->rdma == RN_SW_RDMA_ERROR)
					rn_json_str(&j, NULL, cl->rdma == RN_SW_RDMA_TIMEOUT ? "rdma-timeout" : "rdma-error");
				rn_json_close(&j, ']');
				rn_json_arr(&j, "findings");
				for (q = 0; q < p->nfind; q++) {
					const struct rn_sweep_find *fd = &p->finds[q];
					const struct rn_finding *fi = &fd->f;
					const char *by = s->hosts[fd->by == RN_SW_BY_B ? p->b : p->a].name;
					int pre = rn_finding_pre_fix(fi)[0] != '\0';

					if (fd->i != i || fd->j != x || !fi->cause)
						continue;
					rn_json_obj(&j, NULL);
					rn_json_str(&j, "found_by",
						    fd->by == RN_SW_BY_RDMA ? "rdma" : by);
					rn_json_str(&j, "cause", rn_cause_id(fi->cause));
					rn_json_str(&j, "severity", rn_doctor_sev_str(fi->sev));
					rn_json_str(&j, "message", fi->msg);
					rn_json_str(&j, "fix", rn_finding_fix(fi));
					rn_json_str(&j, "fix_host", rn_finding_fix(fi)[0] ?
						    rn_finding_where(fi, 0, by) : "");
					rn_json_str(&j, "pre_fix", rn_finding_pre_fix(fi));
					rn_json_str(&j, "pre_host",
						    pre ? rn_finding_where(fi, 1, by) : "");
					rn_json_str(&j, "advice", rn_finding_advice(fi));
					rn_json_close(&j, '}');
				}
				rn_json_close(&j, ']');
				rn_json_obj(&j, "rdma");
				rn_json_str(&j, "status", rdma_str(cl->rdma));
				rn_json_int(&j, "elapsed_us", cl->rdma_us);
				for (q = 0; q < p->nfind; q++)
					if (p->finds[q].by == RN_SW_BY_RDMA && p->finds[q].i == i &&
					    p->finds[q].j == x)
						rn_json_str(&j, "error", p->finds[q].f.msg);
				rn_json_close(&j, '}');
				rn_json_close(&j, '}');
			}
	}
	rn_json_close(&j, ']');
	rn_json_arr(&j, "missing");
	for (h = 0; h < s->n; h++)
		if (host_missing(s, h))
			rn_json_str(&j, NULL, s->hosts[h].name);
	rn_json_close(&j, ']');
	rn_json_obj(&j, "summary");
	rn_json_int(&j, "hosts", s->n);
	rn_json_int(&j, "rounds", s->rounds);
	rn_json_int(&j, "host_pairs", np);
	rn_json_int(&j, "host_pairs_checked", pairs);
	rn_json_int(&j, "bad_nic_pairs", bad_pairs(s, -1));
	rn_json_int(&j, "pair_timeout_s", s->pair_timeout_s);
	rn_json_int(&j, "startup_us", (long long)(s->startup_ms * 1000));
	rn_json_int(&j, "facts_us", (long long)(s->facts_ms * 1000));
	rn_json_int(&j, "rounds_us", (long long)(s->rounds_ms * 1000));
	rn_json_int(&j, "round_max_us", (long long)(s->round_max_ms * 1000));
	rn_json_int(&j, "elapsed_us", (long long)(s->total_ms * 1000));
	rn_json_int(&j, "exit", rc);
	rn_json_close(&j, '}');
	rn_json_end(&j);
}

/* ---- SVG ------------------------------------------------------------------------------- */

#define SVG_CELL 24
#define SVG_LABEL 150
#define SVG_TOP 150

static const char *cell_colour(const struct rn_sweep *s, int h1, int i1, int h2, int i2)
{
	const struct rn_sweep_cell *c;

	if (h1 == h2)
		return "#eeeeee";
	c = cell_of(s, h1, i1, h2, i2);
	if (!c)
		return "#8e6bbf";
	if (c->a_sev >= RN_SEV_FATAL || c->b_sev >= RN_SEV_FATAL ||
	    c->rdma == RN_SW_RDMA_TIMEOUT || c->rdma == RN_SW_RDMA_ERROR)
		return "#d7301f";
	if (c->a_cause || c->b_cause)
		return "#f28e2b";
	if (!c->a_checked && !c->b_checked && c->rdma == RN_SW_RDMA_SKIPPED)
		return "#bbbbbb";
	return "#3a9d4a";
}

static const char *verdict_colour(const struct rn_dw_nic *n)
{
	return n->verdict == RN_VERDICT_REFUSED ? "#d7301f" : n->verdict == RN_VERDICT_WARN ? "#f28e2b" :
	       host_nic_problem(n) ? "#f28e2b" : "#3a9d4a";
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

static void svg_fill(FILE *f, const void *arg)
{
	const struct rn_sweep *s = arg;
	char c[64];
	int total = 0, h, i, h2, i2, y, x, gw, size;

	for (h = 0; h < s->n; h++)
		total += nnics(s, h);
	gw = total * SVG_CELL;
	size = SVG_LABEL + gw + 40;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"DejaVu Sans Mono, monospace\" font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		RN_MAX(size, 520), SVG_TOP + gw + 110);
	fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">roce-doctor-mpi: "
		"%d hosts, %d NICs, %d bad NIC pairs</text>\n", s->n, total, bad_pairs(s, -1));
	/* column labels (rotated) and row labels, with the NIC's own verdict as a dot */
	for (h = 0, x = 0; h < s->n; h++)
		for (i = 0; i < nnics(s, h); i++, x++) {
			const struct rn_dw_nic *n = &s->hosts[h].inv->nics[i];
			int cx = SVG_LABEL + x * SVG_CELL + SVG_CELL / 2;
			int cy = SVG_TOP + x * SVG_CELL + SVG_CELL / 2;

			fprintf(f, "<text transform=\"translate(%d,%d) rotate(-60)\">", cx + 4, SVG_TOP - 14);
			xml_text(f, s->hosts[h].name);
			fputc(':', f);
			xml_text(f, n->netdev);
			fprintf(f, "</text>\n<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"/>\n", cx,
				SVG_TOP - 7, verdict_colour(n));
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", SVG_LABEL - 14, cy + 4);
			xml_text(f, s->hosts[h].name);
			fputc(':', f);
			xml_text(f, n->netdev);
			fprintf(f, "</text>\n<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"/>\n",
				SVG_LABEL - 7, cy, verdict_colour(n));
		}
	for (h = 0, y = 0; h < s->n; h++)
		for (i = 0; i < nnics(s, h); i++, y++)
			for (h2 = 0, x = 0; h2 < s->n; h2++)
				for (i2 = 0; i2 < nnics(s, h2); i2++, x++) {
					const struct rn_sweep_cell *cl = h == h2 ? NULL : cell_of(s, h, i, h2, i2);

					fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
						"fill=\"%s\" stroke=\"white\"><title>",
						SVG_LABEL + x * SVG_CELL, SVG_TOP + y * SVG_CELL, SVG_CELL,
						SVG_CELL, cell_colour(s, h, i, h2, i2));
					xml_text(f, s->hosts[h].name);
					fprintf(f, ":%s - ", nic_name(s, h, i));
					xml_text(f, s->hosts[h2].name);
					fprintf(f, ":%s: %s</title></rect>\n", nic_name(s, h2, i2),
						h == h2 ? "same host" : cl ? rn_sweep_cell_str(cl, c, sizeof(c)) :
						"no result");
				}
	/* host boundaries */
	for (h = 0, x = 0; h <= s->n; h++) {
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
			SVG_LABEL + x * SVG_CELL, SVG_TOP, SVG_LABEL + x * SVG_CELL, SVG_TOP + gw);
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
			SVG_LABEL, SVG_TOP + x * SVG_CELL, SVG_LABEL + gw, SVG_TOP + x * SVG_CELL);
		x += h < s->n ? nnics(s, h) : 0;
	}
	y = SVG_TOP + gw + 25;
	{
		static const struct { const char *colour, *what; } legend[] = {
			{ "#3a9d4a", "ok" }, { "#f28e2b", "warning" }, { "#d7301f", "broken" },
			{ "#bbbbbb", "not checked" }, { "#8e6bbf", "no result (host hung)" },
		};
		size_t l;

		for (l = 0; l < RN_ARRAY_SIZE(legend); l++) {
			x = 10 + (int)(l % 3) * 170;
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\">%s</text>\n", x, y + (int)(l / 3) * 22, legend[l].colour,
				x + 20, y + (int)(l / 3) * 22 + 11, legend[l].what);
		}
		fprintf(f, "<text x=\"10\" y=\"%d\">dots: the NIC's own verdict (host check)</text>\n",
			y + 60);
	}
	fprintf(f, "</svg>\n");
}

int rn_sweep_svg(const char *path, const struct rn_sweep *s)
{
	return rn_doctor_write_file(path, svg_fill, s);
}
