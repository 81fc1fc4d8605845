// SPDX-License-Identifier: MIT
/*
 * vNIC member loss: a comm over a fused NIC (makeVDevice, src/vdev.c) whose member pair
 * fails leaves that pair's QPs out and goes on over the pairs left. A vNIC's siblings
 * are its members themselves, so there is no spare to move to (src/failover.c is the
 * one-NIC comm's failover); what changes is the set of QPs every message is spread over.
 *
 * A pair is (sender member, receiver member), bit s * RN_VNIC_MAX + r of a mask both
 * ends read the same way; QP q belongs to the pair (q % sender members, q % receiver
 * members) at both ends (src/comm.c). A failed completion names its QP's pair; a member
 * of ours that goes down (port, fatal error, GID gone) takes every pair it is in.
 *
 * Where to resume: the receiver decides, the sender says when.
 *   - The side that sees the failure moves the pair's QPs to ERR, so that nothing more
 *     lands through them. The receiver tells the sender (DROP, on a QP left).
 *   - The sender stops handing out requests and lets its QPs left finish what they carry
 *     (their completions taken as usual), so that no WRITE of an old split is still in
 *     flight when the receiver counts what arrived; then MOVE_REQ with the pairs it found
 *     out, on a QP left: RC order puts it behind that data.
 *   - The receiver, on MOVE_REQ: takes what its CQs hold, keeps only the QPs of the pairs
 *     left (in their order: both ends number them alike), takes every receive not whole as
 *     not delivered and writes its CTS entries again (rn_xfer_recv_rewind), then RESUME
 *     with the pairs out, on the first QP left, behind those entries.
 *   - The sender, on RESUME: keeps the same QPs and serves the slots again as a one-NIC
 *     move does (rn_xfer_send_resume): what is not listed is complete, what is listed goes
 *     again, split over the QPs left (a vNIC comm splits every message over all its QPs).
 * Epochs make crossing messages harmless: the receiver counts its RESUMEs, MOVE_REQ names
 * the last one the sender took, and a pair found out after a MOVE_REQ starts another round.
 * Both ends bound each wait by the comm's stall bound: a dead peer gives an error.
 *
 * Memory needs nothing: every member registered NCCL's buffers when they were made.
 * Not built: bringing a member pair back (the one-NIC comm's recovery); a vNIC comm keeps
 * the pairs it has left, and new comms use every member again.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_clock.h"
#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_log.h"
#include "rn_oob.h"
#include "rn_verbs.h"

#define VF_MAGIC 0x524e5646u /* "RNVF" */
#define VF_PAIRS (RN_VNIC_MAX * RN_VNIC_MAX)
#define VF_BOX_MOVE 0        /* MOVE_REQ (to the receiver), RESUME (to the sender) */
#define VF_BOX_DROP 1        /* DROP (to the sender) */

enum vf_type { VF_DROP = 1, VF_MOVE_REQ = 2, VF_RESUME = 3 };
enum vf_state {
	VF_IDLE,
	VF_DRAIN, /* sender: its pairs out in ERR, waiting for the QPs left to finish */
	VF_WAIT,  /* sender: MOVE_REQ sent, waiting for RESUME */
	VF_ASKED, /* receiver: DROP sent, waiting for MOVE_REQ */
};

struct vf_msg {
	uint32_t magic;
	uint32_t type;
	uint32_t epoch;   /* RESUME: the receiver's move; MOVE_REQ, DROP: the last RESUME */
	uint32_t dead_lo; /* the pairs out */
	uint32_t dead_hi;
	uint32_t n;       /* RESUME: slots to serve again */
	uint32_t tail;    /* RESUME: the last slot sequence the receiver had posted */
	uint32_t rsvd;
	uint32_t seq[RN_SLOTS];
	uint32_t sum; /* of every word before it: a record overwritten mid-read fails it */
};
_Static_assert(sizeof(struct vf_msg) <= RN_FO_BOX, "a message fits its box");
_Static_assert(RN_SPARES_MAX >= 1, "two mailboxes a direction");
_Static_assert(VF_PAIRS <= 64, "the pairs are a 64-bit mask");

struct rn_vfail {
	const struct rn_fo_hooks *hooks; /* the data path's steps (src/xfer.c) */
	int nall;                        /* the QPs made at connect, in their order */
	struct ibv_qp *all[RN_MAX_QPS];
	uint8_t all_mem[RN_MAX_QPS], all_rmem[RN_MAX_QPS];
	uint64_t dead;     /* pairs out, as known here */
	uint64_t applied;  /* pairs c->qps leaves out now (both ends agree) */
	char why[VF_PAIRS][120];
	int state;         /* enum vf_state */
	uint32_t epoch;    /* receiver: RESUMEs sent; sender: the last taken */
	uint64_t since_ns; /* the round's detection */
	uint64_t deadline_ns;
	int due;           /* msg holds a MOVE_REQ or RESUME to act on */
	struct vf_msg msg;
	int moves;
	int exhausted; /* no pair was left (said): judged as before */
	uint64_t resent;
	unsigned int polls;
};

static int comm_fail(struct rn_comm *c, int err)
{
	if (!c->err)
		c->err = err;
	return c->err;
}

/* The pair of our member @m and the peer's @r, as both ends number it. */
static int pair_of(const struct rn_comm *c, int m, int r)
{
	return c->role == RN_ROLE_SEND ? m * RN_VNIC_MAX + r : r * RN_VNIC_MAX + m;
}

static int our_mem(const struct rn_comm *c, int bit)
{
	return c->role == RN_ROLE_SEND ? bit / RN_VNIC_MAX : bit % RN_VNIC_MAX;
}

static int peer_mem(const struct rn_comm *c, int bit)
{
	return c->role == RN_ROLE_SEND ? bit % RN_VNIC_MAX : bit / RN_VNIC_MAX;
}

static int all_pair(const struct rn_comm *c, int o)
{
	return pair_of(c, c->vf->all_mem[o], c->vf->all_rmem[o]);
}

/* Every pair the comm's QPs make. */
static uint64_t pairs_made(const struct rn_comm *c)
{
	uint64_t m = 0;
	int o;

	for (o = 0; o < c->vf->nall; o++)
		m |= 1ull << all_pair(c, o);
	return m;
}

static int live_pairs(const struct rn_comm *c)
{
	return __builtin_popcountll(pairs_made(c) & ~c->vf->dead);
}

static int say_pair(const struct rn_comm *c, int bit, char *buf, size_t len)
{
	const struct rn_dev *d = c->mem[our_mem(c, bit)].dev;

	return snprintf(buf, len, "%s:%d -> %s", d->nic.ibdev, d->nic.port,
			c->rpeer[peer_mem(c, bit)].netdev);
}

/* "a; b" of the pairs in @mask, each with its cause when @why. */
static void say_pairs(const struct rn_comm *c, uint64_t mask, int why, char *buf, size_t len)
{
	size_t n = 0;
	int bit;

	buf[0] = 0;
	for (bit = 0; bit < VF_PAIRS && n < len; bit++) {
		if (!(mask >> bit & 1))
			continue;
		if (n)
			n += (size_t)snprintf(buf + n, len - n, "; ");
		if (n < len)
			n += (size_t)say_pair(c, bit, buf + n, len - n);
		if (why && n < len)
			n += (size_t)snprintf(buf + n, len - n, " (%s)", c->vf->why[bit]);
	}
}

/* Pairs @mask out, said in @why: their QPs to ERR, so that nothing more lands through them. */
static void mark(struct rn_comm *c, uint64_t mask, const char *why)
{
	struct rn_vfail *vf = c->vf;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint64_t add = mask & pairs_made(c) & ~vf->dead;
	int bit, o;

	if (!add)
		return;
	for (bit = 0; bit < VF_PAIRS; bit++)
		if (add >> bit & 1)
			snprintf(vf->why[bit], sizeof(vf->why[bit]), "%s", why);
	vf->dead |= add;
	for (o = 0; o < vf->nall; o++)
		if (add >> all_pair(c, o) & 1)
			rn_verbs.modify_qp(vf->all[o], &a, IBV_QP_STATE);
	if (!vf->since_ns)
		vf->since_ns = rn_now_ns();
}

/* One WARN: no pair is left, with every pair and why it is out. */
static void say_none_left(struct rn_comm *c)
{
	char buf[700];

	say_pairs(c, pairs_made(c), 1, buf, sizeof(buf));
	rn_warn(RN_SUB_NET, RN_PFX "failover: %s comm with %s (%s): no vNIC member pair left: %s",
		c->role == RN_ROLE_SEND ? "send" : "recv", c->peer_str, c->rpeer[0].host, buf);
}

static uint32_t msg_sum(const struct vf_msg *m)
{
	return rn_ctrl_sum(m, offsetof(struct vf_msg, sum), 0x811c9dc5u);
}

/* The first QP of c->qps whose pair is not out: messages ride it. -1 none. */
static int first_live(const struct rn_comm *c)
{
	int q;

	for (q = 0; q < c->nqps; q++)
		if (!(c->vf->dead >> pair_of(c, c->qp_mem[q], c->qp_rmem[q]) & 1))
			return q;
	return -1;
}

/* Post @m into the peer's box @box, on the first QP left (behind what it carries). */
static int send_msg(struct rn_comm *c, int box, struct vf_msg *m)
{
	struct vf_msg *out = (struct vf_msg *)((char *)c->ctrl + RN_CTRL_OUTBOX(c->cts_len, box));
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_sge sge;
	int q = first_live(c), ret;

	if (q < 0)
		return -ENETUNREACH;
	m->magic = VF_MAGIC;
	m->sum = msg_sum(m);
	*out = *m;
	sge.addr = (uintptr_t)out;
	sge.length = sizeof(*out);
	sge.lkey = c->mem[c->qp_mem[q]].ctrl_mr->lkey;
	/* bit 8 of the id: counted in the QP's send queue (src/xfer.c takes it off) */
	wr.wr_id = ((uint64_t)1 << 8 | (uint64_t)box) << 3 | RN_WR_CTRL;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(RN_IMM_CTRL);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = c->rctrl_addr + RN_CTRL_INBOX(c->cts_len, box);
	wr.wr.rdma.rkey = c->role == RN_ROLE_RECV ?
				  ((struct rn_recv_comm *)c)->rfifo_rkey[c->qp_rmem[q]] :
				  ((struct rn_send_comm *)c)->rsizes_rkey[c->qp_rmem[q]];
	ret = rn_verbs_err(rn_verbs.post_send(c->qps[q], &wr, &bad));
	if (!ret)
		c->sq_used[q]++;
	return ret;
}

static int read_msg(const struct rn_comm *c, int box, struct vf_msg *m)
{
	const volatile struct vf_msg *in =
		(const volatile struct vf_msg *)((const char *)c->ctrl +
						 RN_CTRL_INBOX(c->cts_len, box));

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	memcpy(m, (const void *)in, sizeof(*m));
	if (m->magic != VF_MAGIC || m->sum != msg_sum(m) || m->n > RN_SLOTS || m->type < VF_DROP ||
	    m->type > VF_RESUME)
		return -EBADMSG;
	return 0;
}

static uint64_t msg_dead(const struct vf_msg *m)
{
	return (uint64_t)m->dead_hi << 32 | m->dead_lo;
}

/* Receiver: tell the sender which pairs are out here. */
static int send_drop(struct rn_comm *c)
{
	struct vf_msg m;

	memset(&m, 0, sizeof(m));
	m.type = VF_DROP;
	m.epoch = c->vf->epoch;
	m.dead_lo = (uint32_t)c->vf->dead;
	m.dead_hi = (uint32_t)(c->vf->dead >> 32);
	return send_msg(c, VF_BOX_DROP, &m);
}

/* Pairs @mask failed (@why): 1 when the comm goes on, 0 when none is left (said). */
static int begin(struct rn_comm *c, uint64_t mask, const char *why)
{
	struct rn_vfail *vf = c->vf;
	uint64_t before = vf->dead;

	if (c->err || vf->exhausted)
		return 0;
	mark(c, mask, why);
	if (!live_pairs(c)) {
		/* the comm fails as a vNIC comm without this: through the caller, diagnosed */
		say_none_left(c);
		vf->exhausted = 1;
		vf->state = VF_IDLE;
		c->moving = 0;
		return 0;
	}
	if (vf->dead == before)
		return 1; /* known already: the round under way covers it */
	{
		char out[300];

		say_pairs(c, vf->dead & ~before, 1, out, sizeof(out));
		rn_info(RN_SUB_NET, RN_PFX "failover: %s comm with %s: vNIC member pair %s out; %s",
			c->role == RN_ROLE_SEND ? "send" : "recv", c->peer_str, out,
			c->role == RN_ROLE_SEND ? "letting the QPs left finish what they carry" :
						  "telling the sender");
	}
	if (c->role == RN_ROLE_SEND) {
		if (vf->state == VF_IDLE) {
			vf->state = VF_DRAIN;
			c->moving = 1;
			vf->deadline_ns = rn_now_ns() + c->stall_ns;
		}
		/* in VF_WAIT the pair goes in the next round, after the RESUME */
		return 1;
	}
	if (send_drop(c)) {
		rn_warn(RN_SUB_NET,
			RN_PFX "failover: comm with %s: telling the sender of a vNIC "
			       "member pair out failed",
			c->peer_str);
		comm_fail(c, -ENETUNREACH);
		return 1; /* said */
	}
	if (vf->state != VF_ASKED) {
		vf->state = VF_ASKED;
		vf->deadline_ns = rn_now_ns() + c->stall_ns;
	}
	return 1;
}

int rn_vfail_attach(struct rn_comm *c, const struct rn_fo_hooks *hooks)
{
	struct rn_vfail *vf;

	if (c->nmem == 1 && c->rmem == 1)
		return 0;
	vf = calloc(1, sizeof(*vf));
	if (!vf)
		return -ENOMEM;
	vf->hooks = hooks;
	vf->nall = c->nqps;
	memcpy(vf->all, c->qps, sizeof(c->qps[0]) * (size_t)c->nqps);
	memcpy(vf->all_mem, c->qp_mem, (size_t)c->nqps);
	memcpy(vf->all_rmem, c->qp_rmem, (size_t)c->nqps);
	c->vf = vf;
	if (c->role != RN_ROLE_SEND)
		return 0; /* the receiver's receives are the data's (rn_xfer_recv_init) */
	/* the sender's take the receiver's messages */
	return rn_post_recvs(c->qps, c->nqps, RN_FO_RECV_WRS);
}

void rn_vfail_free(struct rn_comm *c)
{
	struct rn_vfail *vf = c->vf;

	if (!vf)
		return;
	memcpy(c->qps, vf->all, sizeof(c->qps[0]) * (size_t)vf->nall);
	memcpy(c->qp_mem, vf->all_mem, (size_t)vf->nall);
	memcpy(c->qp_rmem, vf->all_rmem, (size_t)vf->nall);
	c->nqps = vf->nall;
	free(vf);
	c->vf = NULL;
}

int rn_vfail_wc(struct rn_comm *c, int k, const struct ibv_wc *wc)
{
	struct rn_vfail *vf = c->vf;
	char why[120];
	int o, bit;

	for (o = 0; o < vf->nall; o++)
		if (vf->all_mem[o] == k && vf->all[o]->qp_num == wc->qp_num)
			break;
	if (o == vf->nall)
		return 0; /* not a data QP (the flush QP): as before */
	bit = all_pair(c, o);
	if (vf->dead >> bit & 1)
		return 1; /* the echo of a pair out: its flushes */
	if (!rn_failover_status(wc->status) &&
	    !(c->mem[k].ev && rn_events_dev_err(c->mem[k].ev, c->mem[k].dev->nic.port)))
		return 0;
	/* a peer that closed its side channel died: no move for that */
	if (c->fd >= 0 && rn_oob_peer_alive(c->fd) == -ECONNRESET)
		return 0;
	snprintf(why, sizeof(why), "%s (vendor_err %u)", rn_wc_status_str(wc->status),
		 wc->vendor_err);
	return begin(c, 1ull << bit, why);
}

int rn_vfail_member(struct rn_comm *c, int k, const char *why)
{
	uint64_t mask = 0;
	int o;

	for (o = 0; o < c->vf->nall; o++)
		if (c->vf->all_mem[o] == k)
			mask |= 1ull << all_pair(c, o);
	return begin(c, mask, why);
}

int rn_vfail_member_live(const struct rn_comm *c, int k)
{
	int o;

	for (o = 0; o < c->vf->nall; o++)
		if (c->vf->all_mem[o] == k && !(c->vf->dead >> all_pair(c, o) & 1))
			return 1;
	return 0;
}

int rn_vfail_member_out(const struct rn_comm *c, int k)
{
	return !c->vf->exhausted && !rn_vfail_member_live(c, k);
}

int rn_vfail_moved(const struct rn_comm *c)
{
	return c->vf && c->vf->moves > 0;
}

int rn_vfail_flush_member(const struct rn_comm *c)
{
	int k;

	for (k = 0; c->vf && k < c->nmem; k++)
		if (rn_vfail_member_live(c, k))
			return k;
	return 0;
}

void rn_vfail_ctrl(struct rn_comm *c, int q, uint32_t imm)
{
	struct rn_vfail *vf = c->vf;
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct vf_msg m;

	wr.wr_id = (uint64_t)q << 3 | RN_WR_RECV;
	if (rn_verbs.post_recv(c->qps[q], &wr, &bad) && !c->draining) {
		comm_fail(c, -EIO);
		return;
	}
	if (imm != RN_IMM_CTRL || c->err)
		return;
	if (c->role == RN_ROLE_RECV) {
		/* a MOVE_REQ naming a RESUME older than our last is answered already */
		if (!read_msg(c, VF_BOX_MOVE, &m) && m.type == VF_MOVE_REQ &&
		    m.epoch == vf->epoch && !vf->due) {
			vf->msg = m;
			vf->due = 1;
		}
		return;
	}
	if (!read_msg(c, VF_BOX_DROP, &m) && m.type == VF_DROP)
		begin(c, msg_dead(&m), "the receiver's side of the pair failed");
	if (!read_msg(c, VF_BOX_MOVE, &m) && m.type == VF_RESUME && m.epoch > vf->epoch) {
		vf->msg = m;
		vf->due = 1;
	}
}

/* Take what every member's CQ holds (successes; the flushes of the pairs out are dropped). */
static void drain(struct rn_comm *c)
{
	struct ibv_wc wc[16];
	int k, i, n, empty, rounds;

	c->draining = 1;
	for (k = 0; k < c->nmem; k++) {
		empty = rounds = 0;
		while (empty < 2 && rounds++ < 4096) {
			n = rn_verbs.poll_cq(c->mem[k].cq, 16, wc);
			if (n <= 0) {
				empty++;
				continue;
			}
			for (i = 0; i < n; i++)
				if (wc[i].status == IBV_WC_SUCCESS)
					c->vf->hooks->handle_wc(c, k, &wc[i]);
		}
	}
	c->draining = 0;
}

/* c->qps keeps the QPs of the pairs not in @mask, in their order (both ends alike). */
static void compact(struct rn_comm *c, uint64_t mask)
{
	struct rn_vfail *vf = c->vf;
	int o, n = 0;

	for (o = 0; o < vf->nall; o++) {
		if (mask >> all_pair(c, o) & 1)
			continue;
		c->qps[n] = vf->all[o];
		c->qp_mem[n] = vf->all_mem[o];
		c->qp_rmem[n] = vf->all_rmem[o];
		n++;
	}
	c->nqps = n;
	c->qp_any = 1;
	vf->applied = mask;
	memset(c->qp_wait_ns, 0, sizeof(c->qp_wait_ns));
	c->idle = 0;
	c->last_check_ns = rn_now_ns();
}

/*
 * Receiver: where each QP left expects its next slot after the rewind. A vNIC comm
 * splits every message over all its QPs (src/comm.c), and a QP delivers in order, so the
 * slots not whole are the last ones: each QP expects the first of them, or the next posted.
 */
static void expect(struct rn_recv_comm *rc, const uint32_t *seqs, int n)
{
	int q;

	for (q = 0; q < rc->c.nqps; q++)
		rc->qp_next[q] = n ? seqs[0] - 1 : rc->tail;
}

static uint64_t ms_since(uint64_t t0)
{
	uint64_t now = rn_now_ns();

	return t0 && now > t0 ? (now - t0) / 1000000ull : 0;
}

/* The move in the host's record, per pair out (roce-doctor --prometheus counts them per NIC). */
static void record(const struct rn_comm *c, uint64_t add)
{
	int bit;

	for (bit = 0; bit < VF_PAIRS; bit++)
		if (add >> bit & 1)
			rn_failover_record(c->mem[our_mem(c, bit)].dev, c->mem[c->qp_mem[0]].dev,
					   c->vf->why[bit]);
}

/* The one WARN a round gives, on each end. */
static void say_moved(struct rn_comm *c, uint64_t add, const char *what)
{
	char out[500], left[300];

	say_pairs(c, add, 1, out, sizeof(out));
	say_pairs(c, pairs_made(c) & ~c->vf->applied, 0, left, sizeof(left));
	rn_warn(RN_SUB_NET,
		RN_PFX "failover: %s comm with %s (%s): vNIC member pair%s %s left "
		       "out; going on over %d of %d QPs (%s) in %llu ms; %s (move %d; "
		       "NCCL_ROCE_FAILOVER=0 turns this off)",
		c->role == RN_ROLE_SEND ? "send" : "recv", c->peer_str, c->rpeer[0].host,
		__builtin_popcountll(add) > 1 ? "s" : "", out, c->nqps, c->vf->nall, left,
		(unsigned long long)ms_since(c->vf->since_ns), what, c->vf->moves);
	record(c, add);
}

/* Receiver, on MOVE_REQ: the QPs left take the comm; RESUME says what comes again. */
static void recv_move(struct rn_comm *c)
{
	struct rn_recv_comm *rc = (struct rn_recv_comm *)c;
	struct rn_vfail *vf = c->vf;
	uint64_t add;
	struct vf_msg m;
	char what[96];
	int n = 0, ret;

	mark(c, msg_dead(&vf->msg), "the sender's side of the pair failed");
	if (!live_pairs(c)) {
		say_none_left(c);
		comm_fail(c, -ENETUNREACH);
		return;
	}
	drain(c);
	add = vf->dead & ~vf->applied;
	compact(c, vf->dead);
	memset(&m, 0, sizeof(m));
	ret = vf->hooks->recv_rewind(rc, m.seq, &n);
	if (!ret) {
		expect(rc, m.seq, n);
		m.type = VF_RESUME;
		m.epoch = ++vf->epoch;
		m.dead_lo = (uint32_t)vf->dead;
		m.dead_hi = (uint32_t)(vf->dead >> 32);
		m.n = (uint32_t)n;
		m.tail = rc->tail;
		ret = send_msg(c, VF_BOX_MOVE, &m);
	}
	if (ret) {
		rn_warn(RN_SUB_NET,
			RN_PFX "failover: comm with %s: resuming over the vNIC's "
			       "pairs left failed: %s",
			c->peer_str, strerror(-ret));
		comm_fail(c, ret);
		return;
	}
	vf->state = VF_IDLE;
	vf->moves++;
	snprintf(what, sizeof(what), "%d receive%s not complete asked again", n, n == 1 ? "" : "s");
	say_moved(c, add, what);
	vf->since_ns = 0;
}

/* Sender, on RESUME: the receiver's QPs left are ours; serve again what it lists. */
static void send_resume(struct rn_comm *c)
{
	struct rn_vfail *vf = c->vf;
	struct vf_msg *m = &vf->msg;
	uint64_t resent = 0, add;
	int nresent = 0, ret;
	char what[96];

	mark(c, msg_dead(m), "the receiver's side of the pair failed");
	drain(c);
	add = msg_dead(m) & ~vf->applied;
	compact(c, msg_dead(m));
	vf->epoch = m->epoch;
	ret = vf->hooks->send_resume((struct rn_send_comm *)c, m->seq, (int)m->n, m->tail, &nresent,
				     &resent);
	if (ret) {
		rn_warn(RN_SUB_NET,
			RN_PFX "failover: comm with %s: resuming over the vNIC's "
			       "pairs left failed: %s",
			c->peer_str, strerror(-ret));
		comm_fail(c, ret);
		return;
	}
	c->moving = 0;
	vf->state = VF_IDLE;
	vf->moves++;
	vf->resent += resent;
	snprintf(what, sizeof(what), "%d message%s, %llu bytes sent again", nresent,
		 nresent == 1 ? "" : "s", (unsigned long long)resent);
	say_moved(c, add, what);
	vf->since_ns = 0;
	if (vf->dead & ~vf->applied) {
		/* a pair found out while the RESUME was on its way: another round */
		vf->since_ns = rn_now_ns();
		vf->state = VF_DRAIN;
		c->moving = 1;
		vf->deadline_ns = vf->since_ns + c->stall_ns;
	}
}

/* Sender: every QP left has finished what it carried: ask where to resume. */
static void ask(struct rn_comm *c)
{
	struct rn_vfail *vf = c->vf;
	struct vf_msg m;
	int q;

	for (q = 0; q < c->nqps; q++)
		if (c->qp_out[q] && !(vf->dead >> pair_of(c, c->qp_mem[q], c->qp_rmem[q]) & 1))
			return;
	memset(&m, 0, sizeof(m));
	m.type = VF_MOVE_REQ;
	m.epoch = vf->epoch;
	m.dead_lo = (uint32_t)vf->dead;
	m.dead_hi = (uint32_t)(vf->dead >> 32);
	if (send_msg(c, VF_BOX_MOVE, &m)) {
		rn_warn(RN_SUB_NET,
			RN_PFX "failover: comm with %s: posting the move request "
			       "failed",
			c->peer_str);
		comm_fail(c, -ENETUNREACH);
		return;
	}
	vf->state = VF_WAIT;
	rn_info(RN_SUB_NET,
		RN_PFX "failover: send comm with %s: the QPs left are drained after "
		       "%llu ms; move request sent",
		c->peer_str, (unsigned long long)ms_since(vf->since_ns));
}

int rn_vfail_due(const struct rn_comm *c)
{
	return c->vf->due || c->vf->state == VF_DRAIN;
}

void rn_vfail_tick(struct rn_comm *c, uint64_t now)
{
	struct rn_vfail *vf = c->vf;

	if (c->err || vf->state == VF_IDLE || !vf->deadline_ns || now < vf->deadline_ns)
		return;
	rn_warn(RN_SUB_NET,
		RN_PFX "failover: %s comm with %s (%s): the peer did not answer "
		       "the move off a vNIC member pair within %llu ms: the comm fails",
		c->role == RN_ROLE_SEND ? "send" : "recv", c->peer_str, c->rpeer[0].host,
		(unsigned long long)(c->stall_ns / 1000000));
	comm_fail(c, -ETIMEDOUT);
}

int rn_vfail_live_qp(const struct rn_comm *c, int q)
{
	if (!(c->vf->dead >> pair_of(c, c->qp_mem[q], c->qp_rmem[q]) & 1))
		return q;
	q = first_live(c);
	return q < 0 ? 0 : q;
}

/* Whatever a message or the drain made due, outside any poll loop. */
void rn_vfail_step(struct rn_comm *c)
{
	struct rn_vfail *vf = c->vf;

	if (vf->due && !c->err) {
		vf->due = 0;
		if (c->role == RN_ROLE_RECV)
			recv_move(c);
		else
			send_resume(c);
	}
	if (!c->err && c->role == RN_ROLE_SEND && vf->state == VF_DRAIN)
		ask(c);
}

int rn_vfail_poll(struct rn_comm *c)
{
	struct ibv_wc wc[16];
	int k, i, n;

	for (k = 0; k < c->nmem && !c->err; k++) {
		n = rn_verbs.poll_cq(c->mem[k].cq, 16, wc);
		if (n < 0) {
			rn_warn(RN_SUB_NET, RN_PFX "%s: polling the CQ failed",
				c->mem[k].dev->nic.ibdev);
			return comm_fail(c, -EIO);
		}
		for (i = 0; i < n; i++)
			c->vf->hooks->handle_wc(c, k, &wc[i]);
	}
	if (!c->err)
		rn_vfail_step(c);
	if (!c->err && (++c->vf->polls & 63) == 0)
		rn_vfail_tick(c, rn_now_ns());
	return c->err;
}
