// SPDX-License-Identifier: MIT
/*
 * Port failover over the fake wire (src/failover.c): a comm made on rxe0 <-> rxe1 keeps
 * the spare pair rxe1 <-> rxe0; a failure at each point of the protocol moves it there,
 * and every message is delivered once, whole, to its buffer and in order. The failure
 * points: before the CTS (the receiver's FIFO write fails), after the CTS and before
 * the data (the sender's first write fails), in the middle of a stream, in the middle of
 * a split message, in the middle of a multi-receive, and during the move itself (the
 * spare fails too: one error naming both pairs, no hang).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "double_conncheck.h"
#include "fixture_xfer.h"
#include "double_conncheck.c"
#include "rn_clock.h"
#include "rn_errlog.h"
#include "rn_fostate.h"
#include "rn_verbs.h"

#define MSGS 12
#define MSG_LEN 4096
#define WAIT_NS (20ull * 1000000000ull)

struct t {
	struct fx f;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
};

static char state_dir[64];

/* The host's record of moves goes into a directory of the test's own. */
static int group_setup(void **state)
{
	(void)state;
	snprintf(state_dir, sizeof(state_dir), "/tmp/rn-fo-test-XXXXXX");
	if (!mkdtemp(state_dir))
		return -1;
	setenv("NCCL_ROCE_STATE_DIR", state_dir, 1);
	return 0;
}

static int group_teardown(void **state)
{
	char p[128];

	(void)state;
	snprintf(p, sizeof(p), "%s/%s", state_dir, RN_FOSTATE_FILE);
	unlink(p);
	snprintf(p, sizeof(p), "%s/%s", state_dir, RN_ERRLOG_FILE);
	unlink(p);
	rmdir(state_dir);
	return 0;
}

static int setup_cfg(void **state, int nqps, int split)
{
	static struct t t;

	fx_failover = 1;
	fx_setup(&t.f);
	fx_failover = 0;
	fake_path_set(NULL, NULL);
	t.f.eng.cfg.qps_per_conn = nqps;
	t.f.eng.cfg.split_data_on_qps = split;
	assert_int_equal(fx_connect(&t.f, 0, 1, 0, &t.sc, &t.rc), 0);
	*state = &t;
	return 0;
}

static int setup(void **state)
{
	return setup_cfg(state, 1, 0);
}

static int setup_split2(void **state)
{
	return setup_cfg(state, 2, 1);
}

static int setup_rr2(void **state)
{
	return setup_cfg(state, 2, 0);
}

static int teardown(void **state)
{
	struct t *t = *state;

	assert_int_equal(fx_close(&t->f, t->sc, t->rc), 0);
	return 0;
}

/* The messages of one run: MSGS receives posted ahead, each sent once. */
struct run {
	unsigned char *src[MSGS], *dst[MSGS];
	struct rn_mr *smr, *rmr;
	unsigned char *sbuf, *rbuf;
	struct rn_req *sreq[MSGS], *rreq[MSGS];
	int sdone[MSGS], rdone[MSGS], rsize[MSGS], rtimes[MSGS];
	int sent, posted;
};

static void run_init(struct t *t, struct run *r)
{
	int i;

	memset(r, 0, sizeof(*r));
	r->sbuf = fx_pattern(MSGS * MSG_LEN, 11);
	r->rbuf = calloc(MSGS, MSG_LEN);
	assert_non_null(r->rbuf);
	for (i = 0; i < MSGS; i++) {
		r->src[i] = r->sbuf + i * MSG_LEN;
		r->dst[i] = r->rbuf + i * MSG_LEN;
	}
	assert_int_equal(rn_reg_mr(t->sc, r->sbuf, MSGS * MSG_LEN, RN_PTR_HOST, &r->smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r->rbuf, MSGS * MSG_LEN, RN_PTR_HOST, &r->rmr), 0);
}

static void run_free(struct t *t, struct run *r)
{
	rn_dereg_mr(t->sc, r->smr);
	rn_dereg_mr(t->rc, r->rmr);
	free(r->sbuf);
	free(r->rbuf);
}

static int post_recv(struct t *t, struct run *r)
{
	size_t sz = MSG_LEN;
	void *p = r->dst[r->posted];
	int tag = 7, ret;

	ret = rn_irecv(t->rc, 1, &p, &sz, &tag, &r->rmr, &r->rreq[r->posted]);
	if (!ret && r->rreq[r->posted])
		r->posted++;
	return ret;
}

/* Message i's size: they differ, so a message landing in the wrong buffer shows. */
static size_t msg_size(int i)
{
	return MSG_LEN - 64 * (size_t)i;
}

static int post_send(struct t *t, struct run *r)
{
	int ret = rn_isend(t->sc, r->src[r->sent], msg_size(r->sent), 7, r->smr, &r->sreq[r->sent]);

	if (!ret && r->sreq[r->sent])
		r->sent++;
	return ret;
}

/*
 * Drive both ends as NCCL's proxy would, until every request completed or one end
 * failed: -errno of the first failure, 0 when all completed. Each completion is counted.
 */
static int run_all(struct t *t, struct run *r, int *serr, int *rerr)
{
	uint64_t end = rn_now_ns() + WAIT_NS;
	int i, done, sz, left;

	*serr = *rerr = 0;
	left = 1;
	while (rn_now_ns() < end) {
		int before;

		left = 0;
		while (!*rerr && r->posted < MSGS && r->posted < r->sent + 4) {
			before = r->posted;
			if ((*rerr = post_recv(t, r)) || r->posted == before)
				break;
		}
		while (!*serr && r->sent < MSGS && r->sent < r->posted) {
			before = r->sent;
			if ((*serr = post_send(t, r)) || r->sent == before)
				break;
		}
		for (i = 0; i < MSGS; i++) {
			if (i < r->sent && !r->sdone[i] && !*serr) {
				*serr = rn_test(r->sreq[i], &done, &sz);
				if (!*serr && done)
					r->sdone[i]++;
			}
			if (i < r->posted && !r->rdone[i] && !*rerr) {
				*rerr = rn_test(r->rreq[i], &done, &sz);
				if (!*rerr && done) {
					r->rdone[i]++;
					r->rsize[i] = sz;
				}
			}
			left += !r->sdone[i] + !r->rdone[i];
		}
		if (*serr || *rerr || !left)
			break;
	}
	return *serr ? *serr : *rerr ? *rerr : left ? -ETIMEDOUT : 0;
}

/* Every message once, whole, of its own size, in its own buffer. */
static void check_delivered(struct run *r)
{
	int i;

	for (i = 0; i < MSGS; i++) {
		assert_int_equal(r->sdone[i], 1);
		assert_int_equal(r->rdone[i], 1);
		assert_int_equal(r->rsize[i], (int)msg_size(i));
		assert_memory_equal(r->dst[i], r->src[i], msg_size(i));
	}
}

/* The pair in use is the spare: rxe1 sends to rxe0 now. */
static void check_moved(struct t *t)
{
	uint64_t n0 = 0, n1 = 0, last = 0;

	assert_ptr_equal(t->sc->c.mem[0].dev, &t->f.devs[1]);
	assert_ptr_equal(t->rc->c.mem[0].dev, &t->f.devs[0]);
	assert_int_equal(t->sc->c.fo->moves, 1);
	assert_int_equal(t->rc->c.fo->moves, 1);
	assert_true(fx_warn_seen("failover: send comm with"));
	assert_true(fx_warn_seen("failover: recv comm with"));
	assert_true(fx_warn_seen("moved to rxe1:1 -> eth0"));
	assert_true(fx_warn_seen("moved to rxe0:1 -> eth1"));
	/* each end recorded the NIC it left, for roce-doctor --prometheus */
	assert_int_equal(rn_fostate_count(state_dir, "rxe0", 1, &n0, &last), 0);
	assert_int_equal(rn_fostate_count(state_dir, "rxe1", 1, &n1, &last), 0);
	assert_true(n0 >= 1 && n1 >= 1);
	assert_true(last > 0);
}

/* Messages before @at go through the comm's own pair; then @qp fails with @st. */
static void stream_failing(struct t *t, struct run *r, int at, struct ibv_qp *qp,
			   enum ibv_wc_status st)
{
	int serr, rerr;

	run_init(t, r);
	while (r->sent < at) {
		int done, sz;

		assert_int_equal(post_recv(t, r), 0);
		/* the receiver tests what it posted (as NCCL): a CTS left pending goes */
		assert_int_equal(rn_test(r->rreq[r->posted - 1], &done, &sz), 0);
		assert_int_equal(done, 0);
		assert_int_equal(post_send(t, r), 0);
	}
	fx_log_reset();
	fake_wire_fail_qp(qp, st, 0x81);
	assert_int_equal(run_all(t, r, &serr, &rerr), 0);
}

static void spares_are_made(void **state)
{
	struct t *t = *state;

	assert_non_null(t->sc->c.fo);
	assert_non_null(t->rc->c.fo);
	assert_int_equal(t->sc->c.fo->npaths, 2);
	assert_int_equal(t->rc->c.fo->npaths, 2);
	assert_ptr_equal(t->sc->c.fo->path[1].mem.dev, &t->f.devs[1]);
	assert_ptr_equal(t->rc->c.fo->path[1].mem.dev, &t->f.devs[0]);
	/* both checks passed: the receiver knows the sender's through READY */
	assert_true(t->rc->c.fo->path[1].ok_here && t->rc->c.fo->path[1].ok_there);
	assert_true(t->sc->c.fo->path[1].ok_here);
	assert_true(fx_info_seen("spare pairs rxe1:1->eth0"));
	assert_true(fx_info_seen("spare pairs rxe0:1->eth1"));
}

/* Nothing fails: the spare is never used, and costs the data path nothing. */
static void no_failure_no_move(void **state)
{
	struct t *t = *state;
	struct run r;
	int serr, rerr;

	run_init(t, &r);
	assert_int_equal(run_all(t, &r, &serr, &rerr), 0);
	check_delivered(&r);
	assert_ptr_equal(t->sc->c.mem[0].dev, &t->f.devs[0]);
	assert_int_equal(t->sc->c.fo->moves, 0);
	assert_false(fx_warn_seen("failover"));
	run_free(t, &r);
}

/* After the CTS, before the data: the sender's first write fails. */
static void sender_fails_before_data(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 0, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_moved(t);
	assert_true(fx_warn_seen("RETRY_EXC_ERR on a Send"));
	run_free(t, &r);
}

/* A path gone bad (the neighbour holds the wrong MAC): the move, and the old pair's cause. */
static void moved_pair_diagnosed(void **state)
{
	struct t *t = *state;
	struct fake_path_script s = { 0 };
	struct run r;

	s.diag_ret = 0;
	s.diag.cause = RN_CAUSE_NEIGH_WRONG_MAC;
	s.diag.msg = (char *)"neighbour 198.18.0.2 on eth0 holds 52:54:00:00:02:02";
	s.diag.fix = (char *)"ip neigh del 198.18.0.2 dev eth0";
	fake_path_set("rxe0", &s);
	stream_failing(t, &r, 2, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_moved(t);
	assert_true(fx_warn_seen("failover: the pair rxe0:1 -> eth1 (testhost) it left"));
	assert_true(fx_warn_seen("holds 52:54:00:00:02:02"));
	fake_path_set(NULL, NULL);
	run_free(t, &r);
}

/* In the middle of a stream: five messages went, the sixth fails, the rest flush. */
static void sender_fails_mid_stream(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 5, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_moved(t);
	run_free(t, &r);
}

/*
 * A move whose resend does not fit the send queue at once (a vNIC's survivor takes the lost
 * member's share too; a send queue holds what NCCL keeps in flight, not the FIFO's worst
 * case): four messages fail on the first pair, then the queue holds one WR. The resend goes
 * one slot a pass as completions free it, no new send overtakes it, and every message
 * arrives once, whole, in its own buffer (before, the move failed the comm with ENOSPC).
 */
static void resend_larger_than_queue(void **state)
{
	struct t *t = *state;
	struct run r;
	int serr, rerr, i, done, sz;

	run_init(t, &r);
	for (i = 0; i < 6; i++) {
		if (i == 2) {
			fx_log_reset();
			fake_wire_fail_qp(t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR, 0x81);
		}
		assert_int_equal(post_recv(t, &r), 0);
		/* the receiver tests what it posted (as NCCL): a CTS left pending goes */
		assert_int_equal(rn_test(r.rreq[r.posted - 1], &done, &sz), 0);
		assert_int_equal(post_send(t, &r), 0);
	}
	assert_int_equal(r.sent, 6);
	t->sc->c.sq_cap = 1;
	assert_int_equal(run_all(t, &r, &serr, &rerr), 0);
	check_delivered(&r);
	check_moved(t);
	assert_int_equal(t->sc->resend_left, 0);
	/* the WARN counts all that went again, not only what fitted at once (messages 2..5) */
	assert_true(fx_warn_seen("4 messages, 15488 bytes sent again"));
	run_free(t, &r);
}

/* Before the CTS: the receiver's FIFO write fails (its NIC's side), the receiver moves. */
static void receiver_fails_on_cts(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 3, t->rc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_moved(t);
	assert_true(fx_warn_seen("RETRY_EXC_ERR on a CTS"));
	run_free(t, &r);
}

/*
 * A move while CTS entries are pending (receives posted ahead, none tested yet): the write
 * that carries them fails and the receiver moves. Its rewind writes every receive not
 * complete on the spare, the pending ones among them, and leaves none pending: each message
 * arrives once, whole, in its own buffer, and nothing is written twice on the new pair.
 */
static void move_with_cts_pending(void **state)
{
	struct t *t = *state;
	struct fake_wire_stats st;
	struct run r;
	int serr, rerr, i;

	run_init(t, &r);
	for (i = 0; i < 4; i++)
		assert_int_equal(post_recv(t, &r), 0);
	assert_int_equal(r.posted, 4);
	assert_int_equal(t->rc->cts_npend, 3); /* the first went at once, alone */
	fx_log_reset();
	fake_wire_fail_qp(t->rc->c.qps[0], IBV_WC_RETRY_EXC_ERR, 0x81);
	assert_int_equal(run_all(t, &r, &serr, &rerr), 0);
	assert_int_equal(t->rc->cts_npend, 0);
	check_delivered(&r);
	check_moved(t);
	assert_true(fx_warn_seen("RETRY_EXC_ERR on a CTS"));
	/* the first message landed before the move (its CTS went alone): the 3 others again */
	assert_true(fx_warn_seen("3 receives not complete asked again"));
	{
		/* each entry written again is traced with the buffer's key on the new NIC */
		struct rn_mr *m;
		char want[160];

		assert_int_equal(rn_mr_on(r.rmr, t->rc->c.mem[0].dev, &m), 0);
		assert_ptr_not_equal(m, r.rmr);
		snprintf(want, sizeof(want), "failover: slot 4's entry 0 written again for %s: ",
			 t->rc->c.mem[0].dev->nic.ibdev);
		assert_true(fx_trace_seen(want));
		snprintf(want, sizeof(want), "rkey %#x", m->ibmr->rkey);
		assert_true(fx_trace_seen(want));
	}
	/* on the new pair: the 3 rewritten in one write, then the 8 posted after, no more */
	fake_wire_stats(t->rc->c.qps[0], &st);
	assert_true(st.writes <= 1 + (MSGS - 4));
	run_free(t, &r);
}

/*
 * A move with every FIFO slot posted (RN_SLOTS receives, more than a receiver's send
 * queue of RN_CTS_SQ_DEPTH holds), their slots wrapping the ring: the rewind writes them
 * again in one WRITE a run of contiguous slots (two here, split at the wrap), not one a
 * receive (33 WRs with the RESUME, which the new pair's queue refused), and every message
 * arrives once, whole, in its own buffer.
 */
static void move_with_every_slot_posted(void **state)
{
	enum { PRE = 5, N = RN_SLOTS, LEN = 256 };
	struct t *t = *state;
	struct fake_wire_stats st;
	struct rn_mr *smr, *rmr;
	unsigned char *src = fx_pattern(N * LEN, 23), *dst = calloc(N, LEN);
	struct rn_req *sreq[N], *rreq[N];
	int sdone[N] = { 0 }, rdone[N] = { 0 }, sent = 0, i, done, sz, left = 1;
	uint64_t end = rn_now_ns() + WAIT_NS;

	assert_non_null(dst);
	assert_int_equal(rn_reg_mr(t->sc, src, N * LEN, RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, dst, N * LEN, RN_PTR_HOST, &rmr), 0);
	/* PRE messages first, so that the N slots below wrap the ring */
	for (i = 0; i < PRE; i++) {
		size_t len = LEN;
		void *p = dst;
		int tag = 7;

		assert_int_equal(rn_irecv(t->rc, 1, &p, &len, &tag, &rmr, &rreq[0]), 0);
		assert_int_equal(rn_isend(t->sc, src, LEN, 7, smr, &sreq[0]), 0);
		assert_non_null(rreq[0]);
		assert_non_null(sreq[0]);
		for (done = 0; !done;)
			assert_int_equal(rn_test(sreq[0], &done, &sz), 0);
		for (done = 0; !done;)
			assert_int_equal(rn_test(rreq[0], &done, &sz), 0);
	}
	memset(dst, 0, N * LEN);
	for (i = 0; i < N; i++) {
		size_t len = LEN;
		void *p = dst + i * LEN;
		int tag = 7;

		assert_int_equal(rn_irecv(t->rc, 1, &p, &len, &tag, &rmr, &rreq[i]), 0);
		assert_non_null(rreq[i]);
	}
	fx_log_reset();
	fake_wire_fail_qp(t->rc->c.qps[0], IBV_WC_RETRY_EXC_ERR, 0x81);
	/* the receiver's tests find the failed CTS write and move, before anything is sent */
	while (!t->rc->c.fo->moves && rn_now_ns() < end)
		for (i = 0; i < N; i++)
			assert_int_equal(rn_test(rreq[i], &done, &sz), 0);
	assert_int_equal(t->rc->c.fo->moves, 1);
	assert_true(fx_warn_seen("32 receives not complete asked again"));
	fake_wire_stats(t->rc->c.qps[0], &st);
	assert_int_equal(st.writes, 2); /* slots 5..31 and 32..36 */
	while (left && rn_now_ns() < end) {
		left = 0;
		if (sent < N &&
		    rn_isend(t->sc, src + sent * LEN, LEN - sent, 7, smr, &sreq[sent]) == 0 &&
		    sreq[sent])
			sent++;
		for (i = 0; i < N; i++) {
			if (i < sent && !sdone[i]) {
				assert_int_equal(rn_test(sreq[i], &done, &sz), 0);
				sdone[i] += done;
			}
			if (!rdone[i]) {
				assert_int_equal(rn_test(rreq[i], &done, &sz), 0);
				if (done)
					assert_int_equal(sz, LEN - i);
				rdone[i] += done;
			}
			left += !sdone[i] + !rdone[i];
		}
	}
	assert_int_equal(left, 0);
	for (i = 0; i < N; i++)
		assert_memory_equal(dst + i * LEN, src + i * LEN, LEN - i);
	check_moved(t);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
	free(src);
	free(dst);
}

/* A flush error first (the QP went to error under us) is a path failure too. */
static void flush_error_moves(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 2, t->sc->c.qps[0], IBV_WC_WR_FLUSH_ERR);
	check_delivered(&r);
	check_moved(t);
	run_free(t, &r);
}

/* A message split over two QPs: its first QP's part lands, the second's fails. */
static void split_message_mid_way(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 4, t->sc->c.qps[1], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_moved(t);
	run_free(t, &r);
}

/* Round robin over two QPs: one QP's slots stop, the other's go on until the move. */
static void round_robin_one_qp_fails(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 3, t->sc->c.qps[1], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_moved(t);
	run_free(t, &r);
}

/* A multi-receive of two buffers: the first send is matched, then the pair fails. */
static void multi_receive_mid_way(void **state)
{
	struct t *t = *state;
	unsigned char *src = fx_pattern(2 * MSG_LEN, 5), *dst = calloc(2, MSG_LEN);
	void *ptrs[2] = { dst, dst + MSG_LEN };
	size_t sizes[2] = { MSG_LEN, MSG_LEN };
	int tags[2] = { 1, 2 }, got[2] = { 0 }, done, sdone[2] = { 0 }, rdone = 0, i, ret;
	struct rn_mr *smr, *rmr, *mrs[2];
	struct rn_req *rreq = NULL, *sreq[2] = { NULL, NULL };
	uint64_t end;

	assert_int_equal(rn_reg_mr(t->sc, src, 2 * MSG_LEN, RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, dst, 2 * MSG_LEN, RN_PTR_HOST, &rmr), 0);
	mrs[0] = mrs[1] = rmr;
	assert_int_equal(rn_irecv(t->rc, 2, ptrs, sizes, tags, mrs, &rreq), 0);
	assert_non_null(rreq);
	assert_int_equal(fx_isend(t->sc, src, 1000, 1, smr, &sreq[0]), 0);
	assert_non_null(sreq[0]);
	fx_log_reset();
	fake_wire_fail_qp(t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR, 0x81);
	assert_int_equal(fx_isend(t->sc, src + MSG_LEN, 3000, 2, smr, &sreq[1]), 0);
	assert_non_null(sreq[1]);
	for (end = rn_now_ns() + WAIT_NS; rn_now_ns() < end && !(rdone && sdone[0] && sdone[1]);) {
		for (i = 0; i < 2; i++)
			if (!sdone[i]) {
				assert_int_equal(rn_test(sreq[i], &done, NULL), 0);
				sdone[i] += done;
			}
		if (!rdone) {
			ret = rn_test(rreq, &done, got);
			assert_int_equal(ret, 0);
			rdone += done;
		}
	}
	assert_int_equal(rdone, 1);
	assert_int_equal(got[0], 1000);
	assert_int_equal(got[1], 3000);
	assert_memory_equal(dst, src, 1000);
	assert_memory_equal(dst + MSG_LEN, src + MSG_LEN, 3000);
	check_moved(t);
	assert_true(fx_warn_seen("1 message, 4000 bytes sent again"));
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
	free(src);
	free(dst);
}

/*
 * During the move itself: the spare's QP 0 fails as well, so the RESUME cannot go.
 * One error, naming both pairs, and no hang.
 */
static void last_pair_gone(void **state)
{
	struct t *t = *state;
	struct run r;
	int serr, rerr, ret;

	run_init(t, &r);
	assert_int_equal(post_recv(t, &r), 0);
	assert_int_equal(post_send(t, &r), 0);
	fx_log_reset();
	/* the receiver moves first (its CTS write fails), then its RESUME fails */
	fake_wire_fail_qp(t->rc->c.qps[0], IBV_WC_RETRY_EXC_ERR, 0x81);
	fake_wire_fail_qp(t->rc->c.fo->path[1].qps[0], IBV_WC_RETRY_EXC_ERR, 0x82);
	ret = run_all(t, &r, &serr, &rerr);
	assert_int_not_equal(ret, 0);
	assert_int_not_equal(ret, -ETIMEDOUT);
	assert_true(fx_warn_seen("no NIC pair left to move to"));
	assert_true(fx_warn_seen("rxe1:1 -> eth0 ("));
	assert_true(fx_warn_seen("rxe0:1 -> eth1 ("));
	run_free(t, &r);
}

/*
 * A receive posted, then a send whose sender QPs @a and @b (the comm's and the one it
 * would move to) both fail with status 12: the run ends in an error, never a wait.
 */
static void send_both_fail(struct t *t, struct run *r, struct ibv_qp *a, struct ibv_qp *b)
{
	int serr, rerr, ret;

	run_init(t, r);
	assert_int_equal(post_recv(t, r), 0);
	fx_log_reset();
	fake_wire_fail_qp(a, IBV_WC_RETRY_EXC_ERR, 0x81);
	fake_wire_fail_qp(b, IBV_WC_RETRY_EXC_ERR, 0x82);
	assert_int_equal(post_send(t, r), 0);
	ret = run_all(t, r, &serr, &rerr);
	assert_int_not_equal(ret, 0);
	assert_int_not_equal(ret, -ETIMEDOUT);
}

/*
 * The sender's side of it: its data write fails, then its move request on the spare (the
 * first thing a sender posts there). One error naming both pairs, the spare's failure
 * named as a failover message's, not as data.
 */
static void sender_last_pair_gone(void **state)
{
	struct t *t = *state;
	struct run r;

	send_both_fail(t, &r, t->sc->c.qps[0], t->sc->c.fo->path[1].qps[0]);
	assert_true(fx_warn_seen("no NIC pair left to move to"));
	assert_true(fx_warn_seen("rxe0:1 -> eth1 (RETRY_EXC_ERR on a Send (vendor_err 129))"));
	assert_true(fx_warn_seen("rxe1:1 -> eth0 (a failover message failed: RETRY_EXC_ERR)"));
	run_free(t, &r);
}

/* Registrations made on rxe0 are found on rxe1 after the move, lazily, and released. */
static void later_registrations_follow(void **state)
{
	struct t *t = *state;
	unsigned char *a = fx_pattern(MSG_LEN, 3), *b = calloc(1, MSG_LEN);
	struct rn_mr *smr, *rmr;
	struct rn_req *s, *q;
	size_t sz = MSG_LEN;
	void *p = b;
	int tag = 3, n;
	struct run r;

	stream_failing(t, &r, 1, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_moved(t);
	run_free(t, &r);
	/* registered after the move: still on the comm's own NIC for NCCL */
	assert_int_equal(rn_reg_mr(t->sc, a, MSG_LEN, RN_PTR_HOST, &smr), 0);
	assert_ptr_equal(smr->dev, &t->f.devs[0]);
	assert_int_equal(rn_reg_mr(t->rc, b, MSG_LEN, RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &rmr, &q), 0);
	assert_int_equal(fx_isend(t->sc, a, 100, 3, smr, &s), 0);
	assert_non_null(s);
	assert_int_equal(fx_wait(s, NULL), 0);
	assert_int_equal(fx_wait(q, &n), 0);
	assert_int_equal(n, 100);
	assert_memory_equal(a, b, 100);
	assert_non_null(smr->alt[0]);
	assert_ptr_equal(smr->alt[0]->dev, &t->f.devs[1]);
	assert_int_equal(rn_dereg_mr(t->sc, smr), 0);
	assert_int_equal(rn_dereg_mr(t->rc, rmr), 0);
	free(a);
	free(b);
}

/* ---- recovery --------------------------------------------------------------- */

static int setup_rec(void **state)
{
	int ret;

	fx_recovery = 1;
	ret = setup_cfg(state, 1, 0);
	fx_recovery = 0;
	return ret;
}

static int setup_rec_split2(void **state)
{
	int ret;

	fx_recovery = 1;
	ret = setup_cfg(state, 2, 1);
	fx_recovery = 0;
	return ret;
}

/* Both ends' idle progress, as NCCL's proxy polls a comm with nothing posted, until @done. */
static int idle_until(struct t *t, int (*done)(const struct t *), int ms)
{
	int i;

	for (i = 0; i < ms; i++) {
		if (done(t))
			return 1;
		assert_int_equal(rn_comm_progress(&t->sc->c), 0);
		assert_int_equal(rn_comm_progress(&t->rc->c), 0);
		usleep(1000);
	}
	return done(t);
}

static int both_back(const struct t *t)
{
	return t->sc->c.fo->recoveries == 1 && t->rc->c.fo->recoveries == 1;
}

static int left_pair_spare(const struct t *t)
{
	return t->sc->c.fo->path[1].state == RN_PATH_SPARE &&
	       t->rc->c.fo->path[1].state == RN_PATH_SPARE;
}

/* Each end is on the comm's own pair again: rxe0 sends to rxe1. */
static void check_home(struct t *t)
{
	assert_int_equal(t->sc->c.fo->active, 0);
	assert_int_equal(t->rc->c.fo->active, 0);
	assert_ptr_equal(t->sc->c.mem[0].dev, &t->f.devs[0]);
	assert_ptr_equal(t->rc->c.mem[0].dev, &t->f.devs[1]);
}

/* A stream with no failure: every message once, whole, in its buffer. */
static void clean_stream(struct t *t)
{
	struct run r;
	int serr, rerr;

	run_init(t, &r);
	assert_int_equal(run_all(t, &r, &serr, &rerr), 0);
	check_delivered(&r);
	run_free(t, &r);
}

/*
 * Recovery: the pair that failed (silently, RETRY_EXC on the sender's QP) is re-armed
 * at both ends (RESET..RTS, the GID found again, the path checked), probed, and the comm
 * moves back to it; the pair it left becomes a spare again, and takes the comm at the
 * next failure. Every stream around it is delivered once, whole and in order.
 */
static void recovery_moves_back(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 4, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_moved(t);
	run_free(t, &r);
	fx_log_reset();
	assert_true(idle_until(t, both_back, 5000));
	check_home(t);
	assert_true(fx_warn_seen("recovery: send comm with"));
	assert_true(fx_warn_seen("recovery: recv comm with"));
	assert_true(fx_warn_seen("rxe0:1 -> eth1 is back in service"));
	assert_true(fx_warn_seen("moved back from rxe1:1 -> eth0"));
	assert_int_equal(t->sc->c.fo->moves, 2);
	assert_int_equal(t->rc->c.fo->moves, 2);
	/* the QPs of the pair were re-armed, not made anew: the same numbers */
	assert_int_equal(t->sc->c.qps[0]->state, IBV_QPS_RTS);
	clean_stream(t);
	/* the pair left for the recovered one is brought back as a spare */
	assert_true(idle_until(t, left_pair_spare, 5000));
	/* and takes the comm at the next failure */
	stream_failing(t, &r, 2, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	run_free(t, &r);
	assert_int_equal(t->sc->c.fo->active, 1);
	assert_int_equal(t->rc->c.fo->active, 1);
	assert_int_equal(t->sc->c.fo->moves, 3);
}

static int qp_send_cap(struct ibv_qp *qp)
{
	struct fake_wire_qp_attrs a;

	assert_int_equal(fake_wire_qp_attrs(qp, &a), 0);
	return (int)a.cap.max_send_wr;
}

static int qp_inline_cap(struct ibv_qp *qp)
{
	struct fake_wire_qp_attrs a;

	assert_int_equal(fake_wire_qp_attrs(qp, &a), 0);
	return (int)a.cap.max_inline_data;
}

/* Of the CTS writes on the receiver's QP 0 during a clean stream: how many went inline. */
static void cts_writes_of_stream(struct t *t, int *writes, int *inl)
{
	struct fake_wire_stats a, b;

	fake_wire_stats(t->rc->c.qps[0], &a);
	clean_stream(t);
	fake_wire_stats(t->rc->c.qps[0], &b);
	*writes = b.writes - a.writes;
	*inl = b.writes_inline - a.writes_inline;
}

/*
 * A sender's spare holds as many send WRs as its own pair (RN_SQ_DEPTH), its CQ sized to
 * match, so a move changes no back-pressure; a receiver's spare keeps the CTS queue its
 * rewind needs but no inline data (half the WQE). The comm's send queue bound and inline
 * size follow the pair in use: the spare's after the move (before, the comm kept its own
 * pair's and could post inline where the QP takes none), its own again after the move
 * back, and the stream carries every message on each.
 */
static void spare_queues_sized(void **state)
{
	struct t *t = *state;
	struct rn_path *sp = &t->sc->c.fo->path[1], *rp = &t->rc->c.fo->path[1];
	struct run r;
	int w, inl;

	assert_int_equal(qp_send_cap(t->sc->c.qps[0]), RN_SQ_DEPTH);
	assert_int_equal(qp_send_cap(sp->qps[0]), RN_SQ_DEPTH);
	assert_int_equal(sp->mem.cq->cqe, RN_SQ_DEPTH + RN_FO_RECV_WRS);
	assert_int_equal(t->sc->c.mem[0].cq->cqe, RN_SQ_DEPTH + RN_FO_RECV_WRS);
	assert_int_equal(qp_send_cap(rp->qps[0]), RN_CTS_SQ_DEPTH);
	/* a receiver of one NIC: 32-byte CTS entries, one inline */
	assert_int_equal(t->rc->c.cts_len, 32);
	assert_int_equal(t->sc->c.cts_len, 32);
	assert_int_equal(qp_inline_cap(t->rc->c.qps[0]), 32);
	assert_int_equal(qp_inline_cap(rp->qps[0]), 0);
	assert_int_equal(t->sc->c.sq_cap, RN_SQ_DEPTH);
	/* the own pair's single CTS entries go inline */
	cts_writes_of_stream(t, &w, &inl);
	assert_true(w > 0 && inl > 0);
	stream_failing(t, &r, 4, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_moved(t);
	run_free(t, &r);
	assert_int_equal(t->sc->c.sq_cap, RN_SQ_DEPTH);
	assert_int_equal(qp_send_cap(t->sc->c.qps[0]), RN_SQ_DEPTH);
	assert_int_equal(t->rc->c.sq_cap, RN_CTS_SQ_DEPTH);
	assert_int_equal(t->rc->cts_inline, 0);
	/* on the spare: every CTS write from the control block, none inline */
	cts_writes_of_stream(t, &w, &inl);
	assert_true(w > 0);
	assert_int_equal(inl, 0);
	assert_true(idle_until(t, both_back, 5000));
	check_home(t);
	assert_int_equal(t->sc->c.sq_cap, RN_SQ_DEPTH);
	assert_int_equal(qp_send_cap(t->sc->c.qps[0]), RN_SQ_DEPTH);
	assert_int_equal(t->rc->cts_inline, 32);
	cts_writes_of_stream(t, &w, &inl);
	assert_true(w > 0 && inl > 0);
}

/*
 * The move back while receives wait for their data (the CTS entries were written on the
 * spare): after the wait for an idle point it moves anyway; the entries are written again
 * on the comm's own pair and each message arrives once, whole, of its size.
 */
static void recovery_with_receives_posted(void **state)
{
	struct t *t = *state;
	struct run r;
	int serr, rerr, i;

	stream_failing(t, &r, 1, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	run_free(t, &r);
	run_init(t, &r);
	for (i = 0; i < 4; i++)
		assert_int_equal(post_recv(t, &r), 0);
	fx_log_reset();
	assert_true(idle_until(t, both_back, 5000));
	check_home(t);
	/* the 3 whose CTS entries were still pending among them (cts_flush) */
	assert_true(fx_warn_seen("4 receives not complete asked again"));
	assert_int_equal(t->rc->cts_npend, 0);
	assert_int_equal(run_all(t, &r, &serr, &rerr), 0);
	check_delivered(&r);
	run_free(t, &r);
}

/*
 * Recovery waits for the path check at both ends: while the sender's check refuses the
 * pair, the receiver hears "not back yet" and waits longer each time; once it passes,
 * the comm moves back.
 */
static void recovery_waits_for_the_check(void **state)
{
	struct t *t = *state;
	struct fake_path_script no = { 0 };
	struct run r;

	stream_failing(t, &r, 2, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	run_free(t, &r);
	no.poll_ret = -EHOSTUNREACH;
	no.finding.cause = RN_CAUSE_ARP_FLUX;
	fake_path_set("rxe0", &no); /* the sender's NIC of the failed pair */
	fx_log_reset();
	assert_false(idle_until(t, both_back, 600));
	assert_true(fx_info_seen("not back yet: the peer's NIC of the pair is not back yet"));
	assert_true(
		fx_info_seen("pair 0 not re-armed here: the path check refuses it: [arp-flux]"));
	assert_int_equal(t->sc->c.fo->active, 1);
	assert_int_equal(t->rc->c.fo->path[0].backoff_ms, 1000);
	fake_path_set(NULL, NULL);
	assert_true(idle_until(t, both_back, 5000));
	check_home(t);
	clean_stream(t);
}

/* A message split over 2 QPs fails mid-way; the comm comes back and splits there again. */
static void recovery_split(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 3, t->sc->c.qps[1], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	run_free(t, &r);
	assert_true(idle_until(t, both_back, 5000));
	check_home(t);
	assert_int_equal(t->sc->c.qps[1]->state, IBV_QPS_RTS);
	clean_stream(t);
}

/*
 * The receiver moves (its CTS write fails: RESUME goes over the spare), then, while the
 * sender is not polled at all, asks to bring the failed pair back: its REARM goes over the
 * same pair as the RESUME. Both must reach the sender (each has its own mailbox), and the
 * receiver must not reset its end of the pair before the sender has left it. Meanwhile the
 * sender serves entries the receiver wrote after its move, on the old pair (it has not
 * taken the RESUME yet): those go again, since the RESUME could not list them (its tail).
 * Every message arrives once, and the comm comes back.
 */
static void recovery_message_after_resume(void **state)
{
	struct t *t = *state;
	struct run r;
	int serr, rerr, i;

	run_init(t, &r);
	assert_int_equal(post_recv(t, &r), 0);
	fake_wire_fail_qp(t->rc->c.qps[0], IBV_WC_RETRY_EXC_ERR, 0x81);
	assert_int_equal(post_recv(t, &r), 0);
	for (i = 0; i < 400 && t->rc->c.fo->path[0].state != RN_PATH_ARMING; i++) {
		assert_int_equal(rn_comm_progress(&t->rc->c), 0);
		usleep(1000);
	}
	assert_int_equal(t->rc->c.fo->active, 1);
	assert_int_equal(t->rc->c.fo->path[0].state, RN_PATH_ARMING); /* REARM sent on 1 */
	assert_int_equal(t->sc->c.fo->active, 0);                     /* not polled yet */
	assert_int_equal(run_all(t, &r, &serr, &rerr), 0);
	check_delivered(&r);
	run_free(t, &r);
	assert_true(t->sc->c.fo->moves >= 1);
	assert_true(idle_until(t, both_back, 5000));
	check_home(t);
}

/* NCCL_ROCE_RECOVERY=0: the comm stays on the pair it moved to. */
static void recovery_off_stays(void **state)
{
	struct t *t = *state;
	struct run r;

	int checks;

	stream_failing(t, &r, 2, t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR);
	run_free(t, &r);
	checks = fake_path_checks();
	assert_false(idle_until(t, both_back, 400));
	assert_int_equal(t->sc->c.fo->active, 1);
	assert_int_equal(t->rc->c.fo->path[0].state, RN_PATH_DEAD);
	assert_int_equal(fake_path_checks(), checks); /* not even tried */
}

/* NCCL_ROCE_FAILOVER=0: no spare, and a failure fails the comm as before. */
/* The host's journal of failed comms holds a line with @what (src/errlog.c). */
static int journal_has(const char *what)
{
	char p[128], line[4096];
	int found = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", state_dir, RN_ERRLOG_FILE);
	f = fopen(p, "r");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = !!strstr(line, what);
	fclose(f);
	return found;
}

static void off_means_off(void **state)
{
	struct t t2;
	struct run r;
	int serr, rerr;

	(void)state;
	fx_failover = 0;
	fx_setup(&t2.f);
	fake_path_set(NULL, NULL);
	assert_int_equal(fx_connect(&t2.f, 0, 1, 0, &t2.sc, &t2.rc), 0);
	assert_null(t2.sc->c.fo);
	assert_null(t2.rc->c.fo);
	run_init(&t2, &r);
	assert_int_equal(post_recv(&t2, &r), 0);
	fake_wire_fail_qp(t2.sc->c.qps[0], IBV_WC_RETRY_EXC_ERR, 0x81);
	assert_int_equal(post_send(&t2, &r), 0);
	assert_int_equal(run_all(&t2, &r, &serr, &rerr), -EREMOTEIO);
	assert_false(fx_warn_seen("failover:"));
	/* the failed comm, in the host's journal: what failed, on which NIC, against whom */
	assert_true(journal_has("\"status\": \"RETRY_EXC_ERR\", \"nic\": \"rxe0:1\""));
	assert_true(journal_has("\"peer_host\": \"testhost\""));
	run_free(&t2, &r);
	assert_int_equal(fx_close(&t2.f, t2.sc, t2.rc), 0);
}

/* ---- a vNIC's member pair lost (src/vfail.c) --------------------------------- */

/* vNIC (rxe0+rxe1) to vNIC: QP q on member q % 2 at both ends, pairs (0,0) and (1,1). */
static int setup_vnic_cfg(void **state, int qps_per_conn, int split)
{
	static struct t t;
	static const int members[] = { 0, 1 };
	int vdev;

	fx_failover = 1;
	fx_setup(&t.f);
	fx_failover = 0;
	fake_path_set(NULL, NULL);
	t.f.eng.cfg.qps_per_conn = qps_per_conn;
	t.f.eng.cfg.split_data_on_qps = split;
	assert_int_equal(rn_vdev_make(&t.f.eng, members, 2, &vdev), 0);
	assert_int_equal(fx_connect(&t.f, vdev, vdev, 0, &t.sc, &t.rc), 0);
	assert_null(t.sc->c.fo); /* no spare pairs: its members are its siblings */
	assert_non_null(t.sc->c.vf);
	assert_non_null(t.rc->c.vf);
	*state = &t;
	return 0;
}

static int setup_vnic_split(void **state)
{
	return setup_vnic_cfg(state, 1, 1);
}

static int setup_vnic_2qps(void **state)
{
	return setup_vnic_cfg(state, 2, 0); /* split all the same: a vNIC splits */
}

/* Both ends went on over the QPs of pair (0,0) only, and each said so once. */
static void check_vnic_left(struct t *t, int nqps)
{
	int q;

	assert_int_equal(t->sc->c.nqps, nqps);
	assert_int_equal(t->rc->c.nqps, nqps);
	for (q = 0; q < nqps; q++) {
		assert_int_equal(t->sc->c.qp_mem[q], 0);
		assert_int_equal(t->rc->c.qp_mem[q], 0);
	}
	assert_int_equal(fx_warn_count("failover: send comm with"), 1);
	assert_int_equal(fx_warn_count("failover: recv comm with"), 1);
	assert_true(fx_warn_seen("vNIC member pair rxe1:1 -> eth1 ("));
	assert_true(fx_warn_seen("left out; going on over"));
	assert_true(fx_warn_seen("(rxe0:1 -> eth0)"));
}

/* The sender's QP of pair (1,1) fails mid-stream: split messages go on over QP 0 alone. */
static void vnic_sender_pair_fails(void **state)
{
	struct t *t = *state;
	struct run r;

	stream_failing(t, &r, 4, t->sc->c.qps[1], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_vnic_left(t, 1);
	assert_true(fx_warn_seen("RETRY_EXC_ERR"));
	run_free(t, &r);
}

/* The receiver's CTS write on pair (1,1) fails first: it tells the sender (DROP). */
static void vnic_receiver_pair_fails(void **state)
{
	struct t *t = *state;
	struct run r;

	/* message 5's CTS goes over QP 1 (slot 5 % 2), the failing one */
	stream_failing(t, &r, 5, t->rc->c.qps[1], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_vnic_left(t, 1);
	assert_true(fx_warn_seen("the receiver's side of the pair failed"));
	run_free(t, &r);
}

/*
 * The receiver's pending CTS entries (3 receives posted behind the first) go in one write on
 * QP 1 (slot 1's), of pair (1,1), which fails: DROP, MOVE_REQ, and the rewind writes every
 * receive not complete over pair (0,0), none left pending; each message once, whole.
 */
static void vnic_pending_cts_write_fails(void **state)
{
	struct t *t = *state;
	struct run r;
	int serr, rerr, i;

	run_init(t, &r);
	for (i = 0; i < 4; i++)
		assert_int_equal(post_recv(t, &r), 0);
	assert_int_equal(t->rc->cts_npend, 3);
	assert_int_equal(t->rc->cts_first, 1); /* slot 1: QP 1 % 2 */
	fx_log_reset();
	fake_wire_fail_qp(t->rc->c.qps[1], IBV_WC_RETRY_EXC_ERR, 0x81);
	assert_int_equal(run_all(t, &r, &serr, &rerr), 0);
	assert_int_equal(t->rc->cts_npend, 0);
	check_delivered(&r);
	check_vnic_left(t, 1);
	assert_true(fx_warn_seen("the receiver's side of the pair failed"));
	run_free(t, &r);
}

/* 2 QPs a pair (4 in all): messages go on split over QPs 0 and 2, the two of pair (0,0). */
static void vnic_two_qps_a_pair(void **state)
{
	struct t *t = *state;
	struct run r;
	int serr, rerr;

	assert_int_equal(t->sc->c.nqps, 4);
	stream_failing(t, &r, 6, t->sc->c.qps[3], IBV_WC_RETRY_EXC_ERR);
	check_delivered(&r);
	check_vnic_left(t, 2);
	run_free(t, &r);
	/* and a second stream, on the QPs left only */
	run_init(t, &r);
	assert_int_equal(run_all(t, &r, &serr, &rerr), 0);
	check_delivered(&r);
	run_free(t, &r);
}

/* Both pairs fail: one WARN naming both, with their causes; an error, no hang. */
static void vnic_last_pair_gone(void **state)
{
	struct t *t = *state;
	struct run r;

	send_both_fail(t, &r, t->sc->c.qps[0], t->sc->c.qps[1]);
	/* said once by each end that sees it: the receiver's CTS writes find both pairs out too */
	assert_int_equal(fx_warn_count("failover: send comm with"), 1);
	assert_true(fx_warn_count("failover: recv comm with") <= 1);
	assert_false(fx_warn_seen("posting the move request failed")); /* said once, above */
	assert_true(fx_warn_seen("rxe0:1 -> eth0 ("));
	assert_true(fx_warn_seen("rxe1:1 -> eth1 ("));
	/* the receiver's DROP (a failover message) fails on the pair left: named as such */
	assert_true(fx_warn_seen("status=RETRY_EXC_ERR(12) req=Ctrl"));
	run_free(t, &r);
}

/* NCCL_ROCE_FAILOVER=0: a vNIC comm keeps no such state and fails as before. */
static void vnic_off_fails(void **state)
{
	static const int members[] = { 0, 1 };
	struct t t2;
	struct run r;
	int serr, rerr, vdev;

	(void)state;
	fx_failover = 0;
	fx_setup(&t2.f);
	fake_path_set(NULL, NULL);
	assert_int_equal(rn_vdev_make(&t2.f.eng, members, 2, &vdev), 0);
	assert_int_equal(fx_connect(&t2.f, vdev, vdev, 0, &t2.sc, &t2.rc), 0);
	assert_null(t2.sc->c.vf);
	assert_null(t2.rc->c.vf);
	run_init(&t2, &r);
	assert_int_equal(post_recv(&t2, &r), 0);
	fake_wire_fail_qp(t2.sc->c.qps[1], IBV_WC_RETRY_EXC_ERR, 0x81);
	assert_int_equal(post_send(&t2, &r), 0);
	assert_int_equal(run_all(&t2, &r, &serr, &rerr), -EREMOTEIO);
	assert_false(fx_warn_seen("failover:"));
	run_free(&t2, &r);
	assert_int_equal(fx_close(&t2.f, t2.sc, t2.rc), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(spares_are_made, setup, teardown),
		cmocka_unit_test_setup_teardown(no_failure_no_move, setup, teardown),
		cmocka_unit_test_setup_teardown(sender_fails_before_data, setup, teardown),
		cmocka_unit_test_setup_teardown(sender_fails_mid_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(moved_pair_diagnosed, setup, teardown),
		cmocka_unit_test_setup_teardown(resend_larger_than_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(receiver_fails_on_cts, setup, teardown),
		cmocka_unit_test_setup_teardown(move_with_cts_pending, setup, teardown),
		cmocka_unit_test_setup_teardown(move_with_every_slot_posted, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_error_moves, setup, teardown),
		cmocka_unit_test_setup_teardown(split_message_mid_way, setup_split2, teardown),
		cmocka_unit_test_setup_teardown(round_robin_one_qp_fails, setup_rr2, teardown),
		cmocka_unit_test_setup_teardown(multi_receive_mid_way, setup, teardown),
		cmocka_unit_test_setup_teardown(last_pair_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(sender_last_pair_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(later_registrations_follow, setup, teardown),
		cmocka_unit_test(off_means_off),
		cmocka_unit_test_setup_teardown(recovery_moves_back, setup_rec, teardown),
		cmocka_unit_test_setup_teardown(spare_queues_sized, setup_rec, teardown),
		cmocka_unit_test_setup_teardown(recovery_with_receives_posted, setup_rec, teardown),
		cmocka_unit_test_setup_teardown(recovery_waits_for_the_check, setup_rec, teardown),
		cmocka_unit_test_setup_teardown(recovery_split, setup_rec_split2, teardown),
		cmocka_unit_test_setup_teardown(recovery_message_after_resume, setup_rec, teardown),
		cmocka_unit_test_setup_teardown(recovery_off_stays, setup, teardown),
		cmocka_unit_test_setup_teardown(vnic_sender_pair_fails, setup_vnic_split, teardown),
		cmocka_unit_test_setup_teardown(vnic_receiver_pair_fails, setup_vnic_split,
						teardown),
		cmocka_unit_test_setup_teardown(vnic_pending_cts_write_fails, setup_vnic_split,
						teardown),
		cmocka_unit_test_setup_teardown(vnic_two_qps_a_pair, setup_vnic_2qps, teardown),
		cmocka_unit_test_setup_teardown(vnic_last_pair_gone, setup_vnic_split, teardown),
		cmocka_unit_test(vnic_off_fails),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
