// SPDX-License-Identifier: MIT
/*
 * The RDMA reachability probe of `peer`: one RC connection per NIC pair through
 * the library's own transport (rn_listen/rn_connect/rn_accept, the plugin's
 * handshake and QP setup) and one small message (rn_isend/rn_irecv/rn_test), with
 * a short QP timeout and retry count so a broken path answers in seconds, not the
 * ~30 s of NCCL's defaults.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor_probe.h"
#include "rn_conn.h"
#include "rn_net.h"

#define PROBE_MSG 64
#define PROBE_TAG 0x5244
#define BW_TAG 0x5242

/*
 * The probe's own engine over the devices the doctor discovered and judged: the
 * knobs below are set in its config, never in the environment, and nothing is
 * discovered twice. One per doctor context (d->probe), so that threads with contexts of
 * their own (the mesh's serve side and its RC prober) never share one.
 */
struct rn_probe_eng {
	struct rn_engine eng;
	int state; /* 0 not made, 1 ready, -errno failed */
};

static void probe_config(const struct rn_config *user, int streams, struct rn_config *cfg)
{
	*cfg = *user;
	/*
	 * 4.096 us * 2^14 = 67 ms per try, 3 retries: a dead path fails in well under 1 s,
	 * unless the user asked for other values. A bandwidth stream (8 x 256 KiB in flight)
	 * gets 537 ms and 6 retries: a lost packet costs a retransmission, as it does NCCL's
	 * QPs (NCCL_IB_TIMEOUT 20), not an error that counts the pair slow; a dead path still
	 * fails in under 4 s.
	 */
	if (!getenv("NCCL_IB_TIMEOUT"))
		cfg->timeout = streams ? 17 : 14;
	if (!getenv("NCCL_IB_RETRY_CNT"))
		cfg->retry_cnt = streams ? 6 : 3;
	if (!getenv("NCCL_ROCE_CONNECT_TIMEOUT_MS"))
		cfg->connect_timeout_ms = 8000;
	/* The probe tests the wire: the route verdict is the doctor's own report. */
	cfg->route_check = RN_ROUTE_CHECK_WARN;
	/* and the pair it names: a move to a sibling NIC would hide a broken one */
	cfg->failover = 0;
}

static int engine(struct rn_doctor *d, struct rn_engine **out)
{
	struct rn_probe_eng *pe = d->probe;

	if (!pe) {
		pe = calloc(1, sizeof(*pe));
		if (!pe)
			return -ENOMEM;
		d->probe = pe;
	}
	if (!pe->state) {
		struct rn_config cfg;

		probe_config(&d->cfg, d->probe_streams, &cfg);
		pe->state = rn_engine_init_with(&pe->eng, &cfg, d->hostname, d->devs, d->ndevs);
		if (!pe->state)
			pe->state = 1;
	}
	*out = pe->state == 1 ? &pe->eng : NULL;
	return pe->state == 1 ? 0 : pe->state;
}

void rn_probe_release(struct rn_doctor *d)
{
	struct rn_probe_eng *pe = d->probe;
	struct rn_conn_counts n;

	if (!pe)
		return;
	/* a probe that gave up left its connect or listener: they go before the devices */
	if (pe->state == 1)
		rn_conn_close_all(&pe->eng, &n);
	/* the devices are the doctor's: nothing else to free, only forget them */
	free(pe);
	d->probe = NULL;
}

int rn_probe_available(const struct rn_doctor *d, int nic)
{
	const struct rn_doctor_nic *dn = &d->nics[nic];

	return dn->dev && dn->nic.gid_index >= 0 && dn->nic.link_up;
}

int rn_probe_eng_dev(struct rn_doctor *d, int nic, struct rn_engine **eng, char *why, size_t len)
{
	const struct rn_nic *want = &d->nics[nic].nic;
	int ret = engine(d, eng), k;

	if (ret) {
		snprintf(why, len, "the transport did not start: %s%s%s", strerror(-ret),
			 rn_doctor_last_warn()[0] ? ": " : "", rn_doctor_last_warn());
		return ret;
	}
	for (k = 0; k < (*eng)->ndevs; k++)
		if (!strcmp((*eng)->devs[k]->nic.ibdev, want->ibdev) &&
		    (*eng)->devs[k]->nic.port == want->port)
			return k;
	snprintf(why, len, "%s:%d is not among the transport's devices", want->ibdev, want->port);
	return -ENODEV;
}

static const char *err_why(int ret, const char *what, char *why, size_t len)
{
	const char *w = rn_doctor_last_warn();

	snprintf(why, len, "%s: %s%s%s", what, strerror(-ret), w[0] ? "; " : "", w);
	return why;
}

static int expired(double deadline)
{
	return rn_doctor_now_ms() > deadline;
}

/* Poll @req as NCCL would, napping between rounds, until done or @deadline. */
static int wait_done(struct rn_req *req, int *sizes, double deadline)
{
	int done = 0, ret;

	while (!(ret = rn_test(req, &done, sizes)) && !done) {
		if (expired(deadline))
			return -ETIMEDOUT;
		usleep(100);
	}
	return ret;
}

/* ---- the bandwidth stream ---------------------------------------------------------------- */

int rn_bw_start(struct rn_bw_side *x, int sender, void *comm, double cap_ms)
{
	int ret;

	memset(x, 0, sizeof(*x));
	x->sender = sender;
	x->comm = comm;
	x->cap_ms = cap_ms;
	x->count = (int)(RN_BW_BYTES / RN_BW_MSG);
	x->buf = calloc(RN_BW_WINDOW, RN_BW_MSG);
	if (!x->buf)
		return -ENOMEM;
	ret = rn_reg_mr(comm, x->buf, RN_BW_WINDOW * RN_BW_MSG, RN_PTR_HOST, &x->mr);
	if (ret) {
		free(x->buf);
		x->buf = NULL;
	}
	return ret;
}

/* Post into a free slot @s: a message (or, past the cap, an empty one) or a receive. */
static int bw_post(struct rn_bw_side *x, int s, double now)
{
	char *slot = x->buf + (size_t)s * RN_BW_MSG;
	void *data = slot;
	size_t size = RN_BW_MSG;
	int tag = BW_TAG, ret;

	if (!x->sender)
		return rn_irecv(x->comm, 1, &data, &size, &tag, &x->mr, &x->reqs[s]);
	if (x->posted && now - x->t0 > x->cap_ms) {
		size = 0;
		x->capped = 1;
	}
	ret = rn_isend(x->comm, slot, size, BW_TAG, x->mr, &x->reqs[s]);
	/* the clock starts when the receiver is ready: the first isend it takes */
	if (!ret && x->reqs[s] && !x->posted)
		x->t0 = now;
	x->sizes[s] = size;
	return ret;
}

int rn_bw_step(struct rn_bw_side *x)
{
	int s, ret, done, size, blocked = 0;

	for (s = 0; s < RN_BW_WINDOW; s++) {
		if (!x->reqs[s] && x->posted < x->count && !blocked) {
			ret = bw_post(x, s, rn_doctor_now_ms());
			if (ret)
				return ret;
			/* not taken yet (no receive posted): the next cannot go before it */
			blocked = !x->reqs[s];
			if (!x->reqs[s])
				continue;
			if (!x->sender && !x->posted)
				x->t0 = rn_doctor_now_ms();
			x->posted++;
		}
		if (!x->reqs[s])
			continue;
		done = 0;
		size = 0;
		ret = rn_test(x->reqs[s], &done, &size);
		if (ret)
			return ret;
		if (!done)
			continue;
		x->reqs[s] = NULL;
		x->done++;
		x->bytes += x->sender ? x->sizes[s] : (uint64_t)RN_MAX(size, 0);
		x->t1 = rn_doctor_now_ms();
	}
	return x->done == x->count ? 0 : -EAGAIN;
}

void rn_bw_end(struct rn_bw_side *x)
{
	if (x->mr)
		rn_dereg_mr(x->comm, x->mr);
	free(x->buf);
	x->mr = NULL;
	x->buf = NULL;
}

double rn_bw_gbps(const struct rn_bw_side *x)
{
	double ms = x->t1 - x->t0;

	if (!x->done)
		return 0;
	return (double)x->bytes * 8 / (RN_MAX(ms, 0.001) * 1e6);
}

/* One side of the stream on @comm by @deadline; the sender's figures into @bw. */
static int stream(void *comm, int sender, double deadline, struct rn_probe_bw *bw, char *why,
		  size_t len)
{
	struct rn_bw_side x;
	int ret = rn_bw_start(&x, sender, comm,
			      RN_MIN((double)RN_BW_CAP_MS, deadline - rn_doctor_now_ms() - 1000));

	if (ret) {
		err_why(ret, "bandwidth: register", why, len);
		return ret;
	}
	while ((ret = rn_bw_step(&x)) == -EAGAIN) {
		if (expired(deadline)) {
			ret = -ETIMEDOUT;
			break;
		}
		/* busy, as NCCL's proxy thread: a nap would be the figure */
	}
	if (ret)
		err_why(ret, sender ? "bandwidth: send" : "bandwidth: receive", why, len);
	if (bw) {
		bw->ret = ret;
		bw->bytes = x.bytes;
		bw->ms = x.t1 - x.t0;
		bw->gbps = rn_bw_gbps(&x);
		bw->capped = x.capped;
	}
	rn_bw_end(&x);
	return ret;
}

int rn_probe_listen(struct rn_doctor *d, int nic, void *handle, struct rn_probe_srv *srv, char *why,
		    size_t len)
{
	struct rn_engine *eng;
	int dev, ret;

	why[0] = '\0';
	memset(srv, 0, sizeof(*srv));
	memset(handle, 0, RN_HANDLE_SIZE);
	rn_doctor_clear_warn();
	dev = rn_probe_eng_dev(d, nic, &eng, why, len);
	if (dev < 0)
		return dev;
	ret = rn_listen(eng, dev, handle, &srv->lc);
	if (ret)
		err_why(ret, "listen", why, len);
	return ret;
}

int rn_probe_accept_ping(struct rn_probe_srv *srv, int timeout_ms, int bw, char *why, size_t len)
{
	struct rn_recv_comm *rc = NULL;
	struct rn_mr *mr = NULL;
	struct rn_req *req = NULL;
	double deadline = rn_doctor_now_ms() + timeout_ms;
	char buf[PROBE_MSG] = { 0 };
	void *data = buf;
	size_t size = sizeof(buf);
	int tag = PROBE_TAG, sizes = 0, ret = 0;

	why[0] = '\0';
	if (!srv->lc)
		return -EINVAL;
	while (!rc && !ret) {
		ret = rn_accept(srv->lc, &rc);
		if (!ret && !rc && expired(deadline))
			ret = -ETIMEDOUT;
		if (!rc && !ret)
			usleep(200);
	}
	if (ret) {
		err_why(ret, "accept", why, len);
		goto out;
	}
	ret = rn_reg_mr(rc, buf, sizeof(buf), RN_PTR_HOST, &mr);
	if (ret) {
		err_why(ret, "register", why, len);
		goto out;
	}
	while (!req && !ret) {
		ret = rn_irecv(rc, 1, &data, &size, &tag, &mr, &req);
		if (!ret && !req && expired(deadline))
			ret = -ETIMEDOUT;
	}
	if (!ret)
		ret = wait_done(req, &sizes, deadline);
	/* retries exhausted: the wire did not answer, as our own deadline says */
	if (ret == -EREMOTEIO && rn_recv_wc_status(rc) == IBV_WC_RETRY_EXC_ERR)
		ret = -ETIMEDOUT;
	if (ret)
		err_why(ret, "receive", why, len);
	else if (sizes != PROBE_MSG || memcmp(buf, "roce-doctor ping", 16))
		snprintf(why, len, "received %d bytes that are not the ping", sizes),
			ret = -EBADMSG;
	/* the stream's figures are the sender's; a failure here is the sender's too */
	else if (bw)
		stream(rc, 0, deadline, NULL, why, len);
out:
	if (mr)
		rn_dereg_mr(rc, mr);
	if (rc)
		rn_close_recv(rc);
	rn_probe_srv_close(srv);
	return ret;
}

void rn_probe_srv_close(struct rn_probe_srv *srv)
{
	if (srv->lc)
		rn_close_listen(srv->lc);
	srv->lc = NULL;
}

int rn_probe_client(struct rn_doctor *d, int nic, const void *handle_in, int timeout_ms,
		    struct rn_probe_bw *bw, char *why, size_t len)
{
	uint8_t handle[RN_HANDLE_SIZE];
	struct rn_send_comm *sc = NULL;
	struct rn_mr *mr = NULL;
	struct rn_req *req = NULL;
	struct rn_engine *eng;
	double deadline = rn_doctor_now_ms() + timeout_ms;
	char buf[PROBE_MSG] = "roce-doctor ping";
	int sizes = 0, dev, ret = 0;

	why[0] = '\0';
	rn_doctor_clear_warn();
	memcpy(handle, handle_in, sizeof(handle));
	dev = rn_probe_eng_dev(d, nic, &eng, why, len);
	if (dev < 0)
		return dev;
	while (!sc && !ret) {
		ret = rn_connect(eng, dev, handle, -1, &sc);
		if (!ret && !sc && expired(deadline))
			ret = -ETIMEDOUT;
		if (!sc && !ret)
			usleep(200);
	}
	if (ret) {
		err_why(ret, "connect", why, len);
		goto out;
	}
	ret = rn_reg_mr(sc, buf, sizeof(buf), RN_PTR_HOST, &mr);
	if (ret) {
		err_why(ret, "register", why, len);
		goto out;
	}
	while (!req && !ret) {
		ret = rn_isend(sc, buf, sizeof(buf), PROBE_TAG, mr, &req);
		if (!ret && !req && expired(deadline))
			ret = -ETIMEDOUT;
		if (!ret && !req)
			usleep(100);
	}
	if (!ret)
		ret = wait_done(req, &sizes, deadline);
	/* retries exhausted: the wire did not answer, as our own deadline says */
	if (ret == -EREMOTEIO && rn_send_wc_status(sc) == IBV_WC_RETRY_EXC_ERR)
		ret = -ETIMEDOUT;
	if (ret)
		err_why(ret, "send", why, len);
	else if (bw && bw->want && stream(sc, 1, deadline, bw, bw->why, sizeof(bw->why)))
		bw->ret = bw->ret ? bw->ret : -EIO;
out:
	if (mr)
		rn_dereg_mr(sc, mr);
	if (sc)
		rn_close_send(sc);
	return ret;
}
