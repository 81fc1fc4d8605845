// SPDX-License-Identifier: MIT
/*
 * "peer" and "serve": two hosts exchange inventories (per NIC: netdev, IP, MAC,
 * GID, MTUs, own verdict) and each checks every pair from its side with the
 * plugin's own connection check (rn_conn_check_*: route from our source IP out
 * of our NIC, our neighbour entry for the peer holds the MAC the peer
 * advertised, MTUs agree). The server sends its results to the client, which
 * prints the matrix (rows: local NICs, columns: remote NICs). Where both ends
 * have RDMA ports, an RC ping over the library's transport confirms the wire. The
 * steps and their order are the pair runner's (doctor_pair.h: peer is its A end,
 * serve its B end); this file keeps peer's transport, its clock and its report.
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

#include "doctor_result.h"
#include "rn_conncheck.h"
#include "rn_net.h"
#include "rn_wire.h"

struct session {
	struct rn_dw_inv local, remote;
	struct rn_pair_run run;    /* both sides' checks; the ARP probe; the probes' counts */
	struct rn_pair_probe probes[RN_DOCTOR_MAX_NICS][RN_DOCTOR_MAX_NICS];
	struct rn_pair_result res; /* the run's result, judged as the sweep's (session_record) */
	/* RDMA dropped at one NIC while its route and neighbours are right (firewall, H20). */
	struct rn_finding drops_local[RN_DOCTOR_MAX_NICS], drops_remote[RN_DOCTOR_MAX_NICS];
	/* Checks this side could not run: shown, and never counted as passed. */
	int nskips;
	struct {
		const char *check; /* "arp-probe", "rdma-probe" */
		char why[160];
	} skips[2];
};

/* Release what a session's findings own; the session is empty (zero) after. */
static void session_clear(struct session *s)
{
	int i;

	rn_dw_inv_clear(&s->local);
	rn_dw_inv_clear(&s->remote);
	s->run.probes = s->probes; /* a session's probes are its run's, run or not */
	rn_pair_run_clear(&s->run);
	rn_pair_result_clear(&s->res);
	for (i = 0; i < RN_DOCTOR_MAX_NICS; i++) {
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

/* The run into the session's pair result: one cell per NIC pair, as the sweep's. 0 or -ENOMEM. */
static int session_record(struct session *s)
{
	s->res.na = s->local.nnics;
	s->res.nb = s->remote.nnics;
	s->res.cells = calloc((size_t)RN_MAX(s->res.na * s->res.nb, 1), sizeof(*s->res.cells));
	if (!s->res.cells)
		return -ENOMEM;
	rn_pair_result_run(&s->res, &s->run, s->remote.host);
	s->res.status = 0; /* a run that failed never gets here: every probe's outcome is its own */
	return 0;
}

static const char *cell(const struct session *s, int i, int j, char *buf, size_t len)
{
	static const char *const words[] = {
		[RN_PAIR_TIMEOUT] = "rdma-timeout",
		[RN_PAIR_ERROR] = "rdma-error",
		[RN_PAIR_SLOW] = "bandwidth-low",
		[RN_PAIR_UNCHECKED] = "-",
		[RN_PAIR_OK] = "ok",
	};
	char lb[32];
	int cause;
	enum rn_pair_judged v = rn_pair_judge(&s->res.cells[i * s->res.nb + j], &cause);

	if (v == RN_PAIR_BY_A || v == RN_PAIR_BY_B)
		snprintf(buf, len, "%s%s", rn_cause_label((enum rn_cause)cause, lb, sizeof(lb)),
			 v == RN_PAIR_BY_B ? "(peer)" : "");
	else
		snprintf(buf, len, "%s", words[v]);
	return buf;
}

static int session_problems(const struct session *s)
{
	return rn_pair_result_bad(&s->res) > 0;
}

/* Both hosts' own NIC findings, then the pairs', grouped by cause; returns how many. */
static int print_all_findings(FILE *f, const struct session *s, int verbose)
{
	struct rn_doctor_item *it;
	char(*who)[128];
	int i, j, k, n = 0, nprobe = 0, max = 0;

	/* room for every finding there is: nothing left out */
	for (i = 0; i < s->local.nnics; i++)
		max += s->local.nics[i].nfindings + 2; /* + its RDMA diagnoses and drop */
	for (i = 0; i < s->remote.nnics; i++)
		max += s->remote.nics[i].nfindings + 1;
	for (i = 0; i < s->run.ours.npairs; i++)
		max += s->run.ours.pairs[i].nfindings;
	for (i = 0; i < s->run.theirs.npairs; i++)
		max += s->run.theirs.pairs[i].nfindings;
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
			snprintf(who[n], sizeof(who[n]), "%s:%s", s->local.host,
				 s->local.nics[i].netdev);
			it[n].who = who[n];
			it[n].f = &s->local.nics[i].findings[k];
		}
	for (i = 0; i < s->remote.nnics; i++)
		for (k = 0; k < s->remote.nics[i].nfindings; k++, n++) {
			snprintf(who[n], sizeof(who[n]), "%s:%s", s->remote.host,
				 s->remote.nics[i].netdev);
			it[n].who = who[n];
			it[n].host = s->remote.host;
			it[n].f = &s->remote.nics[i].findings[k];
		}
	for (i = 0; i < s->local.nnics; i++) {
		for (j = 0; j < s->remote.nnics; j++) {
			const struct rn_dw_pair *pa = pair_of(&s->run.ours, i, j);
			const struct rn_dw_pair *pb = pair_of(&s->run.theirs, j, i);
			const struct rn_pair_probe *p = &s->probes[i][j];

			for (k = 0; pa && k < pa->nfindings; k++, n++) {
				snprintf(who[n], sizeof(who[n]), "%s->%s:%s",
					 s->local.nics[i].netdev, s->remote.host,
					 s->remote.nics[j].netdev);
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
					 s->local.nics[i].netdev, s->remote.host,
					 s->remote.nics[j].netdev);
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
				p->ret && p->peer_ret ? "; peer: " :
				p->peer_ret           ? "peer: " :
							"",
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
	fprintf(f, " (pair checks %.1f ms)\n", s->run.check_ms);
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
	rn_json_str(j, "status",
		    p->status == 0 ? "ok" :
		    p->status == 1 ? "problem" :
				     "not-checked");
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

/* The NICs of @inv where RDMA dies (@drops[i].cause set), each a finding @maker made. */
static void json_drops(struct rn_json *j, const struct rn_dw_inv *inv,
		       const struct rn_finding *drops, const char *maker)
{
	int i;

	for (i = 0; i < inv->nnics; i++) {
		if (!drops[i].cause)
			continue;
		rn_json_obj(j, NULL);
		rn_json_str(j, "host", inv->host);
		rn_json_str(j, "netdev", inv->nics[i].netdev);
		rn_json_arr(j, "findings");
		rn_json_finding(j, &drops[i], maker);
		rn_json_close(j, ']');
		rn_json_close(j, '}');
	}
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
			json_pair(&j, "local_check", pair_of(&s->run.ours, i, k), s->local.host);
			json_pair(&j, "remote_check", pair_of(&s->run.theirs, k, i),
				  s->remote.host);
			rn_json_obj(&j, "rdma");
			rn_json_str(&j, "status",
				    !p->tried               ? "skipped" :
				    !p->ret && !p->peer_ret ? "ok" :
				    p->timeout              ? "timeout" :
							      "error");
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
	json_drops(&j, &s->local, s->drops_local, s->local.host);
	json_drops(&j, &s->remote, s->drops_remote, s->local.host);
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
	rn_json_int(&j, "arp_probed", s->run.arp_probed > 0 ? s->run.arp_probed : 0);
	rn_json_int(&j, "checks_skipped", s->nskips);
	rn_json_int(&j, "elapsed_us", (long long)(s->run.check_ms * 1000));
	rn_json_int(&j, "exit", rc);
	rn_json_close(&j, '}');
	if (rc == RN_DOCTOR_NODEV) {
		/* the tools' error object (rn_cli.h), beside the report that explains it */
		rn_cli_json_error_obj(
			&j, rc, NULL,
			"no NIC to check on one end (name netdevs with --netdev there)");
	}
	rn_json_end(&j);
}

/* ---- the RDMA probe, client side ------------------------------------------------------ */

/* The session as a grid of two hosts for rn_pair_drops: 0 is this one, 1 the remote. */
static int grid_nnics(const void *arg, int h)
{
	const struct rn_pair_result *p = arg;

	return h ? p->nb : p->na;
}

static const struct rn_pair_cell *grid_cell(const void *arg, int h1, int i1, int h2, int i2)
{
	const struct rn_pair_result *p = arg;

	if (h1 == h2)
		return NULL;
	return h1 ? &p->cells[i2 * p->nb + i1] : &p->cells[i1 * p->nb + i2];
}

/* NICs where RDMA dies while route and neighbours are right (rn_pair_drops). */
static void infer_drops(struct session *s)
{
	struct rn_pair_grid g = { 2, grid_nnics, grid_cell, &s->res };
	int i;

	for (i = 0; i < s->remote.nnics; i++)
		/* made here, about the remote's NIC: its fix runs there */
		if (rn_pair_drops(&g, 1, i, s->remote.nics[i].netdev, &s->drops_remote[i]) == 1)
			rn_finding_set_where(&s->drops_remote[i], s->remote.host, NULL, NULL, NULL);
	for (i = 0; i < s->local.nnics; i++)
		rn_pair_drops(&g, 0, i, s->local.nics[i].netdev, &s->drops_local[i]);
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
	int timeout_s;    /* --timeout, 0: none given */
	double queued_ms; /* time spent in the server's queue */
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
		snprintf(why, len,
			 "server busy: %d client%s ahead, it takes no more now%s (try "
			 "again later)",
			 ahead, ahead == 1 ? "" : "s", each);
	else
		snprintf(why, len,
			 "server busy: %d client%s ahead%s; the run's %s does not "
			 "wait for them (try again later, or with a longer --timeout)",
			 ahead, ahead == 1 ? "" : "s", each, run_limit(r, lim, sizeof(lim)));
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

/*
 * peer's transport (rn_pair_io): the connection, each message by the run's clock. The
 * server's inventory may come after its queue's WAITs, and what did not come in time
 * says which of the two deadlines ran out.
 */
struct peer_io {
	struct rn_dw_io t; /* first: the runner's view */
	struct run *r;
};

static int pio_send(struct rn_pair_io *io, uint16_t type, const void *buf, size_t len)
{
	struct peer_io *p = (struct peer_io *)io;
	const struct run *r = p->r;

	/* DONE is a courtesy: the report does not wait on it for long */
	return rn_dw_send(p->t.fd, type, buf, len,
			  type == RN_DW_DONE ? RN_MIN(rn_doctor_now_ms() + 1000, r->end) :
					       msg_by(r));
}

static int pio_recv(struct rn_pair_io *io, uint16_t type, struct rn_dw_msg *m, char *why,
		    size_t len)
{
	struct peer_io *p = (struct peer_io *)io;

	if (type == RN_DW_INV)
		return recv_inv(p->t.fd, p->r, m, why, len);
	if (type == RN_DW_CHECKS)
		return recv_type(p->t.fd, p->r, type, "the server's pair checks", m, why, len);
	return rn_dw_recv_by(p->t.fd, m, msg_by(p->r), why, len);
}

/* A probe needs its messages' time too: a second at least, else it is cut. */
static int pio_probe_ms(struct rn_pair_io *io)
{
	const struct run *r = ((struct peer_io *)io)->r;
	double left = r->end - rn_doctor_now_ms() - 1000;

	return left <= 0 ? -1 : (int)RN_MIN(RN_DOCTOR_PROBE_TIMEOUT_MS, left);
}

/* What the run could not do, as the report's "skipped" lines. */
static void skips(struct rn_doctor *d, struct session *s, const struct run *r)
{
	const struct rn_pair_run *x = &s->run;
	char lim[64];

	if (x->arp_probed == -EPERM)
		skip(s, "arp-probe",
		     "needs CAP_NET_RAW (run as root): who answers ARP for "
		     "each address (ARP flux) was not asked");
	else if (x->arp_probed < 0)
		skip(s, "arp-probe", "%s", strerror(-x->arp_probed));
	if (d->no_rdma)
		skip(s, "rdma-probe", "--no-rdma: the RC ping over each pair was not sent");
	else if (x->cut)
		skip(s, "rdma-probe",
		     "the run's %s came after %d of %d probes: %d pair%s not "
		     "pinged",
		     run_limit(r, lim, sizeof(lim)), x->probed, x->probed + x->cut, x->cut,
		     x->cut == 1 ? "" : "s");
	else if (!x->probed)
		skip(s, "rdma-probe", "no RDMA device on %s: the RC ping was not sent",
		     !x->local_rdma  ? "this host" :
		     !x->remote_rdma ? s->remote.host :
				       "both ends of any pair");
	else if (x->probed < x->pairs)
		skip(s, "rdma-probe", "%d of %d pairs have no RDMA port at one end: not pinged",
		     x->pairs - x->probed, x->pairs);
}

/* A run that stopped: what failed, in the step's words. */
static void run_failed(struct rn_doctor *d, struct session *s, struct run *r, const char *peer)
{
	struct rn_pair_run *x = &s->run;

	switch (x->step) {
	case RN_PAIR_STEP_INV:
		if (x->ret == -EBUSY)
			d->err_kind = "busy";
		rn_doctor_err(d, "%s: %s%s", peer, x->why,
			      x->ret == -ECONNRESET ? " (the serving doctor logs why it closed)" :
						      "");
		break;
	case RN_PAIR_STEP_PROBES:
		if (x->ret == -ETIMEDOUT)
			timed_out(r, rn_doctor_now_ms(), "the probe's answer", x->why,
				  sizeof(x->why));
		rn_doctor_err(d, "%s: RDMA probe: %s", peer, x->why);
		break;
	default:
		rn_doctor_err(d, "%s: %s", peer, x->why);
	}
}

int rn_doctor_cmd_peer(struct rn_doctor *d, int argc, char **argv)
{
	struct session *s;
	struct peer_io io;
	struct run r = { 0 };
	char why[RN_DW_WHY_MAX];
	int fd = -1, rc = RN_DOCTOR_ERROR, i, ret;

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
		snprintf(why, sizeof(why),
			 "no RDMA device on this host%s%.200s (use --netdev to name "
			 "netdevs without RDMA)",
			 d->skipped[0] ? ": " : "", d->skipped);
		fprintf(stderr, "roce-doctor: %s\n", why);
		rc = RN_DOCTOR_NODEV;
		if (d->json)
			rn_cli_json_error(d->out, rc, why);
		goto out;
	}
	rn_dw_inv_from_doctor(d, &s->local);
	s->local.caps = RN_DW_CAP_WAIT;
	ret = rn_dw_connect(argv[0], d->port,
			    RN_MIN(rn_doctor_now_ms() + RN_DOCTOR_IO_TIMEOUT_S * 1000.0, r.end),
			    &fd, why, sizeof(why));
	if (ret) {
		rn_doctor_err(d, "%s", why);
		goto out;
	}
	rn_dw_io_init(&io.t, fd, r.msg_ms, r.end);
	io.t.io.send = pio_send;
	io.t.io.recv = pio_recv;
	io.t.io.probe_ms = pio_probe_ms;
	io.r = &r;
	s->run.d = d;
	s->run.io = &io.t.io;
	s->run.flags = RN_PAIR_INV | RN_PAIR_CHECKS;
	s->run.local = &s->local;
	s->run.remote = &s->remote;
	s->run.probes = s->probes;
	if (rn_pair_run_a(&s->run)) {
		run_failed(d, s, &r, argv[0]);
		goto out;
	}
	skips(d, s, &r);
	if (session_record(s)) {
		rc = rn_doctor_err(d, "out of memory");
		goto out;
	}
	infer_drops(s);
	rc = session_problems(s) ? RN_DOCTOR_PROBLEMS : RN_DOCTOR_OK;
	if (!s->local.nnics || !s->remote.nnics) {
		fprintf(stderr,
			"roce-doctor: no NIC to check on %s (use --netdev there to name netdevs without RDMA)\n",
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
