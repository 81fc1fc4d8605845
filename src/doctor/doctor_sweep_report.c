// SPDX-License-Identifier: MIT
/*
 * The sweep's report on rank 0, as text (per-host summary, the bad NIC pairs with their
 * causes and fixes, the fleet's differences, the heat map) and as JSON (the same facts).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_probe.h"
#include "doctor_sweep.h"

/* ---- text ------------------------------------------------------------------------------ */

/* Bad for its bandwidth alone: the checks and the ping were fine. */
static int only_slow(const struct rn_pair_cell *c)
{
	return c->slow && !c->a_cause && !c->b_cause && c->rdma != RN_PAIR_RDMA_TIMEOUT &&
	       c->rdma != RN_PAIR_RDMA_ERROR;
}

static int any_facts(const struct rn_sweep *s)
{
	int h;

	for (h = 0; h < s->n; h++)
		if (s->hosts[h].hf)
			return 1;
	return 0;
}

static void print_fleet(FILE *f, const struct rn_sweep *s)
{
	int k;

	if (!any_facts(s) || s->aborted)
		return;
	fprintf(f, "\nfleet (what most have):");
	for (k = 0; k < RN_SW_F__MAX; k++) {
		if (k == RN_SW_F_NIC)
			fprintf(f, "\n  NICs:");
		else if (k == 0)
			fprintf(f, "\n  hosts:");
		if (s->fleet[k][0])
			fprintf(f, " %s %s%s", rn_sweep_field_name(k), s->fleet[k],
				k == RN_SW_F__MAX - 1 || k == RN_SW_F_NIC - 1 ? "" : ",");
	}
	fputc('\n', f);
	if (!s->ndiffs) {
		fprintf(f, "differs from the fleet: nothing (plugin, kernel, rdma-core, NCCL, NIC "
			   "drivers, firmware, MTUs and sysctls agree)\n");
		return;
	}
	fprintf(f, "differs from the fleet (%d):\n", s->ndiffs);
	for (k = 0; k < s->ndiffs; k++) {
		const struct rn_sweep_diff *d = &s->diffs[k];
		char who[160];

		if (d->i < 0)
			snprintf(who, sizeof(who), "%s", s->hosts[d->h].name);
		else
			snprintf(who, sizeof(who), "%s:%s", s->hosts[d->h].name,
				 rn_sweep_nic_name(s, d->h, d->i));
		if (d->f.cause == RN_CAUSE_PLUGIN_MISSING) {
			fprintf(f, "  %-24s %s (fatal): %s\n", who, rn_cause_id(d->f.cause),
				d->f.msg);
			continue;
		}
		fprintf(f, "  %-24s %s %s, where %d of %d have %s%s\n", who,
			rn_sweep_field_name(d->field), d->value, d->count, d->of, d->majority,
			d->tie ? " (no majority: as many have another value)" : "");
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Measured pairs: how many, how many slow; their Mbit/s sorted into *@v (malloc'ed). */
static int bw_figures(const struct rn_sweep *s, uint32_t **v, int *nslow)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int c, n = 0, max = 0;

	*nslow = 0;
	for (k = 0; k < np; k++)
		max += s->pairs[k] ? s->pairs[k]->na * s->pairs[k]->nb : 0;
	*v = calloc((size_t)max + 1, sizeof(**v));
	if (!*v)
		return 0;
	for (k = 0; k < np; k++) {
		const struct rn_pair_result *p = s->pairs[k];

		for (c = 0; p && !p->status && c < p->na * p->nb; c++) {
			if (p->cells[c].bw == RN_PAIR_BW_NONE)
				continue;
			(*v)[n++] = p->cells[c].bw == RN_PAIR_BW_OK ? p->cells[c].bw_mbps : 0;
			*nslow += p->cells[c].slow;
		}
	}
	qsort(*v, (size_t)n, sizeof(**v), cmp_u32);
	return n;
}

/* --min-gbps asked, nothing measured. */
static int bw_skipped(const struct rn_sweep *s)
{
	uint32_t *v = NULL;
	int nslow, n;

	if (s->min_gbps <= 0)
		return 0;
	n = bw_figures(s, &v, &nslow);
	free(v);
	return !n;
}

static void print_bw(FILE *f, const struct rn_sweep *s)
{
	uint32_t *v = NULL;
	int n, nslow, k, h, i, first = 1;

	if (s->min_gbps <= 0)
		return;
	n = bw_figures(s, &v, &nslow);
	fprintf(f,
		"\nbandwidth (--min-gbps %g; %llu MiB a NIC pair through the plugin's transport):",
		s->min_gbps, (unsigned long long)(RN_BW_BYTES >> 20));
	if (!n) {
		fprintf(f,
			"\nskipped: bandwidth: no NIC pair was measured (it needs an RDMA port at "
			"both ends and a good ping%s)\n",
			s->no_rdma ? "; --no-rdma" : "");
		free(v);
		return;
	}
	fprintf(f, " %d NIC pair%s measured, Gbit/s min %.2f, median %.2f, max %.2f; %d under %g\n",
		n, n == 1 ? "" : "s", v[0] / 1000.0, v[n / 2] / 1000.0, v[n - 1] / 1000.0, nslow,
		s->min_gbps);
	free(v);
	if (nslow == n)
		fprintf(f,
			"no NIC pair reached %g Gbit/s: is --min-gbps above what these NICs do?\n",
			s->min_gbps);
	if (s->recheck_skipped[0])
		fprintf(f, "second pass skipped: %s\n", s->recheck_skipped);
	else if (s->nrechecks)
		fprintf(f,
			"second pass (each end of a slow pair that is fast with no peer, alone "
			"against a NIC fast with others; %d round%s, %.1f s):\n",
			s->recheck_rounds, s->recheck_rounds == 1 ? "" : "s", s->recheck_ms / 1000);
	for (k = 0; k < s->nrechecks && !s->recheck_skipped[0]; k++) {
		const struct rn_sweep_recheck *r = &s->rechecks[k];

		fprintf(f, "  %s:%s against %s:%s: ", s->hosts[r->h].name,
			rn_sweep_nic_name(s, r->h, r->i), s->hosts[r->w].name,
			rn_sweep_nic_name(s, r->w, r->k));
		if (r->bw == RN_PAIR_BW_OK)
			fprintf(f, "%.2f Gbit/s: %s\n", r->mbps / 1000.0,
				rn_sweep_recheck_slow(s, r) ?
					"slow" :
					"fast (the first figure was a passing load)");
		else
			fprintf(f, "%s\n",
				r->bw == RN_PAIR_BW_FAILED ? "the stream failed: slow" :
							     "did not run");
	}
	for (h = 0; h < s->n; h++)
		for (i = 0; s->hosts[h].slow && i < rn_sweep_nnics(s, h); i++)
			if (s->hosts[h].slow[i].cause) {
				fprintf(f, "%s %s:%s", first ? "slow NICs (the bad ends):" : ",",
					s->hosts[h].name, rn_sweep_nic_name(s, h, i));
				first = 0;
			}
	if (!first)
		fputc('\n', f);
}

/* The heat map's mark for one NIC pair. */
static char mark(const struct rn_sweep *s, int h1, int i1, int h2, int i2)
{
	const struct rn_pair_cell *c;

	if (h1 == h2)
		return i1 == i2 ? '\\' : ' ';
	c = rn_sweep_cell_of(s, h1, i1, h2, i2);
	if (!c)
		return '?';
	if (rn_pair_cell_bad(c))
		return only_slow(c) ? 's' : 'X';
	return !c->a_checked && !c->b_checked && c->rdma == RN_PAIR_RDMA_SKIPPED ? '-' : '.';
}

static char host_mark(const struct rn_sweep *s, int h1, int h2)
{
	char m = '.', c;
	int i, j;

	if (h1 == h2)
		return '\\';
	for (i = 0; i < rn_sweep_nnics(s, h1); i++)
		for (j = 0; j < rn_sweep_nnics(s, h2); j++) {
			c = mark(s, h1, i, h2, j);
			if (c == 'X' || (c == '?' && m != 'X') || (c == 's' && m == '.'))
				m = c;
		}
	return rn_sweep_nnics(s, h1) && rn_sweep_nnics(s, h2) ? m : '?';
}

static void print_heatmap(FILE *f, const struct rn_sweep *s)
{
	int h, i, h2, i2, total = 0, w = 0;
	char label[96];

	for (h = 0; h < s->n; h++) {
		total += rn_sweep_nnics(s, h);
		w = RN_MAX(w, (int)strlen(s->hosts[h].name) + 17);
	}
	w = RN_MIN(w, 40);
	if (total > 64) {
		/* Thousands of NICs do not fit a terminal: hosts only, the list has the NICs. */
		fprintf(f,
			"\nheat map (host x host, X: a bad NIC pair, s: a slow one, ?: no result)\n");
		for (h = 0; h < s->n; h++) {
			fprintf(f, "%-*.*s ", w, w, s->hosts[h].name);
			for (h2 = 0; h2 < s->n; h2++)
				fputc(host_mark(s, h, h2), f);
			fputc('\n', f);
		}
		return;
	}
	fprintf(f,
		"\nheat map (host:NIC x host:NIC; . ok, X bad, s slow, - not checked, ? no result)\n");
	for (h = 0; h < s->n; h++)
		for (i = 0; i < rn_sweep_nnics(s, h); i++) {
			snprintf(label, sizeof(label), "%s:%s", s->hosts[h].name,
				 rn_sweep_nic_name(s, h, i));
			fprintf(f, "  %-*.*s ", w, w, label);
			for (h2 = 0; h2 < s->n; h2++) {
				fputc('|', f);
				for (i2 = 0; i2 < rn_sweep_nnics(s, h2); i2++)
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
	char(*who)[160];

	for (h = 0; h < s->n; h++)
		for (i = 0; i < rn_sweep_nnics(s, h); i++)
			max += s->hosts[h].inv->nics[i].nfindings + 1;
	for (k = 0; k < np; k++)
		max += s->pairs[k] ? s->pairs[k]->nfind : 0;
	max += s->ndiffs;
	for (h = 0; h < s->n; h++)
		max += rn_sweep_nnics(s, h);
	it = calloc((size_t)max + 1, sizeof(*it));
	who = calloc((size_t)max + 1, sizeof(*who));
	if (!it || !who) {
		free(it);
		free(who);
		return -ENOMEM;
	}
	for (h = 0; h < s->n; h++)
		for (i = 0; i < rn_sweep_nnics(s, h); i++) {
			const struct rn_dw_nic *nic = &s->hosts[h].inv->nics[i];

			for (f = 0; f < nic->nfindings; f++) {
				if (nic->findings[f].sev < RN_SEV_WARN)
					continue;
				snprintf(who[n], sizeof(who[n]), "%s:%s", s->hosts[h].name,
					 nic->netdev);
				it[n].who = who[n];
				it[n].host = s->hosts[h].name;
				it[n++].f = &nic->findings[f];
			}
			if (s->hosts[h].drops && s->hosts[h].drops[i].cause) {
				snprintf(who[n], sizeof(who[n]), "%s:%s", s->hosts[h].name,
					 nic->netdev);
				it[n].who = who[n];
				it[n].host = s->hosts[h].name;
				it[n++].f = &s->hosts[h].drops[i];
			}
			if (s->hosts[h].slow && s->hosts[h].slow[i].cause) {
				snprintf(who[n], sizeof(who[n]), "%s:%s", s->hosts[h].name,
					 nic->netdev);
				it[n].who = who[n];
				it[n].host = s->hosts[h].name;
				it[n++].f = &s->hosts[h].slow[i];
			}
		}
	for (f = 0; f < s->ndiffs; f++) {
		const struct rn_sweep_diff *d = &s->diffs[f];

		if (d->i < 0)
			snprintf(who[n], sizeof(who[n]), "%s", s->hosts[d->h].name);
		else
			snprintf(who[n], sizeof(who[n]), "%s:%s", s->hosts[d->h].name,
				 rn_sweep_nic_name(s, d->h, d->i));
		it[n].who = who[n];
		it[n].host = s->hosts[d->h].name;
		it[n++].f = &d->f;
	}
	for (k = 0; k < np; k++) {
		const struct rn_pair_result *p = s->pairs[k];

		for (f = 0; p && f < p->nfind; f++) {
			const struct rn_pair_find *x = &p->finds[f];
			int from = x->by == RN_PAIR_FROM_B ? p->b : p->a,
			    to = x->by == RN_PAIR_FROM_B ? p->a : p->b;
			int fi = x->by == RN_PAIR_FROM_B ? x->j : x->i,
			    ti = x->by == RN_PAIR_FROM_B ? x->i : x->j;

			if (!x->f.cause || x->f.sev < RN_SEV_WARN)
				continue;
			snprintf(who[n], sizeof(who[n]), "%s:%s->%s:%s%s", s->hosts[from].name,
				 rn_sweep_nic_name(s, from, fi), s->hosts[to].name,
				 rn_sweep_nic_name(s, to, ti),
				 x->by == RN_PAIR_FROM_RDMA ? "(rdma)" :
				 x->by == RN_PAIR_FROM_BW   ? "(bandwidth)" :
							      "");
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
	char(*who)[160] = NULL;
	char c[64];
	int h, i, j, nbad = 0, n, rc = rn_sweep_exit(s), pairs = 0;

	for (k = 0; k < np; k++)
		pairs += s->pairs[k] && !s->pairs[k]->status;
	fprintf(f, "roce-doctor-mpi %s: %d host%s, %d round%s, %d of %ld host pairs checked\n",
		RN_DOCTOR_VERSION, s->n, s->n == 1 ? "" : "s", s->rounds, s->rounds == 1 ? "" : "s",
		pairs, np);
	fprintf(f, "\n%-24s %-8s %-5s %-9s %s\n", "host", "status", "NICs", "bad pairs",
		"NICs (own verdict)");
	for (h = 0; h < s->n; h++) {
		fprintf(f, "%-24.24s %-8s %-5d %-9d", s->hosts[h].name, rn_sweep_host_status(s, h),
			rn_sweep_nnics(s, h), rn_sweep_bad_pairs(s, h));
		for (i = 0; i < rn_sweep_nnics(s, h); i++) {
			const struct rn_dw_nic *nic = &s->hosts[h].inv->nics[i];

			fprintf(f, " %s=%s", nic->netdev,
				rn_verdict_str((enum rn_verdict_kind)nic->verdict));
		}
		if (!s->hosts[h].facts)
			fprintf(f, " (no facts: it never answered)");
		else if (!s->hosts[h].results)
			fprintf(f, " (no results: it hung or died during the rounds)");
		else if (s->hosts[h].gather_err)
			fprintf(f, " (cannot read its facts: %s)",
				strerror(-s->hosts[h].gather_err));
		fputc('\n', f);
	}
	print_fleet(f, s);

	for (k = 0; k < np; k++) {
		const struct rn_pair_result *p = s->pairs[k];

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
				const struct rn_pair_cell *x = &p->cells[i * p->nb + j];

				if (!rn_pair_cell_bad(x))
					continue;
				if (!nbad++)
					fprintf(f, "\nbad NIC pairs:\n");
				fprintf(f, "  %s:%s <-> %s:%s  %s", s->hosts[p->a].name,
					rn_sweep_nic_name(s, p->a, i), s->hosts[p->b].name,
					rn_sweep_nic_name(s, p->b, j),
					rn_sweep_cell_str(x, c, sizeof(c)));
				if (x->a_cause && x->b_cause && x->a_cause != x->b_cause)
					fprintf(f, ", %s",
						rn_cause_id((enum rn_cause)(x->a_sev >= x->b_sev ?
										    x->b_cause :
										    x->a_cause)));
				if ((x->a_cause || x->b_cause) &&
				    (x->rdma == RN_PAIR_RDMA_TIMEOUT ||
				     x->rdma == RN_PAIR_RDMA_ERROR))
					fprintf(f, ", %s",
						x->rdma == RN_PAIR_RDMA_TIMEOUT ? "rdma-timeout" :
										  "rdma-error");
				if (x->slow && !only_slow(x))
					fprintf(f, ", %s", rn_cause_id(RN_CAUSE_BANDWIDTH_LOW));
				if (x->slow && x->bw == RN_PAIR_BW_OK)
					fprintf(f, " %.2f Gbit/s", x->bw_mbps / 1000.0);
				else if (x->slow)
					fprintf(f, " (the stream failed)");
				if (x->blame == RN_SW_BLAME_A || x->blame == RN_SW_BLAME_B)
					fprintf(f, ", slow end %s:%s",
						s->hosts[x->blame == RN_SW_BLAME_A ? p->a : p->b]
							.name,
						x->blame == RN_SW_BLAME_A ?
							rn_sweep_nic_name(s, p->a, i) :
							rn_sweep_nic_name(s, p->b, j));
				else if (x->blame == RN_SW_BLAME_BOTH)
					fprintf(f, ", both ends slow");
				else if (x->blame == RN_SW_BLAME_PATH)
					fprintf(f, ", the path between them");
				else if (x->blame == RN_SW_BLAME_UNKNOWN)
					fprintf(f, ", which end: cannot tell");
				fputc('\n', f);
			}
	}
	if (!nbad)
		fprintf(f, "\nbad NIC pairs: none\n");
	print_bw(f, s);
	print_heatmap(f, s);
	fputc('\n', f);
	n = collect_items(s, &it, &who);
	if (n > 0)
		rn_doctor_print_grouped(f, it, n, verbose);
	free(it);
	free(who);
	/* Probe errors without a diagnosis say what the wire did. */
	for (k = 0, nbad = 0; k < np; k++) {
		const struct rn_pair_result *p = s->pairs[k];
		int q;

		for (q = 0; p && q < p->nfind; q++) {
			const struct rn_pair_find *x = &p->finds[q];

			if ((x->by != RN_PAIR_FROM_RDMA &&
			     (x->by != RN_PAIR_FROM_BW || x->f.cause)) ||
			    (!verbose && nbad >= 8))
				continue;
			if (!nbad++)
				fprintf(f, "rdma probes (and bandwidth streams) that failed:\n");
			fprintf(f, "  %s:%s->%s:%s: %s\n", s->hosts[p->a].name,
				rn_sweep_nic_name(s, p->a, x->i), s->hosts[p->b].name,
				rn_sweep_nic_name(s, p->b, x->j), x->f.msg);
		}
	}
	fprintf(f,
		"time: ranks up %.1f s, facts %.0f ms, %d round%s %.1f s (slowest %.1f s), total %.1f s\n",
		s->startup_ms / 1000, s->facts_ms, s->rounds, s->rounds == 1 ? "" : "s",
		s->rounds_ms / 1000, s->round_max_ms / 1000, s->total_ms / 1000);
	fprintf(f, "verdict: %s\n",
		rc == RN_DOCTOR_OK && bw_skipped(s) ?
			"no problems found; bandwidth not measured "
			"(skipped above)" :
		rc == RN_DOCTOR_OK ?
			"all good" :
		rc == RN_DOCTOR_PROBLEMS ?
			"problems found: apply the fixes above on the host each names" :
			"incomplete: a host did not answer (named above); its pairs were not checked");
}

/* ---- JSON ------------------------------------------------------------------------------ */

static const char *rdma_str(int r)
{
	return r == RN_PAIR_RDMA_OK      ? "ok" :
	       r == RN_PAIR_RDMA_TIMEOUT ? "timeout" :
	       r == RN_PAIR_RDMA_ERROR   ? "error" :
					   "skipped";
}

/* "rdma-core" as a JSON key: rdma_core. */
static const char *json_key(const char *name, char *buf, size_t len)
{
	char *p;

	snprintf(buf, len, "%s", name);
	for (p = buf; *p; p++)
		if (*p == '-')
			*p = '_';
	return buf;
}

static void json_cell_bw(struct rn_json *j, const struct rn_pair_result *p, int i, int x)
{
	const struct rn_pair_cell *c = &p->cells[i * p->nb + x];
	int q;

	rn_json_obj(j, "bandwidth");
	rn_json_str(j, "status",
		    c->bw == RN_PAIR_BW_OK     ? "ok" :
		    c->bw == RN_PAIR_BW_FAILED ? "failed" :
						 "skipped");
	if (c->bw == RN_PAIR_BW_OK)
		rn_json_num(j, "gbps", c->bw_mbps / 1000.0, 3);
	else
		rn_json_null(j, "gbps");
	rn_json_bool(j, "slow", c->slow);
	rn_json_str(j, "blame", c->slow ? rn_sweep_blame_str(c->blame) : NULL);
	for (q = 0; q < p->nfind; q++)
		if (p->finds[q].by == RN_PAIR_FROM_BW && !p->finds[q].f.cause &&
		    p->finds[q].i == i && p->finds[q].j == x)
			rn_json_str(j, "error", p->finds[q].f.msg);
	rn_json_close(j, '}');
}

static void json_fleet(struct rn_json *j, const struct rn_sweep *s)
{
	char k[32];
	int q;

	rn_json_obj(j, "fleet");
	for (q = 0; q < RN_SW_F__MAX; q++)
		rn_json_str(j, json_key(rn_sweep_field_name(q), k, sizeof(k)),
			    s->fleet[q][0] ? s->fleet[q] : NULL);
	rn_json_close(j, '}');
	rn_json_arr(j, "differences");
	for (q = 0; q < s->ndiffs; q++) {
		const struct rn_sweep_diff *d = &s->diffs[q];

		rn_json_obj(j, NULL);
		rn_json_str(j, "field", rn_sweep_field_name(d->field));
		rn_json_str(j, "host", s->hosts[d->h].name);
		rn_json_str(j, "nic", d->i < 0 ? NULL : rn_sweep_nic_name(s, d->h, d->i));
		rn_json_str(j, "value", d->value);
		rn_json_str(j, "majority", d->majority);
		rn_json_int(j, "count", d->count);
		rn_json_int(j, "of", d->of);
		rn_json_bool(j, "tie", d->tie);
		rn_json_arr(j, "findings");
		rn_json_finding(j, &d->f, s->hosts[d->h].name);
		rn_json_close(j, ']');
		rn_json_close(j, '}');
	}
	rn_json_close(j, ']');
}

static void json_bw(struct rn_json *j, const struct rn_sweep *s)
{
	uint32_t *v = NULL;
	int n, nslow, k;

	if (s->min_gbps <= 0) {
		rn_json_null(j, "bandwidth");
		return;
	}
	n = bw_figures(s, &v, &nslow);
	rn_json_obj(j, "bandwidth");
	rn_json_num(j, "min_gbps", s->min_gbps, 3);
	rn_json_int(j, "bytes", (long long)RN_BW_BYTES);
	rn_json_int(j, "measured", n);
	rn_json_int(j, "slow", nslow);
	if (n) {
		rn_json_num(j, "gbps_min", v[0] / 1000.0, 3);
		rn_json_num(j, "gbps_median", v[n / 2] / 1000.0, 3);
		rn_json_num(j, "gbps_max", v[n - 1] / 1000.0, 3);
	}
	free(v);
	rn_json_str(j, "skipped",
		    !n ? "no NIC pair was measured (an RDMA port at both ends and a "
			 "good ping are needed)" :
			 NULL);
	rn_json_arr(j, "rechecks");
	for (k = 0; k < s->nrechecks; k++) {
		const struct rn_sweep_recheck *r = &s->rechecks[k];

		rn_json_obj(j, NULL);
		rn_json_str(j, "host", s->hosts[r->h].name);
		rn_json_str(j, "nic", rn_sweep_nic_name(s, r->h, r->i));
		rn_json_str(j, "witness_host", s->hosts[r->w].name);
		rn_json_str(j, "witness_nic", rn_sweep_nic_name(s, r->w, r->k));
		rn_json_int(j, "round", r->round);
		rn_json_str(j, "status",
			    r->bw == RN_PAIR_BW_OK     ? "ok" :
			    r->bw == RN_PAIR_BW_FAILED ? "failed" :
							 "skipped");
		if (r->bw == RN_PAIR_BW_OK)
			rn_json_num(j, "gbps", r->mbps / 1000.0, 3);
		else
			rn_json_null(j, "gbps");
		rn_json_bool(j, "slow", r->bw != RN_PAIR_BW_NONE && rn_sweep_recheck_slow(s, r));
		rn_json_close(j, '}');
	}
	rn_json_close(j, ']');
	rn_json_int(j, "recheck_rounds", s->recheck_rounds);
	rn_json_int(j, "recheck_us", (long long)(s->recheck_ms * 1000));
	rn_json_str(j, "recheck_skipped", s->recheck_skipped[0] ? s->recheck_skipped : NULL);
	rn_json_close(j, '}');
}

/* Host @h: its facts, its NICs with their own findings and what the fleet inferred. */
static void json_host(struct rn_json *j, const struct rn_sweep *s, int h)
{
	const struct rn_doctor_facts *hf = s->hosts[h].hf;
	char b[INET6_ADDRSTRLEN], c[64], v[RN_FACT_LEN];
	int i, q;

	rn_json_obj(j, NULL);
	rn_json_int(j, "rank", h);
	rn_json_str(j, "host", s->hosts[h].name);
	rn_json_str(j, "status", rn_sweep_host_status(s, h));
	rn_json_int(j, "bad_pairs", rn_sweep_bad_pairs(s, h));
	rn_json_int(j, "gather_us", (long long)(s->hosts[h].gather_ms * 1000));
	for (q = 0; q < RN_SW_F_NIC; q++)
		rn_json_str(j, json_key(rn_sweep_field_name(q), c, sizeof(c)),
			    rn_sweep_fact(s, h, -1, q, v, sizeof(v)));
	rn_json_str(j, "plugin_path", hf && hf->plugin_path[0] ? hf->plugin_path : NULL);
	rn_json_str(j, "nccl_path", hf && hf->nccl_path[0] ? hf->nccl_path : NULL);
	rn_json_arr(j, "nics");
	for (i = 0; i < rn_sweep_nnics(s, h); i++) {
		const struct rn_dw_nic *n = &s->hosts[h].inv->nics[i];

		rn_json_obj(j, NULL);
		rn_json_str(j, "netdev", n->netdev);
		rn_json_str(j, "ibdev", n->ibdev[0] ? n->ibdev : NULL);
		rn_json_str(j, "ip", n->ip.family ? rn_ip_str(&n->ip, b, sizeof(b)) : NULL);
		rn_json_str(j, "verdict", rn_verdict_str((enum rn_verdict_kind)n->verdict));
		rn_json_str(j, "driver", rn_sweep_fact(s, h, i, RN_SW_F_DRIVER, v, sizeof(v)));
		rn_json_str(j, "firmware", rn_sweep_fact(s, h, i, RN_SW_F_FW, v, sizeof(v)));
		rn_json_int(j, "mtu", n->mtu);
		if (hf && i < hf->nnics)
			rn_json_sysctls(j, "sysctl", &hf->nics[i].eff);
		else
			rn_json_null(j, "sysctl");
		rn_json_arr(j, "findings");
		for (q = 0; q < n->nfindings; q++)
			rn_json_finding(j, &n->findings[q], s->hosts[h].name);
		if (s->hosts[h].drops && s->hosts[h].drops[i].cause)
			rn_json_finding(j, &s->hosts[h].drops[i], s->hosts[h].name);
		if (s->hosts[h].slow && s->hosts[h].slow[i].cause)
			rn_json_finding(j, &s->hosts[h].slow[i], s->hosts[h].name);
		rn_json_close(j, ']');
		rn_json_close(j, '}');
	}
	rn_json_close(j, ']');
	rn_json_close(j, '}');
}

/* The findings of NIC pair (@i, @x) of @p, each with who found it and where its fix runs. */
static void json_cell_findings(struct rn_json *j, const struct rn_sweep *s,
			       const struct rn_pair_result *p, int i, int x)
{
	int q;

	rn_json_arr(j, "findings");
	for (q = 0; q < p->nfind; q++) {
		const struct rn_pair_find *fd = &p->finds[q];
		const struct rn_finding *fi = &fd->f;
		const char *by = s->hosts[fd->by == RN_PAIR_FROM_B ? p->b : p->a].name;
		int pre = rn_finding_pre_fix(fi)[0] != '\0';

		if (fd->i != i || fd->j != x || !fi->cause)
			continue;
		rn_json_obj(j, NULL);
		rn_json_str(j, "found_by",
			    fd->by == RN_PAIR_FROM_RDMA ? "rdma" :
			    fd->by == RN_PAIR_FROM_BW   ? "bandwidth" :
							  by);
		rn_json_str(j, "cause", rn_cause_id(fi->cause));
		rn_json_str(j, "severity", rn_doctor_sev_str(fi->sev));
		rn_json_str(j, "message", fi->msg);
		rn_json_str(j, "fix", rn_finding_fix(fi));
		rn_json_str(j, "fix_host",
			    rn_finding_fix(fi)[0] ? rn_finding_where(fi, 0, by) : "");
		rn_json_str(j, "pre_fix", rn_finding_pre_fix(fi));
		rn_json_str(j, "pre_host", pre ? rn_finding_where(fi, 1, by) : "");
		rn_json_str(j, "advice", rn_finding_advice(fi));
		rn_json_close(j, '}');
	}
	rn_json_close(j, ']');
}

/* One bad NIC pair (@i, @x) of @p: its ends, its causes, findings, probe and stream. */
static void json_bad_cell(struct rn_json *j, const struct rn_sweep *s,
			  const struct rn_pair_result *p, int i, int x)
{
	const struct rn_pair_cell *cl = &p->cells[i * p->nb + x];
	char c[64];
	int q;

	rn_json_obj(j, NULL);
	rn_json_str(j, "host_a", s->hosts[p->a].name);
	rn_json_str(j, "nic_a", rn_sweep_nic_name(s, p->a, i));
	rn_json_str(j, "host_b", s->hosts[p->b].name);
	rn_json_str(j, "nic_b", rn_sweep_nic_name(s, p->b, x));
	rn_json_str(j, "result", rn_sweep_cell_str(cl, c, sizeof(c)));
	rn_json_arr(j, "causes");
	if (cl->a_cause)
		rn_json_str(j, NULL, rn_cause_id((enum rn_cause)cl->a_cause));
	if (cl->b_cause && cl->b_cause != cl->a_cause)
		rn_json_str(j, NULL, rn_cause_id((enum rn_cause)cl->b_cause));
	if (cl->rdma == RN_PAIR_RDMA_TIMEOUT || cl->rdma == RN_PAIR_RDMA_ERROR)
		rn_json_str(j, NULL,
			    cl->rdma == RN_PAIR_RDMA_TIMEOUT ? "rdma-timeout" : "rdma-error");
	rn_json_close(j, ']');
	json_cell_findings(j, s, p, i, x);
	rn_json_obj(j, "rdma");
	rn_json_str(j, "status", rdma_str(cl->rdma));
	rn_json_int(j, "elapsed_us", cl->rdma_us);
	for (q = 0; q < p->nfind; q++)
		if (p->finds[q].by == RN_PAIR_FROM_RDMA && p->finds[q].i == i && p->finds[q].j == x)
			rn_json_str(j, "error", p->finds[q].f.msg);
	rn_json_close(j, '}');
	if (s->min_gbps > 0)
		json_cell_bw(j, p, i, x);
	rn_json_close(j, '}');
}

/* Every bad NIC pair, and every host pair that did not answer; returns the pairs checked. */
static int json_bad_pairs(struct rn_json *j, const struct rn_sweep *s)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int i, x, pairs = 0;

	rn_json_arr(j, "bad_pairs");
	for (k = 0; k < np; k++) {
		const struct rn_pair_result *p = s->pairs[k];

		if (!p)
			continue;
		pairs += !p->status;
		if (p->status) {
			rn_json_obj(j, NULL);
			rn_json_str(j, "host_a", s->hosts[p->a].name);
			rn_json_null(j, "nic_a");
			rn_json_str(j, "host_b", s->hosts[p->b].name);
			rn_json_null(j, "nic_b");
			rn_json_str(j, "result", "no-answer");
			rn_json_str(j, "error", p->err);
			rn_json_close(j, '}');
			continue;
		}
		for (i = 0; i < p->na; i++)
			for (x = 0; x < p->nb; x++)
				if (rn_pair_cell_bad(&p->cells[i * p->nb + x]))
					json_bad_cell(j, s, p, i, x);
	}
	rn_json_close(j, ']');
	return pairs;
}

void rn_sweep_json(FILE *f, const struct rn_sweep *s, int rc)
{
	long np = (long)s->n * (s->n - 1) / 2;
	struct rn_json j;
	int h, pairs;

	rn_json_begin(&j, f);
	rn_json_str(&j, "schema", "roce-doctor-sweep/1");
	rn_json_str(&j, "version", RN_DOCTOR_VERSION);
	rn_json_str(&j, "command", "sweep");
	rn_json_arr(&j, "hosts");
	for (h = 0; h < s->n; h++)
		json_host(&j, s, h);
	rn_json_close(&j, ']');
	pairs = json_bad_pairs(&j, s);
	json_fleet(&j, s);
	json_bw(&j, s);
	rn_json_arr(&j, "missing");
	for (h = 0; h < s->n; h++)
		if (rn_sweep_host_missing(s, h))
			rn_json_str(&j, NULL, s->hosts[h].name);
	rn_json_close(&j, ']');
	rn_json_obj(&j, "summary");
	rn_json_int(&j, "hosts", s->n);
	rn_json_int(&j, "rounds", s->rounds);
	rn_json_int(&j, "host_pairs", np);
	rn_json_int(&j, "host_pairs_checked", pairs);
	rn_json_int(&j, "bad_nic_pairs", rn_sweep_bad_pairs(s, -1));
	rn_json_int(&j, "differences", s->ndiffs);
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
