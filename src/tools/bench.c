// SPDX-License-Identifier: MIT
/*
 * nccl-net-bench: perftest's shape (ib_write_bw / ib_write_lat) over an NCCL net plugin.
 *
 *   server:  nccl-net-bench [-d rxe0] [options]
 *   client:  nccl-net-bench [-d rxe0] [options] SERVER_ADDR
 *
 * The client's -s/-a/-n/-t/-w/--check/--pattern win: it sends them to the server with the
 * first message of the TCP side channel (-p PORT), which also carries the plugin's handles.
 * bw: one-way, client -> server, with a window of isends/irecvs in flight, posted and
 * tested as NCCL's proxy thread does (bw_phase). lat: ping-pong over two connections (one
 * per direction), half the round trip.
 * conn: -n connections set up one after the other, the time of each from the first
 * connect/accept call to the established comm (what a job's init pays per peer); then what
 * they hold, as made and once each has carried 32 messages of 8 bytes.
 * Polling is busy, as perftest's and NCCL's proxy thread (--nap-us to sleep instead).
 * The server opens its device before it waits, waits for one client (forever, or
 * --timeout S), and prints the same table as the client: the client sends it each row.
 * Every other wait is bounded: a dead peer or a stuck transfer is an error.
 * --json / --csv put the results (only) on stdout; the table then goes to stderr.
 *
 * Exit (rn_cli.h): 0 done; 1 the plugin failed or refused (its reason is printed);
 * 2 usage; 3 the plugin offers no device.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "netplug.h"
#include "rn_cli.h"
#include "rn_compiler.h"
#include "tool_common.h"

#define PROG "nccl-net-bench"
#define EXIT_FAILED RN_EXIT_FAIL
#define EXIT_USAGE RN_EXIT_USAGE
#define EXIT_NODEV RN_EXIT_NODEV
#define MAX_SIZES 32
#define MAX_CONN_TEST 1024         /* -t conn -n N: N at most */
#define BUF_CAP ((size_t)32 << 20) /* buffer bytes per side, at most (one message at least) */
#define CFG_MAGIC 0x726e6233u      /* "rnb3": + pattern */
#define ROW_MAGIC 0x726e6272u      /* "rnbr" */
#define MIN_SIZE_ALL ((size_t)4 << 10)
#define MAX_SIZE_ALL ((size_t)64 << 20)

enum bench_test { TEST_BW, TEST_LAT, TEST_CONN };
/* bw's loop (bw_phase): as NCCL's proxy thread, or every slot each pass */
enum bench_pattern { PATTERN_NCCL, PATTERN_EACH };
static const char *const pattern_names[] = { "nccl", "each" };

static const char *const test_names[] = { "bw", "lat", "conn" };

/* One row of the result table; the client sends each of its rows to the server. */
struct wire_row {
	uint32_t magic, ok;    /* ok 0: the client found the data wrong; no figures */
	uint32_t test, side;   /* conn: 0 connect (client), 1 accept (server) */
	uint64_t bytes, iters; /* conn: iters = connections */
	uint32_t window, nap_us, checked, pattern;
	/* bw: Gb/s, Mpps, CPU us per message sender, receiver; lat: min max typical avg stdev p99 p99.9 (us); conn: total min avg
	 * p50 max (ms) */
	double v[8];
};

struct bench {
	const char *plugin;
	const char *server; /* NULL: we are the server */
	int port;
	size_t sizes[MAX_SIZES];
	int nsizes;
	int size_given;
	long iters; /* 0: by size; conn: connections */
	int test;   /* enum bench_test */
	int lat;    /* test == TEST_LAT */
	int check;
	int window;
	int pattern;          /* enum bench_pattern: bw's loop */
	int nap_us;
	int timeout_ms;       /* bound on every wait but the server's for its client */
	int wait_ms;          /* the server's wait for a client, -1 forever */
	int json, csv;
	int cpu;              /* --cpu: bw's CPU time per message in the table and the CSV */
	FILE *mout;           /* --json/--csv: the real stdout; the rest goes to stderr */
	int merge;            /* --merge: fuse what -d selects into one vNIC */
	int dev;              /* the device used: 0, or the vNIC */
	int ndev;             /* devices the plugin offers (-d selects them) */
	int spread;           /* --spread: -t conn's connection k on device k % ndev */
	char dev_name[64];
	char plugin_name[64]; /* copied: the table's string goes away with dlclose */
	struct wire_row rows[MAX_SIZES + 2];
	int nrows;
	struct netplug np;
	void *ctx;
	int inited;
	double init_ms; /* the plugin's init() call */
	int fd;         /* side channel */
};

/* What the client tells the server. */
struct wire_cfg {
	uint32_t magic, test, check, window;
	uint32_t pattern, pad;
	uint64_t iters, nsizes;
	uint64_t sizes[MAX_SIZES];
};

/* The server's word after each size: did the data arrive intact, and its checksum. */
struct wire_result {
	uint32_t ok, pad;
	uint64_t sum;
	double cpu_us; /* the receiver's CPU time per message in the timed phase */
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("nccl-net-bench: ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* The first error of the run: the root cause, what --json reports. */
static char first_err[512];

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (!first_err[0]) {
		va_list aq;

		va_copy(aq, ap);
		vsnprintf(first_err, sizeof(first_err), fmt, aq);
		va_end(aq);
	}
	fputs("nccl-net-bench: ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static void plugin_error(const char *what, ncclResult_t res)
{
	const char *w = tool_last_warn();

	err("%s: %s%s%s", what, netplug_result_str(res), *w ? ": " : "", w);
}

/* ---- data: a pattern per message and a checksum of what really moved ---- */

/* ---- plugin setup ---- */

static int bench_start(struct bench *b)
{
	ncclNetProperties_v12_t p;
	ncclResult_t res;
	int ndev = 0;
	double t0;

	if (netplug_open(&b->np, b->plugin, 12, tool_logger)) {
		/* a build tree: the plugin next to this binary (build/libnccl-net-roce.so) */
		char exe[4096], alt[4200], *slash;
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		alt[0] = '\0';
		if (n > 0 && !strchr(b->plugin, '/') && !strchr(b->plugin, ',')) {
			exe[n] = '\0';
			slash = strrchr(exe, '/');
			if (slash)
				*slash = '\0';
			snprintf(alt, sizeof(alt), "%s/libnccl-net-%s.so", exe, b->plugin);
		}
		if (!alt[0] || netplug_open(&b->np, alt, 12, tool_logger)) {
			err("could not load a net plugin from '%s'%s%s", b->plugin,
			    alt[0] ? " nor " : "", alt);
			return EXIT_FAILED;
		}
	}
	snprintf(b->plugin_name, sizeof(b->plugin_name), "%s", b->np.name ? b->np.name : "?");
	t0 = tool_now();
	res = netplug_init(&b->np, &b->ctx, 0xbe4c0000ull, -1, tool_logger);
	b->init_ms = (tool_now() - t0) * 1e3;
	b->inited = 1;
	if (res != ncclSuccess) {
		plugin_error("init", res);
		err("the plugin offers no device");
		return EXIT_NODEV;
	}
	res = netplug_devices(&b->np, &ndev);
	if (res != ncclSuccess || ndev < 1) {
		plugin_error("devices", res);
		err("the plugin offers no device");
		return EXIT_NODEV;
	}
	if (b->merge) {
		/* NIC fusion as NCCL does it: every device selected, one vNIC */
		int devs[NCCL_NET_MAX_DEVS_PER_NIC_V12], i, n = ndev;

		if (n < 2 || n > NCCL_NET_MAX_DEVS_PER_NIC_V12) {
			err("--merge: -d selects %d device(s); a vNIC fuses 2 to %d", n,
			    NCCL_NET_MAX_DEVS_PER_NIC_V12);
			return EXIT_USAGE;
		}
		for (i = 0; i < n; i++)
			devs[i] = i;
		res = netplug_make_vdevice(&b->np, &b->dev, n, devs);
		if (res != ncclSuccess) {
			plugin_error("makeVDevice", res);
			return EXIT_FAILED;
		}
		ndev = b->dev + 1;
	}
	b->ndev = ndev;
	if (netplug_get_properties(&b->np, b->dev, &p) == ncclSuccess) {
		snprintf(b->dev_name, sizeof(b->dev_name), "%s", p.name ? p.name : "?");
		say("plugin %s (v%d), device %d of %d: %s port %d, %d Mb/s", b->np.name,
		    b->np.version, b->dev, ndev, b->dev_name, p.port, p.speed);
	}
	/* what a job's every communicator pays before its first connection (NCCL 2.28
	 * calls init() once per communicator) */
	say("init %.2f ms (%d devices)", b->init_ms, ndev);
	return 0;
}

static int bench_stop(struct bench *b)
{
	int bad = 0;

	if (b->inited && netplug_finalize(&b->np, b->ctx) != ncclSuccess)
		bad = 1;
	b->inited = 0;
	if (b->np.dl)
		netplug_close(&b->np);
	return bad;
}

static int expired(double deadline)
{
	return tool_now() > deadline;
}

/*
 * Connect @send_handle (if any) and accept on @lc (if any) at once, as NCCL drives both
 * sides of a ring. A refusal is the plugin's to explain: its WARN lines came through the
 * logger; the last one is repeated as the reason.
 */
static int connect_dev(struct bench *b, int dev, void *send_handle, void **sc, void *lc, void **rc)
{
	double deadline = tool_now() + b->timeout_ms / 1000.0;
	ncclResult_t res;

	while ((send_handle && !*sc) || (lc && !*rc)) {
		if (send_handle && !*sc) {
			res = netplug_connect(&b->np, b->ctx, dev, -1, send_handle, sc);
			if (res != ncclSuccess)
				goto refused;
		}
		if (lc && !*rc) {
			res = netplug_accept(&b->np, lc, rc);
			if (res != ncclSuccess)
				goto refused;
		}
		if (((send_handle && !*sc) || (lc && !*rc)) && expired(deadline)) {
			err("connection not established within %d ms", b->timeout_ms);
			return -1;
		}
	}
	return 0;
refused:
	err("connection refused by the plugin: %s",
	    *tool_last_warn() ? tool_last_warn() : netplug_result_str(res));
	return -1;
}

static int connect_both(struct bench *b, void *send_handle, void **sc, void *lc, void **rc)
{
	return connect_dev(b, b->dev, send_handle, sc, lc, rc);
}

/* ---- request helpers ---- */

/* Poll @req once: 1 done, 0 not yet, -1 error. */
static int poll_req(struct bench *b, void *req, int *size)
{
	int done = 0, sizes[1] = { 0 };
	ncclResult_t res = netplug_test(&b->np, req, &done, sizes);

	if (res != ncclSuccess) {
		plugin_error("transfer failed", res);
		return -1;
	}
	if (done && size)
		*size = sizes[0];
	return done;
}

struct bw_side {
	struct bench *b;
	void *comm, *mh;
	unsigned char *pool;
	size_t pool_bytes;
	int sender;
	void *reqs[NCCL_NET_MAX_REQUESTS];
	long msg[NCCL_NET_MAX_REQUESTS];
	uint64_t sum;
	long bad_msg;
	long bad_off;
	int bad_size;
};

static size_t nbufs_for(const struct bench *b, size_t size)
{
	size_t n = size ? BUF_CAP / size : (size_t)b->window;

	if (n > (size_t)b->window)
		n = (size_t)b->window;
	return n ? n : 1;
}

/* Post message @msg into slot @s: 1 posted, 0 the plugin said "later", -1 error. */
static int bw_post(struct bw_side *x, int s, unsigned char *buf, size_t size, long msg,
		   uint64_t id0)
{
	struct bench *b = x->b;
	ncclResult_t res;

	if (x->sender) {
		if (b->check)
			tool_fill(buf, size, id0 + (uint64_t)msg);
		res = netplug_isend(&b->np, x->comm, buf, size, 0, x->mh, &x->reqs[s]);
	} else {
		void *data = buf;
		size_t sz = size;
		int tag = 0;

		res = netplug_irecv(&b->np, x->comm, 1, &data, &sz, &tag, &x->mh, &x->reqs[s]);
	}
	if (res != ncclSuccess) {
		plugin_error(x->sender ? "isend" : "irecv", res);
		return -1;
	}
	if (!x->reqs[s])
		return 0;
	x->msg[s] = msg;
	return 1;
}

/* Test slot @s's request once: 1 done (size and data judged), 0 not yet, -1 error. */
static int bw_test(struct bw_side *x, int s, unsigned char *buf, size_t size, uint64_t id0)
{
	struct bench *b = x->b;
	int got = -1, r = poll_req(b, x->reqs[s], &got);

	if (r <= 0)
		return r;
	x->reqs[s] = NULL;
	if (got != (int)size && x->bad_msg < 0) {
		x->bad_msg = x->msg[s];
		x->bad_size = got;
	}
	if (b->check) {
		uint64_t id = id0 + (uint64_t)x->msg[s];
		long off = x->sender ? -1 : tool_check(buf, size, id);

		x->sum += tool_checksum(buf, size, 0);
		if (off >= 0 && x->bad_msg < 0) {
			x->bad_msg = x->msg[s];
			x->bad_off = off;
			x->bad_size = got;
		}
	}
	return 1;
}

/*
 * One phase of @count messages of @size, nap after a pass without progress. Returns
 * seconds or -1. --pattern nccl (the default) drives each side as NCCL's proxy thread
 * does (transport/net.cc, 2.28.9): a pass posts at most one request; the receiver tests
 * its oldest only in a pass that posted none (recvProxyProgress returns after posting),
 * the sender its oldest in every pass. So receives posted ahead reach the plugin before
 * any test, as in a collective's first steps. --pattern each: every free slot posted and
 * every slot tested in each pass (the only loop before --pattern, for figures to compare).
 */
static double bw_phase(struct bw_side *x, size_t size, long count, uint64_t id0)
{
	struct bench *b = x->b;
	size_t nbuf = nbufs_for(b, size);
	int window = b->check ? (int)nbuf : b->window, s, r;
	long posted = 0, completed = 0;
	double t0 = tool_now(), last = t0;

	while (completed < count) {
		int progress = 0;

		if (b->pattern == PATTERN_NCCL) {
			/* requests complete in order: message m is in slot m % window */
			s = (int)(posted % window);
			if (posted < count && !x->reqs[s]) {
				r = bw_post(x, s, x->pool + (size_t)s % nbuf * size, size, posted,
					    id0);
				if (r < 0)
					return -1;
				posted += r;
				progress = r;
			}
			s = (int)(completed % window);
			if ((x->sender || !progress) && x->reqs[s]) {
				r = bw_test(x, s, x->pool + (size_t)s % nbuf * size, size, id0);
				if (r < 0)
					return -1;
				completed += r;
				progress |= r;
			}
		} else {
			for (s = 0; s < window; s++) {
				unsigned char *buf = x->pool + (size_t)s % nbuf * size;

				if (!x->reqs[s] && posted < count) {
					r = bw_post(x, s, buf, size, posted, id0);
					if (r < 0)
						return -1;
					posted += r;
					progress |= r;
				}
				if (x->reqs[s]) {
					r = bw_test(x, s, buf, size, id0);
					if (r < 0)
						return -1;
					completed += r;
					progress |= r;
				}
			}
		}
		if (progress) {
			last = tool_now();
		} else if (expired(last + b->timeout_ms / 1000.0)) {
			err("no progress for %d ms after %ld of %ld messages of %zu bytes (peer dead?)",
			    b->timeout_ms, completed, count, size);
			return -1;
		} else {
			tool_nap(b->nap_us);
		}
	}
	return tool_now() - t0;
}

static long iters_for(const struct bench *b, size_t size)
{
	long n;

	if (b->iters)
		return b->iters;
	if (b->lat)
		return 1000;
	n = size ? (long)(((size_t)128 << 20) / size) : 5000;
	return n < 100 ? 100 : n > 5000 ? 5000 : n;
}

/* ---- results: the human table, and --json / --csv on the real stdout ---- */

static void rule(void)
{
	puts("---------------------------------------------------------------------------------------");
}

static const char *route_check_env(void)
{
	const char *v = getenv("NCCL_ROCE_ROUTE_CHECK");

	return v && *v ? v : "strict";
}

static void print_header(const struct bench *b)
{
	rule();
	if (b->test == TEST_BW)
		printf(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]%s\n",
		       b->cpu ? "   CPU[usec/msg] send recv" : "");
	else if (b->test == TEST_LAT)
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n");
	else
		printf(" side      #conns   total[msec]   t_min[msec]   t_avg[msec]   t_p50[msec]   t_max[msec]   (route check %s)\n",
		       route_check_env());
	fflush(stdout);
}

static void print_row(const struct bench *b, const struct wire_row *r)
{
	const double *v = r->v;

	if (r->test == TEST_BW && b->cpu)
		printf(" %-10llu %-14llu %-18s %-20.4f %-15.6f %.1f %.1f\n",
		       (unsigned long long)r->bytes, (unsigned long long)r->iters, "n/a", v[0],
		       v[1], v[2], v[3]);
	else if (r->test == TEST_BW)
		printf(" %-10llu %-14llu %-18s %-20.4f %.6f\n", (unsigned long long)r->bytes,
		       (unsigned long long)r->iters, "n/a", v[0], v[1]);
	else if (r->test == TEST_LAT)
		printf(" %-6llu %-10llu     %-10.2f     %-10.2f   %-10.2f         %-10.2f     %-10.2f      %-10.2f              %-10.2f\n",
		       (unsigned long long)r->bytes, (unsigned long long)r->iters, v[0], v[1], v[2],
		       v[3], v[4], v[5], v[6]);
	else
		printf(" %-9s %-8llu %-13.3f %-13.3f %-13.3f %-13.3f %.3f\n",
		       r->side ? "accept" : "connect", (unsigned long long)r->iters, v[0], v[1],
		       v[2], v[3], v[4]);
	fflush(stdout);
}

static const char *const csv_cols[] = {
	[TEST_BW] = "bytes,iters,bw_avg_gbps,msg_rate_mpps,window,nap_us,checked",
	[TEST_LAT] = "bytes,iters,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,t_p99_us,"
		     "t_p999_us,nap_us,checked",
	[TEST_CONN] = "side,conns,total_ms,t_min_ms,t_avg_ms,t_p50_ms,t_max_ms,route_check",
};

/* One row of the table: printed, and kept (--json) or written (--csv) as machine data. */
static void add_row(struct bench *b, const struct wire_row *r)
{
	const double *v = r->v;
	FILE *f = b->mout;

	print_row(b, r);
	if (b->nrows < (int)(sizeof(b->rows) / sizeof(b->rows[0])))
		b->rows[b->nrows++] = *r;
	if (!b->csv)
		return;
	if (b->nrows == 1)
		fprintf(f, "role,test,%s%s\n", csv_cols[b->test],
			b->test == TEST_BW && b->cpu ? ",cpu_send_us,cpu_recv_us" : "");
	fprintf(f, "%s,%s,", b->server ? "client" : "server", test_names[b->test]);
	if (r->test == TEST_BW)
		fprintf(f, "%llu,%llu,%.4f,%.6f,%u,%u,%u", (unsigned long long)r->bytes,
			(unsigned long long)r->iters, v[0], v[1], r->window, r->nap_us, r->checked);
	if (r->test == TEST_BW)
		fprintf(f, b->cpu ? ",%.2f,%.2f\n" : "\n", v[2], v[3]);
	else if (r->test == TEST_LAT)
		fprintf(f, "%llu,%llu,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%u,%u\n",
			(unsigned long long)r->bytes, (unsigned long long)r->iters, v[0], v[1],
			v[2], v[3], v[4], v[5], v[6], r->nap_us, r->checked);
	else
		fprintf(f, "%s,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%s\n", r->side ? "accept" : "connect",
			(unsigned long long)r->iters, v[0], v[1], v[2], v[3], v[4],
			route_check_env());
	fflush(f);
}

/* --json: one document at the end (rn_json.h); a failure adds the error object (rn_cli.h). */
static void print_json(struct bench *b, int rc)
{
	struct rn_json j;
	int i, k;

	rn_json_begin(&j, b->mout);
	rn_json_str(&j, "schema", "nccl-net-bench/1");
	rn_json_str(&j, "version", RN_VERSION);
	rn_json_str(&j, "role", b->server ? "client" : "server");
	rn_json_str(&j, "test", test_names[b->test]);
	rn_json_str(&j, "plugin", b->plugin_name[0] ? b->plugin_name : NULL);
	rn_json_str(&j, "device", b->dev_name[0] ? b->dev_name : NULL);
	rn_json_num(&j, "init_ms", b->init_ms, 3);
	rn_json_str(&j, "route_check", route_check_env());
	rn_json_arr(&j, "results");
	for (i = 0; i < b->nrows; i++) {
		const struct wire_row *r = &b->rows[i];
		const double *v = r->v;

		rn_json_obj(&j, NULL);
		j.line = 1; /* a row on one line, as the table prints it */
		if (r->test == TEST_CONN) {
			static const char *const kc[] = { "total_ms", "t_min_ms", "t_avg_ms",
							  "t_p50_ms", "t_max_ms" };

			rn_json_str(&j, "side", r->side ? "accept" : "connect");
			rn_json_int(&j, "conns", (long long)r->iters);
			for (k = 0; k < 5; k++)
				rn_json_num(&j, kc[k], v[k], 3);
		} else {
			rn_json_int(&j, "bytes", (long long)r->bytes);
			rn_json_int(&j, "iters", (long long)r->iters);
			if (r->test == TEST_BW) {
				rn_json_num(&j, "bw_avg_gbps", v[0], 4);
				rn_json_num(&j, "msg_rate_mpps", v[1], 6);
				rn_json_num(&j, "cpu_send_us", v[2], 2);
				rn_json_num(&j, "cpu_recv_us", v[3], 2);
				rn_json_int(&j, "window", r->window);
				rn_json_str(&j, "pattern",
					    pattern_names
						    [r->pattern < RN_ARRAY_SIZE(pattern_names) ?
							     r->pattern :
							     0]);
			} else {
				static const char *const kl[] = { "t_min_us",     "t_max_us",
								  "t_typical_us", "t_avg_us",
								  "t_stdev_us",   "t_p99_us",
								  "t_p999_us" };

				for (k = 0; k < 7; k++)
					rn_json_num(&j, kl[k], v[k], 2);
			}
			rn_json_int(&j, "nap_us", r->nap_us);
			rn_json_bool(&j, "checked", r->checked);
		}
		rn_json_close(&j, '}');
		j.line = 0;
	}
	rn_json_close(&j, ']');
	rn_json_int(&j, "exit", rc);
	if (rc)
		rn_cli_json_error_obj(&j, rc, NULL, first_err[0] ? first_err : "failed");
	rn_json_end(&j);
}

/* The client's row goes to the server, which prints the same table. */
static int send_row(struct bench *b, struct wire_row *r)
{
	r->magic = ROW_MAGIC;
	if (side_send(b->fd, r, sizeof(*r), b->timeout_ms)) {
		err("side channel: cannot send the results to the server");
		return -1;
	}
	return 0;
}

static int recv_row(struct bench *b, struct wire_row *r)
{
	if (side_recv(b->fd, r, sizeof(*r), b->timeout_ms) || r->magic != ROW_MAGIC ||
	    r->test != (uint32_t)b->test) {
		err("side channel: no results from the client");
		return -1;
	}
	if (!r->ok) {
		err("the client found the data wrong (see its output)");
		return -1;
	}
	return 0;
}

/*
 * This process's CPU time (user + system), us: per message over the timed phase it says
 * what the plugin costs each side beside the wire (rxe's requester runs in the posting
 * syscall, so the doorbells count too).
 */
static double cpu_us(void)
{
	struct rusage u;

	if (getrusage(RUSAGE_SELF, &u))
		return 0;
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static int run_bw(struct bench *b, void *comm, int sender)
{
	struct bw_side x = { .b = b, .comm = comm, .sender = sender };
	size_t pool = 4096;
	ncclResult_t res;
	int i, rc = 0;

	for (i = 0; i < b->nsizes; i++)
		if (nbufs_for(b, b->sizes[i]) * b->sizes[i] > pool)
			pool = nbufs_for(b, b->sizes[i]) * b->sizes[i];
	x.pool_bytes = (pool + 4095) & ~(size_t)4095;
	if (posix_memalign((void **)&x.pool, 4096, x.pool_bytes)) {
		err("out of memory (%zu bytes)", x.pool_bytes);
		return EXIT_FAILED;
	}
	memset(x.pool, 0, x.pool_bytes);
	res = netplug_reg_mr(&b->np, comm, x.pool, x.pool_bytes, NCCL_PTR_HOST, &x.mh);
	if (res != ncclSuccess) {
		plugin_error("regMr", res);
		free(x.pool);
		return EXIT_FAILED;
	}
	print_header(b);
	for (i = 0; i < b->nsizes && !rc; i++) {
		size_t size = b->sizes[i];
		long n = iters_for(b, size),
		     warm = size ? (long)(((size_t)16 << 20) / size) : b->window;
		struct wire_result r = { 0 };
		struct wire_row row = { .test = TEST_BW,
					.bytes = size,
					.iters = (uint64_t)n,
					.nap_us = (uint32_t)b->nap_us,
					.checked = (uint32_t)b->check,
					.pattern = (uint32_t)b->pattern,
					.window = (uint32_t)(b->check ? (int)nbufs_for(b, size) :
									b->window) };
		double secs, cpu;

		x.sum = 0;
		x.bad_msg = -1;
		x.bad_off = -1;
		if (warm > b->window)
			warm = b->window;
		if (warm < 1)
			warm = 1;
		/* a first window untimed (16 MiB at most): warm-up, as perftest's first round */
		if (bw_phase(&x, size, warm, 0) < 0) {
			rc = EXIT_FAILED;
			break;
		}
		x.sum = 0;
		cpu = cpu_us();
		secs = bw_phase(&x, size, n, (uint64_t)warm);
		cpu = (cpu_us() - cpu) / (double)n;
		if (secs < 0) {
			rc = EXIT_FAILED;
			break;
		}
		/* the receiver's verdict and checksum travel to the sender, its row back */
		if (!sender) {
			r.ok = x.bad_msg < 0;
			r.sum = x.sum;
			r.cpu_us = cpu;
			if (!r.ok)
				err("%zu bytes: message %ld: %d bytes received, first bad byte %ld",
				    size, x.bad_msg, x.bad_size, x.bad_off);
			if (side_send(b->fd, &r, sizeof(r), b->timeout_ms) || !r.ok ||
			    recv_row(b, &row)) {
				rc = EXIT_FAILED;
				break;
			}
			add_row(b, &row);
			continue;
		}
		if (side_recv(b->fd, &r, sizeof(r), b->timeout_ms)) {
			err("the server sent no result for %zu bytes", size);
			rc = EXIT_FAILED;
			break;
		}
		if (!r.ok || x.bad_msg >= 0) {
			err("%zu bytes: data check failed (%s)", size,
			    r.ok ? "send size" : "see the server's output");
			rc = EXIT_FAILED;
		} else if (b->check && r.sum != x.sum) {
			err("%zu bytes: checksum sent %#llx, received %#llx", size,
			    (unsigned long long)x.sum, (unsigned long long)r.sum);
			rc = EXIT_FAILED;
		}
		row.ok = !rc;
		row.v[0] = secs > 0 ? (double)size * n * 8 / secs / 1e9 : 0;
		row.v[1] = secs > 0 ? n / secs / 1e6 : 0;
		row.v[2] = cpu;
		row.v[3] = r.cpu_us;
		if (r.ok && send_row(b, &row) && !rc)
			rc = EXIT_FAILED;
		if (!rc)
			add_row(b, &row);
	}
	if (!rc)
		rule();
	if (netplug_dereg_mr(&b->np, comm, x.mh) != ncclSuccess && !rc)
		rc = EXIT_FAILED;
	free(x.pool);
	return rc;
}

/* ---- latency: ping-pong over two one-way connections ---- */

static int post_recv(struct bench *b, void *rc, void *buf, size_t size, void *mh, void **req,
		     double deadline)
{
	void *data = buf;
	size_t sz = size;
	int tag = 0;

	*req = NULL;
	while (!*req) {
		ncclResult_t res = netplug_irecv(&b->np, rc, 1, &data, &sz, &tag, &mh, req);

		if (res != ncclSuccess) {
			plugin_error("irecv", res);
			return -1;
		}
		if (!*req && expired(deadline)) {
			err("irecv not accepted within %d ms", b->timeout_ms);
			return -1;
		}
	}
	return 0;
}

struct lat_bufs {
	void *sc, *rc, *smh, *rmh;
	unsigned char *sbuf, *rbuf;
	size_t size;
};

/*
 * One half of a round: the client sends message @id and waits for the reply @id + 1; the
 * server (@recv_first) waits for @id, then sends @id + 1. A completed receive is replaced at
 * once (@repost) so that its CTS reaches the peer before the peer's next send needs it.
 */
static int pingpong_step(struct bench *b, struct lat_bufs *l, void **rreq, int recv_first,
			 uint64_t id, int repost)
{
	double last = tool_now();
	void *sreq = NULL;
	int sent = 0, got_recv = 0, filled = 0, got = -1;
	uint64_t want = recv_first ? id : id + 1;
	ncclResult_t res;

	while (!sent || !got_recv) {
		int progress = 0;

		if (!got_recv) {
			int r = poll_req(b, *rreq, &got);

			if (r < 0)
				return -1;
			if (r) {
				got_recv = progress = 1;
				*rreq = NULL;
				if (b->check && (got != (int)l->size ||
						 tool_check(l->rbuf, l->size, want) >= 0)) {
					err("ping-pong message %llu: %d bytes or data wrong",
					    (unsigned long long)want, got);
					return -1;
				}
				if (repost && post_recv(b, l->rc, l->rbuf, l->size, l->rmh, rreq,
							tool_now() + b->timeout_ms / 1000.0))
					return -1;
			}
		}
		if (!sent && (!recv_first || got_recv)) {
			if (!filled && b->check)
				tool_fill(l->sbuf, l->size, recv_first ? id + 1 : id);
			filled = 1;
			if (!sreq) {
				res = netplug_isend(&b->np, l->sc, l->sbuf, l->size, 0, l->smh,
						    &sreq);
				if (res != ncclSuccess) {
					plugin_error("isend", res);
					return -1;
				}
			}
			if (sreq) {
				int r = poll_req(b, sreq, NULL);

				if (r < 0)
					return -1;
				if (r) {
					sreq = NULL;
					sent = progress = 1;
				}
			}
		}
		if (progress) {
			last = tool_now();
		} else if (expired(last + b->timeout_ms / 1000.0)) {
			err("ping-pong stuck for %d ms (peer dead?)", b->timeout_ms);
			return -1;
		} else {
			tool_nap(b->nap_us);
		}
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int run_lat(struct bench *b, void *sc, void *rc, int client)
{
	size_t size = b->sizes[0], bytes = (size + 4095) & ~(size_t)4095;
	long n = iters_for(b, size), warm = n / 10 < 16 ? 16 : n / 10, i, total = n + warm;
	unsigned char *sbuf = NULL, *rbuf = NULL;
	void *smh = NULL, *rmh = NULL, *rreq = NULL;
	struct wire_row row = { .ok = 1,
				.test = TEST_LAT,
				.bytes = size,
				.iters = (uint64_t)n,
				.nap_us = (uint32_t)b->nap_us,
				.checked = (uint32_t)b->check };
	double *t = NULL;
	int ret = EXIT_FAILED;
	ncclResult_t res;

	if (!bytes)
		bytes = 4096;
	if (posix_memalign((void **)&sbuf, 4096, bytes) ||
	    posix_memalign((void **)&rbuf, 4096, bytes) || !(t = calloc((size_t)n, sizeof(*t)))) {
		err("out of memory");
		goto out;
	}
	memset(sbuf, 0, bytes);
	memset(rbuf, 0, bytes);
	res = netplug_reg_mr(&b->np, sc, sbuf, bytes, NCCL_PTR_HOST, &smh);
	if (res == ncclSuccess)
		res = netplug_reg_mr(&b->np, rc, rbuf, bytes, NCCL_PTR_HOST, &rmh);
	if (res != ncclSuccess) {
		plugin_error("regMr", res);
		goto dereg;
	}
	{
		struct lat_bufs l = { .sc = sc,
				      .rc = rc,
				      .smh = smh,
				      .rmh = rmh,
				      .sbuf = sbuf,
				      .rbuf = rbuf,
				      .size = size };

		if (post_recv(b, rc, rbuf, size, rmh, &rreq, tool_now() + b->timeout_ms / 1000.0))
			goto dereg;
		for (i = 0; i < total; i++) {
			double t0 = tool_now();

			/* the client sends first; the server answers what it got */
			if (pingpong_step(b, &l, &rreq, !client, (uint64_t)i * 2, i + 1 < total))
				goto dereg;
			if (client && i >= warm)
				t[i - warm] = (tool_now() - t0) / 2 * 1e6;
		}
	}
	if (client) {
		double sum = 0, sq = 0, avg;

		for (i = 0; i < n; i++)
			sum += t[i];
		avg = sum / n;
		for (i = 0; i < n; i++)
			sq += (t[i] - avg) * (t[i] - avg);
		qsort(t, (size_t)n, sizeof(*t), cmp_double);
		row.v[0] = t[0];
		row.v[1] = t[n - 1];
		row.v[2] = t[n / 2];
		row.v[3] = avg;
		row.v[4] = sqrt(sq / n);
		row.v[5] = t[(long)(n * 0.99)];
		row.v[6] = t[(long)(n * 0.999)];
		if (send_row(b, &row))
			goto dereg;
	} else if (recv_row(b, &row)) {
		goto dereg;
	}
	print_header(b);
	add_row(b, &row);
	rule();
	ret = 0;
dereg:
	if (smh && netplug_dereg_mr(&b->np, sc, smh) != ncclSuccess)
		ret = EXIT_FAILED;
	if (rmh && netplug_dereg_mr(&b->np, rc, rmh) != ncclSuccess)
		ret = EXIT_FAILED;
out:
	free(sbuf);
	free(rbuf);
	free(t);
	return ret;
}

/* ---- conn: the cost of setting up N connections, one after the other ---- */

/* total min avg p50 max of @n times in seconds, as milliseconds into @v. */
static void conn_stats(double *t, long n, double total, double *v)
{
	double sum = 0;
	long i;

	for (i = 0; i < n; i++)
		sum += t[i];
	qsort(t, (size_t)n, sizeof(*t), cmp_double);
	v[0] = total * 1e3;
	v[1] = t[0] * 1e3;
	v[2] = sum / n * 1e3;
	v[3] = t[n / 2] * 1e3;
	v[4] = t[n - 1] * 1e3;
}

/*
 * This process's resident memory (KiB), the anonymous part of it, and its open fds; -1 where
 * /proc cannot say. The rest of the resident memory is mapped pages: with rxe, the kernel's
 * queue buffers the provider mmaps (a hardware provider's queues are anonymous memory).
 */
static void footprint(long *rss_kib, long *anon_kib, long *fds)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	DIR *d;

	*rss_kib = *anon_kib = *fds = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", rss_kib) == 1 ||
		    sscanf(line, "RssAnon: %ld kB", anon_kib) == 1)
			continue;
	if (f)
		fclose(f);
	d = opendir("/proc/self/fd");
	if (!d)
		return;
	*fds = 0;
	while (readdir(d))
		(*fds)++;
	closedir(d);
	*fds -= 3; /* ".", "..", and the directory's own fd */
}

/*
 * The verbs objects this process holds on every device, as the kernel counts them (`rdma
 * resource show`, iproute2): QPs, CQs and their entries, MRs and their bytes. -1 each where
 * the tool is missing. Read through the tool rather than the plugin so that any plugin is
 * measured alike.
 */
struct res_count {
	long qp, cq, cqe, mr, mrlen;
};

static void rdma_res(struct res_count *r)
{
	static const char *const what[] = { "qp", "cq", "mr" };
	char cmd[96], line[1024], *p;
	int i;

	r->qp = r->cq = r->cqe = r->mr = r->mrlen = -1;
	for (i = 0; i < 3; i++) {
		FILE *f;
		long n = 0, sum = 0, v;

		snprintf(cmd, sizeof(cmd), "rdma resource show %s pid %ld 2>/dev/null", what[i],
			 (long)getpid());
		f = popen(cmd, "re");
		if (!f)
			return;
		while (fgets(line, sizeof(line), f)) {
			n++;
			p = strstr(line, i == 1 ? " cqe " : " mrlen ");
			if (i && p && sscanf(p + (i == 1 ? 5 : 7), "%ld", &v) == 1)
				sum += v;
		}
		if (pclose(f) != 0)
			return; /* no tool, or no such object kind: not a count of zero */
		if (i == 0)
			r->qp = n;
		else if (i == 1)
			r->cq = n, r->cqe = sum;
		else
			r->mr = n, r->mrlen = sum;
	}
}

/*
 * Messages each connection carries before its footprint is taken again: NCCL's 32 FIFO
 * slots each used once, so that what a plugin touches only on the data path (its slots,
 * its request records) counts, as it does in a job.
 */
#define CONN_WARM_MSGS NCCL_NET_MAX_REQUESTS

/*
 * CONN_WARM_MSGS messages of 8 bytes through each of the @n comms, a round of one on every
 * comm at a time (the client sends, the server receives), from one page registered on
 * each comm (plugins keep one registration of it per NIC). 0, or -1 (said).
 */
static int conn_traffic(struct bench *b, void **comms, long n, int client)
{
	static unsigned char page[4096] __attribute__((aligned(4096)));
	void **mh = calloc((size_t)n, sizeof(void *)), **req = calloc((size_t)n, sizeof(void *));
	double deadline = tool_now() + b->timeout_ms / 1000.0;
	long k, left;
	int m, ret = -1;

	if (!mh || !req) {
		err("out of memory");
		goto out;
	}
	for (k = 0; k < n; k++)
		if (netplug_reg_mr(&b->np, comms[k], page, sizeof(page), NCCL_PTR_HOST, &mh[k]) !=
		    ncclSuccess) {
			err("registering a page on connection %ld failed", k);
			goto out;
		}
	for (m = 0; m < CONN_WARM_MSGS; m++) {
		for (k = 0; k < n; k++) {
			ncclResult_t res;

			do {
				if (client) {
					res = netplug_isend(&b->np, comms[k], page, 8, 0, mh[k],
							    &req[k]);
				} else {
					void *data = page;
					size_t sz = 8;
					int tag = 0;

					res = netplug_irecv(&b->np, comms[k], 1, &data, &sz, &tag,
							    &mh[k], &req[k]);
				}
				if (res != ncclSuccess) {
					plugin_error(client ? "isend" : "irecv", res);
					goto out;
				}
			} while (!req[k] && !expired(deadline));
		}
		for (left = n; left > 0 && !expired(deadline);)
			for (k = 0; k < n; k++) {
				int r = req[k] ? poll_req(b, req[k], NULL) : 0;

				if (r < 0)
					goto out;
				if (r > 0) {
					req[k] = NULL;
					left--;
				}
			}
		if (left > 0) {
			err("%ld connection(s) did not carry message %d within %d ms", left, m,
			    b->timeout_ms);
			goto out;
		}
	}
	ret = 0;
out:
	for (k = 0; mh && k < n; k++)
		if (mh[k])
			netplug_dereg_mr(&b->np, comms[k], mh[k]);
	free(mh);
	free(req);
	return ret;
}

/*
 * The server listens N times and hands the N handles over at once; then connection k is
 * connected (client) and accepted (server), each side timing its own call from the first
 * try to the established comm. Both tables show both sides.
 */
static int run_conn(struct bench *b, int client)
{
	long n = b->iters, k;
	char *handles = calloc((size_t)n, NCCL_NET_HANDLE_MAXSIZE);
	void **lcs = calloc((size_t)n, sizeof(void *)), **comms = calloc((size_t)n, sizeof(void *));
	double *t = calloc((size_t)n, sizeof(double)), t_all;
	char go[1];
	struct wire_row mine = { .ok = 1,
				 .test = TEST_CONN,
				 .side = !client,
				 .iters = (uint64_t)n },
			theirs;
	int ret = EXIT_FAILED;
	long rss0, anon0, fds0, rss1, anon1, fds1, rss2, anon2, fds2;
	struct res_count r0, r1;
	ncclResult_t res;

	if (!handles || !lcs || !comms || !t) {
		err("out of memory");
		goto out;
	}
	for (k = 0; !client && k < n; k++) {
		res = netplug_listen(&b->np, b->ctx, b->spread ? (int)(k % b->ndev) : b->dev,
				     handles + k * NCCL_NET_HANDLE_MAXSIZE, &lcs[k]);
		if (res != ncclSuccess || !lcs[k]) {
			plugin_error("listen", res);
			goto close;
		}
	}
	/* then the client's "go": both clocks start together, after both ends' init */
	if (client ?
		    side_recv(b->fd, handles, (size_t)n * NCCL_NET_HANDLE_MAXSIZE, b->timeout_ms) ||
			    side_send(b->fd, "g", 1, b->timeout_ms) :
		    side_send(b->fd, handles, (size_t)n * NCCL_NET_HANDLE_MAXSIZE, b->timeout_ms) ||
			    side_recv(b->fd, go, 1, b->timeout_ms)) {
		err("side channel: the peer went away during the handshake");
		goto close;
	}
	footprint(&rss0, &anon0, &fds0);
	rdma_res(&r0);
	t_all = tool_now();
	for (k = 0; k < n; k++) {
		double t0 = tool_now();

		int dev = b->spread ? (int)(k % b->ndev) : b->dev;

		if (client ? connect_dev(b, dev, handles + k * NCCL_NET_HANDLE_MAXSIZE, &comms[k],
					 NULL, NULL) :
			     connect_dev(b, dev, NULL, NULL, lcs[k], &comms[k]))
			goto close;
		t[k] = tool_now() - t0;
	}
	conn_stats(t, n, tool_now() - t_all, mine.v);
	/* what the N connections hold (the plugin's QPs, CQs and control blocks live in it) */
	footprint(&rss1, &anon1, &fds1);
	if (rss0 >= 0 && rss1 >= 0 && fds0 >= 0 && fds1 >= 0)
		say("%s side: %ld connection(s) hold %.1f MiB resident (%.1f KiB each: %.1f "
		    "anonymous, %.1f mapped from files and devices) and %ld fds (%.2f each)",
		    client ? "connect" : "accept", n, (double)(rss1 - rss0) / 1024,
		    (double)(rss1 - rss0) / (double)n, (double)(anon1 - anon0) / (double)n,
		    (double)((rss1 - anon1) - (rss0 - anon0)) / (double)n, fds1 - fds0,
		    (double)(fds1 - fds0) / (double)n);
	rdma_res(&r1);
	/* and once each has carried traffic (what a job's connections hold) */
	if (conn_traffic(b, comms, n, client))
		goto close;
	footprint(&rss2, &anon2, &fds2);
	if (rss0 >= 0 && rss2 >= 0)
		say("%s side: after %d messages through each, %.1f KiB each (%.1f anonymous, "
		    "%.1f mapped)",
		    client ? "connect" : "accept", CONN_WARM_MSGS,
		    (double)(rss2 - rss0) / (double)n, (double)(anon2 - anon0) / (double)n,
		    (double)((rss2 - anon2) - (rss0 - anon0)) / (double)n);
	if (r0.qp >= 0 && r1.qp >= 0)
		say("%s side: %ld connection(s) hold %ld QPs (%.2f each), %ld CQs of %ld entries "
		    "(%.1f each), %ld MRs of %.1f MiB (%.1f KiB each) (rdma resource)",
		    client ? "connect" : "accept", n, r1.qp - r0.qp,
		    (double)(r1.qp - r0.qp) / (double)n, r1.cq - r0.cq, r1.cqe - r0.cqe,
		    (double)(r1.cqe - r0.cqe) / (double)n, r1.mr - r0.mr,
		    (double)(r1.mrlen - r0.mrlen) / 1048576.0,
		    (double)(r1.mrlen - r0.mrlen) / 1024.0 / (double)n);
	mine.magic = ROW_MAGIC;
	/* the client's row first, then the server's */
	if (client ? send_row(b, &mine) || recv_row(b, &theirs) :
		     recv_row(b, &theirs) || send_row(b, &mine))
		goto close;
	print_header(b);
	add_row(b, client ? &mine : &theirs);
	add_row(b, client ? &theirs : &mine);
	rule();
	say("%ld connection(s): %.3f ms each on average (%s), route check %s", n, mine.v[2],
	    client ? "connect" : "accept", route_check_env());
	ret = 0;
close:
	for (k = 0; comms && lcs && k < n; k++) {
		if (comms[k] && (client ? netplug_close_send(&b->np, comms[k]) :
					  netplug_close_recv(&b->np, comms[k])) != ncclSuccess)
			ret = EXIT_FAILED;
		if (lcs[k] && netplug_close_listen(&b->np, lcs[k]) != ncclSuccess)
			ret = EXIT_FAILED;
	}
out:
	free(handles);
	free(lcs);
	free(comms);
	free(t);
	return ret;
}

/* ---- the two roles ---- */

static int run_roles(struct bench *b, int client)
{
	char h_mine[NCCL_NET_HANDLE_MAXSIZE] = { 0 }, h_theirs[NCCL_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *sc = NULL, *rc = NULL;
	int need_listen = !client || b->lat, need_connect = client || b->lat, ret = EXIT_FAILED;
	ncclResult_t res;

	if (b->test == TEST_CONN)
		return run_conn(b, client);
	if (need_listen) {
		res = netplug_listen(&b->np, b->ctx, b->dev, h_mine, &lc);
		if (res != ncclSuccess || !lc) {
			plugin_error("listen", res);
			return EXIT_FAILED;
		}
	}
	/* handles cross: the server's first, then the client's (lat only) */
	if ((!client && side_send(b->fd, h_mine, sizeof(h_mine), b->timeout_ms)) ||
	    (client && side_recv(b->fd, h_theirs, sizeof(h_theirs), b->timeout_ms)) ||
	    (b->lat && client && side_send(b->fd, h_mine, sizeof(h_mine), b->timeout_ms)) ||
	    (b->lat && !client && side_recv(b->fd, h_theirs, sizeof(h_theirs), b->timeout_ms))) {
		err("side channel: the peer went away during the handshake");
		goto close;
	}
	if (connect_both(b, need_connect ? h_theirs : NULL, &sc, lc, &rc))
		goto close;
	if (b->lat)
		ret = run_lat(b, sc, rc, client);
	else
		ret = run_bw(b, client ? sc : rc, client);
close:
	if (sc && netplug_close_send(&b->np, sc) != ncclSuccess && !ret)
		ret = EXIT_FAILED;
	if (rc && netplug_close_recv(&b->np, rc) != ncclSuccess && !ret)
		ret = EXIT_FAILED;
	if (lc && netplug_close_listen(&b->np, lc) != ncclSuccess && !ret)
		ret = EXIT_FAILED;
	return ret;
}

/* The server: its device first (no device: exit 3 at once), then one client. */
static int run_server(struct bench *b)
{
	char addr[64];
	struct wire_cfg cfg;
	int lfd, rc, i;

	rc = bench_start(b);
	if (rc)
		goto out;
	rc = EXIT_FAILED;
	snprintf(addr, sizeof(addr), "0.0.0.0:%d", b->port);
	lfd = side_listen(addr);
	if (lfd < 0) {
		err("side channel on port %d: %s", b->port, strerror(-lfd));
		goto out;
	}
	if (b->wait_ms < 0)
		say("waiting for a client on port %d", b->port);
	else
		say("waiting for a client on port %d (%d s at most)", b->port, b->wait_ms / 1000);
	b->fd = side_accept(lfd, b->wait_ms);
	close(lfd);
	if (b->fd < 0) {
		err("no client within %d s", b->wait_ms / 1000);
		goto out;
	}
	if (side_recv(b->fd, &cfg, sizeof(cfg), b->timeout_ms) || cfg.magic != CFG_MAGIC ||
	    cfg.test > TEST_CONN || !cfg.nsizes || cfg.nsizes > MAX_SIZES || !cfg.window ||
	    cfg.window > NCCL_NET_MAX_REQUESTS || cfg.pattern >= RN_ARRAY_SIZE(pattern_names) ||
	    (cfg.test == TEST_CONN && (cfg.iters < 1 || cfg.iters > MAX_CONN_TEST))) {
		err("the client sent no valid settings");
		goto out;
	}
	b->test = (int)cfg.test;
	b->lat = b->test == TEST_LAT;
	b->check = (int)cfg.check;
	b->window = (int)cfg.window;
	b->pattern = (int)cfg.pattern;
	b->iters = (long)cfg.iters;
	b->nsizes = (int)cfg.nsizes;
	for (i = 0; i < b->nsizes; i++)
		b->sizes[i] = (size_t)cfg.sizes[i];
	if (b->test == TEST_CONN)
		say("client connected: %ld connections", b->iters);
	else
		say("client connected: %s, %d size(s), window %d%s%s%s",
		    b->lat ? "latency" : "bandwidth", b->nsizes, b->window,
		    b->lat ? "" : ", pattern ", b->lat ? "" : pattern_names[b->pattern],
		    b->check ? ", data checked" : "");
	rc = run_roles(b, 0);
out:
	if (b->fd >= 0)
		close(b->fd);
	if (bench_stop(b) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

static int run_client(struct bench *b)
{
	struct wire_cfg cfg = { .magic = CFG_MAGIC,
				.test = (uint32_t)b->test,
				.check = (uint32_t)b->check,
				.window = (uint32_t)b->window,
				.pattern = (uint32_t)b->pattern,
				.iters = (uint64_t)b->iters,
				.nsizes = (uint64_t)b->nsizes };
	char addr[300];
	int rc, i;

	for (i = 0; i < b->nsizes; i++)
		cfg.sizes[i] = b->sizes[i];
	snprintf(addr, sizeof(addr), strchr(b->server, ':') ? "[%s]:%d" : "%s:%d", b->server,
		 b->port);
	/* our device first, as the server does (no device: exit 3 without bothering it);
	 * the two inits then overlap */
	rc = bench_start(b);
	if (rc)
		goto out;
	rc = EXIT_FAILED;
	b->fd = side_connect(addr, b->timeout_ms);
	if (b->fd < 0) {
		err("no server at %s within %d s: %s", addr, b->timeout_ms / 1000,
		    strerror(-b->fd));
		goto out;
	}
	if (side_send(b->fd, &cfg, sizeof(cfg), b->timeout_ms)) {
		err("side channel to %s failed", addr);
		goto out;
	}
	rc = run_roles(b, 1);
out:
	if (b->fd >= 0)
		close(b->fd);
	if (bench_stop(b) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

/* ---- command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: nccl-net-bench [options]              (server)\n"
		"       nccl-net-bench [options] SERVER_ADDR  (client)\n"
		"  -d, --ib-dev DEV     device, NCCL_IB_HCA syntax (e.g. rxe0, =mlx5_1:1); device 0 of\n"
		"                       what it selects is used (default: the plugin's first)\n"
		"      --merge          fuse every device -d selects into one vNIC (makeVDevice, as\n"
		"                       NCCL's NIC fusion) and use it (e.g. -d rxe0,rxe1 --merge)\n"
		"      --spread         -t conn, both ends: connection k on device k mod the devices -d\n"
		"                       selects (as NCCL spreads its connections over the NICs)\n"
		"  -s, --size BYTES     message size, 0..1G, K/M/G suffixes (default 64K; lat: 8)\n"
		"  -a, --all            all sizes 4K..64M, powers of two\n"
		"  -n, --iters N        messages per size (default: bw 128M/size within 100..5000;\n"
		"                       lat 1000); conn: connections, 1..%d (default 8)\n"
		"  -p, --port PORT      TCP port of the side channel (default 18515)\n"
		"  -t, --test bw|lat|conn  bandwidth (one way, windowed), ping-pong latency, or the\n"
		"                       set-up time of -n connections and what they hold, as made\n"
		"                       and after 32 messages of 8 bytes each (default bw)\n"
		"  -w, --window N       requests in flight, 1..%d (default 8)\n"
		"  -c, --check          check every byte (pattern per message) and a checksum\n"
		"      --pattern nccl|each  bw's loop: nccl (default) posts one request a pass, the\n"
		"                       receiver tests its oldest only in a pass that posted none,\n"
		"                       the sender in every pass (NCCL's proxy thread); each posts\n"
		"                       every free slot and tests every slot in each pass\n"
		"      --nap-us N       sleep N us after a poll round without progress, 0..1000000\n"
		"                       (default 0: busy poll, as perftest)\n"
		"      --plugin NAME    NCCL_NET_PLUGIN value, or the path of any net plugin .so\n"
		"                       (default $NCCL_NET_PLUGIN, else roce); its newest\n"
		"                       ncclNetPlugin_v12..v6 table is used\n"
		"      --timeout S      server: wait S s for a client (default: forever); both: bound\n"
		"                       on every other wait, 1..86400 (default 30)\n"
		"      --json           results as one JSON document on stdout (table to stderr);\n"
		"                       a failure adds {\"error\": {\"code\", \"kind\", \"message\"}}\n"
		"      --csv            results as CSV on stdout (table to stderr)\n"
		"      --cpu            bw: each side's CPU time per message (user + system over the\n"
		"                       timed phase) in the table and the CSV (JSON has it always)\n"
		"  -v, --verbose        the plugin's INFO lines (NCCL_DEBUG=INFO)\n"
		"  -h, --help           this text\n"
		"      --version        print the version\n"
		"Options may come before or after SERVER_ADDR. The client's -s/-a/-n/-t/-w/-c and\n"
		"--pattern apply to both ends; both print the same table. NCCL_ROCE_ROUTE_CHECK=off\n"
		"skips the plugin's per-connection route check (compare -t conn with and without\n"
		"it).\n",
		MAX_CONN_TEST, NCCL_NET_MAX_REQUESTS);
	fputs(RN_CLI_EXIT_HELP, f);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "port", required_argument, NULL, 'p' },
		{ "test", required_argument, NULL, 't' },
		{ "window", required_argument, NULL, 'w' },
		{ "check", no_argument, NULL, 'c' },
		{ "nap-us", required_argument, NULL, 'N' },
		{ "pattern", required_argument, NULL, 'L' },
		{ "plugin", required_argument, NULL, 'P' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'J' },
		{ "csv", no_argument, NULL, 'C' },
		{ "cpu", no_argument, NULL, 'U' },
		{ "merge", no_argument, NULL, 'M' },
		{ "spread", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'Z' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench b = {
		.plugin = getenv("NCCL_NET_PLUGIN") && *getenv("NCCL_NET_PLUGIN") ?
				  getenv("NCCL_NET_PLUGIN") :
				  "roce",
		.port = 18515,
		.sizes = { 65536 },
		.nsizes = 1,
		.window = 8,
		.timeout_ms = 30000,
		.wait_ms = -1,
		.fd = -1,
	};
	FILE *jerr = rn_cli_wants_json(argc, argv, 0) ? stdout : NULL;
	const char *hca = NULL;
	int c, all = 0, verbose = 0, fd;
	long v;
	size_t sz;

#define BAD(opt) rn_cli_error(PROG, jerr, EXIT_USAGE, "bad value '%s' for %s", optarg, opt)
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:s:an:p:t:w:cvh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!*optarg)
				return BAD("-d");
			hca = optarg;
			break;
		case 's':
			if (rn_cli_size(optarg, 1u << 30, &sz))
				return BAD("-s");
			b.sizes[0] = sz;
			b.size_given = 1;
			break;
		case 'a':
			all = 1;
			break;
		case 'n':
			if (rn_cli_long(optarg, 1, 100000000, &v))
				return BAD("-n");
			b.iters = v;
			break;
		case 'p':
			if (rn_cli_long(optarg, 1, 65535, &v))
				return BAD("-p");
			b.port = (int)v;
			break;
		case 't':
			for (b.test = 0; b.test <= TEST_CONN; b.test++)
				if (!strcmp(optarg, test_names[b.test]))
					break;
			if (b.test > TEST_CONN)
				return BAD("-t (bw, lat or conn)");
			break;
		case 'w':
			if (rn_cli_long(optarg, 1, NCCL_NET_MAX_REQUESTS, &v))
				return BAD("-w");
			b.window = (int)v;
			break;
		case 'c':
			b.check = 1;
			break;
		case 'L':
			for (b.pattern = 0; b.pattern < (int)RN_ARRAY_SIZE(pattern_names) &&
					    strcmp(optarg, pattern_names[b.pattern]);
			     b.pattern++)
				;
			if (b.pattern == (int)RN_ARRAY_SIZE(pattern_names))
				return BAD("--pattern (nccl or each)");
			break;
		case 'N':
			if (rn_cli_long(optarg, 0, 1000000, &v))
				return BAD("--nap-us");
			b.nap_us = (int)v;
			break;
		case 'P':
			if (!*optarg)
				return BAD("--plugin");
			b.plugin = optarg;
			break;
		case 'T':
			if (rn_cli_long(optarg, 1, 86400, &v))
				return BAD("--timeout");
			b.timeout_ms = (int)v * 1000;
			b.wait_ms = b.timeout_ms;
			break;
		case 'J':
			b.json = 1;
			break;
		case 'C':
			b.csv = 1;
			break;
		case 'U':
			b.cpu = 1;
			break;
		case 'M':
			b.merge = 1;
			break;
		case 'S':
			b.spread = 1;
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
			return rn_cli_bad_option(PROG, jerr, c, argv, optind, optopt);
		}
	}
#undef BAD
	if (optind < argc)
		b.server = argv[optind++];
	if (optind < argc)
		return rn_cli_error(PROG, jerr, EXIT_USAGE, "unexpected argument '%s'",
				    argv[optind]);
	if (b.json && b.csv)
		return rn_cli_error(PROG, jerr, EXIT_USAGE, "--json and --csv exclude each other");
	if (all && b.test != TEST_BW)
		return rn_cli_error(PROG, jerr, EXIT_USAGE, "-a goes with -t bw only");
	if (b.test == TEST_CONN && (b.size_given || all || b.check))
		return rn_cli_error(PROG, jerr, EXIT_USAGE,
				    "-t conn moves no data to measure: no -s, -a or -c");
	if (b.spread && b.merge)
		return rn_cli_error(PROG, jerr, EXIT_USAGE,
				    "--spread and --merge: one device or many");
	if (b.test == TEST_CONN && b.iters > MAX_CONN_TEST)
		return rn_cli_error(PROG, jerr, EXIT_USAGE, "-t conn: at most %d connections (-n)",
				    MAX_CONN_TEST);
	if (b.server) {
		char addr[300];

		snprintf(addr, sizeof(addr), strchr(b.server, ':') ? "[%s]:%d" : "%s:%d", b.server,
			 b.port);
		if (side_addr_check(addr))
			return rn_cli_error(PROG, jerr, EXIT_USAGE,
					    "bad server address '%s' (a "
					    "numeric IPv4 or IPv6 address)",
					    b.server);
	}
	if (b.test == TEST_CONN && !b.iters)
		b.iters = 8;
	b.lat = b.test == TEST_LAT;
	if (all) {
		b.nsizes = 0;
		for (sz = MIN_SIZE_ALL; sz <= MAX_SIZE_ALL; sz <<= 1)
			b.sizes[b.nsizes++] = sz;
	} else if (b.lat && !b.size_given) {
		b.sizes[0] = 8;
	}
	/* The checks are done: now the environment the plugin reads, and the output streams. */
	if (hca)
		setenv("NCCL_IB_HCA", hca, 1);
	if (verbose)
		tool_log_at_least(NCCL_LOG_INFO);
	b.mout = stdout;
	if (b.json || b.csv) {
		/* stdout carries only the results; the table, our lines and the plugin's go to
		 * stderr */
		fflush(stdout);
		fd = dup(STDOUT_FILENO);
		if (fd < 0 || !(b.mout = fdopen(fd, "w")) ||
		    dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			perror(PROG ": stdout");
			return EXIT_FAILED;
		}
	}
	c = b.server ? run_client(&b) : run_server(&b);
	if (b.json)
		print_json(&b, c);
	if (b.mout != stdout)
		fclose(b.mout);
	return c;
}
