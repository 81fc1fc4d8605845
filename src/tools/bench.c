// SPDX-License-Identifier: MIT
/*
 * nccl-net-bench: perftest's shape (ib_write_bw / ib_write_lat) over an NCCL net plugin.
 *
 *   server:  nccl-net-bench [-d rxe0] [options]
 *   client:  nccl-net-bench [-d rxe0] [options] SERVER_ADDR
 *
 * The client's -s/-a/-n/-t/-w/--check win: it sends them to the server with the first
 * message of the TCP side channel (-p PORT), which also carries the plugin's handles.
 * bw: one-way, client -> server, with a window of isends/irecvs in flight (NCCL's
 * pattern). lat: ping-pong over two connections (one per direction), half the round trip.
 * Every wait is bounded (--timeout): a dead peer or a stuck transfer is an error.
 *
 * Exit: 0 done; 1 the plugin failed or refused (its reason is printed); 2 usage;
 * 3 the plugin offers no device.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netplug.h"
#include "tool_common.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 2
#define EXIT_NODEV 3
#define MAX_SIZES 32
#define BUF_CAP ((size_t)32 << 20) /* buffer bytes per side, at most (one message at least) */
#define CFG_MAGIC 0x726e6263u      /* "rnbc" */
#define MIN_SIZE_ALL ((size_t)4 << 10)
#define MAX_SIZE_ALL ((size_t)64 << 20)

struct bench {
	const char *plugin;
	const char *server;   /* NULL: we are the server */
	int port;
	size_t sizes[MAX_SIZES];
	int nsizes;
	int size_given;
	long iters;           /* 0: by size */
	int lat;
	int check;
	int window;
	int nap_us;
	int timeout_ms;
	struct netplug np;
	void *ctx;
	int inited;
	int fd;               /* side channel */
};

/* What the client tells the server. */
struct wire_cfg {
	uint32_t magic, lat, check, window;
	uint64_t iters, nsizes;
	uint64_t sizes[MAX_SIZES];
};

/* The server's word after each size: did the data arrive intact, and its checksum. */
struct wire_result {
	uint32_t ok, pad;
	uint64_t sum;
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

static void plugin_error(const char *what, ncclResult_t res)
{
	const char *w = tool_last_warn();

	say("%s: %s%s%s", what, netplug_result_str(res), *w ? ": " : "", w);
}

/* ---- data: a pattern per message and a checksum of what really moved ---- */



/* ---- plugin setup ---- */

static int bench_start(struct bench *b)
{
	ncclNetProperties_v12_t p;
	ncclResult_t res;
	int ndev = 0;

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
			say("could not load a net plugin from '%s'%s%s", b->plugin,
			    alt[0] ? " nor " : "", alt);
			return EXIT_FAILED;
		}
	}
	res = netplug_init(&b->np, &b->ctx, 0xbe4c0000ull, -1, tool_logger);
	b->inited = 1;
	if (res != ncclSuccess) {
		plugin_error("init", res);
		say("the plugin offers no device");
		return EXIT_NODEV;
	}
	res = netplug_devices(&b->np, &ndev);
	if (res != ncclSuccess || ndev < 1) {
		plugin_error("devices", res);
		say("the plugin offers no device");
		return EXIT_NODEV;
	}
	if (netplug_get_properties(&b->np, 0, &p) == ncclSuccess)
		say("plugin %s (v%d), device 0 of %d: %s port %d, %d Mb/s", b->np.name,
		    b->np.version, ndev, p.name ? p.name : "?", p.port, p.speed);
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
static int connect_both(struct bench *b, void *send_handle, void **sc, void *lc, void **rc)
{
	double deadline = tool_now() + b->timeout_ms / 1000.0;
	ncclResult_t res;

	while ((send_handle && !*sc) || (lc && !*rc)) {
		if (send_handle && !*sc) {
			res = netplug_connect(&b->np, b->ctx, 0, -1, send_handle, sc);
			if (res != ncclSuccess)
				goto refused;
		}
		if (lc && !*rc) {
			res = netplug_accept(&b->np, lc, rc);
			if (res != ncclSuccess)
				goto refused;
		}
		if (((send_handle && !*sc) || (lc && !*rc)) && expired(deadline)) {
			say("connection not established within %d ms", b->timeout_ms);
			return -1;
		}
	}
	return 0;
refused:
	say("connection refused by the plugin: %s",
	    *tool_last_warn() ? tool_last_warn() : netplug_result_str(res));
	return -1;
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

/*
 * One phase of @count messages of @size: post into free slots, test the posted ones,
 * nap after a round without progress. Returns seconds or -1.
 */
static double bw_phase(struct bw_side *x, size_t size, long count, uint64_t id0)
{
	struct bench *b = x->b;
	size_t nbuf = nbufs_for(b, size);
	int window = b->check ? (int)nbuf : b->window, s;
	long posted = 0, completed = 0;
	double t0 = tool_now(), last = t0;
	ncclResult_t res;

	while (completed < count) {
		int progress = 0;

		for (s = 0; s < window; s++) {
			unsigned char *buf = x->pool + (size_t)s % nbuf * size;

			if (!x->reqs[s] && posted < count) {
				if (x->sender) {
					if (b->check)
						tool_fill(buf, size, id0 + (uint64_t)posted);
					res = netplug_isend(&b->np, x->comm, buf, size, 0, x->mh,
							    &x->reqs[s]);
				} else {
					void *data = buf;
					size_t sz = size;
					int tag = 0;

					res = netplug_irecv(&b->np, x->comm, 1, &data, &sz, &tag,
							    &x->mh, &x->reqs[s]);
				}
				if (res != ncclSuccess) {
					plugin_error(x->sender ? "isend" : "irecv", res);
					return -1;
				}
				if (x->reqs[s]) {
					x->msg[s] = posted++;
					progress = 1;
				}
			}
			if (x->reqs[s]) {
				int got = -1, r = poll_req(b, x->reqs[s], &got);

				if (r < 0)
					return -1;
				if (!r)
					continue;
				x->reqs[s] = NULL;
				completed++;
				progress = 1;
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
			}
		}
		if (progress) {
			last = tool_now();
		} else if (expired(last + b->timeout_ms / 1000.0)) {
			say("no progress for %d ms after %ld of %ld messages of %zu bytes (peer dead?)",
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

static void rule(void)
{
	puts("---------------------------------------------------------------------------------------");
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
		say("out of memory (%zu bytes)", x.pool_bytes);
		return EXIT_FAILED;
	}
	memset(x.pool, 0, x.pool_bytes);
	res = netplug_reg_mr(&b->np, comm, x.pool, x.pool_bytes, NCCL_PTR_HOST, &x.mh);
	if (res != ncclSuccess) {
		plugin_error("regMr", res);
		free(x.pool);
		return EXIT_FAILED;
	}
	if (sender) {
		rule();
		printf(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
	}
	for (i = 0; i < b->nsizes && !rc; i++) {
		size_t size = b->sizes[i];
		long n = iters_for(b, size), warm = size ? (long)(((size_t)16 << 20) / size) : b->window;
		struct wire_result r = { 0 };
		double secs;

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
		secs = bw_phase(&x, size, n, (uint64_t)warm);
		if (secs < 0) {
			rc = EXIT_FAILED;
			break;
		}
		/* the receiver's verdict and checksum travel back to the sender */
		if (!sender) {
			r.ok = x.bad_msg < 0;
			r.sum = x.sum;
			if (!r.ok)
				say("%zu bytes: message %ld: %d bytes received, first bad byte %ld",
				    size, x.bad_msg, x.bad_size, x.bad_off);
			if (side_send(b->fd, &r, sizeof(r), b->timeout_ms))
				rc = EXIT_FAILED;
			else if (!r.ok)
				rc = EXIT_FAILED;
			continue;
		}
		if (side_recv(b->fd, &r, sizeof(r), b->timeout_ms)) {
			say("the server sent no result for %zu bytes", size);
			rc = EXIT_FAILED;
			break;
		}
		if (!r.ok || x.bad_msg >= 0) {
			say("%zu bytes: data check failed (%s)", size, r.ok ? "send size" :
			    "see the server's output");
			rc = EXIT_FAILED;
			break;
		}
		if (b->check && r.sum != x.sum) {
			say("%zu bytes: checksum sent %#llx, received %#llx", size,
			    (unsigned long long)x.sum, (unsigned long long)r.sum);
			rc = EXIT_FAILED;
			break;
		}
		{
			double gbps = secs > 0 ? (double)size * n * 8 / secs / 1e9 : 0;

			printf(" %-10zu %-14ld %-18s %-20.4f %.6f\n", size, n, "n/a", gbps,
			       secs > 0 ? n / secs / 1e6 : 0);
			printf("bw_gbps %.4f bytes %zu iters %ld window %d nap_us %d%s\n", gbps, size, n,
			       b->check ? (int)nbufs_for(b, size) : b->window, b->nap_us,
			       b->check ? " checked" : "");
			fflush(stdout);
		}
	}
	if (sender && !rc)
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
			say("irecv not accepted within %d ms", b->timeout_ms);
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
					say("ping-pong message %llu: %d bytes or data wrong",
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
				res = netplug_isend(&b->np, l->sc, l->sbuf, l->size, 0, l->smh, &sreq);
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
			say("ping-pong stuck for %d ms (peer dead?)", b->timeout_ms);
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
	double *t = NULL;
	int ret = EXIT_FAILED;
	ncclResult_t res;

	if (!bytes)
		bytes = 4096;
	if (posix_memalign((void **)&sbuf, 4096, bytes) || posix_memalign((void **)&rbuf, 4096, bytes) ||
	    !(t = calloc((size_t)n, sizeof(*t)))) {
		say("out of memory");
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
		struct lat_bufs l = { .sc = sc, .rc = rc, .smh = smh, .rmh = rmh, .sbuf = sbuf,
				      .rbuf = rbuf, .size = size };

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
	ret = 0;
	if (client) {
		double sum = 0, sq = 0, avg, sd;

		for (i = 0; i < n; i++)
			sum += t[i];
		avg = sum / n;
		for (i = 0; i < n; i++)
			sq += (t[i] - avg) * (t[i] - avg);
		sd = sqrt(sq / n);
		qsort(t, (size_t)n, sizeof(*t), cmp_double);
		rule();
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n");
		printf(" %-6zu %-10ld     %-10.2f     %-10.2f   %-10.2f         %-10.2f     %-10.2f      %-10.2f              %-10.2f\n",
		       size, n, t[0], t[n - 1], t[n / 2], avg, sd, t[(long)(n * 0.99)],
		       t[(long)(n * 0.999)]);
		rule();
		printf("lat_us %.2f avg %.2f bytes %zu iters %ld nap_us %d%s\n", t[n / 2], avg, size, n,
		       b->nap_us, b->check ? " checked" : "");
		fflush(stdout);
	}
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

/* ---- the two roles ---- */

static int run_roles(struct bench *b, int client)
{
	char h_mine[NCCL_NET_HANDLE_MAXSIZE] = { 0 }, h_theirs[NCCL_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *sc = NULL, *rc = NULL;
	int need_listen = !client || b->lat, need_connect = client || b->lat, ret = EXIT_FAILED;
	ncclResult_t res;

	if (need_listen) {
		res = netplug_listen(&b->np, b->ctx, 0, h_mine, &lc);
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
		say("side channel: the peer went away during the handshake");
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

static int run_server(struct bench *b)
{
	char addr[64];
	struct wire_cfg cfg;
	int lfd, rc, i;

	snprintf(addr, sizeof(addr), "0.0.0.0:%d", b->port);
	lfd = side_listen(addr);
	if (lfd < 0) {
		say("side channel on port %d: %s", b->port, strerror(-lfd));
		return EXIT_FAILED;
	}
	say("waiting for a client on port %d (%d ms at most)", b->port, b->timeout_ms);
	b->fd = side_accept(lfd, b->timeout_ms);
	close(lfd);
	if (b->fd < 0) {
		say("no client within %d ms", b->timeout_ms);
		return EXIT_FAILED;
	}
	if (side_recv(b->fd, &cfg, sizeof(cfg), b->timeout_ms) || cfg.magic != CFG_MAGIC ||
	    !cfg.nsizes || cfg.nsizes > MAX_SIZES || !cfg.window ||
	    cfg.window > NCCL_NET_MAX_REQUESTS) {
		say("the client sent no valid settings");
		close(b->fd);
		return EXIT_FAILED;
	}
	b->lat = (int)cfg.lat;
	b->check = (int)cfg.check;
	b->window = (int)cfg.window;
	b->iters = (long)cfg.iters;
	b->nsizes = (int)cfg.nsizes;
	for (i = 0; i < b->nsizes; i++)
		b->sizes[i] = (size_t)cfg.sizes[i];
	say("client connected: %s, %d size(s), window %d%s", b->lat ? "latency" : "bandwidth",
	    b->nsizes, b->window, b->check ? ", data checked" : "");
	rc = bench_start(b);
	if (!rc)
		rc = run_roles(b, 0);
	close(b->fd);
	if (bench_stop(b) && !rc)
		rc = EXIT_FAILED;
	return rc;
}

static int run_client(struct bench *b)
{
	struct wire_cfg cfg = { .magic = CFG_MAGIC, .lat = (uint32_t)b->lat,
				.check = (uint32_t)b->check, .window = (uint32_t)b->window,
				.iters = (uint64_t)b->iters, .nsizes = (uint64_t)b->nsizes };
	char addr[300];
	int rc, i;

	for (i = 0; i < b->nsizes; i++)
		cfg.sizes[i] = b->sizes[i];
	snprintf(addr, sizeof(addr), strchr(b->server, ':') ? "[%s]:%d" : "%s:%d", b->server,
		 b->port);
	b->fd = side_connect(addr, b->timeout_ms);
	if (b->fd < 0) {
		say("no server at %s within %d ms: %s", addr, b->timeout_ms, strerror(-b->fd));
		return EXIT_FAILED;
	}
	if (side_send(b->fd, &cfg, sizeof(cfg), b->timeout_ms)) {
		say("side channel to %s failed", addr);
		close(b->fd);
		return EXIT_FAILED;
	}
	rc = bench_start(b);
	if (!rc)
		rc = run_roles(b, 1);
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
		"  -s, --size BYTES     message size, K/M/G suffixes (default 64K; lat: 8)\n"
		"  -a, --all            all sizes 4K..64M, powers of two\n"
		"  -n, --iters N        messages per size (default: bw 128M/size within 100..5000;\n"
		"                       lat 1000)\n"
		"  -p, --port PORT      TCP port of the side channel (default 18515)\n"
		"  -t, --test bw|lat    bandwidth (one way, windowed) or ping-pong latency (default bw)\n"
		"  -w, --window N       requests in flight, 1..%d (default 8)\n"
		"  -c, --check          check every byte (pattern per message) and a checksum\n"
		"      --nap-us N       sleep N us after a poll round without progress (default 200;\n"
		"                       0 = busy poll)\n"
		"      --plugin NAME    NCCL_NET_PLUGIN value (default $NCCL_NET_PLUGIN, else roce)\n"
		"      --timeout MS     bound on every wait (default 30000)\n"
		"  -v, --verbose        the plugin's INFO lines (NCCL_DEBUG=INFO)\n"
		"The client's -s/-a/-n/-t/-w/-c apply to both ends.\n"
		"Output: a perftest-like table and \"bw_gbps X ...\" / \"lat_us X ...\" lines.\n"
		"Exit: 0 ok, 1 plugin failure or refusal, 2 usage, 3 no device.\n",
		NCCL_NET_MAX_REQUESTS);
}

static int bad_arg(const char *opt, const char *val)
{
	fprintf(stderr, "nccl-net-bench: bad value '%s' for %s (see --help)\n", val, opt);
	return EXIT_USAGE;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
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
		{ "plugin", required_argument, NULL, 'P' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct bench b = {
		.plugin = getenv("NCCL_NET_PLUGIN") && *getenv("NCCL_NET_PLUGIN") ?
			  getenv("NCCL_NET_PLUGIN") : "roce",
		.port = 18515,
		.sizes = { 65536 },
		.nsizes = 1,
		.window = 8,
		.nap_us = 200,
		.timeout_ms = 30000,
		.fd = -1,
	};
	int c, all = 0;
	long v;
	size_t sz;

	while ((c = getopt_long(argc, argv, "d:s:an:p:t:w:cvh", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!*optarg)
				return bad_arg("-d", optarg);
			/* before init: the plugin reads its configuration there */
			setenv("NCCL_IB_HCA", optarg, 1);
			break;
		case 's':
			if (tool_parse_size(optarg, &sz) || sz > ((size_t)1 << 30))
				return bad_arg("-s", optarg);
			b.sizes[0] = sz;
			b.size_given = 1;
			break;
		case 'a': all = 1; break;
		case 'n':
			if (parse_long(optarg, 1, 100000000, &v))
				return bad_arg("-n", optarg);
			b.iters = v;
			break;
		case 'p':
			if (parse_long(optarg, 1, 65535, &v))
				return bad_arg("-p", optarg);
			b.port = (int)v;
			break;
		case 't':
			if (!strcmp(optarg, "bw"))
				b.lat = 0;
			else if (!strcmp(optarg, "lat"))
				b.lat = 1;
			else
				return bad_arg("-t (bw or lat)", optarg);
			break;
		case 'w':
			if (parse_long(optarg, 1, NCCL_NET_MAX_REQUESTS, &v))
				return bad_arg("-w", optarg);
			b.window = (int)v;
			break;
		case 'c': b.check = 1; break;
		case 'N':
			if (parse_long(optarg, 0, 1000000, &v))
				return bad_arg("--nap-us", optarg);
			b.nap_us = (int)v;
			break;
		case 'P':
			if (!*optarg)
				return bad_arg("--plugin", optarg);
			b.plugin = optarg;
			break;
		case 'T':
			if (parse_long(optarg, 1, 3600000, &v))
				return bad_arg("--timeout", optarg);
			b.timeout_ms = (int)v;
			break;
		case 'v': tool_log_set_level(NCCL_LOG_INFO); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc)
		b.server = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "nccl-net-bench: unexpected argument '%s' (see --help)\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (all && b.lat) {
		fprintf(stderr, "nccl-net-bench: -a goes with -t bw only\n");
		return EXIT_USAGE;
	}
	if (all) {
		b.nsizes = 0;
		for (sz = MIN_SIZE_ALL; sz <= MAX_SIZE_ALL; sz <<= 1)
			b.sizes[b.nsizes++] = sz;
	} else if (b.lat && !b.size_given) {
		b.sizes[0] = 8;
	}
	return b.server ? run_client(&b) : run_server(&b);
}
