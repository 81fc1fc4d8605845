// SPDX-License-Identifier: MIT
/*
 * Port counters by driver, and what their deltas say after a failure.
 *
 * Each driver names the same facts differently (rxe's completer_retry_err is mlx5's
 * local_ack_timeout_err and bnxt_re's to_retransmits), so a table per driver maps
 * our roles to its files; "a|b" tries a, then b (drivers renamed some between kernels).
 * A driver we do not know gets the IB core's PMA counters where it has them and its
 * diagnosis says what it lacks.
 *
 * The NIC list is read once (devices do not come and go under a running job; tests
 * call rn_ctr_reset). Snapshot slots follow that list's order.
 */
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_clock.h"
#include "rn_compiler.h"
#include "rn_counters.h"
#include "rn_sys.h"

#define CTR_NICS_MAX 64
#define CTR_RING 8

struct ctr_driver {
	const char *name;
	const char *prefix;   /* ibdev name prefix ("mlx5_") */
	const char *marker;   /* a file only this driver has, for renamed devices */
	int netdev_sees_roce; /* a soft driver: RoCE packets pass through the netdev */
	const char *file[RN_CTR_NETDEV_RX]; /* per role, under ports/P/ ("" none) */
};

/* The roles, as the diagnosis names them. */
static const char *const role_name[RN_CTR__MAX] = {
	[RN_CTR_TX] = "packets sent",
	[RN_CTR_RX] = "packets received",
	[RN_CTR_TIMEOUT] = "retransmission timeouts",
	[RN_CTR_SEQ_NAK] = "sequence-error NAKs",
	[RN_CTR_OOS] = "out-of-sequence packets",
	[RN_CTR_DUP] = "duplicate requests",
	[RN_CTR_RNR] = "RNR NAKs",
	[RN_CTR_RETRY_EXC] = "retries exhausted",
	[RN_CTR_CNP_SENT] = "CNPs sent",
	[RN_CTR_CNP_RCVD] = "CNPs handled",
	[RN_CTR_ECN] = "ECN-marked packets",
	[RN_CTR_LINK_DOWNED] = "link downs",
	[RN_CTR_NETDEV_RX] = "netdev rx packets",
	[RN_CTR_CARRIER_DOWN] = "lost carriers",
};

static const struct ctr_driver drivers[] = {
	{
		/* Soft-RoCE (drivers/infiniband/sw/rxe/rxe_hw_counters.c): no CNP/ECN */
		"rxe",
		"rxe",
		"hw_counters/sent_pkts",
		1,
		{
			[RN_CTR_TX] = "hw_counters/sent_pkts",
			[RN_CTR_RX] = "hw_counters/rcvd_pkts",
			[RN_CTR_TIMEOUT] = "hw_counters/completer_retry_err",
			[RN_CTR_SEQ_NAK] = "hw_counters/rcvd_seq_err",
			[RN_CTR_OOS] = "hw_counters/out_of_seq_request",
			[RN_CTR_DUP] = "hw_counters/duplicate_request",
			[RN_CTR_RNR] = "hw_counters/rcvd_rnr_err",
			[RN_CTR_RETRY_EXC] = "hw_counters/retry_exceeded_err",
			[RN_CTR_LINK_DOWNED] = "hw_counters/link_downed",
		},
	},
	{
		/* ConnectX: packets from the PMA counters, RoCE events from hw_counters */
		"mlx5",
		"mlx5_",
		"hw_counters/local_ack_timeout_err",
		0,
		{
			[RN_CTR_TX] = "counters/port_xmit_packets",
			[RN_CTR_RX] = "counters/port_rcv_packets",
			[RN_CTR_TIMEOUT] = "hw_counters/local_ack_timeout_err",
			[RN_CTR_SEQ_NAK] = "hw_counters/packet_seq_err",
			[RN_CTR_OOS] = "hw_counters/out_of_sequence",
			[RN_CTR_DUP] = "hw_counters/duplicate_request",
			[RN_CTR_RNR] = "hw_counters/rnr_nak_retry_err",
			[RN_CTR_CNP_SENT] = "hw_counters/np_cnp_sent",
			[RN_CTR_CNP_RCVD] = "hw_counters/rp_cnp_handled",
			[RN_CTR_ECN] = "hw_counters/np_ecn_marked_roce_packets",
			[RN_CTR_LINK_DOWNED] = "counters/link_downed",
		},
	},
	{
		/* Broadcom NetXtreme-E: names changed in 6.x, the older ones second */
		"bnxt_re",
		"bnxt_re",
		"hw_counters/max_retry_exceeded",
		0,
		{
			[RN_CTR_TX] = "hw_counters/tx_roce_only_pkts|hw_counters/tx_pkts",
			[RN_CTR_RX] = "hw_counters/rx_roce_only_pkts|hw_counters/rx_pkts",
			[RN_CTR_TIMEOUT] = "hw_counters/local_ack_timeout_err|"
					   "hw_counters/to_retransmits",
			[RN_CTR_SEQ_NAK] =
				"hw_counters/packet_seq_err|hw_counters/seq_err_naks_rcvd",
			[RN_CTR_OOS] = "hw_counters/res_oos_drop_count|hw_counters/oos_drop_count",
			[RN_CTR_DUP] = "hw_counters/dup_req",
			[RN_CTR_RNR] = "hw_counters/rnr_nak_retry_err|hw_counters/rnr_naks_rcvd",
			[RN_CTR_RETRY_EXC] = "hw_counters/max_retry_exceeded",
			[RN_CTR_CNP_SENT] = "hw_counters/tx_cnp_pkts",
			[RN_CTR_CNP_RCVD] = "hw_counters/rx_cnp_pkts",
			[RN_CTR_ECN] = "hw_counters/rx_ecn_marked_pkts",
			[RN_CTR_LINK_DOWNED] = "counters/link_downed",
		},
	},
	{
		/* Intel E810/X722: UDP packet counts and DCQCN; no RoCE retransmit counter */
		"irdma",
		"irdma",
		"hw_counters/cnpHandled",
		0,
		{
			[RN_CTR_TX] = "hw_counters/TxUDP|hw_counters/ip4OutPkts",
			[RN_CTR_RX] = "hw_counters/RxUDP|hw_counters/ip4InPkts",
			[RN_CTR_CNP_SENT] = "hw_counters/cnpSent",
			[RN_CTR_CNP_RCVD] = "hw_counters/cnpHandled",
			[RN_CTR_ECN] = "hw_counters/RxECNMrkd",
			[RN_CTR_LINK_DOWNED] = "counters/link_downed",
		},
	},
};

/* Any other driver: the IB core's PMA counters, where the driver answers them. */
static const struct ctr_driver generic = {
	"unknown",
	"",
	"",
	0,
	{
		[RN_CTR_TX] = "counters/port_xmit_packets",
		[RN_CTR_RX] = "counters/port_rcv_packets",
		[RN_CTR_LINK_DOWNED] = "counters/link_downed",
	},
};

struct ctr_nic {
	char ibdev[64];
	int port;
	char netdev[IF_NAMESIZE];
	const struct ctr_driver *drv;
	char file[RN_CTR_NETDEV_RX][96]; /* the alternative this NIC has, "" none */
};

static pthread_mutex_t nics_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctr_nic nics[CTR_NICS_MAX];
static int nnics = -1; /* -1: not read yet */

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_ctr_snap *ring[CTR_RING];
static int ring_next;

static int readable(const char *ibdev, int port, const char *rel)
{
	char b[64];

	return !rn_sys_readf(b, sizeof(b), "/sys/class/infiniband/%s/ports/%d/%s", ibdev, port,
			     rel);
}

static const struct ctr_driver *driver_of(const char *ibdev, int port)
{
	size_t i;

	for (i = 0; i < RN_ARRAY_SIZE(drivers); i++)
		if (!strncmp(ibdev, drivers[i].prefix, strlen(drivers[i].prefix)))
			return &drivers[i];
	/* a renamed device (udev's rdma names, "roceP2p1s0f0"): by a file only it has */
	for (i = 0; i < RN_ARRAY_SIZE(drivers); i++)
		if (readable(ibdev, port, drivers[i].marker))
			return &drivers[i];
	return &generic;
}

/* The first alternative of "a|b" that @n has, into @out ("" none). */
static void pick_file(const struct ctr_nic *n, const char *alts, char *out, size_t len)
{
	const char *p = alts;

	out[0] = '\0';
	while (p && *p) {
		const char *bar = strchr(p, '|');
		size_t l = bar ? (size_t)(bar - p) : strlen(p);

		if (l < len) {
			memcpy(out, p, l);
			out[l] = '\0';
			if (readable(n->ibdev, n->port, out))
				return;
		}
		out[0] = '\0';
		p = bar ? bar + 1 : NULL;
	}
}

struct list_ctx {
	char names[CTR_NICS_MAX][64];
	int n;
};

static int add_name(const char *name, void *arg)
{
	struct list_ctx *l = arg;

	if (l->n < CTR_NICS_MAX && strlen(name) < sizeof(l->names[0]))
		snprintf(l->names[l->n++], sizeof(l->names[0]), "%s", name);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The port's netdev: the one its GIDs belong to (rxe: also its "parent"). */
static void netdev_of(struct ctr_nic *n)
{
	char b[IF_NAMESIZE + 8];
	int i;

	for (i = 0; i < 4; i++)
		if (!rn_sys_readf(b, sizeof(b),
				  "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d", n->ibdev,
				  n->port, i) &&
		    b[0]) {
			snprintf(n->netdev, sizeof(n->netdev), "%.*s", IF_NAMESIZE - 1, b);
			return;
		}
	if (!rn_sys_readf(b, sizeof(b), "/sys/class/infiniband/%s/parent", n->ibdev))
		snprintf(n->netdev, sizeof(n->netdev), "%.*s", IF_NAMESIZE - 1, b);
}

static void nics_load(void)
{
	struct list_ctx devs = { .n = 0 };
	int i, k;

	nnics = 0;
	if (rn_sys.list("/sys/class/infiniband", add_name, &devs))
		return;
	qsort(devs.names, (size_t)devs.n, sizeof(devs.names[0]), cmp_name);
	for (i = 0; i < devs.n && nnics < CTR_NICS_MAX; i++) {
		struct list_ctx ports = { .n = 0 };
		char path[160];

		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports", devs.names[i]);
		if (rn_sys.list(path, add_name, &ports))
			continue;
		qsort(ports.names, (size_t)ports.n, sizeof(ports.names[0]), cmp_name);
		for (k = 0; k < ports.n && nnics < CTR_NICS_MAX; k++) {
			struct ctr_nic *n = &nics[nnics];
			char ll[32];
			int r;

			memset(n, 0, sizeof(*n));
			snprintf(n->ibdev, sizeof(n->ibdev), "%s", devs.names[i]);
			n->port = atoi(ports.names[k]);
			if (rn_sys_readf(ll, sizeof(ll),
					 "/sys/class/infiniband/%s/ports/%d/link_layer", n->ibdev,
					 n->port) ||
			    strcmp(ll, "Ethernet"))
				continue; /* InfiniBand ports are not ours */
			n->drv = driver_of(n->ibdev, n->port);
			for (r = 0; r < RN_CTR_NETDEV_RX; r++)
				pick_file(n, n->drv->file[r], n->file[r], sizeof(n->file[r]));
			netdev_of(n);
			nnics++;
		}
	}
}

static int nics_get(void)
{
	int n;

	pthread_mutex_lock(&nics_lock);
	if (nnics < 0)
		nics_load();
	n = nnics;
	pthread_mutex_unlock(&nics_lock);
	return n;
}

static int nic_index(const char *ibdev, int port)
{
	int i, n = nics_get();

	for (i = 0; i < n; i++)
		if (nics[i].port == port && !strcmp(nics[i].ibdev, ibdev))
			return i;
	return -1;
}

void rn_ctr_reset(void)
{
	int i;

	pthread_mutex_lock(&nics_lock);
	nnics = -1;
	pthread_mutex_unlock(&nics_lock);
	pthread_mutex_lock(&ring_lock);
	for (i = 0; i < CTR_RING; i++) {
		free(ring[i]);
		ring[i] = NULL;
	}
	ring_next = 0;
	pthread_mutex_unlock(&ring_lock);
}

static int read_u64(uint64_t *out, const char *path)
{
	char buf[64], *end;
	unsigned long long v;
	int ret = rn_sys.read(path, buf, sizeof(buf));

	if (ret)
		return ret;
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	*out = v;
	return 0;
}

struct rn_ctr_snap *rn_ctr_snap_take(void)
{
	int n = nics_get(), i, r;
	char path[256];
	struct rn_ctr_snap *s = calloc(1, sizeof(*s) + (size_t)n * sizeof(s->nic[0]));

	if (!s)
		return NULL;
	s->n = n;
	for (i = 0; i < n; i++) {
		const struct ctr_nic *c = &nics[i];
		struct rn_ctr_nic_vals *o = &s->nic[i];

		for (r = 0; r < RN_CTR_NETDEV_RX; r++) {
			if (!c->file[r][0])
				continue;
			snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/%s",
				 c->ibdev, c->port, c->file[r]);
			if (!read_u64(&o->v[r], path))
				o->have |= 1u << r;
		}
		if (!c->netdev[0])
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/rx_packets", c->netdev);
		if (!read_u64(&o->v[RN_CTR_NETDEV_RX], path))
			o->have |= 1u << RN_CTR_NETDEV_RX;
		snprintf(path, sizeof(path), "/sys/class/net/%s/carrier_down_count", c->netdev);
		if (!read_u64(&o->v[RN_CTR_CARRIER_DOWN], path))
			o->have |= 1u << RN_CTR_CARRIER_DOWN;
	}
	s->t_ns = rn_now_ns();
	return s;
}

void rn_ctr_snap_free(struct rn_ctr_snap *s)
{
	free(s);
}

struct rn_ctr_snap *rn_ctr_snap_dup(const struct rn_ctr_snap *s)
{
	size_t sz = sizeof(*s) + (size_t)s->n * sizeof(s->nic[0]);
	struct rn_ctr_snap *d = malloc(sz);

	if (d)
		memcpy(d, s, sz);
	return d;
}

/* Add @s to the history (under ring_lock), dropping the oldest. */
static void ring_push(struct rn_ctr_snap *s)
{
	free(ring[ring_next]);
	ring[ring_next] = s;
	ring_next = (ring_next + 1) % CTR_RING;
}

/*
 * The history's newest snapshot if it is younger than RN_CTR_TICK_NS at @now_ns, or newer
 * than @now_ns (ring_lock). A newer one is an event thread's, finished while a new comm
 * waited for ring_lock: read before that comm could carry anything, it is as good a
 * baseline, and reading every NIC again at once was a second snapshot in the connect path
 * (seen under strace in a TCG guest: 44 sysfs files, every few connections).
 */
static const struct rn_ctr_snap *ring_fresh(uint64_t now_ns)
{
	const struct rn_ctr_snap *s = ring[(ring_next + CTR_RING - 1) % CTR_RING];

	return s && (s->t_ns >= now_ns || now_ns - s->t_ns < RN_CTR_TICK_NS) ? s : NULL;
}

void rn_ctr_tick(uint64_t now_ns)
{
	struct rn_ctr_snap *s;

	if (pthread_mutex_trylock(&ring_lock))
		return; /* another event thread is at it */
	if (!ring_fresh(now_ns) && (s = rn_ctr_snap_take()))
		ring_push(s);
	pthread_mutex_unlock(&ring_lock);
}

struct rn_ctr_snap *rn_ctr_snap_shared(uint64_t now_ns)
{
	const struct rn_ctr_snap *fresh;
	struct rn_ctr_snap *s, *out = NULL;

	pthread_mutex_lock(&ring_lock);
	fresh = ring_fresh(now_ns);
	if (fresh) {
		out = rn_ctr_snap_dup(fresh);
	} else if ((s = rn_ctr_snap_take())) {
		ring_push(s);
		out = rn_ctr_snap_dup(s);
	}
	pthread_mutex_unlock(&ring_lock);
	return out;
}

struct rn_ctr_snap *rn_ctr_recent(uint64_t before_ns)
{
	const struct rn_ctr_snap *best = NULL, *oldest = NULL;
	struct rn_ctr_snap *out = NULL;
	int i;

	pthread_mutex_lock(&ring_lock);
	for (i = 0; i < CTR_RING; i++) {
		const struct rn_ctr_snap *s = ring[i];

		if (!s)
			continue;
		if (s->t_ns <= before_ns && (!best || s->t_ns > best->t_ns))
			best = s;
		if (!oldest || s->t_ns < oldest->t_ns)
			oldest = s;
	}
	if (best || oldest)
		out = rn_ctr_snap_dup(best ? best : oldest);
	pthread_mutex_unlock(&ring_lock);
	return out;
}

const char *rn_ctr_driver(const char *ibdev, int port)
{
	int i = nic_index(ibdev, port);

	return i < 0 ? NULL : nics[i].drv->name;
}

const char *rn_ctr_lacks(const char *ibdev, int port, char *buf, size_t len)
{
	int i = nic_index(ibdev, port), r;
	size_t off = 0;

	buf[0] = '\0';
	if (i < 0)
		return buf;
	for (r = 0; r < RN_CTR_NETDEV_RX; r++) {
		if (nics[i].file[r][0])
			continue;
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "",
						role_name[r]);
	}
	return buf;
}

const char *rn_ctr_role_name(int role)
{
	return role >= 0 && role < RN_CTR__MAX ? role_name[role] : "";
}

/* The counter groups under ports/P/, in the order a name found twice is taken. */
static const char *const named_dirs[] = { "hw_counters", "counters" };

struct named_ctx {
	const struct ctr_nic *n;
	const char *dir;
	struct rn_ctr_named *v;
	int len, cap, err;
};

static int add_named(const char *name, void *arg)
{
	struct named_ctx *c = arg;
	struct rn_ctr_named *e;
	char path[256], rel[96];
	uint64_t val;
	int i, r;

	/* lifespan is how long hw_counters are cached (ms), a setting, not a count */
	if (!strcmp(name, "lifespan") || strlen(name) >= sizeof(c->v[0].name))
		return 0;
	for (i = 0; i < c->len; i++)
		if (!strcmp(c->v[i].name, name))
			return 0;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/%s/%s", c->n->ibdev,
		 c->n->port, c->dir, name);
	if (read_u64(&val, path))
		return 0;
	if (c->len == c->cap) {
		int cap = c->cap ? 2 * c->cap : 64;
		struct rn_ctr_named *nv = realloc(c->v, (size_t)cap * sizeof(*nv));

		if (!nv) {
			c->err = -ENOMEM;
			return 1;
		}
		c->v = nv;
		c->cap = cap;
	}
	e = &c->v[c->len++];
	snprintf(e->name, sizeof(e->name), "%s", name);
	/* IBA 16.1.3.5: PortXmitData and PortRcvData count octets divided by 4 */
	if (!strcmp(c->dir, "counters") &&
	    (!strcmp(name, "port_xmit_data") || !strcmp(name, "port_rcv_data")))
		val = val > UINT64_MAX / 4 ? UINT64_MAX : val * 4;
	e->value = val;
	e->role = -1;
	snprintf(rel, sizeof(rel), "%s/%s", c->dir, name);
	for (r = 0; r < RN_CTR_NETDEV_RX; r++)
		if (!strcmp(c->n->file[r], rel))
			e->role = r;
	return 0;
}

static int cmp_named(const void *a, const void *b)
{
	return strcmp(((const struct rn_ctr_named *)a)->name,
		      ((const struct rn_ctr_named *)b)->name);
}

int rn_ctr_read_named(const char *ibdev, int port, struct rn_ctr_named **out)
{
	struct named_ctx c = { .n = NULL };
	int i = nic_index(ibdev, port);
	size_t k;

	*out = NULL;
	if (i < 0)
		return -ENODEV;
	c.n = &nics[i];
	for (k = 0; k < RN_ARRAY_SIZE(named_dirs) && !c.err; k++) {
		char path[160];

		c.dir = named_dirs[k];
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/%s", ibdev, port,
			 c.dir);
		rn_sys.list(path, add_named, &c); /* a driver without this group: none from it */
	}
	if (c.err) {
		free(c.v);
		return c.err;
	}
	if (c.len)
		qsort(c.v, (size_t)c.len, sizeof(c.v[0]), cmp_named);
	*out = c.v;
	return c.len;
}

/* b - a for NIC @i's counter @r; 0 when either lacks it or it went backwards (reset). */
static uint64_t d_of(const struct rn_ctr_snap *a, const struct rn_ctr_snap *b, int i, int r)
{
	if (i < 0 || i >= a->n || i >= b->n)
		return 0;
	if (!(a->nic[i].have & b->nic[i].have & (1u << r)))
		return 0;
	return b->nic[i].v[r] >= a->nic[i].v[r] ? b->nic[i].v[r] - a->nic[i].v[r] : 0;
}

static int has(const struct rn_ctr_snap *s, int i, int r)
{
	return i >= 0 && i < s->n && (s->nic[i].have & (1u << r));
}

uint64_t rn_ctr_delta(const struct rn_ctr_snap *a, const struct rn_ctr_snap *b, const char *ibdev,
		      int port, enum rn_ctr c)
{
	if (!a || !b)
		return 0;
	return d_of(a, b, nic_index(ibdev, port), c);
}

/* Thresholds: a few packets that wandered (ARP, a late ACK) are no finding. */
#define STRAY_MIN 4

enum rn_cause rn_ctr_judge(const struct rn_ctr_snap *a, const struct rn_ctr_snap *wide,
			   const struct rn_ctr_snap *b, const char *ibdev, int port,
			   struct rn_vars *v)
{
	int me = nic_index(ibdev, port), i, n = nics_get(), stray_nic = -1;
	uint64_t d[RN_CTR__MAX] = { 0 }, stray = 0, retrans, back;
	double secs;
	char lacks[256];
	int r;

	if (me < 0 || !a || !b || me >= a->n || me >= b->n || b->t_ns < a->t_ns) {
		rn_vars_set(v, "counters", "counters: none read for %s:%d", ibdev, port);
		return RN_CAUSE_NONE;
	}
	secs = (double)(b->t_ns - a->t_ns) / 1e9;
	for (r = 0; r < RN_CTR__MAX; r++)
		d[r] = d_of(a, b, me, r);
	/*
	 * On a soft driver the netdev sees every RoCE packet: what another NIC's netdev got
	 * beyond what its RDMA device accepted are packets for an address it does not hold
	 * (rxe drops them before counting, as a NIC drops a GID it does not have).
	 */
	/*
	 * Over the wider window: the peer whose replies went astray may have failed and
	 * stopped sending before our own QP ran out of retries.
	 */
	if (!wide || wide->t_ns > a->t_ns)
		wide = a;
	for (i = 0; i < n && i < wide->n && i < b->n; i++) {
		uint64_t s;

		if (i == me || !nics[i].drv->netdev_sees_roce || !nics[i].netdev[0] ||
		    !strcmp(nics[i].netdev, nics[me].netdev) || !has(wide, i, RN_CTR_NETDEV_RX) ||
		    !has(wide, i, RN_CTR_RX))
			continue;
		s = d_of(wide, b, i, RN_CTR_NETDEV_RX);
		s = s > d_of(wide, b, i, RN_CTR_RX) ? s - d_of(wide, b, i, RN_CTR_RX) : 0;
		if (s > stray) {
			stray = s;
			stray_nic = i;
		}
	}
	retrans = d[RN_CTR_TIMEOUT] + d[RN_CTR_SEQ_NAK];

	/* the summary: what moved in the window, and what this driver cannot tell */
	rn_vars_set(v, "ctr_list", "%s", "");
	for (r = 0; r < RN_CTR__MAX; r++)
		if (has(a, me, r) && has(b, me, r) && d[r])
			rn_vars_append(v, "ctr_list", ", ", "%s %" PRIu64, role_name[r], d[r]);
	if (!rn_vars_get(v, "ctr_list")[0])
		rn_vars_set(v, "ctr_list", "%s", "none moved");
	if (stray_nic >= 0 && stray)
		rn_vars_append(v, "ctr_list", "; ",
			       "%s (%s) got %" PRIu64 " packets for no "
			       "address of its own",
			       nics[stray_nic].netdev, nics[stray_nic].ibdev, stray);
	rn_ctr_lacks(ibdev, port, lacks, sizeof(lacks));
	if (lacks[0])
		rn_vars_append(v, "ctr_list", "; ", "%s has no counter of %s", nics[me].drv->name,
			       lacks);
	rn_vars_set(v, "counters", "counters of %s:%d over the last %.1f s: %s", ibdev, port, secs,
		    rn_vars_get(v, "ctr_list"));

	if (stray >= STRAY_MIN && (retrans || d[RN_CTR_RETRY_EXC])) {
		rn_vars_set(v, "figures",
			    "%s (%s) received %" PRIu64 " packets addressed to no "
			    "address of its own in %.1f s, while %s sent %" PRIu64
			    ", received %" PRIu64 " and timed out %" PRIu64 " times in %.1f s",
			    nics[stray_nic].netdev, nics[stray_nic].ibdev, stray,
			    (double)(b->t_ns - wide->t_ns) / 1e9, ibdev, d[RN_CTR_TX], d[RN_CTR_RX],
			    d[RN_CTR_TIMEOUT], secs);
		return RN_CAUSE_REPLIES_ELSEWHERE;
	}
	/*
	 * What came back, less the peer's duplicate requests: a request the peer sends again is
	 * one whose ACK from us never reached it, so those say our packets are lost too (UDP
	 * 4791 dropped at the peer: its requests reach us, our ACKs and requests never reach it).
	 */
	back = d[RN_CTR_RX] > d[RN_CTR_DUP] ? d[RN_CTR_RX] - d[RN_CTR_DUP] : 0;
	if (has(b, me, RN_CTR_TX) && has(b, me, RN_CTR_RX) && d[RN_CTR_TX] &&
	    (retrans || d[RN_CTR_RETRY_EXC]) && back * 4 < d[RN_CTR_TX]) {
		uint64_t lost_here = d[RN_CTR_NETDEV_RX] > d[RN_CTR_RX] ?
					     d[RN_CTR_NETDEV_RX] - d[RN_CTR_RX] :
					     0;

		rn_vars_set(v, "figures",
			    "%s sent %" PRIu64 " packets and received %" PRIu64
			    " in %.1f s, with %" PRIu64 " retransmission timeouts",
			    ibdev, d[RN_CTR_TX], d[RN_CTR_RX], secs, d[RN_CTR_TIMEOUT]);
		if (d[RN_CTR_DUP] && d[RN_CTR_RX])
			rn_vars_append(
				v, "figures", "; ",
				"%" PRIu64 " of those received were the "
				"peer's requests again, sent because our ACKs never reached it",
				RN_MIN(d[RN_CTR_DUP], d[RN_CTR_RX]));
		/* a soft driver's netdev that got far more than its RDMA device: dropped here */
		if (nics[me].drv->netdev_sees_roce && lost_here >= 4 * STRAY_MIN &&
		    lost_here >= d[RN_CTR_TX])
			rn_vars_append(v, "figures", "; ",
				       "%s itself received %" PRIu64 " packets "
				       "%s never got: they are dropped on this host before RoCE (a "
				       "firewall here: nft list ruleset)",
				       nics[me].netdev, lost_here, ibdev);
		return RN_CAUSE_NO_REPLY;
	}
	if (d[RN_CTR_RNR]) {
		rn_vars_set(v, "figures", "%" PRIu64 " RNR NAKs in %.1f s", d[RN_CTR_RNR], secs);
		return RN_CAUSE_RNR;
	}
	if (retrans || d[RN_CTR_OOS] || d[RN_CTR_DUP]) {
		rn_vars_set(v, "figures",
			    "%" PRIu64 " retransmission timeouts, %" PRIu64
			    " sequence-error NAKs, %" PRIu64 " out-of-sequence packets and %" PRIu64
			    " duplicate requests in %.1f s (%" PRIu64 " packets sent, %" PRIu64
			    " received)",
			    d[RN_CTR_TIMEOUT], d[RN_CTR_SEQ_NAK], d[RN_CTR_OOS], d[RN_CTR_DUP],
			    secs, d[RN_CTR_TX], d[RN_CTR_RX]);
		return RN_CAUSE_FABRIC_LOSS;
	}
	if (d[RN_CTR_CNP_SENT] || d[RN_CTR_CNP_RCVD] || d[RN_CTR_ECN]) {
		rn_vars_set(v, "figures",
			    "%" PRIu64 " ECN-marked packets received, %" PRIu64
			    " CNPs sent, %" PRIu64 " CNPs handled in %.1f s",
			    d[RN_CTR_ECN], d[RN_CTR_CNP_SENT], d[RN_CTR_CNP_RCVD], secs);
		return RN_CAUSE_CONGESTION;
	}
	return RN_CAUSE_NONE;
}
