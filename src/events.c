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
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <net/if.h>

#include "rn_clock.h"
#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_counters.h"
#include "rn_gid.h"
#include "rn_log.h"
#include "rn_nl.h"
#include "rn_verbs.h"

#define RN_PORTS 32
#define RN_FLAP_HIST 16 /* PORT_ERR times kept per port */
#define RN_FLAP_WINDOW_NS (24ull * 3600 * 1000000000ull)
#define RN_FLAP_MAX 5   /* more lost carriers than this in the window */

/* A port's link history in this process (under rn_evdev.hist_lock). */
struct port_hist {
	unsigned int n_err, n_active;
	uint64_t err_ns[RN_FLAP_HIST]; /* ring of PORT_ERR times (monotonic) */
	uint64_t last_err_ns, last_err_wall_ms;
	uint64_t last_up_ns;           /* PORT_ACTIVE after last_err_ns, 0: none yet */
	int flapping_told;             /* the link-flapping WARN was given for this streak */
	int gid_gone;                  /* the NIC's address left the table */
	struct rn_finding gone;        /* its finding */
};

struct rn_evdev {
	struct rn_dev *dev;
	struct ibv_context *ctx;
	int refs;
	pthread_t thread;
	int wake[2];
	int stop;                     /* atomic */
	pthread_mutex_t lock;         /* one reader of the async fd at a time */
	int fatal;                    /* atomic */
	uint64_t
		down_since[RN_PORTS]; /* atomic; per port: CLOCK_MONOTONIC ns of PORT_ERR, 0 = up */
	pthread_mutex_t hist_lock;
	struct port_hist hist[RN_PORTS];
};

static struct rn_evdev *evdevs[RN_MAX_DEVS * 4];
static pthread_mutex_t tbl_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *event_str(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
		return "CQ_ERR";
	case IBV_EVENT_QP_FATAL:
		return "QP_FATAL";
	case IBV_EVENT_QP_REQ_ERR:
		return "QP_REQ_ERR";
	case IBV_EVENT_QP_ACCESS_ERR:
		return "QP_ACCESS_ERR";
	case IBV_EVENT_COMM_EST:
		return "COMM_EST";
	case IBV_EVENT_SQ_DRAINED:
		return "SQ_DRAINED";
	case IBV_EVENT_PATH_MIG:
		return "PATH_MIG";
	case IBV_EVENT_PATH_MIG_ERR:
		return "PATH_MIG_ERR";
	case IBV_EVENT_DEVICE_FATAL:
		return "DEVICE_FATAL";
	case IBV_EVENT_PORT_ACTIVE:
		return "PORT_ACTIVE";
	case IBV_EVENT_PORT_ERR:
		return "PORT_ERR";
	case IBV_EVENT_LID_CHANGE:
		return "LID_CHANGE";
	case IBV_EVENT_PKEY_CHANGE:
		return "PKEY_CHANGE";
	case IBV_EVENT_SM_CHANGE:
		return "SM_CHANGE";
	case IBV_EVENT_SRQ_ERR:
		return "SRQ_ERR";
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return "SRQ_LIMIT_REACHED";
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return "QP_LAST_WQE_REACHED";
	case IBV_EVENT_CLIENT_REREGISTER:
		return "CLIENT_REREGISTER";
	case IBV_EVENT_GID_CHANGE:
		return "GID_CHANGE";
	case IBV_EVENT_WQ_FATAL:
		return "WQ_FATAL";
	}
	return "UNKNOWN";
}

static uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* PORT_ERRs of @h within the window before @now. */
static unsigned int hist_recent(const struct port_hist *h, uint64_t now)
{
	unsigned int i, n = 0, k = RN_MIN(h->n_err, RN_FLAP_HIST);

	for (i = 0; i < k; i++)
		if (now - h->err_ns[i] <= RN_FLAP_WINDOW_NS)
			n++;
	return n;
}

static void hist_err(struct rn_evdev *e, int port)
{
	const struct rn_nic *nic = &e->dev->nic;
	struct port_hist *h = &e->hist[port];
	uint64_t now = rn_now_ns();
	unsigned int recent;
	int tell = 0;

	pthread_mutex_lock(&e->hist_lock);
	h->err_ns[h->n_err % RN_FLAP_HIST] = now;
	h->n_err++;
	h->last_err_ns = now;
	h->last_err_wall_ms = wall_ms();
	h->last_up_ns = 0;
	recent = hist_recent(h, now);
	if (recent > RN_FLAP_MAX && !h->flapping_told)
		tell = h->flapping_told = 1;
	if (recent <= RN_FLAP_MAX)
		h->flapping_told = 0;
	pthread_mutex_unlock(&e->hist_lock);
	if (tell && port == nic->port) {
		struct rn_vars v = RN_VARS_INIT;
		struct rn_finding f = { 0 };

		rn_vars_set(&v, "nic", "%s:%d", nic->ibdev, port);
		rn_vars_set(&v, "dev", "%s", nic->netdev);
		rn_vars_set(&v, "count", "%u", recent);
		rn_vars_set(&v, "window", "%s", "in this process within 24 h");
		rn_vars_set(&v, "extra", "%s", "");
		rn_finding_render(&f, RN_CAUSE_LINK_FLAPPING, &v);
		rn_finding_log(RN_LOG_WARN, RN_SUB_NET, RN_PFX "port history", NULL, &f);
		/* NOTE: a metric for it (roce-doctor --prometheus) is left for later */
		rn_finding_clear(&f);
		rn_vars_free(&v);
	}
}

static void hist_up(struct rn_evdev *e, int port)
{
	pthread_mutex_lock(&e->hist_lock);
	e->hist[port].n_active++;
	if (e->hist[port].last_err_ns)
		e->hist[port].last_up_ns = rn_now_ns();
	pthread_mutex_unlock(&e->hist_lock);
}

/*
 * The GID table changed: find the NIC's address again (rn_gid_refresh). Moved: new comms
 * use the new index (said at INFO). Gone: the port is marked (said once), its comms move
 * to a spare pair or fail naming it (rn_events_gid_gone), new ones are refused by comm
 * creation.
 */
static void gid_follow(struct rn_evdev *e)
{
	struct rn_dev *dev = e->dev;
	struct rn_vars v = RN_VARS_INIT;
	struct port_hist *h;
	int old, ret, port = dev->nic.port;

	if (port < 0 || port >= RN_PORTS)
		return;
	h = &e->hist[port];
	pthread_mutex_lock(&dev->lock);
	ret = rn_gid_refresh(e->ctx, &dev->nic, &old, &v);
	pthread_mutex_unlock(&dev->lock);
	if (ret == 1)
		rn_info(RN_SUB_NET,
			RN_PFX "%s:%d: the GID of its address moved from index %d to %d; "
			       "new comms use %d",
			dev->nic.ibdev, port, old, dev->nic.gid_index, dev->nic.gid_index);
	if (ret == -ENOENT && __atomic_load_n(&h->gid_gone, __ATOMIC_ACQUIRE)) {
		/* still gone: said once, at the change that took it */
	} else if (ret == -ENOENT) {
		struct rn_finding f = { 0 };
		char pfx[128];

		snprintf(pfx, sizeof(pfx),
			 RN_PFX "%s:%d: GID_CHANGE: its comms move to a spare "
				"NIC pair, or fail without one",
			 dev->nic.ibdev, port);
		rn_finding_render(&f, RN_CAUSE_GID_GONE, &v);
		rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
		pthread_mutex_lock(&e->hist_lock);
		rn_finding_move(&h->gone, &f);
		__atomic_store_n(&h->gid_gone, 1, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&e->hist_lock);
	} else if (ret >= 0 && __atomic_load_n(&h->gid_gone, __ATOMIC_ACQUIRE)) {
		rn_info(RN_SUB_NET, RN_PFX "%s:%d: its address is back in the GID table (index %d)",
			dev->nic.ibdev, port, dev->nic.gid_index);
		__atomic_store_n(&h->gid_gone, 0, __ATOMIC_RELEASE);
	}
	rn_vars_free(&v);
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
		if (ev->element.port_num < RN_PORTS) {
			uint64_t zero = 0;

			/* a repeated PORT_ERR keeps the first time: the outage began then */
			__atomic_compare_exchange_n(&e->down_since[ev->element.port_num], &zero,
						    rn_now_ns(), 0, __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED);
			hist_err(e, ev->element.port_num);
		}
		rn_warn(RN_SUB_NET,
			RN_PFX "%s:%d: async event PORT_ERR (link down); its comms "
			       "survive if it is back within their QP retry budget",
			name, ev->element.port_num);
		return;
	case IBV_EVENT_PORT_ACTIVE:
		if (ev->element.port_num < RN_PORTS) {
			__atomic_store_n(&e->down_since[ev->element.port_num], 0, __ATOMIC_RELEASE);
			hist_up(e, ev->element.port_num);
		}
		rn_info(RN_SUB_NET, RN_PFX "%s:%d: async event PORT_ACTIVE", name,
			ev->element.port_num);
		/* a link that comes back registers its GIDs again, maybe elsewhere */
		gid_follow(e);
		return;
	case IBV_EVENT_GID_CHANGE:
		rn_info(RN_SUB_NET, RN_PFX "%s:%d: async event GID_CHANGE", name,
			ev->element.port_num);
		gid_follow(e);
		return;
	default:
		rn_info(RN_SUB_NET, RN_PFX "%s: async event %s", name, event_str(ev->event_type));
		return;
	}
	rn_warn(RN_SUB_NET, RN_PFX "%s: async event %s on the comm with %s (%s)", name,
		event_str(ev->event_type), c ? c->peer_str : "?", c ? c->rpeer[0].host : "?");
	/*
	 * A comm with spare pairs is not failed from here: its QPs' own completions (errors,
	 * flushes) and the watchdog say which pair is broken, and it moves off that one.
	 */
	if (c && !__atomic_load_n(&c->fo, __ATOMIC_ACQUIRE))
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
		/*
		 * A context without an fd (test fakes) is simply looked at every 20 ms. The
		 * wake-up every RN_CTR_TICK_NS keeps the counter history a failure is judged
		 * against (src/counters.c), off NCCL's threads.
		 */
		if (poll(p, 2, p[0].fd >= 0 ? (int)(RN_CTR_TICK_NS / 1000000) : 20) < 0 &&
		    errno != EINTR)
			break;
		if (__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE))
			break;
		rn_events_poll(e);
		rn_ctr_tick(rn_now_ns());
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
	pthread_mutex_init(&e->hist_lock, NULL);
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
	pthread_mutex_destroy(&e->hist_lock);
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
	for (i = 0; i < RN_PORTS; i++)
		rn_finding_clear(&e->hist[i].gone);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->hist_lock);
	free(e);
}

int rn_events_dev_err(const struct rn_evdev *e, int port)
{
	if (!e)
		return 0;
	if (__atomic_load_n(&e->fatal, __ATOMIC_ACQUIRE))
		return -EIO;
	if (port >= 0 && port < RN_PORTS && __atomic_load_n(&e->down_since[port], __ATOMIC_ACQUIRE))
		return -ENETDOWN;
	return 0;
}

unsigned int rn_events_port_errs(struct rn_evdev *e, int port, uint64_t since_ns)
{
	unsigned int i, n = 0, k;

	if (!e || port < 0 || port >= RN_PORTS)
		return 0;
	pthread_mutex_lock(&e->hist_lock);
	k = RN_MIN(e->hist[port].n_err, RN_FLAP_HIST);
	for (i = 0; i < k; i++)
		if (e->hist[port].err_ns[i] >= since_ns)
			n++;
	pthread_mutex_unlock(&e->hist_lock);
	return n;
}

int rn_events_dev_fatal(const struct rn_evdev *e)
{
	return e && __atomic_load_n(&e->fatal, __ATOMIC_ACQUIRE) ? -EIO : 0;
}

uint64_t rn_events_port_down_ns(const struct rn_evdev *e, int port, uint64_t now)
{
	uint64_t since;

	if (!e || port < 0 || port >= RN_PORTS)
		return 0;
	since = __atomic_load_n(&e->down_since[port], __ATOMIC_ACQUIRE);
	if (!since)
		return 0;
	return now > since ? now - since : 1;
}

int rn_events_gid_gone(struct rn_evdev *e, int port, struct rn_finding *out)
{
	int gone;

	if (!e || port < 0 || port >= RN_PORTS ||
	    !__atomic_load_n(&e->hist[port].gid_gone, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&e->hist_lock);
	gone = e->hist[port].gid_gone;
	if (gone && out && rn_finding_copy(out, &e->hist[port].gone))
		rn_finding_clear(out);
	pthread_mutex_unlock(&e->hist_lock);
	return gone;
}

/* "23:41:07.123 UTC" of a wall-clock time in ms. */
static void wall_str(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%02d:%02d:%02d.%03u UTC", tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(ms % 1000));
}

int rn_events_flap_finding(struct rn_evdev *e, const struct rn_nic *nic, uint64_t since_ns,
			   uint64_t budget_ns, int timeout, int retry_cnt, struct rn_finding *out)
{
	struct rn_vars v = RN_VARS_INIT;
	struct rn_nl_link l;
	struct port_hist h;
	uint64_t now = rn_now_ns(), down_ms;
	int port = nic->port, admin_up = 1, ret;
	char at[40];

	if (!e || port < 0 || port >= RN_PORTS)
		return -ENOENT;
	pthread_mutex_lock(&e->hist_lock);
	h = e->hist[port];
	memset(&h.gone, 0, sizeof(h.gone)); /* not ours to own */
	pthread_mutex_unlock(&e->hist_lock);
	if (!h.n_err || h.last_err_ns < since_ns)
		return -ENOENT;
	if (!rn_nl.link_get(nic->ifindex, &l))
		admin_up = !!(l.flags & IFF_UP);
	rn_vars_set(&v, "nic", "%s:%d", nic->ibdev, port);
	rn_vars_set(&v, "dev", "%s", nic->netdev);
	if (!admin_up) {
		/* set down by hand or by a script: a command does bring it back */
		ret = rn_finding_render(out, RN_CAUSE_LINK_DOWN, &v);
		rn_vars_free(&v);
		return ret == -ENOMEM ? ret : 0;
	}
	down_ms = ((h.last_up_ns ? h.last_up_ns : now) - h.last_err_ns) / 1000000;
	wall_str(h.last_err_wall_ms, at, sizeof(at));
	rn_vars_set(&v, "down_at", "%s", at);
	rn_vars_set(&v, "down_ms", "%llu", (unsigned long long)down_ms);
	rn_vars_set(&v, "still", "%s", h.last_up_ns ? "" : " (still down)");
	rn_vars_set(&v, "budget_ms", "%llu", (unsigned long long)(budget_ns / 1000000));
	rn_vars_set(&v, "timeout", "%d", timeout);
	rn_vars_set(&v, "retry_cnt", "%d", retry_cnt);
	rn_vars_set(&v, "admin", "%s",
		    "is administratively up: its carrier was lost (cable, "
		    "transceiver or switch port)");
	rn_vars_set(&v, "flaps", "%u PORT_ERR event%s on this port in the last 24 h",
		    hist_recent(&h, now), hist_recent(&h, now) == 1 ? "" : "s");
	ret = rn_finding_render(out, RN_CAUSE_LINK_FLAP, &v);
	rn_vars_free(&v);
	return ret == -ENOMEM ? ret : 0;
}
