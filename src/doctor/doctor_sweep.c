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

int rn_sweep_add_find(struct rn_sweep_pair *p, int i, int j, int by, const struct rn_finding *f)
{
	struct rn_sweep_find *x = realloc(p->finds, (size_t)(p->nfind + 1) * sizeof(*x));

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

static int nnics(const struct rn_sweep *s, int h);
static void diffs_free(struct rn_sweep *s);
static void slow_free(struct rn_sweep *s, int h);
static int host_differs(const struct rn_sweep *s, int h);

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
		slow_free(s, h);
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

const char *rn_sweep_cell_str(const struct rn_sweep_cell *c, char *buf, size_t len)
{
	if (c->a_cause && c->a_sev >= c->b_sev)
		snprintf(buf, len, "%s", rn_cause_id((enum rn_cause)c->a_cause));
	else if (c->b_cause)
		snprintf(buf, len, "%s", rn_cause_id((enum rn_cause)c->b_cause));
	else if (c->rdma == RN_SW_RDMA_TIMEOUT || c->rdma == RN_SW_RDMA_ERROR)
		snprintf(buf, len, "%s", c->rdma == RN_SW_RDMA_TIMEOUT ? "rdma-timeout" : "rdma-error");
	else if (c->slow)
		snprintf(buf, len, "%s", rn_cause_id(RN_CAUSE_BANDWIDTH_LOW));
	else if (!c->a_checked && !c->b_checked && c->rdma == RN_SW_RDMA_SKIPPED)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "ok");
	return buf;
}

int rn_sweep_cell_bad(const struct rn_sweep_cell *c)
{
	return c->a_cause || c->b_cause || c->rdma == RN_SW_RDMA_TIMEOUT ||
	       c->rdma == RN_SW_RDMA_ERROR || c->slow;
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
	if (bad_pairs(s, -1) || unanswered_pairs(s, -1) || s->ndiffs)
		return RN_DOCTOR_PROBLEMS;
	for (h = 0; h < s->n; h++) {
		if (!nnics(s, h))
			return RN_DOCTOR_PROBLEMS;
		for (i = 0; i < nnics(s, h); i++)
			if (host_nic_problem(&s->hosts[h].inv->nics[i]) ||
			    (s->hosts[h].drops && s->hosts[h].drops[i].cause) ||
			    (s->hosts[h].slow && s->hosts[h].slow[i].cause))
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
	if (!nnics(s, h) || bad_pairs(s, h) || host_differs(s, h))
		return "problem";
	for (i = 0; i < nnics(s, h); i++)
		if (host_nic_problem(&s->hosts[h].inv->nics[i]))
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
	case RN_SW_F_ARP_IGNORE: return s->arp_ignore;
	case RN_SW_F_ARP_ANNOUNCE: return s->arp_announce;
	case RN_SW_F_ARP_FILTER: return s->arp_filter;
	case RN_SW_F_RP_FILTER: return s->rp_filter;
	default: return s->accept_local;
	}
}

const char *rn_sweep_fact(const struct rn_sweep *s, int h, int i, int field, char *buf,
			  size_t len)
{
	const struct rn_doctor_facts *hf = s->hosts[h].hf;

	if (!hf)
		return NULL;
	if (field < RN_SW_F_NIC) {
		const char *v[] = { hf->plugin, hf->kernel, hf->rdma_core, hf->nccl };

		snprintf(buf, len, "%s", v[field]);
		return buf;
	}
	if (i < 0 || i >= hf->nnics || i >= nnics(s, h))
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
	const char *dev = nic_name(s, d->h, d->i), *key = rn_sweep_field_name(d->field);
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
		rn_vars_set(&v, "who", "%s:%s", s->hosts[d->h].name, nic_name(s, d->h, d->i));
	rn_vars_set(&v, "field", "%s", rn_sweep_field_name(field));
	rn_vars_set(&v, "value", "%s", d->value);
	rn_vars_set(&v, "majority", "%s", d->majority);
	rn_vars_set(&v, "count", "%d", count);
	rn_vars_set(&v, "of", "%d", of);
	rn_vars_set(&v, "what", "%s", what);
	rn_vars_set(&v, "host", "%s", s->hosts[d->h].name);
	diff_fix(s, d, &v);
	ret = rn_finding_render(&d->f, plugin_missing(field, d->value) ? RN_CAUSE_PLUGIN_MISSING :
				RN_CAUSE_FLEET_DIFFERS, &v);
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
		max += 1 + nnics(s, h);
	it = calloc((size_t)max + 1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	for (field = 0; field < RN_SW_F__MAX && !ret; field++) {
		missing = 0;
		for (h = 0, n = 0; h < s->n; h++)
			for (i = field < RN_SW_F_NIC ? -1 : 0;
			     i < (field < RN_SW_F_NIC ? 0 : nnics(s, h)); i++) {
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
			ret = add_diff(s, field, &m, s->fleet[field], have, n + missing, 0, "hosts");
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

/* ---- bandwidth: the gate, and which end of a slow pair is the bad one ------------------ */

void rn_sweep_bw_judge(struct rn_sweep *s)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int c;

	for (k = 0; k < np; k++) {
		struct rn_sweep_pair *p = s->pairs[k];

		for (c = 0; p && c < p->na * p->nb; c++) {
			struct rn_sweep_cell *e = &p->cells[c];

			e->slow = s->min_gbps > 0 &&
				  (e->bw == RN_SW_BW_FAILED ||
				   (e->bw == RN_SW_BW_OK && e->bw_mbps < s->min_gbps * 1000));
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

		if (r->bw != RN_SW_BW_NONE &&
		    ((r->h == h1 && r->i == i1 && r->w == h2 && r->k == i2) ||
		     (r->h == h2 && r->i == i2 && r->w == h1 && r->k == i1)))
			return r;
	}
	return NULL;
}

static int recheck_slow(const struct rn_sweep *s, const struct rn_sweep_recheck *r)
{
	return r->bw == RN_SW_BW_FAILED || r->mbps < s->min_gbps * 1000;
}

/* A measured pair: 0 fast, 1 slow, -1 not measured (the second pass wins: it ran alone). */
static int edge(const struct rn_sweep *s, int h1, int i1, int h2, int i2, uint32_t *mbps)
{
	const struct rn_sweep_recheck *r = recheck_of(s, h1, i1, h2, i2);
	const struct rn_sweep_cell *c;

	if (r) {
		*mbps = r->bw == RN_SW_BW_OK ? r->mbps : 0;
		return recheck_slow(s, r);
	}
	c = h1 == h2 ? NULL : cell_of(s, h1, i1, h2, i2);
	if (!c || c->bw == RN_SW_BW_NONE)
		return -1;
	*mbps = c->bw == RN_SW_BW_OK ? c->bw_mbps : 0;
	return c->slow;
}

struct nic_bw {
	int fast, slow;
	uint32_t best;              /* Mbit/s */
};

/* Every measured pair of NIC (@h, @x), but those with (@skip_h, @skip_i). */
static struct nic_bw nic_bw(const struct rn_sweep *s, int h, int x, int skip_h, int skip_i)
{
	struct nic_bw b = { 0 };
	uint32_t m;
	int o, y, e;

	for (o = 0; o < s->n; o++)
		for (y = 0; o != h && y < nnics(s, o); y++) {
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

		if (r->h == h && r->i == x && r->bw != RN_SW_BW_NONE) {
			*wh = r->w;
			*wi = r->k;
			return recheck_slow(s, r) ? END_BAD : END_GOOD;
		}
	}
	if (nic_bw(s, h, x, -1, -1).fast)
		return END_GOOD;
	for (o = 0; o < s->n; o++)
		for (y = 0; o != h && y < nnics(s, o); y++)
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

	for (y = 0; y < nnics(s, o); y++)
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
			for (y = 0; o != h && y < nnics(s, o); y++) {
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
		for (i = 0; s->pairs[k] && !s->pairs[k]->status &&
			    i < s->pairs[k]->na * s->pairs[k]->nb; i++)
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
		const struct rn_sweep_pair *p = s->pairs[k];

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

static void slow_free(struct rn_sweep *s, int h)
{
	int x;

	for (x = 0; s->hosts[h].slow && x < nnics(s, h); x++)
		rn_finding_clear(&s->hosts[h].slow[x]);
	free(s->hosts[h].slow);
	s->hosts[h].slow = NULL;
}

/* slow-nic on (@h, @x), once, with the evidence. */
static void slow_nic(struct rn_sweep *s, int h, int x, int wh, int wi)
{
	struct nic_bw b = nic_bw(s, h, x, -1, -1);
	const struct rn_sweep_recheck *r = wh >= 0 ? recheck_of(s, h, x, wh, wi) : NULL;
	struct rn_vars v = RN_VARS_INIT;

	if (!s->hosts[h].slow)
		s->hosts[h].slow = calloc((size_t)nnics(s, h), sizeof(struct rn_finding));
	if (!s->hosts[h].slow || s->hosts[h].slow[x].cause)
		return;
	rn_vars_set(&v, "nic", "%s:%s", s->hosts[h].name, nic_name(s, h, x));
	rn_vars_set(&v, "slow", "%d", b.slow);
	rn_vars_set(&v, "tried", "%d", b.slow + b.fast);
	rn_vars_set(&v, "min", "%g", s->min_gbps);
	rn_vars_set(&v, "best", "%.2f", b.best / 1000.0);
	rn_vars_set(&v, "witness", "%s:%s", wh >= 0 ? s->hosts[wh].name : "?",
		    wh >= 0 ? nic_name(s, wh, wi) : "?");
	if (r && r->bw == RN_SW_BW_OK)
		rn_vars_set(&v, "recheck", " (measured again alone against it: %.2f Gbit/s)",
			    r->mbps / 1000.0);
	else if (r)
		rn_vars_set(&v, "recheck", " (measured again alone against it: the stream failed)");
	else
		rn_vars_set(&v, "recheck", "%s", "");
	rn_vars_set(&v, "host", "%s", s->hosts[h].name);
	rn_vars_set(&v, "dev", "%s", nic_name(s, h, x));
	rn_finding_render(&s->hosts[h].slow[x], RN_CAUSE_SLOW_NIC, &v);
	rn_vars_free(&v);
}

static void bw_low(struct rn_sweep *s, struct rn_sweep_pair *p, int i, int j)
{
	const struct rn_sweep_cell *c = &p->cells[i * p->nb + j];
	struct rn_vars v = RN_VARS_INIT;
	struct rn_finding f = { 0 };
	char a[160], b[160];

	snprintf(a, sizeof(a), "%s:%s", s->hosts[p->a].name, nic_name(s, p->a, i));
	snprintf(b, sizeof(b), "%s:%s", s->hosts[p->b].name, nic_name(s, p->b, j));
	rn_vars_set(&v, "a", "%s", a);
	rn_vars_set(&v, "b", "%s", b);
	rn_vars_set(&v, "gbps", "%.2f", c->bw == RN_SW_BW_OK ? c->bw_mbps / 1000.0 : 0.0);
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
		rn_vars_set(&v, "blame", "both ends are fast with other peers, so the path "
			    "between them is slow");
		break;
	default:
		rn_vars_set(&v, "blame", "no third NIC was measured against an end, so which "
			    "end is slow cannot be told");
		break;
	}
	if (!rn_finding_render(&f, RN_CAUSE_BANDWIDTH_LOW, &v))
		rn_sweep_add_find(p, i, j, RN_SW_BY_BW, &f);
	rn_finding_clear(&f);
	rn_vars_free(&v);
}

void rn_sweep_bw_blame(struct rn_sweep *s)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int h, i, j, sa, sb, ah, ai, bh, bi;

	for (h = 0; h < s->n; h++)
		slow_free(s, h);
	for (k = 0; k < np; k++) {
		struct rn_sweep_pair *p = s->pairs[k];

		for (i = 0; p && !p->status && i < p->na; i++)
			for (j = 0; j < p->nb; j++) {
				struct rn_sweep_cell *c = &p->cells[i * p->nb + j];

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

/* ---- text ------------------------------------------------------------------------------ */

/* Bad for its bandwidth alone: the checks and the ping were fine. */
static int only_slow(const struct rn_sweep_cell *c)
{
	return c->slow && !c->a_cause && !c->b_cause && c->rdma != RN_SW_RDMA_TIMEOUT &&
	       c->rdma != RN_SW_RDMA_ERROR;
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
			snprintf(who, sizeof(who), "%s:%s", s->hosts[d->h].name, nic_name(s, d->h, d->i));
		if (d->f.cause == RN_CAUSE_PLUGIN_MISSING) {
			fprintf(f, "  %-24s %s (fatal): %s\n", who, rn_cause_id(d->f.cause), d->f.msg);
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
		const struct rn_sweep_pair *p = s->pairs[k];

		for (c = 0; p && !p->status && c < p->na * p->nb; c++) {
			if (p->cells[c].bw == RN_SW_BW_NONE)
				continue;
			(*v)[n++] = p->cells[c].bw == RN_SW_BW_OK ? p->cells[c].bw_mbps : 0;
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
	fprintf(f, "\nbandwidth (--min-gbps %g; %llu MiB a NIC pair through the plugin's transport):",
		s->min_gbps, (unsigned long long)(RN_BW_BYTES >> 20));
	if (!n) {
		fprintf(f, "\nskipped: bandwidth: no NIC pair was measured (it needs an RDMA port at "
			"both ends and a good ping%s)\n", s->no_rdma ? "; --no-rdma" : "");
		free(v);
		return;
	}
	fprintf(f, " %d NIC pair%s measured, Gbit/s min %.2f, median %.2f, max %.2f; %d under %g\n",
		n, n == 1 ? "" : "s", v[0] / 1000.0, v[n / 2] / 1000.0, v[n - 1] / 1000.0, nslow,
		s->min_gbps);
	free(v);
	if (nslow == n)
		fprintf(f, "no NIC pair reached %g Gbit/s: is --min-gbps above what these NICs do?\n",
			s->min_gbps);
	if (s->recheck_skipped[0])
		fprintf(f, "second pass skipped: %s\n", s->recheck_skipped);
	else if (s->nrechecks)
		fprintf(f, "second pass (each end of a slow pair that is fast with no peer, alone "
			"against a NIC fast with others; %d round%s, %.1f s):\n", s->recheck_rounds,
			s->recheck_rounds == 1 ? "" : "s", s->recheck_ms / 1000);
	for (k = 0; k < s->nrechecks && !s->recheck_skipped[0]; k++) {
		const struct rn_sweep_recheck *r = &s->rechecks[k];

		fprintf(f, "  %s:%s against %s:%s: ", s->hosts[r->h].name, nic_name(s, r->h, r->i),
			s->hosts[r->w].name, nic_name(s, r->w, r->k));
		if (r->bw == RN_SW_BW_OK)
			fprintf(f, "%.2f Gbit/s: %s\n", r->mbps / 1000.0,
				recheck_slow(s, r) ? "slow" : "fast (the first figure was a passing load)");
		else
			fprintf(f, "%s\n", r->bw == RN_SW_BW_FAILED ? "the stream failed: slow" :
			       "did not run");
	}
	for (h = 0; h < s->n; h++)
		for (i = 0; s->hosts[h].slow && i < nnics(s, h); i++)
			if (s->hosts[h].slow[i].cause) {
				fprintf(f, "%s %s:%s", first ? "slow NICs (the bad ends):" : ",",
					s->hosts[h].name, nic_name(s, h, i));
				first = 0;
			}
	if (!first)
		fputc('\n', f);
}

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
		return only_slow(c) ? 's' : 'X';
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
			if (c == 'X' || (c == '?' && m != 'X') || (c == 's' && m == '.'))
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
		fprintf(f, "\nheat map (host x host, X: a bad NIC pair, s: a slow one, ?: no result)\n");
		for (h = 0; h < s->n; h++) {
			fprintf(f, "%-*.*s ", w, w, s->hosts[h].name);
			for (h2 = 0; h2 < s->n; h2++)
				fputc(host_mark(s, h, h2), f);
			fputc('\n', f);
		}
		return;
	}
	fprintf(f, "\nheat map (host:NIC x host:NIC; . ok, X bad, s slow, - not checked, ? no result)\n");
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
	max += s->ndiffs;
	for (h = 0; h < s->n; h++)
		max += nnics(s, h);
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
			if (s->hosts[h].slow && s->hosts[h].slow[i].cause) {
				snprintf(who[n], sizeof(who[n]), "%s:%s", s->hosts[h].name, nic->netdev);
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
				 nic_name(s, d->h, d->i));
		it[n].who = who[n];
		it[n].host = s->hosts[d->h].name;
		it[n++].f = &d->f;
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
				 x->by == RN_SW_BY_RDMA ? "(rdma)" : x->by == RN_SW_BY_BW ? "(bandwidth)" : "");
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
	print_fleet(f, s);

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
				if (x->slow && !only_slow(x))
					fprintf(f, ", %s", rn_cause_id(RN_CAUSE_BANDWIDTH_LOW));
				if (x->slow && x->bw == RN_SW_BW_OK)
					fprintf(f, " %.2f Gbit/s", x->bw_mbps / 1000.0);
				else if (x->slow)
					fprintf(f, " (the stream failed)");
				if (x->blame == RN_SW_BLAME_A || x->blame == RN_SW_BLAME_B)
					fprintf(f, ", slow end %s:%s",
						s->hosts[x->blame == RN_SW_BLAME_A ? p->a : p->b].name,
						x->blame == RN_SW_BLAME_A ? nic_name(s, p->a, i) :
						nic_name(s, p->b, j));
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
		const struct rn_sweep_pair *p = s->pairs[k];
		int q;

		for (q = 0; p && q < p->nfind; q++) {
			const struct rn_sweep_find *x = &p->finds[q];

			if ((x->by != RN_SW_BY_RDMA && (x->by != RN_SW_BY_BW || x->f.cause)) ||
			    (!verbose && nbad >= 8))
				continue;
			if (!nbad++)
				fprintf(f, "rdma probes (and bandwidth streams) that failed:\n");
			fprintf(f, "  %s:%s->%s:%s: %s\n", s->hosts[p->a].name, nic_name(s, p->a, x->i),
				s->hosts[p->b].name, nic_name(s, p->b, x->j), x->f.msg);
		}
	}
	fprintf(f, "time: ranks up %.1f s, facts %.0f ms, %d round%s %.1f s (slowest %.1f s), total %.1f s\n",
		s->startup_ms / 1000, s->facts_ms, s->rounds, s->rounds == 1 ? "" : "s", s->rounds_ms / 1000,
		s->round_max_ms / 1000, s->total_ms / 1000);
	fprintf(f, "verdict: %s\n",
		rc == RN_DOCTOR_OK && bw_skipped(s) ? "no problems found; bandwidth not measured "
		"(skipped above)" : rc == RN_DOCTOR_OK ? "all good" :
		rc == RN_DOCTOR_PROBLEMS ? "problems found: apply the fixes above on the host each names" :
		"incomplete: a host did not answer (named above); its pairs were not checked");
}

/* ---- JSON ------------------------------------------------------------------------------ */

static const char *rdma_str(int r)
{
	return r == RN_SW_RDMA_OK ? "ok" : r == RN_SW_RDMA_TIMEOUT ? "timeout" :
	       r == RN_SW_RDMA_ERROR ? "error" : "skipped";
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

static void json_cell_bw(struct rn_json *j, const struct rn_sweep_pair *p, int i, int x)
{
	const struct rn_sweep_cell *c = &p->cells[i * p->nb + x];
	int q;

	rn_json_obj(j, "bandwidth");
	rn_json_str(j, "status", c->bw == RN_SW_BW_OK ? "ok" : c->bw == RN_SW_BW_FAILED ? "failed" :
		    "skipped");
	if (c->bw == RN_SW_BW_OK)
		rn_json_num(j, "gbps", c->bw_mbps / 1000.0, 3);
	else
		rn_json_null(j, "gbps");
	rn_json_bool(j, "slow", c->slow);
	rn_json_str(j, "blame", c->slow ? rn_sweep_blame_str(c->blame) : NULL);
	for (q = 0; q < p->nfind; q++)
		if (p->finds[q].by == RN_SW_BY_BW && !p->finds[q].f.cause && p->finds[q].i == i &&
		    p->finds[q].j == x)
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
		rn_json_str(j, "nic", d->i < 0 ? NULL : nic_name(s, d->h, d->i));
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
	rn_json_str(j, "skipped", !n ? "no NIC pair was measured (an RDMA port at both ends and a "
		    "good ping are needed)" : NULL);
	rn_json_arr(j, "rechecks");
	for (k = 0; k < s->nrechecks; k++) {
		const struct rn_sweep_recheck *r = &s->rechecks[k];

		rn_json_obj(j, NULL);
		rn_json_str(j, "host", s->hosts[r->h].name);
		rn_json_str(j, "nic", nic_name(s, r->h, r->i));
		rn_json_str(j, "witness_host", s->hosts[r->w].name);
		rn_json_str(j, "witness_nic", nic_name(s, r->w, r->k));
		rn_json_int(j, "round", r->round);
		rn_json_str(j, "status", r->bw == RN_SW_BW_OK ? "ok" : r->bw == RN_SW_BW_FAILED ?
			    "failed" : "skipped");
		if (r->bw == RN_SW_BW_OK)
			rn_json_num(j, "gbps", r->mbps / 1000.0, 3);
		else
			rn_json_null(j, "gbps");
		rn_json_bool(j, "slow", r->bw != RN_SW_BW_NONE && recheck_slow(s, r));
		rn_json_close(j, '}');
	}
	rn_json_close(j, ']');
	rn_json_int(j, "recheck_rounds", s->recheck_rounds);
	rn_json_int(j, "recheck_us", (long long)(s->recheck_ms * 1000));
	rn_json_str(j, "recheck_skipped", s->recheck_skipped[0] ? s->recheck_skipped : NULL);
	rn_json_close(j, '}');
}

void rn_sweep_json(FILE *f, const struct rn_sweep *s, int rc)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	struct rn_json j;
	char b[INET6_ADDRSTRLEN], c[64], v[RN_FACT_LEN];
	int h, i, q, x, pairs = 0;

	rn_json_begin(&j, f);
	rn_json_str(&j, "schema", "roce-doctor-sweep/1");
	rn_json_str(&j, "version", RN_DOCTOR_VERSION);
	rn_json_str(&j, "command", "sweep");
	rn_json_arr(&j, "hosts");
	for (h = 0; h < s->n; h++) {
		const struct rn_doctor_facts *hf = s->hosts[h].hf;

		rn_json_obj(&j, NULL);
		rn_json_int(&j, "rank", h);
		rn_json_str(&j, "host", s->hosts[h].name);
		rn_json_str(&j, "status", host_status(s, h));
		rn_json_int(&j, "bad_pairs", bad_pairs(s, h));
		rn_json_int(&j, "gather_us", (long long)(s->hosts[h].gather_ms * 1000));
		for (q = 0; q < RN_SW_F_NIC; q++)
			rn_json_str(&j, json_key(rn_sweep_field_name(q), c, sizeof(c)),
				    rn_sweep_fact(s, h, -1, q, v, sizeof(v)));
		rn_json_str(&j, "plugin_path", hf && hf->plugin_path[0] ? hf->plugin_path : NULL);
		rn_json_str(&j, "nccl_path", hf && hf->nccl_path[0] ? hf->nccl_path : NULL);
		rn_json_arr(&j, "nics");
		for (i = 0; i < nnics(s, h); i++) {
			const struct rn_dw_nic *n = &s->hosts[h].inv->nics[i];

			rn_json_obj(&j, NULL);
			rn_json_str(&j, "netdev", n->netdev);
			rn_json_str(&j, "ibdev", n->ibdev[0] ? n->ibdev : NULL);
			rn_json_str(&j, "ip", n->ip.family ? rn_ip_str(&n->ip, b, sizeof(b)) : NULL);
			rn_json_str(&j, "verdict", rn_verdict_str((enum rn_verdict_kind)n->verdict));
			rn_json_str(&j, "driver", rn_sweep_fact(s, h, i, RN_SW_F_DRIVER, v, sizeof(v)));
			rn_json_str(&j, "firmware", rn_sweep_fact(s, h, i, RN_SW_F_FW, v, sizeof(v)));
			rn_json_int(&j, "mtu", n->mtu);
			if (hf && i < hf->nnics)
				rn_json_sysctls(&j, "sysctl", &hf->nics[i].eff);
			else
				rn_json_null(&j, "sysctl");
			rn_json_arr(&j, "findings");
			for (q = 0; q < n->nfindings; q++)
				rn_json_finding(&j, &n->findings[q], s->hosts[h].name);
			if (s->hosts[h].drops && s->hosts[h].drops[i].cause)
				rn_json_finding(&j, &s->hosts[h].drops[i], s->hosts[h].name);
			if (s->hosts[h].slow && s->hosts[h].slow[i].cause)
				rn_json_finding(&j, &s->hosts[h].slow[i], s->hosts[h].name);
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
						    fd->by == RN_SW_BY_RDMA ? "rdma" :
						    fd->by == RN_SW_BY_BW ? "bandwidth" : by);
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
				if (s->min_gbps > 0)
					json_cell_bw(&j, p, i, x);
				rn_json_close(&j, '}');
			}
	}
	rn_json_close(&j, ']');
	json_fleet(&j, s);
	json_bw(&j, s);
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
	if (c->a_cause || c->b_cause || c->slow)
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

static int nic_differs(const struct rn_sweep *s, int h, int i)
{
	int k;

	for (k = 0; k < s->ndiffs; k++)
		if (s->diffs[k].h == h && (s->diffs[k].i == i || s->diffs[k].i < 0))
			return 1;
	return 0;
}

/* The lines under the legend: what differs from the fleet, the slow NICs. With @f NULL
 * only counted. */
static int svg_notes(FILE *f, const struct rn_sweep *s, int y)
{
	int n = 0, k, h, i;

	if (s->ndiffs && f)
		fprintf(f, "<text x=\"10\" y=\"%d\" font-weight=\"bold\">differs from the fleet:"
			"</text>\n", y + n * 16);
	n += !!s->ndiffs;
	for (k = 0; k < s->ndiffs; k++, n++) {
		const struct rn_sweep_diff *d = &s->diffs[k];

		if (!f)
			continue;
		fprintf(f, "<text x=\"20\" y=\"%d\" fill=\"#d7301f\">", y + n * 16);
		xml_text(f, s->hosts[d->h].name);
		if (d->i >= 0) {
			fputc(':', f);
			xml_text(f, nic_name(s, d->h, d->i));
		}
		fprintf(f, " %s ", rn_sweep_field_name(d->field));
		xml_text(f, d->value);
		fprintf(f, ", where %d of %d have ", d->count, d->of);
		xml_text(f, d->majority);
		fprintf(f, "</text>\n");
	}
	for (h = 0; h < s->n; h++)
		for (i = 0; s->hosts[h].slow && i < nnics(s, h); i++) {
			if (!s->hosts[h].slow[i].cause)
				continue;
			if (f) {
				fprintf(f, "<text x=\"10\" y=\"%d\">slow NIC (the bad end of its slow "
					"pairs): ", y + n * 16);
				xml_text(f, s->hosts[h].name);
				fputc(':', f);
				xml_text(f, nic_name(s, h, i));
				fprintf(f, "</text>\n");
			}
			n++;
		}
	return n;
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
		RN_MAX(size, 700), SVG_TOP + gw + 110 + svg_notes(NULL, s, 0) * 16);
	fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">roce-doctor-mpi: "
		"%d hosts, %d NICs, %d bad NIC pairs, %d fleet differences</text>\n", s->n,
		total, bad_pairs(s, -1), s->ndiffs);
	/* column labels (rotated) and row labels, with the NIC's own verdict as a dot */
	for (h = 0, x = 0; h < s->n; h++)
		for (i = 0; i < nnics(s, h); i++, x++) {
			const struct rn_dw_nic *n = &s->hosts[h].inv->nics[i];
			int cx = SVG_LABEL + x * SVG_CELL + SVG_CELL / 2;
			int cy = SVG_TOP + x * SVG_CELL + SVG_CELL / 2;

			fprintf(f, "<text transform=\"translate(%d,%d) rotate(-60)\"%s>", cx + 4,
				SVG_TOP - 14, nic_differs(s, h, i) ? " fill=\"#d7301f\"" : "");
			xml_text(f, s->hosts[h].name);
			fputc(':', f);
			xml_text(f, n->netdev);
			fprintf(f, "</text>\n<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"%s\"/>\n", cx,
				SVG_TOP - 7, verdict_colour(n));
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\"%s>", SVG_LABEL - 14,
				cy + 4, nic_differs(s, h, i) ? " fill=\"#d7301f\"" : "");
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
					fprintf(f, ":%s: %s", nic_name(s, h2, i2),
						h == h2 ? "same host" : cl ? rn_sweep_cell_str(cl, c, sizeof(c)) :
						"no result");
					if (cl && cl->bw == RN_SW_BW_OK)
						fprintf(f, ", %.2f Gbit/s", cl->bw_mbps / 1000.0);
					fprintf(f, "</title></rect>\n");
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
			{ "#3a9d4a", "ok" }, { "#f28e2b", "warning, slow" }, { "#d7301f", "broken" },
			{ "#bbbbbb", "not checked" }, { "#8e6bbf", "no result (host hung)" },
		};
		size_t l;

		for (l = 0; l < RN_ARRAY_SIZE(legend); l++) {
			x = 10 + (int)(l % 3) * 170;
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\">%s</text>\n", x, y + (int)(l / 3) * 22, legend[l].colour,
				x + 20, y + (int)(l / 3) * 22 + 11, legend[l].what);
		}
		fprintf(f, "<text x=\"10\" y=\"%d\">dots: the NIC's own verdict (host check); "
			"red labels: differ from the fleet</text>\n", y + 60);
	}
	svg_notes(f, s, y + 84);
	fprintf(f, "</svg>\n");
}

int rn_sweep_svg(const char *path, const struct rn_sweep *s)
{
	return rn_doctor_write_file(path, svg_fill, s);
}
