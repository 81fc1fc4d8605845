// SPDX-License-Identifier: MIT
/*
 * The data path: clear-to-send FIFO, requests, completions.
 *
 * rn_irecv writes n CTS entries (address, size, rkey, tag, nreqs, seq = slot
 * sequence) into the sender's FIFO slot (seq - 1) % 32 with one RDMA WRITE; the
 * entries of receives posted back to back go in one WRITE (see cts_flush).
 * rn_isend looks only at the slot of its next sequence ("the first pending
 * multi-recv"), matches its tag among the entries not yet taken, and once all n
 * entries of the slot are matched posts the data: plain RDMA WRITEs split at
 * the device's max message size, spread over the QPs (one QP per message
 * round-robin, or every message split across all QPs), the last WR of every QP
 * used being a WRITE_WITH_IMM. imm = the size for n == 1; for n > 1 the sizes
 * are written into the receiver's sizes array before the imm on the same QP.
 * imm = RN_IMM_ERR tells the receiver its buffer was too small (no data is
 * written: an error, never a truncation).
 *
 * On a vNIC connection (rn_conn.h) QP q belongs to a member NIC at each end: its
 * WRs use that member's local keys and the peer member's rkeys (each CTS entry
 * carries the buffer's rkey on every receiver member), and every message is split
 * over all the QPs, so each NIC carries its share of every message.
 *
 * Receives are pre-posted per QP; an IMM completion on QP q belongs to the slot
 * expected next on q (slots are served in order and a QP delivers in order), so
 * no slot number has to travel in the immediate.
 *
 * Nothing here allocates or makes a system call while completions are flowing;
 * a comm with nothing to poll backs off (idle_backoff: spin, yield, then nap), and
 * when a comm is idle, test() looks at async events, the OOB socket (peer gone)
 * and the watchdog (a posted WR that never completes) every 100 ms.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rn_clock.h"
#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_conncheck.h"
#include "rn_counters.h"
#include "rn_errlog.h"
#include "rn_fostate.h"
#include "rn_gid.h"
#include "rn_log.h"
#include "rn_mr.h"
#include "rn_verbs.h"

#define RN_POLL_BATCH 16
#define RN_WR_BATCH 32
#define RN_CHECK_EVERY_NS (100ull * 1000000ull)
#define RN_GID_CHECK_NS (1000ull * 1000000ull) /* one query_gid_ex a second, when idle */

static int comm_fail(struct rn_comm *c, int err)
{
	if (!c->err)
		c->err = err;
	return c->err;
}

/* ---- send-side setup -------------------------------------------------------- */

/*
 * Request records are handed out fresh in order and only then recycled: a comm that never
 * has more than a few in flight (NCCL's usual 8 steps) touches a few of its 256 (45 KiB, of
 * a comm mapped on its own, whose untouched pages cost no memory: src/comm.c), which at
 * 1,024 connections is the difference between ~45 MiB resident and almost none.
 */
void rn_xfer_send_init(struct rn_send_comm *sc)
{
	sc->free_reqs = NULL;
	sc->fresh_reqs = 0;
}

static struct rn_req *send_req_get(struct rn_send_comm *sc)
{
	struct rn_req *r = sc->free_reqs;

	if (r)
		sc->free_reqs = r->next_free;
	else if (sc->fresh_reqs < (int)RN_ARRAY_SIZE(sc->reqs))
		r = &sc->reqs[sc->fresh_reqs++];
	if (r)
		memset(r, 0, sizeof(*r));
	return r;
}

static void send_req_put(struct rn_send_comm *sc, struct rn_req *r)
{
	r->type = RN_REQ_FREE;
	r->next_free = sc->free_reqs;
	sc->free_reqs = r;
}

int rn_xfer_recv_init(struct rn_recv_comm *rc)
{
	struct rn_comm *c = &rc->c;
	struct ibv_recv_wr wr, *bad;
	int q, i, ret;

	for (q = 0; q < c->nqps; q++) {
		rc->qp_next[q] = c->split ? 0 : (uint32_t)q;
		for (i = 0; i < RN_RECV_WRS; i++) {
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = (uint64_t)q << 3 | RN_WR_RECV;
			ret = rn_verbs_err(rn_verbs.post_recv(c->qps[q], &wr, &bad));
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* ---- errors ----------------------------------------------------------------- */

static const char *wr_kind_str(int kind)
{
	switch (kind) {
	case RN_WR_SEND:
		return "Send";
	case RN_WR_CTS:
		return "CTS";
	case RN_WR_FLUSH:
		return "Flush";
	case RN_WR_RECV:
		return "Recv";
	case RN_WR_CTRL:
		return "Ctrl";
	case RN_WR_RMA:
		return "RMA";
	default:
		return "?";
	}
}

/*
 * A peer process that dies closes its side channel and its QPs at the same moment
 * (both are file descriptors of the exiting process), so the FIN may trail the NAK
 * that failed our WR by a little: wait for it this long, once, on the error path.
 */
#define RN_PEER_GONE_GRACE_MS 200

/* 1 when the peer has closed the OOB socket (its process exited or crashed). */
static int peer_gone(const struct rn_comm *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN | POLLRDHUP };

	if (c->fd < 0)
		return 0;
	if (rn_oob_peer_alive(c->fd) == -ECONNRESET)
		return 1;
	/* nothing travels on the side channel after the handshake: readable means EOF/RST */
	if (poll(&p, 1, RN_PEER_GONE_GRACE_MS) <= 0)
		return 0;
	return rn_oob_peer_alive(c->fd) == -ECONNRESET;
}

/*
 * ARP and routes are right, yet nothing answered: what is left lies between the NICs or
 * on the peer, and the doctor's pair probe can tell which. Written into @buf (>= 256 B).
 */
static const char *healthy_path_drop(const struct rn_ip *peer, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	snprintf(buf, len,
		 "the route and neighbour to the peer look healthy now: something "
		 "drops RoCE v2 (UDP 4791) between the NICs (a firewall on either host, the "
		 "switch, an MTU black hole); check with: roce-doctor peer %s",
		 rn_ip_str(peer, ip, sizeof(ip)));
	return buf;
}

/* "[id]: message Fix: fix" of @f (each part where it runs), appended to @v's "diag". */

/*
 * One WARN per comm: status, what the WR was, both ends, and the diagnosis, whole. A
 * peer that closed its side channel explains any completion error, so that comes
 * first. A diagnosis too long for one log line follows on lines of its own.
 */
static int qp_index(const struct rn_comm *c, int k, uint32_t qp_num);

/*
 * What the path check cannot see: the NIC's address gone from its GID table or a port
 * that went down during the comm's life (src/events.c): 1 with @f filled.
 */
/*
 * 1 with gid-gone in @f when member @k's address left its GID table: flagged by the event
 * thread, or looked up now (GID_CHANGE is not always delivered: rxe coalesces them).
 */
/*
 * Member @k's address is still in its table, at @nic's index: when that is not the index
 * this comm's QPs were made with (rn_member.gid_index), its packets leave from another
 * entry on a hardware NIC (rxe carries them anyway). A live RC QP cannot change its
 * source GID, so the comm goes on; it is said once, by name, so that a failure that
 * follows has its cause in the log.
 */
static void gid_moved(struct rn_comm *c, int k, const struct rn_nic *nic)
{
	struct rn_member *m = &c->mem[k];
	struct rn_vars v = RN_VARS_INIT;
	struct rn_finding f = { 0 };
	char pfx[256], ip[INET6_ADDRSTRLEN];

	if (nic->gid_index == m->gid_index || m->gid_moved_said)
		return;
	m->gid_moved_said = 1;
	rn_vars_set(&v, "nic", "%s:%d", nic->ibdev, nic->port);
	rn_vars_set(&v, "dev", "%s", nic->netdev);
	rn_vars_set(&v, "ip", "%s", rn_ip_str(&nic->ip, ip, sizeof(ip)));
	rn_vars_set(&v, "old_index", "%d", m->gid_index);
	rn_vars_set(&v, "new_index", "%d", nic->gid_index);
	rn_finding_render(&f, RN_CAUSE_GID_MOVED, &v);
	snprintf(pfx, sizeof(pfx), RN_PFX "comm with %s (%s)", c->peer_str, c->rpeer[0].host);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
	rn_finding_clear(&f);
	rn_vars_free(&v);
}

static int gid_gone(struct rn_comm *c, int k, struct rn_finding *f)
{
	const struct rn_dev *dev = c->mem[k].dev;
	struct rn_vars v = RN_VARS_INIT;
	struct rn_nic nic = dev->nic; /* a look, not a change: the shared NIC stays as it is */
	int old, ret;

	if (rn_events_gid_gone(c->mem[k].ev, dev->nic.port, f))
		return 1;
	nic.findings = NULL;
	nic.nfindings = nic.findings_cap = 0;
	ret = rn_gid_refresh(dev->ctx, &nic, &old, &v);
	if (ret == -ENOENT)
		rn_finding_render(f, RN_CAUSE_GID_GONE, &v);
	else if (ret >= 0)
		gid_moved(c, k, &nic);
	rn_vars_free(&v);
	return ret == -ENOENT;
}

static int port_cause(struct rn_comm *c, int k, struct rn_finding *f)
{
	const struct rn_dev *dev = c->mem[k].dev;
	const struct rn_config *cfg = &c->eng->cfg;
	uint64_t budget = c->port_grace_ns > 1000000000ull ? c->port_grace_ns - 1000000000ull : 0;

	if (gid_gone(c, k, f))
		return 1;
	return !rn_events_flap_finding(c->mem[k].ev, &dev->nic, c->created_ns, budget, cfg->timeout,
				       cfg->retry_cnt, f);
}

/*
 * What member @k's counters did in the QP's retry window (src/counters.c): the cause
 * (NONE: nothing shown) rendered into @cf, and their summary into @out's "counters".
 */
static enum rn_cause counters_cause(struct rn_comm *c, int k, const struct rn_peer_facts *peer,
				    int lifetime, struct rn_finding *cf, struct rn_vars *out)
{
	const struct rn_dev *dev = c->mem[k].dev;
	uint64_t budget = c->port_grace_ns > 1000000000ull ? c->port_grace_ns - 1000000000ull : 0;
	struct rn_ctr_snap *now = rn_ctr_snap_take(), *base = NULL, *wide = NULL;
	struct rn_vars v = RN_VARS_INIT;
	enum rn_cause cause = RN_CAUSE_NONE;

	if (!now) {
		rn_vars_set(out, "counters", "counters unread: %s", strerror(errno));
		return cause;
	}
	/* the QP's retry window: the newest snapshot before it, else the comm's creation */
	base = lifetime ? NULL : rn_ctr_recent(now->t_ns > budget ? now->t_ns - budget : 0);
	if (base && base->t_ns < c->created_ns) {
		rn_ctr_snap_free(base);
		base = NULL;
	}
	/* where stray replies are counted: the history's oldest (a few s), or since creation */
	wide = rn_ctr_recent(0);
	if (wide && wide->t_ns < c->created_ns) {
		rn_ctr_snap_free(wide);
		wide = NULL;
	}
	rn_conn_vars(&dev->nic, peer, &v);
	cause = rn_ctr_judge(base ? base : c->ctr0, wide ? wide : c->ctr0, now, dev->nic.ibdev,
			     dev->nic.port, &v);
	if (cause != RN_CAUSE_NONE && rn_finding_render(cf, cause, &v))
		cause = RN_CAUSE_NONE;
	rn_vars_set(out, "counters", "%s",
		    rn_vars_get(&v, "counters") ? rn_vars_get(&v, "counters") : "counters: none");
	rn_vars_free(&v);
	rn_ctr_snap_free(base);
	rn_ctr_snap_free(wide);
	rn_ctr_snap_free(now);
	return cause;
}

/*
 * The comm failed (member @k against @peer): one record in the host's journal, so that the
 * cause outlives the job's log (roce-doctor, the scheduler's health check read it). Said
 * once a process when it cannot be written; never fails anything.
 */
static void journal(const struct rn_comm *c, int k, const struct rn_peer_facts *peer,
		    enum rn_cause cause, const char *status, const char *counters)
{
	static int told;
	const struct rn_dev *dev = c->mem[k].dev;
	struct rn_errlog_rec r = { 0 };
	char ip[64], pip[64];
	int ret;

	rn_ip_str(&dev->nic.ip, ip, sizeof(ip));
	rn_ip_str(&peer->ip, pip, sizeof(pip));
	r.cause = cause != RN_CAUSE_NONE ? rn_cause_id(cause) : NULL;
	r.status = status;
	r.ibdev = dev->nic.ibdev;
	r.port = dev->nic.port;
	r.netdev = dev->nic.netdev;
	r.ip = ip;
	r.peer_host = peer->host;
	r.peer_netdev = peer->netdev;
	r.peer_ip = pip;
	r.counters = counters;
	ret = rn_errlog_add(rn_fostate_dir(), &r);
	if (ret && !__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		rn_info(RN_SUB_NET,
			RN_PFX "the host's journal %s/%s was not written: %s "
			       "(NCCL_ROCE_STATE_DIR)",
			rn_fostate_dir(), RN_ERRLOG_FILE, strerror(-ret));
}

/*
 * WARN what member @k's counters show since the comm began (@lifetime) or over the QP's retry
 * window: the cause they name, when @cause_too and they name one, then the figures. The
 * comm fails of it: journalled with @cause, else the counters' when @cause_too, and @status.
 */
static void counters_warn(struct rn_comm *c, int k, const struct rn_peer_facts *peer, int lifetime,
			  int cause_too, const char *pfx, enum rn_cause cause, const char *status)
{
	struct rn_finding f = { 0 };
	struct rn_vars cv = RN_VARS_INIT;
	enum rn_cause cc = counters_cause(c, k, peer, lifetime, &f, &cv);

	if (cc != RN_CAUSE_NONE && cause_too)
		rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
	rn_warn(RN_SUB_NET, "%s: %s", pfx, rn_vars_get(&cv, "counters"));
	journal(c, k, peer,
		cause != RN_CAUSE_NONE ? cause :
		cause_too              ? cc :
					 RN_CAUSE_NONE,
		status, rn_vars_get(&cv, "counters"));
	rn_vars_free(&cv);
	rn_finding_clear(&f);
}

/* A value, "" when unset (out of memory). */
static const char *vget(const struct rn_vars *v, const char *key)
{
	const char *s = rn_vars_get(v, key);

	return s ? s : "";
}

/*
 * An error completion on a comm that can move (failover) moves it, unless the peer closed
 * its side channel: it died, no move for that. Looked at without the FIN's grace
 * (peer_gone): a move must not wait, and a dead peer fails it anyway. 1 when it moved.
 */
static int wc_moves(struct rn_comm *c, int k, const struct ibv_wc *wc)
{
	char why[160];

	if (!c->fo ||
	    !(rn_failover_status(wc->status) ||
	      /* rxe fails what it sends meanwhile with a local error when its netdev is set down */
	      (c->mem[k].ev && rn_events_dev_err(c->mem[k].ev, c->mem[k].dev->nic.port))) ||
	    (c->fd >= 0 && rn_oob_peer_alive(c->fd) == -ECONNRESET))
		return 0;
	snprintf(why, sizeof(why), "%s on a %s (vendor_err %u)", rn_wc_status_str(wc->status),
		 wr_kind_str(RN_WR_KIND(wc->wr_id)), wc->vendor_err);
	/* no pair left: said with every NIC's cause; the diagnosis follows as before */
	return rn_failover_begin(c, -EREMOTEIO, why) != 0;
}

/* An error completion's diagnosis: the findings its WARN names, in order, and its words. */
struct wc_diag {
	struct rn_finding died, path, port, ctr;
	const struct rn_finding *logged[4];
	int nlog;
	struct rn_vars v; /* diag, extra (what is no finding: hints), counters */
};

/* Finding @f named in the diagnosis after @sep. */
static void note(struct wc_diag *d, const char *sep, const struct rn_finding *f)
{
	rn_finding_append(&d->v, "diag", sep, f, NULL);
	d->logged[d->nlog++] = f;
}

/*
 * Why @wc failed on @dev towards @peer, into @d: a dead peer first, then a port that went
 * away (it explains whatever the route looks like now), the path, the counters.
 */
static void wc_diagnose(struct rn_comm *c, int k, const struct ibv_wc *wc, const struct rn_dev *dev,
			const struct rn_peer_facts *peer, struct wc_diag *d)
{
	char pip[512];
	int ret, gone, has_port;
	enum rn_cause cc;

	gone = peer_gone(c);
	has_port = port_cause(c, k, &d->port);
	ret = rn_path_check.diagnose(&dev->nic, peer, &d->path);
	cc = counters_cause(c, k, peer, 0, &d->ctr, &d->v);
	rn_vars_set(&d->v, "diag", "%s", "diagnosis");
	rn_vars_set(&d->v, "extra", "%s", "");
	if (gone) {
		struct rn_vars pv = RN_VARS_INIT;

		rn_conn_vars(&dev->nic, peer, &pv);
		rn_finding_render(&d->died, RN_CAUSE_PEER_DIED, &pv);
		rn_vars_free(&pv);
		note(d, " ", &d->died);
		/* the peer may have died of this very path: say what it shows, too */
		if (has_port) {
			note(d, "; the path to it also shows ", &d->port);
		} else if (ret == 0) {
			note(d, "; the path to it also shows ", &d->path);
		} else if (cc != RN_CAUSE_NONE) {
			note(d, "; the counters also show ", &d->ctr);
		} else if (ret == -ENOENT && wc->status == IBV_WC_RETRY_EXC_ERR) {
			/* Both ends see status 12 when RoCE is dropped between them, and the one
			 * that reports second finds the other already gone: name the drop too. */
			rn_vars_set(&d->v, "extra", "if it failed first with this same status, %s",
				    healthy_path_drop(&peer->ip, pip, sizeof(pip)));
		}
	} else if (has_port) {
		note(d, " ", &d->port);
	} else if (ret == 0) {
		note(d, " ", &d->path);
	} else if (ret == -ENOENT && cc != RN_CAUSE_NONE) {
		note(d, " ", &d->ctr);
	} else if (ret == -ENOENT && wc->status == IBV_WC_RETRY_EXC_ERR) {
		rn_vars_set(&d->v, "diag", "diagnosis: the peer process may have died, or %s",
			    healthy_path_drop(&peer->ip, pip, sizeof(pip)));
	} else if (ret == -ENOENT) {
		rn_vars_set(&d->v, "diag",
			    "diagnosis: the route and neighbour to the peer look "
			    "healthy now");
	} else {
		rn_vars_set(&d->v, "diag", "diagnosis unavailable: %s", strerror(-ret));
	}
}

/*
 * The WARN of @wc with diagnosis @d and the figures behind it: one line when it fits,
 * else the findings on lines of their own, whole, whatever their length.
 */
static void wc_warn(struct rn_comm *c, const struct ibv_wc *wc, const struct rn_dev *dev,
		    const struct rn_peer_facts *peer, const struct wc_diag *d)
{
	const struct rn_vars *v = &d->v;
	char lg[48], rg[48], pfx[256];
	char *line = NULL;
	size_t cn;
	int n, i;

	/* opcode and byte_len are not valid in an error completion: the kind comes from wr_id */
	n = asprintf(&line,
		     RN_PFX "Got completion from peer %s (%s) with status=%s(%d) req=%s "
			    "vendor_err=%u qp=0x%x localGid %s remoteGid %s hca %s:%d; %s%s%s",
		     c->peer_str, peer->host[0] ? peer->host : "unknown host",
		     rn_wc_status_str(wc->status), wc->status, wr_kind_str(RN_WR_KIND(wc->wr_id)),
		     wc->vendor_err, wc->qp_num, rn_gid_str(&dev->nic.gid, lg, sizeof(lg)),
		     rn_gid_str(&peer->gid, rg, sizeof(rg)), dev->nic.ibdev, dev->nic.port,
		     rn_vars_get(v, "diag") ? rn_vars_get(v, "diag") : "diagnosis unavailable",
		     vget(v, "extra")[0] ? "; " : "", vget(v, "extra"));
	if (n < 0) {
		line = NULL;
		n = 0;
	}
	snprintf(pfx, sizeof(pfx), RN_PFX "diagnosis for peer %s", c->peer_str);
	/* the figures behind it, whatever was found: on the line when they fit */
	cn = strlen(vget(v, "counters"));
	if (line && n + cn + 2 <= 900) {
		rn_warn(RN_SUB_NET, "%s; %s", line, vget(v, "counters"));
	} else if (line && n <= 900) {
		rn_warn(RN_SUB_NET, "%s", line);
		rn_warn(RN_SUB_NET, "%s: %s", pfx, vget(v, "counters"));
	} else {
		rn_warn(RN_SUB_NET,
			RN_PFX "Got completion from peer %s (%s) with status=%s(%d) "
			       "req=%s vendor_err=%u qp=0x%x hca %s:%d; diagnosis follows",
			c->peer_str, peer->host[0] ? peer->host : "unknown host",
			rn_wc_status_str(wc->status), wc->status,
			wr_kind_str(RN_WR_KIND(wc->wr_id)), wc->vendor_err, wc->qp_num,
			dev->nic.ibdev, dev->nic.port);
		for (i = 0; i < d->nlog; i++)
			rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, d->logged[i]);
		if (!d->nlog)
			rn_warn(RN_SUB_NET, "%s: %s", pfx,
				rn_vars_get(v, "diag") ? rn_vars_get(v, "diag") :
							 "diagnosis unavailable");
		if (vget(v, "extra")[0])
			rn_warn(RN_SUB_NET, "%s: %s", pfx, vget(v, "extra"));
		rn_warn(RN_SUB_NET, "%s: %s", pfx, vget(v, "counters"));
	}
	free(line);
}

/*
 * A data WRITE the receiver refused (REM_ACCESS_ERR): what it targeted, from the receiver's
 * clear-to-send entry (the key for peer member @rm, whose QP refused it), so that a key of
 * another NIC or a buffer deregistered in use can be told apart from the other end's log
 * (it traces the keys it writes after a move).
 */
static void access_extra(struct rn_comm *c, const struct ibv_wc *wc, int rm, struct wc_diag *d)
{
	struct rn_send_comm *sc = (struct rn_send_comm *)c;
	const struct rn_send_slot *s;
	const struct rn_cts *e;

	if (c->role != RN_ROLE_SEND || wc->status != IBV_WC_REM_ACCESS_ERR ||
	    RN_WR_KIND(wc->wr_id) != RN_WR_SEND)
		return;
	s = RN_WR_PTR(wc->wr_id);
	if (!s->seq || !s->n)
		return;
	e = rn_cts_at(sc->fifo, c->cts_len, s->seq - 1, 0);
	rn_vars_set(&d->v, "extra",
		    "the receiver refused slot %u's write into its buffer of %u bytes at "
		    "%#llx, rkey %#x, as its clear-to-send entry said%s (after %d move(s) "
		    "of this comm): a buffer deregistered while in use, or a key of "
		    "another of its NICs",
		    s->seq, e->size, (unsigned long long)e->addr, e->rkey[rm],
		    s->n > 1 ? " (and its sizes)" : "", c->fo ? c->fo->moves : 0);
}

/* @wc came from member @k's CQ. */
static void wc_error(struct rn_comm *c, int k, const struct ibv_wc *wc)
{
	const struct rn_peer_facts *peer = &c->rpeer[0];
	struct wc_diag d = { 0 };
	const struct rn_dev *dev;
	int q;

	if (c->err) /* the first error explains; flushes after it are its echo */
		return;
	/* a vNIC's member pair out: the comm goes on over the others (src/vfail.c) */
	if (c->vf && rn_vfail_wc(c, k, wc))
		return;
	if (c->moving)
		return; /* the old pair's flushes: the move under way answers them */
	if (wc_moves(c, k, wc))
		return;
	c->wc_status = (int)wc->status;
	comm_fail(c, -EREMOTEIO);
	/* a vNIC's failing QP names its own pair of NICs */
	dev = c->mem[k].dev;
	q = qp_index(c, k, wc->qp_num);
	if (q >= 0)
		peer = &c->rpeer[c->qp_rmem[q]];
	wc_diagnose(c, k, wc, dev, peer, &d);
	access_extra(c, wc, q >= 0 ? c->qp_rmem[q] : 0, &d); /* the key of the QP's peer NIC */
	wc_warn(c, wc, dev, peer, &d);
	/* the journal's cause: the first finding the WARN named */
	journal(c, k, peer, d.nlog ? d.logged[0]->cause : RN_CAUSE_NONE,
		rn_wc_status_str(wc->status), vget(&d.v, "counters"));
	rn_vars_free(&d.v);
	rn_finding_clear(&d.died);
	rn_finding_clear(&d.path);
	rn_finding_clear(&d.port);
	rn_finding_clear(&d.ctr);
}

/*
 * The data QP of member @k numbered @qp_num (-1: none, e.g. the flush QP). QP numbers
 * are per device: two members' QPs may share one, so the CQ's member tells them apart.
 */
static int qp_index(const struct rn_comm *c, int k, uint32_t qp_num)
{
	int q;

	if (rn_unlikely(c->qp_any)) { /* a vNIC that lost a pair: its QPs left, in order */
		for (q = 0; q < c->nqps; q++)
			if (c->qp_mem[q] == k && c->qps[q]->qp_num == qp_num)
				return q;
		return -1;
	}
	for (q = k; q < c->nqps; q += c->nmem)
		if (c->qps[q]->qp_num == qp_num)
			return q;
	return -1;
}

/* ---- completions ------------------------------------------------------------ */

static void recv_imm(struct rn_recv_comm *rc, int q, uint32_t imm)
{
	struct rn_comm *c = &rc->c;
	uint32_t k = rc->qp_next[q];
	struct rn_req *r = &rc->reqs[k % RN_SLOTS];
	struct ibv_recv_wr wr, *bad;
	int i;

	if (rn_unlikely(imm == RN_IMM_CTRL || imm == RN_IMM_REC)) {
		if (c->vf)
			rn_vfail_ctrl(c, q, imm);    /* a vNIC's: the sender's move request */
		else
			rn_failover_ctrl(c, q, imm); /* a failover message, on the pair in use */
		return;
	}
	if (r->type != RN_REQ_RECV || r->seq != k || r->pending <= 0) {
		rn_warn(RN_SUB_NET,
			RN_PFX "peer %s wrote slot %u that has no receive posted: "
			       "protocol error",
			c->peer_str, k);
		comm_fail(c, -EPROTO);
		return;
	}
	rc->qp_next[q] += c->split ? 1 : (uint32_t)c->nqps;
	if (imm == RN_IMM_ERR) {
		if (!c->err)
			rn_warn(RN_SUB_NET,
				RN_PFX "peer %s (%s) sent more than the receive of %d "
				       "buffer(s) posted for it (tag %d): message size mismatch",
				c->peer_str, c->rpeer[0].host, r->n,
				rn_cts_at(rc->stage, c->cts_len, k, 0)->tag);
		comm_fail(c, -EMSGSIZE);
	} else if (r->n == 1) {
		r->sizes[0] = (int)imm;
	} else if (r->pending == 1) {
		for (i = 0; i < r->n; i++)
			r->sizes[i] = __atomic_load_n(&rc->sizes[k % RN_SLOTS][i],
						      __ATOMIC_ACQUIRE);
	}
	if (--r->pending == 0)
		r->done = 1;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)q << 3 | RN_WR_RECV;
	if (rn_verbs.post_recv(c->qps[q], &wr, &bad) && !c->draining)
		comm_fail(c, -EIO);
}

/* A signalled WR of data QP @q completed: its watchdog clock starts over. */
static void qp_progress(struct rn_comm *c, int q)
{
	if (c->qp_out[q])
		c->qp_out[q]--;
	c->qp_wait_ns[q] = 0;
}

/* The WRs send slot @s posted on QP @q (see rn_send_comm). */
static inline uint16_t *slot_wrs(struct rn_send_comm *sc, const struct rn_send_slot *s, int q)
{
	return &sc->slot_wrs[q][s - sc->slots];
}

/* Send slot @s's WRs on every QP forgotten (its slot starts again). */
static void slot_wrs_clear(struct rn_send_comm *sc, const struct rn_send_slot *s)
{
	int q;

	for (q = 0; q < sc->c.nqps; q++)
		*slot_wrs(sc, s, q) = 0;
}

/* A completion from member @k's CQ. */
static void handle_wc(struct rn_comm *c, int k, const struct ibv_wc *wc)
{
	int kind = RN_WR_KIND(wc->wr_id);
	int q = qp_index(c, k, wc->qp_num);

	if (wc->status != IBV_WC_SUCCESS) {
		wc_error(c, k, wc);
		return;
	}
	switch (kind) {
	case RN_WR_SEND: {
		struct rn_send_slot *s = RN_WR_PTR(wc->wr_id);
		int i;

		if (q >= 0) {
			uint16_t *w = slot_wrs((struct rn_send_comm *)c, s, q);

			c->sq_used[q] -= *w;
			*w = 0;
			qp_progress(c, q);
		}
		c->outstanding--;
		if (--s->pending == 0) {
			c->outstanding_bytes -= s->bytes;
			s->bytes = 0;
			for (i = 0; i < s->n; i++)
				if (s->reqs[i])
					s->reqs[i]->done = 1;
			s->seq = 0;
		}
		break;
	}
	case RN_WR_CTS:
		/* a signaled CTS retires the unsignaled ones before it on its QP too */
		if (q >= 0) {
			c->sq_used[q] -= (int)(wc->wr_id >> 3);
			qp_progress(c, q);
		}
		c->outstanding--;
		break;
	case RN_WR_FLUSH: {
		struct rn_req *r = RN_WR_PTR(wc->wr_id);

		c->outstanding--;
		if (--r->pending == 0) { /* a read per member */
			((struct rn_recv_comm *)c)->flush_used--;
			r->done = 1;
		}
		break;
	}
	case RN_WR_RECV:
		if (c->role == RN_ROLE_RECV && q >= 0)
			recv_imm((struct rn_recv_comm *)c, q, be32toh(wc->imm_data));
		else if (q >= 0 && c->vf) /* a sender's receives take failover messages only */
			rn_vfail_ctrl(c, q, be32toh(wc->imm_data));
		else if (q >= 0)
			rn_failover_ctrl(c, q, be32toh(wc->imm_data));
		break;
	case RN_WR_CTRL:                 /* a failover message of ours went out */
		if (q >= 0 && (wc->wr_id >> 11 & 1) && c->sq_used[q] > 0)
			c->sq_used[q]--; /* posted on the pair in use (src/failover.c) */
		break;
	default:
		comm_fail(c, -EPROTO);
	}
}

void rn_xfer_handle_wc(struct rn_comm *c, int k, const struct ibv_wc *wc)
{
	handle_wc(c, k, wc);
}

static int comm_check(struct rn_comm *c)
{
	if (rn_unlikely(c->err))
		return c->err;
	int a = __atomic_load_n(&c->async_err, __ATOMIC_ACQUIRE);

	if (rn_unlikely(a))
		return comm_fail(c, a);
	return 0;
}

/*
 * How long posted work may go without a completion before the QP counts as stalled:
 * the QP's own retry time (stall_ns) plus the time the payload in flight takes at a
 * floor rate, so one large write on a slow link (rxe moves 5-25 MB/s) is not a stall.
 * All of it, not the oldest message only: a retry goes back to the first packet not
 * acknowledged and sends everything after it again (go-back-N), so the QP's own error
 * (RETRY_EXC, with its diagnosis) takes that long to come.
 */
#define RN_WATCHDOG_NS_PER_BYTE 1000ull /* a floor of 1 byte/us, about 1 MB/s */

uint64_t rn_comm_stall_bound(const struct rn_comm *c)
{
	return c->stall_ns + c->outstanding_bytes * RN_WATCHDOG_NS_PER_BYTE;
}

/* The payload in flight on data QP @q: its share of each slot posted there. */
static uint64_t qp_bytes(const struct rn_comm *c, int q)
{
	const struct rn_send_comm *sc = (const struct rn_send_comm *)c;
	uint64_t sum = 0;
	int i;

	if (c->role != RN_ROLE_SEND || !c->outstanding_bytes)
		return 0;
	for (i = 0; i < RN_SLOTS; i++) {
		const struct rn_send_slot *s = &sc->slots[i];

		if (s->posted && s->pending > 0 && sc->slot_wrs[q][i]) /* a split slot: its share */
			sum += s->bytes / (uint64_t)(c->split ? c->nqps : 1) + 1;
	}
	return sum;
}

/*
 * One data QP with work posted and no completion for its bound, while the comm's other QPs
 * may go on completing (a vNIC's other NIC, the other QPs of a split message): the comm-wide
 * clock never runs out then, and a message split over them never completes. Fails the comm
 * naming the QP's NIC, with its counters.
 */
static void qp_watchdog(struct rn_comm *c, uint64_t now)
{
	int q;

	for (q = 0; q < c->nqps && !c->err; q++) {
		uint64_t bound;

		if (!c->qp_out[q]) {
			c->qp_wait_ns[q] = 0;
			continue;
		}
		if (!c->qp_wait_ns[q]) {
			c->qp_wait_ns[q] = now;
			continue;
		}
		bound = c->stall_ns + qp_bytes(c, q) * RN_WATCHDOG_NS_PER_BYTE;
		if (now - c->qp_wait_ns[q] > bound) {
			int k = c->qp_mem[q];
			const struct rn_dev *dev = c->mem[k].dev;
			char pfx[256];

			rn_warn(RN_SUB_NET,
				RN_PFX "%s:%d: no completion on QP %d of %d from %s "
				       "(%s) for %llu ms with %d WRs posted: the QP stalled",
				dev->nic.ibdev, dev->nic.port, q, c->nqps, c->peer_str,
				c->rpeer[0].host,
				(unsigned long long)((now - c->qp_wait_ns[q]) / 1000000),
				c->qp_out[q]);
			snprintf(pfx, sizeof(pfx), RN_PFX "diagnosis for %s", c->peer_str);
			counters_warn(c, k, &c->rpeer[c->qp_rmem[q]], 0, 1, pfx, RN_CAUSE_NONE,
				      "stall");
			comm_fail(c, -ETIMEDOUT);
		}
	}
}

/*
 * CTS writes go unsignaled (no completion to poll; the wire still carries their ACKs) while
 * the comm has a signaled WR outstanding; one in RN_CTS_SIGNAL_EVERY per QP is signaled anyway
 * and retires the others' send queue slots. A CTS posted on an idle comm is signaled, so
 * the watchdog always has a completion to wait for: a path that silently stalls is still
 * found (an unsignaled WR that fails completes with its error all the same).
 */
#define RN_CTS_SIGNAL_EVERY 16

static int cts_every(const struct rn_comm *c)
{
	return RN_MIN(RN_CTS_SIGNAL_EVERY, RN_MAX(1, c->sq_cap / 2));
}

static int cts_post(struct rn_recv_comm *rc, int q, uint64_t laddr, uint32_t len, uint64_t raddr,
		    int force_signal)
{
	struct rn_comm *c = &rc->c;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	int sig = force_signal || rc->cts_unsig[q] + 1 >= cts_every(c), ret;

	memset(&wr, 0, sizeof(wr));
	sge.addr = laddr;
	sge.length = len;
	sge.lkey = c->mem[c->qp_mem[q]].ctrl_mr->lkey;
	wr.wr_id = sig ? (uint64_t)(rc->cts_unsig[q] + 1) << 3 | RN_WR_CTS : RN_WR_CTS;
	wr.sg_list = len ? &sge : NULL;
	wr.num_sge = len ? 1 : 0;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = (sig ? IBV_SEND_SIGNALED : 0) |
			(len && (int)len <= rc->cts_inline ? IBV_SEND_INLINE : 0);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rc->rfifo_rkey[c->qp_rmem[q]];
	ret = rn_verbs_err(rn_verbs.post_send(c->qps[q], &wr, &bad));
	if (ret)
		return ret;
	c->sq_used[q]++;
	if (sig) {
		rc->cts_unsig[q] = 0;
		c->qp_out[q]++;
		if (c->outstanding++ == 0)
			c->last_progress_ns = 0;
	} else {
		rc->cts_unsig[q]++;
	}
	return 0;
}

/* The QP slot @k's CTS goes on: by sequence, or the first one left (a vNIC that lost a pair). */
static int cts_qp(const struct rn_recv_comm *rc, uint32_t k)
{
	const struct rn_comm *c = &rc->c;
	int q = (int)(k % (uint32_t)c->nqps);

	return rn_unlikely(c->vf != NULL) ? rn_vfail_live_qp(c, q) : q;
}

/*
 * The CTS entries of the @nslots contiguous slots from sequence @k (the last one's receive
 * of @last_n entries) in one WRITE on QP @q: each slot's whole row but the last's, whose
 * entries past a slot's n are stale and never read. 0 or -errno.
 */
static int cts_write_span(struct rn_recv_comm *rc, int q, uint32_t k, int nslots, int last_n,
			  int force_signal)
{
	size_t row = (size_t)RN_MAX_RECVS * (size_t)rc->c.cts_len;
	uint32_t len = (uint32_t)((size_t)(nslots - 1) * row + (size_t)last_n * rc->c.cts_len);

	return cts_post(rc, q, (uintptr_t)rn_cts_at(rc->stage, rc->c.cts_len, k, 0), len,
			rc->rfifo_addr + (k % RN_SLOTS) * row, force_signal);
}

/*
 * CTS coalescing. NCCL posts up to NCCL_STEPS receives ahead, one per proxy pass, and
 * tests only once a pass posts nothing (transport/net.cc recvProxyProgress). A receive
 * posted while the one before it is still outstanding gives the sender nothing to do
 * sooner (it serves the slots in order), so rn_irecv leaves its CTS pending; the receives
 * pending are contiguous slots (cts_first, cts_npend of them) and go in one RDMA WRITE of
 * their span (the entries past each slot's n are stale and never read: the sender reads
 * nreqs first). A receive posted with no earlier one outstanding writes at once, with any
 * pending before it, as does one whose slot wraps the ring (the pending ones go first).
 *
 * The bound, the rule every caller relies on: pending entries are written at the start
 * of every rn_test and every progress pass of the comm (rn_comm_progress, which a busy
 * irecv runs too). NCCL tests every request it posted until it is done, in order, so the
 * oldest receive's test writes them; a caller that posts one receive and only tests it
 * writes it then, or at irecv when nothing else was outstanding. Nothing else of the
 * receiver waits on them.
 *
 * A move (src/failover.c, src/vfail.c) writes every receive not complete again on the new
 * QPs (rn_xfer_recv_rewind): the pending ones are among them and are pending no more.
 *
 * The sender trusts an entry once its own seq shows, so no entry may straddle two packets
 * of the write: the write starts at a slot's first entry, entries are 32 or 64 bytes and
 * every RoCE MTU (256..4096) is a multiple of 64, so each entry lies whole in one packet,
 * as the single-slot writes did.
 *
 * A full send queue leaves them pending for the next pass (the completions free it; one
 * CTS in cts_every() is signalled). 0, or the comm's error when the post fails.
 */
static int cts_flush(struct rn_recv_comm *rc)
{
	struct rn_comm *c = &rc->c;
	uint32_t k = rc->cts_first;
	const struct rn_req *last = &rc->reqs[(k + (uint32_t)rc->cts_npend - 1) % RN_SLOTS];
	int q = cts_qp(rc, k), ret;

	if (c->sq_used[q] >= c->sq_cap)
		return 0;
	ret = cts_write_span(rc, q, k, rc->cts_npend, last->n, !c->outstanding);
	if (ret) {
		rn_warn(RN_SUB_NET, RN_PFX "posting a CTS to %s failed: %s", c->peer_str,
			strerror(-ret));
		return comm_fail(c, ret);
	}
	rc->cts_npend = 0;
	return 0;
}

/* @c's pending CTS entries written, if it is a receive comm with any: 0 or the comm's error. */
static int cts_flush_pending(struct rn_comm *c)
{
	struct rn_recv_comm *rc = (struct rn_recv_comm *)c;

	return c->role == RN_ROLE_RECV && rc->cts_npend ? cts_flush(rc) : 0;
}

/*
 * Member @k's port has been down longer than the QPs' retry budget: the comm fails with
 * the diagnosis and the port's figures (a busy comm would have failed through its
 * completions by now).
 */
static void port_down_fail(struct rn_comm *c, int k, uint64_t down)
{
	const struct rn_dev *dev = c->mem[k].dev;
	struct rn_finding f = { 0 };
	enum rn_cause cause;
	char pfx[160];

	rn_warn(RN_SUB_NET,
		RN_PFX "%s:%d: the port has been down for %llu ms, "
		       "longer than the QP retry budget (NCCL_IB_TIMEOUT=%d, "
		       "NCCL_IB_RETRY_CNT=%d); comm with %s (%s) fails; diagnosis follows",
		dev->nic.ibdev, dev->nic.port, (unsigned long long)(down / 1000000),
		c->eng->cfg.timeout, c->eng->cfg.retry_cnt, c->peer_str, c->rpeer[0].host);
	if (!port_cause(c, k, &f)) {
		struct rn_vars v = RN_VARS_INIT;

		rn_conn_vars(&dev->nic, &c->rpeer[k % c->rmem], &v);
		rn_finding_render(&f, RN_CAUSE_LINK_DOWN, &v);
		rn_vars_free(&v);
	}
	snprintf(pfx, sizeof(pfx), RN_PFX "diagnosis for %s", c->peer_str);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
	cause = f.cause;
	rn_finding_clear(&f);
	/* the figures: link downs, lost carriers, what was sent meanwhile */
	counters_warn(c, k, &c->rpeer[k % c->rmem], 1, 0, pfx, cause, "port-down");
	comm_fail(c, -ENETDOWN);
}

/*
 * Member @k's GID, when an address event says it may be gone or its periodic check is
 * due: a comm that can move moves, else it fails by name (its QPs still name the GID the
 * kernel took away). 1 when the comm moved: slow_checks ends.
 */
static int gid_check(struct rn_comm *c, int k)
{
	const struct rn_dev *dev = c->mem[k].dev;
	struct rn_finding f = { 0 };
	char pfx[256];

	if (!gid_gone(c, k, &f))
		return 0;
	if (c->fo || c->vf) {
		char why[200];

		snprintf(why, sizeof(why), "[%s] %s", rn_cause_id(f.cause),
			 f.msg ? f.msg : "its address left the GID table");
		if (c->vf ? rn_vfail_member(c, k, why) :
			    rn_failover_begin(c, -EADDRNOTAVAIL, why)) {
			rn_finding_clear(&f);
			return 1;
		}
	}
	snprintf(pfx, sizeof(pfx), RN_PFX "%s:%d: comm with %s (%s) fails", dev->nic.ibdev,
		 dev->nic.port, c->peer_str, c->rpeer[0].host);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
	journal(c, k, &c->rpeer[k % c->rmem], f.cause, "gid-gone", NULL);
	rn_finding_clear(&f);
	comm_fail(c, -EADDRNOTAVAIL);
	return 0;
}

/*
 * Member NIC @k: one that is down or dead fails the comm, or moves it when it can (a
 * failover pair, a vNIC's other members). 1 when the comm moved: slow_checks ends.
 */
static int member_check(struct rn_comm *c, int k, uint64_t now, int gid_due)
{
	const struct rn_dev *dev = c->mem[k].dev;
	struct rn_evdev *ev = c->mem[k].ev;
	uint64_t down;

	if (!ev || (c->vf && rn_vfail_member_out(c, k)))
		return 0; /* a vNIC's member out: the comm went on without it */
	down = rn_events_port_down_ns(ev, dev->nic.port, now);
	if ((c->fo || c->vf) && !c->err && (rn_events_dev_fatal(ev) || down)) {
		char why[96];

		/* a pair to move to: no waiting for the port to come back */
		snprintf(why, sizeof(why), "%s",
			 rn_events_dev_fatal(ev) ? "device fatal error" : "port down");
		if (c->vf ? rn_vfail_member(c, k, why) :
			    rn_failover_begin(c, rn_events_dev_fatal(ev) ? -EIO : -ENETDOWN, why))
			return !c->vf; /* a vNIC's other members may be down too */
	}
	if (rn_events_dev_fatal(ev) && !c->err) {
		rn_warn(RN_SUB_NET,
			RN_PFX "%s:%d: device fatal error; comm with %s (%s) "
			       "fails",
			dev->nic.ibdev, dev->nic.port, c->peer_str, c->rpeer[0].host);
		journal(c, k, &c->rpeer[k % c->rmem], RN_CAUSE_NONE, "device-fatal", NULL);
		comm_fail(c, -EIO);
	} else if (down > c->port_grace_ns && !c->err) {
		port_down_fail(c, k, down);
	} else if (!c->err && (rn_events_gid_gone(ev, dev->nic.port, NULL) || gid_due)) {
		return gid_check(c, k);
	}
	return 0;
}

/*
 * The side channel after a move: it left from the failed NIC's address and TCP gave up on
 * it. That is the path, not the peer: a dead peer is still told by the QPs.
 */
static void side_channel_check(struct rn_comm *c)
{
	if (c->fd < 0 || c->err || !((c->fo && c->fo->moves) || rn_vfail_moved(c)) ||
	    rn_oob_peer_alive(c->fd) != -ETIMEDOUT)
		return;
	rn_info(RN_SUB_NET,
		RN_PFX "comm with %s: the side channel over the failed NIC "
		       "timed out; the peer's death is now seen through the QPs only",
		c->peer_str);
	close(c->fd);
	c->fd = -1;
}

/* A peer that closed its side channel fails the comm, but only while we wait for it. */
static void peer_closed_check(struct rn_comm *c)
{
	struct rn_vars v = RN_VARS_INIT;
	struct rn_finding f = { 0 };
	int waiting = c->outstanding > 0;
	char pfx[256];

	if (c->fd < 0 || c->err || !rn_oob_peer_alive(c->fd))
		return;
	if (c->role == RN_ROLE_RECV) {
		struct rn_recv_comm *rc = (struct rn_recv_comm *)c;
		int i;

		for (i = 0; i < RN_SLOTS && !waiting; i++)
			waiting = rc->reqs[i].type == RN_REQ_RECV && !rc->reqs[i].done;
	} else {
		waiting = c->want_cts; /* no CTS will come from a closed peer */
	}
	if (!waiting)
		return;
	rn_conn_vars(&c->mem[0].dev->nic, &c->rpeer[0], &v);
	rn_finding_render(&f, RN_CAUSE_PEER_DIED, &v);
	snprintf(pfx, sizeof(pfx), RN_PFX "comm with %s failed with work pending", c->peer_str);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
	journal(c, 0, &c->rpeer[0], RN_CAUSE_PEER_DIED, "peer-closed", NULL);
	rn_vars_free(&v);
	rn_finding_clear(&f);
	comm_fail(c, -ECONNRESET);
}

/* The checks that cost a system call, only when the comm is idle. */
static void slow_checks(struct rn_comm *c, uint64_t now)
{
	int ret, k, gid_due;

	c->last_check_ns = now;
	/* the spares were polled at this idle tick already (rn_comm_progress) */
	gid_due = now - c->gid_check_ns > RN_GID_CHECK_NS;
	if (gid_due)
		c->gid_check_ns = now;
	for (k = 0; k < c->nmem; k++)
		if (member_check(c, k, now, gid_due))
			return;
	ret = __atomic_load_n(&c->async_err, __ATOMIC_ACQUIRE);
	if (ret && !c->err)
		comm_fail(c, ret);
	side_channel_check(c);
	peer_closed_check(c);
	if (c->vf)
		rn_vfail_tick(c, now);
	qp_watchdog(c, now);
	if (c->fo && !c->err)
		rn_failover_recover(c, now); /* a failed pair whose NICs are back */
	if (c->outstanding > 0 && !c->err && now - c->last_progress_ns > rn_comm_stall_bound(c)) {
		rn_warn(RN_SUB_NET,
			RN_PFX "no completion from %s (%s) for %llu ms with %d WRs "
			       "posted: the QP stalled",
			c->peer_str, c->rpeer[0].host,
			(unsigned long long)((now - c->last_progress_ns) / 1000000),
			c->outstanding);
		journal(c, 0, &c->rpeer[0], RN_CAUSE_NONE, "stall", NULL);
		comm_fail(c, -ETIMEDOUT);
	}
}

/*
 * The receive (and CTS-waiting) loop's back-off, for a comm with nothing to poll: spin
 * RN_IDLE_SPIN polls, then yield the CPU after each poll (what NCCL's own proxy does when
 * idle: sched_yield returns at once when nobody else wants the CPU, so a real NIC's
 * completion is seen at most a system call later), and only after RN_IDLE_NAP_AFTER_NS of
 * nothing nap RN_IDLE_NAP_NS per poll: a comm that idle waits for a peer, not for its NIC
 * (a real NIC's round trip is microseconds). The CPU goes to whoever needs it meanwhile:
 * the NIC driver's interrupt and softirq work (all of Soft-RoCE), the proxy's other threads.
 *
 * "Nothing" is the calling thread's, not the comm's: NCCL's proxy thread tests every comm
 * of its rank in turn, one pass after another. A receive that waits for a late peer (a
 * pipeline stage's input, tens of ms) must not sleep or yield in its test while the same
 * thread's other comms carry data: a nap per pass would cap each of them at one message per
 * nap (20 us, where a 512 KiB chunk takes 10 us at 400 Gb/s), and a yield per waiting comm
 * per pass is a system call each. thr_progress counts the batches of completions this
 * thread's comms took: a comm that sees it moved since its last look backs off not at all
 * this time, and its wait starts again.
 */
#define RN_IDLE_SPIN 64
#define RN_IDLE_NAP_AFTER_NS (1000ull * 1000ull)
#define RN_IDLE_NAP_NS 20000L

static __thread unsigned long thr_progress;

static void idle_backoff(struct rn_comm *c)
{
	uint64_t now;

	if (c->idle < RN_IDLE_SPIN)
		return;
	if (c->idle == RN_IDLE_SPIN || c->idle_seen != thr_progress) {
		c->idle_seen = thr_progress;
		c->idle_since_ns = 0;
		return;
	}
	now = rn_now_ns();
	if (!c->idle_since_ns)
		c->idle_since_ns = now;
	if (now - c->idle_since_ns < RN_IDLE_NAP_AFTER_NS) {
		sched_yield();
	} else {
		struct timespec ts = { 0, RN_IDLE_NAP_NS };

		nanosleep(&ts, NULL);
	}
}

static int resend_pass(struct rn_send_comm *sc);

int rn_comm_progress(struct rn_comm *c)
{
	struct ibv_wc wc[RN_POLL_BATCH];
	int n, i;

	if (c->err)
		return c->err;
	if (rn_unlikely(c->moving)) /* the old pair is drained: only the spares speak */
		return c->vf ? rn_vfail_poll(c) : rn_failover_poll(c);
	if (cts_flush_pending(c))
		return c->err;
	n = rn_verbs.poll_cq(c->mem[0].cq, RN_POLL_BATCH, wc);
	if (n < 0) {
		rn_warn(RN_SUB_NET, RN_PFX "%s: polling the CQ failed", c->mem[0].dev->nic.ibdev);
		return comm_fail(c, -EIO);
	}
	for (i = 0; i < n; i++) {
		struct ibv_cq *cq = c->mem[0].cq;

		handle_wc(c, 0, &wc[i]);
		if (rn_unlikely(c->mem[0].cq != cq || (c->moving && !c->vf)))
			break; /* a failover moved the comm: the rest is the old pair's echo */
	}
	if (rn_unlikely(c->nmem > 1)) {
		int k, m;

		for (k = 1; k < c->nmem; k++) {
			m = rn_verbs.poll_cq(c->mem[k].cq, RN_POLL_BATCH, wc);
			if (m < 0) {
				rn_warn(RN_SUB_NET, RN_PFX "%s: polling the CQ failed",
					c->mem[k].dev->nic.ibdev);
				return comm_fail(c, -EIO);
			}
			for (i = 0; i < m; i++)
				handle_wc(c, k, &wc[i]);
			n += m;
		}
	}
	/* a vNIC's move, after the batch: its other completions are taken first */
	if (rn_unlikely(c->vf != NULL) && rn_vfail_due(c))
		rn_vfail_step(c);
	/* a move's resend that a full send queue stopped: the completions above made room */
	if (rn_unlikely(c->role == RN_ROLE_SEND && ((struct rn_send_comm *)c)->resend_left) &&
	    !c->err && !c->moving) {
		int ret = resend_pass((struct rn_send_comm *)c);

		if (ret)
			return comm_fail(c, ret);
	}
	if (n > 0) {
		thr_progress++;
		c->idle = 0;
		c->last_progress_ns = 0; /* re-read lazily: no clock call on the busy path */
		return c->err;
	}
	idle_backoff(c);
	/* idle: look at the clock only every few polls */
	if ((++c->idle & 15) == 1) {
		uint64_t now = rn_now_ns();

		/*
		 * A peer's move request comes over a spare pair: looked for at every idle tick
		 * (a poll of each spare's CQ, no system call), not only every 100 ms, so that
		 * a move the peer starts takes milliseconds here. A comm that waits on a failed
		 * peer NIC is idle by then.
		 */
		if (c->fo) {
			int moves = c->fo->moves;

			rn_failover_poll(c);
			if (c->err || c->moving || c->fo->moves != moves)
				return comm_check(c);
		}
		if (!c->last_progress_ns || !c->outstanding)
			c->last_progress_ns = now;
		if (now - c->last_check_ns >= RN_CHECK_EVERY_NS)
			slow_checks(c, now);
	}
	return comm_check(c);
}

/*
 * 1 when @mr was registered for @c's NICs (a vNIC comm takes only a handle from
 * rn_vmr_get over the same members) and covers @size bytes at @a.
 */
static int mr_fits(const struct rn_comm *c, const struct rn_mr *mr, uintptr_t a, size_t size)
{
	int k;

	if (!mr || mr->dev != c->reg_dev || a < mr->base || a + size > mr->base + mr->len)
		return 0;
	if (c->nmem == 1)
		return !mr->nmem;
	if (mr->nmem != c->nmem)
		return 0;
	for (k = 1; k < c->nmem; k++)
		if (mr->mem[k]->dev != c->mem[k].dev)
			return 0;
	return 1;
}

/* ---- send ------------------------------------------------------------------- */

struct wr_builder {
	struct rn_comm *c;
	struct ibv_qp *qp;
	struct ibv_send_wr wr[RN_WR_BATCH];
	struct ibv_sge sge[RN_WR_BATCH];
	int n;     /* in the array */
	int count; /* emitted in all */
	int dry;   /* count only */
	int ret;
};

static void wb_flush(struct wr_builder *b)
{
	struct ibv_send_wr *bad;
	int i, ret;

	if (!b->n || b->ret)
		return;
	for (i = 0; i < b->n; i++)
		b->wr[i].next = i + 1 < b->n ? &b->wr[i + 1] : NULL;
	ret = rn_verbs_err(rn_verbs.post_send(b->qp, b->wr, &bad));
	if (ret)
		b->ret = ret;
	b->n = 0;
}

/* Queue one RDMA WRITE; the last one queued is finalised by build_qp(). */
static void wb_add(struct wr_builder *b, uint64_t laddr, uint32_t lkey, uint64_t raddr,
		   uint32_t rkey, uint32_t len)
{
	struct ibv_send_wr *w;

	b->count++;
	if (b->dry)
		return;
	if (b->n == RN_WR_BATCH)
		wb_flush(b); /* none of these is the last: the new one comes after */
	w = &b->wr[b->n];
	memset(w, 0, sizeof(*w));
	b->sge[b->n].addr = laddr;
	b->sge[b->n].length = len;
	b->sge[b->n].lkey = lkey;
	w->sg_list = len ? &b->sge[b->n] : NULL;
	w->num_sge = len ? 1 : 0;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->wr.rdma.remote_addr = raddr;
	w->wr.rdma.rkey = rkey;
	b->n++;
}

/* The part of a @size-byte message that QP @q carries. */
static void qp_share(const struct rn_comm *c, int q, size_t size, size_t *off, size_t *len)
{
	size_t chunk;

	if (!c->split || c->nqps == 1) {
		*off = 0;
		*len = size;
		return;
	}
	chunk = (size + (size_t)c->nqps - 1) / (size_t)c->nqps;
	chunk = (chunk + RN_SPLIT_ALIGN - 1) & ~(size_t)(RN_SPLIT_ALIGN - 1);
	*off = RN_MIN(chunk * (size_t)q, size);
	*len = RN_MIN(chunk, size - *off);
}

/*
 * Emit slot @s's WRs for QP @q through @b: data, sizes (multi-recv, first QP only),
 * then the final WRITE_WITH_IMM, signalled.
 */
static void build_qp(struct rn_send_comm *sc, struct rn_send_slot *s, int q, int first,
		     uint32_t imm, struct wr_builder *b)
{
	struct rn_comm *c = &sc->c;
	uint32_t k = s->seq - 1;
	int r, lm = c->qp_mem[q], rm = c->qp_rmem[q];

	if (imm != RN_IMM_ERR) {
		for (r = 0; r < s->n; r++) {
			const struct rn_cts *e = rn_cts_at(sc->fifo, c->cts_len, k, r);
			struct rn_req *req = s->reqs[r];
			uint32_t lkey = lm && req->mr ? rn_mr_lkey(req->mr, lm) : req->lkey;
			size_t off, len, done;

			qp_share(c, q, req->size, &off, &len);
			for (done = 0; done < len;) {
				size_t l = RN_MIN(len - done, c->max_msg);

				wb_add(b, (uintptr_t)req->data + off + done, lkey,
				       e->addr + off + done, e->rkey[rm], (uint32_t)l);
				done += l;
			}
		}
		if (s->n > 1 && first)
			wb_add(b, (uintptr_t)sc->sizes[k % RN_SLOTS], c->mem[lm].ctrl_mr->lkey,
			       sc->rsizes_addr + (k % RN_SLOTS) * sizeof(sc->sizes[0]),
			       sc->rsizes_rkey[rm], (uint32_t)(s->n * sizeof(int32_t)));
	}
	if (!b->count)
		wb_add(b, 0, 0, 0, 0, 0);
	if (!b->dry) {
		struct ibv_send_wr *w = &b->wr[b->n - 1];

		w->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		w->imm_data = htobe32(imm);
		w->send_flags = IBV_SEND_SIGNALED;
		w->wr_id = (uintptr_t)s | RN_WR_SEND;
		if (!w->num_sge) {
			/* a 0-byte write needs no valid target */
			w->wr.rdma.remote_addr = 0;
			w->wr.rdma.rkey = 0;
		}
	}
}

/* QPs slot @s uses: all of them when split, else one by sequence. */
static void slot_qps(const struct rn_comm *c, const struct rn_send_slot *s, int *q0, int *nq)
{
	if (c->split) {
		*q0 = 0;
		*nq = c->nqps;
	} else {
		*q0 = (int)((s->seq - 1) % (uint32_t)c->nqps);
		*nq = 1;
	}
}

/* Post slot @s (imm = size, 0 for multi, or RN_IMM_ERR). -EAGAIN when a send queue is full. */
static int post_slot(struct rn_send_comm *sc, struct rn_send_slot *s, uint32_t imm)
{
	struct rn_comm *c = &sc->c;
	struct wr_builder b;
	int q0, nq, i, need[RN_MAX_QPS];

	slot_qps(c, s, &q0, &nq);
	for (i = 0; i < nq; i++) {
		b.c = c;
		b.qp = c->qps[q0 + i];
		b.n = 0;
		b.count = 0;
		b.dry = 1;
		b.ret = 0;
		build_qp(sc, s, q0 + i, i == 0, imm, &b);
		need[i] = b.count;
		if (need[i] > c->sq_cap) {
			rn_warn(RN_SUB_NET,
				RN_PFX "a message needs %d WRs on one QP, more than its %d: "
				       "lower the message size",
				need[i], c->sq_cap);
			return comm_fail(c, -EMSGSIZE);
		}
		if (c->sq_used[q0 + i] + need[i] > c->sq_cap)
			return -EAGAIN;
	}
	s->pending = nq;
	s->posted = 1;
	s->bytes = 0;
	for (i = 0; i < s->n; i++)
		if (s->reqs[i])
			s->bytes += s->reqs[i]->size;
	c->outstanding_bytes += s->bytes;
	for (i = 0; i < nq; i++) {
		b.c = c;
		b.qp = c->qps[q0 + i];
		b.n = 0;
		b.count = 0;
		b.dry = 0;
		b.ret = 0;
		build_qp(sc, s, q0 + i, i == 0, imm, &b);
		wb_flush(&b);
		if (b.ret) {
			rn_warn(RN_SUB_NET, RN_PFX "posting to %s failed: %s", c->peer_str,
				strerror(-b.ret));
			return comm_fail(c, b.ret);
		}
		c->sq_used[q0 + i] += need[i];
		*slot_wrs(sc, s, q0 + i) = (uint16_t)need[i];
		c->qp_out[q0 + i]++;
		if (c->outstanding++ == 0)
			c->last_progress_ns = 0;
	}
	return 0;
}

int rn_isend(struct rn_send_comm *sc, void *data, size_t size, int tag, struct rn_mr *mr,
	     struct rn_req **out)
{
	struct rn_comm *c;
	struct rn_send_slot *s;
	struct rn_cts *e;
	struct rn_req *req;
	uint32_t k, seq;
	int n, r, ret;

	*out = NULL;
	if (!sc)
		return -EINVAL;
	c = &sc->c;
	ret = comm_check(c);
	if (ret)
		return ret;
	/* no request until the receiver says where to resume, nor before the resend is out */
	if (rn_unlikely(c->moving || sc->resend_left))
		return rn_comm_progress(c);
	if (rn_unlikely(size > INT_MAX ||
			(size && (!data || !mr_fits(c, mr, (uintptr_t)data, size))))) {
		rn_warn(RN_SUB_NET, RN_PFX "isend of %zu bytes at %p: %s", size, data,
			size > INT_MAX ? "larger than 2 GiB" : "outside its registration");
		return -EINVAL;
	}
	k = sc->head;
	seq = k + 1;
	s = &sc->slots[k % RN_SLOTS];
	e = rn_cts_at(sc->fifo, c->cts_len, k, 0);
	if (s->seq != seq) {
		/* a new slot: its previous use must have completed, its CTS must be in */
		if (s->seq || __atomic_load_n(rn_cts_seq(e, c->cts_len), __ATOMIC_ACQUIRE) != seq) {
			c->want_cts = !s->seq;
			return rn_comm_progress(c);
		}
		n = e->nreqs;
		if (n < 1 || n > RN_MAX_RECVS) {
			rn_warn(RN_SUB_NET, RN_PFX "peer %s posted a receive of %d buffers",
				c->peer_str, n);
			return comm_fail(c, -EPROTO);
		}
		for (r = 1; r < n; r++)
			if (__atomic_load_n(rn_cts_seq(rn_cts_at(sc->fifo, c->cts_len, k, r),
						       c->cts_len),
					    __ATOMIC_ACQUIRE) != seq)
				return rn_comm_progress(c);
		memset(s, 0, sizeof(*s));
		slot_wrs_clear(sc, s);
		s->seq = seq;
		s->n = n;
	}
	for (r = 0; r < s->n; r++) {
		e = rn_cts_at(sc->fifo, c->cts_len, k, r);
		if (!s->reqs[r] && e->tag == tag)
			break;
	}
	if (r == s->n) {
		c->want_cts = 1;
		return rn_comm_progress(c); /* not this tag's turn */
	}
	if (size > e->size) {
		rn_warn(RN_SUB_NET,
			RN_PFX "send of %zu bytes (tag %d) to %s (%s) is larger than "
			       "the receive of %llu bytes posted for it: message size mismatch",
			size, tag, c->peer_str, c->rpeer[0].host, (unsigned long long)e->size);
		/* tell the receiver too, so that it fails instead of waiting */
		if (post_slot(sc, s, RN_IMM_ERR) == 0)
			sc->head++;
		return comm_fail(c, -EMSGSIZE);
	}
	c->want_cts = 0;
	req = send_req_get(sc);
	if (!req)
		return rn_comm_progress(c);
	req->type = RN_REQ_SEND;
	req->comm = c;
	req->n = 1;
	req->data = data;
	req->size = size;
	req->lkey = mr ? mr->ibmr->lkey : 0;
	req->mr = mr;
	if (rn_unlikely(mr && c->mem[0].dev != c->reg_dev)) {
		/* moved (failover): the buffer's key on the NIC in use now */
		struct rn_mr *m;

		ret = rn_mr_on(mr, c->mem[0].dev, &m);
		if (ret) {
			send_req_put(sc, req);
			rn_warn(RN_SUB_NET,
				RN_PFX "registering %zu bytes at %p on %s after a "
				       "failover failed: %s",
				size, data, c->mem[0].dev->nic.ibdev, strerror(-ret));
			return comm_fail(c, ret);
		}
		req->lkey = m->ibmr->lkey;
	}
	req->slot = s;
	req->sizes[0] = (int)size;
	s->reqs[r] = req;
	s->matched++;
	sc->sizes[k % RN_SLOTS][r] = (int32_t)size;
	if (s->matched == s->n) {
		ret = post_slot(sc, s, s->n == 1 ? (uint32_t)size : 0);
		if (ret) {
			s->reqs[r] = NULL;
			s->matched--;
			send_req_put(sc, req);
			if (ret == -EAGAIN)
				return rn_comm_progress(c);
			return ret;
		}
		sc->head++;
	}
	*out = req;
	return 0;
}

/* ---- receive ---------------------------------------------------------------- */

int rn_irecv(struct rn_recv_comm *rc, int n, void **data, size_t *sizes, int *tags,
	     struct rn_mr **mrs, struct rn_req **out)
{
	struct rn_comm *c;
	struct rn_cts *e;
	struct rn_req *req, *prev;
	uint32_t k;
	int i, j, q, ret, defer;

	*out = NULL;
	if (!rc)
		return -EINVAL;
	c = &rc->c;
	ret = comm_check(c);
	if (ret)
		return ret;
	if (n < 1 || n > RN_MAX_RECVS)
		return -EINVAL;
	k = rc->tail;
	req = &rc->reqs[k % RN_SLOTS];
	if (req->type != RN_REQ_FREE) {
		/*
		 * Every slot holds a receive NCCL has not test()ed to completion yet: that is
		 * back-pressure, not misuse (as net_ib): no request now, success later.
		 */
		ret = rn_comm_progress(c);
		return ret ? ret : 0;
	}
	for (i = 0; i < n; i++) {
		e = rn_cts_at(rc->stage, c->cts_len, k, i);
		if (rn_unlikely(sizes[i] &&
				(!mrs || !mr_fits(c, mrs[i], (uintptr_t)data[i], sizes[i])))) {
			rn_warn(RN_SUB_NET,
				RN_PFX "irecv buffer %d (%zu bytes at %p) is outside its "
				       "registration",
				i, sizes[i], data[i]);
			return -EINVAL;
		}
		e->addr = (uintptr_t)data[i];
		e->size = (uint32_t)RN_MIN(sizes[i], (size_t)UINT32_MAX);
		e->rkey[0] = sizes[i] ? mrs[i]->ibmr->rkey : 0;
		if (rn_unlikely(sizes[i] && c->mem[0].dev != c->reg_dev)) {
			struct rn_mr *m; /* moved (failover): the key on the NIC in use now */

			ret = rn_mr_on(mrs[i], c->mem[0].dev, &m);
			if (ret) {
				rn_warn(RN_SUB_NET,
					RN_PFX "registering %zu bytes at %p on %s after "
					       "a failover failed: %s",
					sizes[i], data[i], c->mem[0].dev->nic.ibdev,
					strerror(-ret));
				return comm_fail(c, ret);
			}
			e->rkey[0] = m->ibmr->rkey;
		}
		for (j = 1; j < c->nmem; j++) /* the sender writes through each of our NICs */
			e->rkey[j] = sizes[i] ? rn_mr_rkey(mrs[i], j) : 0;
		e->tag = tags[i];
		e->nreqs = (uint16_t)n;
		e->rsvd = 0;
		*rn_cts_seq(e, c->cts_len) = k + 1;
	}
	/* the pending ones never span the ring's wrap: they go before slot 0 joins */
	if (rc->cts_npend && k % RN_SLOTS == 0 && cts_flush(rc))
		return c->err;
	/* a write to come for this one alone: room for it (joining the pending needs none) */
	q = cts_qp(rc, k); /* not through a pair out, before the move */
	if (rc->cts_npend ? k % RN_SLOTS == 0 : c->sq_used[q] >= c->sq_cap) {
		ret = rn_comm_progress(c);
		return ret ? ret : 0; /* a full send queue drains as completions come */
	}
	prev = &rc->reqs[(k - 1) % RN_SLOTS];
	defer = prev->type == RN_REQ_RECV && prev->seq == k - 1 && !prev->done;
	memset(req, 0, sizeof(*req));
	req->type = RN_REQ_RECV;
	req->comm = c;
	req->n = n;
	req->seq = k;
	req->pending = c->split ? c->nqps : 1;
	for (i = 0; i < n; i++)
		req->mrs[i] = sizes[i] ? mrs[i] : NULL;
	/*
	 * No completion needed: the stage entry is not reused before this receive completes,
	 * which needs the sender to have read it (see cts_post for the send queue and the
	 * watchdog). Written now, or with the receives posted after it (cts_flush).
	 */
	if (!rc->cts_npend)
		rc->cts_first = k;
	rc->cts_npend++;
	rc->tail++;
	if (!defer && cts_flush(rc))
		return c->err; /* the comm failed: the request is not handed out */
	*out = req;
	return 0;
}

int rn_iflush(struct rn_recv_comm *rc, int n, void **data, int *sizes, struct rn_mr **mrs,
	      struct rn_req **out)
{
	struct rn_comm *c;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct rn_req *req = NULL;
	int i, k, last = -1, ret;

	*out = NULL;
	if (!rc)
		return -EINVAL;
	c = &rc->c;
	ret = comm_check(c);
	if (ret)
		return ret;
	if (!c->flush_enabled || !rc->flush_qp[0])
		return 0;
	for (i = 0; i < n; i++)
		if (sizes[i] > 0 && mrs && mrs[i])
			last = i;
	/* host memory is coherent: only a GPU buffer needs its PCIe writes pushed */
	if (last < 0 || !(mrs[last]->type & RN_PTR_CUDA))
		return 0;
	if (!mr_fits(c, mrs[last], (uintptr_t)data[last], 1))
		return -EINVAL;
	for (i = 0; i < RN_SLOTS; i++)
		if (rc->flush_reqs[i].type == RN_REQ_FREE) {
			req = &rc->flush_reqs[i];
			break;
		}
	if (!req || rc->flush_used >= RN_SLOTS)
		return -EINVAL;
	memset(req, 0, sizeof(*req));
	req->type = RN_REQ_FLUSH;
	req->comm = c;
	req->pending = 0;
	req->data = data[last];
	req->mr = mrs[last];
	/* a read through every member NIC: each pushes its own earlier writes ahead */
	for (k = 0; k < c->nmem; k++) {
		if (rn_unlikely(c->vf != NULL) && !rn_vfail_member_live(c, k))
			continue; /* a member out carries nothing any more */
		req->pending++;
		sge.addr = (uintptr_t)rc->flush_buf;
		sge.length = 1;
		sge.lkey = c->mem[k].ctrl_mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = (uintptr_t)req | RN_WR_FLUSH;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)data[last];
		wr.wr.rdma.rkey = rn_mr_rkey(mrs[last], k);
		if (rn_unlikely(c->mem[0].dev != c->reg_dev)) {
			struct rn_mr *m; /* moved (failover) */

			ret = rn_mr_on(mrs[last], c->mem[0].dev, &m);
			if (ret) {
				req->type = RN_REQ_FREE;
				return comm_fail(c, ret);
			}
			wr.wr.rdma.rkey = m->ibmr->rkey;
		}
		ret = rn_verbs_err(rn_verbs.post_send(rc->flush_qp[k], &wr, &bad));
		if (ret) {
			/* the reads already posted complete into a request nobody waits for */
			if (--req->pending == 0)
				req->type = RN_REQ_FREE;
			return comm_fail(c, ret);
		}
		if (c->outstanding++ == 0)
			c->last_progress_ns = 0;
	}
	rc->flush_used++;
	*out = req;
	return 0;
}

/* ---- test ------------------------------------------------------------------- */

int rn_test(struct rn_req *req, int *done, int *sizes)
{
	struct rn_comm *c;
	int i, ret;

	*done = 0;
	if (!req || req->type == RN_REQ_FREE)
		return -EINVAL;
	c = req->comm;
	/* pending CTS entries go at every test of the comm (cts_flush: the bound) */
	if (!c->err && cts_flush_pending(c))
		return c->err;
	if (!req->done) {
		ret = rn_comm_progress(c);
		if (ret)
			return ret;
		if (!req->done)
			return 0;
	}
	ret = comm_check(c);
	if (ret)
		return ret;
	*done = 1;
	switch (req->type) {
	case RN_REQ_SEND:
		if (sizes)
			sizes[0] = (int)req->size;
		send_req_put((struct rn_send_comm *)c, req);
		break;
	case RN_REQ_RECV:
		if (sizes)
			for (i = 0; i < req->n; i++)
				sizes[i] = req->sizes[i];
		req->type = RN_REQ_FREE;
		break;
	default:
		req->type = RN_REQ_FREE;
		break;
	}
	return 0;
}

/* ---- failover: where the data path resumes (src/failover.c) ---------------- */

/* A new pair has nothing in flight: the old one's counts go with it. */
static void counts_reset(struct rn_comm *c)
{
	memset(c->sq_used, 0, sizeof(c->sq_used));
	memset(c->qp_out, 0, sizeof(c->qp_out));
	memset(c->qp_wait_ns, 0, sizeof(c->qp_wait_ns));
	c->outstanding = 0;
	c->outstanding_bytes = 0;
	/* a real time: the watchdog reads it as it is (0 means "re-read" only on the busy path) */
	c->last_progress_ns = rn_now_ns();
}

int rn_xfer_recv_rewind(struct rn_recv_comm *rc, uint32_t *seqs, int *n)
{
	struct rn_comm *c = &rc->c;
	struct rn_dev *dev = c->mem[0].dev;
	uint32_t k, first = 0, run = 0;
	int i, q, ret, have = 0, fm, nrun = 0, last_n = 0, again;

	*n = 0;
	counts_reset(c);
	memset(rc->cts_unsig, 0, sizeof(rc->cts_unsig));
	/* CTS entries not written yet are of receives not complete: written below with them */
	rc->cts_npend = 0;
	/* the slots posted, oldest first: tail - RN_SLOTS .. tail - 1 */
	for (i = 0; i < RN_SLOTS; i++) {
		struct rn_req *r;

		k = rc->tail - RN_SLOTS + (uint32_t)i;
		r = &rc->reqs[k % RN_SLOTS];
		again = r->type == RN_REQ_RECV && r->seq == k && !r->done;
		/*
		 * The receives to write again go in one WRITE a run of contiguous slots (as
		 * cts_flush's), on QP 0 ahead of the RESUME that follows them there: a move
		 * rewrites up to RN_SLOTS receives and a RESUME at once, on a send queue of
		 * RN_CTS_SQ_DEPTH WRs. A run ends at a receive not written again and at the wrap.
		 */
		if (nrun && (!again || k % RN_SLOTS == 0)) {
			ret = cts_write_span(rc, 0, run, nrun, last_n, 0);
			if (ret)
				return ret;
			nrun = 0;
		}
		if (!again)
			continue;
		/* not whole: every QP's part of it comes again */
		r->pending = c->split ? c->nqps : 1;
		/* a vNIC's members keep their keys: only a move to another NIC needs new ones */
		for (q = 0; q < r->n && !c->vf; q++) {
			struct rn_mr *m;

			if (!r->mrs[q])
				continue;
			ret = rn_mr_on(r->mrs[q], dev, &m);
			if (ret)
				return ret;
			rn_cts_at(rc->stage, c->cts_len, k, q)->rkey[0] = m->ibmr->rkey;
			rn_trace(RN_SUB_NET,
				 RN_PFX "failover: slot %u's entry %d written again for %s: "
					"%#llx, rkey %#x",
				 k + 1, q, dev->nic.ibdev,
				 (unsigned long long)rn_cts_at(rc->stage, c->cts_len, k, q)->addr,
				 m->ibmr->rkey);
		}
		if (!nrun++)
			run = k;
		last_n = r->n;
		if (!have)
			first = k;
		have = 1;
		seqs[(*n)++] = k + 1;
	}
	if (nrun && (ret = cts_write_span(rc, 0, run, nrun, last_n, 0)))
		return ret;
	/* a split slot goes over every QP: each expects the first slot not whole next */
	if (c->split && have)
		for (q = 0; q < c->nqps; q++)
			rc->qp_next[q] = first;
	/* a GPU flush in flight was on the old NIC: read again through the new one (a vNIC's
	 * first member left) */
	fm = c->vf ? rn_vfail_flush_member(c) : 0;
	rc->flush_used = 0;
	for (i = 0; i < RN_SLOTS; i++) {
		struct rn_req *r = &rc->flush_reqs[i];
		struct ibv_send_wr wr, *bad;
		struct ibv_sge sge;
		struct rn_mr *m;

		if (r->type != RN_REQ_FLUSH || r->done)
			continue;
		if (!rc->flush_qp[fm] || !r->mr) {
			r->pending = 0;
			r->done = 1;
			continue;
		}
		if (c->vf) {
			m = r->mr; /* its keys on every member: rn_mr_rkey below */
		} else {
			ret = rn_mr_on(r->mr, dev, &m);
			if (ret)
				return ret;
		}
		memset(&wr, 0, sizeof(wr));
		sge.addr = (uintptr_t)rc->flush_buf;
		sge.length = 1;
		sge.lkey = c->mem[fm].ctrl_mr->lkey;
		wr.wr_id = (uintptr_t)r | RN_WR_FLUSH;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = (uintptr_t)r->data;
		wr.wr.rdma.rkey = c->vf ? rn_mr_rkey(m, fm) : m->ibmr->rkey;
		ret = rn_verbs_err(rn_verbs.post_send(rc->flush_qp[fm], &wr, &bad));
		if (ret)
			return ret;
		r->pending = 1;
		rc->flush_used++;
		c->outstanding++;
	}
	return 0;
}

static int seq_listed(const uint32_t *seqs, int n, uint32_t seq)
{
	int i;

	for (i = 0; i < n; i++)
		if (seqs[i] == seq)
			return 1;
	return 0;
}

/*
 * A move's resend: the slots matched and not posted, oldest first, from the CTS entries
 * the receiver wrote anew. A full send queue stops it (the QPs of a vNIC that lost a
 * member carry the others' share too, and a send queue holds what NCCL keeps in flight,
 * not the FIFO's worst case): resend_left stays set, the comm's progress goes on from the
 * oldest slot left once completions free the queue, and rn_isend posts nothing new before
 * (the receiver takes a QP's completions in slot order). 0 or -errno.
 */
static int resend_pass(struct rn_send_comm *sc)
{
	uint32_t k;
	int i, ret;

	for (i = 0; i < RN_SLOTS; i++) {
		struct rn_send_slot *s;

		k = sc->head - RN_SLOTS + (uint32_t)i;
		s = &sc->slots[k % RN_SLOTS];
		if (!s->seq || s->seq != k + 1 || s->posted || s->matched != s->n)
			continue; /* (k + 1 wraps to 0 before the comm's 32nd slot) */
		ret = post_slot(sc, s, s->n == 1 ? (uint32_t)s->reqs[0]->size : 0);
		if (ret == -EAGAIN)
			return 0; /* resend_left: the next progress pass goes on from here */
		if (ret)
			return ret;
	}
	sc->resend_left = 0;
	return 0;
}

int rn_xfer_send_resume(struct rn_send_comm *sc, const uint32_t *seqs, int n, uint32_t tail,
			int *nresent, uint64_t *resent)
{
	struct rn_comm *c = &sc->c;
	struct rn_dev *dev = c->mem[0].dev;
	int i, r, ret;

	*resent = 0;
	*nresent = 0;
	counts_reset(c);
	for (i = 0; i < RN_SLOTS; i++) {
		struct rn_send_slot *s = &sc->slots[i];

		if (!s->seq)
			continue;
		/*
		 * Not listed, and its receive was posted before the move (seq <= tail): the
		 * receiver has it whole, whatever our completions said. A slot past @tail was
		 * served from an entry the receiver wrote after the move (on the new pair), and
		 * we may have posted it on the old pair before we took the RESUME: it goes again.
		 */
		if (!seq_listed(seqs, n, s->seq) && (int32_t)(s->seq - tail) <= 0) {
			if (s->posted) {
				for (r = 0; r < s->n; r++)
					if (s->reqs[r])
						s->reqs[r]->done = 1;
				memset(s, 0, sizeof(*s));
				slot_wrs_clear(sc, s);
			}
			continue;
		}
		s->posted = 0;
		s->pending = 0;
		s->bytes = 0;
		slot_wrs_clear(sc, s);
		for (r = 0; r < s->n && !c->vf; r++) { /* a vNIC's members keep their keys */
			struct rn_req *req = s->reqs[r];
			struct rn_mr *m;

			if (!req || !req->mr)
				continue;
			ret = rn_mr_on(req->mr, dev, &m);
			if (ret)
				return ret;
			req->lkey = m->ibmr->lkey;
		}
	}
	/* what goes again, now or as the queue frees: for the move's WARN */
	for (i = 0; i < RN_SLOTS; i++) {
		struct rn_send_slot *s = &sc->slots[i];

		if (!s->seq || s->posted || s->matched != s->n)
			continue;
		for (r = 0; r < s->n; r++)
			if (s->reqs[r])
				*resent += s->reqs[r]->size;
		(*nresent)++;
	}
	sc->resend_left = 1;
	return resend_pass(sc);
}

const struct rn_fo_hooks rn_xfer_fo_hooks = {
	.handle_wc = rn_xfer_handle_wc,
	.recv_rewind = rn_xfer_recv_rewind,
	.send_resume = rn_xfer_send_resume,
};

/* ---- registration: the API face of src/mr.c -------------------------------- */

/* A vNIC comm registers on every member (one handle holds them all). */
static int comm_reg(struct rn_comm *c, void *data, size_t size, int type, int fd, uint64_t offset,
		    struct rn_mr **out)
{
	struct rn_dev *devs[RN_VNIC_MAX];
	int k;

	if (c->nmem == 1) /* on the NIC the comm was made on, wherever it moved since */
		return rn_mr_get(c->reg_dev, data, size, type, fd, offset, out);
	for (k = 0; k < c->nmem; k++)
		devs[k] = c->mem[k].dev;
	return rn_vmr_get(devs, c->nmem, data, size, type, fd, offset, out);
}

int rn_reg_mr(void *comm, void *data, size_t size, int type, struct rn_mr **out)
{
	*out = NULL;
	if (!comm)
		return -EINVAL;
	return comm_reg(comm, data, size, type, -1, 0, out);
}

int rn_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
		     struct rn_mr **out)
{
	*out = NULL;
	if (!comm || fd < 0)
		return -EINVAL;
	return comm_reg(comm, data, size, type, fd, offset, out);
}

int rn_dereg_mr(void *comm, struct rn_mr *mr)
{
	struct rn_comm *c = comm;

	if (!mr)
		return 0; /* as net_ib: nothing registered, nothing to undo */
	if (!comm)
		return -EINVAL;
	if (c->nmem > 1) {
		struct rn_dev *devs[RN_VNIC_MAX];
		int k;

		for (k = 0; k < c->nmem; k++)
			devs[k] = c->mem[k].dev;
		return rn_vmr_put(devs, c->nmem, mr);
	}
	return rn_mr_put(c->reg_dev, mr);
}

/* For the RMA backend (src/rma.c): its own completions get the same diagnosis. */
void rn_xfer_wc_error(struct rn_comm *c, int k, const struct ibv_wc *wc)
{
	wc_error(c, k, wc);
}

int rn_send_wc_status(const struct rn_send_comm *sc)
{
	return sc ? sc->c.wc_status : 0;
}

int rn_recv_wc_status(const struct rn_recv_comm *rc)
{
	return rc ? rc->c.wc_status : 0;
}
