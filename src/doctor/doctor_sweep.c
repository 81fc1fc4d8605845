// SPDX-License-Identifier: MIT
/*
 * The fleet sweep's schedule and model, without MPI (doctor_mpi.c carries the
 * bytes): a round-robin tournament (the circle method: host n-1 stays, the others
 * rotate; odd n adds a phantom host whose partner sits the round out), the results
 * rank 0 gathers, what it infers from them (firewalls, the exit code) and the fleet's
 * consistency. The bandwidth gate is doctor_sweep_bw.c's, the report (text, JSON)
 * doctor_sweep_report.c's and the SVG doctor_sweep_svg.c's.
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

static void diffs_free(struct rn_sweep *s);
static int host_differs(const struct rn_sweep *s, int h);

void rn_sweep_findings_free(struct rn_finding **fs, int n)
{
	int x;

	for (x = 0; *fs && x < n; x++)
		rn_finding_clear(&(*fs)[x]);
	free(*fs);
	*fs = NULL;
}

void rn_sweep_free(struct rn_sweep *s)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int h;

	for (k = 0; s->pairs && k < np; k++)
		rn_pair_result_free(s->pairs[k]);
	for (h = 0; s->hosts && h < s->n; h++) {
		rn_sweep_findings_free(&s->hosts[h].drops, rn_sweep_nnics(s, h));
		rn_sweep_findings_free(&s->hosts[h].slow, rn_sweep_nnics(s, h));
		if (s->hosts[h].inv)
			rn_dw_inv_clear(s->hosts[h].inv);
		free(s->hosts[h].inv);
		free(s->hosts[h].hf);
	}
	diffs_free(s);
	free(s->rechecks);
	free(s->pairs);
	free(s->hosts);
	memset(s, 0, sizeof(*s));
}

const char *rn_sweep_cell_str(const struct rn_pair_cell *c, char *buf, size_t len)
{
	static const char *const words[] = {
		[RN_PAIR_TIMEOUT] = "rdma-timeout",
		[RN_PAIR_ERROR] = "rdma-error",
		[RN_PAIR_UNCHECKED] = "-",
		[RN_PAIR_OK] = "ok",
	};
	int cause;
	enum rn_pair_judged v = rn_pair_judge(c, &cause);

	if (v == RN_PAIR_SLOW)
		cause = RN_CAUSE_BANDWIDTH_LOW;
	snprintf(buf, len, "%s", cause ? rn_cause_id((enum rn_cause)cause) : words[v]);
	return buf;
}

int rn_sweep_nnics(const struct rn_sweep *s, int h)
{
	return s->hosts[h].inv ? s->hosts[h].inv->nnics : 0;
}

const char *rn_sweep_nic_name(const struct rn_sweep *s, int h, int i)
{
	return s->hosts[h].inv ? s->hosts[h].inv->nics[i].netdev : "?";
}

/* The cell of (h1, i1) x (h2, i2) in either order, NULL when that pair has no result. */
const struct rn_pair_cell *rn_sweep_cell_of(const struct rn_sweep *s, int h1, int i1, int h2,
					    int i2)
{
	const struct rn_pair_result *p = s->pairs[rn_sweep_pair_index(s->n, h1, h2)];
	int i = h1 < h2 ? i1 : i2, j = h1 < h2 ? i2 : i1;

	if (!p || p->status || i >= p->na || j >= p->nb)
		return NULL;
	return &p->cells[i * p->nb + j];
}

static int grid_nnics(const void *arg, int h)
{
	return rn_sweep_nnics(arg, h);
}

static const struct rn_pair_cell *grid_cell(const void *arg, int h1, int i1, int h2, int i2)
{
	return rn_sweep_cell_of(arg, h1, i1, h2, i2);
}

void rn_sweep_infer(struct rn_sweep *s)
{
	const struct rn_pair_grid g = { s->n, grid_nnics, grid_cell, s };
	int h, x;

	for (h = 0; h < s->n; h++) {
		if (!rn_sweep_nnics(s, h))
			continue;
		rn_sweep_findings_free(&s->hosts[h].drops, rn_sweep_nnics(s, h));
		s->hosts[h].drops = calloc((size_t)rn_sweep_nnics(s, h), sizeof(struct rn_finding));
		if (!s->hosts[h].drops)
			continue;
		for (x = 0; x < rn_sweep_nnics(s, h); x++)
			rn_pair_drops(&g, h, x, rn_sweep_nic_name(s, h, x), &s->hosts[h].drops[x]);
	}
}

int rn_sweep_nic_problem(const struct rn_dw_nic *n)
{
	int k;

	for (k = 0; k < n->nfindings; k++)
		if (n->findings[k].sev >= RN_SEV_WARN)
			return 1;
	return n->verdict != RN_VERDICT_OK;
}

/* Bad NIC pairs that involve host @h (or every host when @h < 0). */
int rn_sweep_bad_pairs(const struct rn_sweep *s, int h)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int n = 0;

	for (k = 0; k < np; k++) {
		const struct rn_pair_result *p = s->pairs[k];

		if (p && (h < 0 || p->a == h || p->b == h))
			n += rn_pair_result_bad(p);
	}
	return n;
}

int rn_sweep_host_missing(const struct rn_sweep *s, int h)
{
	return !s->hosts[h].facts || !s->hosts[h].results;
}

/* A pair whose partner did not answer: the hung host is the one that never reported. */
static int unanswered_pairs(const struct rn_sweep *s, int h)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int n = 0;

	for (k = 0; k < np; k++) {
		const struct rn_pair_result *p = s->pairs[k];

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
		if (rn_sweep_host_missing(s, h) || s->hosts[h].gather_err)
			return RN_DOCTOR_ERROR;
	if (rn_sweep_bad_pairs(s, -1) || unanswered_pairs(s, -1) || s->ndiffs)
		return RN_DOCTOR_PROBLEMS;
	for (h = 0; h < s->n; h++) {
		if (!rn_sweep_nnics(s, h))
			return RN_DOCTOR_PROBLEMS;
		for (i = 0; i < rn_sweep_nnics(s, h); i++)
			if (rn_sweep_nic_problem(&s->hosts[h].inv->nics[i]) ||
			    (s->hosts[h].drops && s->hosts[h].drops[i].cause) ||
			    (s->hosts[h].slow && s->hosts[h].slow[i].cause))
				return RN_DOCTOR_PROBLEMS;
	}
	return RN_DOCTOR_OK;
}

const char *rn_sweep_host_status(const struct rn_sweep *s, int h)
{
	int i;

	if (!s->hosts[h].facts)
		return "missing";
	if (!s->hosts[h].results)
		return "hung";
	if (s->hosts[h].gather_err)
		return "error";
	if (!rn_sweep_nnics(s, h) || rn_sweep_bad_pairs(s, h) || host_differs(s, h))
		return "problem";
	for (i = 0; i < rn_sweep_nnics(s, h); i++)
		if (rn_sweep_nic_problem(&s->hosts[h].inv->nics[i]))
			return "problem";
	return "ok";
}

/* ---- fleet consistency ----------------------------------------------------------------- */

static const char *const field_names[RN_SW_F__MAX] = {
	[RN_SW_F_PLUGIN] = "plugin",
	[RN_SW_F_KERNEL] = "kernel",
	[RN_SW_F_RDMA_CORE] = "rdma-core",
	[RN_SW_F_NCCL] = "nccl",
	[RN_SW_F_DRIVER] = "driver",
	[RN_SW_F_FW] = "firmware",
	[RN_SW_F_MTU] = "mtu",
	[RN_SW_F_ARP_IGNORE] = "arp_ignore",
	[RN_SW_F_ARP_ANNOUNCE] = "arp_announce",
	[RN_SW_F_ARP_FILTER] = "arp_filter",
	[RN_SW_F_RP_FILTER] = "rp_filter",
	[RN_SW_F_ACCEPT_LOCAL] = "accept_local",
};

const char *rn_sweep_field_name(int field)
{
	return field >= 0 && field < RN_SW_F__MAX ? field_names[field] : "?";
}

/* The effective sysctl of @field in @s. */
static int sysctl_of(const struct rn_sysctls *s, int field)
{
	switch (field) {
	case RN_SW_F_ARP_IGNORE:
		return s->arp_ignore;
	case RN_SW_F_ARP_ANNOUNCE:
		return s->arp_announce;
	case RN_SW_F_ARP_FILTER:
		return s->arp_filter;
	case RN_SW_F_RP_FILTER:
		return s->rp_filter;
	default:
		return s->accept_local;
	}
}

const char *rn_sweep_fact(const struct rn_sweep *s, int h, int i, int field, char *buf, size_t len)
{
	const struct rn_doctor_facts *hf = s->hosts[h].hf;

	if (!hf)
		return NULL;
	if (field < RN_SW_F_NIC) {
		const char *v[] = { hf->plugin, hf->kernel, hf->rdma_core, hf->nccl };

		snprintf(buf, len, "%s", v[field]);
		return buf;
	}
	if (i < 0 || i >= hf->nnics || i >= rn_sweep_nnics(s, h))
		return NULL;
	if (field == RN_SW_F_DRIVER)
		snprintf(buf, len, "%s", hf->nics[i].driver);
	else if (field == RN_SW_F_FW)
		snprintf(buf, len, "%s", hf->nics[i].fw);
	else if (field == RN_SW_F_MTU)
		snprintf(buf, len, "%d", s->hosts[h].inv->nics[i].mtu);
	else if (sysctl_of(&hf->nics[i].eff, field) < 0)
		snprintf(buf, len, "unknown");
	else
		snprintf(buf, len, "%d", sysctl_of(&hf->nics[i].eff, field));
	return buf;
}

/* One compared value: whose, and which group it is compared within (firmware: its driver). */
struct fact_item {
	int h, i;
	char v[RN_FACT_LEN], group[RN_FACT_LEN];
};

static void diffs_free(struct rn_sweep *s)
{
	int k;

	for (k = 0; k < s->ndiffs; k++)
		rn_finding_clear(&s->diffs[k].f);
	free(s->diffs);
	s->diffs = NULL;
	s->ndiffs = 0;
}

/*
 * The command that makes @d's NIC what the fleet has, where one does: the MTU, or a
 * sysctl (conf/all too when it alone holds the effective value above the fleet's:
 * arp_ignore, arp_announce, rp_filter are max(all, dev); arp_filter, accept_local OR).
 */
static void diff_fix(const struct rn_sweep *s, const struct rn_sweep_diff *d, struct rn_vars *v)
{
	const char *dev = rn_sweep_nic_name(s, d->h, d->i), *key = rn_sweep_field_name(d->field);
	char *end, k[128];
	long m = strtol(d->majority, &end, 10);
	int all;

	rn_vars_set(v, "fleet_fix", "%s", "");
	if (d->i < 0 || d->field < RN_SW_F_MTU || !d->majority[0] || *end || m < 0)
		return;
	if (d->field == RN_SW_F_MTU) {
		rn_vars_set(v, "fleet_fix", "ip link set dev %s mtu %ld", dev, m);
		return;
	}
	all = sysctl_of(&s->hosts[d->h].hf->all, d->field);
	rn_vars_set(v, "fleet_fix", "sysctl -w ");
	if (d->field == RN_SW_F_ARP_FILTER || d->field == RN_SW_F_ACCEPT_LOCAL ? all > 0 && !m :
										 all > m)
		rn_vars_append(v, "fleet_fix", "", "net.ipv4.conf.all.%s=%ld ", key, m);
	rn_vars_append(v, "fleet_fix", "", "%s=%ld", rn_sysctl_key(k, sizeof(k), dev, key), m);
}

/* What doctor_facts.c reads where NCCL_NET_PLUGIN names no library. */
#define PLUGIN_NOT_FOUND "not found"

static int plugin_missing(int field, const char *value)
{
	return field == RN_SW_F_PLUGIN && !strcmp(value, PLUGIN_NOT_FOUND);
}

static int add_diff(struct rn_sweep *s, int field, const struct fact_item *it, const char *maj,
		    int count, int of, int tie, const char *what)
{
	struct rn_sweep_diff *d = realloc(s->diffs, (size_t)(s->ndiffs + 1) * sizeof(*d));
	struct rn_vars v = RN_VARS_INIT;
	int ret;

	if (!d)
		return -ENOMEM;
	s->diffs = d;
	d = &s->diffs[s->ndiffs++];
	memset(d, 0, sizeof(*d));
	d->field = field;
	d->h = it->h;
	d->i = field < RN_SW_F_NIC ? -1 : it->i;
	snprintf(d->value, sizeof(d->value), "%s", it->v);
	snprintf(d->majority, sizeof(d->majority), "%s", maj);
	d->count = count;
	d->of = of;
	d->tie = tie;
	if (d->i < 0)
		rn_vars_set(&v, "who", "%s", s->hosts[d->h].name);
	else
		rn_vars_set(&v, "who", "%s:%s", s->hosts[d->h].name,
			    rn_sweep_nic_name(s, d->h, d->i));
	rn_vars_set(&v, "field", "%s", rn_sweep_field_name(field));
	rn_vars_set(&v, "value", "%s", d->value);
	rn_vars_set(&v, "majority", "%s", d->majority);
	rn_vars_set(&v, "count", "%d", count);
	rn_vars_set(&v, "of", "%d", of);
	rn_vars_set(&v, "what", "%s", what);
	rn_vars_set(&v, "host", "%s", s->hosts[d->h].name);
	diff_fix(s, d, &v);
	ret = rn_finding_render(&d->f,
				plugin_missing(field, d->value) ? RN_CAUSE_PLUGIN_MISSING :
								  RN_CAUSE_FLEET_DIFFERS,
				&v);
	rn_vars_free(&v);
	return ret == -ENOMEM ? ret : 0;
}

/* The items of @group: the value most of them hold (the first seen on a tie). */
static void majority_of(const struct fact_item *it, int n, const char *group, const char **maj,
			int *count, int *of, int *tie)
{
	int a, b, c, best = 0, second = 0;

	*maj = NULL;
	*of = 0;
	for (a = 0; a < n; a++) {
		if (strcmp(it[a].group, group))
			continue;
		(*of)++;
		for (b = 0; b < a; b++)
			if (!strcmp(it[b].group, group) && !strcmp(it[b].v, it[a].v))
				break;
		if (b < a)
			continue; /* counted with its first */
		for (b = a, c = 0; b < n; b++)
			c += !strcmp(it[b].group, group) && !strcmp(it[b].v, it[a].v);
		if (c > best) {
			second = best;
			best = c;
			*maj = it[a].v;
		} else if (c > second) {
			second = c;
		}
	}
	*count = best;
	*tie = best == second;
}

int rn_sweep_consistency(struct rn_sweep *s)
{
	struct fact_item *it;
	int field, h, i, n, max = 0, k, g, ret = 0, missing;

	diffs_free(s);
	memset(s->fleet, 0, sizeof(s->fleet));
	for (h = 0; h < s->n; h++)
		max += 1 + rn_sweep_nnics(s, h);
	it = calloc((size_t)max + 1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	for (field = 0; field < RN_SW_F__MAX && !ret; field++) {
		missing = 0;
		for (h = 0, n = 0; h < s->n; h++)
			for (i = field < RN_SW_F_NIC ? -1 : 0;
			     i < (field < RN_SW_F_NIC ? 0 : rn_sweep_nnics(s, h)); i++) {
				if (!rn_sweep_fact(s, h, i, field, it[n].v, sizeof(it[n].v)))
					continue;
				/* a host without the plugin is no version to vote on: found below */
				if (plugin_missing(field, it[n].v)) {
					missing++;
					continue;
				}
				it[n].h = h;
				it[n].i = i;
				it[n].group[0] = '\0';
				/* firmware versions of different NICs are not comparable */
				if (field == RN_SW_F_FW)
					rn_sweep_fact(s, h, i, RN_SW_F_DRIVER, it[n].group,
						      sizeof(it[n].group));
				n++;
			}
		for (g = 0; g < n && !ret; g++) {
			const char *maj;
			char what[RN_FACT_LEN + 8];
			int count, of, tie;

			for (k = 0; k < g; k++)
				if (!strcmp(it[k].group, it[g].group))
					break;
			if (k < g)
				continue; /* this group is done */
			majority_of(it, n, it[g].group, &maj, &count, &of, &tie);
			if (!s->fleet[field][0] || count > 1)
				snprintf(s->fleet[field], sizeof(s->fleet[field]), "%s", maj);
			if (of < 2)
				continue;
			if (field < RN_SW_F_NIC)
				snprintf(what, sizeof(what), "hosts");
			else if (field == RN_SW_F_FW)
				snprintf(what, sizeof(what), "%s NICs", it[g].group);
			else
				snprintf(what, sizeof(what), "NICs");
			for (k = 0; k < n && !ret; k++)
				if (!strcmp(it[k].group, it[g].group) && strcmp(it[k].v, maj))
					ret = add_diff(s, field, &it[k], maj, count, of, tie, what);
		}
		/*
		 * Each host without the plugin where others have one: fatal, whatever version
		 * they run. NOTE: where no host has it (a sweep before the plugin is
		 * installed; the sweep itself links the library) that is the fleet's state,
		 * not one host's fault: "not found" is what they all have.
		 */
		if (missing && !n && field == RN_SW_F_PLUGIN)
			snprintf(s->fleet[field], sizeof(s->fleet[field]), "%s", PLUGIN_NOT_FOUND);
		for (h = 0; h < s->n && missing && n && !ret && field == RN_SW_F_PLUGIN; h++) {
			struct fact_item m = { .h = h, .i = -1 };
			int have = 0;

			if (!rn_sweep_fact(s, h, -1, field, m.v, sizeof(m.v)) ||
			    !plugin_missing(field, m.v))
				continue;
			for (k = 0; k < n; k++)
				have += !strcmp(it[k].v, s->fleet[field]);
			ret = add_diff(s, field, &m, s->fleet[field], have, n + missing, 0,
				       "hosts");
		}
	}
	free(it);
	return ret;
}

static int host_differs(const struct rn_sweep *s, int h)
{
	int k;

	for (k = 0; k < s->ndiffs; k++)
		if (s->diffs[k].h == h)
			return 1;
	return 0;
}
