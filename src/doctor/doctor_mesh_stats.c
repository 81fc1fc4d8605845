// SPDX-License-Identifier: MIT
/*
 * The mesh's arithmetic, without a socket or a thread (doctor_mesh.h): the rate's bucket,
 * the rotation, the windows of outcomes, the pair metrics and the verdicts over pairs.
 * The agent (doctor_mesh.c) and `localize` (doctor_localize.c) call it; so do the unit
 * tests (test/unit/test_doctor_mesh.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_mesh.h"
#include "rn_compiler.h"

void rn_mesh_bucket_init(struct rn_mesh_bucket *b, double rate, double burst, double now)
{
	b->rate = rate;
	b->burst = burst;
	b->tokens = burst;
	b->t = now;
}

int rn_mesh_bucket_take(struct rn_mesh_bucket *b, double now)
{
	/* a clock that went back (it is monotonic; a test's may not be) adds nothing */
	if (now > b->t) {
		b->tokens = RN_MIN(b->burst, b->tokens + (now - b->t) * b->rate);
		b->t = now;
	}
	/* NOTE: 1e-9 short of a token is a token: ten 0.1 s steps at 10/s sum to 0.9999... */
	if (b->tokens < 1.0 - 1e-9)
		return 0;
	b->tokens -= 1.0;
	return 1;
}

int rn_mesh_sched_pick(struct rn_mesh_sched *s, int n, int (*ready)(void *arg, int idx), void *arg,
		       int max, int *out)
{
	int k, got = 0;

	if (n <= 0 || max <= 0)
		return 0;
	for (k = 0; k < n && got < max; k++) {
		int idx = (int)((s->cursor + (unsigned int)k) % (unsigned int)n);

		if (ready(arg, idx))
			out[got++] = idx;
	}
	/* next time from the one after the last taken: a small @max still rotates */
	if (got)
		s->cursor = (unsigned int)(out[got - 1] + 1) % (unsigned int)n;
	return got;
}

void rn_mesh_win_add(struct rn_mesh_win *w, uint32_t us)
{
	w->us[w->head] = us;
	w->head = (w->head + 1) % RN_MESH_WIN;
	if (w->n < RN_MESH_WIN)
		w->n++;
	w->sent++;
	if (us == RN_MESH_LOST) {
		w->lost++;
		w->lost_run++;
	} else {
		w->lost_run = 0;
	}
}

uint32_t rn_mesh_pct(const uint32_t *sorted, int n, double q)
{
	int rank;

	if (n <= 0)
		return 0;
	/* nearest rank: the smallest value with at least q of them at or below it */
	rank = (int)(q * n + 0.999999);
	rank = rank < 1 ? 1 : rank > n ? n : rank;
	return sorted[rank - 1];
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void rn_mesh_win_figs(const struct rn_mesh_win *w, struct rn_mesh_figs *f)
{
	uint32_t v[RN_MESH_WIN];
	int i, k = 0;

	memset(f, 0, sizeof(*f));
	f->n = w->n;
	for (i = 0; i < w->n; i++)
		if (w->us[i] != RN_MESH_LOST)
			v[k++] = w->us[i];
	f->answered = k;
	if (w->n)
		f->loss = (double)(w->n - k) / w->n;
	if (!k)
		return;
	qsort(v, k, sizeof(v[0]), cmp_u32);
	f->p50_s = rn_mesh_pct(v, k, 0.5) / 1e6;
	f->p99_s = rn_mesh_pct(v, k, 0.99) / 1e6;
}

/* ---- the metrics --------------------------------------------------------------------- */

static void pair_labels(FILE *f, const char *name, const struct rn_mesh_view *v)
{
	fprintf(f, "%s{", name);
	rn_doctor_prom_label(f, "host", v->host, 0);
	rn_doctor_prom_label(f, "nic", v->nic, 1);
	rn_doctor_prom_label(f, "peer_host", v->peer_host, 1);
	rn_doctor_prom_label(f, "peer_nic", v->peer_nic, 1);
	rn_doctor_prom_label(f, "group", v->group, 1);
	rn_doctor_prom_label(f, "peer_group", v->peer_group, 1);
	/* PromQL cannot compare two labels: the rules select pairs inside a group by this */
	rn_doctor_prom_label(f, "cross", strcmp(v->group, v->peer_group) ? "1" : "0", 1);
	rn_doctor_prom_label(f, "kind", v->kind, 1);
}

static void head(FILE *f, const char *name, const char *type, const char *text)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* What one pair series shows, by metric. */
enum { S_UP, S_LOSS, S_P50, S_P99, S_BASE, S_SENT, S_LOST, S__MAX };

/* Each pair's series of one metric (S_*), under its HELP and TYPE. */
static void pair_series(FILE *f, const struct rn_mesh_view *v, int n, int what)
{
	static const struct {
		const char *name, *type, *text;
	} m[] = {
		[S_UP] = { "roce_mesh_pair_up", "gauge",
			   "1 when the NIC pair answers its probes and its checks find nothing, 0 when not (roce_mesh_pair_cause says why)." },
		[S_LOSS] = { "roce_mesh_pair_loss_ratio", "gauge",
			     "Probes lost of the pair's last ones." },
		/* NOTE: two gauges, not a quantile label: promtool's lint keeps that for summaries */
		[S_P50] = { "roce_mesh_pair_rtt_p50_seconds", "gauge",
			    "Median round-trip time of the pair's last answered probes (nearest rank)." },
		[S_P99] = { "roce_mesh_pair_rtt_p99_seconds", "gauge",
			    "99th percentile round-trip time of the pair's last answered probes (nearest rank)." },
		[S_BASE] = { "roce_mesh_pair_rtt_baseline_seconds", "gauge",
			     "The pair's usual round-trip time (a moving average of its answers, kept while it loses probes): what localize groups hosts by where no topology is given." },
		[S_SENT] = { "roce_mesh_pair_probes_total", "counter",
			     "Probes sent over the pair." },
		[S_LOST] = { "roce_mesh_pair_lost_total", "counter",
			     "Probes of the pair that got no answer in time." },
	};
	int i;

	head(f, m[what].name, m[what].type, m[what].text);
	for (i = 0; i < n; i++) {
		const struct rn_mesh_view *p = &v[i];

		/* no RTT before the first answer: a 0 would read as a fast path */
		if (((what == S_P50 || what == S_P99) && !p->figs.answered) ||
		    (what == S_BASE && p->base_s <= 0))
			continue;
		pair_labels(f, m[what].name, p);
		switch (what) {
		case S_UP:
			fprintf(f, "} %d\n", p->up);
			break;
		case S_LOSS:
			fprintf(f, "} %.4f\n", p->figs.loss);
			break;
		case S_P50:
		case S_P99:
			fprintf(f, "} %.6f\n", what == S_P50 ? p->figs.p50_s : p->figs.p99_s);
			break;
		case S_BASE:
			fprintf(f, "} %.6f\n", p->base_s);
			break;
		case S_SENT:
			fprintf(f, "} %llu\n", (unsigned long long)p->sent);
			break;
		default:
			fprintf(f, "} %llu\n", (unsigned long long)p->lost);
		}
	}
}

static void self_series(FILE *f, const char *name, const char *type, const char *text,
			const char *host, double val)
{
	head(f, name, type, text);
	fprintf(f, "%s{", name);
	rn_doctor_prom_label(f, "host", host, 0);
	fprintf(f, "} %.17g\n", val);
}

/* The agent's own series: one a figure, labelled by its host. */
static void write_self(FILE *f, const struct rn_mesh_self *s)
{
	int i;
	const struct {
		const char *name, *type, *text;
		double v;
	} self[] = {
		{ "roce_mesh_peers", "gauge", "Hosts in the agent's list, itself left out.",
		  s->peers },
		{ "roce_mesh_peers_reached", "gauge",
		  "Peers whose agent answered the last pair check.", s->peers_reached },
		{ "roce_mesh_pairs", "gauge", "NIC pairs the agent probes.", s->pairs },
		{ "roce_mesh_probes_sent_total", "counter", "Probes this agent sent.",
		  (double)s->probes_sent },
		{ "roce_mesh_echoes_sent_total", "counter", "Probes of peers this agent answered.",
		  (double)s->echoes_sent },
		{ "roce_mesh_echoes_dropped_total", "counter",
		  "Probes of peers left unanswered over the answer rate's cap.",
		  (double)s->echoes_dropped },
		{ "roce_mesh_bad_packets_total", "counter",
		  "Datagrams on the probe port that were no probe or answer of ours.",
		  (double)s->bad_packets },
		{ "roce_mesh_checks_total", "counter",
		  "Pair checks run (the doctor's pair engine against a peer's agent).",
		  (double)s->checks_run },
		{ "roce_mesh_checks_failed_total", "counter",
		  "Pair checks that did not reach the peer's agent or did not finish.",
		  (double)s->checks_failed },
		{ "roce_mesh_rc_nics", "gauge",
		  "This host's NICs with an RC listener (0: UDP probes only).", s->rc_nics },
		{ "roce_mesh_rc_qps", "gauge", "RC connections open to peer NICs for probes.",
		  s->rc_qps },
		{ "roce_mesh_rc_probes_sent_total", "counter", "RC pings this agent sent.",
		  (double)s->rc_probes_sent },
		{ "roce_mesh_rc_answered_total", "counter",
		  "RC pings of peers this agent received.", (double)s->rc_answered },
		{ "roce_mesh_start_time_seconds", "gauge", "When the agent started (Unix time).",
		  s->started_s },
	};

	for (i = 0; i < (int)RN_ARRAY_SIZE(self); i++)
		self_series(f, self[i].name, self[i].type, self[i].text, s->host, self[i].v);
}

void rn_mesh_render(FILE *f, const struct rn_mesh_view *v, int n, const struct rn_mesh_self *s)
{
	int i;

	pair_series(f, v, n, S_UP);
	head(f, "roce_mesh_pair_cause", "gauge",
	     "1 for a failing NIC pair, labelled by its cause (the verdict catalogue's id).");
	for (i = 0; i < n; i++) {
		if (v[i].up || !v[i].cause)
			continue;
		pair_labels(f, "roce_mesh_pair_cause", &v[i]);
		rn_doctor_prom_label(f, "cause", v[i].cause, 1);
		fputs("} 1\n", f);
	}
	for (i = S_LOSS; i < S__MAX; i++)
		pair_series(f, v, n, i);
	write_self(f, s);
}

/* ---- the verdicts -------------------------------------------------------------------- */

struct end {
	const char *host, *nic;
	int n, bad, in_n, in_bad;
	int is_bad;
};

struct grp {
	const char *name;
	int in_n, in_bad;
};

static int end_find(struct end *e, int *ne, const char *host, const char *nic, int cap)
{
	int i;

	for (i = 0; i < *ne; i++)
		if (!strcmp(e[i].host, host) && !strcmp(e[i].nic, nic))
			return i;
	if (*ne >= cap)
		return -1;
	e[*ne] = (struct end){ .host = host, .nic = nic };
	return (*ne)++;
}

static int grp_find(struct grp *g, int *ng, const char *name, int cap)
{
	int i;

	for (i = 0; i < *ng; i++)
		if (!strcmp(g[i].name, name))
			return i;
	if (*ng >= cap)
		return -1;
	g[*ng] = (struct grp){ .name = name };
	return (*ng)++;
}

/* The most frequent cause among the failing observations @match says belong. */
static void top_cause(const struct rn_mesh_obs *obs, int n,
		      int (*match)(const struct rn_mesh_obs *o, const struct rn_mesh_verdict *v),
		      struct rn_mesh_verdict *v)
{
	int i, k, best = 0;

	v->cause[0] = 0;
	for (i = 0; i < n; i++) {
		int c = 0;

		if (obs[i].up || !obs[i].cause[0] || !match(&obs[i], v))
			continue;
		for (k = 0; k < n; k++)
			c += !obs[k].up && match(&obs[k], v) && !strcmp(obs[k].cause, obs[i].cause);
		if (c > best) {
			best = c;
			snprintf(v->cause, sizeof(v->cause), "%s", obs[i].cause);
		}
	}
}

static int match_nic(const struct rn_mesh_obs *o, const struct rn_mesh_verdict *v)
{
	return (!strcmp(o->host, v->host) && !strcmp(o->nic, v->nic)) ||
	       (!strcmp(o->peer_host, v->host) && !strcmp(o->peer_nic, v->nic));
}

static int match_host(const struct rn_mesh_obs *o, const struct rn_mesh_verdict *v)
{
	return !strcmp(o->host, v->host) || !strcmp(o->peer_host, v->host);
}

static int match_link(const struct rn_mesh_obs *o, const struct rn_mesh_verdict *v)
{
	return (!strcmp(o->group, v->group) && !strcmp(o->peer_group, v->peer_group)) ||
	       (!strcmp(o->group, v->peer_group) && !strcmp(o->peer_group, v->group));
}

static void add(struct rn_mesh_verdict *out, int max, int *nv, const struct rn_mesh_verdict *v)
{
	if (*nv < max)
		out[*nv] = *v;
	(*nv)++;
}

/* A NIC is bad with most of its peers, and with most of those in its group where it has any. */
static void judge_ends(struct end *e, int ne)
{
	int i;

	for (i = 0; i < ne; i++)
		e[i].is_bad = e[i].n && 2 * e[i].bad > e[i].n &&
			      (!e[i].in_n || 2 * e[i].in_bad > e[i].in_n);
}

static void host_and_nic_verdicts(const struct rn_mesh_obs *obs, int n, struct end *e, int ne,
				  struct rn_mesh_verdict *out, int max, int *nv)
{
	int i, k;

	for (i = 0; i < ne; i++) {
		struct rn_mesh_verdict v = { 0 };
		int all = 1, first = 1, bad = 0, of = 0;

		if (!e[i].is_bad)
			continue;
		for (k = 0; k < ne; k++) {
			if (strcmp(e[k].host, e[i].host))
				continue;
			all &= e[k].is_bad;
			first &= k >= i;
			bad += e[k].bad;
			of += e[k].n;
		}
		snprintf(v.host, sizeof(v.host), "%s", e[i].host);
		if (all) {
			/* once per host: at its first NIC */
			if (!first)
				continue;
			v.blame = RN_MESH_BLAME_HOST;
			v.bad = bad;
			v.of = of;
			top_cause(obs, n, match_host, &v);
		} else {
			v.blame = RN_MESH_BLAME_NIC;
			snprintf(v.nic, sizeof(v.nic), "%s", e[i].nic);
			v.bad = e[i].bad;
			v.of = e[i].n;
			top_cause(obs, n, match_nic, &v);
		}
		add(out, max, nv, &v);
	}
}

static void link_verdicts(const struct rn_mesh_obs *obs, int n, const struct grp *g, int ng,
			  struct rn_mesh_verdict *out, int max, int *nv)
{
	int a, b, i;

	for (a = 0; a < ng; a++)
		for (b = a + 1; b < ng; b++) {
			struct rn_mesh_verdict v = { .blame = RN_MESH_BLAME_LINK };

			snprintf(v.group, sizeof(v.group), "%s", g[a].name);
			snprintf(v.peer_group, sizeof(v.peer_group), "%s", g[b].name);
			for (i = 0; i < n; i++)
				if (strcmp(obs[i].group, obs[i].peer_group) &&
				    match_link(&obs[i], &v)) {
					v.of++;
					v.bad += !obs[i].up;
				}
			/* inside each group the pairs must be fine: else a host or NIC explains it */
			if (!v.of || 2 * v.bad <= v.of ||
			    4 * g[a].in_bad >= g[a].in_n + !g[a].in_n ||
			    4 * g[b].in_bad >= g[b].in_n + !g[b].in_n)
				continue;
			top_cause(obs, n, match_link, &v);
			add(out, max, nv, &v);
		}
}

#define LOC_GROUPS 256

int rn_mesh_localize(const struct rn_mesh_obs *obs, int n, struct rn_mesh_verdict *out, int max)
{
	struct end *e = calloc(2 * (size_t)n + 1, sizeof(*e));
	struct grp *g = calloc(LOC_GROUPS, sizeof(*g));
	int i, ne = 0, ng = 0, nv = 0;

	if (!e || !g) {
		free(e);
		free(g);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct rn_mesh_obs *o = &obs[i];
		int in = !strcmp(o->group, o->peer_group), bad = !o->up;
		int x = end_find(e, &ne, o->host, o->nic, 2 * n);
		int y = end_find(e, &ne, o->peer_host, o->peer_nic, 2 * n);
		int gx = grp_find(g, &ng, o->group, LOC_GROUPS);

		grp_find(g, &ng, o->peer_group, LOC_GROUPS);
		e[x].n++, e[y].n++;
		e[x].bad += bad, e[y].bad += bad;
		if (in) {
			e[x].in_n++, e[y].in_n++;
			e[x].in_bad += bad, e[y].in_bad += bad;
			if (gx >= 0) {
				g[gx].in_n++;
				g[gx].in_bad += bad;
			}
		}
	}
	judge_ends(e, ne);
	host_and_nic_verdicts(obs, n, e, ne, out, max, &nv);
	link_verdicts(obs, n, g, ng, out, max, &nv);
	free(e);
	free(g);
	return nv;
}

/* ---- reading the series back --------------------------------------------------------- */

/* The value of label @name in @labels ("a=\"x\",b=\"y\""), unescaped into @out. */
static int label_get(const char *labels, const char *name, char *out, size_t len)
{
	size_t nl = strlen(name);
	const char *p = labels;

	while (*p) {
		const char *eq = strchr(p, '=');
		size_t k = 0;
		int match;

		if (!eq || eq[1] != '"')
			return -EBADMSG;
		match = (size_t)(eq - p) == nl && !strncmp(p, name, nl);
		for (p = eq + 2; *p && *p != '"'; p++) {
			char c = *p;

			if (c == '\\' && p[1]) {
				c = *++p == 'n' ? '\n' : *p;
			}
			if (match && k + 1 < len)
				out[k++] = c;
		}
		if (*p != '"')
			return -EBADMSG;
		if (match) {
			out[k] = 0;
			return 0;
		}
		p++;
		if (*p == ',')
			p++;
	}
	return -ENOENT;
}

int rn_mesh_parse_line(const char *line, struct rn_mesh_obs *o, enum rn_mesh_series *kind)
{
	static const char *const names[] = { "roce_mesh_pair_up{", "roce_mesh_pair_cause{",
					     "roce_mesh_pair_rtt_baseline_seconds{" };
	char labels[2048];
	const char *l = NULL, *end;
	char *tail;
	double v;
	size_t k;

	for (k = 0; k < RN_ARRAY_SIZE(names) && !l; k++)
		if (!strncmp(line, names[k], strlen(names[k]))) {
			*kind = (enum rn_mesh_series)k;
			l = line + strlen(names[k]);
		}
	if (!l)
		return -ENOENT;
	/* the last '}' ends the labels: a value may hold one, a number never does */
	end = strrchr(l, '}');
	if (!end || (size_t)(end - l) >= sizeof(labels))
		return -EBADMSG;
	memcpy(labels, l, end - l);
	labels[end - l] = 0;
	memset(o, 0, sizeof(*o));
	if (label_get(labels, "host", o->host, sizeof(o->host)) ||
	    label_get(labels, "nic", o->nic, sizeof(o->nic)) ||
	    label_get(labels, "peer_host", o->peer_host, sizeof(o->peer_host)) ||
	    label_get(labels, "peer_nic", o->peer_nic, sizeof(o->peer_nic)))
		return -EBADMSG;
	/* groups are optional: absent means one group (Prometheus drops an empty label) */
	label_get(labels, "group", o->group, sizeof(o->group));
	label_get(labels, "peer_group", o->peer_group, sizeof(o->peer_group));
	if (*kind == RN_MESH_CAUSE && label_get(labels, "cause", o->cause, sizeof(o->cause)))
		return -EBADMSG;
	v = strtod(end + 1, &tail);
	if (tail == end + 1 || v != v)
		return -EBADMSG;
	o->up = v >= 0.5;
	o->base_s = *kind == RN_MESH_BASE && v > 0 ? v : 0;
	return 0;
}

/* ---- groups from RTT ----------------------------------------------------------------- */

static int host_index(const char **names, int *nh, const char *name)
{
	int i;

	for (i = 0; i < *nh; i++)
		if (!strcmp(names[i], name))
			return i;
	if (*nh == RN_MESH_RTT_HOSTS)
		return -1;
	names[*nh] = name;
	return (*nh)++;
}

static int uf_find(int *up, int x)
{
	while (up[x] != x)
		x = up[x] = up[up[x]];
	return x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The threshold at the largest gap (a factor of RN_MESH_RTT_GAP at least) of @v, 0: none. */
static double rtt_gap(double *v, int n)
{
	double best = RN_MESH_RTT_GAP, cut = 0;
	int k;

	qsort(v, n, sizeof(v[0]), cmp_double);
	for (k = 0; k + 1 < n; k++)
		if (v[k] > 0 && v[k + 1] / v[k] >= best) {
			best = v[k + 1] / v[k];
			cut = (v[k] + v[k + 1]) / 2;
		}
	return cut;
}

int rn_mesh_rtt_groups(struct rn_mesh_obs *obs, int n)
{
	const char **names = calloc(RN_MESH_RTT_HOSTS, sizeof(*names));
	double *rtt = calloc((size_t)RN_MESH_RTT_HOSTS * RN_MESH_RTT_HOSTS, sizeof(*rtt));
	int *up = calloc(RN_MESH_RTT_HOSTS, sizeof(*up)),
	    *x = calloc(2 * (size_t)n + 1, sizeof(*x));
	int i, j, nh = 0, nv = 0, ngroups = 0, ret;
	double cut;

	ret = names && rtt && up && x ? 0 : -ENOMEM;
	/* each host pair: its fastest NIC pair's baseline, either end's view */
	for (i = 0; !ret && i < n; i++) {
		int a = host_index(names, &nh, obs[i].host),
		    b = host_index(names, &nh, obs[i].peer_host);
		double *r;

		if (a < 0 || b < 0) {
			ret = -E2BIG;
			break;
		}
		x[2 * i] = a, x[2 * i + 1] = b;
		r = &rtt[RN_MIN(a, b) * RN_MESH_RTT_HOSTS + RN_MAX(a, b)];
		if (obs[i].base_s > 0 && (!*r || obs[i].base_s < *r))
			*r = obs[i].base_s;
	}
	for (i = 0; !ret && i < nh; i++)
		for (up[i] = i, j = i + 1; j < nh; j++)
			if (rtt[i * RN_MESH_RTT_HOSTS + j] > 0)
				rtt[nv++] = rtt[i * RN_MESH_RTT_HOSTS + j]; /* nv <= i * N + j */
	cut = ret ? 0 : rtt_gap(rtt, nv);
	if (!ret && cut > 0) {
		/* the near pairs join their hosts; the matrix was overwritten: read obs again */
		for (i = 0; i < n; i++)
			if (obs[i].base_s > 0 && obs[i].base_s < cut)
				up[uf_find(up, x[2 * i])] = uf_find(up, x[2 * i + 1]);
		for (i = 0; i < n; i++) {
			int ga = uf_find(up, x[2 * i]), gb = uf_find(up, x[2 * i + 1]);
			const char *na = NULL, *nb = NULL;

			/* a group's name: its first host by name */
			for (j = 0; j < nh; j++) {
				if (uf_find(up, j) == ga && (!na || strcmp(names[j], na) < 0))
					na = names[j];
				if (uf_find(up, j) == gb && (!nb || strcmp(names[j], nb) < 0))
					nb = names[j];
			}
			snprintf(obs[i].group, sizeof(obs[i].group), "near-%.58s", na);
			snprintf(obs[i].peer_group, sizeof(obs[i].peer_group), "near-%.58s", nb);
		}
		for (i = 0; i < nh; i++)
			ngroups += uf_find(up, i) == i;
	}
	free(names);
	free(rtt);
	free(up);
	free(x);
	return ret ? ret : cut > 0 ? ngroups : 1;
}
