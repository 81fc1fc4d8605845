// SPDX-License-Identifier: MIT
/*
 * The mesh's RC probes (issue #37): one thread's engine (its own doctor context, so its
 * own rn_probe_eng) that keeps RC connections through the library's transport to sampled
 * peer NICs and pings over them, and answers the peers' own.
 *
 *   answering  a listener on each local NIC with an RDMA port (its handle goes to peers
 *              in the UDP prober's handle answer); each connection a peer makes gets one
 *              receive posted at all times, so a peer's ping never waits for us;
 *   pinging    one send connection per sampled NIC pair (at most @max_qps, the least
 *              recently used one closed for a new pair); a ping is one 64-byte send, its
 *              RTT the time from the send taking the peer's posted receive to its
 *              completion, which on RC is the peer NIC's acknowledgement.
 *
 * Bounds: @max_qps send connections, RN_MESH_RC_ACCEPT accepted ones (the idlest closed
 * for a newcomer), one ping in flight a pair with a deadline (a dead peer is a timeout,
 * never a hang; its connection is closed, the next ping connects again), connections idle
 * for RN_MESH_RC_IDLE_MS closed (a peer that went away, a pair rotated out). Nothing
 * here blocks: every call is the transport's non-blocking one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_mesh.h"
#include "doctor_probe.h"
#include "rn_net.h"

#define RC_MSG 64
#define RC_TAG 0x524d /* "RM" */

struct rc_out {       /* a send connection: ours @i to @peer's NIC @j */
	int used;
	char peer[256];
	int i, j;
	uint8_t handle[RN_HANDLE_SIZE];
	struct rn_send_comm *sc;
	struct rn_mr *mr;
	struct rn_req *req;
	double by;      /* the connect's or the ping's deadline, 0: idle */
	double t0;      /* the send took the receive (0: not yet) */
	double used_ms; /* last ping started */
	char buf[RC_MSG];
};

struct rc_in { /* an accepted connection: one receive posted at all times */
	struct rn_recv_comm *rc;
	struct rn_mr *mr;
	struct rn_req *req;
	double last_ms;
	char buf[RC_MSG];
};

/*
 * The transport's calls through a table (rn_net.h's, as plugin/ makes them): the unit test
 * puts its own in @net.
 */
static const struct rn_net_ops rc_net = {
	.listen = rn_listen,
	.connect = rn_connect,
	.accept = rn_accept,
	.reg_mr = rn_reg_mr,
	.dereg_mr = rn_dereg_mr,
	.isend = rn_isend,
	.irecv = rn_irecv,
	.test = rn_test,
	.close_send = rn_close_send,
	.close_recv = rn_close_recv,
	.close_listen = rn_close_listen,
};

struct rn_mesh_rc {
	const struct rn_net_ops *net;
	struct rn_doctor *d;
	struct rn_engine *eng;
	int nnics;
	int dev[RN_MESH_NICS]; /* the engine's device of our NIC i, -1: no RC there */
	struct rn_listen_comm *lc[RN_MESH_NICS];
	uint8_t handle[RN_MESH_NICS][RN_HANDLE_SIZE];
	int max_qps;
	struct rc_out *out;
	struct rc_in in[RN_MESH_RC_ACCEPT];
	int timeout_ms;
};

struct rn_mesh_rc *rn_mesh_rc_new(struct rn_doctor *d, const char (*netdev)[16], int nnics,
				  int max_qps, int timeout_ms, char *why, size_t len)
{
	struct rn_mesh_rc *rc = calloc(1, sizeof(*rc));
	int i, k, any = 0;

	if (!rc || !(rc->out = calloc((size_t)max_qps, sizeof(*rc->out)))) {
		free(rc);
		snprintf(why, len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	rc->net = &rc_net;
	rc->d = d;
	rc->nnics = nnics;
	rc->max_qps = max_qps;
	rc->timeout_ms = timeout_ms;
	why[0] = 0;
	for (i = 0; i < nnics; i++) {
		rc->dev[i] = -1;
		/* the prober's NIC @i by its netdev: the two contexts gathered apart */
		for (k = 0; k < d->nnics; k++)
			if (!strcmp(d->nics[k].nic.netdev, netdev[i]))
				break;
		if (k == d->nnics || !rn_probe_available(d, k))
			continue;
		rc->dev[i] = rn_probe_eng_dev(d, k, &rc->eng, why, len);
		if (rc->dev[i] < 0)
			continue;
		if (rc->net->listen(rc->eng, rc->dev[i], rc->handle[i], &rc->lc[i])) {
			snprintf(why, len, "%s: the RC listener did not start", netdev[i]);
			rc->dev[i] = -1;
			continue;
		}
		any = 1;
	}
	if (!any) {
		if (!why[0])
			snprintf(why, len, "no NIC with an RDMA port");
		rn_mesh_rc_free(rc);
		errno = ENODEV;
		return NULL;
	}
	return rc;
}

int rn_mesh_rc_handle(const struct rn_mesh_rc *rc, int nic, void *handle)
{
	if (!rc || nic < 0 || nic >= rc->nnics || rc->dev[nic] < 0)
		return -ENODEV;
	memcpy(handle, rc->handle[nic], RN_HANDLE_SIZE);
	return 0;
}

static void out_close(const struct rn_mesh_rc *rc, struct rc_out *o)
{
	if (o->mr)
		rc->net->dereg_mr(o->sc, o->mr);
	if (o->sc)
		rc->net->close_send(o->sc);
	o->mr = NULL;
	o->sc = NULL;
	o->req = NULL;
	o->by = 0;
	o->t0 = 0;
	o->used = 0;
}

static void in_close(const struct rn_mesh_rc *rc, struct rc_in *x)
{
	if (x->mr)
		rc->net->dereg_mr(x->rc, x->mr);
	if (x->rc)
		rc->net->close_recv(x->rc);
	memset(x, 0, sizeof(*x));
}

int rn_mesh_rc_ping(struct rn_mesh_rc *rc, const char *peer, int i, int j, const void *handle,
		    double now)
{
	struct rc_out *o = NULL, *lru = NULL;
	int k;

	if (i < 0 || i >= rc->nnics || rc->dev[i] < 0)
		return -ENODEV;
	for (k = 0; k < rc->max_qps && !o; k++) {
		struct rc_out *x = &rc->out[k];

		if (x->used && x->i == i && x->j == j && !strcmp(x->peer, peer))
			o = x;
	}
	/* a new pair: a free connection, else the least recently used idle one */
	for (k = 0; k < rc->max_qps && !o; k++) {
		struct rc_out *x = &rc->out[k];

		if (!x->used) {
			lru = x;
			break;
		}
		if (!x->by && (!lru || x->used_ms < lru->used_ms))
			lru = x;
	}
	if (o && o->by)
		return -EBUSY;
	/* the peer's agent started again (a new listener): the old connection is its old one */
	if (o && memcmp(o->handle, handle, RN_HANDLE_SIZE))
		out_close(rc, o);
	if (!o || !o->used) {
		o = o ? o : lru;
		if (!o)
			return -ENOSPC; /* every connection has a ping in flight */
		out_close(rc, o);
		o->used = 1;
		snprintf(o->peer, sizeof(o->peer), "%s", peer);
		o->i = i;
		o->j = j;
		memcpy(o->handle, handle, RN_HANDLE_SIZE);
	}
	o->used_ms = now;
	/* a connection to make first gets its own time: the RTT starts after it anyway */
	o->by = now + rc->timeout_ms + (o->sc ? 0 : RN_MESH_RC_CONNECT_MS);
	o->t0 = 0;
	return 0;
}

/* One step of a ping: 1 done (*@us), 0 still going, -errno failed (@why). */
static int out_step(struct rn_mesh_rc *rc, struct rc_out *o, double now, uint32_t *us,
		    const char **why)
{
	int ret = 0, done = 0, size = 0;

	if (!o->sc) {
		ret = rc->net->connect(rc->eng, rc->dev[o->i], o->handle, -1, &o->sc);
		if (ret) {
			*why = "connect";
			return ret;
		}
		if (!o->sc)
			return 0;
		memcpy(o->buf, "roce-doctor mesh", 16);
		ret = rc->net->reg_mr(o->sc, o->buf, sizeof(o->buf), RN_PTR_HOST, &o->mr);
		if (ret) {
			*why = "register";
			return ret;
		}
	}
	if (!o->req) {
		ret = rc->net->isend(o->sc, o->buf, sizeof(o->buf), RC_TAG, o->mr, &o->req);
		if (ret) {
			*why = "send";
			return ret;
		}
		if (!o->req)
			return 0; /* the peer's receive not posted yet */
		o->t0 = now;
	}
	ret = rc->net->test(o->req, &done, &size);
	if (ret) {
		/* retries exhausted: the peer's NIC never acknowledged (the doctor's rdma-timeout) */
		*why = ret == -EREMOTEIO && rn_send_wc_status(o->sc) == IBV_WC_RETRY_EXC_ERR ?
			       "no acknowledgement" :
			       "send";
		return ret;
	}
	if (!done)
		return 0;
	o->req = NULL;
	*us = (uint32_t)RN_MIN((now - o->t0) * 1000.0, 1e9);
	return 1;
}

/* Accept what the listeners hold, keep each accepted connection's receive posted. */
static void answer(struct rn_mesh_rc *rc, double now, struct rn_mesh_rc_stats *st)
{
	int i, k;

	for (i = 0; i < rc->nnics; i++) {
		struct rn_recv_comm *c = NULL;
		struct rc_in *slot = NULL;

		if (!rc->lc[i] || rc->net->accept(rc->lc[i], &c) || !c)
			continue;
		for (k = 0; k < RN_MESH_RC_ACCEPT; k++)
			if (!rc->in[k].rc) {
				slot = &rc->in[k];
				break;
			} else if (!slot || rc->in[k].last_ms < slot->last_ms) {
				slot = &rc->in[k];
			}
		/* full: the idlest goes (its peer connects again if it still pings) */
		if (slot->rc)
			in_close(rc, slot);
		slot->rc = c;
		slot->last_ms = now;
		st->accepted++;
		if (rc->net->reg_mr(c, slot->buf, sizeof(slot->buf), RN_PTR_HOST, &slot->mr))
			in_close(rc, slot);
	}
	for (k = 0; k < RN_MESH_RC_ACCEPT; k++) {
		struct rc_in *x = &rc->in[k];
		int done = 0, size = 0;

		if (!x->rc)
			continue;
		if (!x->req) {
			void *data = x->buf;
			size_t sz = sizeof(x->buf);
			int tag = RC_TAG;

			if (rc->net->irecv(x->rc, 1, &data, &sz, &tag, &x->mr, &x->req)) {
				in_close(rc, x);
				continue;
			}
		}
		if (x->req && (rc->net->test(x->req, &done, &size) ||
			       (!done && now - x->last_ms > RN_MESH_RC_IDLE_MS))) {
			in_close(rc, x); /* broken, or its peer stopped pinging */
			continue;
		}
		if (done) {
			x->req = NULL;
			x->last_ms = now;
			st->answered++;
		}
	}
}

int rn_mesh_rc_step(struct rn_mesh_rc *rc, double now, rn_mesh_rc_done_fn *done, void *arg,
		    struct rn_mesh_rc_stats *st)
{
	int k, busy = 0;

	answer(rc, now, st);
	st->qps = 0;
	for (k = 0; k < rc->max_qps; k++) {
		struct rc_out *o = &rc->out[k];
		const char *why = NULL;
		uint32_t us = 0;
		int ret;

		if (!o->used)
			continue;
		if (!o->by) {
			/* rotated out, or its peer gone from the list: its QP goes */
			if (now - o->used_ms > RN_MESH_RC_IDLE_MS)
				out_close(rc, o);
			else
				st->qps += !!o->sc;
			continue;
		}
		ret = out_step(rc, o, now, &us, &why);
		if (!ret && now > o->by) {
			ret = -ETIMEDOUT;
			why = o->sc ? "no acknowledgement by the deadline" : "connect: timed out";
		}
		if (ret == 1) {
			o->by = 0;
			done(arg, o->peer, o->i, o->j, us, NULL);
		} else if (ret < 0) {
			/* the QP is in error or the connect gave up: a fresh one next time */
			done(arg, o->peer, o->i, o->j, RN_MESH_LOST, why);
			out_close(rc, o);
			continue;
		} else {
			busy = 1;
		}
		st->qps += !!o->sc;
	}
	return busy;
}

void rn_mesh_rc_free(struct rn_mesh_rc *rc)
{
	int k;

	if (!rc)
		return;
	for (k = 0; rc->out && k < rc->max_qps; k++)
		out_close(rc, &rc->out[k]);
	for (k = 0; k < RN_MESH_RC_ACCEPT; k++)
		in_close(rc, &rc->in[k]);
	for (k = 0; k < rc->nnics; k++)
		if (rc->lc[k])
			rc->net->close_listen(rc->lc[k]);
	free(rc->out);
	free(rc);
}
