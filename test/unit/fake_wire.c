// SPDX-License-Identifier: MIT
/*
 * The QP/CQ wire fake (see fake_wire.h). Everything executes synchronously in
 * post_send: by the time it returns, the remote memory holds the data and the
 * completions are queued.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_verbs.h"
#include "fake_wire.h"
#include "rn_verbs.h"

#define FW_MAX_QPS 512 /* two ends of 128 data QPs (NCCL's most), flush QPs, a few comms */
#define FW_RQ 1024
#define FW_MAX_ASYNC 16

struct fw_qp;

/* A send completion's QP and WR number: polling it frees that QP's send queue up to it. */
struct fw_sq_mark {
	struct fw_qp *qp;
	uint64_t seq;
};

struct fw_cq {
	struct ibv_cq cq;
	struct ibv_wc *ring;
	struct fw_sq_mark *mark; /* per ring entry; qp NULL for a receive's */
	int cap, head, count;
};

struct fw_qp {
	struct ibv_qp qp;
	struct fw_cq *scq, *rcq;
	int sig_all;
	struct fake_wire_qp_attrs a;
	uint64_t rq[FW_RQ];
	int rq_head, rq_count;
	enum ibv_wc_status fail_status;
	uint32_t fail_vendor;
	struct fake_wire_stats st;
	int stall; /* posts on this QP never execute (fake_wire_set_stall_qp) */
	/*
	 * The send queue, as providers count it: a WR holds its slot until its completion,
	 * or a later signalled WR's on the QP, is polled (unsignalled ones have none), so
	 * posted - freed <= cap.max_send_wr, and a post beyond is refused with ENOMEM.
	 */
	uint64_t sq_posted, sq_freed;
};

static struct fw_qp *qps[FW_MAX_QPS];
static uint32_t next_qpn = 0x11;
static int live;
static uint32_t max_msg = 1u << 31;
static int stall;
static struct fake_wire_stats total;
static struct ibv_async_event async_q[FW_MAX_ASYNC];
static struct ibv_context *async_ctx[FW_MAX_ASYNC];
static int nasync;
/* the transport reads events from its own thread */
static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;

static void cq_push_sq(struct fw_cq *cq, const struct ibv_wc *wc, struct fw_qp *q, uint64_t seq)
{
	int at = (cq->head + cq->count) % cq->cap;

	if (cq->count == cq->cap) {
		total.cq_overflows++;
		return;
	}
	cq->ring[at] = *wc;
	cq->mark[at].qp = q;
	cq->mark[at].seq = seq;
	cq->count++;
}

static void cq_push(struct fw_cq *cq, const struct ibv_wc *wc)
{
	cq_push_sq(cq, wc, NULL, 0);
}

/* 1 when device @fd holds GID @g (in any port's table). */
static int dev_has_gid(const struct fake_dev *fd, const union ibv_gid *g)
{
	union ibv_gid x;
	int p, i;

	for (p = 0; fd && p < fd->nports; p++)
		for (i = 0; i < FAKE_MAX_GIDS; i++) {
			const char *a = fd->ports[p].gids[i].addr;

			if (!a)
				continue;
			memset(&x, 0, sizeof(x));
			if (strchr(a, ':')) {
				if (inet_pton(AF_INET6, a, x.raw) != 1)
					continue;
			} else {
				x.raw[10] = x.raw[11] = 0xff;
				if (inet_pton(AF_INET, a, &x.raw[12]) != 1)
					continue;
			}
			if (!memcmp(&x, g, sizeof(x)))
				return 1;
		}
	return 0;
}

/*
 * The QP numbered @n on the device that holds @dgid, as a real fabric routes: QP numbers
 * are per device (two NICs may both have a QP 0x11). A @dgid no device holds falls back
 * to the first QP of that number (tests that wire QPs by hand).
 */
static struct fw_qp *qp_by_num(uint32_t n, const union ibv_gid *dgid)
{
	struct fw_qp *any = NULL;
	int i;

	for (i = 0; i < FW_MAX_QPS; i++) {
		if (!qps[i] || qps[i]->qp.qp_num != n)
			continue;
		if (dev_has_gid(fake_verbs_dev_of(qps[i]->qp.context), dgid))
			return qps[i];
		if (!any)
			any = qps[i];
	}
	return any;
}

/* QP numbers per device, as an HCA allocates them (so they collide across devices). */
static struct {
	struct ibv_context *ctx;
	uint32_t next;
} qpn_tab[16];

static uint32_t qpn_next(struct ibv_context *ctx)
{
	int i;

	for (i = 0; i < 16 && qpn_tab[i].ctx && qpn_tab[i].ctx != ctx; i++)
		;
	if (i == 16)
		return next_qpn++;
	if (!qpn_tab[i].ctx) {
		qpn_tab[i].ctx = ctx;
		qpn_tab[i].next = 0x11;
	}
	return qpn_tab[i].next++;
}

static struct ibv_cq *f_create_cq(struct ibv_context *ctx, int cqe, void *cq_ctx,
				  struct ibv_comp_channel *ch, int vector)
{
	struct fw_cq *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cap = cqe;
	c->ring = calloc((size_t)cqe, sizeof(*c->ring));
	c->mark = calloc((size_t)cqe, sizeof(*c->mark));
	c->cq.context = ctx;
	c->cq.cq_context = cq_ctx;
	c->cq.cqe = cqe;
	live++;
	return &c->cq;
}

static int f_destroy_cq(struct ibv_cq *cq)
{
	struct fw_cq *c = (struct fw_cq *)cq;

	free(c->ring);
	free(c->mark);
	free(c);
	live--;
	return 0;
}

static struct ibv_qp *f_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
	struct fw_qp *q;
	int i;

	if (ia->qp_type != IBV_QPT_RC || !ia->send_cq || !ia->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	for (i = 0; i < FW_MAX_QPS && qps[i]; i++)
		;
	if (i == FW_MAX_QPS) {
		errno = ENOMEM;
		return NULL;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->qp.context = pd->context;
	q->qp.pd = pd;
	q->qp.qp_context = ia->qp_context;
	q->qp.send_cq = ia->send_cq;
	q->qp.recv_cq = ia->recv_cq;
	q->qp.qp_type = IBV_QPT_RC;
	q->qp.state = IBV_QPS_RESET;
	q->qp.qp_num = qpn_next(pd->context);
	q->scq = (struct fw_cq *)ia->send_cq;
	q->rcq = (struct fw_cq *)ia->recv_cq;
	q->sig_all = ia->sq_sig_all;
	q->a.cap = ia->cap;
	qps[i] = q;
	live++;
	return &q->qp;
}

static int f_destroy_qp(struct ibv_qp *qp)
{
	int i;

	for (i = 0; i < FW_MAX_QPS; i++)
		if (qps[i] == (struct fw_qp *)qp) {
			struct fw_cq *c = qps[i]->scq;
			int k;

			/* its completions still queued free nothing any more */
			for (k = 0; k < c->cap; k++)
				if (c->mark[k].qp == qps[i])
					c->mark[k].qp = NULL;
			qps[i] = NULL;
			free(qp);
			live--;
			return 0;
		}
	return EINVAL;
}

static void flush_rq(struct fw_qp *q)
{
	struct ibv_wc wc;

	while (q->rq_count) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = q->rq[q->rq_head];
		wc.status = IBV_WC_WR_FLUSH_ERR;
		wc.qp_num = q->qp.qp_num;
		wc.opcode = 0xff; /* garbage, as hardware may leave it */
		cq_push(q->rcq, &wc);
		q->rq_head = (q->rq_head + 1) % FW_RQ;
		q->rq_count--;
	}
}

static void to_error(struct fw_qp *q)
{
	q->qp.state = IBV_QPS_ERR;
	q->a.state = IBV_QPS_ERR;
	flush_rq(q);
}

static int f_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct fw_qp *q = (struct fw_qp *)qp;

	if (!(mask & IBV_QP_STATE))
		return EINVAL;
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		if (q->a.state != IBV_QPS_RESET)
			return EINVAL;
		q->a.access = a->qp_access_flags;
		break;
	case IBV_QPS_RTR:
		if (q->a.state != IBV_QPS_INIT || !(mask & IBV_QP_AV) || !(mask & IBV_QP_DEST_QPN))
			return EINVAL;
		q->a.rtr = *a;
		break;
	case IBV_QPS_RTS:
		if (q->a.state != IBV_QPS_RTR)
			return EINVAL;
		q->a.rts = *a;
		break;
	case IBV_QPS_RESET:
		/* any state may go back to RESET: its queues are emptied, nothing completes */
		q->rq_head = 0;
		q->rq_count = 0;
		q->sq_freed = q->sq_posted;
		break;
	case IBV_QPS_ERR:
		to_error(q);
		return 0;
	default:
		return EINVAL;
	}
	q->a.state = a->qp_state;
	qp->state = a->qp_state;
	return 0;
}

static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct fw_qp *q = (struct fw_qp *)qp;

	for (; wr; wr = wr->next) {
		if (q->rq_count == FW_RQ || q->a.state == IBV_QPS_RESET) {
			*bad = wr;
			return ENOMEM;
		}
		q->rq[(q->rq_head + q->rq_count) % FW_RQ] = wr->wr_id;
		q->rq_count++;
		q->st.recvs_posted++;
		total.recvs_posted++;
		if (q->a.state == IBV_QPS_ERR)
			flush_rq(q);
	}
	return 0;
}

/*
 * Check and resolve [addr, addr+len) inside the MR of @key; NULL when out of bounds or
 * when the MR is not on @pd (the QP's own for a local key, the target QP's for an rkey:
 * a key of another NIC is refused as a real HCA would).
 */
static void *mr_range(uint32_t key, uint64_t addr, uint32_t len, int remote, struct ibv_pd *pd)
{
	struct ibv_mr *mr = fake_verbs_mr_find(key);

	static char nothing;

	if (!len)
		return &nothing; /* a 0-byte access touches no memory: any key will do */
	if (!mr || (remote ? mr->rkey : mr->lkey) != key || mr->pd != pd)
		return NULL;
	if (addr < (uintptr_t)mr->addr || addr + len > (uintptr_t)mr->addr + mr->length)
		return NULL;
	return (void *)(uintptr_t)addr;
}

static void complete(struct fw_qp *q, struct ibv_send_wr *wr, enum ibv_wc_status st,
		     enum ibv_wc_opcode op, uint32_t len, uint32_t vendor)
{
	struct ibv_wc wc;

	if (st == IBV_WC_SUCCESS && !(wr->send_flags & IBV_SEND_SIGNALED) && !q->sig_all)
		return;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr->wr_id;
	wc.status = st;
	wc.qp_num = q->qp.qp_num;
	wc.vendor_err = vendor;
	if (st == IBV_WC_SUCCESS) {
		wc.opcode = op;
		wc.byte_len = len;
	} else {
		wc.opcode = 0xff;
		wc.byte_len = 0xdeadbeef;
	}
	cq_push_sq(q->scq, &wc, q, q->sq_posted);
}

static void exec_one(struct fw_qp *q, struct ibv_send_wr *wr)
{
	struct fw_qp *d;
	uint32_t len = 0;
	void *l = NULL, *r;
	struct ibv_wc wc;

	if (q->a.state == IBV_QPS_ERR) {
		complete(q, wr, IBV_WC_WR_FLUSH_ERR, 0, 0, 0);
		return;
	}
	if (q->fail_status) {
		complete(q, wr, q->fail_status, 0, 0, q->fail_vendor);
		q->fail_status = 0;
		to_error(q);
		return;
	}
	if (wr->num_sge > 1) {
		complete(q, wr, IBV_WC_LOC_LEN_ERR, 0, 0, 0);
		to_error(q);
		return;
	}
	if (wr->num_sge == 1) {
		len = wr->sg_list[0].length;
		l = mr_range(wr->sg_list[0].lkey, wr->sg_list[0].addr, len, 0, q->qp.pd);
		if (len > max_msg) {
			complete(q, wr, IBV_WC_LOC_LEN_ERR, 0, 0, 0);
			to_error(q);
			return;
		}
		if (!l) {
			complete(q, wr, IBV_WC_LOC_PROT_ERR, 0, 0, 0);
			to_error(q);
			return;
		}
	}
	if ((int)len > q->st.max_wr_len)
		q->st.max_wr_len = (int)len;
	if ((int)len > total.max_wr_len)
		total.max_wr_len = (int)len;
	d = qp_by_num(q->a.rtr.dest_qp_num, &q->a.rtr.ah_attr.grh.dgid);
	if (!d || (d->a.state != IBV_QPS_RTR && d->a.state != IBV_QPS_RTS)) {
		complete(q, wr, IBV_WC_RETRY_EXC_ERR, 0, 0, 0x81);
		to_error(q);
		return;
	}
	if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		uint64_t *w, old;

		/* 8 aligned bytes there, the old value back here, as the IB spec's atomics */
		w = mr_range(wr->wr.atomic.rkey, wr->wr.atomic.remote_addr, 8, 1, d->qp.pd);
		if (!w || !(d->a.access & IBV_ACCESS_REMOTE_ATOMIC) || len != 8 ||
		    wr->wr.atomic.remote_addr % 8 || q->a.rts.max_rd_atomic < 1) {
			complete(q, wr,
				 w && len == 8 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_REM_INV_REQ_ERR, 0,
				 0, 0);
			to_error(q);
			return;
		}
		old = __atomic_fetch_add(w, wr->wr.atomic.compare_add, __ATOMIC_SEQ_CST);
		memcpy(l, &old, 8);
		q->st.atomics++;
		total.atomics++;
		complete(q, wr, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, 8, 0);
		return;
	}
	r = mr_range(wr->wr.rdma.rkey, wr->wr.rdma.remote_addr, len, 1, d->qp.pd);
	if (!r) {
		complete(q, wr, IBV_WC_REM_ACCESS_ERR, 0, 0, 0);
		to_error(q);
		return;
	}
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (!(d->a.access & IBV_ACCESS_REMOTE_WRITE) && len) {
			complete(q, wr, IBV_WC_REM_ACCESS_ERR, 0, 0, 0);
			to_error(q);
			return;
		}
		if (len)
			memmove(r, l, len);
		if (wr->opcode == IBV_WR_RDMA_WRITE) {
			q->st.writes++;
			total.writes++;
			if (wr->send_flags & IBV_SEND_SIGNALED) {
				q->st.writes_signaled++;
				total.writes_signaled++;
			}
			if (wr->send_flags & IBV_SEND_INLINE) {
				q->st.writes_inline++;
				total.writes_inline++;
			}
			complete(q, wr, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, len, 0);
			return;
		}
		q->st.writes_imm++;
		total.writes_imm++;
		if (!d->rq_count) {
			total.rnr++;
			complete(q, wr, IBV_WC_RNR_RETRY_EXC_ERR, 0, 0, 0);
			to_error(q);
			return;
		}
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = d->rq[d->rq_head];
		d->rq_head = (d->rq_head + 1) % FW_RQ;
		d->rq_count--;
		wc.status = IBV_WC_SUCCESS;
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = wr->imm_data;
		wc.byte_len = len;
		wc.qp_num = d->qp.qp_num;
		cq_push(d->rcq, &wc);
		complete(q, wr, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, len, 0);
		return;
	case IBV_WR_RDMA_READ:
		if (!(d->a.access & IBV_ACCESS_REMOTE_READ)) {
			complete(q, wr, IBV_WC_REM_ACCESS_ERR, 0, 0, 0);
			to_error(q);
			return;
		}
		if (len)
			memmove(l, r, len);
		q->st.reads++;
		total.reads++;
		complete(q, wr, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, len, 0);
		return;
	default:
		complete(q, wr, IBV_WC_LOC_QP_OP_ERR, 0, 0, 0);
		to_error(q);
	}
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct fw_qp *q = (struct fw_qp *)qp;

	for (; wr; wr = wr->next) {
		if (q->a.state != IBV_QPS_RTS && q->a.state != IBV_QPS_ERR) {
			*bad = wr;
			return EINVAL;
		}
		/* inline data beyond what the QP was made for: refused, as providers do */
		if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge == 1 &&
		    wr->sg_list[0].length > q->a.cap.max_inline_data) {
			*bad = wr;
			return EINVAL;
		}
		if (q->sq_posted - q->sq_freed >= q->a.cap.max_send_wr) {
			q->st.sq_full++;
			total.sq_full++;
			*bad = wr;
			return ENOMEM;
		}
		q->sq_posted++;
		if (!stall && !q->stall)
			exec_one(q, wr);
	}
	return 0;
}

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fw_cq *c = (struct fw_cq *)cq;
	int i;

	for (i = 0; i < n && c->count; i++) {
		struct fw_sq_mark *m = &c->mark[c->head];

		wc[i] = c->ring[c->head];
		if (m->qp && m->seq > m->qp->sq_freed)
			m->qp->sq_freed = m->seq;
		m->qp = NULL;
		c->head = (c->head + 1) % c->cap;
		c->count--;
	}
	return i;
}

static int f_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	int i;

	pthread_mutex_lock(&async_lock);
	for (i = 0; i < nasync && async_ctx[i] != ctx; i++)
		;
	if (i == nasync) {
		pthread_mutex_unlock(&async_lock);
		errno = EAGAIN;
		return -1;
	}
	*ev = async_q[i];
	nasync--;
	memmove(async_q + i, async_q + i + 1, sizeof(async_q[0]) * (size_t)(nasync - i));
	memmove(async_ctx + i, async_ctx + i + 1, sizeof(async_ctx[0]) * (size_t)(nasync - i));
	pthread_mutex_unlock(&async_lock);
	return 0;
}

static void f_ack_async_event(struct ibv_async_event *ev)
{
}

static const struct rn_verbs_ops wire_ops = {
	.create_cq = f_create_cq,
	.destroy_cq = f_destroy_cq,
	.create_qp = f_create_qp,
	.modify_qp = f_modify_qp,
	.destroy_qp = f_destroy_qp,
	.post_send = f_post_send,
	.post_recv = f_post_recv,
	.poll_cq = f_poll_cq,
	.get_async_event = f_get_async_event,
	.ack_async_event = f_ack_async_event,
};

void fake_wire_install(void)
{
	memset(qpn_tab, 0, sizeof(qpn_tab));
	memset(&total, 0, sizeof(total));
	max_msg = 1u << 31;
	stall = 0;
	pthread_mutex_lock(&async_lock);
	nasync = 0;
	pthread_mutex_unlock(&async_lock);
	rn_verbs_set_ops(&wire_ops);
}

int fake_wire_live(void)
{
	return live;
}

void fake_wire_set_max_msg(uint32_t bytes)
{
	max_msg = bytes;
}

void fake_wire_fail_qp(struct ibv_qp *qp, enum ibv_wc_status status, uint32_t vendor_err)
{
	struct fw_qp *q = (struct fw_qp *)qp;

	q->fail_status = status;
	q->fail_vendor = vendor_err;
}

void fake_wire_set_stall(int on)
{
	stall = on;
}

void fake_wire_set_stall_qp(struct ibv_qp *qp, int on)
{
	((struct fw_qp *)qp)->stall = on;
}

void fake_wire_push_async(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	pthread_mutex_lock(&async_lock);
	if (nasync < FW_MAX_ASYNC) {
		async_ctx[nasync] = ctx;
		async_q[nasync++] = *ev;
	}
	pthread_mutex_unlock(&async_lock);
}

int fake_wire_qp_attrs(struct ibv_qp *qp, struct fake_wire_qp_attrs *out)
{
	*out = ((struct fw_qp *)qp)->a;
	return 0;
}

void fake_wire_stats(struct ibv_qp *qp, struct fake_wire_stats *out)
{
	*out = qp ? ((struct fw_qp *)qp)->st : total;
}
