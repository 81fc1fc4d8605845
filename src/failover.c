// SPDX-License-Identifier: MIT
/*
 * Port failover: a comm whose NIC fails goes on over a sibling NIC pair of the same two
 * hosts (on these hosts every RoCE NIC sits in one subnet, so every local NIC reaches
 * every peer NIC).
 *
 * The pairs: at connect time each end offers up to NCCL_ROCE_FAILOVER_SPARES of its
 * other NICs (src/comm.c); spare j of one end pairs with spare j of the other, and its
 * QPs are connected and path-checked then, beside the comm's own, with receives posted.
 * Nothing of them is touched while the comm's own pair works (the data path polls one
 * CQ, as before); the idle checks look at their CQs every 100 ms for the peer's word.
 *
 * The control channel is RDMA itself: a failover message is one WRITE_WITH_IMM of a
 * small record (fo_msg) into the peer's inbox for that pair, imm RN_IMM_CTRL, on QP 0
 * of the pair it names. The comm's TCP socket cannot serve: it leaves from the failed
 * NIC's address, which policy routing sends through that NIC.
 *
 * Where to resume: the receiver decides.
 *   - The side that sees the failure first (a completion in error, port down, the
 *     GID's address gone) moves its old QPs to ERR, so that no late WRITE lands there
 *     afterwards, and drains their CQ (what completed is kept).
 *   - A sender then sends MOVE_REQ on a spare it can use and waits (isend hands out no
 *     request meanwhile; test() keeps polling).
 *   - The receiver, on its own failure or on MOVE_REQ, takes a pair both ends passed,
 *     takes every receive not complete as not delivered (a slot is complete only when
 *     every QP's immediate for it arrived), writes their CTS entries again with the
 *     buffers' keys on the new NIC, then RESUME (the epoch and those slots' sequences),
 *     all on QP 0 of the new pair, so RESUME lands after the entries.
 *   - The sender, on RESUME, completes every slot it posted that is not listed (the
 *     receiver has it, even where the sender's completion was flushed), and posts the
 *     listed ones again, in order, from the new entries.
 *   Every message is delivered once, whole and in order; the bytes of the listed slots
 *   are the bytes sent again. Epochs make crossing messages harmless: a receiver
 *   ignores a MOVE_REQ older than its last move, a sender a RESUME it applied.
 *
 * Memory: NCCL's registrations stay on the NIC the comm was made on (c->reg_dev); the
 * new NIC's keys come from rn_mr_on() (host memory and nvidia-peermem by address,
 * DMA-BUF through the fd the registration kept), made on first use.
 *
 * Recovery: a failed pair comes back when its NICs are up again, and the comm moves back
 * to its own pair (path 0). The receiver drives it, one pair at a time, from its idle
 * checks (never blocking):
 *   - its NIC of the pair up for NCCL_ROCE_RECOVERY_DELAY_MS, its link not flapping
 *     (NCCL_ROCE_FLAP_MAX), the path check passed again;
 *   - its QPs of the pair through RESET to RTS again, with the GID index of its address
 *     now (the link's return re-adds the GIDs, maybe elsewhere: nccl#2157), receives
 *     posted; then REARM on the pair in use;
 *   - the sender does the same at its end (the same conditions), and answers ARMED;
 *   - the receiver sends a probe over the pair itself: its completion says the RC path
 *     works both ways (a pair whose packets are still dropped fails it, and waits twice
 *     as long for its next try). Then the pair is a spare again.
 * When path 0 is a spare again, the receiver asks the sender to move back (BACK), and the
 * move is the sender-started one above, marked as a move back: the sender moves its pair
 * in use to ERR *first*, so that no clear-to-send entry the receiver wrote over that pair
 * (a pair that still works: its writes may be in flight) can land after the entries the
 * receiver writes again on path 0.
 * QP numbers stay; PSNs start at 0 again at both ends, as at connect.
 *
 * Not built (said in nccl-net-roce(7)): vNIC comms and the RMA backend's comms (they
 * fail as before).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_clock.h"
#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_fostate.h"
#include "rn_log.h"
#include "rn_mr.h"
#include "rn_oob.h"
#include "rn_path.h"
#include "rn_verdict.h"
#include "rn_verbs.h"

#define FO_MAGIC 0x524e464fu /* "RNFO" */

enum fo_type {
	FO_MOVE_REQ = 1,
	FO_RESUME = 2,
	FO_REARM = 3,
	FO_ARMED = 4,
	FO_PROBE = 5,
	FO_BACK = 6
};
#define FO_F_BACK 0x1u /* MOVE_REQ, RESUME: a move back to a recovered pair, not a failure */
#define FO_F_OK 0x2u   /* ARMED: the pair is armed at the sender's end too */

struct fo_msg {
	uint32_t magic;
	uint32_t type;
	uint32_t epoch;  /* RESUME: the receiver's move; MOVE_REQ: the last RESUME seen */
	uint32_t path;   /* the pair it rides, which is the pair to take */
	uint32_t dead;   /* MOVE_REQ: the pairs the sender found broken (bit per path) */
	uint32_t n;      /* RESUME: slots to serve again */
	uint32_t target; /* REARM/ARMED/PROBE: the pair being brought back */
	uint32_t flags;  /* FO_F_* */
	uint32_t gen;    /* REARM/ARMED/PROBE: the request's number (a late answer is dropped) */
	uint32_t tail;   /* RESUME: the last slot sequence the receiver had posted */
	uint32_t seq[RN_SLOTS];
	uint32_t sum;    /* of every word before it: a record overwritten mid-read fails it */
};
_Static_assert(sizeof(struct fo_msg) <= RN_FO_BOX, "a failover message fits its box");

/*
 * LOC_QP_OP_ERR and GENERAL_ERR too: rxe fails what it sends on a netdev set down with
 * them, and the port's event may not have been read yet when the completion is. On a
 * hardware NIC they mean a malformed WR: the spare fails the same way, and the comm with
 * one WARN naming every pair.
 */
int rn_failover_status(int status)
{
	return status == IBV_WC_RETRY_EXC_ERR || status == IBV_WC_WR_FLUSH_ERR ||
	       status == IBV_WC_FATAL_ERR || status == IBV_WC_LOC_QP_OP_ERR ||
	       status == IBV_WC_GENERAL_ERR;
}

static uint32_t msg_sum(const struct fo_msg *m)
{
	return rn_ctrl_sum(m, offsetof(struct fo_msg, sum), 0x9e3779b9u);
}

static int comm_fail(struct rn_comm *c, int err)
{
	if (!c->err)
		c->err = err;
	return c->err;
}

/* Our NIC of path @j: the comm's own fields when it is the pair in use. */
static const struct rn_dev *path_dev(const struct rn_comm *c, int j)
{
	return j == c->fo->active ? c->mem[0].dev : c->fo->path[j].mem.dev;
}

static const struct rn_peer_facts *path_peer(const struct rn_comm *c, int j)
{
	return j == c->fo->active ? &c->rpeer[0] : &c->fo->path[j].rpeer;
}

static struct rn_evdev *path_ev(const struct rn_comm *c, int j)
{
	return j == c->fo->active ? c->mem[0].ev : c->fo->path[j].mem.ev;
}

static void path_dead(struct rn_comm *c, int j, const char *why)
{
	struct rn_path *p = &c->fo->path[j];

	if (p->state == RN_PATH_DEAD)
		return;
	p->state = RN_PATH_DEAD;
	p->planned = 0;
	p->up_since_ns = 0; /* recovery looks at its NIC afresh */
	snprintf(p->why, sizeof(p->why), "%s", why);
}

/* 1 when pair @j can take the comm from here: alive, checked, its NIC up. */
static int usable(const struct rn_comm *c, int j, int need_there)
{
	const struct rn_path *p = &c->fo->path[j];
	struct rn_evdev *ev = path_ev(c, j);
	const struct rn_dev *d = path_dev(c, j);

	if (j == c->fo->active || p->state != RN_PATH_SPARE || !p->ok_here ||
	    (need_there && !p->ok_there))
		return 0;
	if (ev && (rn_events_dev_err(ev, d->nic.port) || rn_events_gid_gone(ev, d->nic.port, NULL)))
		return 0;
	return 1;
}

static int pick(const struct rn_comm *c, int need_there)
{
	int j;

	for (j = 0; j < c->fo->npaths; j++)
		if (usable(c, j, need_there))
			return j;
	return -1;
}

/* One WARN: no pair is left, with every pair and why it is out. */
static void say_none_left(struct rn_comm *c)
{
	char buf[900];
	int j, n = 0;

	if (c->fo->exhausted++)
		return;
	for (j = 0; j < c->fo->npaths && n < (int)sizeof(buf); j++) {
		const struct rn_path *p = &c->fo->path[j];
		const struct rn_dev *d = path_dev(c, j);
		const char *why = p->state == RN_PATH_DEAD    ? p->why :
				  !p->ok_here || !p->ok_there ? "the path check failed at connect" :
								"its NIC is down or lost its GID";

		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s%s:%d -> %s (%s)", j ? "; " : "",
			      d->nic.ibdev, d->nic.port, path_peer(c, j)->netdev, why);
	}
	rn_warn(RN_SUB_NET, RN_PFX "comm with %s (%s): no NIC pair left to move to: %s",
		c->peer_str, c->rpeer[0].host, buf);
}

/* Move every QP of the pair in use to ERR and take what completed before. */
static void quiesce(struct rn_comm *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[16];
	int q, n, i, rounds = 0, empty = 0;

	for (q = 0; q < c->nqps; q++)
		rn_verbs.modify_qp(c->qps[q], &a, IBV_QP_STATE);
	if (c->role == RN_ROLE_RECV && ((struct rn_recv_comm *)c)->flush_qp[0])
		rn_verbs.modify_qp(((struct rn_recv_comm *)c)->flush_qp[0], &a, IBV_QP_STATE);
	/* successes first, then the flushes: stop at the second empty poll */
	c->draining = 1;
	while (empty < 2 && rounds++ < 4096) {
		n = rn_verbs.poll_cq(c->mem[0].cq, 16, wc);
		if (n <= 0) {
			empty++;
			continue;
		}
		for (i = 0; i < n; i++)
			if (wc[i].status == IBV_WC_SUCCESS)
				c->fo->hooks->handle_wc(c, 0, &wc[i]);
	}
	c->draining = 0;
}

/* The comm's fields take pair @b; the pair in use goes back into its slot. */
static void swap_to(struct rn_comm *c, int b)
{
	struct rn_failover *fo = c->fo;
	struct rn_path *pa = &fo->path[fo->active], *pb = &fo->path[b];
	struct rn_recv_comm *rc = c->role == RN_ROLE_RECV ? (struct rn_recv_comm *)c : NULL;
	struct rn_send_comm *sc = rc ? NULL : (struct rn_send_comm *)c;

	pa->mem = c->mem[0];
	pa->rpeer = c->rpeer[0];
	memcpy(pa->qps, c->qps, sizeof(c->qps[0]) * (size_t)c->nqps);
	pa->sq_cap = c->sq_cap;
	pa->rctrl_rkey = rc ? rc->rfifo_rkey[0] : sc->rsizes_rkey[0];
	pa->cts_inline = rc ? rc->cts_inline : 0;
	pa->flush_qp = rc ? rc->flush_qp[0] : NULL;
	c->mem[0] = pb->mem;
	c->mem[0].gid_moved_said = 0;
	c->rpeer[0] = pb->rpeer;
	memcpy(c->qps, pb->qps, sizeof(c->qps[0]) * (size_t)c->nqps);
	c->sq_cap = pb->sq_cap;
	if (rc) {
		rc->rfifo_rkey[0] = pb->rctrl_rkey;
		rc->cts_inline = pb->cts_inline; /* a spare's: none (RN_CTS_SQ_DEPTH) */
		rc->flush_qp[0] = pb->flush_qp;
	} else {
		sc->rsizes_rkey[0] = pb->rctrl_rkey;
	}
	/* its resources live in the comm now: the slot must not free them (comm_free) */
	memset(pb->qps, 0, sizeof(pb->qps));
	pb->flush_qp = NULL;
	pb->mem.cq = NULL;
	pb->mem.ctrl_mr = NULL;
	pb->mem.ev = NULL;
	fo->active = b;
	c->idle = 0;
	c->last_progress_ns = rn_now_ns();
	c->last_check_ns = c->last_progress_ns;
	memset(c->qp_wait_ns, 0, sizeof(c->qp_wait_ns));
}

/* A recovery message: its own mailboxes and imm (rn_conn.h), beside the moves'. */
static int is_rec(uint32_t type)
{
	return type >= FO_REARM;
}

/* Post @m to the peer's inbox for pair @j (a move's or recovery's), on that pair's QP 0. */
static int send_msg(struct rn_comm *c, int j, struct fo_msg *m)
{
	struct rn_failover *fo = c->fo;
	int active = j == fo->active;
	struct ibv_qp *qp = active ? c->qps[0] : fo->path[j].qps[0];
	struct ibv_mr *mr = active ? c->mem[0].ctrl_mr : fo->path[j].mem.ctrl_mr;
	uint32_t rkey = active ? (c->role == RN_ROLE_RECV ?
					  ((struct rn_recv_comm *)c)->rfifo_rkey[0] :
					  ((struct rn_send_comm *)c)->rsizes_rkey[0]) :
				 fo->path[j].rctrl_rkey;
	int rec = is_rec(m->type);
	struct fo_msg *out = (struct fo_msg *)((char *)c->ctrl +
					       (rec ? RN_CTRL_ROUTBOX(c->cts_len, j) :
						      RN_CTRL_OUTBOX(c->cts_len, j)));
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	int ret;

	if (!qp || !mr)
		return -ENOTCONN;
	m->magic = FO_MAGIC;
	m->path = (uint32_t)j;
	m->sum = msg_sum(m);
	*out = *m;
	sge.addr = (uintptr_t)out;
	sge.length = sizeof(*out);
	sge.lkey = mr->lkey;
	/* bit 8 of the id: counted in the pair's send queue (it is the pair in use) */
	wr.wr_id = ((uint64_t)active << 8 | (uint64_t)j) << 3 | RN_WR_CTRL;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(rec ? RN_IMM_REC : RN_IMM_CTRL);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = c->rctrl_addr + (rec ? RN_CTRL_RINBOX(c->cts_len, j) :
							RN_CTRL_INBOX(c->cts_len, j));
	wr.wr.rdma.rkey = rkey;
	ret = rn_verbs_err(rn_verbs.post_send(qp, &wr, &bad));
	if (!ret && active)
		c->sq_used[0]++;
	return ret;
}

/* The record in our inbox for pair @j (recovery's: @rec): 0 when whole and meant for it. */
static int read_msg(const struct rn_comm *c, int j, int rec, struct fo_msg *m)
{
	const volatile struct fo_msg *in =
		(const volatile struct fo_msg *)((const char *)c->ctrl +
						 (rec ? RN_CTRL_RINBOX(c->cts_len, j) :
							RN_CTRL_INBOX(c->cts_len, j)));

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	memcpy(m, (const void *)in, sizeof(*m));
	if (m->magic != FO_MAGIC || m->sum != msg_sum(m) || m->path != (uint32_t)j ||
	    m->n > RN_SLOTS || m->type < FO_MOVE_REQ || m->type > FO_BACK ||
	    m->target > RN_SPARES_MAX || is_rec(m->type) != rec)
		return -EBADMSG;
	return 0;
}

static uint64_t ms_since(uint64_t t0)
{
	uint64_t now = rn_now_ns();

	return t0 && now > t0 ? (now - t0) / 1000000ull : 0;
}

/*
 * Why the pair left went bad, when its NIC here is still up (a port down says it all):
 * the route and neighbour checks against the peer's NIC, as the data path's diagnosis
 * of status 12 does. The comm goes on; the cause still wants fixing, so it is said.
 */
static void say_why_left(struct rn_comm *c, int a)
{
	struct rn_path *p = &c->fo->path[a];
	const struct rn_dev *d = p->mem.dev;
	struct rn_finding f = { 0 };
	char pfx[256];

	if (p->mem.ev && (rn_events_dev_err(p->mem.ev, d->nic.port) ||
			  rn_events_gid_gone(p->mem.ev, d->nic.port, NULL)))
		return;
	if (!rn_path_check.diagnose(&d->nic, &p->rpeer, &f)) {
		snprintf(pfx, sizeof(pfx), RN_PFX "failover: the pair %s:%d -> %s (%s) it left",
			 d->nic.ibdev, d->nic.port, p->rpeer.netdev, p->rpeer.host);
		rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
	}
	rn_finding_clear(&f);
}

void rn_failover_record(const struct rn_dev *from, const struct rn_dev *to, const char *why)
{
	static int told;
	const char *cause = "completion";
	int ret;

	if (!strncmp(why, "port down", 9))
		cause = "port-down";
	else if (!strncmp(why, "device fatal", 12))
		cause = "device-fatal";
	else if (strstr(why, "[gid-gone]"))
		cause = "gid-gone";
	else if (!strncmp(why, "the receiver moved", 18) ||
		 !strncmp(why, "the sender's side", 17) || strstr(why, "side of the pair failed"))
		cause = "peer-moved";
	ret = rn_fostate_add(rn_fostate_dir(), from->nic.ibdev, from->nic.port, from->nic.netdev,
			     to->nic.ibdev, cause);
	if (ret && !__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
		rn_info(RN_SUB_NET,
			RN_PFX "failover: the host's record %s/%s was not written: %s "
			       "(NCCL_ROCE_STATE_DIR)",
			rn_fostate_dir(), RN_FOSTATE_FILE, strerror(-ret));
}

/* The move, in the host's record (roce-doctor --prometheus counts it per NIC). */
static void fostate_add(const struct rn_comm *c, int a)
{
	rn_failover_record(c->fo->path[a].mem.dev, c->mem[0].dev, c->fo->path[a].why);
}

/* A move back to the comm's own pair (path 0, in the comm's fields now): one WARN. */
static void say_back(struct rn_comm *c, int a, const char *what)
{
	const struct rn_dev *oa = c->fo->path[a].mem.dev, *nb = c->mem[0].dev;
	char gid[48] = "";

	if (c->fo->path[0].gid_was != c->mem[0].gid_index)
		snprintf(gid, sizeof(gid), ", moved from %d", c->fo->path[0].gid_was);
	rn_warn(RN_SUB_NET,
		RN_PFX "recovery: %s comm with %s (%s): %s:%d -> %s is back in service (its NIC "
		       "up, its GID found again at index %d%s, the path checked and probed); "
		       "moved back from %s:%d -> %s in %llu ms; %s (recovery %d; "
		       "NCCL_ROCE_RECOVERY=0 turns this off)",
		c->role == RN_ROLE_SEND ? "send" : "recv", c->peer_str, c->rpeer[0].host,
		nb->nic.ibdev, nb->nic.port, c->rpeer[0].netdev, c->mem[0].gid_index, gid,
		oa->nic.ibdev, oa->nic.port, c->fo->path[a].rpeer.netdev,
		(unsigned long long)ms_since(c->fo->since_ns), what, c->fo->recoveries);
}

/* The one WARN a move gives, on each end (and the old pair's diagnosis, when it has one). */
static void say_moved(struct rn_comm *c, int a, const char *what)
{
	const struct rn_dev *oa = c->fo->path[a].mem.dev, *nb = c->mem[0].dev;

	if (c->fo->path[a].planned) {
		c->fo->recoveries++;
		say_back(c, a, what);
		return;
	}

	rn_warn(RN_SUB_NET,
		RN_PFX "failover: %s comm with %s (%s): %s:%d -> %s failed (%s); moved to %s:%d "
		       "-> %s (%s) in %llu ms; %s (move %d; NCCL_ROCE_FAILOVER=0 turns this off)",
		c->role == RN_ROLE_SEND ? "send" : "recv", c->peer_str, c->rpeer[0].host,
		oa->nic.ibdev, oa->nic.port, c->fo->path[a].rpeer.netdev, c->fo->path[a].why,
		nb->nic.ibdev, nb->nic.port, c->rpeer[0].netdev, c->rpeer[0].host,
		(unsigned long long)ms_since(c->fo->since_ns), what, c->fo->moves);
	say_why_left(c, a);
	fostate_add(c, a);
}

/* A move from pair @a has ended with @ret: said, and counted (0), or the comm failed. */
static int move_done(struct rn_comm *c, int a, int ret, const char *step, const char *what)
{
	if (ret) {
		rn_warn(RN_SUB_NET, RN_PFX "failover: comm with %s: %s on %s:%d failed: %s",
			c->peer_str, step, c->mem[0].dev->nic.ibdev, c->mem[0].dev->nic.port,
			strerror(-ret));
		return comm_fail(c, ret);
	}
	c->fo->moves++;
	c->fo->back_asks = 0;
	c->fo->back_next_ns = 0;
	say_moved(c, a, what);
	c->fo->since_ns = 0;
	return 0;
}

/* Receiver: move to pair @b and tell the sender where to resume. */
static int move_recv(struct rn_comm *c, int b, uint32_t flags)
{
	struct rn_failover *fo = c->fo;
	struct fo_msg m;
	int a = fo->active, n = 0, ret;
	char what[96];

	memset(&m, 0, sizeof(m));
	quiesce(c);
	swap_to(c, b);
	ret = fo->hooks->recv_rewind((struct rn_recv_comm *)c, m.seq, &n);
	if (!ret) {
		m.type = FO_RESUME;
		m.flags = flags;
		m.epoch = ++fo->epoch;
		m.n = (uint32_t)n;
		m.tail = ((struct rn_recv_comm *)c)->tail;
		ret = send_msg(c, b, &m);
	}
	snprintf(what, sizeof(what), "%d receive%s not complete asked again", n, n == 1 ? "" : "s");
	return move_done(c, a, ret, "the move", what);
}

/* Sender: take RESUME @m on pair @j. */
static int apply_resume(struct rn_comm *c, int j, const struct fo_msg *m)
{
	struct rn_failover *fo = c->fo;
	int a = fo->active, ret, nresent = 0;
	uint64_t resent = 0;
	char what[96];

	if (!fo->quiesced) {
		/* the receiver saw it first: its NIC, or ours silently */
		quiesce(c);
		path_dead(c, a,
			  m->flags & FO_F_BACK ? "left for the recovered pair" :
						 "the receiver moved the comm off it");
		if (!fo->since_ns)
			fo->since_ns = rn_now_ns();
	} else if (fo->path[a].planned && !((m->flags & FO_F_BACK) && j == 0)) {
		/* we asked to move back; the receiver took the comm elsewhere */
		snprintf(fo->path[a].why, sizeof(fo->path[a].why), "%s",
			 "the receiver moved the comm off it");
	}
	fo->path[a].planned = (m->flags & FO_F_BACK) && j == 0;
	swap_to(c, j);
	fo->seen = m->epoch;
	fo->epoch = m->epoch;
	ret = fo->hooks->send_resume((struct rn_send_comm *)c, m->seq, (int)m->n, m->tail, &nresent,
				     &resent);
	c->moving = 0;
	fo->quiesced = 0;
	fo->resent += resent;
	snprintf(what, sizeof(what), "%d message%s, %llu bytes sent again", nresent,
		 nresent == 1 ? "" : "s", (unsigned long long)resent);
	return move_done(c, a, ret, "resuming", what);
}

/* Sender: ask for a move on a pair we can use. 0, or -ENETUNREACH (none left, said). */
static int ask_move(struct rn_comm *c)
{
	struct rn_failover *fo = c->fo;
	struct fo_msg m;
	int j;

	while ((j = pick(c, 0)) >= 0) {
		int ret;

		memset(&m, 0, sizeof(m));
		m.type = FO_MOVE_REQ;
		m.epoch = fo->seen;
		for (int i = 0; i < fo->npaths; i++)
			if (fo->path[i].state == RN_PATH_DEAD)
				m.dead |= 1u << i;
		ret = send_msg(c, j, &m);
		if (!ret)
			return 0;
		path_dead(c, j, "posting the move request failed");
	}
	say_none_left(c);
	return -ENETUNREACH;
}

int rn_failover_begin(struct rn_comm *c, int err, const char *why)
{
	struct rn_failover *fo = c->fo;
	int b;

	(void)err;
	if (!fo || c->err || fo->exhausted)
		return 0;
	if (c->moving)
		return 1; /* the old pair's echo: a move is under way */
	if (!fo->since_ns)
		fo->since_ns = rn_now_ns();
	path_dead(c, fo->active, why);
	if (c->role == RN_ROLE_RECV) {
		b = pick(c, 1);
		if (b < 0) {
			say_none_left(c);
			return 0;
		}
		move_recv(c, b, 0);
		return !c->err;
	}
	quiesce(c);
	fo->quiesced = 1;
	c->moving = 1;
	fo->deadline_ns = rn_now_ns() + c->stall_ns;
	if (ask_move(c)) {
		c->moving = 0;
		return 0;
	}
	return 1;
}

static void rearm_asked(struct rn_comm *c, const struct fo_msg *m);
static void rearm_answered(struct rn_comm *c, const struct fo_msg *a);

/* A message on pair @j (recovery's: @rec; its receive already re-posted). */
static void take_msg(struct rn_comm *c, int j, int rec)
{
	struct rn_failover *fo = c->fo;
	struct fo_msg m;
	int i, b, back;

	if (read_msg(c, j, rec, &m)) {
		rn_info(RN_SUB_NET,
			RN_PFX "failover: comm with %s: a message on pair %d was not "
			       "whole; waiting for the next",
			c->peer_str, j);
		return;
	}
	switch (m.type) {
	case FO_PROBE:
		/* the receiver's completion of it is its answer; here it proves the pair */
		if (c->role == RN_ROLE_SEND && fo->path[j].state == RN_PATH_ARMING &&
		    m.gen == fo->rearm_gen && m.target == (uint32_t)j)
			fo->path[j].state = RN_PATH_SPARE;
		return;
	case FO_REARM:
		if (c->role == RN_ROLE_SEND && !c->moving)
			rearm_asked(c, &m);
		return;
	case FO_ARMED:
		if (c->role == RN_ROLE_RECV)
			rearm_answered(c, &m);
		return;
	case FO_BACK:
		if (c->role == RN_ROLE_SEND)
			c->fo->back = 1; /* taken at the next idle check (back_start) */
		return;
	default:
		break;
	}
	if (c->role == RN_ROLE_RECV) {
		if (m.type != FO_MOVE_REQ || m.epoch < fo->epoch || j == fo->active)
			return; /* crossed our own move: the sender takes our RESUME */
		if (!fo->since_ns)
			fo->since_ns = rn_now_ns();
		for (i = 0; i < fo->npaths; i++)
			if (m.dead & (1u << i) && i != fo->active)
				path_dead(c, i, "the sender found it broken");
		b = usable(c, j, 1) ? j : pick(c, 1);
		back = (m.flags & FO_F_BACK) && b == 0;
		path_dead(c, fo->active,
			  back ? "left for the recovered pair" :
				 "the sender's side failed (it asked to move)");
		fo->path[fo->active].planned = back;
		if (b < 0) {
			say_none_left(c);
			comm_fail(c, -ENETUNREACH);
			return;
		}
		move_recv(c, b, back ? FO_F_BACK : 0);
		return;
	}
	if (m.type != FO_RESUME || m.epoch <= fo->seen)
		return;
	if (!usable(c, j, 0) && j != fo->active) {
		/* the receiver chose a pair whose NIC here just failed: ask again elsewhere */
		path_dead(c, j, "its NIC here failed");
		fo->seen = m.epoch;
		if (!c->moving) {
			quiesce(c);
			fo->quiesced = 1;
			c->moving = 1;
			fo->deadline_ns = rn_now_ns() + c->stall_ns;
		}
		if (ask_move(c))
			comm_fail(c, -ENETUNREACH);
		return;
	}
	apply_resume(c, j, &m);
}

/* ---- recovery -------------------------------------------------------------- */

#define RN_BACKOFF_MAX_MS 60000ull
#define RN_BACK_EVERY_NS (1000ull * 1000000ull) /* the first wait for a move back, doubling */
#define RN_PLANNED_WAIT_NS (200ull * 1000000ull)

/*
 * 1 when our NIC of @p lost its link more than NCCL_ROCE_FLAP_MAX times within
 * NCCL_ROCE_FLAP_WINDOW_S: it is not brought back (said once per NIC and streak).
 */
static int kept_out(const struct rn_comm *c, const struct rn_path *p, uint64_t now)
{
	const struct rn_config *cfg = &c->eng->cfg;
	struct rn_dev *d = p->mem.dev;
	uint64_t win = (uint64_t)cfg->flap_window_s * 1000000000ull;
	unsigned int n;
	int out, tell = 0;

	if (!cfg->flap_max)
		return 0;
	n = rn_events_port_errs(p->mem.ev, d->nic.port, now > win ? now - win : 0);
	out = n > (unsigned int)cfg->flap_max;
	pthread_mutex_lock(&d->lock);
	if (out && !d->kept_out_told)
		tell = d->kept_out_told = 1;
	else if (!out)
		d->kept_out_told = 0;
	pthread_mutex_unlock(&d->lock);
	if (tell)
		rn_warn(RN_SUB_NET,
			RN_PFX "recovery: %s:%d (%s) lost its link %u times within %d s, more "
			       "than NCCL_ROCE_FLAP_MAX=%d: its NIC pairs are kept out of service "
			       "until its link stays up for NCCL_ROCE_FLAP_WINDOW_S; check its "
			       "cable, transceiver and switch port",
			d->nic.ibdev, d->nic.port, d->nic.netdev, n, cfg->flap_window_s,
			cfg->flap_max);
	return out;
}

/* 1 when our NIC of @p has a link and its GID, -0 when not (its clock starts again). */
static int nic_up(struct rn_path *p)
{
	const struct rn_dev *d = p->mem.dev;

	if (rn_events_dev_err(p->mem.ev, d->nic.port) ||
	    rn_events_gid_gone(p->mem.ev, d->nic.port, NULL)) {
		p->up_since_ns = 0;
		return 0;
	}
	return 1;
}

/*
 * 1 when our NIC of dead pair @p has been up for NCCL_ROCE_RECOVERY_DELAY_MS; a pair left
 * for a recovered one (planned) never went down: one idle check's wait, for the packets
 * still in flight on it to go.
 */
static int nic_back(const struct rn_comm *c, struct rn_path *p, uint64_t now)
{
	uint64_t delay = (uint64_t)c->eng->cfg.recovery_delay_ms * 1000000ull;

	if (!nic_up(p))
		return 0;
	if (!p->up_since_ns)
		p->up_since_ns = now;
	if (p->planned)
		delay = RN_MIN(delay, RN_PLANNED_WAIT_NS);
	return now - p->up_since_ns >= delay;
}

static void check_drop(struct rn_failover *fo)
{
	if (fo->chk) {
		rn_path_check.free(fo->chk);
		fo->chk = NULL;
	}
}

/* Pair @p's QPs (not the pair in use) to ERR: nothing lands there until its next re-arm. */
static void quiesce_path(struct rn_path *p, int nqps)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int q;

	for (q = 0; q < nqps; q++)
		if (p->qps[q])
			rn_verbs.modify_qp(p->qps[q], &a, IBV_QP_STATE);
	if (p->flush_qp)
		rn_verbs.modify_qp(p->flush_qp, &a, IBV_QP_STATE);
}

/* A recovery message of @type about pair @target, over pair @via. 0 or -errno. */
static int send_rec(struct rn_comm *c, int via, uint32_t type, int target, uint32_t flags)
{
	struct fo_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.target = (uint32_t)target;
	m.gen = c->fo->rearm_gen;
	m.flags = flags;
	m.epoch = c->fo->epoch; /* REARM: the sender must have taken this move (rearm_answer) */
	return send_msg(c, via, &m);
}

/* Receiver: pair @j is not back (@why); its next try waits twice as long as the last. */
static void rearm_stop(struct rn_comm *c, int j, const char *why, uint64_t now)
{
	struct rn_failover *fo = c->fo;
	struct rn_path *p = &fo->path[j];

	check_drop(fo);
	fo->rearm = -1;
	p->state = RN_PATH_DEAD;
	/* in ERR again: a sender that took it for a spare meanwhile fails fast on it */
	quiesce_path(p, c->nqps);
	p->backoff_ms = p->backoff_ms ? RN_MIN(p->backoff_ms * 2, RN_BACKOFF_MAX_MS) : 1000;
	p->next_try_ns = now + p->backoff_ms * 1000000ull;
	rn_info(RN_SUB_NET,
		RN_PFX "recovery: comm with %s: %s:%d -> %s not back yet: %s; next "
		       "try in %llu ms",
		c->peer_str, p->mem.dev->nic.ibdev, p->mem.dev->nic.port, p->rpeer.netdev, why,
		(unsigned long long)p->backoff_ms);
}

/* Receiver: pair @j armed at both ends and probed: a spare again, or the comm's own. */
static void rearm_done(struct rn_comm *c, int j)
{
	struct rn_failover *fo = c->fo;
	struct rn_path *p = &fo->path[j];

	fo->rearm = -1;
	p->state = RN_PATH_SPARE;
	p->ok_here = p->ok_there = 1;
	p->backoff_ms = 0;
	rn_info(RN_SUB_NET,
		RN_PFX "recovery: comm with %s: %s:%d -> %s is back in service (GID "
		       "index %d, was %d) after %llu ms",
		c->peer_str, p->mem.dev->nic.ibdev, p->mem.dev->nic.port, p->rpeer.netdev,
		p->mem.gid_index, p->gid_was, (unsigned long long)ms_since(fo->rearm_since_ns));
	p->planned = 0;
}

/* Receiver: start bringing dead pair @j back: its path check first. */
static void rearm_begin(struct rn_comm *c, int j, uint64_t now)
{
	const struct rn_config *cfg = &c->eng->cfg;
	struct rn_failover *fo = c->fo;
	struct rn_path *p = &fo->path[j];

	fo->rearm = j;
	fo->rearm_step = 0;
	fo->rearm_since_ns = now;
	fo->rearm_deadline_ns = now + ((uint64_t)cfg->neigh_timeout_ms + 1000) * 1000000ull;
	p->state = RN_PATH_ARMING;
	/* a check that cannot start leaves the pair unchecked, as at connect */
	if (cfg->route_check == RN_ROUTE_CHECK_OFF ||
	    rn_path_check.start(&p->mem.dev->nic, &p->rpeer, cfg->neigh_timeout_ms, &fo->chk))
		fo->chk = NULL;
}

/*
 * The path check under way (fo->chk): -EAGAIN while it runs, 0 when it passed
 * (or only warns, or could not run), -EHOSTUNREACH with @why when it refuses the pair.
 */
static int check_step(struct rn_comm *c, uint64_t now, char *why, size_t len)
{
	const struct rn_config *cfg = &c->eng->cfg;
	struct rn_failover *fo = c->fo;
	struct rn_finding f = { 0 };
	int ret;

	if (!fo->chk)
		return 0;
	ret = rn_path_check.poll(fo->chk, &f);
	if (ret == -EAGAIN && now < fo->rearm_deadline_ns)
		return -EAGAIN;
	check_drop(fo);
	if (ret == -EHOSTUNREACH && cfg->route_check == RN_ROUTE_CHECK_STRICT) {
		snprintf(why, len, "the path check refuses it: [%s] %s%s%s", rn_cause_id(f.cause),
			 f.msg ? f.msg : "", f.fix && *f.fix ? "; fix: " : "", f.fix ? f.fix : "");
		rn_finding_clear(&f);
		return -EHOSTUNREACH;
	}
	rn_finding_clear(&f);
	return 0;
}

/* Receiver: the re-arm of fo->rearm, one step per idle check. */
static void rearm_step(struct rn_comm *c, uint64_t now)
{
	struct rn_failover *fo = c->fo;
	int j = fo->rearm, ret;
	char why[480];

	if (fo->rearm_step == 0) {
		ret = check_step(c, now, why, sizeof(why));
		if (ret == -EAGAIN)
			return;
		if (ret) {
			rearm_stop(c, j, why, now);
			return;
		}
		/*
		 * The sender re-arms its end first: until it has moved off the pair (it took our
		 * last RESUME), it may still send on it, and a QP of ours reset meanwhile would
		 * take its writes (same PSNs from 0) into a pair nobody reads.
		 */
		fo->rearm_gen++;
		ret = send_rec(c, fo->active, FO_REARM, j, 0);
		if (ret) {
			snprintf(why, sizeof(why), "posting the request failed: %s",
				 strerror(-ret));
			rearm_stop(c, j, why, now);
			return;
		}
		fo->rearm_step = 1;
		fo->rearm_deadline_ns = now + c->stall_ns;
		return;
	}
	if (now > fo->rearm_deadline_ns)
		rearm_stop(c, j,
			   fo->rearm_step == 1 ? "the peer did not answer" :
						 "its probe did not complete",
			   now);
}

/* Receiver: the sender's ARMED for the pair being re-armed: probe it over itself. */
static void rearm_answered(struct rn_comm *c, const struct fo_msg *a)
{
	struct rn_failover *fo = c->fo;
	uint64_t now = rn_now_ns();
	int j = fo->rearm, ret, old;
	char why[96];

	if (j < 0 || a->target != (uint32_t)j || a->gen != fo->rearm_gen || fo->rearm_step != 1)
		return; /* a late answer to an attempt given up */
	if (!(a->flags & FO_F_OK)) {
		rearm_stop(c, j,
			   "the peer's NIC of the pair is not back yet, or it has not moved "
			   "off it yet",
			   now);
		return;
	}
	/* the sender's end is armed (and it is off the pair): ours now, then the probe */
	ret = fo->rearm_path(c, j, &old);
	if (ret) {
		snprintf(why, sizeof(why), "re-arming its QPs failed: %s", strerror(-ret));
		rearm_stop(c, j, why, now);
		return;
	}
	fo->path[j].gid_was = old;
	ret = send_rec(c, j, FO_PROBE, j, 0);
	if (ret) {
		snprintf(why, sizeof(why), "posting its probe failed: %s", strerror(-ret));
		rearm_stop(c, j, why, now);
		return;
	}
	fo->rearm_step = 2;
	fo->rearm_deadline_ns = now + c->stall_ns;
}

/* Sender: the receiver asks to bring pair m->target back: answered at the next idle check. */
static void rearm_asked(struct rn_comm *c, const struct fo_msg *m)
{
	struct rn_failover *fo = c->fo;

	check_drop(fo);
	fo->rearm = (int)m->target;
	fo->rearm_gen = m->gen;
	fo->rearm_epoch = m->epoch;
	fo->rearm_step = 0;
	fo->rearm_deadline_ns = rn_now_ns() +
				((uint64_t)c->eng->cfg.neigh_timeout_ms + 1000) * 1000000ull;
}

/*
 * Sender: the receiver asks to move back to path 0 (BACK). Our pair in use goes to ERR
 * before MOVE_REQ leaves, so nothing the receiver wrote over it can land after the move.
 */
static void back_start(struct rn_comm *c)
{
	struct rn_failover *fo = c->fo;
	int a = fo->active, i;
	struct fo_msg m;

	fo->back = 0;
	if (c->moving || a == 0 || !usable(c, 0, 0))
		return;
	fo->since_ns = rn_now_ns();
	path_dead(c, a, "left for the recovered pair");
	fo->path[a].planned = 1;
	quiesce(c);
	fo->quiesced = 1;
	c->moving = 1;
	fo->deadline_ns = rn_now_ns() + c->stall_ns;
	memset(&m, 0, sizeof(m));
	m.type = FO_MOVE_REQ;
	m.flags = FO_F_BACK;
	m.epoch = fo->seen;
	for (i = 0; i < fo->npaths; i++)
		if (fo->path[i].state == RN_PATH_DEAD && !fo->path[i].planned)
			m.dead |= 1u << i;
	if (!send_msg(c, 0, &m))
		return;
	/* path 0 cannot take it after all: a move as any other */
	path_dead(c, 0, "posting the move request failed");
	fo->path[a].planned = 0;
	if (ask_move(c))
		comm_fail(c, -ENETUNREACH);
}

/* Sender: re-arm our end of fo->rearm when our NIC is back and the path passes; ARMED. */
static void rearm_answer(struct rn_comm *c, uint64_t now)
{
	const struct rn_config *cfg = &c->eng->cfg;
	struct rn_failover *fo = c->fo;
	int j = fo->rearm, ok = 0, old, ret;
	struct rn_path *p;
	char why[480] = "";

	if (j >= fo->npaths || j == fo->active || fo->seen < fo->rearm_epoch) {
		snprintf(why, sizeof(why),
			 "it is the pair in use here (the last move not taken yet)");
	} else {
		p = &fo->path[j];
		if (!nic_up(p)) {
			snprintf(why, sizeof(why), "its NIC here is down or has no GID");
		} else if (kept_out(c, p, now)) {
			snprintf(why, sizeof(why), "its NIC here flaps (NCCL_ROCE_FLAP_MAX)");
		} else {
			if (fo->rearm_step == 0) {
				fo->rearm_step = 1;
				if (cfg->route_check == RN_ROUTE_CHECK_OFF ||
				    rn_path_check.start(&p->mem.dev->nic, &p->rpeer,
							cfg->neigh_timeout_ms, &fo->chk))
					fo->chk = NULL;
			}
			ret = check_step(c, now, why, sizeof(why));
			if (ret == -EAGAIN)
				return;
			if (!ret) {
				ret = fo->rearm_path(c, j, &old);
				if (ret)
					snprintf(why, sizeof(why), "re-arming its QPs failed: %s",
						 strerror(-ret));
			}
			if (!ret) {
				/* a spare once the receiver's probe lands on it (take_msg) */
				ok = 1;
				p->gid_was = old;
				p->state = RN_PATH_ARMING;
				p->ok_here = p->ok_there = 1;
				p->planned = 0;
			}
		}
	}
	check_drop(fo);
	fo->rearm = -1;
	if (!ok)
		rn_info(RN_SUB_NET, RN_PFX "recovery: comm with %s: pair %d not re-armed here: %s",
			c->peer_str, j, why);
	if (send_rec(c, fo->active, FO_ARMED, j, ok ? FO_F_OK : 0))
		rn_info(RN_SUB_NET,
			RN_PFX "recovery: comm with %s: the answer for pair %d was not "
			       "posted",
			c->peer_str, j);
}

void rn_failover_recover(struct rn_comm *c, uint64_t now)
{
	struct rn_failover *fo = c->fo;
	int j;

	if (!fo || c->err || c->moving || fo->exhausted || !c->eng->cfg.recovery)
		return;
	if (c->role == RN_ROLE_SEND) {
		if (fo->rearm >= 0)
			rearm_answer(c, now);
		else if (fo->back)
			back_start(c);
		return;
	}
	if (fo->rearm >= 0) {
		rearm_step(c, now);
		return;
	}
	if (fo->active != 0 && usable(c, 0, 1) && now >= fo->back_next_ns) {
		/* the comm's own pair is back: the sender starts the move (back_start) */
		/* each ask takes a receive at the sender until it polls: later asks wait longer */
		if (!send_rec(c, fo->active, FO_BACK, 0, 0))
			fo->back_next_ns = now + (RN_BACK_EVERY_NS << RN_MIN(fo->back_asks++, 6u));
		return;
	}
	/* the comm's own pair first (j = 0): it is where the comm moves back to */
	for (j = 0; j < fo->npaths; j++) {
		struct rn_path *p = &fo->path[j];

		if (j == fo->active || p->state != RN_PATH_DEAD)
			continue;
		if (!nic_back(c, p, now) || now < p->next_try_ns || kept_out(c, p, now))
			continue;
		rearm_begin(c, j, now);
		return;
	}
}

void rn_failover_ctrl(struct rn_comm *c, int q, uint32_t imm)
{
	struct ibv_recv_wr wr = { 0 }, *bad;

	wr.wr_id = (uint64_t)q << 3 | RN_WR_RECV;
	if (rn_verbs.post_recv(c->qps[q], &wr, &bad) && !c->draining) {
		comm_fail(c, -EIO);
		return;
	}
	if (c->fo && !c->draining)
		take_msg(c, c->fo->active, imm == RN_IMM_REC);
}

/* The data QP of spare @j numbered @qpn, -1 none. */
static int spare_qp(const struct rn_comm *c, int j, uint32_t qpn)
{
	int q;

	for (q = 0; q < c->nqps; q++)
		if (c->fo->path[j].qps[q] && c->fo->path[j].qps[q]->qp_num == qpn)
			return q;
	return -1;
}

int rn_failover_poll(struct rn_comm *c)
{
	struct rn_failover *fo = c->fo;
	struct ibv_wc wc[8];
	int j, i, n;

	if (!fo || c->err)
		return c->err;
	for (j = 0; j < fo->npaths && !c->err; j++) {
		struct rn_path *p = &fo->path[j];

		if (j == fo->active || p->state == RN_PATH_DEAD || !p->mem.cq)
			continue;
		n = rn_verbs.poll_cq(p->mem.cq, (int)RN_ARRAY_SIZE(wc), wc);
		for (i = 0; i < n && !c->err; i++) {
			int kind = RN_WR_KIND(wc[i].wr_id), q = spare_qp(c, j, wc[i].qp_num);

			if (kind == RN_WR_CTRL && j == fo->rearm && fo->rearm_step == 2 &&
			    c->role == RN_ROLE_RECV) {
				/* the probe over the pair being brought back: it carries, or not */
				char why[96];

				if (wc[i].status == IBV_WC_SUCCESS) {
					rearm_done(c, j);
				} else {
					snprintf(why, sizeof(why), "its probe failed: %s",
						 rn_wc_status_str(wc[i].status));
					rearm_stop(c, j, why, rn_now_ns());
				}
			} else if (kind == RN_WR_CTRL && wc[i].status != IBV_WC_SUCCESS) {
				char why[96];

				snprintf(why, sizeof(why), "a failover message failed: %s",
					 rn_wc_status_str(wc[i].status));
				path_dead(c, j, why);
				if (c->moving && ask_move(c))
					comm_fail(c, -ENETUNREACH);
			} else if (kind == RN_WR_RECV && wc[i].status == IBV_WC_SUCCESS && q >= 0) {
				struct ibv_recv_wr wr = { 0 }, *bad;

				wr.wr_id = (uint64_t)q << 3 | RN_WR_RECV;
				rn_verbs.post_recv(p->qps[q], &wr, &bad);
				if (be32toh(wc[i].imm_data) == RN_IMM_CTRL ||
				    be32toh(wc[i].imm_data) == RN_IMM_REC)
					take_msg(c, j, be32toh(wc[i].imm_data) == RN_IMM_REC);
			} else if (j == fo->active) {
				/* a message moved us here: what follows is the data path's */
				c->fo->hooks->handle_wc(c, 0, &wc[i]);
			}
		}
	}
	if (c->moving && !c->err && c->fd >= 0 && rn_oob_peer_alive(c->fd) == -ECONNRESET) {
		/* no RESUME will come from a process that is gone: say so, not "no pair" */
		rn_warn(RN_SUB_NET,
			RN_PFX "failover: send comm with %s (%s): [peer-died] the peer "
			       "closed its side channel during the move (its process ended)",
			c->peer_str, c->rpeer[0].host);
		return comm_fail(c, -ECONNRESET);
	}
	if (c->moving && !c->err && rn_now_ns() > fo->deadline_ns && fo->path[fo->active].planned &&
	    c->fd >= 0 && !rn_oob_peer_alive(c->fd)) {
		/*
		 * A move back asked for on a pair that works: the receiver takes it when NCCL
		 * next polls it, which may be the next collective. Its process lives: wait on.
		 */
		fo->deadline_ns = rn_now_ns() + c->stall_ns;
	}
	if (c->moving && !c->err && rn_now_ns() > fo->deadline_ns) {
		rn_warn(RN_SUB_NET,
			RN_PFX "failover: send comm with %s (%s): no answer to the move request "
			       "for %llu ms (the QPs' retry budget twice over): the receiver is "
			       "gone or no pair reaches it",
			c->peer_str, c->rpeer[0].host, (unsigned long long)ms_since(fo->since_ns));
		say_none_left(c);
		comm_fail(c, -ETIMEDOUT);
	}
	return c->err;
}
