// SPDX-License-Identifier: MIT
/*
 * The comm and QP factory (include/rn_comm.h): a comm's CQs, control block, QPs and flush
 * QPs per member NIC, the QP state attributes of each step, the retry and stall bounds,
 * and the spare NIC pairs of failover (made, re-armed, freed). The handshake that moves
 * them through their states is src/conn.c's.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rn_clock.h"
#include "rn_comm.h"
#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_counters.h"
#include "rn_gid.h"
#include "rn_log.h"
#include "rn_mr.h"
#include "rn_verbs.h"

/* ---- QPs -------------------------------------------------------------------- */

/* QPs are created in RESET on member @m; the handshake moves them on (hs_connect_qps). */
static struct ibv_qp *qp_create_on(struct rn_comm *c, const struct rn_member *m, int send_wr,
				   int recv_wr, int *max_inline)
{
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp *qp;

	ia.qp_context = c;
	ia.send_cq = m->cq;
	ia.recv_cq = m->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = (uint32_t)send_wr;
	ia.cap.max_recv_wr = (uint32_t)recv_wr;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = max_inline ? (uint32_t)*max_inline : 0;
	errno = 0;
	qp = rn_verbs.create_qp(m->dev->pd, &ia);
	if (!qp && max_inline && *max_inline) {
		/* a device that inlines less: no inline at all, as before */
		*max_inline = 0;
		ia.cap.max_inline_data = 0;
		errno = 0;
		qp = rn_verbs.create_qp(m->dev->pd, &ia);
	}
	if (qp && max_inline) /* what the device granted (verbs writes it back) */
		*max_inline = RN_MIN(*max_inline, (int)ia.cap.max_inline_data);
	return qp;
}

static struct ibv_qp *qp_create(struct rn_comm *c, int k, int send_wr, int recv_wr, int *max_inline)
{
	return qp_create_on(c, &c->mem[k], send_wr, recv_wr, max_inline);
}

static int retry_cnt_dev(const struct rn_comm *c, const struct rn_dev *dev)
{
	static int told;
	int r = c->eng->cfg.retry_cnt;

	/* rxe takes 7 as "retry forever": a broken path would hang instead of failing. */
	if (dev->is_rxe && r > 6) {
		if (!__atomic_exchange_n(&told, 1, __ATOMIC_RELAXED))
			rn_info(RN_SUB_NET,
				RN_PFX "%s is Soft-RoCE: NCCL_IB_RETRY_CNT %d capped at 6 "
				       "(rxe retries 7 forever)",
				dev->nic.ibdev, r);
		r = 6;
	}
	return r;
}

static int retry_cnt_for(const struct rn_comm *c)
{
	return retry_cnt_dev(c, c->mem[0].dev);
}

int rn_qp_attr_init(const struct rn_dev *dev, unsigned int access, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = 0;
	a->port_num = (uint8_t)dev->nic.port;
	a->qp_access_flags = access;
	return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
}

int rn_qp_attr_rtr(const struct rn_dev *dev, int sgid_index, uint32_t remote_qpn,
		   const union ibv_gid *dgid, enum ibv_mtu mtu, int tc, int sl, int rd_atom,
		   struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = mtu;
	a->dest_qp_num = remote_qpn;
	a->rq_psn = 0;
	a->max_dest_rd_atomic = (uint8_t)rd_atom;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = *dgid;
	a->ah_attr.grh.sgid_index = (uint8_t)sgid_index;
	a->ah_attr.grh.hop_limit = 255;
	a->ah_attr.grh.flow_label = 0;
	a->ah_attr.grh.traffic_class = (uint8_t)tc;
	a->ah_attr.sl = (uint8_t)sl;
	a->ah_attr.src_path_bits = 0;
	a->ah_attr.port_num = (uint8_t)dev->nic.port;
	return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

/*
 * READs and atomics in flight per QP. The net protocol has one READ at a time (the flush
 * QP's); an RMA comm's peer READs and signals it (iget, iputSignal's FETCH_AND_ADD), so it
 * takes what the device allows, up to 16 (@dest: as the responder).
 */
int rn_qp_rd_atom(const struct rn_comm *c, const struct rn_dev *dev, int dest)
{
	int cap = dest ? dev->attr.max_qp_rd_atom : dev->attr.max_qp_init_rd_atom;

	if (!(c->flags & RN_CONN_RMA))
		return 1;
	return cap > 0 ? RN_MIN(cap, 16) : 1;
}

int rn_qp_attr_rts(const struct rn_comm *c, const struct rn_dev *dev, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->timeout = (uint8_t)c->eng->cfg.timeout;
	a->retry_cnt = (uint8_t)retry_cnt_dev(c, dev);
	a->rnr_retry = 7;
	a->sq_psn = 0;
	a->max_rd_atomic = (uint8_t)rn_qp_rd_atom(c, dev, 0);
	return IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
	       IBV_QP_MAX_QP_RD_ATOMIC;
}

/* ---- comms ------------------------------------------------------------------ */

/* What a path's slot holds (a spare's, or the pair a move left): all of it. */
static void path_free(struct rn_comm *c, struct rn_path *p)
{
	int q;

	for (q = 0; q < c->nqps; q++)
		if (p->qps[q])
			rn_verbs.destroy_qp(p->qps[q]);
	if (p->flush_qp)
		rn_verbs.destroy_qp(p->flush_qp);
	if (p->mem.ctrl_mr)
		rn_verbs.dereg_mr(p->mem.ctrl_mr);
	if (p->mem.cq)
		rn_verbs.destroy_cq(p->mem.cq);
	rn_events_put(p->mem.ev);
	memset(p->qps, 0, sizeof(p->qps));
	p->flush_qp = NULL;
	p->mem.ctrl_mr = NULL;
	p->mem.cq = NULL;
	p->mem.ev = NULL;
}

static size_t comm_size(int role)
{
	return role == RN_ROLE_SEND ? sizeof(struct rn_send_comm) : sizeof(struct rn_recv_comm);
}

/*
 * The comm itself gets a mapping of its own: zeroed pages that cost nothing until touched.
 * A sender's 256 request records (45 KiB) are handed out in order and recycled
 * (rn_xfer_send_init), so NCCL's 8 steps touch a page of them; calloc() clears, and so
 * makes resident, all of them whenever the heap hands out reused memory, which it does in
 * a process that has run for a while (test/vm/bench-conn measured 60 KiB a send comm
 * resident at 256 connections, 1,024 connections being 60 MiB). NULL with errno.
 */
static struct rn_comm *comm_alloc(int role)
{
	void *p = mmap(NULL, comm_size(role), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void rn_comm_free(struct rn_comm *c)
{
	int i;

	if (!c)
		return;
	rn_vfail_free(c); /* every QP made is in c->qps again */
	if (c->fo) {
		if (c->fo->chk)
			rn_path_check.free(c->fo->chk);
		for (i = 0; i < c->fo->npaths; i++)
			if (i != c->fo->active)
				path_free(c, &c->fo->path[i]);
		free(c->fo);
		c->fo = NULL;
	}
	if (c->role == RN_ROLE_RECV) {
		struct rn_recv_comm *rc = (struct rn_recv_comm *)c;

		for (i = 0; i < c->nmem; i++)
			if (rc->flush_qp[i])
				rn_verbs.destroy_qp(rc->flush_qp[i]);
	}
	for (i = 0; i < c->nqps; i++)
		if (c->qps[i])
			rn_verbs.destroy_qp(c->qps[i]);
	for (i = 0; i < c->nmem; i++) {
		if (c->mem[i].ctrl_mr)
			rn_verbs.dereg_mr(c->mem[i].ctrl_mr);
		if (c->mem[i].cq)
			rn_verbs.destroy_cq(c->mem[i].cq);
	}
	if (c->ctrl)
		munmap(c->ctrl, c->ctrl_len);
	for (i = 0; i < c->nmem; i++)
		rn_events_put(c->mem[i].ev);
	if (c->fd >= 0)
		close(c->fd);
	rn_ctr_snap_free(c->ctr0);
	munmap(c, comm_size(c->role));
}

/* The QP's own retry budget: the first try and every retry, each one ack timeout. */
static uint64_t retry_budget_ns(const struct rn_comm *c)
{
	int t = c->eng->cfg.timeout;

	if (t <= 0 || t >= 32)
		return 30ull * 1000000000ull;
	return (4096ull << t) /* 4.096 us * 2^t */ * (uint64_t)(retry_cnt_for(c) + 1);
}

static uint64_t stall_bound_ns(const struct rn_comm *c)
{
	/* the retry budget twice over, plus slack for a busy host */
	return retry_budget_ns(c) * 2 + 1000000000ull;
}

/*
 * The GID index of @dev's address now: the kernel moves it when the address is re-added
 * or the link comes back, and the old index may hold another address by then (NCCL#1333).
 * -EADDRNOTAVAIL (logged with gid-gone) when the address is gone; a table that cannot be
 * read keeps the index chosen at init.
 */
static int gid_follow(struct rn_dev *dev)
{
	struct rn_vars v = RN_VARS_INIT;
	struct rn_finding f = { 0 };
	int old, ret;

	pthread_mutex_lock(&dev->lock);
	ret = rn_gid_refresh(dev->ctx, &dev->nic, &old, &v);
	pthread_mutex_unlock(&dev->lock);
	if (ret == 1) {
		char ip[INET6_ADDRSTRLEN];

		rn_info(RN_SUB_NET,
			RN_PFX "%s:%d: the GID of %s moved from index %d to %d; this "
			       "comm and later ones use %d",
			dev->nic.ibdev, dev->nic.port, rn_ip_str(&dev->nic.ip, ip, sizeof(ip)), old,
			dev->nic.gid_index, dev->nic.gid_index);
	}
	if (ret == -ENOENT) {
		char pfx[128];

		snprintf(pfx, sizeof(pfx), RN_PFX "%s:%d: new comm refused", dev->nic.ibdev,
			 dev->nic.port);
		rn_finding_render(&f, RN_CAUSE_GID_GONE, &v);
		rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
		rn_finding_clear(&f);
	}
	rn_vars_free(&v);
	return ret == -ENOENT ? -EADDRNOTAVAIL : 0;
}

/* Each member's GID index now (gid_follow): -EADDRNOTAVAIL when one's address is gone. */
int rn_comm_members_follow(struct rn_engine *eng, int devidx)
{
	struct rn_dev *m[RN_VNIC_MAX];
	int nmem = rn_engine_members(eng, devidx, m), k;

	for (k = 0; k < nmem; k++)
		if (gid_follow(m[k]))
			return -EADDRNOTAVAIL;
	return 0;
}

/* Each member's NIC, GID index, events and limits; the send queue depth @sq they allow. */
static void members_take(struct rn_comm *c, struct rn_dev *const *m, int *sq)
{
	int k;

	for (k = 0; k < c->nmem; k++) {
		c->mem[k].dev = m[k];
		/* as rn_comm_members_follow found it just now, whatever GID_CHANGE does later */
		pthread_mutex_lock(&m[k]->lock);
		c->mem[k].gid_index = m[k]->nic.gid_index;
		pthread_mutex_unlock(&m[k]->lock);
		c->mem[k].ev = rn_events_get(m[k]);
		if (m[k]->max_msg_size)
			c->max_msg = RN_MIN(c->max_msg, m[k]->max_msg_size);
		/*
		 * Queues sized as net_ib's (2 x 256 send WRs per QP) where the data goes; a
		 * receiver's QPs only carry its CTS writes, one per FIFO slot, so they need
		 * far less, and only they take receives (the sender's WRITE_WITH_IMM lands there).
		 */
		if (m[k]->attr.max_qp_wr > 0 && m[k]->attr.max_qp_wr < *sq)
			*sq = m[k]->attr.max_qp_wr;
	}
}

/* A CQ per member, for its QPs' every WR of @sq + @rq each. 0, or -1 with errno. */
static int cqs_create(struct rn_comm *c, int sq, int rq)
{
	int k, cqe;

	for (k = 0; k < c->nmem; k++) {
		const struct rn_dev *d = c->mem[k].dev;
		int kq = (c->nqps - k + c->nmem - 1) / c->nmem; /* this member's QPs */

		/*
		 * Every WR that can complete at once (a QP in error flushes unsignalled ones
		 * too), plus the flush QP's reads: an overflowing CQ would kill the comm.
		 */
		cqe = kq * (sq + rq) + (c->role == RN_ROLE_RECV ? RN_SLOTS + 2 : 0);
		if (d->attr.max_cqe > 0 && cqe > d->attr.max_cqe)
			cqe = d->attr.max_cqe;
		errno = 0;
		c->mem[k].cq = rn_verbs.create_cq(d->ctx, cqe, c, NULL, 0);
		if (!c->mem[k].cq)
			return -1;
	}
	return 0;
}

/*
 * The control block: FIFO or staging (8 KiB, a vNIC receiver's 16) + sizes (1 KiB) + flush
 * target + the failover mailboxes, in one mapping registered on every member. 0, or -1 with
 * errno.
 */
static int ctrl_create(struct rn_comm *c)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int k;

	c->ctrl_len = (RN_CTRL_FO_OFF(c->cts_len) + RN_CTRL_FO_LEN + pg - 1) & ~(pg - 1);
	/*
	 * A mapping of its own (zeroed), kept out of forked children: a fork (a PyTorch
	 * DataLoader) would otherwise make the next write here copy-on-write the page
	 * away from the one the NIC writes the peer's CTS entries into.
	 */
	c->ctrl = mmap(NULL, c->ctrl_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);
	if (c->ctrl == MAP_FAILED) {
		c->ctrl = NULL;
		return -1;
	}
	if (madvise(c->ctrl, c->ctrl_len, MADV_DONTFORK))
		return -1;
	for (k = 0; k < c->nmem; k++) {
		c->mem[k].ctrl_mr = rn_verbs.reg_mr_iova2(c->mem[k].dev->pd, c->ctrl, c->ctrl_len,
							  (uintptr_t)c->ctrl,
							  IBV_ACCESS_LOCAL_WRITE |
								  IBV_ACCESS_REMOTE_WRITE);
		if (!c->mem[k].ctrl_mr)
			return -1;
	}
	return 0;
}

/*
 * The data QPs (QP q on member q % nmem), and the view of the control block each role
 * has: a sender's FIFO, a receiver's staging and, where the NICs take GPU memory, its
 * flush QP per member. 0, or -1 with errno.
 */
static int qps_create(struct rn_comm *c, int sq, int rq)
{
	int i, k;

	for (i = 0; i < c->nqps; i++) {
		/* a receiver's CTS write of one entry goes inline (the FIFO post copies it) */
		int inl = c->cts_len;

		c->qps[i] = qp_create(c, c->qp_mem[i], sq, rq,
				      c->role == RN_ROLE_RECV ? &inl : NULL);
		if (!c->qps[i])
			return -1;
		if (c->role == RN_ROLE_RECV)
			((struct rn_recv_comm *)c)->cts_inline =
				i ? RN_MIN(inl, ((struct rn_recv_comm *)c)->cts_inline) : inl;
	}
	if (c->role == RN_ROLE_SEND) {
		struct rn_send_comm *sc = (struct rn_send_comm *)c;

		sc->fifo = c->ctrl;
		sc->sizes = (void *)((char *)c->ctrl + RN_CTRL_SIZES_OFF(c->cts_len));
		rn_xfer_send_init(sc);
	} else {
		struct rn_recv_comm *rc = (struct rn_recv_comm *)c;

		rc->stage = c->ctrl;
		rc->sizes = (void *)((char *)c->ctrl + RN_CTRL_SIZES_OFF(c->cts_len));
		rc->flush_buf = (uint8_t *)(rc->sizes + RN_SLOTS);
		/* as NCCL: only a device that can take GPU memory needs the flush QP */
		c->flush_enabled = !c->eng->cfg.gdr_flush_disable;
		for (k = 0; k < c->nmem; k++)
			c->flush_enabled &= !!(c->mem[k].dev->ptr_support &
					       (RN_PTR_CUDA | RN_PTR_DMABUF));
		/* every NIC that wrote into the GPU buffer gets its read (as net_ib) */
		for (k = 0; k < c->nmem && c->flush_enabled; k++) {
			rc->flush_qp[k] = qp_create(c, k, RN_SLOTS + 1, 1, NULL);
			if (!rc->flush_qp[k])
				return -1;
		}
	}
	return 0;
}

/*
 * A comm on NCCL device @devidx (physical, or a vNIC of several members) with @nqps
 * QPs; @rmem is the peer's member count (QP q: member q % nmem here, q % rmem there);
 * @flags what it is for (RN_CONN_*).
 */
struct rn_comm *rn_comm_create(struct rn_engine *eng, int devidx, int role, int nqps, int rmem,
			       unsigned int flags)
{
	struct rn_dev *m[RN_VNIC_MAX];
	int nmem = rn_engine_members(eng, devidx, m);
	struct rn_dev *dev = nmem > 0 ? m[0] : NULL;
	struct rn_comm *c;
	int i, sq, rq, err;

	if (!dev || rmem < 1 || rmem > RN_VNIC_MAX || nqps < RN_MAX(nmem, rmem)) {
		errno = dev ? EPROTO : ENODEV;
		return NULL;
	}
	c = comm_alloc(role);
	if (!c)
		return NULL;
	c->created_ns = rn_now_ns();
	/* NULL: judged without (the error path says so) */
	c->ctr0 = rn_ctr_snap_shared(c->created_ns);
	c->fd = -1;
	c->role = role;
	c->flags = flags;
	c->eng = eng;
	c->reg_dev = dev;
	c->nmem = nmem;
	c->rmem = rmem;
	c->nqps = nqps;
	/* the receiver's NICs decide it, so both ends lay out their control blocks alike */
	c->cts_len = RN_CTS_LEN(role == RN_ROLE_RECV ? nmem : rmem);
	/* a vNIC connection splits every message over all its NICs (see rn_conn.h) */
	c->split = eng->cfg.split_data_on_qps || nmem > 1 || rmem > 1;
	c->max_msg = 1u << 30;
	sq = role == RN_ROLE_RECV ? RN_CTS_SQ_DEPTH :
	     flags & RN_CONN_RMA  ? RN_RMA_SQ_DEPTH :
				    RN_SQ_DEPTH;
	/* a sender's receives take failover messages only (and a vNIC's member loss's) */
	rq = role == RN_ROLE_SEND ? RN_FO_RECV_WRS : RN_RECV_WRS;
	members_take(c, m, &sq);
	c->sq_cap = sq;
	for (i = 0; i < nqps; i++) {
		c->qp_mem[i] = (uint8_t)(i % nmem);
		c->qp_rmem[i] = (uint8_t)(i % rmem);
	}
	if (cqs_create(c, sq, rq) || ctrl_create(c) || qps_create(c, sq, rq))
		goto err;
	c->stall_ns = stall_bound_ns(c);
	/* a port back within the QPs' retry budget cost them nothing (net_ib's behaviour) */
	c->port_grace_ns = retry_budget_ns(c) + 1000000000ull;
	return c;
err:
	err = errno ? errno : EIO;
	rn_warn(RN_SUB_NET, RN_PFX "%s:%d: creating the %s comm's CQ/QPs failed: %s",
		dev->nic.ibdev, dev->nic.port, role == RN_ROLE_SEND ? "send" : "recv",
		strerror(err));
	rn_comm_free(c);
	errno = err;
	return NULL;
}

/* ---- spare NIC pairs (failover: src/failover.c) ------------------------------ */

/*
 * Which comms keep spares: NCCL's net traffic on one NIC against one (a vNIC spreads
 * every message over its members already; the RMA backend's one-sided traffic has no
 * slot to resume from).
 */
int rn_comm_spares_wanted(const struct rn_engine *eng, int nmem, int rmem, unsigned int flags)
{
	if (!eng->cfg.failover || nmem != 1 || rmem != 1 || (flags & RN_CONN_RMA))
		return 0;
	return RN_MIN(eng->cfg.failover_spares, RN_MIN(eng->ndevs - 1, RN_SPARES_MAX));
}

/*
 * Spare path @p on @d: its CQ, the control block registered there, nqps QPs sized as the
 * comm's. -errno when @d cannot carry the comm as it is (its queues, inline, GPU flush).
 */
static int path_create(struct rn_comm *c, struct rn_path *p, struct rn_dev *d)
{
	struct rn_recv_comm *rc = c->role == RN_ROLE_RECV ? (struct rn_recv_comm *)c : NULL;
	/* as deep as the comm's own pair: a move changes neither side's back-pressure */
	int sq = c->sq_cap;
	int rq = rc ? RN_RECV_WRS : RN_FO_RECV_WRS;
	int q, cqe = c->nqps * (sq + rq) + (rc ? RN_SLOTS + 2 : 0);

	memset(p, 0, sizeof(*p));
	p->state = RN_PATH_SPARE;
	p->mem.dev = d;
	p->sq_cap = sq;
	if (d->attr.max_qp_wr > 0 && d->attr.max_qp_wr < sq)
		return -ENOSPC;
	if (rc && c->flush_enabled && !(d->ptr_support & (RN_PTR_CUDA | RN_PTR_DMABUF)))
		return -EOPNOTSUPP;
	{
		/* by address now, as the comm's own pair (the index moves: GID_CHANGE) */
		struct rn_vars v = RN_VARS_INIT;
		int old, ret;

		pthread_mutex_lock(&d->lock);
		ret = rn_gid_refresh(d->ctx, &d->nic, &old, &v);
		p->mem.gid_index = ret == -ENOENT ? -1 : d->nic.gid_index;
		pthread_mutex_unlock(&d->lock);
		rn_vars_free(&v);
	}
	if (p->mem.gid_index < 0)
		return -EADDRNOTAVAIL;
	p->mem.ev = rn_events_get(d);
	if (p->mem.ev && rn_events_dev_err(p->mem.ev, d->nic.port))
		return -ENETDOWN;
	if (d->attr.max_cqe > 0 && cqe > d->attr.max_cqe)
		cqe = d->attr.max_cqe;
	errno = 0;
	p->mem.cq = rn_verbs.create_cq(d->ctx, cqe, c, NULL, 0);
	if (!p->mem.cq)
		return errno ? -errno : -EIO;
	p->mem.ctrl_mr = rn_verbs.reg_mr_iova2(d->pd, c->ctrl, c->ctrl_len, (uintptr_t)c->ctrl,
					       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!p->mem.ctrl_mr)
		return errno ? -errno : -EIO;
	/* a receiver's spare posts its CTS entries from the control block (RN_CTS_SQ_DEPTH) */
	p->cts_inline = 0;
	for (q = 0; q < c->nqps; q++) {
		p->qps[q] = qp_create_on(c, &p->mem, sq, rq, NULL);
		if (!p->qps[q])
			return errno ? -errno : -EIO;
	}
	if (rc && c->flush_enabled) {
		p->flush_qp = qp_create_on(c, &p->mem, RN_SLOTS + 1, 1, NULL);
		if (!p->flush_qp)
			return errno ? -errno : -EIO;
	}
	if (d->max_msg_size && d->max_msg_size < c->max_msg)
		c->max_msg = d->max_msg_size; /* nothing was sent yet: every pair takes it */
	return 0;
}

static int comm_rearm_path(struct rn_comm *c, int j, int *old_gid);

/*
 * Up to @want spare paths on this host's other NICs, from the one after the comm's own
 * (so that the comms of a failed NIC spread over its siblings, not all onto one), each
 * with an address of the comm's family. A sibling that cannot carry the comm is passed
 * over (INFO). 0 (no spare is no error) or -ENOMEM.
 */
int rn_comm_spares_create(struct rn_comm *c, int want)
{
	struct rn_engine *eng = c->eng;
	struct rn_dev *own = c->mem[0].dev;
	int i, at = 0, n;

	if (want <= 0)
		return 0;
	c->fo = calloc(1, sizeof(*c->fo));
	if (!c->fo)
		return -ENOMEM;
	c->fo->hooks = &rn_xfer_fo_hooks;
	c->fo->rearm_path = comm_rearm_path;
	c->fo->npaths = 1;
	c->fo->path[0].state = RN_PATH_SPARE;
	c->fo->path[0].sq_cap = c->sq_cap;
	if (c->role == RN_ROLE_RECV)
		c->fo->path[0].cts_inline = ((struct rn_recv_comm *)c)->cts_inline;
	c->fo->path[0].ok_here = c->fo->path[0].ok_there = 1;
	for (i = 0; i < eng->ndevs; i++)
		if (eng->devs[i] == own)
			at = i;
	for (n = 1; n < eng->ndevs && c->fo->npaths <= want; n++) {
		struct rn_dev *d = eng->devs[(at + n) % eng->ndevs];
		struct rn_path *p = &c->fo->path[c->fo->npaths];
		int ret;

		if (d == own || d->nic.ip.family != own->nic.ip.family)
			continue;
		ret = path_create(c, p, d);
		if (ret) {
			rn_info(RN_SUB_NET, RN_PFX "%s:%d: no spare pair for a comm on %s:%d: %s",
				d->nic.ibdev, d->nic.port, own->nic.ibdev, own->nic.port,
				strerror(-ret));
			path_free(c, p);
			memset(p, 0, sizeof(*p));
			continue;
		}
		c->fo->npaths++;
	}
	if (c->fo->npaths == 1) {
		free(c->fo);
		c->fo = NULL;
	}
	return 0;
}

/* Take every completion left on @cq (a failed pair's flushes): nothing of them is wanted. */
static void cq_drain(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];
	int rounds = 0;

	while (rounds++ < 4096 && rn_verbs.poll_cq(cq, (int)RN_ARRAY_SIZE(wc), wc) > 0)
		;
}

/* QP @qp of pair @p back through RESET, INIT, RTR and RTS, as the handshake moved it. */
static int qp_rearm(struct rn_comm *c, const struct rn_path *p, struct ibv_qp *qp, int flush,
		    uint32_t rqpn)
{
	const struct rn_dev *dev = p->mem.dev;
	struct ibv_qp_attr a;
	int mask, ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	ret = rn_verbs_err(rn_verbs.modify_qp(qp, &a, IBV_QP_STATE));
	if (ret)
		return ret;
	mask = rn_qp_attr_init(dev,
			       flush ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ :
				       IBV_ACCESS_REMOTE_WRITE,
			       &a);
	ret = rn_verbs_err(rn_verbs.modify_qp(qp, &a, mask));
	if (ret)
		return ret;
	mask = flush ? rn_qp_attr_rtr(dev, p->mem.gid_index, qp->qp_num, &dev->nic.gid,
				      dev->nic.active_mtu, c->fo->tc, c->fo->sl, 1, &a) :
		       rn_qp_attr_rtr(dev, p->mem.gid_index, rqpn, &p->rpeer.gid,
				      RN_MIN(dev->nic.active_mtu, p->rpeer.active_mtu), c->fo->tc,
				      c->fo->sl, 1, &a);
	ret = rn_verbs_err(rn_verbs.modify_qp(qp, &a, mask));
	if (ret)
		return ret;
	mask = rn_qp_attr_rts(c, dev, &a);
	return rn_verbs_err(rn_verbs.modify_qp(qp, &a, mask));
}

static int comm_rearm_path(struct rn_comm *c, int j, int *old_gid)
{
	struct rn_path *p = &c->fo->path[j];
	struct rn_dev *d = p->mem.dev;
	struct rn_vars v = RN_VARS_INIT;
	int q, i, ret, old = p->mem.gid_index;
	int n = c->role == RN_ROLE_RECV ? RN_RECV_WRS : RN_FO_RECV_WRS;

	*old_gid = old;
	if (j == c->fo->active || !p->mem.cq)
		return -EINVAL;
	/* by address again: the link's return re-adds its GIDs, maybe at another index */
	pthread_mutex_lock(&d->lock);
	ret = rn_gid_refresh(d->ctx, &d->nic, &i, &v);
	if (ret != -ENOENT)
		p->mem.gid_index = d->nic.gid_index;
	pthread_mutex_unlock(&d->lock);
	rn_vars_free(&v);
	if (ret == -ENOENT)
		return -EADDRNOTAVAIL;
	cq_drain(p->mem.cq);
	for (q = 0; q < c->nqps; q++) {
		ret = qp_rearm(c, p, p->qps[q], 0, p->rqpn[q]);
		if (ret)
			return ret;
	}
	if (p->flush_qp) {
		ret = qp_rearm(c, p, p->flush_qp, 1, 0);
		if (ret)
			return ret;
	}
	cq_drain(p->mem.cq); /* a provider may flush on the way to RESET */
	/* as at connect: the receiver's take data after a move, the sender's RESUMEs */
	return rn_post_recvs(p->qps, c->nqps, n);
}

/* Keep the first @n spares (what both ends offer). */
static void spares_trim(struct rn_comm *c, int n)
{
	int i;

	if (!c->fo)
		return;
	for (i = 1 + n; i < c->fo->npaths; i++) {
		path_free(c, &c->fo->path[i]);
		memset(&c->fo->path[i], 0, sizeof(c->fo->path[i]));
	}
	c->fo->npaths = RN_MIN(c->fo->npaths, 1 + n);
	if (c->fo->npaths == 1) {
		free(c->fo);
		c->fo = NULL;
	}
}

/* The peer's end of each spare its HELLO offers (as many as we kept). */
void rn_comm_spares_take_peer(struct rn_comm *c, const struct rn_hello *h)
{
	int j;

	spares_trim(c, h->spares);
	for (j = 1; c->fo && j < c->fo->npaths; j++) {
		c->fo->path[j].rpeer = h->spare[j - 1].facts;
		c->fo->path[j].rctrl_rkey = h->spare[j - 1].ctrl_rkey;
		c->fo->path[j].ok_there = 1; /* the receiver's: told in READY */
	}
}

/* READY's mask: bit j-1 when our check passed spare j. */
uint32_t rn_comm_spares_ok(const struct rn_comm *c)
{
	uint32_t m = 0;
	int j;

	for (j = 1; c->fo && j < c->fo->npaths; j++)
		if (c->fo->path[j].ok_here)
			m |= 1u << (j - 1);
	return m;
}

/* The connector's verdicts on the spares (READY): a bit for a spare we lack is a lie. */
int rn_comm_ready_take(struct rn_comm *c, const uint8_t *p, uint32_t len)
{
	uint32_t m;
	int j;

	if (rn_msg_decode_ready(p, len, &m))
		return -EBADMSG;
	if (m >> (c->fo ? c->fo->npaths - 1 : 0))
		return -EBADMSG;
	for (j = 1; c->fo && j < c->fo->npaths; j++)
		c->fo->path[j].ok_there = !!(m & (1u << (j - 1)));
	return 0;
}
