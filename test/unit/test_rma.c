// SPDX-License-Identifier: MIT
/*
 * The RMA backend (src/rma.c) over fake verbs and the fake wire: a group of one rank
 * (its puts go to itself, as NCCL's flush does) carries puts, signals (INC and ADD, with
 * and without data), gets and flushes with every byte and word checked; bad offsets,
 * ranks, contexts and strides are refused by name; a failed completion is an error with
 * the data path's diagnosis, never a hang; a pair the path check refuses fails the context
 * by name; a device without atomics is refused. Two ranks
 * in two threads build the TCP mesh past a stranger, and a missing rank ends in a
 * bounded, named timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "double_conncheck.h"
#include "fixture_xfer.h"
#include "double_conncheck.c"
#include "rn_clock.h"
#include "rn_rma.h"

struct one {
	struct rn_rma_listen *l;
	struct rn_rma_coll *g;
	struct rn_rma_ctx *x;
	unsigned char handle[RN_RMA_HANDLE_SIZE];
};

static int setup(void **state)
{
	static struct fx f;

	fx_setup(&f);
	fake_path_set(NULL, NULL);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(fx_teardown(*state), 0);
	return 0;
}

/* A group of one on device @dev (its listener closed, as NCCL does after the connect). */
static void group_of_one(struct fx *f, int dev, struct one *o)
{
	void *h[1];

	memset(o, 0, sizeof(*o));
	assert_int_equal(rn_rma_listen(&f->eng, dev, o->handle, &o->l), 0);
	h[0] = o->handle;
	assert_int_equal(rn_rma_connect(&f->eng, h, 1, 0, o->l, &o->g), 0);
	assert_int_equal(rn_rma_close_listen(o->l), 0);
}

/* ... and its context of 2 contexts, traffic class 106. */
static void one_up(struct fx *f, int dev, struct one *o)
{
	group_of_one(f, dev, o);
	assert_int_equal(rn_rma_ctx_create(o->g, 2, 106, 0, 1, &o->x), 0);
}

static void one_down(struct one *o)
{
	assert_int_equal(rn_rma_ctx_destroy(o->x), 0);
	assert_int_equal(rn_rma_close(o->g), 0);
}

static int wait_req(struct rn_rma_req *q)
{
	int done = 0, i, ret = 0;

	for (i = 0; i < 100000 && !done && !ret; i++)
		ret = rn_rma_test(q, &done);
	if (!ret && !done)
		fail_msg("request never completed");
	return ret;
}

static void put_signal_get_flush(void **state)
{
	struct fx *f = *state;
	static unsigned char src[8192], dst[8192], got[8192];
	static uint64_t sig[4] __attribute__((aligned(8)));
	struct rn_rma_mr *ms, *md, *mg, *mz;
	struct rn_rma_signal s;
	struct fake_wire_stats st;
	struct rn_rma_req *q;
	struct one o;
	int i;

	one_up(f, 0, &o);
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (unsigned char)(i * 7 + 1);
	memset(sig, 0, sizeof(sig));
	assert_int_equal(rn_rma_reg(o.g, src, sizeof(src), RN_PTR_HOST, -1, 0, &ms), 0);
	assert_int_equal(rn_rma_reg(o.g, dst, sizeof(dst), RN_PTR_HOST, -1, 0, &md), 0);
	assert_int_equal(rn_rma_reg(o.g, got, sizeof(got), RN_PTR_HOST, -1, 0, &mg), 0);
	assert_int_equal(rn_rma_reg(o.g, sig, sizeof(sig), RN_PTR_HOST, -1, 0, &mz), 0);
	/* a put alone */
	assert_int_equal(rn_rma_put(o.x, 0, 100, ms, 1000, 2000, md, 0, NULL, &q), 0);
	assert_int_equal(wait_req(q), 0);
	assert_memory_equal(dst + 2000, src + 100, 1000);
	/* with a signal: ADD 5 on word 1, then INC (value 1) on it; the data is there first */
	s = (struct rn_rma_signal){ .mr = mz, .off = 8, .value = 5 };
	assert_int_equal(rn_rma_put(o.x, 1, 0, ms, 4096, 4096, md, 0, &s, &q), 0);
	assert_int_equal(wait_req(q), 0);
	assert_memory_equal(dst + 4096, src, 4096);
	assert_int_equal(sig[1], 5);
	s.value = 1;
	assert_int_equal(rn_rma_put(o.x, 0, 0, NULL, 0, 0, NULL, 0, &s, &q), 0); /* ncclSignal */
	assert_int_equal(wait_req(q), 0);
	assert_int_equal(sig[1], 6);
	assert_int_equal(sig[0] + sig[2] + sig[3], 0);
	/* a get, and a flush */
	memset(got, 0, sizeof(got));
	assert_int_equal(rn_rma_get(o.x, 0, 4096, md, 4096, 16, mg, 0, &q), 0);
	assert_int_equal(wait_req(q), 0);
	assert_memory_equal(got + 16, src, 4096);
	assert_int_equal(rn_rma_flush(o.x, 0, md, 0, &q), 0);
	assert_int_equal(wait_req(q), 0);
	assert_int_equal(rn_rma_progress(o.x), 0);
	assert_int_equal(rn_rma_last_error(o.x), 0);
	fake_wire_stats(NULL, &st);
	assert_int_equal(st.atomics, 2);
	assert_true(st.reads >= 2);
	assert_int_equal(st.cq_overflows, 0);
	assert_true(
		fx_info_seen("RMA context on rxe0:1: 1 comm pair, 2 contexts, traffic class 106"));
	assert_true(fx_info_seen("send comm rxe0:1 "));
	assert_int_equal(fx_nwarn, 0);
	assert_int_equal(rn_rma_dereg(o.g, mz), 0);
	assert_int_equal(rn_rma_dereg(o.g, mg), 0);
	assert_int_equal(rn_rma_dereg(o.g, md), 0);
	assert_int_equal(rn_rma_dereg(o.g, ms), 0);
	one_down(&o);
}

/*
 * NCCL keeps up to RN_RMA_INFLIGHT requests in flight to a rank (the maxRecvs it is told),
 * each a put and its signal: all of them are posted before any is tested, and each lands.
 * A send queue sized for the net comms' data path (RN_SQ_DEPTH) would hold 27 of them,
 * and the 28th would fail as if NCCL had posted more than it was told.
 */
static void full_window_of_signalled_puts(void **state)
{
	struct fx *f = *state;
	static unsigned char src[RN_RMA_INFLIGHT * 64], dst[RN_RMA_INFLIGHT * 64];
	static uint64_t sig[2] __attribute__((aligned(8)));
	struct rn_rma_req *q[RN_RMA_INFLIGHT];
	struct rn_rma_mr *ms, *md, *mz;
	struct rn_rma_signal s;
	struct one o;
	int i;

	one_up(f, 0, &o);
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (unsigned char)(i * 13 + 5);
	memset(dst, 0, sizeof(dst));
	memset(sig, 0, sizeof(sig));
	assert_int_equal(rn_rma_reg(o.g, src, sizeof(src), RN_PTR_HOST, -1, 0, &ms), 0);
	assert_int_equal(rn_rma_reg(o.g, dst, sizeof(dst), RN_PTR_HOST, -1, 0, &md), 0);
	assert_int_equal(rn_rma_reg(o.g, sig, sizeof(sig), RN_PTR_HOST, -1, 0, &mz), 0);
	for (i = 0; i < RN_RMA_INFLIGHT; i++) {
		s = (struct rn_rma_signal){ .mr = mz, .off = 8, .value = (uint64_t)i + 1 };
		assert_int_equal(rn_rma_put(o.x, 0, (uint64_t)i * 64, ms, 64, (uint64_t)i * 64, md,
					    0, &s, &q[i]),
				 0);
	}
	for (i = 0; i < RN_RMA_INFLIGHT; i++)
		assert_int_equal(wait_req(q[i]), 0);
	assert_memory_equal(dst, src, sizeof(src));
	assert_int_equal(sig[1], (uint64_t)RN_RMA_INFLIGHT * (RN_RMA_INFLIGHT + 1) / 2);
	assert_int_equal(sig[0], 0);
	assert_int_equal(rn_rma_last_error(o.x), 0);
	assert_int_equal(fx_nwarn, 0);
	assert_int_equal(rn_rma_dereg(o.g, mz), 0);
	assert_int_equal(rn_rma_dereg(o.g, md), 0);
	assert_int_equal(rn_rma_dereg(o.g, ms), 0);
	one_down(&o);
}

/* What NCCL must not hand over is refused by name, and nothing is posted. */
static void bad_input_is_refused(void **state)
{
	struct fx *f = *state;
	static unsigned char buf[4096];
	static uint64_t sig[2] __attribute__((aligned(8)));
	struct rn_rma_signal s;
	struct fake_wire_stats st;
	struct rn_rma_mr *mb, *mz;
	struct rn_rma_req *q = (void *)1;
	struct rn_rma_ctx *x = NULL;
	struct one o;
	void *h[1];

	one_up(f, 0, &o);
	assert_int_equal(rn_rma_reg(o.g, buf, sizeof(buf), RN_PTR_HOST, -1, 0, &mb), 0);
	assert_int_equal(rn_rma_reg(o.g, sig, sizeof(sig), RN_PTR_HOST, -1, 0, &mz), 0);
	assert_int_equal(rn_rma_put(o.x, 0, 4000, mb, 200, 0, mb, 0, NULL, &q), -EINVAL);
	assert_null(q);
	assert_true(fx_warn_seen("RMA put of 200 bytes to rank 0: outside the registered buffers"));
	assert_int_equal(rn_rma_put(o.x, 0, 0, mb, 8, (uint64_t)-4, mb, 0, NULL, &q), -EINVAL);
	assert_int_equal(rn_rma_get(o.x, 0, 0, mb, 5000, 0, mb, 0, &q), -EINVAL);
	assert_int_equal(rn_rma_put(o.x, 0, 0, mb, 8, 0, mb, 1, NULL, &q), -EINVAL);
	assert_true(fx_warn_seen("rank 1: out of range (2 contexts, 1 ranks)"));
	assert_int_equal(rn_rma_put(o.x, 2, 0, mb, 8, 0, mb, 0, NULL, &q), -EINVAL);
	s = (struct rn_rma_signal){ .mr = mz, .off = 4, .value = 1 };
	assert_int_equal(rn_rma_put(o.x, 0, 0, NULL, 0, 0, NULL, 0, &s, &q), -EINVAL);
	assert_true(fx_warn_seen("not an aligned 8-byte word"));
	s.off = 16; /* past the 16-byte buffer */
	assert_int_equal(rn_rma_put(o.x, 0, 0, NULL, 0, 0, NULL, 0, &s, &q), -EINVAL);
	assert_int_equal(rn_rma_ctx_create(o.g, 1, -1, 0, 3, &x), -EINVAL); /* 1 % 3 */
	assert_int_equal(rn_rma_ctx_create(o.g, 0, -1, 0, 1, &x), -EINVAL);
	assert_null(x);
	assert_int_equal(rn_rma_test(NULL, (int[]){ 0 }), -EINVAL);
	fake_wire_stats(NULL, &st);
	assert_int_equal(st.atomics + st.reads, 0);
	/* a handle that is not ours, a rank outside the group */
	memset(o.handle, 0x5a, sizeof(o.handle));
	h[0] = o.handle;
	assert_int_equal(rn_rma_dereg(o.g, mz), 0);
	assert_int_equal(rn_rma_dereg(o.g, mb), 0);
	one_down(&o);
	{
		struct rn_rma_listen *l;
		struct rn_rma_coll *g = (void *)1;

		assert_int_equal(rn_rma_listen(&f->eng, 0, o.handle, &l), 0);
		assert_int_equal(rn_rma_connect(&f->eng, h, 1, 1, l, &g), -EINVAL);
		assert_null(g);
		memset(o.handle, 0x5a, sizeof(o.handle));
		assert_int_equal(rn_rma_connect(&f->eng, h, 1, 0, l, &g), -EINVAL);
		assert_true(fx_warn_seen("rank 0's handle is not this rank's listener"));
		assert_int_equal(rn_rma_close_listen(l), 0);
		assert_int_equal(rn_rma_listen(&f->eng, 7, o.handle, &l), -EINVAL);
	}
}

/* A completion error: the request fails, the comm says why, later calls fail at once. */
static void failed_completion_is_an_error(void **state)
{
	struct fx *f = *state;
	static unsigned char buf[4096];
	struct rn_rma_mr *mb;
	struct rn_rma_req *q;
	struct one o;
	uint64_t t0;
	int ret;

	one_up(f, 0, &o);
	assert_int_equal(rn_rma_reg(o.g, buf, sizeof(buf), RN_PTR_HOST, -1, 0, &mb), 0);
	/* the first put goes through; the next one's completion fails */
	{
		struct rn_rma_req *p;

		assert_int_equal(rn_rma_put(o.x, 0, 0, mb, 64, 64, mb, 0, NULL, &p), 0);
		assert_int_equal(wait_req(p), 0);
	}
	assert_non_null(rn_rma_qp(o.x, 0));
	fake_wire_fail_qp(rn_rma_qp(o.x, 0), IBV_WC_RETRY_EXC_ERR, 0x81);
	assert_int_equal(rn_rma_put(o.x, 0, 0, mb, 64, 128, mb, 0, NULL, &q), 0);
	t0 = rn_now_ns();
	ret = wait_req(q);
	assert_int_equal(ret, -EREMOTEIO);
	assert_true(rn_now_ns() - t0 < 5000000000ull);
	assert_true(rn_rma_last_error(o.x) != 0);
	assert_true(fx_warn_seen("RETRY_EXC"));
	assert_true(fx_warn_seen("req=RMA")); /* the failed WR's kind, not "?" */
	/* later calls on the failed comm say so at once */
	assert_int_equal(rn_rma_put(o.x, 0, 0, mb, 64, 128, mb, 0, NULL, &q), -EREMOTEIO);
	assert_int_equal(rn_rma_dereg(o.g, mb), 0);
	one_down(&o);
}

/* A pair the path check refuses: createContext fails with the cause named, nothing posted. */
static void refused_pair_fails_the_context(void **state)
{
	struct fx *f = *state;
	struct fake_path_script s = { 0 };
	struct rn_rma_ctx *x = (void *)1;
	struct fake_wire_stats st;
	struct one o;

	s.poll_ret = -EHOSTUNREACH;
	s.finding.cause = RN_CAUSE_NEIGH_WRONG_MAC;
	s.finding.sev = RN_SEV_FATAL;
	s.finding.msg = (char *)"neighbour 198.18.0.1 holds the wrong MAC"; /* the fake copies it */
	s.finding.fix = (char *)"sysctl -w net.ipv4.conf.all.arp_ignore=1";
	fake_path_set("rxe0", &s);
	group_of_one(f, 0, &o);
	assert_int_equal(rn_rma_ctx_create(o.g, 1, -1, 0, 1, &x), -EHOSTUNREACH);
	assert_null(x);
	assert_true(fx_warn_seen("connection refused here [neigh-wrong-mac]"));
	assert_true(fx_warn_seen("RMA context: the comm to rank 0 failed") ||
		    fx_warn_seen("RMA context: a comm from another rank failed"));
	fake_wire_stats(NULL, &st);
	assert_int_equal(st.writes + st.reads + st.atomics, 0);
	rn_rma_close(o.g);
}

static void no_atomics_is_refused(void **state)
{
	struct fx *f = *state;
	struct rn_rma_ctx *x = (void *)1;
	struct one o;

	f->devs[1].attr.atomic_cap = IBV_ATOMIC_NONE;
	group_of_one(f, 1, &o);
	assert_int_equal(rn_rma_ctx_create(o.g, 1, -1, 0, 1, &x), -EOPNOTSUPP);
	assert_null(x);
	assert_true(fx_warn_seen("rxe1 has no RDMA atomics"));
	rn_rma_close(o.g);
}

/*
 * The init WARN: NCCL's own GDAKI (mlx5) or another NCCL_RMA_PLUGIN would take the
 * device-API traffic. Said only where it matters (a refused NIC, or NCCL's GID choice not
 * ours: here a VLAN's entry below the NIC's own address), and not with NCCL_GIN_TYPE=2.
 */
static void bypass_is_said_where_it_matters(void **state)
{
	struct fx *f = *state;
	struct rn_engine *eng = &f->eng;

	strcpy(f->devs[0].nic.ibdev, "mlx5_0");
	eng->ndevs = 1;
	rn_rma_bypass_check(eng, 0, NULL); /* net_ib would pick index 1 too: nothing to say */
	assert_int_equal(fx_nwarn, 0);
	/* a VLAN's address at index 1, the NIC's own at 2 (where we send from) */
	f->fdevs[0].ports[0].gids[1] = (struct fake_gid){ "198.18.1.2", IBV_GID_TYPE_ROCE_V2, 7 };
	f->fdevs[0].ports[0].gids[2] = (struct fake_gid){ "198.18.0.1", IBV_GID_TYPE_ROCE_V2, 2 };
	f->devs[0].nic.gid_index = 2;
	rn_rma_bypass_check(eng, 0, NULL);
	assert_int_equal(fx_nwarn, 1);
	assert_true(fx_warn_seen("NCCL 2.30 runs device-API (GIN) kernels on mlx5 through its own "
				 "GDAKI backend"));
	assert_true(fx_warn_seen("mlx5_0:1: NCCL's would send from GID index 1 where this plugin "
				 "sends from 2"));
	assert_true(fx_warn_seen("set NCCL_GIN_TYPE=2 to run GIN through the proxy over this "
				 "plugin, or NCCL_GIN_ENABLE=0"));
	eng->cfg.gin_type = 2; /* the proxy: over our RMA */
	rn_rma_bypass_check(eng, 0, NULL);
	assert_int_equal(fx_nwarn, 1);
	/* another RMA backend named, and a NIC refused */
	snprintf(eng->cfg.rma_plugin, sizeof(eng->cfg.rma_plugin), "libnccl-rma-other.so");
	rn_rma_bypass_check(eng, 1, "rxe1:1 eth1 no-rule");
	assert_int_equal(fx_nwarn, 2);
	assert_true(fx_warn_seen("NCCL_RMA_PLUGIN=libnccl-rma-other.so: NCCL 2.30 runs its "
				 "one-sided traffic"));
	assert_true(fx_warn_seen("this plugin refused rxe1:1 eth1 no-rule"));
	snprintf(eng->cfg.rma_plugin, sizeof(eng->cfg.rma_plugin), "roce");
	rn_rma_bypass_check(eng, 1, "rxe1:1 eth1 no-rule");
	assert_int_equal(fx_nwarn, 2);
	strcpy(f->devs[0].nic.ibdev, "rxe0");
	eng->ndevs = FX_DEVS;
}

/* ---- the mesh, two ranks in two threads ---- */

struct rank_arg {
	struct fx *f;
	int rank, nranks;
	void **h;
	struct rn_rma_listen *l;
	int ret;
	struct rn_rma_coll *g;
};

static void *rank_main(void *p)
{
	struct rank_arg *a = p;

	a->ret = rn_rma_connect(&a->f->eng, a->h, a->nranks, a->rank, a->l, &a->g);
	return NULL;
}

/* A stranger connects first and sends junk; both ranks still find each other. */
static void two_ranks_mesh_past_a_stranger(void **state)
{
	struct fx *f = *state;
	unsigned char h0[RN_RMA_HANDLE_SIZE], h1[RN_RMA_HANDLE_SIZE];
	void *h[2] = { h0, h1 };
	struct rank_arg a[2];
	struct sockaddr_in sa = { .sin_family = AF_INET };
	pthread_t t[2];
	int k, s;

	memset(a, 0, sizeof(a));
	for (k = 0; k < 2; k++) {
		a[k] = (struct rank_arg){ .f = f, .rank = k, .nranks = 2, .h = h };
		assert_int_equal(rn_rma_listen(&f->eng, k, h[k], &a[k].l), 0);
	}
	/* the handle's address: 16 bytes in, after magic and nonce (family, port, addr) */
	memcpy(&sa.sin_port, h0 + 18, 2);
	memcpy(&sa.sin_addr, h0 + 20, 4);
	s = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(send(s, "GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxx", 30, 0), 30);
	for (k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&t[k], NULL, rank_main, &a[k]), 0);
	for (k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	close(s);
	for (k = 0; k < 2; k++) {
		assert_int_equal(a[k].ret, 0);
		assert_non_null(a[k].g);
		rn_rma_close(a[k].g);
		rn_rma_close_listen(a[k].l);
	}
	assert_true(fx_info_seen("dropped a connection that is no rank of this group"));
	assert_true(fx_info_seen("RMA group of 2 ranks on rxe0:1 (rank 0) connected"));
}

/* Rank 1 never comes: rank 0's connect ends within its bound, naming what it missed. */
static void missing_rank_times_out(void **state)
{
	struct fx *f = *state;
	unsigned char h0[RN_RMA_HANDLE_SIZE], h1[RN_RMA_HANDLE_SIZE];
	void *h[2] = { h0, h1 };
	struct rn_rma_listen *l0, *l1;
	struct rn_rma_coll *g = (void *)1;
	uint64_t t0;

	f->eng.cfg.connect_timeout_ms = 1000;
	assert_int_equal(rn_rma_listen(&f->eng, 0, h0, &l0), 0);
	assert_int_equal(rn_rma_listen(&f->eng, 1, h1, &l1), 0);
	t0 = rn_now_ns();
	assert_int_equal(rn_rma_connect(&f->eng, h, 2, 0, l0, &g), -ETIMEDOUT);
	assert_true(rn_now_ns() - t0 < 3000000000ull);
	assert_null(g);
	assert_true(fx_warn_seen("RMA connect: 1 of 1 ranks reached and 0 of 1 heard from "
				 "within 1000 ms"));
	rn_rma_close_listen(l0);
	rn_rma_close_listen(l1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(put_signal_get_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(full_window_of_signalled_puts, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_input_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(failed_completion_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_pair_fails_the_context, setup, teardown),
		cmocka_unit_test_setup_teardown(no_atomics_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(bypass_is_said_where_it_matters, setup, teardown),
		cmocka_unit_test_setup_teardown(two_ranks_mesh_past_a_stranger, setup, teardown),
		cmocka_unit_test_setup_teardown(missing_rank_times_out, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
