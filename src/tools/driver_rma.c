// SPDX-License-Identifier: MIT
/*
 * nccl-net-driver rma: drive the plugin's ncclRmaPlugin_v14 as NCCL 2.30.7's RMA proxy
 * does (rma/rma_proxy.cc, rma_proxy_progress.cc), one process per rank, no GPU:
 *   net init (NCCL's net context, which NCCL hands the RMA connect), RMA init, devices,
 *   getProperties, listen, the handles' allgather (NCCL's bootstrap: here rank 0's side
 *   channel), the collective connect, closeListen, createContext, symmetric registrations,
 *   then --rounds rounds of: a put with a signal to every rank (itself included: NCCL's
 *   flush is a put to itself), the signals awaited and every byte checked, a get from
 *   every rank checked, a flush to every rank, and a signal without data to every rank
 *   (ncclSignal) that orders the rounds. Then a put bandwidth figure (rank 0 to rank 1)
 *   and the teardown in NCCL's order.
 * Every wait is bounded by --timeout-ms; a plugin error or a wrong byte exits 1.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>

#include "driver_rma.h"
#include "nccl/rma_abi.h"
#include "rn_cli.h"
#include "tool_common.h"

#define HSIZE NCCL_NET_HANDLE_MAXSIZE

struct rma_run {
	const struct driver_rma_opts *o;
	const ncclRma_v14_t *t;
	void *coll, *ctx;
	int n, me;
	size_t size;
	unsigned char *src, *dst, *got;
	uint64_t *sig; /* [3n]: data signals from each rank, round-end signals, last signals */
	void *src_mh, *dst_mh, *got_mh, *sig_mh;
	long puts, gets, signals, flushes;
};

static void rsay(const struct rma_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void rsay(const struct rma_run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("nccl-net-driver: rma rank %d: ", r->me);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static int bad(const struct rma_run *r, const char *what, ncclResult_t res)
{
	const char *w = tool_last_warn();

	rsay(r, "%s failed: %s%s%s", what, netplug_result_str(res), w && *w ? "; last WARN: " : "",
	     w ? w : "");
	return RN_EXIT_FAIL;
}

/* NCCL's bootstrap allgather of the listen handles, through rank 0's side channel. */
static int handles_allgather(struct rma_run *r, unsigned char *all)
{
	int tmo = r->o->timeout_ms, i, fd, ret = 0;
	uint32_t rank;

	if (r->me == 0) {
		int lfd = side_listen(r->o->addr), *fds = calloc((size_t)r->n, sizeof(int));

		if (lfd < 0 || !fds) {
			rsay(r, "side channel %s: %s", r->o->addr,
			     strerror(lfd < 0 ? -lfd : ENOMEM));
			free(fds);
			return -1;
		}
		for (i = 1; i < r->n; i++) {
			unsigned char h[4 + HSIZE];

			fd = side_accept(lfd, tmo);
			if (fd < 0 || side_recv(fd, h, sizeof(h), tmo)) {
				rsay(r, "side channel: %d of %d ranks came within %d ms", i - 1,
				     r->n - 1, tmo);
				ret = -1;
				break;
			}
			memcpy(&rank, h, 4);
			if (rank < 1 || rank >= (uint32_t)r->n || fds[rank]) {
				rsay(r, "side channel: a stranger or a rank twice (%u)", rank);
				close(fd);
				i--;
				continue;
			}
			fds[rank] = fd;
			memcpy(all + (size_t)rank * HSIZE, h + 4, HSIZE);
		}
		for (i = 1; !ret && i < r->n; i++)
			if (side_send(fds[i], all, (size_t)r->n * HSIZE, tmo))
				ret = -1;
		for (i = 1; i < r->n; i++)
			if (fds[i] > 0)
				close(fds[i]);
		free(fds);
		close(lfd);
		return ret;
	}
	fd = side_connect(r->o->addr, tmo);
	if (fd < 0) {
		rsay(r, "side channel %s: %s", r->o->addr, strerror(-fd));
		return -1;
	}
	{
		unsigned char h[4 + HSIZE];

		rank = (uint32_t)r->me;
		memcpy(h, &rank, 4);
		memcpy(h + 4, all + (size_t)r->me * HSIZE, HSIZE);
		ret = side_send(fd, h, sizeof(h), tmo) ||
				      side_recv(fd, all, (size_t)r->n * HSIZE, tmo) ?
			      -1 :
			      0;
	}
	close(fd);
	if (ret)
		rsay(r, "side channel: no handles from rank 0 within %d ms", tmo);
	return ret;
}

/* Test @reqs until all are done, bounded. */
static int wait_reqs(struct rma_run *r, void **reqs, int n, const char *what)
{
	double deadline = tool_now() + r->o->timeout_ms / 1000.0;
	int left = n, i, done;

	while (left) {
		for (i = 0; i < n; i++) {
			ncclResult_t res;

			if (!reqs[i])
				continue;
			res = r->t->test(r->coll, reqs[i], &done);
			if (res != ncclSuccess)
				return bad(r, what, res);
			if (done) {
				reqs[i] = NULL;
				left--;
			}
		}
		if (left && tool_now() > deadline) {
			rsay(r, "%s: %d of %d requests not done within %d ms", what, left, n,
			     r->o->timeout_ms);
			return RN_EXIT_FAIL;
		}
		if (left && r->t->rmaProgress)
			r->t->rmaProgress(r->ctx);
	}
	return 0;
}

/* Our signal word @k reaches @want (the NIC writes it), bounded. */
static int wait_signal(struct rma_run *r, int k, uint64_t want, const char *what)
{
	double deadline = tool_now() + r->o->timeout_ms / 1000.0;

	while (__atomic_load_n(&r->sig[k], __ATOMIC_ACQUIRE) < want) {
		bool err = false;

		if (r->t->queryLastError && r->t->queryLastError(r->ctx, &err) == ncclSuccess &&
		    err) {
			rsay(r, "%s: the plugin reports an error (queryLastError)", what);
			return RN_EXIT_FAIL;
		}
		if (tool_now() > deadline) {
			rsay(r, "%s: signal %d at %llu, want %llu, after %d ms", what, k,
			     (unsigned long long)r->sig[k], (unsigned long long)want,
			     r->o->timeout_ms);
			return RN_EXIT_FAIL;
		}
		tool_nap(50);
	}
	if (r->sig[k] != want) {
		/* more than every add sent so far: one landed twice (a responder that ran a
		 * retransmitted FETCH_AND_ADD again) or at the wrong word */
		rsay(r, "%s: signal %d is %llu, want %llu: %llu more than the adds sent", what, k,
		     (unsigned long long)r->sig[k], (unsigned long long)want,
		     (unsigned long long)(r->sig[k] - want));
		return RN_EXIT_FAIL;
	}
	return 0;
}

static uint64_t pattern_id(int rank, int round)
{
	return 0x524d4100000000ull | ((uint64_t)rank << 16) | (uint64_t)round;
}

static int one_round(struct rma_run *r, int round, void **reqs)
{
	/* odd rounds INC, even ones ADD their number: signal p collects sum over rounds */
	uint32_t op = round % 2 ? NCCL_NET_SIGNAL_OP_INC : NCCL_NET_SIGNAL_OP_ADD;
	uint64_t add = round % 2 ? 1 : (uint64_t)round + 1, want = 0;
	ncclResult_t res;
	char what[64];
	long off;
	int p, k, rc;

	for (k = 0; k <= round; k++)
		want += k % 2 ? 1 : (uint64_t)k + 1;
	tool_fill(r->src, r->size, pattern_id(r->me, round));
	for (p = 0; p < r->n; p++) {
		res = r->t->iputSignal(r->ctx, 0, 0, r->src_mh, r->size, (uint64_t)r->me * r->size,
				       r->dst_mh, (uint32_t)p, (uint64_t)r->me * 8, r->sig_mh, add,
				       op, true, &reqs[p]);
		if (res != ncclSuccess)
			return bad(r, "iputSignal", res);
	}
	if ((rc = wait_reqs(r, reqs, r->n, "iputSignal")))
		return rc;
	for (p = 0; p < r->n; p++) {
		snprintf(what, sizeof(what), "round %d: the signal of rank %d's put", round, p);
		if ((rc = wait_signal(r, p, want, what)))
			return rc;
		off = tool_check(r->dst + (size_t)p * r->size, r->size, pattern_id(p, round));
		if (off >= 0) {
			rsay(r, "round %d: the put from rank %d differs at byte %ld", round, p,
			     off);
			return RN_EXIT_FAIL;
		}
		r->puts++;
		r->signals++;
	}
	/* every rank's source holds this round's pattern until the round-end signals */
	for (p = 0; p < r->n; p++) {
		memset(r->got, 0, r->size);
		res = r->t->iget(r->ctx, 0, 0, r->src_mh, r->size, 0, r->got_mh, (uint32_t)p,
				 &reqs[0]);
		if (res != ncclSuccess)
			return bad(r, "iget", res);
		if ((rc = wait_reqs(r, reqs, 1, "iget")))
			return rc;
		off = tool_check(r->got, r->size, pattern_id(p, round));
		if (off >= 0) {
			rsay(r, "round %d: the get from rank %d differs at byte %ld", round, p,
			     off);
			return RN_EXIT_FAIL;
		}
		r->gets++;
		res = r->t->iflush(r->ctx, 0, r->dst_mh, (uint32_t)p, &reqs[0]);
		if (res != ncclSuccess)
			return bad(r, "iflush", res);
		if ((rc = wait_reqs(r, reqs, 1, "iflush")))
			return rc;
		r->flushes++;
	}
	/* ncclSignal: no data, only the signal; the next round waits for all of them */
	for (p = 0; p < r->n; p++) {
		res = r->t->iputSignal(r->ctx, 0, 0, NULL, 0, 0, NULL, (uint32_t)p,
				       (uint64_t)(r->n + r->me) * 8, r->sig_mh, 1,
				       NCCL_NET_SIGNAL_OP_ADD, false, &reqs[p]);
		if (res != ncclSuccess)
			return bad(r, "iputSignal without data", res);
	}
	if ((rc = wait_reqs(r, reqs, r->n, "iputSignal without data")))
		return rc;
	for (p = 0; p < r->n; p++) {
		snprintf(what, sizeof(what), "round %d: rank %d's round-end signal", round, p);
		if ((rc = wait_signal(r, r->n + p, (uint64_t)round + 1, what)))
			return rc;
		r->signals++;
	}
	return 0;
}

/* Rank 0 puts to rank 1 with NCCL's 32 requests in flight; MB/s. */
static int bandwidth(struct rma_run *r, void **reqs, double *mbps)
{
	long iters = r->o->iters, posted = 0;
	double t0 = tool_now(), deadline = t0 + r->o->timeout_ms / 1000.0;
	int inflight = 0, i, done;

	*mbps = 0;
	while (posted < iters || inflight) {
		int progress = 0;

		for (i = 0; i < NCCL_NET_MAX_REQUESTS; i++) {
			ncclResult_t res;

			if (!reqs[i] && posted < iters) {
				res = r->t->iput(r->ctx, 0, 0, r->src_mh, r->size, 0, r->dst_mh, 1,
						 &reqs[i]);
				if (res != ncclSuccess)
					return bad(r, "iput", res);
				posted++;
				inflight++;
			}
			if (!reqs[i])
				continue;
			res = r->t->test(r->coll, reqs[i], &done);
			if (res != ncclSuccess)
				return bad(r, "test", res);
			if (done) {
				reqs[i] = NULL;
				inflight--;
				progress = 1;
			}
		}
		if (!progress && r->o->nap_us)
			tool_nap(r->o->nap_us);
		if (tool_now() > deadline) {
			rsay(r, "bandwidth: %ld of %ld puts done within %d ms", posted - inflight,
			     iters, r->o->timeout_ms);
			return RN_EXIT_FAIL;
		}
	}
	*mbps = (double)r->size * (double)iters / (tool_now() - t0) / 1e6;
	return 0;
}

static void *page_buf(size_t size)
{
	size_t len = (size + 4095) & ~(size_t)4095;
	void *p = aligned_alloc(4096, len ? len : 4096);

	if (p)
		memset(p, 0, len ? len : 4096);
	return p;
}

int driver_rma(struct netplug *np, void *net_ctx, const struct driver_rma_opts *o)
{
	struct rma_run r = { .o = o, .n = o->ranks, .me = o->rank, .size = o->size };
	ncclRmaConfig_v14_t cfg = { .nContexts = 1, .trafficClass = -1, .rankStride = 1 };
	unsigned char *handles = NULL;
	void **hp = NULL, *rctx = NULL, *lc = NULL, *reqs[NCCL_NET_MAX_REQUESTS] = { NULL };
	ncclNetProperties_v12_t props;
	int ndev = 0, rc = RN_EXIT_FAIL, i;
	ncclResult_t res;
	double mbps = 0;

	r.t = dlsym(np->dl, "ncclRmaPlugin_v14");
	if (!r.t) {
		rsay(&r, "%s has no ncclRmaPlugin_v14: NCCL 2.30.7 would use its internal RMA",
		     np->lib);
		return RN_EXIT_FAIL;
	}
	rsay(&r, "RMA plugin %s found beside net plugin %s (v%d)", r.t->name, np->name,
	     np->version);
	handles = calloc((size_t)r.n, HSIZE);
	hp = calloc((size_t)r.n, sizeof(*hp));
	r.src = page_buf(r.size);
	r.got = page_buf(r.size);
	r.dst = page_buf(r.size * (size_t)r.n);
	r.sig = page_buf(sizeof(uint64_t) * 3 * (size_t)r.n);
	if (!handles || !hp || !r.src || !r.got || !r.dst || !r.sig)
		goto out;
	if ((res = r.t->init(&rctx, 0x524d4100ull, tool_logger)) != ncclSuccess) {
		rc = bad(&r, "init", res);
		goto fin;
	}
	if ((res = r.t->devices(&ndev)) != ncclSuccess || ndev <= o->dev) {
		rsay(&r, "devices: %s, %d (want device %d)", netplug_result_str(res), ndev, o->dev);
		goto fin;
	}
	if ((res = r.t->getProperties(o->dev, &props)) != ncclSuccess) {
		rc = bad(&r, "getProperties", res);
		goto fin;
	}
	rsay(&r, "device %d: %s, netDeviceType %d, maxRecvs %d, ptrSupport %#x", o->dev, props.name,
	     props.netDeviceType, props.maxRecvs, props.ptrSupport);
	if ((res = r.t->listen(rctx, o->dev, handles + (size_t)r.me * HSIZE, &lc)) != ncclSuccess) {
		rc = bad(&r, "listen", res);
		goto fin;
	}
	if (handles_allgather(&r, handles))
		goto fin;
	for (i = 0; i < r.n; i++)
		hp[i] = handles + (size_t)i * HSIZE;
	/* as rma_proxy.cc: NCCL's net context, not the RMA init's */
	res = r.t->connect(net_ctx, hp, r.n, r.me, lc, &r.coll);
	r.t->closeListen(lc);
	lc = NULL;
	if (res != ncclSuccess) {
		rc = bad(&r, "connect", res);
		goto fin;
	}
	if ((res = r.t->createContext(r.coll, &cfg, &r.ctx)) != ncclSuccess) {
		rc = bad(&r, "createContext", res);
		goto close;
	}
	rsay(&r, "group of %d ranks connected, context created", r.n);
	if ((res = r.t->regMrSym(r.coll, r.src, r.size, NCCL_PTR_HOST, 0, &r.src_mh)) ||
	    (res = r.t->regMrSym(r.coll, r.dst, r.size * (size_t)r.n, NCCL_PTR_HOST, 0,
				 &r.dst_mh)) ||
	    (res = r.t->regMrSym(r.coll, r.got, r.size, NCCL_PTR_HOST, 0, &r.got_mh)) ||
	    (res = r.t->regMrSym(r.coll, r.sig, sizeof(uint64_t) * 3 * (size_t)r.n, NCCL_PTR_HOST,
				 NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET, &r.sig_mh))) {
		rc = bad(&r, "regMrSym", res);
		goto dereg;
	}
	for (i = 0; i < o->rounds; i++)
		if ((rc = one_round(&r, i, reqs)))
			goto dereg;
	rsay(&r,
	     "%ld puts, %ld gets, %ld signals and %ld flushes checked over %d rounds of %zu "
	     "bytes",
	     r.puts, r.gets, r.signals, r.flushes, o->rounds, r.size);
	if (r.me == 0 && r.n > 1 && o->iters > 0) {
		if ((rc = bandwidth(&r, reqs, &mbps)))
			goto dereg;
		rsay(&r, "put bandwidth to rank 1: %.1f MB/s (%ld puts of %zu bytes, %d in flight)",
		     mbps, o->iters, r.size, NCCL_NET_MAX_REQUESTS);
	}
	/* the teardown waits for every rank: no QP goes while a peer still puts to it */
	memset(reqs, 0, sizeof(reqs));
	for (i = 0; i < r.n && !rc; i++) {
		res = r.t->iputSignal(r.ctx, 0, 0, NULL, 0, 0, NULL, (uint32_t)i,
				      (uint64_t)(2 * r.n + r.me) * 8, r.sig_mh, 1,
				      NCCL_NET_SIGNAL_OP_INC, false, &reqs[0]);
		if (res != ncclSuccess || (rc = wait_reqs(&r, reqs, 1, "the last signal")))
			rc = rc ? rc : bad(&r, "iputSignal", res);
	}
	for (i = 0; i < r.n && !rc; i++)
		rc = wait_signal(&r, 2 * r.n + i, 1, "the last signal");
	if (!rc)
		rsay(&r, "done");
dereg:
	if (r.sig_mh)
		r.t->deregMrSym(r.coll, r.sig_mh);
	if (r.got_mh)
		r.t->deregMrSym(r.coll, r.got_mh);
	if (r.dst_mh)
		r.t->deregMrSym(r.coll, r.dst_mh);
	if (r.src_mh)
		r.t->deregMrSym(r.coll, r.src_mh);
	if (r.ctx && (res = r.t->destroyContext(r.ctx)) != ncclSuccess && !rc)
		rc = bad(&r, "destroyContext", res);
close:
	if ((res = r.t->closeColl(r.coll)) != ncclSuccess && !rc)
		rc = bad(&r, "closeColl", res);
fin:
	if (lc)
		r.t->closeListen(lc);
	if (rctx && (res = r.t->finalize(rctx)) != ncclSuccess && !rc)
		rc = bad(&r, "finalize", res);
out:
	free(handles);
	free(hp);
	free(r.src);
	free(r.got);
	free(r.dst);
	free(r.sig);
	return rc;
}
