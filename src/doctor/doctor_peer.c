// SPDX-License-Identifier: MIT
/*
 * "peer" and "serve": two hosts exchange inventories (per NIC: netdev, IP, MAC,
 * GID, MTUs, own verdict) and each checks every pair from its side with the
 * plugin's own connection check (rn_conn_check_*: route from our source IP out
 * of our NIC, our neighbour entry for the peer holds the MAC the peer
 * advertised, MTUs agree). The server sends its results to the client, which
 * prints the matrix (rows: local NICs, columns: remote NICs). Where both ends
 * have RDMA ports, an RC ping over the library's transport confirms the wire.
 *
 *   client                         server
 *   INV ------------------------>  (gather)
 *       <------------------------  INV
 *   neighbour checks (ours)
 *   CHECKS --------------------->  neighbour checks, then ARP uniqueness (its side)
 *       <------------------------  CHECKS
 *   ARP uniqueness (ours)
 * One side checks at a time: the other's ARP requests would rewrite the very
 * neighbour entries being checked (a request carries its sender's MAC), and the
 * raw ARP probes come after both neighbour checks for the same reason.
 *   per pair: PROBE_REQ -------->  listen
 *       <------------------------  PROBE_HANDLE
 *   connect + isend                accept + irecv
 *       <------------------------  PROBE_RESULT
 *   DONE ----------------------->
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "doctor.h"
#include "rn_conncheck.h"
#include "rn_net.h"
#include "rn_wire.h"

struct session {
	struct rn_dw_inv local, remote;
	struct rn_dw_checks ours, theirs;
	struct rn_pair_probe probes[RN_DOCTOR_MAX_NICS][RN_DOCTOR_MAX_NICS];
	/* RDMA dropped at one NIC while its route and neighbours are right (firewall, H20). */
	struct rn_finding drops_local[RN_DOCTOR_MAX_NICS], drops_remote[RN_DOCTOR_MAX_NICS];
	double check_ms;
	int arp_probed;             /* pairs probed for ARP uniqueness, -errno: skipped */
	/* Checks this side could not run: shown, and never counted as passed. */
	int nskips;
	struct {
		const char *check;  /* "arp-probe", "rdma-probe" */
		char why[160];
	} skips[2];
};

/* Release what a session's findings own; the session is empty (zero) after. */
static void session_clear(struct session *s)
{
	int i, j;

	rn_dw_inv_clear(&s->local);
	rn_dw_inv_clear(&s->remote);
	rn_dw_checks_clear(&s->ours);
	rn_dw_checks_clear(&s->theirs);
	for (i = 0; i < RN_DOCTOR_MAX_NICS; i++) {
		for (j = 0; j < RN_DOCTOR_MAX_NICS; j++) {
			rn_finding_clear(&s->probes[i][j].diag);
			rn_probe_ctr_clear(&s->probes[i][j].ctr);
		}
		rn_finding_clear(&s->drops_local[i]);
		rn_finding_clear(&s->drops_remote[i]);
	}
	memset(s, 0, sizeof(*s));
}

static void skip(struct session *s, const char *check, const char *fmt, ...) __rn_printf(3, 4);

static void skip(struct session *s, const char *check, const char *fmt, ...)
{
	va_list ap;

	if (s->nskips == (int)RN_ARRAY_SIZE(s->skips))
		return;
	s->skips[s->nskips].check = check;
	va_start(ap, fmt);
	vsnprintf(s->skips[s->nskips].why, sizeof(s->skips[0].why), fmt, ap);
	va_end(ap);
	s->nskips++;
}

/* ---- the matrix ---------------------------------------------------------------------- */

static const struct rn_dw_pair *pair_of(const struct rn_dw_checks *c, int local, int remote)
{
	int n;

	for (n = 0; n < c->npairs; n++)
		if (c->pairs[n].local == local && c->pairs[n].remote == remote)
			return &c->pairs[n];
	return NULL;
}

/* The worst finding of a pair, fatal first. */
static const struct rn_finding *worst(const struct rn_dw_pair *p)
{
	const struct rn_finding *w = NULL;
	int k;

	for (k = 0; p && k < p->nfindings; k++)
		if (p->findings[k].sev >= RN_SEV_WARN && (!w || p->findings[k].sev > w->sev))
			w = &p->findings[k];
	return w;
}

static const char *cell(const struct session *s, int i, int j, char *buf, size_t len)
{
	const struct rn_dw_pair *a = pair_of(&s->ours, i, j), *b = pair_of(&s->theirs, j, i);
	const struct rn_finding *wa = worst(a), *wb = worst(b);
	const struct rn_pair_probe *p = &s->probes[i][j];

	char lb[32];

	if (wa && (!wb || wa->sev >= wb->sev))
		snprintf(buf, len, "%s", rn_cause_label(wa->cause, lb, sizeof(lb)));
	else if (wb)
		snprintf(buf, len, "%s(peer)", rn_cause_label(wb->cause, lb, sizeof(lb)));
	else if (p->tried && (p->ret || p->peer_ret))
		snprintf(buf, len, "%s", p->timeout ? "rdma-timeout" : "rdma-error");
	else if ((!a || a->status == 2) && (!b || b->status == 2) && !p->tried)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "ok");
	return buf;
}

static int session_problems(const struct session *s)
{
	char c[64];
	int i, j;

	for (i = 0; i < s->local.nnics; i++)
		for (j = 0; j < s->remote.nnics; j++)
			if (strcmp(cell(s, i, j, c, sizeof(c)), "ok") && strcmp(c, "-"))
				return 1;
	return 0;
}

/* Both hosts' own NIC findings, then the pairs', grouped by cause; returns how many. */
static int print_all_findings(FILE *f, const struct session *s, int verbose)
{
	struct rn_doctor_item *it;
	char (*who)[128];
	int i, j, k, n = 0, nprobe = 0, max = 0;

	/* room for every finding there is: nothing left out */
	for (i = 0; i < s->local.nnics; i++)
		max += s->local.nics[i].nfindings + 2; /* + its RDMA diagnoses and drop */
	for (i = 0; i < s->remote.nnics; i++)
		max += s->remote.nics[i].nfindings + 1;
	for (i = 0; i < s->ours.npairs; i++)
		max += s->ours.pairs[i].nfindings;
	for (i = 0; i < s->theirs.npairs; i++)
		max += s->theirs.pairs[i].nfindings;
	max += s->local.nnics * s->remote.nnics;
	it = calloc((size_t)max + 1, sizeof(*it));
	who = calloc((size_t)max + 1, sizeof(*who));
	if (!it || !who) {
		free(it);
		free(who);
		fprintf(f, "findings: out of memory\n");
		return 1;
	}
	for (i = 0; i < s->local.nnics; i++)
		for (k = 0; k < s->local.nics[i].nfindings; k++, n++) {
			snprintf(who[n], sizeof(who[n]), "%s:%s", s->local.host, s->local.nics[i].netdev);
			it[n].who = who[n];
			it[n].f = &s->local.nics[i].findings[k];
		}
	for (i = 0; i < s->remote.nnics; i++)
		for (k = 0; k < s->remote.nics[i].nfindings; k++, n++) {
			snprintf(who[n], sizeof(who[n]), "%s:%s", s->remote.host, s->remote.nics[i].netdev);
			it[n].who = who[n];
			it[n].host = s->remote.host;
			it[n].f = &s->remote.nics[i].findings[k];
		}
	for (i = 0; i < s->local.nnics; i++) {
		for (j = 0; j < s->remote.nnics; j++) {
			const struct rn_dw_pair *pa = pair_of(&s->ours, i, j);
			const struct rn_dw_pair *pb = pair_of(&s->theirs, j, i);
			const struct rn_pair_probe *p = &s->probes[i][j];

			for (k = 0; pa && k < pa->nfindings; k++, n++) {
				snprintf(who[n], sizeof(who[n]), "%s->%s:%s", s->local.nics[i].netdev,
					 s->remote.host, s->remote.nics[j].netdev);
				it[n].who = who[n];
				it[n].f = &pa->findings[k];
			}
			for (k = 0; pb && k < pb->nfindings; k++, n++) {
				snprintf(who[n], sizeof(who[n]), "%s:%s->%s", s->remote.host,
					 s->remote.nics[j].netdev, s->local.nics[i].netdev);
				it[n].who = who[n];
				it[n].host = s->remote.host;
				it[n].f = &pb->findings[k];
			}
			if (p->tried && p->diag.cause && n < max) {
				snprintf(who[n], sizeof(who[n]), "%s->%s:%s(rdma)",
					 s->local.nics[i].netdev, s->remote.host, s->remote.nics[j].netdev);
				it[n].who = who[n];
				it[n++].f = &p->diag;
			}
		}
	}
	for (i = 0; i < s->local.nnics; i++) {
		if (!s->drops_local[i].cause)
			continue;
		snprintf(who[n], sizeof(who[n]), "%s:%s", s->local.host, s->local.nics[i].netdev);
		it[n].who = who[n];
		it[n++].f = &s->drops_local[i];
	}
	for (j = 0; j < s->remote.nnics; j++) {
		if (!s->drops_remote[j].cause)
			continue;
		snprintf(who[n], sizeof(who[n]), "%s:%s", s->remote.host, s->remote.nics[j].netdev);
		it[n].who = who[n];
		it[n++].f = &s->drops_remote[j];
	}
	rn_doctor_print_grouped(f, it, n, verbose);
	for (i = 0; i < s->local.nnics; i++) {
		for (j = 0; j < s->remote.nnics; j++) {
			const struct rn_pair_probe *p = &s->probes[i][j];

			if (!p->tried || (!p->ret && !p->peer_ret))
				continue;
			if (!nprobe++)
				fprintf(f, "rdma probes that failed:\n");
			fprintf(f, "  %s->%s:%s: %s%s%s\n", s->local.nics[i].netdev, s->remote.host,
				s->remote.nics[j].netdev, p->ret ? p->why : "",
				p->ret && p->peer_ret ? "; peer: " : p->peer_ret ? "peer: " : "",
				p->peer_ret ? p->peer_why : "");
			rn_probe_ctr_print(f, "      ", &p->ctr, NULL);
		}
	}
	free(it);
	free(who);
	return n + nprobe;
}

static void print_session(struct rn_doctor *d, const struct session *s, const char *peer)
{
	FILE *f = d->out;
	char c[64], a[INET6_ADDRSTRLEN];
	int i, j, w = 12, nf;

	fprintf(f, "roce-doctor %s: %s (%d NIC%s) <-> %s via %s (%d NIC%s)\n", RN_DOCTOR_VERSION,
		s->local.host, s->local.nnics, s->local.nnics == 1 ? "" : "s", s->remote.host, peer,
		s->remote.nnics, s->remote.nnics == 1 ? "" : "s");
	for (j = 0; j < s->remote.nnics; j++)
		w = RN_MAX(w, (int)strlen(s->remote.nics[j].netdev) + 2);
	for (i = 0; i < s->local.nnics; i++)
		for (j = 0; j < s->remote.nnics; j++)
			w = RN_MAX(w, (int)strlen(cell(s, i, j, c, sizeof(c))) + 1);
	fprintf(f, "\n%-26s", "local \\ remote");
	for (j = 0; j < s->remote.nnics; j++)
		fprintf(f, " %-*s", w, s->remote.nics[j].netdev);
	fprintf(f, "\n%-26s", "");
	for (j = 0; j < s->remote.nnics; j++)
		fprintf(f, " %-*s", w, rn_ip_str(&s->remote.nics[j].ip, a, sizeof(a)));
	fputc('\n', f);
	for (i = 0; i < s->local.nnics; i++) {
		char row[64];

		snprintf(row, sizeof(row), "%s %s", s->local.nics[i].netdev,
			 rn_ip_str(&s->local.nics[i].ip, a, sizeof(a)));
		fprintf(f, "%-26s", row);
		for (j = 0; j < s->remote.nnics; j++)
			fprintf(f, " %-*s", w, cell(s, i, j, c, sizeof(c)));
		fputc('\n', f);
	}

	fprintf(f, "\n");
	nf = print_all_findings(f, s, d->verbose);
	for (i = 0; i < s->nskips; i++)
		fprintf(f, "skipped: %s: %s\n", s->skips[i].check, s->skips[i].why);
	if (session_problems(s) || nf)
		fprintf(f, "verdict: problems found: apply the fixes above on the host each names");
	else if (s->nskips)
		fprintf(f, "verdict: no problems found; %d check%s skipped", s->nskips,
			s->nskips == 1 ? "" : "s");
	else
		fprintf(f, "verdict: all good");
	fprintf(f, " (pair checks %.1f ms)\n", s->check_ms);
}

static void json_pair(struct rn_json *j, const char *key, const struct rn_dw_pair *p,
		      const char *maker)
{
	int k;

	if (!p) {
		rn_json_null(j, key);
		return;
	}
	rn_json_obj(j, key);
	rn_json_str(j, "status", p->status == 0 ? "ok" : p->status == 1 ? "problem" : "not-checked");
	rn_json_arr(j, "findings");
	for (k = 0; k < p->nfindings; k++)
		rn_json_finding(j, &p->findings[k], maker);
	rn_json_close(j, ']');
	rn_json_close(j, '}');
}

static void json_inv(struct rn_json *j, const char *key, const struct rn_dw_inv *inv)
{
	char b[INET6_ADDRSTRLEN], g[48];
	int i, k;

	rn_json_obj(j, key);
	rn_json_str(j, "host", inv->host);
	rn_json_arr(j, "nics");
	for (i = 0; i < inv->nnics; i++) {
		const struct rn_dw_nic *n = &inv->nics[i];

		rn_json_obj(j, NULL);
		rn_json_str(j, "netdev", n->netdev);
		rn_json_str(j, "ibdev", n->ibdev[0] ? n->ibdev : NULL);
		rn_json_str(j, "ip", n->ip.family ? rn_ip_str(&n->ip, b, sizeof(b)) : NULL);
		rn_json_int(j, "prefixlen", n->prefixlen);
		rn_json_str(j, "mac", rn_mac_str(n->mac, b, sizeof(b)));
		rn_json_bool(j, "link_up", n->link_up);
		rn_json_str(j, "gid", n->ip.family ? rn_gid_str(&n->gid, g, sizeof(g)) : NULL);
		if (n->gid_index >= 0)
			rn_json_int(j, "gid_index", n->gid_index);
		else
			rn_json_null(j, "gid_index");
		rn_json_int(j, "mtu", n->mtu);
		if (n->active_mtu)
			rn_json_int(j, "active_mtu", n->active_mtu);
		else
			rn_json_null(j, "active_mtu");
		rn_json_str(j, "verdict", rn_verdict_str((enum rn_verdict_kind)n->verdict));
		rn_json_arr(j, "findings");
		for (k = 0; k < n->nfindings; k++)
			rn_json_finding(j, &n->findings[k], inv->host);
		rn_json_close(j, ']');
		rn_json_close(j, '}');
	}
	rn_json_close(j, ']');
	rn_json_close(j, '}');
}

static void json_session(struct rn_doctor *d, const struct session *s, const char *peer, int rc)
{
	struct rn_json j;
	char c[64];
	int i, k;

	rn_json_begin(&j, d->out);
	rn_json_str(&j, "schema", "roce-doctor/1");
	rn_json_str(&j, "version", RN_DOCTOR_VERSION);
	rn_json_str(&j, "command", "peer");
	rn_json_str(&j, "peer", peer);
	json_inv(&j, "local", &s->local);
	json_inv(&j, "remote", &s->remote);
	rn_json_arr(&j, "pairs");
	for (i = 0; i < s->local.nnics; i++) {
		for (k = 0; k < s->remote.nnics; k++) {
			const struct rn_pair_probe *p = &s->probes[i][k];

			rn_json_obj(&j, NULL);
			rn_json_str(&j, "local", s->local.nics[i].netdev);
			rn_json_str(&j, "remote", s->remote.nics[k].netdev);
			rn_json_str(&j, "result", cell(s, i, k, c, sizeof(c)));
			json_pair(&j, "local_check", pair_of(&s->ours, i, k), s->local.host);
			json_pair(&j, "remote_check", pair_of(&s->theirs, k, i), s->remote.host);
			rn_json_obj(&j, "rdma");
			rn_json_str(&j, "status", !p->tried ? "skipped" :
				    !p->ret && !p->peer_ret ? "ok" :
				    p->timeout ? "timeout" : "error");
			rn_json_str(&j, "error", p->ret ? p->why : NULL);
			rn_json_str(&j, "peer_error", p->peer_ret ? p->peer_why : NULL);
			if (p->tried)
				rn_json_int(&j, "elapsed_us", (long long)(p->ms * 1000));
			if (p->diag.cause) {
				rn_json_arr(&j, "diagnosis");
				rn_json_finding(&j, &p->diag, s->local.host);
				rn_json_close(&j, ']');
			}
			rn_probe_ctr_json(&j, "counters", &p->ctr, s->local.host);
			rn_json_close(&j, '}');
			rn_json_close(&j, '}');
		}
	}
	rn_json_close(&j, ']');
	/* NICs where RDMA dies while route and neighbours are right (inferred from the matrix). */
	rn_json_arr(&j, "drops");
	for (i = 0; i < s->local.nnics; i++) {
		if (!s->drops_local[i].cause)
			continue;
		rn_json_obj(&j, NULL);
		rn_json_str(&j, "host", s->local.host);
		rn_json_str(&j, "netdev", s->local.nics[i].netdev);
		rn_json_arr(&j, "findings");
		rn_json_finding(&j, &s->drops_local[i], s->local.host);
		rn_json_close(&j, ']');
		rn_json_close(&j, '}');
	}
	for (k = 0; k < s->remote.nnics; k++) {
		if (!s->drops_remote[k].cause)
			continue;
		rn_json_obj(&j, NULL);
		rn_json_str(&j, "host", s->remote.host);
		rn_json_str(&j, "netdev", s->remote.nics[k].netdev);
		rn_json_arr(&j, "findings");
		rn_json_finding(&j, &s->drops_remote[k], s->local.host);
		rn_json_close(&j, ']');
		rn_json_close(&j, '}');
	}
	rn_json_close(&j, ']');
	rn_json_arr(&j, "skipped");
	for (i = 0; i < s->nskips; i++) {
		rn_json_obj(&j, NULL);
		rn_json_str(&j, "check", s->skips[i].check);
		rn_json_str(&j, "why", s->skips[i].why);
		rn_json_close(&j, '}');
	}
	rn_json_close(&j, ']');
	rn_json_obj(&j, "summary");
	rn_json_int(&j, "arp_probed", s->arp_probed > 0 ? s->arp_probed : 0);
	rn_json_int(&j, "checks_skipped", s->nskips);
	rn_json_int(&j, "elapsed_us", (long long)(s->check_ms * 1000));
	rn_json_int(&j, "exit", rc);
	rn_json_close(&j, '}');
	if (rc == RN_DOCTOR_NODEV) {
		/* the tools' error object (rn_cli.h), beside the report that explains it */
		rn_cli_json_error_obj(&j, rc, NULL, "no NIC to check on one end (name netdevs with --netdev there)");
	}
	rn_json_end(&j);
}

/* ---- the RDMA probe, client side ------------------------------------------------------ */

/*
 * Every probe to one remote NIC (or from one local NIC) timed out while the others
 * passed and the live route and neighbours look right: the packets die at that NIC,
 * most often a firewall dropping RoCE v2 (UDP 4791). Needs another NIC that works
 * to tell which end it is.
 */
/*
 * NIC @x of one side (the remote side's when @by_remote) timed out with every NIC of the
 * other side it was tried with, while another NIC of its own side got through to those.
 */
static int all_timed_out(const struct session *s, int x, int by_remote)
{
	int n = by_remote ? s->local.nnics : s->remote.nnics;
	int own = by_remote ? s->remote.nnics : s->local.nnics;
	int tried = 0, bad = 0, others_ok = 0, y, k;

	for (y = 0; y < n; y++) {
		const struct rn_pair_probe *p = by_remote ? &s->probes[y][x] : &s->probes[x][y];

		if (!p->tried)
			continue;
		tried++;
		bad += p->timeout && !p->diag.cause;
		for (k = 0; k < own; k++) {
			const struct rn_pair_probe *q = by_remote ? &s->probes[y][k] : &s->probes[k][y];

			others_ok |= k != x && q->tried && !q->ret && !q->peer_ret;
		}
	}
	return tried && bad == tried && others_ok;
}

static void infer_drops(struct session *s)
{
	struct rn_vars v = RN_VARS_INIT;
	int i;

	for (i = 0; i < s->remote.nnics; i++)
		if (all_timed_out(s, i, 1)) {
			struct rn_finding *f = &s->drops_remote[i];

			rn_vars_set(&v, "dev", "%s", s->remote.nics[i].netdev);
			/* made here, about the remote's NIC: its fix runs there */
			if (!rn_finding_render(f, RN_CAUSE_FIREWALL, &v))
				rn_finding_set_where(f, s->remote.host, NULL, NULL, NULL);
		}
	for (i = 0; i < s->local.nnics; i++)
		if (all_timed_out(s, i, 0)) {
			rn_vars_set(&v, "dev", "%s", s->local.nics[i].netdev);
			rn_finding_render(&s->drops_local[i], RN_CAUSE_FIREWALL, &v);
		}
	rn_vars_free(&v);
}

static int remote_rdma(const struct rn_dw_nic *n)
{
	return n->ibdev[0] && n->gid_index >= 0 && n->link_up;
}

/* ---- peer ------------------------------------------------------------------------------ */

/*
 * The run's clock: one absolute deadline for the whole run (--timeout, or
 * RN_DOCTOR_PEER_RUN_S), and one per message inside it. No read or write restarts
 * either: a server that trickles a byte now and then gets as long as a silent one.
 */
struct run {
	double end;
	double msg_ms;
	int timeout_s;              /* --timeout, 0: none given */
	double queued_ms;           /* time spent in the server's queue */
};

static double msg_by(const struct run *r)
{
	return RN_MIN(rn_doctor_now_ms() + r->msg_ms, r->end);
}

/* "--timeout (2 s)", or the default's "600 s limit (--timeout to change it)" */
static const char *run_limit(const struct run *r, char *buf, size_t len)
{
	if (r->timeout_s)
		snprintf(buf, len, "--timeout (%d s)", r->timeout_s);
	else
		snprintf(buf, len, "%d s limit (--timeout to change it)", RN_DOCTOR_PEER_RUN_S);
	return buf;
}

/*
 * A deadline that came from the run rather than from the message says so, and what the
 * server's queue took of it.
 */
static int timed_out(const struct run *r, double by, const char *what, char *why, size_t len)
{
	char t[96], lim[64], q[96] = "";

	snprintf(t, sizeof(t), "%s", why);
	if (r->queued_ms >= 1000)
		snprintf(q, sizeof(q), ", %.1f s of it in the server's queue (try again later)",
			 r->queued_ms / 1000);
	if (by >= r->end)
		snprintf(why, len, "the run's %s ran out waiting for %s (%s)%s",
			 run_limit(r, lim, sizeof(lim)), what, t, q);
	else
		snprintf(why, len, "no answer in %.0f s waiting for %s (%s)", r->msg_ms / 1000,
			 what, t);
	return -ETIMEDOUT;
}

/* The next message, which must be @type, by its deadline. */
static int recv_type(int fd, const struct run *r, uint16_t type, const char *what,
		     struct rn_dw_msg *m, char *why, size_t len)
{
	double by = msg_by(r);
	int ret = rn_dw_recv_by(fd, m, by, why, len);

	if (ret == -ETIMEDOUT)
		return timed_out(r, by, what, why, len);
	if (!ret && m->type != type) {
		snprintf(why, len, "unexpected message type %u (wanted %s)", m->type, what);
		rn_dw_msg_free(m);
		ret = -EBADMSG;
	}
	return ret;
}

/* Busy is not dead: said as such, with how many were ahead and what a session takes there. */
static int busy(const struct run *r, int told, int ahead, double per_ms, char *why, size_t len)
{
	char lim[64], each[64] = "";

	if (per_ms > 0)
		snprintf(each, sizeof(each), ", a session there takes about %.1f s", per_ms / 1000);
	if (told)
		snprintf(why, len, "server busy: %d client%s ahead, it takes no more now%s (try "
			 "again later)", ahead, ahead == 1 ? "" : "s", each);
	else
		snprintf(why, len, "server busy: %d client%s ahead%s; the run's %s does not "
			 "wait for them (try again later, or with a longer --timeout)", ahead,
			 ahead == 1 ? "" : "s", each, run_limit(r, lim, sizeof(lim)));
	return -EBUSY;
}

/*
 * The server's inventory. While a session with another client runs there, the server
 * says how many are ahead and how long a session takes there (WAIT, each time that
 * changes): the wait is then bounded by the run's deadline less the time our own
 * session needs (half as much again as theirs), and ends at once when the sessions
 * ahead would not leave that. 0, -EBUSY (@why says so) or -errno.
 */
#define OWN_SESSION 1.5

static int recv_inv(int fd, struct run *r, struct rn_dw_msg *m, char *why, size_t len)
{
	int queued = 0, ahead = 0, ret;
	double per = 0, t0 = rn_doctor_now_ms();

	for (;;) {
		double by = queued ? r->end - OWN_SESSION * per : msg_by(r);
		uint16_t type;

		ret = rn_dw_recv_by(fd, m, by, why, len);
		if (queued)
			r->queued_ms = rn_doctor_now_ms() - t0;
		if (ret == -ETIMEDOUT && queued)
			return busy(r, 0, ahead, per, why, len);
		if (ret == -ETIMEDOUT)
			return timed_out(r, by, "the server's inventory", why, len);
		if (ret)
			return ret;
		if (m->type == RN_DW_INV)
			return 0;
		if (m->type != RN_DW_WAIT && m->type != RN_DW_BUSY) {
			snprintf(why, len, "unexpected message type %u (wanted the inventory)",
				 m->type);
			rn_dw_msg_free(m);
			return -EBADMSG;
		}
		type = m->type;
		ret = rn_dw_get_wait(m, &ahead, &per);
		rn_dw_msg_free(m);
		if (ret) {
			snprintf(why, len, "malformed WAIT or BUSY message");
			return ret;
		}
		if (type == RN_DW_BUSY)
			return busy(r, 1, ahead, per, why, len);
		if (!queued)
			t0 = rn_doctor_now_ms();
		queued = 1;
		if (per > 0 && (ahead + OWN_SESSION) * per > r->end - rn_doctor_now_ms())
			return busy(r, 0, ahead, per, why, len);
	}
}

int rn_doctor_cmd_peer(struct rn_doctor *d, int argc, char **argv)
{
	struct session *s;
	struct rn_dw_io io;
	struct rn_dw_msg m;
	struct run r = { 0 };
	char why[RN_DW_WHY_MAX];
	int fd = -1, rc = RN_DOCTOR_ERROR, i, j, ret;
	int pairs = 0, probed = 0, local_rdma = 0, remote_any = 0, cut = 0;

	r.timeout_s = d->timeout_s > 0 ? d->timeout_s : 0;
	r.end = rn_doctor_now_ms() + (r.timeout_s ? r.timeout_s : RN_DOCTOR_PEER_RUN_S) * 1000.0;
	/* one message: the server's pair checks (its neighbour timeout) or one probe answer */
	r.msg_ms = RN_DOCTOR_IO_TIMEOUT_S * 1000.0 + d->cfg.neigh_timeout_ms +
		   RN_DOCTOR_PROBE_TIMEOUT_MS;
	s = calloc(1, sizeof(*s));
	if (!s)
		return rn_doctor_err(d, "out of memory");
	if (rn_doctor_gather(d))
		goto out;
	if (!d->nnics) {
		/* nothing of ours to pair: say so before bothering the other host */
		snprintf(why, sizeof(why), "no RDMA device on this host%s%.200s (use --netdev to name "
			 "netdevs without RDMA)", d->skipped[0] ? ": " : "", d->skipped);
		fprintf(stderr, "roce-doctor: %s\n", why);
		rc = RN_DOCTOR_NODEV;
		if (d->json)
			rn_cli_json_error(d->out, rc, why);
		goto out;
	}
	rn_dw_inv_from_doctor(d, &s->local);
	s->local.caps = RN_DW_CAP_WAIT;
	ret = rn_dw_connect(argv[0], d->port,
			    RN_MIN(rn_doctor_now_ms() + RN_DOCTOR_IO_TIMEOUT_S * 1000.0, r.end), &fd,
			    why, sizeof(why));
	if (ret) {
		rn_doctor_err(d, "%s", why);
		goto out;
	}
	rn_dw_io_init(&io, fd, r.msg_ms, r.end);
	ret = rn_dw_send_inv(fd, &s->local, msg_by(&r));
	if (!ret)
		ret = recv_inv(fd, &r, &m, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "cannot send: %s", strerror(-ret));
	if (!ret) {
		ret = rn_dw_decode_inv(&m, &s->remote, why, sizeof(why));
		rn_dw_msg_free(&m);
	}
	if (ret) {
		if (ret == -EBUSY)
			d->err_kind = "busy";
		rn_doctor_err(d, "%s: %s%s", argv[0], why,
			      ret == -ECONNRESET ? " (the serving doctor logs why it closed)" : "");
		goto out;
	}
	rn_doctor_pair_checks(d, &s->remote, NULL, &s->ours, &s->check_ms);
	ret = rn_dw_send_checks(fd, &s->ours, msg_by(&r));
	if (ret)
		snprintf(why, sizeof(why), "cannot send: %s", strerror(-ret));
	else
		ret = recv_type(fd, &r, RN_DW_CHECKS, "the server's pair checks", &m, why,
				sizeof(why));
	if (!ret) {
		ret = rn_dw_decode_checks(&m, &s->remote, &s->local, &s->theirs, why, sizeof(why));
		rn_dw_msg_free(&m);
	}
	if (ret) {
		rn_doctor_err(d, "%s: %s", argv[0], why);
		goto out;
	}
	s->arp_probed = rn_doctor_arp_unique(d, &s->remote, NULL, &s->ours);
	if (s->arp_probed == -EPERM)
		skip(s, "arp-probe", "needs CAP_NET_RAW (run as root): who answers ARP for "
		     "each address (ARP flux) was not asked");
	else if (s->arp_probed < 0)
		skip(s, "arp-probe", "%s", strerror(-s->arp_probed));
	for (i = 0; i < d->nnics && !d->no_rdma; i++) {
		for (j = 0; j < s->remote.nnics; j++) {
			double left;

			if (s->local.nics[i].ip.family != s->remote.nics[j].ip.family)
				continue;
			pairs++;
			if (!rn_probe_available(d, i))
				continue;
			local_rdma = 1;
			if (!remote_rdma(&s->remote.nics[j]))
				continue;
			remote_any = 1;
			/* a probe needs its messages' time too: a second at least */
			left = r.end - rn_doctor_now_ms() - 1000;
			if (left <= 0 || cut) {
				cut++;
				continue;
			}
			ret = rn_pair_probe(d, &io.io, &s->remote, i, j,
					    (int)RN_MIN(RN_DOCTOR_PROBE_TIMEOUT_MS, left),
					    &s->probes[i][j], why, sizeof(why));
			if (ret) {
				if (ret == -ETIMEDOUT)
					timed_out(&r, rn_doctor_now_ms(), "the probe's answer", why,
						  sizeof(why));
				rn_doctor_err(d, "%s: RDMA probe: %s", argv[0], why);
				goto out;
			}
			probed++;
		}
	}
	for (j = 0; j < s->remote.nnics; j++)
		remote_any |= remote_rdma(&s->remote.nics[j]);
	if (d->no_rdma) {
		skip(s, "rdma-probe", "--no-rdma: the RC ping over each pair was not sent");
	} else if (cut) {
		char lim[64];

		skip(s, "rdma-probe", "the run's %s came after %d of %d probes: %d pair%s not "
		     "pinged", run_limit(&r, lim, sizeof(lim)), probed, probed + cut, cut,
		     cut == 1 ? "" : "s");
	} else if (!probed) {
		skip(s, "rdma-probe", "no RDMA device on %s: the RC ping was not sent",
		     !local_rdma ? "this host" : !remote_any ? s->remote.host : "both ends of any pair");
	} else if (probed < pairs) {
		skip(s, "rdma-probe", "%d of %d pairs have no RDMA port at one end: not pinged",
		     pairs - probed, pairs);
	}
	rn_dw_send(fd, RN_DW_DONE, NULL, 0, RN_MIN(rn_doctor_now_ms() + 1000, r.end));
	infer_drops(s);
	rc = session_problems(s) ? RN_DOCTOR_PROBLEMS : RN_DOCTOR_OK;
	if (!s->local.nnics || !s->remote.nnics) {
		fprintf(stderr, "roce-doctor: no NIC to check on %s (use --netdev there to name netdevs without RDMA)\n",
			!s->local.nnics ? "this host" : s->remote.host);
		rc = RN_DOCTOR_NODEV;
	}
	for (i = 0; i < s->local.nnics && rc == RN_DOCTOR_OK; i++)
		if (s->local.nics[i].nfindings)
			rc = RN_DOCTOR_PROBLEMS;
	for (i = 0; i < s->remote.nnics && rc == RN_DOCTOR_OK; i++)
		if (s->remote.nics[i].nfindings)
			rc = RN_DOCTOR_PROBLEMS;
	if (d->json)
		json_session(d, s, argv[0], rc);
	else
		print_session(d, s, argv[0]);
out:
	if (fd >= 0)
		close(fd);
	session_clear(s);
	free(s);
	return rc;
}
