// SPDX-License-Identifier: MIT
/*
 * Device async events. One thread per device that has comms (started with the
 * first comm, joined with the last) sleeps in poll() on the device's async fd and
 * a wake pipe, reads every event and acknowledges it at once. At once matters:
 * ibv_destroy_qp()/destroy_cq() wait until every event of their object has been
 * acknowledged, so an unread event would hang NCCL's close.
 *
 * QP and CQ events mark the comm that owns the object (qp_context/cq_context,
 * alive while its destroy waits for our ack); port and device events mark the
 * device. The data path only reads those flags: no system call in test().
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_clock.h"
#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_log.h"
#include "rn_verbs.h"

struct rn_evdev {
	struct rn_dev *dev;
	struct ibv_context *ctx;
	int refs;
	pthread_t thread;
	int wake[2];
	int stop;                     /* atomic */
	pthread_mutex_t lock;         /* one reader of the async fd at a time */
	int fatal;                    /* atomic */
	uint64_t down_since[32];      /* atomic; per port: CLOCK_MONOTONIC ns of PORT_ERR, 0 = up */
};

static struct rn_evdev *evdevs[RN_MAX_DEVS * 4];
static pthread_mutex_t tbl_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *event_str(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR: return "CQ_ERR";
	case IBV_EVENT_QP_FATAL: return "QP_FATAL";
	case IBV_EVENT_QP_REQ_ERR: return "QP_REQ_ERR";
	case IBV_EVENT_QP_ACCESS_ERR: return "QP_ACCESS_ERR";
	case IBV_EVENT_COMM_EST: return "COMM_EST";
	case IBV_EVENT_SQ_DRAINED: return "SQ_DRAINED";
	case IBV_EVENT_PATH_MIG: return "PATH_MIG";
	case IBV_EVENT_PATH_MIG_ERR: return "PATH_MIG_ERR";
	case IBV_EVENT_DEVICE_FATAL: return "DEVICE_FATAL";
	case IBV_EVENT_PORT_ACTIVE: return "PORT_ACTIVE";
	case IBV_EVENT_PORT_ERR: return "PORT_ERR";
	case IBV_EVENT_LID_CHANGE: return "LID_CHANGE";
	case IBV_EVENT_PKEY_CHANGE: return "PKEY_CHANGE";
	case IBV_EVENT_SM_CHANGE: return "SM_CHANGE";
	case IBV_EVENT_SRQ_ERR: return "SRQ_ERR";
	case IBV_EVENT_SRQ_LIMIT_REACHED: return "SRQ_LIMIT_REACHED";
	case IBV_EVENT_QP_LAST_WQE_REACHED: return "QP_LAST_WQE_REACHED";
	case IBV_EVENT_CLIENT_REREGISTER: return "CLIENT_REREGISTER";
	case IBV_EVENT_GID_CHANGE: return "GID_CHANGE";
	case IBV_EVENT_WQ_FATAL: return "WQ_FATAL";
	}
	return "UNKNOWN";
}

static void handle(struct rn_evdev *e, const struct ibv_async_event *ev)
{
	const char *name = e->dev->nic.ibdev;
	struct rn_comm *c = NULL;

	switch (ev->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		c = ev->element.qp ? ev->element.qp->qp_context : NULL;
		break;
	case IBV_EVENT_CQ_ERR:
		c = ev->element.cq ? ev->element.cq->cq_context : NULL;
		break;
	case IBV_EVENT_DEVICE_FATAL:
		__atomic_store_n(&e->fatal, 1, __ATOMIC_RELEASE);
		rn_warn(RN_SUB_NET, RN_PFX "%s: async event DEVICE_FATAL", name);
		return;
	case IBV_EVENT_PORT_ERR:
		/*
		 * As net_ib: a port event fails nothing by itself. A flap shorter than the
		 * QPs' retry budget costs only retransmissions; a port that stays down fails
		 * busy comms through their completions and idle ones through the grace
		 * period the data path checks (rn_events_port_down_ns).
		 */
		if (ev->element.port_num < 32) {
			uint64_t zero = 0;

			/* a repeated PORT_ERR keeps the first time: the outage began then */
			__atomic_compare_exchange_n(&e->down_since[ev->element.port_num], &zero,
						    rn_now_ns(), 0, __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
		}
		rn_warn(RN_SUB_NET, RN_PFX "%s:%d: async event PORT_ERR (link down); its comms "
			"survive if it is back within their QP retry budget", name,
			ev->element.port_num);
		return;
	case IBV_EVENT_PORT_ACTIVE:
		if (ev->element.port_num < 32)
			__atomic_store_n(&e->down_since[ev->element.port_num], 0,
					 __ATOMIC_RELEASE);
		rn_info(RN_SUB_NET, RN_PFX "%s:%d: async event PORT_ACTIVE", name,
			ev->element.port_num);
		return;
	default:
		rn_info(RN_SUB_NET, RN_PFX "%s: async event %s", name, event_str(ev->event_type));
		return;
	}
	rn_warn(RN_SUB_NET, RN_PFX "%s: async event %s on the comm with %s (%s)", name,
		event_str(ev->event_type), c ? c->peer_str : "?", c ? c->peer.host : "?");
	if (c)
		__atomic_store_n(&c->async_err, -EIO, __ATOMIC_RELEASE);
}

void rn_events_poll(struct rn_evdev *e)
{
	struct ibv_async_event ev;
	int i;

	if (!e || pthread_mutex_trylock(&e->lock))
		return; /* the other reader is at it */
	for (i = 0; i < 64; i++) {
		memset(&ev, 0, sizeof(ev));
		if (rn_verbs.get_async_event(e->ctx, &ev))
			break; /* EAGAIN: the fd is non-blocking */
		handle(e, &ev);
		rn_verbs.ack_async_event(&ev);
	}
	pthread_mutex_unlock(&e->lock);
}

static void *events_thread(void *arg)
{
	struct rn_evdev *e = arg;
	struct pollfd p[2];

	p[0].fd = e->ctx->async_fd;
	p[0].events = POLLIN;
	p[1].fd = e->wake[0];
	p[1].events = POLLIN;
	while (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE)) {
		/* a context without an fd (test fakes) is simply looked at every 20 ms */
		if (poll(p, 2, p[0].fd >= 0 ? -1 : 20) < 0 && errno != EINTR)
			break;
		if (!__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
			rn_events_poll(e);
	}
	return NULL;
}

struct rn_evdev *rn_events_get(struct rn_dev *dev)
{
	struct rn_evdev *e = NULL;
	size_t i, slot = RN_ARRAY_SIZE(evdevs);
	int fl;

	pthread_mutex_lock(&tbl_lock);
	for (i = 0; i < RN_ARRAY_SIZE(evdevs); i++) {
		if (evdevs[i] && evdevs[i]->dev == dev && evdevs[i]->ctx == dev->ctx) {
			e = evdevs[i];
			e->refs++;
			goto out;
		}
		if (!evdevs[i] && slot == RN_ARRAY_SIZE(evdevs))
			slot = i;
	}
	if (slot == RN_ARRAY_SIZE(evdevs))
		goto out;
	e = calloc(1, sizeof(*e));
	if (!e)
		goto out;
	e->dev = dev;
	e->ctx = dev->ctx;
	e->refs = 1;
	pthread_mutex_init(&e->lock, NULL);
	if (pipe2(e->wake, O_NONBLOCK | O_CLOEXEC))
		goto fail;
	if (e->ctx->async_fd >= 0) {
		fl = fcntl(e->ctx->async_fd, F_GETFL);
		if (fl < 0 || fcntl(e->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
			goto fail_pipe;
	}
	if (pthread_create(&e->thread, NULL, events_thread, e))
		goto fail_pipe;
	evdevs[slot] = e;
	goto out;
fail_pipe:
	close(e->wake[0]);
	close(e->wake[1]);
fail:
	rn_warn(RN_SUB_NET, RN_PFX "%s: cannot watch async events: %s", dev->nic.ibdev,
		strerror(errno));
	pthread_mutex_destroy(&e->lock);
	free(e);
	e = NULL;
out:
	pthread_mutex_unlock(&tbl_lock);
	return e;
}

void rn_events_put(struct rn_evdev *e)
{
	size_t i;
	char c = 1;

	if (!e)
		return;
	pthread_mutex_lock(&tbl_lock);
	if (--e->refs > 0) {
		pthread_mutex_unlock(&tbl_lock);
		return;
	}
	for (i = 0; i < RN_ARRAY_SIZE(evdevs); i++)
		if (evdevs[i] == e)
			evdevs[i] = NULL;
	pthread_mutex_unlock(&tbl_lock);
	__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
	if (write(e->wake[1], &c, 1) < 0) {
		/* cannot happen (one byte into an empty pipe); poll()'s timeout is not relied on */
	}
	pthread_join(e->thread, NULL);
	rn_events_poll(e); /* nothing stays unacknowledged */
	close(e->wake[0]);
	close(e->wake[1]);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

int rn_events_dev_err(const struct rn_evdev *e, int port)
{
	if (!e)
		return 0;
	if (__atomic_load_n(&e->fatal, __ATOMIC_ACQUIRE))
		return -EIO;
	if (port >= 0 && port < 32 && __atomic_load_n(&e->down_since[port], __ATOMIC_ACQUIRE))
		return -ENETDOWN;
	return 0;
}

int rn_events_dev_fatal(const struct rn_evdev *e)
{
	return e && __atomic_load_n(&e->fatal, __ATOMIC_ACQUIRE) ? -EIO : 0;
}

uint64_t rn_events_port_down_ns(const struct rn_evdev *e, int port, uint64_t now)
{
	uint64_t since;

	if (!e || port < 0 || port >= 32)
		return 0;
	since = __atomic_load_n(&e->down_since[port], __ATOMIC_ACQUIRE);
	if (!since)
		return 0;
	return now > since ? now - since : 1;
}
