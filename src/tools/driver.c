// SPDX-License-Identifier: MIT
/*
 * nccl-net-driver: act as NCCL towards a net plugin, without a GPU.
 *
 *   probe   (default) load the plugin as NCCL does, init N communicators, list the
 *           devices and their properties, finalize every communicator
 *   server  listen, hand the handles to the client over a TCP side channel, accept,
 *           receive and check --iters messages per size with NCCL_NET_MAX_REQUESTS in flight
 *           (optionally several connections, multi-receives with tags, larger receives)
 *   client  fetch the handles and settings, connect, send the messages
 *   loopback both ends in one process on one device (NCCL's GDR probe connects to itself)
 *   reinit  init/finalize cycles with the library kept loaded, devices and vNICs from the
 *           first init only, a checked loopback on the cached index each cycle
 *
 * NCCL's own call patterns (../shared/docs/nccl-calls.md), so the plugin meets them here
 * before it meets NCCL:
 *   server --late-accept-ms N   the peer's first accept comes N ms after it handed out
 *           its handles (a rank that waits for a third one before its accept loop)
 *   service  one thread (NCCL's proxy service thread) brings up --conns loopback pairs:
 *           listens, connects, accepts and regMr interleaved, closeListen right after
 *           each accept; then a checked transfer on every pair
 *   abort-reload  listeners, connects and accepts in flight, then NCCL's abort (nothing
 *           closed), finalize, dlclose, dlopen, a new communicator with a checked
 *           loopback transfer; the process's threads, fds and sockets must be back to
 *           their count before the first init
 *
 * --merge A,B,... fuses those devices into a vNIC with makeVDevice, as NCCL's NIC fusion
 * (NCCL_IB_MERGE_NICS) does, and uses it instead of --dev.
 *
 * Exit codes (rn_cli.h): 0 done; 1 the plugin failed (load, ABI call, transfer, data
 * check); 2 usage; 3 no RoCE device (probe only with --require-devices, others always).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "driver_rma.h"
#include "netplug.h"
#include "rn_cli.h"
#include "tool_common.h"

#define EXIT_FAILED RN_EXIT_FAIL
#define EXIT_USAGE RN_EXIT_USAGE
#define EXIT_NODEV RN_EXIT_NODEV
#define MAX_COMMS 16
#define MAX_SIZES 16
#define MAX_CONNS 8
#define MAX_TAGS 8
#define MAX_MERGE 8                /* NCCL_NET_MAX_DEVS_PER_NIC (v12) */
#define BUF_CAP ((size_t)64 << 20) /* buffer bytes per connection and side, at most */

struct driver {
	const char *plugin;
	int max_version;
	int ncomms;
	int cycles; /* reinit: communicators made one after another */
	int require_devices;
	int dev;
	int merge[MAX_MERGE]; /* --merge: devices to fuse into the vNIC used */
	int nmerge;
	size_t sizes[MAX_SIZES];
	int nsizes;
	size_t recv_size;   /* 0: each receive as large as the send */
	long iters;         /* per size */
	int window;
	int tags;           /* buffers per irecv (multi-receive), each with its own tag */
	int conns;          /* connections between server and client */
	int nap_us;         /* sleep after a poll round without progress (0: busy poll) */
	int late_accept_ms; /* server: hold the first accept this long */
	int timeout_ms;
	const char *addr;   /* side channel */
	struct netplug np;
	void *ctx[MAX_COMMS];
	int ninit;           /* contexts to finalize */
	int rounds;          /* server/client: the whole exchange this often, in one init */
	const char *between; /* shell command run between rounds (RN_ROUND=n set) */
	int keep;            /* more rounds follow: driver_stop keeps the plugin */
	int ranks, rank;     /* rma: the group, and who we are in it */
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("nccl-net-driver: ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static const char *ptr_str(int p, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", p & NCCL_PTR_HOST ? "HOST" : "",
		 p & NCCL_PTR_CUDA ? "|CUDA" : "", p & NCCL_PTR_DMABUF ? "|DMABUF" : "");
	return buf;
}

static void print_props(int dev, const ncclNetProperties_v12_t *p)
{
	char ptr[32], vdevs[64] = "";
	int i;

	for (i = 0; i < p->vProps.ndevs && i < NCCL_NET_MAX_DEVS_PER_NIC_V12; i++)
		snprintf(vdevs + strlen(vdevs), sizeof(vdevs) - strlen(vdevs), "%s%d", i ? "," : "",
			 p->vProps.devs[i]);
	say("dev %d: name=%s pciPath=%s guid=%#llx speed=%d port=%d latency=%.1f maxComms=%d "
	    "maxRecvs=%d ptrSupport=%s regIsGlobal=%d forceFlush=%d netDeviceType=%d "
	    "netDeviceVersion=%d vProps={%d,[%s]} maxP2pBytes=%zu maxCollBytes=%zu "
	    "maxMultiRequestSize=%d railId=%d planeId=%d",
	    dev, p->name ? p->name : "(null)", p->pciPath ? p->pciPath : "(null)",
	    (unsigned long long)p->guid, p->speed, p->port, p->latency, p->maxComms, p->maxRecvs,
	    ptr_str(p->ptrSupport, ptr, sizeof(ptr)), p->regIsGlobal, p->forceFlush,
	    p->netDeviceType, p->netDeviceVersion, p->vProps.ndevs, vdevs, p->maxP2pBytes,
	    p->maxCollBytes, p->maxMultiRequestSize, p->railId, p->planeId);
}

/* Load, then init one communicator per slot as NCCL does: finalize even after a failure. */
static int driver_start(struct driver *d, int ncomms, int *ndev)
{
	ncclResult_t res;
	int i;

	*ndev = 0;
	if (d->ninit) { /* a later round: the same init, as NCCL's later connections */
		res = netplug_devices(&d->np, ndev);
		return res == ncclSuccess && *ndev > 0 ? 0 : EXIT_NODEV;
	}
	/* main() may have opened it already, to tell a plugin name from a typo */
	if (!d->np.dl && netplug_open(&d->np, d->plugin, d->max_version, tool_logger)) {
		say("could not load a net plugin from '%s' (NCCL would use its internal IB/Socket)",
		    d->plugin);
		return EXIT_FAILED;
	}
	say("loaded net plugin %s (v%d) from %s", d->np.name, d->np.version, d->np.lib);
	for (i = 0; i < ncomms; i++) {
		res = netplug_init(&d->np, &d->ctx[i], 0x5eed0000ull + (uint64_t)i, -1,
				   tool_logger);
		d->ninit = i + 1;
		if (res != ncclSuccess) {
			say("init of communicator %d failed: %s", i, netplug_result_str(res));
			say("no RoCE device: the plugin is disabled, NCCL would fall back to IB/Socket");
			return EXIT_NODEV;
		}
		say("init of communicator %d: ok (ctx %s)", i, d->ctx[i] ? "set" : "none");
	}
	res = netplug_devices(&d->np, ndev);
	if (res != ncclSuccess || *ndev <= 0) {
		say("devices: %s, %d device(s)", netplug_result_str(res), *ndev);
		say("no RoCE device: the plugin is disabled, NCCL would fall back to IB/Socket");
		return EXIT_NODEV;
	}
	say("devices: %d", *ndev);
	return 0;
}

static int driver_stop(struct driver *d)
{
	int i, bad = 0;

	if (d->keep)
		return 0;
	for (i = 0; i < d->ninit; i++) {
		ncclResult_t res = netplug_finalize(&d->np, d->ctx[i]);

		if (res != ncclSuccess) {
			say("finalize of communicator %d failed: %s", i, netplug_result_str(res));
			bad = 1;
		}
	}
	if (d->ninit)
		say("finalized %d communicator(s)", d->ninit);
	d->ninit = 0;
	netplug_close(&d->np);
	return bad;
}

/* The RMA table beside the net one, on the net init's context as NCCL 2.30.7 runs it. */
static int cmd_rma(struct driver *d)
{
	struct driver_rma_opts o = { .ranks = d->ranks,
				     .rank = d->rank,
				     .dev = d->dev,
				     .size = d->sizes[0],
				     .rounds = d->rounds,
				     .iters = d->iters,
				     .timeout_ms = d->timeout_ms,
				     .nap_us = d->nap_us,
				     .addr = d->addr };
	int ndev, rc = driver_start(d, 1, &ndev);

	if (!rc)
		rc = driver_rma(&d->np, d->ctx[0], &o);
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

static int cmd_probe(struct driver *d)
{
	int ndev, i, rc = driver_start(d, d->ncomms, &ndev);

	for (i = 0; !rc && i < ndev; i++) {
		ncclNetProperties_v12_t p;
		ncclResult_t res = netplug_get_properties(&d->np, i, &p);

		if (res != ncclSuccess) {
			say("getProperties(%d) failed: %s", i, netplug_result_str(res));
			rc = EXIT_FAILED;
			break;
		}
		print_props(i, &p);
		if (p.netDeviceType != NCCL_NET_DEVICE_HOST)
			say("dev %d: netDeviceType %d: NCCL would reject the plugin", i,
			    p.netDeviceType);
	}
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	if (rc == EXIT_NODEV && !d->require_devices)
		rc = 0;
	return rc;
}

/* ---- server / client / loopback: NCCL's non-blocking loops ---- */

#define HELLO_MAGIC 0x726e6472u /* "rndr" */

struct wire_hello {
	uint32_t magic, conns, tags, nsizes;
	uint64_t iters, recv_size;
	uint64_t sizes[MAX_SIZES];
	char handle[MAX_CONNS][NCCL_NET_HANDLE_MAXSIZE];
};

/* The client speaks first, so that the server tells its client from a stray connection (a
 * port scanner, a health check, garbage) and keeps waiting for the real one. The hello's
 * size is in it: a client of another build is not taken for the peer. */
#define REQ_MAGIC 0x726e6371u /* "rncq" */

struct wire_req {
	uint32_t magic, hello_size;
};

static const struct wire_req req_mine = { REQ_MAGIC, sizeof(struct wire_hello) };

/* The receiver's verdict, sent back to the sender over the side channel. */
struct wire_ack {
	uint32_t ok;
	uint32_t pad;
	uint64_t sum[MAX_CONNS];
};

static int expired(double deadline)
{
	return tool_now() > deadline;
}

/* One direction of one connection: a window of slots, each with its request. */
struct xfer {
	struct driver *d;
	void *comm, *mh;
	int sender, conn, nslots;
	size_t slot_bytes; /* per buffer */
	unsigned char *buf;
	void *reqs[NCCL_NET_MAX_REQUESTS * MAX_TAGS];
	long msg[NCCL_NET_MAX_REQUESTS * MAX_TAGS]; /* message (sender) / group (receiver) */
	long posted, completed, total;
	uint64_t sum;
	int failed;
};

static size_t group_size(const struct driver *d, long g)
{
	return d->sizes[g / d->iters];
}

/* Tag index @t of group @g is sent with this many bytes: distinct per tag, so a buffer
 * that got another tag's message shows it by its size too. */
static size_t send_size(const struct driver *d, long g, int t)
{
	size_t s = group_size(d, g);

	return d->tags > 1 && s > (size_t)t * 13 ? s - (size_t)t * 13 : s;
}

static size_t max_size(const struct driver *d)
{
	size_t m = d->recv_size;
	int i;

	for (i = 0; i < d->nsizes; i++)
		if (d->sizes[i] > m)
			m = d->sizes[i];
	return m;
}

/* Receives in flight per connection: NCCL's window, fewer when the buffers would be huge. */
static int window_of(const struct driver *d)
{
	size_t per = max_size(d) * (size_t)d->tags;
	long w = per ? (long)(BUF_CAP / per) : d->window;

	if (w > d->window)
		w = d->window;
	return w < 1 ? 1 : (int)w;
}

static unsigned char *xbuf(struct xfer *x, int s, int i)
{
	return x->buf + x->slot_bytes * ((size_t)s * (x->sender ? 1 : x->d->tags) + (size_t)i);
}

static void say_plugin_error(const char *what, ncclResult_t res)
{
	const char *w = tool_last_warn();

	say("%s: %s%s%s", what, netplug_result_str(res), *w ? ": " : "", w);
}

/* Post the next message (group) in slot @s; NCCL's "request NULL = try again later" kept. */
static int xfer_post(struct xfer *x, int s)
{
	struct driver *d = x->d;
	ncclResult_t res;

	if (x->sender) {
		long k = x->posted, g = k / d->tags;
		int pos = (int)(k % d->tags),
		    t = (d->tags - 1 - pos + (int)(g % d->tags)) % d->tags;
		size_t n = send_size(d, g, t);
		uint64_t id = (uint64_t)g * (uint64_t)d->tags + (uint64_t)t;

		tool_fill(xbuf(x, s, 0), n, id);
		res = netplug_isend(&d->np, x->comm, xbuf(x, s, 0), n, 100 + t, x->mh, &x->reqs[s]);
		if (res == ncclSuccess && x->reqs[s])
			x->sum += tool_checksum(xbuf(x, s, 0), n, id);
	} else {
		void *data[MAX_TAGS], *mhs[MAX_TAGS];
		size_t sizes[MAX_TAGS];
		int tags[MAX_TAGS], i;
		long g = x->posted;

		for (i = 0; i < d->tags; i++) {
			data[i] = xbuf(x, s, i);
			sizes[i] = d->recv_size ? d->recv_size : group_size(d, g);
			tags[i] = 100 + i;
			mhs[i] = x->mh;
			memset(data[i], 0xee, sizes[i] < 64 ? sizes[i] : 64);
		}
		res = netplug_irecv(&d->np, x->comm, d->tags, data, sizes, tags, mhs, &x->reqs[s]);
	}
	if (res != ncclSuccess) {
		say_plugin_error(x->sender ? "isend" : "irecv", res);
		return -1;
	}
	if (x->reqs[s])
		x->msg[s] = x->posted++;
	return 0;
}

/* Test slot @s's request; a finished receive is checked buffer by buffer. */
static int xfer_test(struct xfer *x, int s)
{
	struct driver *d = x->d;
	int done = 0, sizes[MAX_TAGS] = { 0 }, i;
	ncclResult_t res = netplug_test(&d->np, x->reqs[s], &done, sizes);
	long g = x->msg[s];

	if (res != ncclSuccess) {
		say_plugin_error("test", res);
		return -1;
	}
	if (!done)
		return 0;
	x->reqs[s] = NULL;
	x->completed++;
	if (x->sender) {
		size_t n = send_size(d, g / d->tags,
				     (d->tags - 1 - (int)(g % d->tags) +
				      (int)((g / d->tags) % d->tags)) %
					     d->tags);

		if (sizes[0] != (int)n) {
			say("conn %d: send %ld: test reported %d bytes, sent %zu", x->conn, g,
			    sizes[0], n);
			return -1;
		}
		return 0;
	}
	for (i = 0; i < d->tags; i++) {
		size_t n = send_size(d, g, i);
		uint64_t id = (uint64_t)g * (uint64_t)d->tags + (uint64_t)i;
		long bad = sizes[i] == (int)n ? tool_check(xbuf(x, s, i), n, id) : -1;

		if (sizes[i] != (int)n || bad >= 0) {
			say("conn %d: message %ld tag %d: %d bytes, expected %zu; first bad byte %ld",
			    x->conn, g, 100 + i, sizes[i], n, bad);
			return -1;
		}
		x->sum += tool_checksum(xbuf(x, s, i), n, id);
	}
	return 0;
}

static int xfer_setup(struct xfer *x, struct driver *d, void *comm, int sender, int conn)
{
	ncclResult_t res;
	size_t bytes;

	memset(x, 0, sizeof(*x));
	x->d = d;
	x->comm = comm;
	x->sender = sender;
	x->conn = conn;
	x->slot_bytes = (max_size(d) + 4095) & ~(size_t)4095;
	if (!x->slot_bytes)
		x->slot_bytes = 4096;
	x->nslots = window_of(d) * (sender ? d->tags : 1);
	x->total = (long)d->nsizes * d->iters * (sender ? d->tags : 1);
	bytes = x->slot_bytes * (size_t)window_of(d) * (size_t)d->tags;
	if (posix_memalign((void **)&x->buf, 4096, bytes)) {
		say("out of memory for %zu bytes of buffers", bytes);
		return -1;
	}
	res = netplug_reg_mr(&d->np, comm, x->buf, bytes, NCCL_PTR_HOST, &x->mh);
	if (res != ncclSuccess) {
		say_plugin_error("regMr", res);
		free(x->buf);
		x->buf = NULL;
		return -1;
	}
	return 0;
}

static int xfer_teardown(struct xfer *x)
{
	ncclResult_t res = ncclSuccess;

	if (x->mh)
		res = netplug_dereg_mr(&x->d->np, x->comm, x->mh);
	free(x->buf);
	if (res != ncclSuccess) {
		say_plugin_error("deregMr", res);
		return -1;
	}
	return 0;
}

/* Drive every transfer to its end in one loop, as NCCL's proxy thread does. */
static int run_transfers(struct driver *d, struct xfer *xs, int n)
{
	double t0 = tool_now(), last = t0, secs, last_done = t0, gap = 0;
	long done_all = 0, want = 0, bytes = 0;
	int i, s;

	for (i = 0; i < n; i++)
		want += xs[i].total;
	while (done_all < want) {
		long before = done_all, posted = 0;

		for (i = 0; i < n; i++) {
			struct xfer *x = &xs[i];

			for (s = 0; s < x->nslots; s++) {
				long p = x->posted;

				if (!x->reqs[s] && x->posted < x->total && xfer_post(x, s))
					return -1;
				posted += x->posted - p;
				if (x->reqs[s]) {
					long c = x->completed;

					if (xfer_test(x, s))
						return -1;
					done_all += x->completed - c;
				}
			}
		}
		/* a dead peer is an error, never a hang: bound the time without progress */
		if (done_all != before || posted) {
			last = tool_now();
			/* the stall a stream sees (a failover's move, a retry): the widest gap */
			if (done_all != before) {
				if (last - last_done > gap)
					gap = last - last_done;
				last_done = last;
			}
		} else if (expired(last + d->timeout_ms / 1000.0)) {
			say("no progress for %d ms after %ld of %ld requests", d->timeout_ms,
			    done_all, want);
			return -1;
		} else {
			tool_nap(d->nap_us);
		}
	}
	secs = tool_now() - t0;
	for (i = 0; i < n; i++) {
		long g;

		for (g = 0; xs[i].sender == xs[0].sender && g < (long)d->nsizes * d->iters; g++)
			bytes += (long)group_size(d, g) * d->tags;
		say("conn %d: %s %ld requests (%d size(s) x %ld x %d tag(s)), window %d",
		    xs[i].conn, xs[i].sender ? "sent" : "received", xs[i].completed, d->nsizes,
		    d->iters, d->tags, window_of(d));
	}
	if (n == 1 && d->nsizes == 1 && d->tags == 1)
		say("%s %ld messages of %zu bytes in %.3f s: %.1f MB/s",
		    xs[0].sender ? "sent" : "received", xs[0].completed, d->sizes[0], secs,
		    secs > 0 ? (double)bytes / secs / 1e6 : 0);
	else
		say("%s %ld bytes in %.3f s: %.1f MB/s", xs[0].sender ? "sent" : "received", bytes,
		    secs, secs > 0 ? (double)bytes / secs / 1e6 : 0);
	say("longest gap between completions: %.1f ms", gap * 1000);
	return 0;
}

/* --merge: fuse the devices as NCCL does (makeVDevice) and use the vNIC. */
static int merge_devs(struct driver *d, int *ndev)
{
	ncclResult_t res;
	int vdev = -1;

	res = netplug_make_vdevice(&d->np, &vdev, d->nmerge, d->merge);
	if (res != ncclSuccess) {
		say_plugin_error("makeVDevice", res);
		return EXIT_FAILED;
	}
	res = netplug_devices(&d->np, ndev);
	if (res != ncclSuccess || vdev < 0 || vdev >= *ndev) {
		say("makeVDevice gave dev %d; devices() now says %d", vdev, *ndev);
		return EXIT_FAILED;
	}
	say("fused %d devices into dev %d (makeVDevice); devices: %d", d->nmerge, vdev, *ndev);
	d->dev = vdev;
	return 0;
}

static int pick_dev(struct driver *d, int ndev)
{
	ncclNetProperties_v12_t p;
	int rc;

	if (d->nmerge && (rc = merge_devs(d, &ndev)))
		return rc;
	if (d->dev >= ndev) {
		say("no device %d (%d devices)", d->dev, ndev);
		return EXIT_USAGE;
	}
	if (netplug_get_properties(&d->np, d->dev, &p) == ncclSuccess)
		say("using dev %d (%s): %d Mbps, %d NIC%s", d->dev, p.name ? p.name : "?", p.speed,
		    p.vProps.ndevs, p.vProps.ndevs > 1 ? "s" : "");
	return 0;
}

static void hello_to_driver(struct driver *d, const struct wire_hello *h)
{
	uint32_t i;

	d->conns = (int)h->conns;
	d->tags = (int)h->tags;
	d->nsizes = (int)h->nsizes;
	d->iters = (long)h->iters;
	d->recv_size = (size_t)h->recv_size;
	for (i = 0; i < h->nsizes; i++)
		d->sizes[i] = (size_t)h->sizes[i];
}

static int hello_ok(const struct wire_hello *h)
{
	return h->magic == HELLO_MAGIC && h->conns >= 1 && h->conns <= MAX_CONNS && h->tags >= 1 &&
	       h->tags <= MAX_TAGS && h->nsizes >= 1 && h->nsizes <= MAX_SIZES && h->iters >= 1;
}

/* --late-accept-ms: the peer has our handles and connects; our first accept comes late. */
static void late_accept(const struct driver *d)
{
	if (d->late_accept_ms <= 0)
		return;
	say("holding the first accept %d ms (the peer connects meanwhile)", d->late_accept_ms);
	usleep((useconds_t)d->late_accept_ms * 1000u);
	say("first accept now");
}

static int cmd_server(struct driver *d)
{
	struct wire_hello hello = { .magic = HELLO_MAGIC,
				    .conns = (uint32_t)d->conns,
				    .tags = (uint32_t)d->tags,
				    .nsizes = (uint32_t)d->nsizes,
				    .iters = (uint64_t)d->iters,
				    .recv_size = d->recv_size };
	void *lc[MAX_CONNS] = { NULL }, *rcs[MAX_CONNS] = { NULL };
	struct xfer xs[MAX_CONNS];
	struct wire_ack ack = { 0 };
	int ndev, lfd = -1, fd = -1, rc = driver_start(d, 1, &ndev), i, nx = 0, left;
	double deadline;
	ncclResult_t res;

	for (i = 0; i < d->nsizes; i++)
		hello.sizes[i] = d->sizes[i];
	if (rc || (rc = pick_dev(d, ndev)))
		goto out;
	rc = EXIT_FAILED;
	for (i = 0; i < d->conns; i++) {
		res = netplug_listen(&d->np, d->ctx[0], d->dev, hello.handle[i], &lc[i]);
		if (res != ncclSuccess || !lc[i]) {
			say_plugin_error("listen", res);
			goto close;
		}
	}
	lfd = side_listen(d->addr);
	if (lfd < 0) {
		say("side channel %s: %s", d->addr, strerror(-lfd));
		goto close;
	}
	say("listening; side channel on %s", d->addr);
	fd = side_accept_greeted(lfd, &req_mine, sizeof(req_mine), d->timeout_ms);
	if (fd < 0 || side_send(fd, &hello, sizeof(hello), d->timeout_ms)) {
		say("side channel: no client within %d ms", d->timeout_ms);
		goto close;
	}
	late_accept(d);
	deadline = tool_now() + d->timeout_ms / 1000.0;
	do {
		left = 0;
		for (i = 0; i < d->conns; i++) {
			if (rcs[i])
				continue;
			res = netplug_accept(&d->np, lc[i], &rcs[i]);
			if (res != ncclSuccess) {
				say_plugin_error("accept", res);
				goto close;
			}
			left += !rcs[i];
		}
		if (left && expired(deadline)) {
			say("accept timed out");
			goto close;
		}
	} while (left);
	say("accepted %d connection(s)", d->conns);
	for (nx = 0; nx < d->conns; nx++)
		if (xfer_setup(&xs[nx], d, rcs[nx], 0, nx))
			goto teardown;
	rc = run_transfers(d, xs, nx) ? EXIT_FAILED : 0;
teardown:
	for (i = 0; i < nx; i++) {
		ack.sum[i] = xs[i].sum;
		if (xfer_teardown(&xs[i]) && !rc)
			rc = EXIT_FAILED;
	}
	/* the verdict goes to the client, which closes only after us */
	ack.ok = !rc;
	if (side_send(fd, &ack, sizeof(ack), d->timeout_ms) && !rc)
		rc = EXIT_FAILED;
close:
	for (i = 0; i < d->conns; i++) {
		if (rcs[i]) {
			res = netplug_close_recv(&d->np, rcs[i]);
			if (res != ncclSuccess && !rc)
				rc = EXIT_FAILED;
		}
		if (lc[i]) {
			res = netplug_close_listen(&d->np, lc[i]);
			if (res != ncclSuccess && !rc)
				rc = EXIT_FAILED;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

static int compare_sums(struct xfer *xs, int n, const struct wire_ack *ack)
{
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		if (xs[i].sum != ack->sum[i]) {
			say("conn %d: checksum sent %#llx, received %#llx", i,
			    (unsigned long long)xs[i].sum, (unsigned long long)ack->sum[i]);
			bad = 1;
		}
	}
	if (!bad)
		say("checksums match (%d connection(s))", n);
	return bad;
}

static int cmd_client(struct driver *d)
{
	struct wire_hello hello;
	void *scs[MAX_CONNS] = { NULL };
	struct xfer xs[MAX_CONNS];
	struct wire_ack ack;
	int ndev, fd, rc = EXIT_FAILED, i, nx = 0, left;
	double deadline, t0;
	ncclResult_t res;

	deadline = tool_now() + d->timeout_ms / 1000.0;
	for (;;) {
		/* rounds: a connection the last round's listener took and never serves must not
		 * eat the whole deadline */
		fd = side_connect(d->addr, d->timeout_ms);
		if (fd >= 0 && !side_send(fd, &req_mine, sizeof(req_mine), d->timeout_ms) &&
		    !side_recv(fd, &hello, sizeof(hello),
			       d->rounds > 1 && d->timeout_ms > 2000 ? 2000 : d->timeout_ms) &&
		    hello_ok(&hello))
			break;
		if (fd >= 0)
			close(fd);
		/* a later round may reach the last round's listener as it closes: again */
		if (d->rounds == 1 || expired(deadline)) {
			say("side channel %s: no server", d->addr);
			return EXIT_FAILED;
		}
		usleep(100 * 1000);
	}
	hello_to_driver(d, &hello);
	rc = driver_start(d, 1, &ndev);
	if (rc || (rc = pick_dev(d, ndev)))
		goto out;
	rc = EXIT_FAILED;
	t0 = tool_now();
	deadline = t0 + d->timeout_ms / 1000.0;
	do {
		left = 0;
		for (i = 0; i < d->conns; i++) {
			if (scs[i])
				continue;
			res = netplug_connect(&d->np, d->ctx[0], d->dev, -1, hello.handle[i],
					      &scs[i]);
			if (res != ncclSuccess) {
				say_plugin_error("connect", res);
				say("connect failed after %.1f s", tool_now() - t0);
				goto close;
			}
			left += !scs[i];
		}
		if (left && expired(deadline)) {
			say("connect timed out");
			goto close;
		}
	} while (left);
	say("connected %d connection(s) in %.1f s", d->conns, tool_now() - t0);
	for (nx = 0; nx < d->conns; nx++)
		if (xfer_setup(&xs[nx], d, scs[nx], 1, nx))
			goto teardown;
	rc = run_transfers(d, xs, nx) ? EXIT_FAILED : 0;
	if (!rc) {
		int err = side_recv(fd, &ack, sizeof(ack), d->timeout_ms);

		if (err || !ack.ok) {
			say("the server did not confirm the data: %s",
			    err ? strerror(-err) : "it said its side failed");
			rc = EXIT_FAILED;
		} else if (compare_sums(xs, nx, &ack)) {
			rc = EXIT_FAILED;
		}
	}
teardown:
	for (i = 0; i < nx; i++)
		if (xfer_teardown(&xs[i]) && !rc)
			rc = EXIT_FAILED;
close:
	for (i = 0; i < d->conns; i++) {
		if (!scs[i])
			continue;
		res = netplug_close_send(&d->np, scs[i]);
		if (res != ncclSuccess && !rc)
			rc = EXIT_FAILED;
	}
out:
	close(fd);
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

/* Listen, connect and accept on d->dev in this process, transfer and check, close all. */
static int loopback_xfer(struct driver *d, void *ctx)
{
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *sc = NULL, *rcomm = NULL;
	struct xfer xs[2];
	int rc = EXIT_FAILED, nx = 0, i;
	double deadline;
	ncclResult_t res;

	d->conns = 1;
	res = netplug_listen(&d->np, ctx, d->dev, handle, &lc);
	if (res != ncclSuccess || !lc) {
		say_plugin_error("listen", res);
		return EXIT_FAILED;
	}
	deadline = tool_now() + d->timeout_ms / 1000.0;
	while (!sc || !rcomm) {
		if (!sc && (res = netplug_connect(&d->np, ctx, d->dev, -1, handle, &sc))) {
			say_plugin_error("connect", res);
			goto close;
		}
		if (!rcomm && (res = netplug_accept(&d->np, lc, &rcomm))) {
			say_plugin_error("accept", res);
			goto close;
		}
		if ((!sc || !rcomm) && expired(deadline)) {
			say("loopback connect/accept timed out");
			goto close;
		}
	}
	say("loopback connected");
	if (xfer_setup(&xs[0], d, rcomm, 0, 0))
		goto close;
	nx = 1;
	if (xfer_setup(&xs[1], d, sc, 1, 0))
		goto teardown;
	nx = 2;
	rc = run_transfers(d, xs, 2) ? EXIT_FAILED : 0;
	if (!rc && xs[0].sum != xs[1].sum) {
		say("checksum sent %#llx, received %#llx", (unsigned long long)xs[1].sum,
		    (unsigned long long)xs[0].sum);
		rc = EXIT_FAILED;
	} else if (!rc) {
		say("checksums match (loopback)");
	}
teardown:
	for (i = 0; i < nx; i++)
		if (xfer_teardown(&xs[i]) && !rc)
			rc = EXIT_FAILED;
close:
	if (sc && netplug_close_send(&d->np, sc) != ncclSuccess && !rc)
		rc = EXIT_FAILED;
	if (rcomm && netplug_close_recv(&d->np, rcomm) != ncclSuccess && !rc)
		rc = EXIT_FAILED;
	if (netplug_close_listen(&d->np, lc) != ncclSuccess && !rc)
		rc = EXIT_FAILED;
	return rc;
}

/* Both ends in this process on one device, as NCCL's GDR probe connects to itself. */
static int cmd_loopback(struct driver *d)
{
	int ndev, rc = driver_start(d, 1, &ndev);

	if (!rc && !(rc = pick_dev(d, ndev)))
		rc = loopback_xfer(d, d->ctx[0]);
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

/*
 * NCCL with the library kept loaded (NCCL_NET_PLUGIN_REF_COUNT >= 1, 2.27's default):
 * init, devices and makeVDevice at the first communicator only, then finalize; each
 * later communicator inits and goes straight to the device index NCCL cached (a vNIC's
 * included), here with a checked loopback transfer on it, then finalizes. With a v10
 * table (--max-version 10) init comes again each cycle, as 2.28's v10 shim calls it
 * when its count comes back from 0; finalize never reaches the plugin.
 */
static int cmd_reinit(struct driver *d)
{
	ncclNetProperties_v12_t p;
	char first[256] = "";
	int ndev, cyc, rc = driver_start(d, 1, &ndev);
	ncclResult_t res;

	if (!rc)
		rc = pick_dev(d, ndev);
	for (cyc = 0; !rc && cyc < d->cycles; cyc++) {
		if (cyc) {
			if (d->np.version < 11)
				d->np.legacy_inited = 0; /* the v10 shim's count went back to 0 */
			res = netplug_init(&d->np, &d->ctx[0], 0x5eed0000ull + (uint64_t)cyc, -1,
					   tool_logger);
			d->ninit = 1;
			if (res != ncclSuccess) {
				say("cycle %d: init failed: %s", cyc, netplug_result_str(res));
				rc = EXIT_FAILED;
				break;
			}
		}
		/* no devices(), no makeVDevice: NCCL cached them at the first init */
		res = netplug_get_properties(&d->np, d->dev, &p);
		if (res != ncclSuccess) {
			say("cycle %d: getProperties(%d) failed: %s (NCCL's cached index is gone)",
			    cyc, d->dev, netplug_result_str(res));
			rc = EXIT_FAILED;
			break;
		}
		if (!cyc)
			snprintf(first, sizeof(first), "%s", p.name ? p.name : "?");
		if (strcmp(first, p.name ? p.name : "?")) {
			say("cycle %d: dev %d is %s now, %s at the first init", cyc, d->dev,
			    p.name ? p.name : "?", first);
			rc = EXIT_FAILED;
			break;
		}
		rc = loopback_xfer(d, d->ctx[0]);
		res = netplug_finalize(&d->np, d->ctx[0]);
		d->ninit = 0;
		if (res != ncclSuccess) {
			say("cycle %d: finalize failed: %s", cyc, netplug_result_str(res));
			rc = EXIT_FAILED;
		}
		if (!rc)
			say("cycle %d: init, dev %d (%s), checked loopback, finalize: ok", cyc,
			    d->dev, first);
	}
	if (!rc)
		say("%d init/finalize cycles with the library kept loaded (v%d): ok", d->cycles,
		    d->np.version);
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

/* ---- NCCL's call patterns ---- */

/* What this process holds: to tell what a plugin left behind after its unload. */
struct proc_counts {
	int threads, fds, sockets;
};

static int count_dir(const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n;
}

static void proc_count(struct proc_counts *c)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], link[64];
	ssize_t n;

	memset(c, 0, sizeof(*c));
	c->threads = count_dir("/proc/self/task");
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(dir))
			continue;
		c->fds++;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			c->sockets += !strncmp(link, "socket:", 7);
		}
	}
	closedir(dir);
}

static void say_counts(const char *when, const struct proc_counts *c)
{
	say("%s: %d threads, %d fds, %d sockets", when, c->threads, c->fds, c->sockets);
}

/*
 * NCCL's proxy service thread: every local rank's ops back to back on one thread. Here
 * --conns loopback pairs: each round makes one call per pair, listen first, then its
 * connect and accept, regMr on each comm as soon as it is up (while the others still
 * connect), closeListen right after the accept. Then a checked transfer on every pair.
 */
static int cmd_service(struct driver *d)
{
	static char h[MAX_CONNS][NCCL_NET_HANDLE_MAXSIZE];
	void *lc[MAX_CONNS] = { NULL }, *sc[MAX_CONNS] = { NULL }, *rcm[MAX_CONNS] = { NULL };
	struct xfer xs[2 * MAX_CONNS];
	int ready[2 * MAX_CONNS] = { 0 };
	int ndev, rc = driver_start(d, 1, &ndev), n = d->conns, i, up = 0, calls = 0, regs = 0;
	double t0, deadline;
	ncclResult_t res;

	if (rc || (rc = pick_dev(d, ndev)))
		goto out;
	rc = EXIT_FAILED;
	t0 = tool_now();
	deadline = t0 + d->timeout_ms / 1000.0;
	while (up < 2 * n) {
		for (i = 0; i < n; i++) {
			if (!lc[i] && !rcm[i]) {
				res = netplug_listen(&d->np, d->ctx[0], d->dev, h[i], &lc[i]);
				calls++;
				if (res != ncclSuccess || !lc[i]) {
					say_plugin_error("listen", res);
					goto close;
				}
				continue; /* its connect comes in a later op */
			}
			if (!sc[i]) {
				res = netplug_connect(&d->np, d->ctx[0], d->dev, -1, h[i], &sc[i]);
				calls++;
				if (res != ncclSuccess) {
					say_plugin_error("connect", res);
					goto close;
				}
			} else if (!ready[2 * i + 1]) {
				if (xfer_setup(&xs[2 * i + 1], d, sc[i], 1, i))
					goto close;
				ready[2 * i + 1] = 1;
				regs++;
				up++;
			}
			if (!rcm[i]) {
				res = netplug_accept(&d->np, lc[i], &rcm[i]);
				calls++;
				if (res != ncclSuccess) {
					say_plugin_error("accept", res);
					goto close;
				}
				if (rcm[i]) { /* as NCCL: the listener goes right after its accept */
					res = netplug_close_listen(&d->np, lc[i]);
					lc[i] = NULL;
					if (res != ncclSuccess) {
						say_plugin_error("closeListen", res);
						goto close;
					}
				}
			} else if (!ready[2 * i]) {
				if (xfer_setup(&xs[2 * i], d, rcm[i], 0, i))
					goto close;
				ready[2 * i] = 1;
				regs++;
				up++;
			}
		}
		if (up < 2 * n && expired(deadline)) {
			say("service: %d of %d comms up after %d ms", up, 2 * n, d->timeout_ms);
			goto close;
		}
	}
	say("service thread: %d pairs up in %.3f s (%d listen/connect/accept calls, %d regMr "
	    "interleaved)",
	    n, tool_now() - t0, calls, regs);
	rc = run_transfers(d, xs, 2 * n) ? EXIT_FAILED : 0;
	for (i = 0; !rc && i < n; i++)
		if (xs[2 * i].sum != xs[2 * i + 1].sum) {
			say("pair %d: checksum sent %#llx, received %#llx", i,
			    (unsigned long long)xs[2 * i + 1].sum,
			    (unsigned long long)xs[2 * i].sum);
			rc = EXIT_FAILED;
		}
	if (!rc)
		say("checksums match (%d pairs)", n);
close:
	for (i = 0; i < 2 * n; i++)
		if (ready[i] && xfer_teardown(&xs[i]) && !rc)
			rc = EXIT_FAILED;
	for (i = 0; i < n; i++) {
		if (sc[i] && netplug_close_send(&d->np, sc[i]) != ncclSuccess && !rc)
			rc = EXIT_FAILED;
		if (rcm[i] && netplug_close_recv(&d->np, rcm[i]) != ncclSuccess && !rc)
			rc = EXIT_FAILED;
		if (lc[i] && netplug_close_listen(&d->np, lc[i]) != ncclSuccess && !rc)
			rc = EXIT_FAILED;
	}
out:
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

/*
 * ncclCommAbort during connection setup, then a restart in place: --conns listeners,
 * a connect to each, accepts begun on half of them, one pair connected with a
 * registration; NCCL then closes nothing (it frees only what completed, and this one
 * never did), finalizes and unloads the plugin. Then it loads it again for a new
 * communicator, which must work (a checked loopback transfer). Threads, fds and sockets
 * must be back to their count before the first init, after the unload and at the end.
 */
static int cmd_abort_reload(struct driver *d)
{
	static char h[MAX_CONNS][NCCL_NET_HANDLE_MAXSIZE], hc[MAX_CONNS][NCCL_NET_HANDLE_MAXSIZE];
	void *lc[MAX_CONNS] = { NULL }, *sc, *rcm, *pl = NULL, *ps = NULL, *pr = NULL, *mh = NULL;
	char ph[NCCL_NET_HANDLE_MAXSIZE];
	struct proc_counts before, held, unloaded, end;
	int ndev, rc, n = d->conns, i, k, nconn = 0, nacc = 0;
	static char buf[1 << 20];
	double deadline;
	ncclResult_t res;

	proc_count(&before);
	say_counts("before the first init", &before);
	rc = driver_start(d, 1, &ndev);
	if (rc || (rc = pick_dev(d, ndev)))
		goto stop;
	rc = EXIT_FAILED;
	/* a connection that completed, with a registration: NCCL would close it */
	if (netplug_listen(&d->np, d->ctx[0], d->dev, ph, &pl) != ncclSuccess || !pl)
		goto stop;
	deadline = tool_now() + d->timeout_ms / 1000.0;
	while ((!ps || !pr) && !expired(deadline)) {
		if (!ps && netplug_connect(&d->np, d->ctx[0], d->dev, -1, ph, &ps) != ncclSuccess)
			goto stop;
		if (!pr && netplug_accept(&d->np, pl, &pr) != ncclSuccess)
			goto stop;
	}
	if (!ps || !pr ||
	    netplug_reg_mr(&d->np, ps, buf, sizeof(buf), NCCL_PTR_HOST, &mh) != ncclSuccess) {
		say("abort-reload: the first connection did not come up");
		goto stop;
	}
	/* as NCCL: the listener goes right after its accept */
	if (netplug_close_listen(&d->np, pl) != ncclSuccess)
		goto stop;
	for (i = 0; i < n; i++) {
		res = netplug_listen(&d->np, d->ctx[0], d->dev, h[i], &lc[i]);
		if (res != ncclSuccess || !lc[i]) {
			say_plugin_error("listen", res);
			goto stop;
		}
		memcpy(hc[i], h[i], sizeof(hc[i]));
	}
	/*
	 * Connects in flight, and accepts begun on half the listeners: never to complete (the
	 * connects of those are not called again, or they might).
	 */
	for (k = 0; k < 100; k++) {
		for (i = k > 50 ? n / 2 : 0; i < n; i++) {
			sc = NULL;
			if (netplug_connect(&d->np, d->ctx[0], d->dev, -1, hc[i], &sc) !=
				    ncclSuccess ||
			    sc) {
				say("abort-reload: connect %d %s", i, sc ? "completed" : "failed");
				goto stop;
			}
			nconn += !k;
		}
		if (k == 50)
			for (i = 0; i < n / 2; i++) {
				rcm = NULL;
				if (netplug_accept(&d->np, lc[i], &rcm) != ncclSuccess || rcm) {
					say("abort-reload: accept %d %s", i,
					    rcm ? "completed" : "failed");
					goto stop;
				}
				nacc++;
			}
		usleep(1000);
	}
	proc_count(&held);
	say("aborting with 1 connected pair (1 registration), %d listeners, %d connects in "
	    "flight, %d accepts begun: nothing closed, as ncclCommAbort",
	    n, nconn, nacc);
	say_counts("at the abort", &held);
	rc = 0;
stop:
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	if (rc)
		return rc;
	proc_count(&unloaded);
	say_counts("after finalize + dlclose", &unloaded);
	/* the restart in place: load it again, a new communicator, checked data */
	memset(&d->np, 0, sizeof(d->np));
	rc = cmd_loopback(d);
	proc_count(&end);
	say_counts("after the new communicator's finalize + dlclose", &end);
	if (unloaded.threads != before.threads || unloaded.fds != before.fds ||
	    unloaded.sockets != before.sockets || end.threads != before.threads ||
	    end.fds != before.fds || end.sockets != before.sockets) {
		say("abort-reload: the plugin left threads, fds or sockets behind");
		return EXIT_FAILED;
	}
	if (!rc)
		say("abort-reload: nothing left behind; the new communicator works");
	return rc;
}

/* ---- command line ---- */

static const struct {
	const char *name;
	int (*fn)(struct driver *d);
	const char *help;
} cmds[] = {
	{ "probe", cmd_probe, "init communicators, list devices and properties (default)" },
	{ "server", cmd_server, "listen on --dev; hand the handle out on ADDR:PORT; receive" },
	{ "client", cmd_client, "fetch the handle from ADDR:PORT; connect; send" },
	{ "loopback", cmd_loopback, "connect --dev to itself in one process; send and receive" },
	{ "service", cmd_service, "--conns loopback pairs from one thread, NCCL's proxy way" },
	{ "abort-reload", cmd_abort_reload,
	  "abort mid-connect, unload, reload, transfer; "
	  "nothing may be left" },
	{ "reinit", cmd_reinit,
	  "--cycles init/finalize with the library kept loaded; loopback each" },
	{ "rma", cmd_rma,
	  "rank --rank of --ranks: the RMA table (NCCL 2.30.7's host RMA) over "
	  "the group; rank 0 gathers the handles on ADDR:PORT" },
};

/* "0,1,4095,64K": sizes in turn; a plain --size replaces the list with one size. */
static int parse_sizes(const char *arg, int single, struct driver *d)
{
	char buf[512], *tok, *save = NULL;
	int n = 0;

	if (strlen(arg) >= sizeof(buf) || !*arg || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,"))
		return -1;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t v;

		if (n == MAX_SIZES || rn_cli_size(tok, 1u << 30, &v) || (single && !v))
			return -1;
		d->sizes[n++] = v;
	}
	if (!n || (single && n > 1))
		return -1;
	d->nsizes = n;
	return 0;
}

/* "0,1": 2..MAX_MERGE distinct device indices. */
static int parse_merge(const char *arg, struct driver *d)
{
	char buf[128], *tok, *save = NULL;
	int n = 0, i, v;

	if (strlen(arg) >= sizeof(buf) || !*arg || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,"))
		return -1;
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_MERGE || rn_cli_int(tok, 0, 1023, &v))
			return -1;
		for (i = 0; i < n; i++)
			if (d->merge[i] == v)
				return -1;
		d->merge[n++] = v;
	}
	if (n < 2)
		return -1;
	d->nmerge = n;
	return 0;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"usage: nccl-net-driver [options] [PLUGIN] [probe | server ADDR:PORT | client ADDR:PORT |\n"
		"                                           loopback | service | abort-reload | reinit |\n"
		"                                           rma ADDR:PORT]\n"
		"                                           [options]\n"
		"  PLUGIN             as NCCL_NET_PLUGIN (e.g. roce); same as --plugin\n"
		"  --plugin NAME      NCCL_NET_PLUGIN value (default: $NCCL_NET_PLUGIN, else roce)\n"
		"  --max-version N    newest ncclNetPlugin_vN to try, 6..12 (12 as NCCL 2.30, 11 as 2.28)\n"
		"  --comms N          communicators to init and finalize, 1..%d (probe; default 2)\n"
		"  --cycles N         reinit: communicators one after another, 1..1000 (default 3)\n"
		"  --require-devices  probe exits 3 when the plugin offers no device\n"
		"  --dev N            device index (server/client/loopback; default 0)\n"
		"  --merge A,B,...    fuse these devices into a vNIC (makeVDevice, as NCCL's\n"
		"                     NCCL_IB_MERGE_NICS) and use it instead of --dev; 2..%d\n"
		"  --size BYTES       message size, 1..1G, K/M/G suffixes (server; default 1M)\n"
		"  --sizes A,B,...    several sizes in turn, --iters each (server; up to %d; 0 ok)\n"
		"  --iters N          messages per size, >= 1 (server; default 100)\n"
		"  --window N         receives in flight per connection, 1..%d (default %d; fewer\n"
		"                     when they would take more than 64 MiB)\n"
		"  --tags N           buffers per irecv, 1..%d, tags 100..; the sender sends them in\n"
		"                     another order, each tag with its own size (server)\n"
		"  --recv-size BYTES  post receives of this size instead of the send's (server)\n"
		"  --conns N          connections, 1..%d (server, service, abort-reload; default 1)\n"
		"  --late-accept-ms N server: hold the first accept N ms after the client has the\n"
		"                     handles (it connects meanwhile), 0..86400000\n"
		"  --nap-us N         sleep N us after a poll round without progress, 0..1000000\n"
		"                     (default 0: busy poll, as NCCL's proxy thread)\n"
		"  --timeout-ms N     bound on every wait, 1..86400000 (default 30000)\n"
		"  --rounds N         server/client: listen, connect and transfer N times in one\n"
		"                     init (default 1)\n"
		"  --between CMD      run CMD (sh -c, RN_ROUND=n) after each round but the last\n"
		"  --ranks N          rma: ranks in the group, 1..64 (default 1)\n"
		"  --rank R           rma: this process's rank, 0..N-1 (default 0); --size, --rounds,\n"
		"                     --iters (the bandwidth puts) and --dev apply\n"
		"  -v, --verbose      NCCL_DEBUG=INFO at least, for the plugin's lines\n"
		"  -h, --help         this text\n"
		"      --version      print the version\n"
		"Options may come before or after the command. The client takes sizes, iterations,\n"
		"tags and connections from the server.\n"
		"commands:\n",
		MAX_COMMS, MAX_MERGE, MAX_SIZES, NCCL_NET_MAX_REQUESTS, NCCL_NET_MAX_REQUESTS,
		MAX_TAGS, MAX_CONNS);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fputs(RN_CLI_EXIT_HELP, f);
}

#define PROG "nccl-net-driver"

static int bad_value(const char *opt, const char *val)
{
	return rn_cli_error(PROG, NULL, EXIT_USAGE, "bad value '%s' for --%s", val, opt);
}

/* --rounds: NCCL connects again and again after one init; --between changes the host meanwhile. */
static int run_rounds(struct driver *d, int (*fn)(struct driver *d))
{
	int r, rc = 0;

	for (r = 1; r <= d->rounds && !rc; r++) {
		if (d->rounds > 1)
			say("round %d of %d", r, d->rounds);
		d->keep = r < d->rounds;
		rc = fn(d);
		if (!rc && d->keep && d->between) {
			char n[16];
			int st;

			snprintf(n, sizeof(n), "%d", r);
			setenv("RN_ROUND", n, 1);
			st = system(d->between);
			say("between rounds %d and %d: '%s' exited %d", r, r + 1, d->between,
			    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		}
	}
	d->keep = 0;
	if (d->ninit && driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "max-version", required_argument, NULL, 'V' },
		{ "comms", required_argument, NULL, 'c' },
		{ "cycles", required_argument, NULL, 'Y' },
		{ "require-devices", no_argument, NULL, 'r' },
		{ "dev", required_argument, NULL, 'd' },
		{ "merge", required_argument, NULL, 'M' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "window", required_argument, NULL, 'w' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "sizes", required_argument, NULL, 'S' },
		{ "tags", required_argument, NULL, 'T' },
		{ "recv-size", required_argument, NULL, 'R' },
		{ "conns", required_argument, NULL, 'C' },
		{ "nap-us", required_argument, NULL, 'N' },
		{ "late-accept-ms", required_argument, NULL, 'L' },
		{ "rounds", required_argument, NULL, 'O' },
		{ "between", required_argument, NULL, 'B' },
		{ "ranks", required_argument, NULL, 'K' },
		{ "rank", required_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'Z' },
		{ NULL, 0, NULL, 0 },
	};
	struct driver d = {
		.plugin = getenv("NCCL_NET_PLUGIN") && *getenv("NCCL_NET_PLUGIN") ?
				  getenv("NCCL_NET_PLUGIN") :
				  "roce",
		.max_version = 12,
		.ncomms = 2,
		.cycles = 3,
		.sizes = { 1 << 20 },
		.nsizes = 1,
		.iters = 100,
		.window = NCCL_NET_MAX_REQUESTS,
		.tags = 1,
		.conns = 1,
		.timeout_ms = 30000,
		.rounds = 1,
		.ranks = 1,
	};
	int (*fn)(struct driver *d) = cmd_probe;
	const char *cmd = "probe", *plugin_word = NULL;
	int c, k, verbose = 0, is_cmd;
	size_t i;

	opterr = 0;
	/* no '+': options may follow the command and its address (getopt permutes) */
	while ((c = getopt_long(argc, argv, ":vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!*optarg)
				return bad_value("plugin", optarg);
			d.plugin = optarg;
			break;
		case 'V':
			if (rn_cli_int(optarg, 6, 12, &d.max_version))
				return bad_value("max-version", optarg);
			break;
		case 'c':
			if (rn_cli_int(optarg, 1, MAX_COMMS, &d.ncomms))
				return bad_value("comms", optarg);
			break;
		case 'Y':
			if (rn_cli_int(optarg, 1, 1000, &d.cycles))
				return bad_value("cycles", optarg);
			break;
		case 'r':
			d.require_devices = 1;
			break;
		case 'd':
			if (rn_cli_int(optarg, 0, 1023, &d.dev))
				return bad_value("dev", optarg);
			break;
		case 'M':
			if (parse_merge(optarg, &d))
				return bad_value("merge", optarg);
			break;
		case 's':
		case 'S':
			if (parse_sizes(optarg, c == 's', &d))
				return bad_value(c == 's' ? "size" : "sizes", optarg);
			break;
		case 'R':
			if (rn_cli_size(optarg, 1u << 30, &d.recv_size))
				return bad_value("recv-size", optarg);
			break;
		case 'T':
			if (rn_cli_int(optarg, 1, MAX_TAGS, &d.tags))
				return bad_value("tags", optarg);
			break;
		case 'C':
			if (rn_cli_int(optarg, 1, MAX_CONNS, &d.conns))
				return bad_value("conns", optarg);
			break;
		case 'N':
			if (rn_cli_int(optarg, 0, 1000000, &d.nap_us))
				return bad_value("nap-us", optarg);
			break;
		case 'L':
			if (rn_cli_int(optarg, 0, 86400000, &d.late_accept_ms))
				return bad_value("late-accept-ms", optarg);
			break;
		case 'O':
			if (rn_cli_int(optarg, 1, 100, &d.rounds))
				return bad_value("rounds", optarg);
			break;
		case 'B':
			d.between = optarg;
			break;
		case 'K':
			if (rn_cli_int(optarg, 1, 64, &d.ranks))
				return bad_value("ranks", optarg);
			break;
		case 'k':
			if (rn_cli_int(optarg, 0, 63, &d.rank))
				return bad_value("rank", optarg);
			break;
		case 'n':
			if (rn_cli_long(optarg, 1, 1000000000L, &d.iters))
				return bad_value("iters", optarg);
			break;
		case 'w':
			if (rn_cli_int(optarg, 1, NCCL_NET_MAX_REQUESTS, &d.window))
				return bad_value("window", optarg);
			break;
		case 't':
			if (rn_cli_int(optarg, 1, 86400000, &d.timeout_ms))
				return bad_value("timeout-ms", optarg);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'Z':
			return rn_cli_version(PROG);
		default:
			return rn_cli_bad_option(PROG, NULL, c, argv, optind, optopt);
		}
	}
	if (verbose)
		tool_log_at_least(NCCL_LOG_INFO);
	/* [PLUGIN] [COMMAND [ADDR]]: `nccl-net-driver roce` reads like NCCL_NET_PLUGIN=roce, a
	 * first word that is no command names the plugin. */
	k = optind;
	for (is_cmd = 0, i = 0; k < argc && i < sizeof(cmds) / sizeof(cmds[0]); i++)
		is_cmd |= !strcmp(argv[k], cmds[i].name);
	if (k < argc && !is_cmd)
		plugin_word = argv[k++];
	if (k < argc) {
		cmd = argv[k++];
		for (fn = NULL, i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (!strcmp(cmd, cmds[i].name))
				fn = cmds[i].fn;
		if (!fn)
			return rn_cli_error(PROG, NULL, EXIT_USAGE, "unknown command '%s'", cmd);
	}
	if (fn == cmd_rma && d.rank >= d.ranks)
		return rn_cli_error(PROG, NULL, EXIT_USAGE,
				    "rma: --rank %d is not below --ranks %d", d.rank, d.ranks);
	if (fn == cmd_server || fn == cmd_client || fn == cmd_rma) {
		if (k == argc)
			return rn_cli_error(PROG, NULL, EXIT_USAGE, "%s needs ADDR:PORT", cmd);
		d.addr = argv[k++];
		if (side_addr_check(d.addr))
			return rn_cli_error(PROG, NULL, EXIT_USAGE,
					    "bad address '%s' (ADDR:PORT, "
					    "[IPv6]:PORT or unix:PATH)",
					    d.addr);
	}
	if (k < argc)
		return rn_cli_error(PROG, NULL, EXIT_USAGE, "unexpected argument '%s'", argv[k]);
	/* A lone word that is neither a command nor a plugin that loads: a typo. Checked last,
	 * as it is the only check that does work (dlopen). */
	if (plugin_word && optind + 1 == argc &&
	    netplug_open(&d.np, plugin_word, d.max_version, tool_logger))
		return rn_cli_error(PROG, NULL, EXIT_USAGE,
				    "unknown command '%s' (nor a plugin "
				    "that loads)",
				    plugin_word);
	if (plugin_word)
		d.plugin = plugin_word;
	if (fn != cmd_server && fn != cmd_client)
		return fn(&d);
	return run_rounds(&d, fn);
}
