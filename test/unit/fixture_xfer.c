// SPDX-License-Identifier: MIT
/* The transport test bed (see fixture_xfer.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_xfer.h"
#include "rn_log.h"
#include "rn_nl.h"
#include "rn_verbs.h"

#define FX_SPIN 200000

char fx_last_warn[2048];
int fx_failover;
int fx_recovery;
int fx_nwarn, fx_ninfo;
static char infos[8192], warns[8192], traces[8192];

static int dbg = -1;
/* the transport logs from its event thread too */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* @msg as one more line of @buf (@len bytes), while it fits */
static void keep(char *buf, size_t len, const char *msg)
{
	if (strlen(buf) + strlen(msg) + 2 < len) {
		strcat(buf, msg);
		strcat(buf, "\n");
	}
}

static void sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		 const char *msg)
{
	pthread_mutex_lock(&log_lock);
	if (dbg < 0)
		dbg = getenv("FX_DEBUG") != NULL;
	if (dbg)
		fprintf(stderr, "LOG%d %s\n", level, msg);
	if (level == RN_LOG_WARN) {
		fx_nwarn++;
		keep(warns, sizeof(warns), msg);
		snprintf(fx_last_warn, sizeof(fx_last_warn), "%s", msg);
	} else if (level == RN_LOG_TRACE) {
		keep(traces, sizeof(traces), msg);
	} else if (level == RN_LOG_INFO) {
		fx_ninfo++;
		keep(infos, sizeof(infos), msg);
	}
	pthread_mutex_unlock(&log_lock);
}

void fx_log_reset(void)
{
	fx_last_warn[0] = 0;
	fx_nwarn = fx_ninfo = 0;
	infos[0] = 0;
	warns[0] = 0;
	traces[0] = 0;
	rn_log_set_sink(sink);
	rn_log_set_level(RN_LOG_TRACE);
}

int fx_info_seen(const char *s)
{
	return fx_info_count(s) > 0;
}

int fx_warn_seen(const char *s)
{
	return strstr(warns, s) != NULL;
}

int fx_trace_seen(const char *s)
{
	return strstr(traces, s) != NULL;
}

static int count_in(const char *p, const char *s)
{
	int n = 0;

	while ((p = strstr(p, s))) {
		n++;
		p += strlen(s);
	}
	return n;
}

int fx_info_count(const char *s)
{
	return count_in(infos, s);
}

int fx_warn_count(const char *s)
{
	return count_in(warns, s);
}

int fx_link_admin_up = 1;

/* The NICs' netdevs as the diagnosis sees them: admin-up (or not), without carrier. */
static int fx_link_get(int ifindex, struct rn_nl_link *out)
{
	memset(out, 0, sizeof(*out));
	out->ifindex = ifindex;
	snprintf(out->name, sizeof(out->name), "eth%d", ifindex - 2);
	out->flags = fx_link_admin_up ? 0x1 /* IFF_UP */ : 0;
	return 0;
}

static void gid_of(const char *ip, union ibv_gid *gid, struct rn_ip *rip)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	inet_pton(AF_INET, ip, &gid->raw[12]);
	rip->family = AF_INET;
	memcpy(&rip->v4, &gid->raw[12], 4);
}

void fx_setup(struct fx *f)
{
	static const char *names[FX_DEVS] = { "rxe0", "rxe1" };
	static const char *ips[FX_DEVS] = { "198.18.0.1", "198.18.0.2" };
	struct ibv_device **list;
	int i, n;

	memset(f, 0, sizeof(*f));
	/*
	 * Comms these tests fail are journalled (rn_errlog_add): run by hand, not by
	 * test/run-tests (which gives each test a state directory), they must not write the
	 * host's /run/nccl-net-roce, which the health-check tests read as the node's own record.
	 */
	setenv("NCCL_ROCE_STATE_DIR", "/tmp/rn-unit-state", 0);
	for (i = 0; i < FX_DEVS; i++) {
		f->fdevs[i].name = names[i];
		f->fdevs[i].guid = 0x100 + (uint64_t)i;
		f->fdevs[i].nports = 1;
		f->fdevs[i].dmabuf = 1;
		f->fdevs[i].ports[0].gids[0] = (struct fake_gid){ "fe80::1", IBV_GID_TYPE_ROCE_V2,
								  2 };
		f->fdevs[i].ports[0].gids[1] = (struct fake_gid){ ips[i], IBV_GID_TYPE_ROCE_V2, 2 };
	}
	fake_verbs_install(f->fdevs, FX_DEVS);
	fake_wire_install();
	{
		static const struct rn_nl_ops nl = { .link_get = fx_link_get };

		fx_link_admin_up = 1;
		rn_nl_set_ops(&nl);
	}
	fx_log_reset();
	rn_config_defaults(&f->eng.cfg);
	snprintf(f->eng.cfg.socket_ifname, sizeof(f->eng.cfg.socket_ifname), "lo");
	f->eng.cfg.connect_timeout_ms = 5000;
	/* a failure fails the comm, as these tests expect; test_failover.c turns moves on */
	f->eng.cfg.failover = fx_failover;
	f->eng.cfg.recovery = fx_recovery;
	f->eng.cfg.recovery_delay_ms = 20;
	snprintf(f->eng.hostname, sizeof(f->eng.hostname), "testhost");
	list = rn_verbs.get_device_list(&n);
	for (i = 0; i < FX_DEVS && i < n; i++) {
		struct rn_dev *d = &f->devs[i];

		d->ctx = rn_verbs.open_device(list[i]);
		d->pd = rn_verbs.alloc_pd(d->ctx);
		rn_verbs.query_device(d->ctx, &d->attr);
		snprintf(d->nic.ibdev, sizeof(d->nic.ibdev), "%s", names[i]);
		snprintf(d->nic.netdev, sizeof(d->nic.netdev), "eth%d", i);
		d->nic.port = 1;
		d->nic.mac[5] = (uint8_t)(i + 1);
		d->nic.link_up = 1;
		d->nic.mtu = 1500;
		d->nic.active_mtu = IBV_MTU_1024;
		d->nic.gid_index = 1;
		d->nic.gid_type = IBV_GID_TYPE_ROCE_V2;
		d->nic.ifindex = 2; /* the fake GIDs' netdev (comm creation follows the GID) */
		gid_of(ips[i], &d->nic.gid, &d->nic.ip);
		d->is_rxe = 1;
		d->max_msg_size = 8u << 20;
		d->ptr_support = RN_PTR_HOST | RN_PTR_CUDA | RN_PTR_DMABUF;
		pthread_mutex_init(&d->lock, NULL);
		f->eng.devs[i] = d;
	}
	f->eng.ndevs = i;
	rn_verbs.free_device_list(list);
}

int fx_teardown(struct fx *f)
{
	struct rn_conn_counts n;
	int i, leaks;

	/* what a test left open is a leak; closed as the last finalize would, and counted */
	rn_conn_close_all(&f->eng, &n);
	leaks = n.listeners + n.connecting + n.comms;
	if (leaks)
		fprintf(stderr, "fx_teardown: left open: %d listeners, %d connects, %d comms\n",
			n.listeners, n.connecting, n.comms);
	for (i = 0; i < f->eng.ndevs; i++) {
		rn_mr_cache_destroy(&f->devs[i]);
		rn_verbs.dealloc_pd(f->devs[i].pd);
		rn_verbs.close_device(f->devs[i].ctx);
		pthread_mutex_destroy(&f->devs[i].lock);
	}
	leaks += fake_wire_live();
	leaks += fake_verbs_uninstall();
	rn_nl_reset_ops();
	rn_log_set_sink(NULL);
	return leaks;
}

int fx_connect(struct fx *f, int sdev, int rdev, int tc, struct rn_send_comm **sc,
	       struct rn_recv_comm **rc)
{
	unsigned char handle[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	int i, ret, sret = 0, rret = 0;

	*sc = NULL;
	*rc = NULL;
	ret = rn_listen(&f->eng, rdev, handle, &lc);
	if (ret)
		return ret;
	for (i = 0; i < FX_SPIN && (!*sc || !*rc); i++) {
		if (!*sc && !sret)
			sret = rn_connect(&f->eng, sdev, handle, tc, sc);
		if (!*rc && !rret)
			rret = rn_accept(lc, rc);
		if (sret && rret)
			break;
		if ((sret && *rc) || (rret && *sc))
			break;
	}
	rn_close_listen(lc);
	if (sret || rret || !*sc || !*rc) {
		rn_close_send(*sc);
		rn_close_recv(*rc);
		*sc = NULL;
		*rc = NULL;
		return sret ? sret : rret ? rret : -ETIMEDOUT;
	}
	return 0;
}

int fx_wait(struct rn_req *req, int *sizes)
{
	int i, done = 0, ret = 0;

	for (i = 0; i < FX_SPIN && !done; i++) {
		ret = rn_test(req, &done, sizes);
		if (ret)
			return ret;
	}
	return done ? 0 : -ETIMEDOUT;
}

int fx_isend(struct rn_send_comm *sc, void *data, size_t size, int tag, struct rn_mr *mr,
	     struct rn_req **req)
{
	int i, ret = 0;

	for (i = 0; i < 1000; i++) {
		ret = rn_isend(sc, data, size, tag, mr, req);
		if (ret || *req)
			return ret;
	}
	return ret;
}

void *fx_pattern(size_t n, int seed)
{
	unsigned char *p = malloc(n ? n : 1);

	if (!p)
		abort(); /* a test bed out of memory has nothing to report */
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7 + (i >> 12));
	return p;
}

int fx_close(struct fx *f, struct rn_send_comm *sc, struct rn_recv_comm *rc)
{
	struct fake_wire_stats st;

	int bad;

	fake_wire_stats(NULL, &st);
	bad = st.cq_overflows || st.rnr;
	if (bad)
		fprintf(stderr, "fx_close: %d CQ overflows, %d RNR\n", st.cq_overflows, st.rnr);
	rn_close_send(sc);
	rn_close_recv(rc);
	return fx_teardown(f) + bad;
}
