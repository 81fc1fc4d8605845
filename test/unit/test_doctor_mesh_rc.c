// SPDX-License-Identifier: MIT
/*
 * The mesh's RC probes (src/doctor/doctor_mesh_rc.c) over a fake transport (its rn_net_ops
 * table): a ping through a connect still in progress gives the RTT from the send to its
 * completion; a peer that never acknowledges is a loss by the deadline and its connection
 * goes (the next ping connects again); the send connections are bounded (the least
 * recently used idle one goes, none when all are busy); a peer agent started again (a new
 * handle) gets a new connection; the peers' connections are bounded and the idle ones go.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../src/doctor/doctor_mesh_rc.c"

/* ---- the fake transport ---- */
static struct {
	int connect_after; /* connect calls that say "in progress" first */
	int connects, close_sends, close_recvs, accepts_pending;
	int send_done;     /* the next test of a send request says done */
	int send_err;      /* ... or fails with this */
	int recv_done;
} fx;
static char objs[4096]; /* addresses handed out as comms, MRs and requests */
static int nobj;

static void *obj(void)
{
	return &objs[nobj++ % (int)sizeof(objs)];
}

static int f_listen(struct rn_engine *eng, int dev, void *handle, struct rn_listen_comm **out)
{
	*out = obj();
	return 0;
}

static int f_connect(struct rn_engine *eng, int dev, void *handle, int tc,
		     struct rn_send_comm **out)
{
	fx.connects++;
	*out = fx.connect_after-- > 0 ? NULL : obj();
	return 0;
}

static int f_accept(struct rn_listen_comm *lc, struct rn_recv_comm **out)
{
	*out = fx.accepts_pending > 0 ? obj() : NULL;
	fx.accepts_pending -= !!*out;
	return 0;
}

static int f_reg_mr(void *comm, void *data, size_t size, int type, struct rn_mr **out)
{
	*out = obj();
	return 0;
}

static int f_dereg_mr(void *comm, struct rn_mr *mr)
{
	return 0;
}

static char send_req, recv_req;

static int f_isend(struct rn_send_comm *sc, void *data, size_t size, int tag, struct rn_mr *mr,
		   struct rn_req **out)
{
	*out = (struct rn_req *)&send_req;
	return 0;
}

static int f_irecv(struct rn_recv_comm *rc, int n, void **data, size_t *sizes, int *tags,
		   struct rn_mr **mrs, struct rn_req **out)
{
	*out = (struct rn_req *)&recv_req;
	return 0;
}

static int f_test(struct rn_req *req, int *done, int *sizes)
{
	if (req == (struct rn_req *)&send_req) {
		*done = fx.send_done;
		return fx.send_err;
	}
	*done = fx.recv_done;
	return 0;
}

static int f_close_send(struct rn_send_comm *sc)
{
	fx.close_sends++;
	return 0;
}

static int f_close_recv(struct rn_recv_comm *rc)
{
	fx.close_recvs++;
	return 0;
}

static int f_close_listen(struct rn_listen_comm *lc)
{
	return 0;
}

static const struct rn_net_ops fake_net = {
	.listen = f_listen,
	.connect = f_connect,
	.accept = f_accept,
	.reg_mr = f_reg_mr,
	.dereg_mr = f_dereg_mr,
	.isend = f_isend,
	.irecv = f_irecv,
	.test = f_test,
	.close_send = f_close_send,
	.close_recv = f_close_recv,
	.close_listen = f_close_listen,
};

/* An RC prober of one NIC with @qps connections on the fake (rn_mesh_rc_new needs a
 * doctor context with devices: built by hand instead). */
static struct rn_mesh_rc *rc_make(int qps)
{
	struct rn_mesh_rc *rc = calloc(1, sizeof(*rc));

	memset(&fx, 0, sizeof(fx));
	assert_non_null(rc);
	rc->net = &fake_net;
	rc->nnics = 1;
	rc->dev[0] = 0;
	rc->max_qps = qps;
	rc->timeout_ms = 1000;
	rc->out = calloc((size_t)qps, sizeof(*rc->out));
	assert_int_equal(f_listen(NULL, 0, rc->handle[0], &rc->lc[0]), 0);
	return rc;
}

/* The outcomes the prober reported. */
static struct {
	int n;
	char peer[64];
	int j;
	uint32_t us;
	const char *why;
} got;

static void on_done(void *arg, const char *peer, int i, int j, uint32_t us, const char *why)
{
	got.n++;
	snprintf(got.peer, sizeof(got.peer), "%s", peer);
	got.j = j;
	got.us = us;
	got.why = why;
}

static const uint8_t h1[RN_HANDLE_SIZE] = { 1 }, h2[RN_HANDLE_SIZE] = { 2 };

static void ping_rtt(void **state)
{
	struct rn_mesh_rc *rc = rc_make(2);
	struct rn_mesh_rc_stats st = { 0 };

	(void)state;
	memset(&got, 0, sizeof(got));
	fx.connect_after = 2;
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 1, h1, 100.0), 0);
	/* one in flight a pair */
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 1, h1, 100.0), -EBUSY);
	/* the connect in progress: no outcome, still busy */
	assert_int_equal(rn_mesh_rc_step(rc, 101.0, on_done, NULL, &st), 1);
	assert_int_equal(rn_mesh_rc_step(rc, 102.0, on_done, NULL, &st), 1);
	/* connected, the send posted at 103 ms, done at 103.25 ms: 250 us */
	assert_int_equal(rn_mesh_rc_step(rc, 103.0, on_done, NULL, &st), 1);
	assert_int_equal(got.n, 0);
	fx.send_done = 1;
	assert_int_equal(rn_mesh_rc_step(rc, 103.25, on_done, NULL, &st), 0);
	assert_int_equal(got.n, 1);
	assert_string_equal(got.peer, "b");
	assert_int_equal(got.j, 1);
	assert_int_equal(got.us, 250);
	assert_null(got.why);
	assert_int_equal(st.qps, 1);
	assert_int_equal(fx.connects, 3);
	/* the next ping reuses the connection */
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 1, h1, 1200.0), 0);
	assert_int_equal(rn_mesh_rc_step(rc, 1200.5, on_done, NULL, &st), 0);
	assert_int_equal(got.n, 2);
	assert_int_equal(fx.connects, 3);
	/* no RC from a NIC without a listener */
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 1, 1, h1, 1300.0), -ENODEV);
	rn_mesh_rc_free(rc);
}

static void dead_peer(void **state)
{
	struct rn_mesh_rc *rc = rc_make(2);
	struct rn_mesh_rc_stats st = { 0 };

	(void)state;
	memset(&got, 0, sizeof(got));
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 0, h1, 0.0), 0);
	/* connected and sent, never acknowledged: nothing until the deadline, then a loss */
	assert_int_equal(rn_mesh_rc_step(rc, 1.0, on_done, NULL, &st), 1);
	assert_int_equal(rn_mesh_rc_step(rc, 5999.0, on_done, NULL, &st), 1);
	assert_int_equal(got.n, 0);
	assert_int_equal(rn_mesh_rc_step(rc, 6001.0, on_done, NULL, &st), 0);
	assert_int_equal(got.n, 1);
	assert_int_equal(got.us, RN_MESH_LOST);
	assert_string_equal(got.why, "no acknowledgement by the deadline");
	/* its QP goes: the next ping connects again */
	assert_int_equal(fx.close_sends, 1);
	assert_int_equal(st.qps, 0);
	/* a send that fails (the QP in error) is a loss at once */
	fx.send_err = -EIO;
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 0, h1, 7000.0), 0);
	assert_int_equal(rn_mesh_rc_step(rc, 7001.0, on_done, NULL, &st), 0);
	assert_int_equal(got.n, 2);
	assert_int_equal(got.us, RN_MESH_LOST);
	assert_string_equal(got.why, "send");
	assert_int_equal(fx.connects, 2);
	assert_int_equal(fx.close_sends, 2);
	rn_mesh_rc_free(rc);
}

static void qps_bounded(void **state)
{
	struct rn_mesh_rc *rc = rc_make(2);
	struct rn_mesh_rc_stats st = { 0 };

	(void)state;
	fx.send_done = 1;
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 0, h1, 0.0), 0);
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 1, h1, 10.0), 0);
	rn_mesh_rc_step(rc, 20.0, on_done, NULL, &st);
	assert_int_equal(st.qps, 2);
	/* a third pair: the least recently used idle connection (b 0>0) goes */
	assert_int_equal(rn_mesh_rc_ping(rc, "c", 0, 0, h2, 30.0), 0);
	assert_int_equal(fx.close_sends, 1);
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 1, h1, 30.0), 0);
	/* both busy: no room for a fourth */
	assert_int_equal(rn_mesh_rc_ping(rc, "b", 0, 0, h1, 30.0), -ENOSPC);
	rn_mesh_rc_step(rc, 40.0, on_done, NULL, &st);
	assert_int_equal(st.qps, 2);
	/* the peer agent started again: a new handle, a new connection */
	assert_int_equal(rn_mesh_rc_ping(rc, "c", 0, 0, h1, 50.0), 0);
	assert_int_equal(fx.close_sends, 2);
	rn_mesh_rc_step(rc, 60.0, on_done, NULL, &st);
	/* unused for RN_MESH_RC_IDLE_MS (rotated out, or its peer left the list): closed */
	rn_mesh_rc_step(rc, 60.0 + RN_MESH_RC_IDLE_MS + 1, on_done, NULL, &st);
	assert_int_equal(st.qps, 0);
	assert_int_equal(fx.close_sends, 4);
	rn_mesh_rc_free(rc);
}

static void answers_bounded(void **state)
{
	struct rn_mesh_rc *rc = rc_make(1);
	struct rn_mesh_rc_stats st = { 0 };
	int k, open = 0;

	(void)state;
	/* one accept a step: more peers' connections than the table keeps */
	fx.accepts_pending = RN_MESH_RC_ACCEPT + 6;
	for (k = 0; k < RN_MESH_RC_ACCEPT + 6; k++)
		rn_mesh_rc_step(rc, 1.0 + k, on_done, NULL, &st);
	assert_int_equal(st.accepted, RN_MESH_RC_ACCEPT + 6);
	assert_int_equal(fx.close_recvs, 6);
	for (k = 0; k < RN_MESH_RC_ACCEPT; k++)
		open += !!rc->in[k].rc;
	assert_int_equal(open, RN_MESH_RC_ACCEPT);
	/* a ping received on each: answered, the receive posted again */
	fx.recv_done = 1;
	rn_mesh_rc_step(rc, 100.0, on_done, NULL, &st);
	assert_int_equal(st.answered, RN_MESH_RC_ACCEPT);
	/* then silence: each goes once idle for RN_MESH_RC_IDLE_MS */
	fx.recv_done = 0;
	rn_mesh_rc_step(rc, 200.0, on_done, NULL, &st);
	rn_mesh_rc_step(rc, 100.0 + RN_MESH_RC_IDLE_MS + 1, on_done, NULL, &st);
	assert_int_equal(fx.close_recvs, 6 + RN_MESH_RC_ACCEPT);
	rn_mesh_rc_free(rc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ping_rtt),
		cmocka_unit_test(dead_peer),
		cmocka_unit_test(qps_bounded),
		cmocka_unit_test(answers_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
