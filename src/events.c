// SPDX-License-Identifier: MIT
/*
 * Device async events, polled (no thread): an idle comm's test() drains its
 * device's async fd, made non-blocking on first use, at most every 100 ms.
 * QP and CQ events go to the comm that owns the object (qp_context/cq_context);
 * libibverbs holds destroy_qp/destroy_cq until the event is acknowledged, so the
 * comm is alive while we mark it. Port and device events mark the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>

#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_log.h"
#include "rn_verbs.h"

struct rn_evdev {
	struct rn_dev *dev;
	struct ibv_context *ctx;
	pthread_mutex_t lock;
	int lock_ready;
	int nonblock;           /* 1 set, -1 could not be set: never read */
	volatile int fatal;
	volatile uint32_t port_down; /* bit per port */
};

static struct rn_evdev evdevs[RN_MAX_DEVS * 2];
static pthread_mutex_t tbl_lock = PTHREAD_MUTEX_INITIALIZER;

struct rn_evdev *rn_events_get(struct rn_dev *dev)
{
	struct rn_evdev *e = NULL;
	size_t i;

	pthread_mutex_lock(&tbl_lock);
	for (i = 0; i < RN_ARRAY_SIZE(evdevs); i++)
		if (evdevs[i].dev == dev && evdevs[i].ctx == dev->ctx) {
			e = &evdevs[i];
			goto out;
		}
	for (i = 0; i < RN_ARRAY_SIZE(evdevs); i++) {
		/* a slot whose device was closed and reopened elsewhere is reused */
		if (!evdevs[i].dev || evdevs[i].dev == dev) {
			e = &evdevs[i];
			if (!e->lock_ready) {
				pthread_mutex_init(&e->lock, NULL);
				e->lock_ready = 1;
			}
			e->dev = dev;
			e->ctx = dev->ctx;
			e->nonblock = 0;
			e->fatal = 0;
			e->port_down = 0;
			break;
		}
	}
out:
	pthread_mutex_unlock(&tbl_lock);
	return e;
}

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
		e->fatal = 1;
		rn_warn(RN_SUB_NET, RN_PFX "%s: async event DEVICE_FATAL", name);
		return;
	case IBV_EVENT_PORT_ERR:
		if (ev->element.port_num < 32)
			__atomic_or_fetch(&e->port_down, 1u << ev->element.port_num,
					  __ATOMIC_RELAXED);
		rn_warn(RN_SUB_NET, RN_PFX "%s:%d: async event PORT_ERR (link down)", name,
			ev->element.port_num);
		return;
	case IBV_EVENT_PORT_ACTIVE:
		if (ev->element.port_num < 32)
			__atomic_and_fetch(&e->port_down, ~(1u << ev->element.port_num),
					   __ATOMIC_RELAXED);
		rn_info(RN_SUB_NET, RN_PFX "%s:%d: async event PORT_ACTIVE", name,
			ev->element.port_num);
		return;
	default:
		rn_info(RN_SUB_NET, RN_PFX "%s: async event %s", name, event_str(ev->event_type));
		return;
	}
	rn_warn(RN_SUB_NET, RN_PFX "%s: async event %s on the comm with %s (%s)", name,
		event_str(ev->event_type), c ? c->peer_str : "?", c ? c->peer.host : "?");
	if (c && !c->async_err)
		c->async_err = -EIO;
}

void rn_events_poll(struct rn_evdev *e)
{
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	int i;

	if (!e || pthread_mutex_trylock(&e->lock))
		return; /* another thread is at it */
	ctx = e->ctx;
	if (!e->nonblock) {
		e->nonblock = 1;
		if (ctx->async_fd >= 0) {
			int fl = fcntl(ctx->async_fd, F_GETFL);

			if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
				e->nonblock = -1; /* a blocking read would hang test() */
		}
	}
	for (i = 0; e->nonblock > 0 && i < 16; i++) {
		memset(&ev, 0, sizeof(ev));
		if (rn_verbs.get_async_event(ctx, &ev))
			break;
		handle(e, &ev);
		rn_verbs.ack_async_event(&ev);
	}
	pthread_mutex_unlock(&e->lock);
}

int rn_events_dev_err(const struct rn_evdev *e, int port)
{
	if (!e)
		return 0;
	if (e->fatal)
		return -EIO;
	if (port >= 0 && port < 32 && (e->port_down & (1u << port)))
		return -ENETDOWN;
	return 0;
}

void rn_events_forget(struct rn_dev *dev)
{
	size_t i;

	pthread_mutex_lock(&tbl_lock);
	for (i = 0; i < RN_ARRAY_SIZE(evdevs); i++)
		if (evdevs[i].dev == dev) {
			pthread_mutex_lock(&evdevs[i].lock);
			evdevs[i].dev = NULL;
			evdevs[i].ctx = NULL;
			pthread_mutex_unlock(&evdevs[i].lock);
		}
	pthread_mutex_unlock(&tbl_lock);
}
