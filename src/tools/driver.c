// SPDX-License-Identifier: MIT
/*
 * nccl-net-driver: act as NCCL towards a net plugin, without a GPU.
 *
 *   probe   (default) load the plugin as NCCL does, init N communicators, list the
 *           devices and their properties, finalize every communicator
 *   server  listen, hand the handle to the client over a TCP side channel, accept,
 *           receive and check --iters messages with NCCL_NET_MAX_REQUESTS in flight
 *   client  fetch the handle, connect, send the messages
 *
 * Exit codes: 0 done; 1 the plugin failed (load, ABI call, transfer, data check);
 * 2 usage; 3 no RoCE device (probe only with --require-devices, server/client always).
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netplug.h"
#include "tool_common.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_NODEV 3
#define MAX_COMMS 16

struct driver {
	const char *plugin;
	int max_version;
	int ncomms;
	int require_devices;
	int dev;
	size_t size;
	long iters;
	int window;
	int timeout_ms;
	const char *addr; /* side channel */
	struct netplug np;
	void *ctx[MAX_COMMS];
	int ninit;        /* contexts to finalize */
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
	char ptr[32];

	say("dev %d: name=%s pciPath=%s guid=%#llx speed=%d port=%d latency=%.1f maxComms=%d "
	    "maxRecvs=%d ptrSupport=%s regIsGlobal=%d forceFlush=%d netDeviceType=%d "
	    "netDeviceVersion=%d vProps={%d,[%d]} maxP2pBytes=%zu maxCollBytes=%zu "
	    "maxMultiRequestSize=%d railId=%d planeId=%d",
	    dev, p->name ? p->name : "(null)", p->pciPath ? p->pciPath : "(null)",
	    (unsigned long long)p->guid, p->speed, p->port, p->latency, p->maxComms, p->maxRecvs,
	    ptr_str(p->ptrSupport, ptr, sizeof(ptr)), p->regIsGlobal, p->forceFlush,
	    p->netDeviceType, p->netDeviceVersion, p->vProps.ndevs, p->vProps.devs[0],
	    p->maxP2pBytes, p->maxCollBytes, p->maxMultiRequestSize, p->railId, p->planeId);
}

/* Load, then init one communicator per slot as NCCL does: finalize even after a failure. */
static int driver_start(struct driver *d, int ncomms, int *ndev)
{
	ncclResult_t res;
	int i;

	*ndev = 0;
	if (netplug_open(&d->np, d->plugin, d->max_version, tool_logger)) {
		say("could not load a net plugin from '%s' (NCCL would use its internal IB/Socket)",
		    d->plugin);
		return EXIT_FAILED;
	}
	say("loaded net plugin %s (v%d) from %s", d->np.name, d->np.version, d->np.lib);
	for (i = 0; i < ncomms; i++) {
		res = netplug_init(&d->np, &d->ctx[i], 0x5eed0000ull + (uint64_t)i, -1, tool_logger);
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

/* ---- server / client: one connection, NCCL's non-blocking loops ---- */

struct wire_hello {
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	uint64_t size;
	uint64_t iters;
};

static void fill(unsigned char *buf, size_t size, long i)
{
	size_t j;

	for (j = 0; j < size; j++)
		buf[j] = (unsigned char)(i * 131 + (long)j);
}

static long check(const unsigned char *buf, size_t size, long i)
{
	size_t j;

	for (j = 0; j < size; j++)
		if (buf[j] != (unsigned char)(i * 131 + (long)j))
			return (long)j;
	return -1;
}

static int expired(double deadline)
{
	return tool_now() > deadline;
}

/* One direction of one connection: a window of slots, each with its request. */
struct xfer {
	struct driver *d;
	void *comm, *mh;
	int sender;
	unsigned char *buf;
	void *reqs[NCCL_NET_MAX_REQUESTS];
	long msg[NCCL_NET_MAX_REQUESTS]; /* message number held by each slot */
	long posted, completed;
};

static unsigned char *slot_buf(struct xfer *x, int s)
{
	return x->buf + x->d->size * (size_t)s;
}

/* Post the next message in slot @s; NCCL's "request NULL = try again later" kept. */
static int xfer_post(struct xfer *x, int s)
{
	struct driver *d = x->d;
	ncclResult_t res;

	if (x->sender) {
		fill(slot_buf(x, s), d->size, x->posted);
		res = netplug_isend(&d->np, x->comm, slot_buf(x, s), d->size, 0, x->mh,
				    &x->reqs[s]);
	} else {
		void *data = slot_buf(x, s);
		size_t size = d->size;
		int tag = 0;

		res = netplug_irecv(&d->np, x->comm, 1, &data, &size, &tag, &x->mh, &x->reqs[s]);
	}
	if (res != ncclSuccess) {
		say("%s: %s", x->sender ? "isend" : "irecv", netplug_result_str(res));
		return -1;
	}
	if (x->reqs[s])
		x->msg[s] = x->posted++;
	return 0;
}

/* Test slot @s's request; a finished receive is checked byte by byte. */
static int xfer_test(struct xfer *x, int s)
{
	struct driver *d = x->d;
	int done = 0, sizes[1] = { 0 };
	ncclResult_t res = netplug_test(&d->np, x->reqs[s], &done, sizes);
	long bad;

	if (res != ncclSuccess) {
		say("test: %s", netplug_result_str(res));
		return -1;
	}
	if (!done)
		return 0;
	x->reqs[s] = NULL;
	x->completed++;
	if (x->sender)
		return 0;
	bad = check(slot_buf(x, s), d->size, x->msg[s]);
	if (sizes[0] != (int)d->size || bad >= 0) {
		say("message %ld: %d bytes, expected %zu; first bad byte %ld", x->msg[s], sizes[0],
		    d->size, bad);
		return -1;
	}
	return 0;
}

static int run_transfer(struct driver *d, void *comm, int sender)
{
	struct xfer x = { .d = d, .comm = comm, .sender = sender };
	size_t bytes = d->size * (size_t)d->window;
	double t0, last, secs;
	ncclResult_t res;
	int rc = EXIT_FAILED, s;

	if (posix_memalign((void **)&x.buf, 4096, bytes))
		return EXIT_FAILED;
	res = netplug_reg_mr(&d->np, comm, x.buf, bytes, NCCL_PTR_HOST, &x.mh);
	if (res != ncclSuccess) {
		say("regMr: %s", netplug_result_str(res));
		goto out;
	}
	t0 = last = tool_now();
	while (x.completed < d->iters) {
		long before = x.completed;

		for (s = 0; s < d->window; s++) {
			if (!x.reqs[s] && x.posted < d->iters && xfer_post(&x, s))
				goto dereg;
			if (x.reqs[s] && xfer_test(&x, s))
				goto dereg;
		}
		/* a dead peer is an error, never a hang: bound the time without progress */
		if (x.completed != before) {
			last = tool_now();
		} else if (expired(last + d->timeout_ms / 1000.0)) {
			say("%s: no progress for %d ms after %ld of %ld messages",
			    sender ? "send" : "receive", d->timeout_ms, x.completed, d->iters);
			goto dereg;
		}
	}
	secs = tool_now() - t0;
	say("%s %ld messages of %zu bytes in %.3f s: %.1f MB/s", sender ? "sent" : "received",
	    x.completed, d->size, secs, secs > 0 ? (double)d->size * x.completed / secs / 1e6 : 0);
	rc = 0;
dereg:
	res = netplug_dereg_mr(&d->np, comm, x.mh);
	if (res != ncclSuccess && !rc) {
		say("deregMr: %s", netplug_result_str(res));
		rc = EXIT_FAILED;
	}
out:
	free(x.buf);
	return rc;
}

static int cmd_server(struct driver *d)
{
	struct wire_hello hello = { .size = d->size, .iters = (uint64_t)d->iters };
	void *lc = NULL, *rc_comm = NULL;
	int ndev, lfd = -1, fd = -1, rc = driver_start(d, 1, &ndev);
	double deadline;
	ncclResult_t res;
	char ack;

	if (rc)
		goto out;
	rc = EXIT_FAILED;
	if (d->dev >= ndev) {
		say("no device %d (%d devices)", d->dev, ndev);
		rc = EXIT_USAGE;
		goto out;
	}
	res = netplug_listen(&d->np, d->ctx[0], d->dev, hello.handle, &lc);
	if (res != ncclSuccess || !lc) {
		say("listen: %s", netplug_result_str(res));
		goto out;
	}
	lfd = side_listen(d->addr);
	if (lfd < 0) {
		say("side channel %s: %s", d->addr, strerror(-lfd));
		goto close;
	}
	say("listening; side channel on %s", d->addr);
	fd = side_accept(lfd, d->timeout_ms);
	if (fd < 0 || side_send(fd, &hello, sizeof(hello), d->timeout_ms)) {
		say("side channel: no client within %d ms", d->timeout_ms);
		goto close;
	}
	deadline = tool_now() + d->timeout_ms / 1000.0;
	while (!rc_comm) {
		res = netplug_accept(&d->np, lc, &rc_comm);
		if (res != ncclSuccess) {
			say("accept: %s", netplug_result_str(res));
			goto close;
		}
		if (!rc_comm && expired(deadline)) {
			say("accept timed out");
			goto close;
		}
	}
	say("accepted");
	rc = run_transfer(d, rc_comm, 0);
	/* the verdict goes to the client, which closes only after us */
	ack = rc ? 'F' : 'K';
	if (side_send(fd, &ack, 1, d->timeout_ms) && !rc)
		rc = EXIT_FAILED;
	res = netplug_close_recv(&d->np, rc_comm);
	if (res != ncclSuccess && !rc)
		rc = EXIT_FAILED;
close:
	res = netplug_close_listen(&d->np, lc);
	if (res != ncclSuccess && !rc)
		rc = EXIT_FAILED;
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

static int cmd_client(struct driver *d)
{
	struct wire_hello hello;
	void *sc = NULL;
	int ndev, fd, rc = EXIT_FAILED;
	double deadline;
	ncclResult_t res;
	char ack;

	fd = side_connect(d->addr, d->timeout_ms);
	if (fd < 0 || side_recv(fd, &hello, sizeof(hello), d->timeout_ms)) {
		say("side channel %s: no server", d->addr);
		if (fd >= 0)
			close(fd);
		return EXIT_FAILED;
	}
	d->size = hello.size;
	d->iters = (long)hello.iters;
	rc = driver_start(d, 1, &ndev);
	if (rc)
		goto out;
	rc = EXIT_FAILED;
	if (d->dev >= ndev) {
		say("no device %d (%d devices)", d->dev, ndev);
		rc = EXIT_USAGE;
		goto out;
	}
	deadline = tool_now() + d->timeout_ms / 1000.0;
	while (!sc) {
		res = netplug_connect(&d->np, d->ctx[0], d->dev, -1, hello.handle, &sc);
		if (res != ncclSuccess) {
			say("connect: %s", netplug_result_str(res));
			goto out;
		}
		if (!sc && expired(deadline)) {
			say("connect timed out");
			goto out;
		}
	}
	say("connected");
	rc = run_transfer(d, sc, 1);
	if (!rc && (side_recv(fd, &ack, 1, d->timeout_ms) || ack != 'K')) {
		say("the server did not confirm the data");
		rc = EXIT_FAILED;
	}
	res = netplug_close_send(&d->np, sc);
	if (res != ncclSuccess && !rc)
		rc = EXIT_FAILED;
out:
	close(fd);
	if (driver_stop(d) && !rc)
		rc = EXIT_FAILED;
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
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f,
		"usage: nccl-net-driver [options] [PLUGIN] [probe | server ADDR:PORT | client ADDR:PORT]\n"
		"  PLUGIN             as NCCL_NET_PLUGIN (e.g. roce); same as --plugin\n"
		"  --plugin NAME      NCCL_NET_PLUGIN value (default: $NCCL_NET_PLUGIN, else roce)\n"
		"  --max-version N    newest ncclNetPlugin_vN to try (12 as NCCL 2.30, 11 as 2.28)\n"
		"  --comms N          communicators to init and finalize (probe; default 2)\n"
		"  --require-devices  probe exits 3 when the plugin offers no device\n"
		"  --dev N            device index (server/client; default 0)\n"
		"  --size BYTES       message size, K/M/G suffixes (server; default 1M)\n"
		"  --iters N          messages (server; default 100)\n"
		"  --window N         requests in flight, 1..%d (default %d)\n"
		"  --timeout-ms N     bound on every wait (default 30000)\n"
		"  -v                 NCCL_DEBUG=INFO for the plugin's lines\n"
		"commands:\n",
		NCCL_NET_MAX_REQUESTS, NCCL_NET_MAX_REQUESTS);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "exit: 0 ok, 1 plugin failure, 2 usage, 3 no RoCE device\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "max-version", required_argument, NULL, 'V' },
		{ "comms", required_argument, NULL, 'c' },
		{ "require-devices", no_argument, NULL, 'r' },
		{ "dev", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "window", required_argument, NULL, 'w' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct driver d = {
		.plugin = getenv("NCCL_NET_PLUGIN") ? getenv("NCCL_NET_PLUGIN") : "roce",
		.max_version = 12,
		.ncomms = 2,
		.size = 1 << 20,
		.iters = 100,
		.window = NCCL_NET_MAX_REQUESTS,
		.timeout_ms = 30000,
	};
	const char *cmd = "probe";
	size_t i;
	int c;

	while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		switch (c) {
		case 'p': d.plugin = optarg; break;
		case 'V': d.max_version = atoi(optarg); break;
		case 'c': d.ncomms = atoi(optarg); break;
		case 'r': d.require_devices = 1; break;
		case 'd': d.dev = atoi(optarg); break;
		case 's':
			if (tool_parse_size(optarg, &d.size) || !d.size || d.size > (1u << 30)) {
				fprintf(stderr, "nccl-net-driver: bad --size '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'n': d.iters = atol(optarg); break;
		case 'w': d.window = atoi(optarg); break;
		case 't': d.timeout_ms = atoi(optarg); break;
		case 'v': tool_log_set_level(NCCL_LOG_INFO); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (d.max_version < 6 || d.max_version > 12 || d.ncomms < 1 || d.ncomms > MAX_COMMS ||
	    d.window < 1 || d.window > NCCL_NET_MAX_REQUESTS || d.iters < 1 || d.dev < 0 ||
	    d.timeout_ms < 1) {
		fprintf(stderr, "nccl-net-driver: option out of range (see --help)\n");
		return EXIT_USAGE;
	}
	/* `nccl-net-driver roce` reads like NCCL_NET_PLUGIN=roce: a first word that is no
	 * command names the plugin. */
	if (optind < argc) {
		int is_cmd = 0;

		for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			is_cmd |= !strcmp(argv[optind], cmds[i].name);
		if (!is_cmd)
			d.plugin = argv[optind++];
	}
	if (optind < argc)
		cmd = argv[optind++];
	if (optind < argc)
		d.addr = argv[optind++];
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(cmd, cmds[i].name))
			continue;
		if (cmds[i].fn != cmd_probe && !d.addr) {
			fprintf(stderr, "nccl-net-driver: %s needs ADDR:PORT\n", cmd);
			return EXIT_USAGE;
		}
		return cmds[i].fn(&d);
	}
	fprintf(stderr, "nccl-net-driver: unknown command '%s'\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
