// SPDX-License-Identifier: MIT
/*
 * The data path over the fake wire: CTS FIFO, tag matching, multi-receive,
 * request bookkeeping, size mismatch, zero bytes, QP split, large messages,
 * completion errors, flush, async events, dead peer, stalled QP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "double_conncheck.h"
#include "fixture_xfer.h"
#include "double_conncheck.c"
#include "rn_clock.h"
#include "rn_verbs.h"

struct t {
	struct fx f;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
};

static int setup_cfg(void **state, int nqps, int split)
{
	static struct t t;

	fx_setup(&t.f);
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

static int setup_split4(void **state)
{
	return setup_cfg(state, 4, 1);
}

static int setup_split2(void **state)
{
	return setup_cfg(state, 2, 1);
}

static int setup_rr4(void **state)
{
	return setup_cfg(state, 4, 0);
}

/* NCCL allows NCCL_IB_QPS_PER_CONNECTION up to 128 */
static int setup_split128(void **state)
{
	return setup_cfg(state, 128, 1);
}

static int setup_rr128(void **state)
{
	return setup_cfg(state, 128, 0);
}

static int teardown(void **state)
{
	struct t *t = *state;
	assert_int_equal(fx_close(&t->f, t->sc, t->rc), 0);
	return 0;
}

/* One message of @ssize into a receive of @rsize; returns what test() said. */
static int xfer1(struct t *t, size_t ssize, size_t rsize, int *got)
{
	void *s = fx_pattern(ssize, 1), *r = fx_pattern(rsize, 99);
	struct rn_mr *smr = NULL, *rmr = NULL;
	struct rn_req *sreq = NULL, *rreq = NULL;
	int tag = 3, ret, sizes[1] = { -1 };

	if (ssize)
		assert_int_equal(rn_reg_mr(t->sc, s, ssize, RN_PTR_HOST, &smr), 0);
	if (rsize)
		assert_int_equal(rn_reg_mr(t->rc, r, rsize, RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_irecv(t->rc, 1, &r, &rsize, &tag, &rmr, &rreq), 0);
	assert_non_null(rreq);
	ret = fx_isend(t->sc, s, ssize, tag, smr, &sreq);
	if (!ret) {
		assert_non_null(sreq);
		ret = fx_wait(sreq, sizes);
		assert_int_equal(ret, 0);
		assert_int_equal(sizes[0], (int)ssize);
		ret = fx_wait(rreq, got);
		if (!ret)
			assert_memory_equal(r, s, ssize);
	}
	if (smr)
		rn_dereg_mr(t->sc, smr);
	if (rmr)
		rn_dereg_mr(t->rc, rmr);
	free(s);
	free(r);
	return ret;
}

static void basic_sizes(void **state)
{
	struct t *t = *state;
	int got;

	assert_int_equal(xfer1(t, 4096, 4096, &got), 0);
	assert_int_equal(got, 4096);
	assert_int_equal(xfer1(t, 1000, 8192, &got), 0); /* receive larger than send */
	assert_int_equal(got, 1000);
	assert_int_equal(xfer1(t, 0, 0, &got), 0);       /* zero bytes */
	assert_int_equal(got, 0);
	assert_int_equal(xfer1(t, 0, 64, &got), 0);
	assert_int_equal(got, 0);
	assert_int_equal(xfer1(t, 1, 1, &got), 0);
	assert_int_equal(got, 1);
}

static void send_waits_for_cts(void **state)
{
	struct t *t = *state;
	char s[64] = "hello", r[64];
	struct rn_mr *smr, *rmr;
	struct rn_req *sreq, *rreq;
	size_t sz = sizeof(r);
	void *rp = r;
	int tag = 1, got;

	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(rn_isend(t->sc, s, 6, tag, smr, &sreq), 0);
		assert_null(sreq); /* no receive posted yet */
	}
	assert_int_equal(rn_irecv(t->rc, 1, &rp, &sz, &tag, &rmr, &rreq), 0);
	assert_int_equal(rn_isend(t->sc, s, 6, tag, smr, &sreq), 0);
	assert_non_null(sreq);
	assert_int_equal(fx_wait(rreq, &got), 0);
	assert_int_equal(got, 6);
	assert_string_equal(r, "hello");
	assert_int_equal(fx_wait(sreq, NULL), 0);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

static void size_mismatch_is_an_error(void **state)
{
	struct t *t = *state;
	char s[256], r[300];
	struct rn_mr *smr, *rmr;
	struct rn_req *sreq, *rreq;
	size_t sz = 100;
	void *rp = r;
	int tag = 1, done, sizes[1];

	memset(s, 'S', sizeof(s));
	memset(r, 'R', sizeof(r));
	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_irecv(t->rc, 1, &rp, &sz, &tag, &rmr, &rreq), 0);
	assert_int_equal(rn_isend(t->sc, s, 200, tag, smr, &sreq), -EMSGSIZE);
	assert_null(sreq);
	assert_non_null(strstr(fx_last_warn, "larger than the receive of 100 bytes"));
	/* the receiver learns it too, and nothing was written */
	assert_int_equal(fx_wait(rreq, sizes), -EMSGSIZE);
	for (int i = 0; i < (int)sizeof(r); i++)
		assert_int_equal(r[i], 'R');
	assert_int_equal(rn_test(rreq, &done, sizes), -EMSGSIZE);
	assert_int_equal(rn_isend(t->sc, s, 10, tag, smr, &sreq), -EMSGSIZE); /* sticky */
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

static void multi_recv_size_mismatch(void **state)
{
	struct t *t = *state;
	char s[256], r[256];
	struct rn_mr *smr, *rmr, *rmrs[2];
	struct rn_req *sreq, *rreq;
	size_t sz[2] = { 100, 100 };
	void *rp[2] = { r, r + 128 };
	int tags[2] = { 1, 2 }, got[2];

	memset(r, 'R', sizeof(r));
	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	rmrs[0] = rmrs[1] = rmr;
	assert_int_equal(rn_irecv(t->rc, 2, rp, sz, tags, rmrs, &rreq), 0);
	assert_int_equal(fx_isend(t->sc, s, 50, 1, smr, &sreq), 0);
	assert_non_null(sreq);
	assert_int_equal(rn_isend(t->sc, s, 101, 2, smr, &sreq), -EMSGSIZE);
	assert_int_equal(fx_wait(rreq, got), -EMSGSIZE);
	for (int i = 0; i < (int)sizeof(r); i++)
		assert_int_equal(r[i], 'R'); /* not even the matched half was written */
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

static void multi_recv_tag_matching(void **state)
{
	struct t *t = *state;
	enum { N = 3 };
	char *r[N], *s[N];
	struct rn_mr *rmr[N], *smr[N];
	struct rn_req *rreq, *rreq2, *sreq[N], *x;
	size_t rs[N] = { 1000, 2000, 3000 };
	size_t ss[N] = { 900, 0, 2999 };
	int tags[N] = { 5, 6, 7 }, got[RN_MAX_RECVS], i;
	void *rp[N];

	for (i = 0; i < N; i++) {
		r[i] = fx_pattern(rs[i], 50);
		s[i] = fx_pattern(ss[i] + 1, 10 * i + 1);
		rp[i] = r[i];
		assert_int_equal(rn_reg_mr(t->rc, r[i], rs[i], RN_PTR_HOST, &rmr[i]), 0);
		assert_int_equal(rn_reg_mr(t->sc, s[i], ss[i] + 1, RN_PTR_HOST, &smr[i]), 0);
	}
	assert_int_equal(rn_irecv(t->rc, N, rp, rs, tags, rmr, &rreq), 0);
	/* a second receive (tag 9) posted behind it */
	{
		size_t one = 1000;
		int tag9 = 9;
		void *p = r[0];

		assert_int_equal(rn_irecv(t->rc, 1, &p, &one, &tag9, &rmr[0], &rreq2), 0);
		/* tag 9 belongs to the second receive: not its turn yet */
		assert_int_equal(rn_isend(t->sc, s[0], 10, 9, smr[0], &x), 0);
		assert_null(x);
	}
	/* matched in any order within the first pending receive */
	assert_int_equal(rn_isend(t->sc, s[2], ss[2], 7, smr[2], &sreq[2]), 0);
	assert_non_null(sreq[2]);
	assert_int_equal(rn_isend(t->sc, s[0], ss[0], 5, smr[0], &sreq[0]), 0);
	assert_non_null(sreq[0]);
	assert_int_equal(rn_isend(t->sc, s[0], ss[0], 5, smr[0], &x), 0);
	assert_null(x); /* tag 5 is taken in this slot */
	assert_int_equal(rn_isend(t->sc, s[1], ss[1], 6, smr[1], &sreq[1]), 0);
	assert_non_null(sreq[1]);
	assert_int_equal(fx_wait(rreq, got), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(got[i], (int)ss[i]);
		assert_memory_equal(r[i], s[i], ss[i]);
		assert_int_equal(fx_wait(sreq[i], NULL), 0);
	}
	/* now tag 9's turn */
	assert_int_equal(fx_isend(t->sc, s[0], 10, 9, smr[0], &x), 0);
	assert_non_null(x);
	assert_int_equal(fx_wait(rreq2, got), 0);
	assert_int_equal(got[0], 10);
	assert_int_equal(fx_wait(x, NULL), 0);
	for (i = 0; i < N; i++) {
		rn_dereg_mr(t->rc, rmr[i]);
		rn_dereg_mr(t->sc, smr[i]);
		free(r[i]);
		free(s[i]);
	}
}

static void thirty_two_in_flight(void **state)
{
	struct t *t = *state;
	enum { M = RN_MAX_REQUESTS, SZ = 512 };
	char *r = fx_pattern(M * SZ, 0), *s = fx_pattern(M * SZ, 77);
	struct rn_mr *rmr, *smr;
	struct rn_req *rreq[M + 1], *sreq[M], *x;
	int i, round, got;

	assert_int_equal(rn_reg_mr(t->rc, r, M * SZ, RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_reg_mr(t->sc, s, M * SZ, RN_PTR_HOST, &smr), 0);
	for (round = 0; round < 3; round++) {
		memset(r, 0, M * SZ);
		for (i = 0; i < M; i++) {
			void *p = r + i * SZ;
			size_t sz = SZ;
			int tag = i;

			assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &rmr, &rreq[i]), 0);
			assert_non_null(rreq[i]);
		}
		{
			void *p = r;
			size_t sz = SZ;
			int tag = 0;

			/* the 33rd receive is back-pressure (NCCL's contract): success, no request */
			rreq[M] = (void *)1;
			assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &rmr, &rreq[M]), 0);
			assert_null(rreq[M]);
		}
		for (i = 0; i < M; i++) {
			assert_int_equal(rn_isend(t->sc, s + i * SZ, SZ - i, i, smr, &sreq[i]), 0);
			assert_non_null(sreq[i]);
		}
		assert_int_equal(rn_isend(t->sc, s, 1, 0, smr, &x), 0);
		assert_null(x); /* no 33rd CTS */
		/* complete in reverse order: bookkeeping must not assume order */
		for (i = M - 1; i >= 0; i--) {
			assert_int_equal(fx_wait(rreq[i], &got), 0);
			assert_int_equal(got, SZ - i);
			assert_memory_equal(r + i * SZ, s + i * SZ, (size_t)(SZ - i));
		}
		for (i = 0; i < M; i++)
			assert_int_equal(fx_wait(sreq[i], &got), 0);
	}
	/* the 33rd, once a slot is free, is posted and carries data */
	{
		void *p = r;
		size_t sz = SZ;
		int tag = 5;

		for (i = 0; i < M; i++) {
			void *q = r + i * SZ;

			assert_int_equal(rn_irecv(t->rc, 1, &q, &sz, &i, &rmr, &rreq[i]), 0);
			assert_non_null(rreq[i]);
		}
		assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &rmr, &rreq[M]), 0);
		assert_null(rreq[M]);
		assert_int_equal(fx_isend(t->sc, s, SZ, 0, smr, &sreq[0]), 0);
		assert_int_equal(fx_wait(rreq[0], &got), 0); /* slot 0 is free again */
		assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &rmr, &rreq[M]), 0);
		assert_non_null(rreq[M]);
		for (i = 1; i < M; i++) {
			assert_int_equal(fx_isend(t->sc, s + i * SZ, SZ, i, smr, &sreq[i]), 0);
			assert_int_equal(fx_wait(rreq[i], &got), 0);
		}
		assert_int_equal(fx_isend(t->sc, s + 7, 100, tag, smr, &x), 0);
		assert_int_equal(fx_wait(rreq[M], &got), 0);
		assert_int_equal(got, 100);
		assert_memory_equal(r, s + 7, 100);
		for (i = 0; i < M; i++)
			assert_int_equal(fx_wait(sreq[i], NULL), 0);
		assert_int_equal(fx_wait(x, NULL), 0);
	}
	rn_dereg_mr(t->rc, rmr);
	rn_dereg_mr(t->sc, smr);
	free(r);
	free(s);
}

/*
 * Every FIFO slot holding 8 receives: 32 x (8 writes + the sizes write) = 288 send WRs,
 * more than a send queue holds (NCCL keeps at most 8 such slots in flight). The sender
 * meets back-pressure (success, no request) and goes on as completions free its queue:
 * never more WRs posted than the queue holds, every message whole, its size told.
 */
static void eight_receive_slots_beyond_the_send_queue(void **state)
{
	struct t *t = *state;
	enum { M = RN_MAX_REQUESTS, N = RN_MAX_RECVS, SZ = 64 };
	char *r = fx_pattern(M * N * SZ, 0), *s = fx_pattern(M * N * SZ, 91);
	struct rn_mr *rmr, *smr;
	struct rn_req *rreq[M], *sreq[M * N];
	int i, j, k, got[N], held = 0;

	assert_int_equal(rn_reg_mr(t->rc, r, M * N * SZ, RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_reg_mr(t->sc, s, M * N * SZ, RN_PTR_HOST, &smr), 0);
	memset(r, 0, M * N * SZ);
	assert_true(M * (N + 1) > t->sc->c.sq_cap);
	for (i = 0; i < M; i++) {
		void *p[N];
		size_t sz[N];
		int tags[N];
		struct rn_mr *mrs[N];

		for (j = 0; j < N; j++) {
			p[j] = r + (i * N + j) * SZ;
			sz[j] = SZ;
			tags[j] = j;
			mrs[j] = rmr;
		}
		assert_int_equal(rn_irecv(t->rc, N, p, sz, tags, mrs, &rreq[i]), 0);
		assert_non_null(rreq[i]);
	}
	assert_int_equal(rn_test(rreq[0], &got[0], NULL), 0); /* the pending CTS entries go */
	for (i = 0; i < M * N; i++) {
		sreq[i] = NULL;
		for (k = 0; k < 100000 && !sreq[i]; k++) {
			assert_int_equal(rn_isend(t->sc, s + i * SZ, SZ - (size_t)(i % N), i % N,
						  smr, &sreq[i]),
					 0);
			held += !sreq[i];
			assert_true(t->sc->c.sq_used[0] <= t->sc->c.sq_cap);
		}
		assert_non_null(sreq[i]);
	}
	assert_true(held > 0); /* the queue did fill */
	for (i = 0; i < M; i++) {
		assert_int_equal(fx_wait(rreq[i], got), 0);
		for (j = 0; j < N; j++) {
			assert_int_equal(got[j], SZ - j);
			assert_memory_equal(r + (i * N + j) * SZ, s + (i * N + j) * SZ,
					    (size_t)(SZ - j));
		}
	}
	for (i = 0; i < M * N; i++)
		assert_int_equal(fx_wait(sreq[i], NULL), 0);
	rn_dereg_mr(t->rc, rmr);
	rn_dereg_mr(t->sc, smr);
	free(r);
	free(s);
}

/* 128 QPs a connection, as NCCL allows, each carrying data both ways of splitting. */
static void qps_per_connection_128(void **state)
{
	struct t *t = *state;

	assert_int_equal(t->sc->c.nqps, 128);
	assert_int_equal(t->rc->c.nqps, 128);
	basic_sizes(state);
	thirty_two_in_flight(state);
}

static void split_over_four_qps(void **state)
{
	struct t *t = *state;
	struct fake_wire_stats st;
	int got, q;

	assert_int_equal(t->sc->c.nqps, 4);
	assert_int_equal(t->rc->c.nqps, 4);
	assert_int_equal(xfer1(t, (1 << 20) + 1000, 2 << 20, &got), 0);
	assert_int_equal(got, (1 << 20) + 1000);
	for (q = 0; q < 4; q++) {
		fake_wire_stats(t->sc->c.qps[q], &st);
		assert_int_equal(st.writes_imm, 1); /* every QP carries a part and its imm */
	}
	/* a message smaller than one chunk still completes on every QP */
	assert_int_equal(xfer1(t, 100, 100, &got), 0);
	assert_int_equal(got, 100);
	assert_int_equal(xfer1(t, 0, 100, &got), 0);
	assert_int_equal(got, 0);
}

static void round_robin_four_qps(void **state)
{
	struct t *t = *state;
	struct fake_wire_stats st;
	int got, i, q;

	for (i = 0; i < 8; i++) {
		assert_int_equal(xfer1(t, 3000 + (size_t)i, 4096, &got), 0);
		assert_int_equal(got, 3000 + i);
	}
	for (q = 0; q < 4; q++) {
		fake_wire_stats(t->sc->c.qps[q], &st);
		assert_int_equal(st.writes_imm, 2);
	}
}

static void large_message_split_at_max_msg(void **state)
{
	struct t *t = *state;
	struct fake_wire_stats st;
	size_t big = (20u << 20) + 5;
	int got;

	fake_wire_set_max_msg(8u << 20);
	assert_int_equal(xfer1(t, big, big, &got), 0);
	assert_int_equal(got, (int)big);
	int q, wrs = 0;

	for (q = 0; q < t->sc->c.nqps; q++) {
		fake_wire_stats(t->sc->c.qps[q], &st);
		assert_true(st.max_wr_len <= (8 << 20));
		wrs += st.writes + st.writes_imm;
	}
	/* one QP: 8 + 8 + 4 MiB; four: 5 MiB each, one WR per QP */
	assert_int_equal(wrs, t->sc->c.nqps == 1 ? 3 : 4);
}

static void completion_error_warns_once(void **state)
{
	struct t *t = *state;
	struct fake_path_script s = { 0 };
	char sb[64], rb[64], lg[48], rg[48];
	struct rn_mr *smr, *rmr;
	struct rn_req *sreq, *rreq, *x;
	size_t sz = sizeof(rb);
	void *rp = rb;
	int tag = 1, done, got, i, ret;

	s.diag_ret = 0;
	s.diag.cause = RN_CAUSE_NEIGH_WRONG_MAC;
	s.diag.msg =
		(char *)"neighbour 198.18.0.2 on eth0 holds 52:54:00:00:02:02"; /* the fake copies it */
	s.diag.fix = (char *)"ip rule add from 198.18.0.1 lookup 101"; /* the fake copies it */
	fake_path_set("rxe0", &s);
	assert_int_equal(rn_reg_mr(t->sc, sb, sizeof(sb), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, rb, sizeof(rb), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_irecv(t->rc, 1, &rp, &sz, &tag, &rmr, &rreq), 0);
	fake_wire_fail_qp(t->sc->c.qps[0], IBV_WC_RETRY_EXC_ERR, 0x81);
	fx_log_reset();
	assert_int_equal(rn_isend(t->sc, sb, 10, tag, smr, &sreq), 0);
	assert_non_null(sreq);
	for (i = 0, ret = 0; i < 10 && !ret; i++)
		ret = rn_test(sreq, &done, &got);
	assert_int_equal(ret, -EREMOTEIO);
	for (i = 0; i < 10; i++)
		assert_int_equal(rn_test(sreq, &done, &got), -EREMOTEIO);
	assert_int_equal(rn_isend(t->sc, sb, 10, tag, smr, &x), -EREMOTEIO);
	assert_int_equal(fx_nwarn, 1);
	assert_non_null(strstr(fx_last_warn, "status=RETRY_EXC_ERR(12)"));
	assert_non_null(strstr(fx_last_warn, "vendor_err=129"));
	assert_null(strstr(fx_last_warn, "opcode")); /* not valid in an error completion */
	assert_non_null(strstr(fx_last_warn, "testhost"));
	assert_non_null(strstr(fx_last_warn, "127.0.0.1:"));
	assert_non_null(strstr(fx_last_warn, rn_gid_str(&t->f.devs[0].nic.gid, lg, sizeof(lg))));
	assert_non_null(strstr(fx_last_warn, rn_gid_str(&t->f.devs[1].nic.gid, rg, sizeof(rg))));
	assert_non_null(strstr(fx_last_warn, "diagnosis [neigh-wrong-mac]: neighbour"));
	assert_non_null(strstr(fx_last_warn, "holds 52:54:00:00:02:02"));
	assert_non_null(strstr(fx_last_warn, "lookup 101"));
	assert_int_equal(fake_path_diagnoses(), 1);
	/* the failed completion's status, for callers that must tell a timeout (doctor) */
	assert_int_equal(rn_send_wc_status(t->sc), IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(rn_recv_wc_status(t->rc), IBV_WC_SUCCESS);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

static void flush_only_for_gpu_buffers(void **state)
{
	struct t *t = *state;
	char host[128], gpu[128];
	struct rn_mr *hmr, *gmr, *mrs[2];
	struct rn_req *req;
	struct fake_wire_stats st;
	void *data[2];
	int sizes[2];

	assert_int_equal(rn_reg_mr(t->rc, host, sizeof(host), RN_PTR_HOST, &hmr), 0);
	/* host memory registered as CUDA: the MR's type is what decides */
	assert_int_equal(rn_reg_mr(t->rc, gpu, sizeof(gpu), RN_PTR_CUDA, &gmr), 0);
	data[0] = host;
	data[1] = gpu;
	mrs[0] = hmr;
	mrs[1] = gmr;
	sizes[0] = 10;
	sizes[1] = 10;
	assert_int_equal(rn_iflush(t->rc, 2, data, sizes, mrs, &req), 0);
	assert_non_null(req);
	assert_int_equal(fx_wait(req, NULL), 0);
	fake_wire_stats(t->rc->flush_qp[0], &st);
	assert_int_equal(st.reads, 1);
	assert_int_equal(st.max_wr_len, 1);
	/* the last non-empty buffer is host memory: nothing to do */
	sizes[1] = 0;
	assert_int_equal(rn_iflush(t->rc, 2, data, sizes, mrs, &req), 0);
	assert_null(req);
	fake_wire_stats(t->rc->flush_qp[0], &st);
	assert_int_equal(st.reads, 1);
	rn_dereg_mr(t->rc, hmr);
	rn_dereg_mr(t->rc, gmr);
}

static void flush_disabled(void **state)
{
	struct fx f;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	char gpu[64];
	struct rn_mr *gmr;
	struct rn_req *req;
	void *data = gpu;
	int size = 10;

	fx_setup(&f);
	fake_path_set(NULL, NULL);
	f.eng.cfg.gdr_flush_disable = 1;
	assert_int_equal(fx_connect(&f, 0, 1, 0, &sc, &rc), 0);
	assert_null(rc->flush_qp[0]);
	assert_int_equal(rn_reg_mr(rc, gpu, sizeof(gpu), RN_PTR_CUDA, &gmr), 0);
	assert_int_equal(rn_iflush(rc, 1, &data, &size, &gmr, &req), 0);
	assert_null(req);
	rn_dereg_mr(rc, gmr);
	rn_close_send(sc);
	rn_close_recv(rc);
	/* a device that cannot take GPU memory (rxe) gets no flush QP either */
	f.eng.cfg.gdr_flush_disable = 0;
	f.devs[1].ptr_support = RN_PTR_HOST;
	assert_int_equal(fx_connect(&f, 0, 1, 0, &sc, &rc), 0);
	assert_null(rc->flush_qp[0]);
	rn_close_send(sc);
	rn_close_recv(rc);
	assert_int_equal(fx_teardown(&f), 0);
}

/* test() until it fails, napping so that the 100 ms slow checks come round. */
static int wait_error(struct rn_req *req)
{
	int i, done, ret = 0, sizes[RN_MAX_RECVS];

	for (i = 0; i < 5000 && !ret; i++) {
		ret = rn_test(req, &done, sizes);
		if (!ret)
			usleep(1000);
	}
	return ret;
}

static struct rn_req *post_recv(struct t *t, void *p, size_t sz, struct rn_mr *mr)
{
	struct rn_req *req;
	int tag = 0;

	assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &mr, &req), 0);
	assert_non_null(req);
	return req;
}

/*
 * CTS writes posted while one is outstanding need no completion: a window of 8 receives
 * costs one signaled write and 7 unsignaled ones (no completion, on rxe no ACK), and the
 * signaled writes retire the others' send queue slots: 32 windows (256 CTS writes over a
 * 64-entry send queue) all complete. Inline: the receiver's QPs take one entry inline.
 */
static void cts_writes_unsignaled(void **state)
{
	struct t *t = *state;
	static char s[8][256], r[8][256];
	struct rn_mr *smr, *rmr;
	struct rn_req *rreq[8], *sreq[8];
	struct fake_wire_stats st;
	int round, i, got;

	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	for (round = 0; round < 32; round++) {
		for (i = 0; i < 8; i++)
			rreq[i] = post_recv(t, r[i], sizeof(r[i]), rmr);
		/* NCCL's first test after posting ahead: the 7 pending entries go (cts_flush) */
		assert_int_equal(rn_test(rreq[0], &got, NULL), 0);
		assert_int_equal(got, 0);
		if (!round) {
			/* the first alone (nothing outstanding: at once), the 7 after it in one */
			fake_wire_stats(t->rc->c.qps[0], &st);
			assert_int_equal(st.writes, 2);
			assert_int_equal(st.writes_signaled, 1);
		}
		for (i = 0; i < 8; i++) {
			memset(s[i], 'a' + i, sizeof(s[i]));
			assert_int_equal(fx_isend(t->sc, s[i], sizeof(s[i]), 0, smr, &sreq[i]), 0);
		}
		for (i = 0; i < 8; i++) {
			assert_int_equal(fx_wait(rreq[i], &got), 0);
			assert_int_equal(got, (int)sizeof(r[i]));
			assert_memory_equal(r[i], s[i], sizeof(s[i]));
			assert_int_equal(fx_wait(sreq[i], NULL), 0);
		}
	}
	fake_wire_stats(t->rc->c.qps[0], &st);
	assert_int_equal(st.writes, 64);
	/* each round starts on an idle comm: its first CTS is signalled, the other is not */
	assert_int_equal(st.writes_signaled, 32);
	assert_int_equal(st.writes_inline, 32); /* conn.c asked for an entry inline */
	assert_true(t->rc->c.sq_used[0] < 16);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

/* ---- CTS coalescing (src/xfer.c: cts_flush) ---- */

/* Plain RDMA WRITEs the receiver has posted on all its QPs. */
static int rc_writes(struct t *t)
{
	struct fake_wire_stats st;
	int q, n = 0;

	for (q = 0; q < t->rc->c.nqps; q++) {
		fake_wire_stats(t->rc->c.qps[q], &st);
		n += st.writes;
	}
	return n;
}

/* The sender's FIFO slot of sequence @seq holds @n entries of it, tags @tag0.. */
static void fifo_holds(struct t *t, uint32_t seq, int n, int tag0)
{
	int i, len = t->sc->c.cts_len;

	for (i = 0; i < n; i++) {
		struct rn_cts *e = rn_cts_at(t->sc->fifo, len, seq - 1, i);

		assert_int_equal(*rn_cts_seq(e, len), seq);
		assert_int_equal(e->nreqs, n);
		assert_int_equal(e->tag, tag0 + i);
	}
}

/*
 * Rounds of 12 receives posted ahead (12 does not divide the 32 slots: a round's slots wrap
 * the ring every few rounds), each tagged by its slot: the first goes at once (nothing
 * outstanding), the others wait for the first test and go in one write, or two when they
 * span the wrap. Every entry lands in its own slot with its sequence; every message in its
 * own buffer.
 */
static void cts_coalesced_in_order_across_the_wrap(void **state)
{
	struct t *t = *state;
	enum { N = 12, SZ = 128 };
	static char s[N][SZ], r[N][SZ];
	struct rn_mr *smr, *rmr;
	struct rn_req *rreq[N], *sreq[N];
	int round, i, got, w0, tag, wraps = 0;

	assert_int_equal(t->sc->c.cts_len, 32); /* a receiver of one NIC */
	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	for (round = 0; round < 8; round++) {
		uint32_t k0 = t->rc->tail;
		int wrap = 0;

		/* slot 0 among the pending ones (not the first, which goes alone anyway) */
		for (i = 2; i < N; i++)
			wrap |= (k0 + (uint32_t)i) % RN_SLOTS == 0;

		w0 = rc_writes(t);
		for (i = 0; i < N; i++) {
			void *p = r[i];
			size_t sz = SZ;

			tag = (int)(k0 + (uint32_t)i);
			assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &rmr, &rreq[i]), 0);
			assert_non_null(rreq[i]);
		}
		/* the first is out (and the pending ones before the wrap): not the last */
		assert_int_equal(rc_writes(t) - w0, 1 + wrap);
		fifo_holds(t, k0 + 1, 1, (int)k0);
		assert_int_not_equal(*rn_cts_seq(rn_cts_at(t->sc->fifo, t->sc->c.cts_len,
							   k0 + N - 1, 0),
						 t->sc->c.cts_len),
				     k0 + N);
		assert_true(t->rc->cts_npend > 0);
		assert_int_equal(rn_test(rreq[N - 1], &got, NULL), 0); /* any of its requests */
		assert_int_equal(got, 0);
		assert_int_equal(t->rc->cts_npend, 0);
		assert_int_equal(rc_writes(t) - w0, 2 + wrap);
		wraps += wrap;
		for (i = 0; i < N; i++)
			fifo_holds(t, k0 + 1 + (uint32_t)i, 1, (int)(k0 + (uint32_t)i));
		/* sent in another order than posted: the tags find their slots in turn */
		for (i = 0; i < N; i++) {
			memset(s[i], 'A' + round + i, SZ);
			assert_int_equal(fx_isend(t->sc, s[i], SZ - (size_t)i,
						  (int)(k0 + (uint32_t)i), smr, &sreq[i]),
					 0);
			assert_non_null(sreq[i]);
		}
		for (i = 0; i < N; i++) {
			assert_int_equal(fx_wait(rreq[i], &got), 0);
			assert_int_equal(got, SZ - i);
			assert_memory_equal(r[i], s[i], (size_t)(SZ - i));
			assert_int_equal(fx_wait(sreq[i], NULL), 0);
		}
	}
	assert_true(wraps >= 2);
	assert_true(t->rc->c.sq_used[0] < t->rc->c.sq_cap);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

/*
 * A caller that posts one receive and then only tests that request: on an idle comm its
 * CTS goes at the irecv; behind an outstanding receive it is pending, and its own test
 * (never one of the earlier request's) writes it.
 */
static void one_receive_then_only_its_test(void **state)
{
	struct t *t = *state;
	char s[64] = "one", r[2][64];
	struct rn_mr *smr, *rmr;
	struct rn_req *a, *b, *sreq;
	int got, w0;

	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	w0 = rc_writes(t);
	a = post_recv(t, r[0], sizeof(r[0]), rmr);
	assert_int_equal(rc_writes(t) - w0, 1); /* idle comm: at once */
	fifo_holds(t, 1, 1, 0);
	assert_int_equal(t->rc->cts_npend, 0);
	b = post_recv(t, r[1], sizeof(r[1]), rmr); /* behind a: pending */
	assert_int_equal(t->rc->cts_npend, 1);
	assert_int_equal(rc_writes(t) - w0, 1);
	assert_int_equal(fx_isend(t->sc, s, 4, 0, smr, &sreq), 0);
	assert_non_null(sreq);
	assert_int_equal(fx_wait(sreq, NULL), 0);
	/* the caller tests b alone: b's CTS goes, then a's data and b's complete */
	assert_int_equal(rn_test(b, &got, NULL), 0);
	assert_int_equal(t->rc->cts_npend, 0);
	assert_int_equal(rc_writes(t) - w0, 2);
	fifo_holds(t, 2, 1, 0);
	assert_int_equal(fx_isend(t->sc, s, 5, 0, smr, &sreq), 0);
	assert_non_null(sreq);
	assert_int_equal(fx_wait(b, &got), 0);
	assert_int_equal(got, 5);
	assert_int_equal(fx_wait(a, &got), 0);
	assert_int_equal(got, 4);
	assert_int_equal(fx_wait(sreq, NULL), 0);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

/*
 * Multi-receives posted together: 3 buffers, then 2, then 1, in one write (the last
 * slot's entries only) at the first test; each slot's entries whole with its sequence.
 */
static void multi_receives_coalesced(void **state)
{
	struct t *t = *state;
	static char s[6][256], r[6][256];
	struct rn_mr *smr, *rmr, *mrs[3];
	struct rn_req *rreq[3], *sreq[6];
	int ns[3] = { 3, 2, 1 }, tags[3][3] = { { 10, 11, 12 }, { 20, 21 }, { 30 } };
	int i, j, m = 0, got[3], w0, base, buf[6], want[3][3];
	struct fake_wire_stats st;

	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	mrs[0] = mrs[1] = mrs[2] = rmr;
	w0 = rc_writes(t);
	for (i = 0; i < 3; i++) {
		void *p[3];
		size_t sz[3];

		for (j = 0; j < ns[i]; j++) {
			p[j] = r[m + j];
			sz[j] = sizeof(r[0]);
		}
		m += ns[i];
		assert_int_equal(rn_irecv(t->rc, ns[i], p, sz, tags[i], mrs, &rreq[i]), 0);
		assert_non_null(rreq[i]);
	}
	assert_int_equal(rc_writes(t) - w0, 1);
	assert_int_equal(rn_test(rreq[0], &got[0], NULL), 0);
	assert_int_equal(rc_writes(t) - w0, 2);
	fake_wire_stats(t->rc->c.qps[0], &st);
	/* slot 2 whole (8 entries' room), slot 3's one entry */
	assert_int_equal(t->rc->c.cts_len, 32);
	assert_int_equal(st.max_wr_len, (RN_MAX_RECVS + 1) * 32);
	fifo_holds(t, 1, 3, 10);
	fifo_holds(t, 2, 2, 20);
	fifo_holds(t, 3, 1, 30);
	/* message m (100 + m bytes) goes to the buffer of its tag: each slot's in reverse */
	m = 0;
	for (i = 0, base = 0; i < 3; base += ns[i], i++)
		for (j = ns[i] - 1; j >= 0; j--, m++) {
			memset(s[m], 'a' + m, sizeof(s[0]));
			assert_int_equal(fx_isend(t->sc, s[m], 100 + (size_t)m, tags[i][j], smr,
						  &sreq[m]),
					 0);
			assert_non_null(sreq[m]);
			buf[m] = base + j;
			want[i][j] = 100 + m;
		}
	for (i = 0; i < 3; i++) {
		int sizes[RN_MAX_RECVS];

		assert_int_equal(fx_wait(rreq[i], sizes), 0);
		for (j = 0; j < ns[i]; j++)
			assert_int_equal(sizes[j], want[i][j]);
	}
	for (m = 0; m < 6; m++) {
		assert_int_equal(fx_wait(sreq[m], NULL), 0);
		assert_memory_equal(r[buf[m]], s[m], (size_t)(100 + m));
	}
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

/*
 * Over several QPs (NCCL_IB_QPS_PER_CONNECTION 4, split or round-robin): 8 receives
 * ahead, then 8 more as each completes, as NCCL's proxy does; every message whole, the
 * batch on its first slot's QP, and the send queues' counts back to none in flight.
 */
static void cts_coalesced_over_qps(void **state)
{
	struct t *t = *state;
	enum { W = 8, SZ = 8192, ROUNDS = 6 };
	static char s[W][SZ], r[W][SZ];
	struct rn_mr *smr, *rmr;
	struct rn_req *rreq[W], *sreq[W];
	int round, i, got, q, w0;

	assert_int_equal(t->rc->c.nqps, 4);
	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	for (round = 0; round < ROUNDS; round++) {
		w0 = rc_writes(t);
		for (i = 0; i < W; i++)
			rreq[i] = post_recv(t, r[i], SZ, rmr);
		assert_int_equal(rn_test(rreq[0], &got, NULL), 0);
		assert_int_equal(rc_writes(t) - w0, 2); /* 8 divides the 32 slots: no wrap inside */
		for (i = 0; i < W; i++) {
			memset(s[i], 'k' + i + round, SZ);
			assert_int_equal(fx_isend(t->sc, s[i], SZ - 64 * (size_t)i, 0, smr,
						  &sreq[i]),
					 0);
			assert_non_null(sreq[i]);
		}
		for (i = 0; i < W; i++) {
			assert_int_equal(fx_wait(rreq[i], &got), 0);
			assert_int_equal(got, SZ - 64 * i);
			assert_memory_equal(r[i], s[i], (size_t)(SZ - 64 * i));
			assert_int_equal(fx_wait(sreq[i], NULL), 0);
		}
	}
	/* what was posted is accounted: nothing outstanding is left but unsignalled CTSs */
	for (q = 0; q < 4; q++) {
		assert_int_equal(t->sc->c.sq_used[q], 0);
		assert_int_equal(t->sc->c.qp_out[q], 0);
		assert_true(t->rc->c.sq_used[q] >= t->rc->cts_unsig[q]);
		assert_true(t->rc->c.sq_used[q] < t->rc->c.sq_cap);
	}
	assert_int_equal(t->sc->c.outstanding, 0);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

/* post_send calls (doorbells) per QP, through the verbs table as the data path reaches it */
static int (*real_post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);
static struct ibv_qp *posts_qp[8];
static int posts_n[8], posts_wrs[8];

static int counting_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct ibv_send_wr *w;
	int i;

	for (i = 0; i < 8; i++)
		if (posts_qp[i] == qp) {
			posts_n[i]++;
			for (w = wr; w; w = w->next)
				posts_wrs[i]++;
		}
	return real_post_send(qp, wr, bad);
}

/*
 * Doorbells: a message split over 4 QPs, 4 WRs each (the device's largest WR is 1/16 of
 * it), is one chained post per QP; 8 receives posted ahead are 2 CTS posts (the first, then
 * the 7 behind it at the first test), not 8.
 */
static void one_post_per_qp_per_pass(void **state)
{
	struct t *t = *state;
	enum { SZ = 1 << 20, W = 8 };
	char *s = fx_pattern(SZ, 5), *r = calloc(W, 4096), *big = calloc(1, SZ);
	struct rn_mr *smr, *rmr, *bmr;
	struct rn_req *rreq[W], *sreq;
	size_t sz = SZ;
	void *p = big;
	int q, i, got, tag = 0, n = 0, wrs = 0;

	assert_int_equal(t->sc->c.nqps, 4);
	fake_wire_set_max_msg(SZ / 16);
	t->sc->c.max_msg = SZ / 16;
	assert_int_equal(rn_reg_mr(t->sc, s, SZ, RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, W * 4096, RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_reg_mr(t->rc, big, SZ, RN_PTR_HOST, &bmr), 0);
	real_post_send = rn_verbs.post_send;
	rn_verbs.post_send = counting_post_send;
	for (q = 0; q < 4; q++)
		posts_qp[q] = t->sc->c.qps[q];
	for (q = 0; q < 4; q++)
		posts_qp[4 + q] = t->rc->c.qps[q];
	memset(posts_n, 0, sizeof(posts_n));
	memset(posts_wrs, 0, sizeof(posts_wrs));
	assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &bmr, &rreq[0]), 0);
	assert_int_equal(fx_isend(t->sc, s, SZ, 0, smr, &sreq), 0);
	assert_non_null(sreq);
	for (q = 0; q < 4; q++) {
		assert_int_equal(posts_n[q], 1);
		assert_int_equal(posts_wrs[q], 4);
	}
	assert_int_equal(fx_wait(rreq[0], &got), 0);
	assert_int_equal(got, SZ);
	assert_memory_equal(big, s, SZ);
	assert_int_equal(fx_wait(sreq, NULL), 0);
	memset(posts_n, 0, sizeof(posts_n));
	for (i = 0; i < W; i++)
		rreq[i] = post_recv(t, r + i * 4096, 4096, rmr);
	assert_int_equal(rn_test(rreq[0], &got, NULL), 0);
	for (q = 4; q < 8; q++)
		n += posts_n[q];
	assert_int_equal(n, 2);
	for (i = 0; i < W; i++) {
		assert_int_equal(fx_isend(t->sc, s, 4096, 0, smr, &sreq), 0);
		assert_int_equal(fx_wait(rreq[i], &got), 0);
		assert_int_equal(fx_wait(sreq, NULL), 0);
	}
	for (q = 0; q < 4; q++)
		wrs += posts_wrs[q];
	assert_true(wrs > 0);
	rn_verbs.post_send = real_post_send;
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
	rn_dereg_mr(t->rc, bmr);
	free(s);
	free(r);
	free(big);
}

static void async_qp_fatal(void **state)
{
	struct t *t = *state;
	struct ibv_async_event ev;
	char r[64];
	struct rn_mr *rmr;
	struct rn_req *req;

	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	req = post_recv(t, r, sizeof(r), rmr);
	memset(&ev, 0, sizeof(ev));
	ev.event_type = IBV_EVENT_QP_FATAL;
	ev.element.qp = t->rc->c.qps[0];
	fake_wire_push_async(t->rc->c.mem[0].dev->ctx, &ev);
	assert_int_equal(wait_error(req), -EIO);
	assert_non_null(strstr(fx_last_warn, "QP_FATAL"));
	rn_dereg_mr(t->rc, rmr);
}

static void push_port_event(struct rn_comm *c, enum ibv_event_type type)
{
	struct ibv_async_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.event_type = type;
	ev.element.port_num = (uint8_t)c->mem[0].dev->nic.port;
	fake_wire_push_async(c->mem[0].dev->ctx, &ev);
}

/* Poll @req for @ms, expecting no error and no completion (the link is down). */
static void test_for_ms(struct rn_req *req, int ms)
{
	int i, done = 0;

	for (i = 0; i < ms; i++) {
		assert_int_equal(rn_test(req, &done, NULL), 0);
		assert_int_equal(done, 0);
		usleep(1000);
	}
}

/*
 * A link flap shorter than the QPs' retry budget fails nothing, idle or busy (net_ib
 * only logs the event): PORT_ERR, the comms keep being tested, PORT_ACTIVE, then the
 * pending receive completes and an idle comm on the same port still works.
 */
static void async_port_flap_within_budget(void **state)
{
	struct t *t = *state;
	struct rn_send_comm *sc2;
	struct rn_recv_comm *rc2;
	char r[64], s[64], r2[16], s2[16];
	struct rn_mr *rmr, *smr, *rmr2, *smr2;
	struct rn_req *req, *sreq;
	const struct rn_member *rm = &t->rc->c.mem[0];
	int i, sizes[1];

	/* a second, idle connection on the same devices */
	assert_int_equal(fx_connect(&t->f, 0, 1, 0, &sc2, &rc2), 0);
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	req = post_recv(t, r, sizeof(r), rmr);
	push_port_event(&t->rc->c, IBV_EVENT_PORT_ERR);
	push_port_event(&t->sc->c, IBV_EVENT_PORT_ERR);
	for (i = 0; i < 5000 && !rn_events_dev_err(rm->ev, rm->dev->nic.port); i++)
		usleep(1000);  /* the watcher thread takes it */
	assert_int_equal(rn_events_dev_err(rm->ev, rm->dev->nic.port), -ENETDOWN);
	test_for_ms(req, 300); /* several slow checks see the port down */
	push_port_event(&t->rc->c, IBV_EVENT_PORT_ACTIVE);
	push_port_event(&t->sc->c, IBV_EVENT_PORT_ACTIVE);
	for (i = 0; i < 5000 && rn_events_dev_err(rm->ev, rm->dev->nic.port); i++)
		usleep(1000);
	memset(s, 0x5a, sizeof(s));
	assert_int_equal(fx_isend(t->sc, s, sizeof(s), 0, smr, &sreq), 0);
	assert_int_equal(fx_wait(sreq, NULL), 0);
	assert_int_equal(fx_wait(req, sizes), 0);
	assert_int_equal(sizes[0], (int)sizeof(s));
	assert_memory_equal(r, s, sizeof(s));
	/* the idle comm was never failed either */
	assert_int_equal(rn_reg_mr(rc2, r2, sizeof(r2), RN_PTR_HOST, &rmr2), 0);
	assert_int_equal(rn_reg_mr(sc2, s2, sizeof(s2), RN_PTR_HOST, &smr2), 0);
	{
		void *p = r2;
		size_t sz = sizeof(r2);
		int tag = 0;

		assert_int_equal(rn_irecv(rc2, 1, &p, &sz, &tag, &rmr2, &req), 0);
	}
	memset(s2, 0x33, sizeof(s2));
	assert_int_equal(fx_isend(sc2, s2, sizeof(s2), 0, smr2, &sreq), 0);
	assert_int_equal(fx_wait(sreq, NULL), 0);
	assert_int_equal(fx_wait(req, NULL), 0);
	assert_memory_equal(r2, s2, sizeof(s2));
	rn_dereg_mr(t->rc, rmr);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(rc2, rmr2);
	rn_dereg_mr(sc2, smr2);
	rn_close_send(sc2);
	rn_close_recv(rc2);
}

/* A port that stays down past the retry budget fails even an idle comm, with a diagnosis. */
static void async_port_stays_down(void **state)
{
	struct fx f;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	char r[64];
	struct rn_mr *rmr;
	struct rn_req *req;
	size_t sz = sizeof(r);
	void *p = r;
	int tag = 0;

	fx_setup(&f);
	fake_path_set(NULL, NULL);
	f.eng.cfg.timeout = 1; /* a budget of microseconds: the grace is its 1 s of slack */
	f.eng.cfg.retry_cnt = 1;
	assert_int_equal(fx_connect(&f, 0, 1, 0, &sc, &rc), 0);
	assert_true(rc->c.port_grace_ns < 2000000000ull);
	assert_int_equal(rn_reg_mr(rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_irecv(rc, 1, &p, &sz, &tag, &rmr, &req), 0);
	fx_log_reset();
	push_port_event(&rc->c, IBV_EVENT_PORT_ERR);
	assert_int_equal(wait_error(req), -ENETDOWN);
	/* admin-up, carrier gone: when and how long, advice, no 'ip link set up' (#21) */
	assert_true(fx_warn_seen("[link-flap]"));
	assert_true(fx_warn_seen("the port went down at "));
	assert_true(fx_warn_seen("(still down)"));
	assert_true(fx_warn_seen("check the cable"));
	assert_false(fx_warn_seen("ip link set dev"));
	assert_true(fx_warn_seen("NCCL_IB_TIMEOUT=1"));
	rn_dereg_mr(rc, rmr);
	rn_close_send(sc);
	rn_close_recv(rc);
	assert_int_equal(fx_teardown(&f), 0);
}

static void peer_dies_while_receiving(void **state)
{
	struct t *t = *state;
	char r[64];
	struct rn_mr *rmr;
	struct rn_req *req;

	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	req = post_recv(t, r, sizeof(r), rmr);
	rn_close_send(t->sc);
	t->sc = NULL;
	assert_int_equal(wait_error(req), -ECONNRESET);
	assert_non_null(strstr(fx_last_warn, "closed its connection"));
	rn_dereg_mr(t->rc, rmr);
}

/*
 * A fork after the comms exist (a DataLoader worker): the child gets no copy of the
 * CTS FIFO (MADV_DONTFORK), so the parent's pages stay the NIC's, and the parent's
 * transfers go on.
 */
static void fork_keeps_fifo_with_the_parent(void **state)
{
	struct t *t = *state;
	char r[256], s[256];
	struct rn_mr *rmr, *smr;
	struct rn_req *rreq, *sreq;
	int status, got;
	pid_t pid;

	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned char v;
		int bad = 0;

		/* not mapped here at all: mincore() says ENOMEM for both control blocks */
		bad |= mincore(t->sc->c.ctrl, t->sc->c.ctrl_len, &v) != -1 || errno != ENOMEM;
		bad |= mincore(t->rc->c.ctrl, t->rc->c.ctrl_len, &v) != -1 || errno != ENOMEM;
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	memset(s, 0x6b, sizeof(s));
	rreq = post_recv(t, r, sizeof(r), rmr);
	assert_int_equal(fx_isend(t->sc, s, sizeof(s), 0, smr, &sreq), 0);
	assert_int_equal(fx_wait(sreq, NULL), 0);
	assert_int_equal(fx_wait(rreq, &got), 0);
	assert_int_equal(got, (int)sizeof(s));
	assert_memory_equal(r, s, sizeof(s));
	rn_dereg_mr(t->rc, rmr);
	rn_dereg_mr(t->sc, smr);
}

/*
 * The receiver's process is gone (its OOB socket closed) and our send completes with
 * @status; the path looks healthy. Returns the WARN's text (fx_last_warn).
 */
/* the receiver's buffer peer_gone_then_error posted, and its key */
static uintptr_t gone_addr;
static uint32_t gone_rkey;

static const char *peer_gone_then_error(struct t *t, enum ibv_wc_status status)
{
	char sb[64], rb[64];
	struct rn_mr *smr, *rmr;
	struct rn_req *sreq, *rreq;
	size_t sz = sizeof(rb);
	void *rp = rb;
	int tag = 3, done, got, i, ret;

	assert_int_equal(rn_reg_mr(t->sc, sb, sizeof(sb), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t->rc, rb, sizeof(rb), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_irecv(t->rc, 1, &rp, &sz, &tag, &rmr, &rreq), 0);
	gone_addr = (uintptr_t)rb;
	gone_rkey = rmr->ibmr->rkey;
	rn_dereg_mr(t->rc, rmr);
	rn_close_recv(t->rc); /* the peer process is gone: its OOB socket closes */
	t->rc = NULL;
	fake_wire_fail_qp(t->sc->c.qps[0], status, 0x88);
	fx_log_reset();
	sreq = NULL;
	for (i = 0, ret = 0; i < 1000 && !sreq && !ret; i++)
		ret = rn_isend(t->sc, sb, 10, tag, smr, &sreq);
	assert_int_equal(ret, 0);
	assert_non_null(sreq);
	for (i = 0, ret = 0; i < 100 && !ret; i++)
		ret = rn_test(sreq, &done, &got);
	assert_int_equal(ret, -EREMOTEIO);
	assert_int_equal(fx_nwarn, 1);
	rn_dereg_mr(t->sc, smr);
	return fx_last_warn;
}

/* The receiver's process died: the sender's completion error names that, not the route. */
static void peer_died_named_on_completion_error(void **state)
{
	const char *w = peer_gone_then_error(*state, IBV_WC_REM_ACCESS_ERR);

	char want[160];

	assert_non_null(strstr(w, "status=REM_ACCESS_ERR"));
	/* what the refused write targeted: the entry's size, address and key */
	snprintf(
		want, sizeof(want),
		"the receiver refused slot 1's write into its buffer of 64 bytes at %#llx, rkey %#x,",
		(unsigned long long)gone_addr, gone_rkey);
	assert_non_null(strstr(w, want));
	assert_non_null(strstr(w, "[peer-died]"));
	assert_non_null(strstr(w, "testhost"));
	assert_null(strstr(w, "look healthy"));
	/* no command can bring a process back: what to do, never a "Fix:" */
	assert_non_null(strstr(w, "What to do: look at the log of the process on testhost"));
	assert_null(strstr(w, "Fix"));
}

/*
 * RoCE dropped between the hosts: both ends get status 12, and the one that reports second
 * finds the other gone. Its WARN says both: the peer closed, and what drops RoCE.
 */
static void peer_gone_after_status_12_names_the_drop_too(void **state)
{
	const char *w = peer_gone_then_error(*state, IBV_WC_RETRY_EXC_ERR);

	assert_non_null(strstr(w, "status=RETRY_EXC_ERR(12)"));
	assert_non_null(strstr(w, "[peer-died]"));
	assert_non_null(strstr(w, "UDP 4791"));
	assert_non_null(strstr(w, "roce-doctor peer "));
}

/* A peer that died of a broken path: both are said, the death first. */
static void peer_died_of_a_broken_path(void **state)
{
	struct fake_path_script ps = { 0 };
	const char *w, *a, *b;

	ps.diag_ret = 0;
	ps.diag.cause = RN_CAUSE_NEIGH_WRONG_MAC;
	ps.diag.msg = (char *)"neighbour holds 52:54:00:00:02:02"; /* the fake copies it */
	ps.diag.fix = (char *)"ip neigh flush";
	fake_path_set("rxe0", &ps);
	w = peer_gone_then_error(*state, IBV_WC_RETRY_EXC_ERR);
	a = strstr(w, "[peer-died]");
	b = strstr(w, "[neigh-wrong-mac]");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_null(strstr(w, "UDP 4791")); /* the path explains it: no guess beside it */
}

static void sender_waiting_for_dead_receiver(void **state)
{
	struct t *t = *state;
	char s[64];
	struct rn_mr *smr;
	struct rn_req *req = NULL;
	int i, ret = 0;

	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	rn_close_recv(t->rc);
	t->rc = NULL;
	for (i = 0; i < 5000 && !ret; i++) {
		ret = rn_isend(t->sc, s, 8, 0, smr, &req);
		assert_null(req);
		if (!ret)
			usleep(1000);
	}
	assert_int_equal(ret, -ECONNRESET);
	rn_dereg_mr(t->sc, smr);
}

static void stalled_qp_watchdog(void **state)
{
	struct fx f;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	char r[64];
	struct rn_mr *rmr;
	struct rn_req *req;
	size_t sz = sizeof(r);
	void *p = r;
	int tag = 0;

	fx_setup(&f);
	fake_path_set(NULL, NULL);
	f.eng.cfg.timeout = 1;
	f.eng.cfg.retry_cnt = 1;
	assert_int_equal(fx_connect(&f, 0, 1, 0, &sc, &rc), 0);
	assert_int_equal(rn_reg_mr(rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	fake_wire_set_stall(1); /* the CTS write never completes */
	assert_int_equal(rn_irecv(rc, 1, &p, &sz, &tag, &rmr, &req), 0);
	assert_int_equal(wait_error(req), -ETIMEDOUT);
	assert_non_null(strstr(fx_last_warn, "stalled"));
	fake_wire_set_stall(0);
	rn_dereg_mr(rc, rmr);
	rn_close_send(sc);
	rn_close_recv(rc);
	assert_int_equal(fx_teardown(&f), 0);
}

static void large_write_is_not_a_stall(void **state)
{
	struct fx f;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	static char s[8192], r[8192];
	struct rn_mr *smr, *rmr;
	struct rn_req *rreq, *sreq;
	size_t sz = sizeof(r);
	void *p = r;
	int tag = 0, done, sizes[RN_MAX_RECVS];

	fx_setup(&f);
	fake_path_set(NULL, NULL);
	f.eng.cfg.timeout = 1;
	f.eng.cfg.retry_cnt = 1;
	assert_int_equal(fx_connect(&f, 0, 1, 0, &sc, &rc), 0);
	assert_int_equal(rn_reg_mr(rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_reg_mr(sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_irecv(rc, 1, &p, &sz, &tag, &rmr, &rreq), 0);
	/* the bound with nothing in flight is the QP's own retry time */
	assert_int_equal(rn_comm_stall_bound(&sc->c), sc->c.stall_ns);
	fake_wire_set_stall(1); /* the data write stays in flight */
	assert_int_equal(fx_isend(sc, s, sizeof(s), 0, smr, &sreq), 0);
	assert_non_null(sreq);
	/* a write in flight grants its payload time at the floor rate (~1 MB/s) */
	assert_int_equal(sc->c.outstanding_bytes, sizeof(s));
	assert_true(rn_comm_stall_bound(&sc->c) >= sc->c.stall_ns + sizeof(s) * 1000ull);
	assert_int_equal(rn_test(sreq, &done, sizes), 0);
	assert_int_equal(done, 0);
	/* ...and still ends in an error when nothing ever completes */
	assert_int_equal(wait_error(sreq), -ETIMEDOUT);
	fake_wire_set_stall(0);
	rn_dereg_mr(sc, smr);
	rn_dereg_mr(rc, rmr);
	rn_close_send(sc);
	rn_close_recv(rc);
	assert_int_equal(fx_teardown(&f), 0);
}

/*
 * A message split over 2 QPs where QP 0 silently stops and QP 1 keeps completing: every
 * completion of QP 1 restarted the comm-wide clock, so the send waited for good (seen on
 * rxe at 1% loss, a vNIC's one NIC stuck). The QP's own clock fails the comm naming it.
 */
static void one_stalled_qp_of_a_split_comm(void **state)
{
	struct t *t = *state;
	enum { N = 30, SZ = 1024 };
	static char s[N][SZ], r[N][SZ];
	struct rn_mr *smr, *rmr;
	struct rn_req *rreq[N], *sreq[N];
	size_t sz = SZ;
	int tag = 0, i, k, done = 0, ret = 0, sizes[RN_MAX_RECVS];

	assert_int_equal(t->sc->c.nqps, 2);
	assert_int_equal(t->sc->c.split, 1);
	t->sc->c.stall_ns = 50 * 1000000ull; /* a short retry budget: the test ends soon */
	assert_int_equal(rn_reg_mr(t->rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_reg_mr(t->sc, s, sizeof(s), RN_PTR_HOST, &smr), 0);
	fake_wire_set_stall_qp(t->sc->c.qps[0], 1);
	/* a message every 10 ms: QP 1's halves complete (the comm-wide clock restarts), none whole */
	for (i = 0; i < N && !ret; i++) {
		void *p = r[i];

		assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &rmr, &rreq[i]), 0);
		assert_non_null(rreq[i]);
		/* the receiver's test writes its CTS (pending behind the stalled ones) */
		(void)rn_test(rreq[i], &done, sizes);
		done = 0;
		assert_int_equal(fx_isend(t->sc, s[i], SZ, 0, smr, &sreq[i]), 0);
		assert_non_null(sreq[i]);
		usleep(10000);
		/* polls that find nothing (as a proxy's loop does between completions) */
		for (k = 0; k < 20 && !ret; k++) {
			ret = rn_test(sreq[0], &done, sizes);
			assert_int_equal(done, 0);
		}
		assert_int_equal(t->sc->c.qp_out[1], 0);
	}
	assert_int_equal(ret, -ETIMEDOUT);
	assert_true(i < N);
	assert_true(fx_warn_seen("no completion on QP 0 of 2"));
	assert_true(fx_warn_seen("the QP stalled"));
	assert_non_null(strstr(fx_last_warn, "diagnosis"));
	fake_wire_set_stall_qp(t->sc->c.qps[0], 0);
	rn_dereg_mr(t->sc, smr);
	rn_dereg_mr(t->rc, rmr);
}

/* Comm pairs on one fixture, each with a registered pattern to send and a buffer to fill. */
enum { PAIRS_MAX = 4, PAIR_SZ = 4096 };
struct pairs {
	struct fx f;
	int n;
	struct rn_send_comm *sc[PAIRS_MAX];
	struct rn_recv_comm *rc[PAIRS_MAX];
	struct rn_mr *smr[PAIRS_MAX], *rmr[PAIRS_MAX];
	char *s[PAIRS_MAX], *r[PAIRS_MAX];
};

/* @n pairs, pair i from device @sd[i] to @rd[i]. */
static void pairs_open(struct pairs *p, int n, const int *sd, const int *rd)
{
	int i;

	fx_setup(&p->f);
	fake_path_set(NULL, NULL);
	p->n = n;
	for (i = 0; i < n; i++) {
		assert_int_equal(fx_connect(&p->f, sd[i], rd[i], 0, &p->sc[i], &p->rc[i]), 0);
		p->s[i] = fx_pattern(PAIR_SZ, i);
		p->r[i] = fx_pattern(PAIR_SZ, 100);
		assert_int_equal(rn_reg_mr(p->sc[i], p->s[i], PAIR_SZ, RN_PTR_HOST, &p->smr[i]), 0);
		assert_int_equal(rn_reg_mr(p->rc[i], p->r[i], PAIR_SZ, RN_PTR_HOST, &p->rmr[i]), 0);
	}
}

static void pairs_close(struct pairs *p)
{
	int i;

	for (i = 0; i < p->n; i++) {
		rn_dereg_mr(p->sc[i], p->smr[i]);
		rn_dereg_mr(p->rc[i], p->rmr[i]);
		rn_close_send(p->sc[i]);
		rn_close_recv(p->rc[i]);
		free(p->s[i]);
		free(p->r[i]);
	}
	assert_int_equal(fx_teardown(&p->f), 0);
}

static void many_comms_many_devices(void **state)
{
	enum { C = 4, SZ = PAIR_SZ };
	/* 0->1, 1->0, 0->1, 0->0: several comms per device, both devices */
	static const int sd[C] = { 0, 1, 0, 0 }, rd[C] = { 1, 0, 1, 0 };
	struct pairs p;
	struct rn_req *sreq[C], *rreq[C];
	int i, round, got;

	(void)state;
	pairs_open(&p, C, sd, rd);
	for (round = 0; round < 5; round++) {
		for (i = 0; i < C; i++) {
			void *b = p.r[i];
			size_t sz = SZ;
			int tag = i;

			memset(p.r[i], 0, SZ);
			assert_int_equal(rn_irecv(p.rc[i], 1, &b, &sz, &tag, &p.rmr[i], &rreq[i]),
					 0);
		}
		for (i = C - 1; i >= 0; i--) {
			p.s[i][0] = (char)(round + i);
			assert_int_equal(fx_isend(p.sc[i], p.s[i], SZ - (size_t)round, i, p.smr[i],
						  &sreq[i]),
					 0);
			assert_non_null(sreq[i]);
		}
		for (i = 0; i < C; i++) {
			assert_int_equal(fx_wait(rreq[i], &got), 0);
			assert_int_equal(got, SZ - round);
			assert_memory_equal(p.r[i], p.s[i], (size_t)(SZ - round));
			assert_int_equal(fx_wait(sreq[i], NULL), 0);
		}
	}
	pairs_close(&p);
}

/* This thread's voluntary context switches: one per nap (nanosleep always sleeps), none per
 * sched_yield (a yield that gives the CPU away counts as involuntary). */
static long thread_naps(void)
{
	struct rusage ru;

	assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_nvcsw;
}

/*
 * NCCL's proxy thread tests every comm of its rank in turn. A receive that waits for a late
 * peer naps in its test once nothing came for a millisecond, but only when nothing came on
 * any comm of the thread: while another comm of the same thread carries data, the waiting
 * one yields and does not sleep (a nap per pass would cap the busy comm at one message per
 * nap). Fails where the nap was the comm's own: the waiting comm naps at every pass.
 */
static void idle_comm_naps_only_when_its_thread_is_idle(void **state)
{
	enum { SZ = PAIR_SZ, PASSES = 20 };
	static const int sd[2] = { 0, 0 }, rd[2] = { 1, 1 };
	struct pairs p;
	struct rn_req *late, *rreq, *sreq;
	void *b;
	size_t sz = SZ;
	int i, tag = 0, done = 0, got;
	long naps, n0;
	uint64_t t0;

	(void)state;
	pairs_open(&p, 2, sd, rd);
	b = p.r[0];
	assert_int_equal(rn_irecv(p.rc[0], 1, &b, &sz, &tag, &p.rmr[0], &late), 0);
	assert_non_null(late);
	/* alone: after a millisecond of nothing, every test of the late receive naps */
	t0 = rn_now_ns();
	while (rn_now_ns() - t0 < 3000000ull) {
		assert_int_equal(rn_test(late, &done, NULL), 0);
		assert_false(done);
	}
	n0 = thread_naps();
	for (i = 0; i < PASSES; i++)
		assert_int_equal(rn_test(late, &done, NULL), 0);
	assert_int_equal(thread_naps() - n0, PASSES);
	/* the thread's other comm carries a message a pass: the late receive's test naps not */
	naps = 0;
	for (i = 0; i < PASSES; i++) {
		b = p.r[1];
		sz = SZ;
		assert_int_equal(rn_irecv(p.rc[1], 1, &b, &sz, &tag, &p.rmr[1], &rreq), 0);
		assert_int_equal(fx_isend(p.sc[1], p.s[1], SZ, 0, p.smr[1], &sreq), 0);
		assert_non_null(sreq);
		assert_int_equal(fx_wait(sreq, NULL), 0);
		assert_int_equal(fx_wait(rreq, &got), 0);
		assert_int_equal(got, SZ);
		n0 = thread_naps();
		assert_int_equal(rn_test(late, &done, NULL), 0);
		naps += thread_naps() - n0;
		assert_false(done);
	}
	assert_int_equal(naps, 0);
	/* the late peer's message still lands */
	assert_int_equal(fx_isend(p.sc[0], p.s[0], SZ, 0, p.smr[0], &sreq), 0);
	assert_non_null(sreq);
	assert_int_equal(fx_wait(sreq, NULL), 0);
	assert_int_equal(fx_wait(late, &got), 0);
	assert_int_equal(got, SZ);
	assert_memory_equal(p.r[0], p.s[0], SZ);
	pairs_close(&p);
}

static void misuse_is_refused(void **state)
{
	struct t *t = *state;
	char b[256];
	struct rn_mr *mr;
	struct rn_req *req;
	size_t sz = 300;
	void *p = b;
	int tag = 0;

	assert_int_equal(rn_reg_mr(t->sc, b, 64, RN_PTR_HOST, &mr), 0);
	/* the registration is page-granular: beyond the page is outside it */
	assert_int_equal(rn_isend(t->sc, b, 1 << 20, 0, mr, &req), -EINVAL);
	assert_non_null(strstr(fx_last_warn, "outside its registration"));
	assert_int_equal(rn_isend(t->sc, b, 10, 0, NULL, &req), -EINVAL);
	assert_int_equal(rn_irecv(t->rc, 0, &p, &sz, &tag, &mr, &req), -EINVAL);
	assert_int_equal(rn_irecv(t->rc, RN_MAX_RECVS + 1, &p, &sz, &tag, &mr, &req), -EINVAL);
	sz = 10; /* an MR of the other device (the send comm's) */
	assert_int_equal(rn_irecv(t->rc, 1, &p, &sz, &tag, &mr, &req), -EINVAL);
	assert_int_equal(rn_test(NULL, &tag, NULL), -EINVAL);
	rn_dereg_mr(t->sc, mr);
	/* misuse does not kill the comm */
	{
		int got;

		assert_int_equal(xfer1(t, 100, 100, &got), 0);
		assert_int_equal(got, 100);
	}
}

static int setup_none(void **state)
{
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(basic_sizes, setup, teardown),
		cmocka_unit_test_setup_teardown(send_waits_for_cts, setup, teardown),
		cmocka_unit_test_setup_teardown(size_mismatch_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(size_mismatch_is_an_error, setup_split4, teardown),
		cmocka_unit_test_setup_teardown(basic_sizes, setup_split4, teardown),
		cmocka_unit_test_setup_teardown(basic_sizes, setup_rr4, teardown),
		cmocka_unit_test_setup_teardown(qps_per_connection_128, setup_split128, teardown),
		cmocka_unit_test_setup_teardown(qps_per_connection_128, setup_rr128, teardown),
		cmocka_unit_test_setup_teardown(thirty_two_in_flight, setup_split4, teardown),
		cmocka_unit_test_setup_teardown(multi_recv_tag_matching, setup, teardown),
		cmocka_unit_test_setup_teardown(multi_recv_size_mismatch, setup, teardown),
		cmocka_unit_test_setup_teardown(multi_recv_size_mismatch, setup_split4, teardown),
		cmocka_unit_test_setup_teardown(multi_recv_tag_matching, setup_split4, teardown),
		cmocka_unit_test_setup_teardown(thirty_two_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(eight_receive_slots_beyond_the_send_queue, setup,
						teardown),
		cmocka_unit_test_setup_teardown(thirty_two_in_flight, setup_rr4, teardown),
		cmocka_unit_test_setup_teardown(split_over_four_qps, setup_split4, teardown),
		cmocka_unit_test_setup_teardown(round_robin_four_qps, setup_rr4, teardown),
		cmocka_unit_test_setup_teardown(large_message_split_at_max_msg, setup, teardown),
		cmocka_unit_test_setup_teardown(large_message_split_at_max_msg, setup_split4,
						teardown),
		cmocka_unit_test_setup_teardown(completion_error_warns_once, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_only_for_gpu_buffers, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_disabled, setup_none, NULL),
		cmocka_unit_test_setup_teardown(async_qp_fatal, setup, teardown),
		cmocka_unit_test_setup_teardown(cts_writes_unsignaled, setup, teardown),
		cmocka_unit_test_setup_teardown(cts_coalesced_in_order_across_the_wrap, setup,
						teardown),
		cmocka_unit_test_setup_teardown(one_receive_then_only_its_test, setup, teardown),
		cmocka_unit_test_setup_teardown(multi_receives_coalesced, setup, teardown),
		cmocka_unit_test_setup_teardown(cts_coalesced_over_qps, setup_split4, teardown),
		cmocka_unit_test_setup_teardown(cts_coalesced_over_qps, setup_rr4, teardown),
		cmocka_unit_test_setup_teardown(one_post_per_qp_per_pass, setup_split4, teardown),
		cmocka_unit_test_setup_teardown(async_port_flap_within_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(async_port_stays_down, setup_none, NULL),
		cmocka_unit_test_setup_teardown(peer_dies_while_receiving, setup, teardown),
		cmocka_unit_test_setup_teardown(sender_waiting_for_dead_receiver, setup, teardown),
		cmocka_unit_test_setup_teardown(fork_keeps_fifo_with_the_parent, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_died_of_a_broken_path, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_gone_after_status_12_names_the_drop_too, setup,
						teardown),
		cmocka_unit_test_setup_teardown(peer_died_named_on_completion_error, setup,
						teardown),
		cmocka_unit_test_setup_teardown(stalled_qp_watchdog, setup_none, NULL),
		cmocka_unit_test_setup_teardown(large_write_is_not_a_stall, setup_none, NULL),
		cmocka_unit_test_setup_teardown(one_stalled_qp_of_a_split_comm, setup_split2,
						teardown),
		cmocka_unit_test_setup_teardown(many_comms_many_devices, setup_none, NULL),
		cmocka_unit_test_setup_teardown(idle_comm_naps_only_when_its_thread_is_idle,
						setup_none, NULL),
		cmocka_unit_test_setup_teardown(misuse_is_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
