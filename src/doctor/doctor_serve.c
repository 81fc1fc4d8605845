// SPDX-License-Identifier: MIT
/*
 * `roce-doctor serve`: many clients wait at once, one session runs at a time.
 *
 * Two threads. The front desk (the caller's) polls the listening socket and up to
 * SERVE_MAX connections that have not sent their whole inventory yet. Each reads without
 * blocking, a piece at a time, against a deadline for the whole message (SERVE_IDLE_MS to
 * send a first byte, SERVE_MSG_MS from that byte to finish), so a client that trickles
 * one byte per second, or sends nothing, is dropped however many reads it makes; when the
 * table is full the connection waiting longest makes room for the newest (a real client
 * sends its inventory at once, so it is never the oldest for long).
 *
 * Memory is bounded before it is taken. A header is checked against its type's limit
 * (rn_dw_type_max: an inventory is at most RN_DW_INV_MAX) and must be an inventory;
 * then its payload is charged to one byte budget over every waiting connection and
 * queued inventory (SERVE_BUDGET). When the budget is full, the connections holding a
 * part of it longest without finishing make room, and a header that still does not fit
 * is refused. So `serve` holds at most SERVE_BUDGET (8 MiB) of clients' messages, plus
 * one session's: the client's pair checks (RN_DW_CHECKS_MAX, 4 MiB), what they and its
 * inventory decode to (their texts, at most the messages' size, and 2 MiB of allocation
 * overhead for 10240 findings' texts at most) and the session's own 1 MiB: 20 MiB over
 * its own few MB, whatever the clients announce or send.
 *
 * A whole inventory joins the queue (SERVE_QUEUE at most), and the session thread takes
 * them one after another: two sessions at once would send ARP requests while the other
 * checks the very neighbour entries those requests rewrite, and both would share the
 * one probe transport (doctor_rdma.c). A client that can read it (RN_DW_CAP_WAIT) is told
 * how many sessions are ahead (WAIT) when it joins and whenever that changes, and one
 * the queue cannot take is told so (BUSY): busy is never mistaken for dead.
 *
 * A session is bounded: every message by its deadline, the whole by
 * SERVE_SESSION_MS plus SERVE_PROBE_MS per NIC pair both ends can probe (at most
 * SERVE_SESSION_MAX_MS), one RDMA probe per NIC pair; neighbour and ARP work only for
 * the client's addresses inside this host's NICs' subnets, SERVE_PEER_ADDRS at most.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "doctor_pair.h"
#include "rn_codec.h"
#include "rn_net.h"
#include "rn_ratelimit.h"
#include "rn_wire.h"

#define SERVE_MAX 64           /* connections reading their inventory */
#define SERVE_QUEUE 32         /* whole inventories waiting for their session */
#define SERVE_BUDGET 8388608   /* bytes of clients' messages held, all of them together (8 MiB) */
#define SERVE_IDLE_MS 5000     /* accept -> first byte */
#define SERVE_MSG_MS 5000      /* first byte -> the whole inventory */
#define SERVE_SESSION_MS 20000 /* a session, probes aside */
#define SERVE_PROBE_MS 4000    /* more per NIC pair both ends can probe (ms when it works) */
#define SERVE_SESSION_MAX_MS 300000
#define SERVE_PEER_ADDRS 16    /* a client's addresses that get neighbour and ARP work */
#define SERVE_PER_ADDR 4       /* sessions queued or running for one client address */
#define SERVE_EMPTY_MS 2000    /* our CHECKS -> DONE, for a client whose CHECKS name no pair */
#define DROP_LOG_NS (60ull * 1000000000ull) /* one line per address per minute */
#define STR_(x) #x
#define STR(x) STR_(x)
/* the limits as strings, for messages (clang-format lays out a name between string pieces) */
#define SERVE_BUDGET_S STR(SERVE_BUDGET)
#define SERVE_EMPTY_MS_S STR(SERVE_EMPTY_MS)
#define SERVE_IDLE_MS_S STR(SERVE_IDLE_MS)
#define SERVE_MAX_S STR(SERVE_MAX)
#define SERVE_MSG_MS_S STR(SERVE_MSG_MS)
#define SERVE_PER_ADDR_S STR(SERVE_PER_ADDR)

struct serve;

struct waiting {
	int fd;           /* -1: free */
	double accept_ms; /* the idle deadline and the eviction order count from here */
	double first_ms;  /* its first byte (0: none yet) */
	size_t held;      /* bytes of the budget its message holds */
	struct sockaddr_storage ss;
	char who[80];
	struct rn_dw_reader rd;
	struct serve *srv;
};

/* A client whose inventory came whole, waiting for its session. */
struct job {
	int fd;
	unsigned int caps; /* RN_DW_CAP_* of its inventory */
	int told;          /* the "ahead" of the last WAIT it got, -1: none */
	struct sockaddr_storage ss;
	char who[80];
	struct rn_dw_msg inv; /* held in the budget until the session ends */
};

struct serve {
	struct rn_doctor *d;
	pthread_mutex_t lock;               /* everything below the table */
	pthread_cond_t work;
	struct job queue[SERVE_QUEUE];      /* oldest first */
	int nqueued;
	int running;                        /* a session in progress */
	struct sockaddr_storage running_ss; /* its client */
	int stop;
	size_t held;                        /* bytes of the budget in use */
	double session_ms; /* how long sessions take here (mean of the last few), 0 unknown */
	int ended;         /* sessions that ended, whole or cut */
	int finished;      /* ... that came to a verdict */
	int rc;            /* the worst verdict */
	int wake[2];       /* session thread -> front desk: a session ended */
	struct waiting tab[SERVE_MAX]; /* the front desk's alone */
};

/* "198.18.0.11:53956" also for a client that reached the dual-stack socket over IPv4 */
static void peer_str(struct sockaddr_storage *ss, char *buf, size_t len)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		struct sockaddr_in s4 = { .sin_family = AF_INET, .sin_port = s6->sin6_port };

		memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		memset(ss, 0, sizeof(*ss));
		memcpy(ss, &s4, sizeof(s4));
	}
	rn_sockaddr_str(ss, buf, len);
}

static void release(struct serve *srv, size_t n)
{
	pthread_mutex_lock(&srv->lock);
	srv->held -= n;
	pthread_mutex_unlock(&srv->lock);
}

static void w_close(struct waiting *w)
{
	rn_dw_reader_free(&w->rd);
	if (w->held)
		release(w->srv, w->held);
	w->held = 0;
	close(w->fd);
	w->fd = -1;
}

/* What a rate-limited line says: each kind has its own line per address per minute. */
enum { LOG_DROP = 1, LOG_REJECT, LOG_BUSY };

/*
 * One line per address per minute and kind (a flood is 250 connections from one, 44 k
 * rejections in 3 minutes were 6 MB of log); the next line says how many were held.
 */
static void log_limited(int kind, const struct sockaddr_storage *ss, const char *fmt, ...)
	__rn_printf(3, 4);

static void log_limited(int kind, const struct sockaddr_storage *ss, const char *fmt, ...)
{
	unsigned int held = 0;
	char msg[512];
	va_list ap;

	if (!rn_ratelimit_peer_kind(ss, kind, (uint64_t)(rn_doctor_now_ms() * 1e6), DROP_LOG_NS,
				    &held))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rn_doctor_slog("%s (%u more from this address in the last minute; those within a "
		       "minute are not logged)",
		       msg, held);
}

/* A stranger that was slow, idle or too big for the room left. */
static void w_drop(struct waiting *w, const char *why)
{
	log_limited(LOG_DROP, &w->ss, "dropped %s: %s", w->who, why);
	w_close(w);
}

static double w_deadline(const struct waiting *w)
{
	return w->first_ms ? w->first_ms + SERVE_MSG_MS : w->accept_ms + SERVE_IDLE_MS;
}

/*
 * The reader's hook, between a valid header and its allocation: an inventory alone,
 * and only what the budget has room for. When it has none, the connections that have
 * held a part of it longest without finishing make room (a real client's inventory is
 * whole the moment it is read); queued inventories are never dropped for it.
 */
static int admit(struct rn_dw_reader *r, const struct rn_dw_msg *hdr, char *why, size_t len)
{
	struct waiting *w = r->arg;
	struct serve *srv = w->srv;
	int fits;

	if (hdr->type != RN_DW_INV) {
		snprintf(why, len, "message type %u before the inventory", hdr->type);
		return -EBADMSG;
	}
	for (;;) {
		struct waiting *old = NULL;
		size_t room;
		int i;

		pthread_mutex_lock(&srv->lock);
		room = SERVE_BUDGET - srv->held;
		fits = hdr->len <= room;
		if (fits)
			srv->held += hdr->len;
		pthread_mutex_unlock(&srv->lock);
		if (fits)
			break;
		for (i = 0; i < SERVE_MAX; i++) {
			struct waiting *o = &srv->tab[i];

			if (o != w && o->fd >= 0 && o->held &&
			    (!old || o->first_ms < old->first_ms))
				old = o;
		}
		if (!old) {
			snprintf(why, len,
				 "its inventory of %u bytes does not fit in the %zu bytes "
				 "left of the budget for waiting clients (queued inventories hold "
				 "the rest)",
				 hdr->len, room);
			return -ENOBUFS;
		}
		w_drop(old, "the byte budget for waiting clients (" SERVE_BUDGET_S " bytes) "
			    "is full: the one holding a part of it longest makes room");
	}
	w->held = hdr->len;
	return 0;
}

static void read_one(struct serve *srv, struct waiting *w);

/*
 * Take the queued connections, at most SERVE_MAX a call, and read each one at once: a real
 * client's inventory is there with its connect, so it is queued (or told busy) before any
 * newer connection could want its slot, and a connect+close is gone at once. A full table
 * drops the oldest connection that sent nothing yet, else the oldest: under 7 k connect+close
 * a second, taking everything and evicting the oldest before reading reset real clients.
 */
static void take_all(struct serve *srv, int lfd)
{
	int n;

	for (n = 0; n < SERVE_MAX; n++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct waiting *w = NULL;
		int fd, i;

		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return; /* EAGAIN: the queue is empty; anything else: try at the next poll */
		for (i = 0; i < SERVE_MAX && !w; i++)
			if (srv->tab[i].fd < 0)
				w = &srv->tab[i];
		if (!w) {
			for (i = 0; i < SERVE_MAX; i++) {
				struct waiting *o = &srv->tab[i];

				/* silent before talkative, then by age */
				if (!w || (!o->first_ms && w->first_ms) ||
				    (!o->first_ms == !w->first_ms && o->accept_ms < w->accept_ms))
					w = o;
			}
			w_drop(w,
			       w->first_ms ?
				       "the longest waiting of " SERVE_MAX_S " connections "
				       "without an inventory makes room for a new one" :
				       "the longest silent of " SERVE_MAX_S
				       " connections without an inventory makes room for a new one");
		}
		memset(w, 0, sizeof(*w));
		w->fd = fd;
		w->srv = srv;
		w->accept_ms = rn_doctor_now_ms();
		w->ss = ss;
		peer_str(&w->ss, w->who, sizeof(w->who));
		rn_dw_reader_init(&w->rd);
		w->rd.admit = admit;
		w->rd.arg = w;
		read_one(srv, w);
	}
}

/* ---- the queue ----------------------------------------------------------------------- */

/* WAIT or BUSY, never blocking (the front desk waits for no one); 0 or -errno. */
static int tell(struct job *j, uint16_t type, int ahead, double session_ms)
{
	uint8_t p[RN_DW_WAIT_LEN];

	if (!(j->caps & RN_DW_CAP_WAIT))
		return 0;
	rn_dw_put_wait(p, ahead, session_ms);
	return rn_dw_send(j->fd, type, p, sizeof(p), RN_DW_NOW);
}

static void job_close(struct job *j)
{
	rn_dw_msg_free(&j->inv);
	close(j->fd);
	j->fd = -1;
}

/*
 * Under the lock: every queued client whose place changed hears its new one (not the
 * next one's: its inventory comes at once).
 */
static void tell_places(struct serve *srv)
{
	int k;

	for (k = 0; k < srv->nqueued; k++) {
		struct job *j = &srv->queue[k];
		int ahead = k + srv->running;

		if (j->told == ahead || !ahead)
			continue;
		j->told = ahead;
		if (tell(j, RN_DW_WAIT, ahead, srv->session_ms))
			j->caps = 0; /* a client that does not read: its turn shows */
	}
}

/* Under the lock: sessions queued or running for @ss's address. */
static int of_addr(const struct serve *srv, const struct sockaddr_storage *ss)
{
	int k, n = srv->running && rn_doctor_same_ip(&srv->running_ss, ss);

	for (k = 0; k < srv->nqueued; k++)
		n += rn_doctor_same_ip(&srv->queue[k].ss, ss);
	return n;
}

/*
 * A whole inventory from @w: queued (its fd and budget move with it) or told busy. One
 * address holds at most SERVE_PER_ADDR places: 40 clients of one host that send an
 * inventory and then nothing held the whole queue, and no other host was served.
 */
static void enqueue(struct serve *srv, struct waiting *w, struct rn_dw_msg *m)
{
	struct rn_doctor *d = srv->d;
	struct job j = { .fd = w->fd, .told = -1, .ss = w->ss, .inv = *m };
	double per;
	int ahead, full, mine = 0;

	/* caps follow host[64] and be16 nnics; the session decodes the rest */
	if (m->len >= 68)
		j.caps = rn_get_be16(m->payload + 66);
	snprintf(j.who, sizeof(j.who), "%s", w->who);
	pthread_mutex_lock(&srv->lock);
	ahead = srv->nqueued + srv->running;
	per = srv->session_ms;
	/* --once: the first inventory is the one session; later ones are told so */
	full = srv->nqueued == SERVE_QUEUE || (d->once && (ahead || srv->finished));
	if (!full && of_addr(srv, &j.ss) >= SERVE_PER_ADDR)
		full = mine = 1;
	if (!full) {
		srv->queue[srv->nqueued++] = j;
		w->held = 0; /* the job holds it now */
		tell_places(srv);
		pthread_cond_signal(&srv->work);
	}
	pthread_mutex_unlock(&srv->lock);
	w->fd = -1;
	rn_dw_reader_free(&w->rd);
	if (!full)
		return;
	log_limited(LOG_BUSY, &j.ss, "busy: told %s that %d %s ahead%s", j.who, ahead,
		    ahead == 1 ? "client is" : "clients are",
		    d->once ? " (--once: one session)" :
		    mine    ? " (" SERVE_PER_ADDR_S " of them are its address's already)" :
			      " (the queue is full)");
	tell(&j, RN_DW_BUSY, ahead, per);
	release(srv, w->held);
	w->held = 0;
	job_close(&j);
}

/* ---- one session ------------------------------------------------------------------- */

/* What the server keeps of one client's session. */
struct serve_session {
	struct rn_dw_inv local, remote;
	struct rn_pair_run run; /* both sides' checks, the ARP probe, the answers */
	unsigned char scope[RN_DOCTOR_MAX_NICS];
};

/* The session's deadline: SERVE_SESSION_MS, more for each pair both ends can probe. */
static double session_end(struct rn_doctor *d, const struct rn_dw_inv *remote, double t0,
			  int *rdma_pairs)
{
	int i, j, n = 0;

	for (i = 0; i < d->nnics; i++)
		for (j = 0; j < remote->nnics; j++) {
			const struct rn_dw_nic *r = &remote->nics[j];

			n += rn_probe_available(d, i) && r->ibdev[0] && r->gid_index >= 0 &&
			     r->link_up && r->ip.family == d->nics[i].nic.ip.family;
		}
	*rdma_pairs = n;
	return t0 + RN_MIN(SERVE_SESSION_MS + (double)n * SERVE_PROBE_MS, SERVE_SESSION_MAX_MS);
}

/*
 * serve's transport (rn_pair_io): every message whole within its deadline and the
 * session's (rn_dw_recv_by), every send by them too. The probe loop's messages have a
 * probe's time between them. A client whose CHECKS name no pair has nothing to probe:
 * its DONE follows our CHECKS at once, so until it says something more the session's
 * deadline is SERVE_EMPTY_MS from its CHECKS (one that sends nothing more would hold the
 * one session thread until the session's deadline, and 40 of them the queue for minutes).
 */
struct serve_io {
	struct rn_dw_io t; /* first: the runner's view */
	const struct rn_pair_run *run;
	double end;        /* the session's deadline */
	double checks_at;  /* when the client's CHECKS came, 0: not yet */
	int heard;         /* a message after them */
};

static double sio_end(const struct serve_io *x)
{
	if (x->checks_at && !x->run->theirs.npairs && !x->heard)
		return RN_MIN(x->end, x->checks_at + SERVE_EMPTY_MS);
	return x->end;
}

static double sio_by(const struct serve_io *x, uint16_t type)
{
	double ms = RN_DOCTOR_IO_TIMEOUT_S * 1000.0;

	if (type != RN_DW_INV && type != RN_DW_CHECKS)
		ms += RN_DOCTOR_PROBE_TIMEOUT_MS;
	return RN_MIN(rn_doctor_now_ms() + ms, sio_end(x));
}

static int sio_send(struct rn_pair_io *io, uint16_t type, const void *buf, size_t len)
{
	struct serve_io *x = (struct serve_io *)io;

	return rn_dw_send(x->t.fd, type, buf, len, sio_by(x, type));
}

static int sio_recv(struct rn_pair_io *io, uint16_t type, struct rn_dw_msg *m, char *why,
		    size_t len)
{
	struct serve_io *x = (struct serve_io *)io;
	int ret = rn_dw_recv_by(x->t.fd, m, sio_by(x, type), why, len);

	if (!ret && type == RN_DW_CHECKS)
		x->checks_at = rn_doctor_now_ms();
	else if (!ret)
		x->heard = 1; /* it said something: the session's own deadline from here on */
	return ret;
}

/* The accept's wait ends with the session, too. */
static int sio_probe_ms(struct rn_pair_io *io)
{
	struct serve_io *x = (struct serve_io *)io;

	return (int)RN_MAX(RN_MIN(RN_DOCTOR_PROBE_TIMEOUT_MS, x->end - rn_doctor_now_ms()), 1);
}

/* A run that stopped in the probe loop: the log's words; 1 when the session was cut. */
static int probes_stopped(struct rn_doctor *d, const struct serve_io *io, const char *who,
			  double t0, int pairs)
{
	const struct rn_pair_run *x = io->run;
	double now = rn_doctor_now_ms();

	switch (x->stop) {
	case RN_PAIR_RECV:
		if (x->ret == -ETIMEDOUT && sio_end(io) < io->end && now >= sio_end(io)) {
			rn_doctor_slog("%s: cut: its CHECKS named no pair and no DONE came "
				       "within " SERVE_EMPTY_MS_S " ms",
				       who);
			return 1;
		}
		if (x->ret == -ETIMEDOUT && now >= io->end) {
			rn_doctor_slog("%s: cut: the session's deadline (%.0f s for %d RDMA "
				       "pair%s) passed before DONE",
				       who, (io->end - t0) / 1000, pairs, pairs == 1 ? "" : "s");
			return 1;
		}
		rn_doctor_slog("%s: %s before DONE", who, x->why);
		return 0;
	case RN_PAIR_TWICE:
		rn_doctor_slog("%s: cut: a second probe of the pair %s <- its NIC %u (one per "
			       "NIC pair per session), after %d probe%s",
			       who, d->nics[x->at_i].nic.netdev, x->at_j, x->answered,
			       x->answered == 1 ? "" : "s");
		return 1;
	case RN_PAIR_BAD:
		rn_doctor_slog("%s: %s; closing", who, x->why);
		return 0;
	default:
		return 0; /* an answer that could not be sent: the client went */
	}
}

/*
 * One client whose inventory @inv came whole: the pair runner's B end over serve_io.
 * Returns 0/1 (its verdict from our side) or -1 when it was rejected or cut.
 */
static int serve_one(struct rn_doctor *d, struct serve_session *s, int fd, const char *who,
		     const struct rn_dw_msg *inv)
{
	struct rn_pair_run *x = &s->run;
	struct serve_io io = { 0 };
	char why[RN_DW_WHY_MAX], lim[160] = "";
	int ret, n, problems = 0, pairs, left_out, cut = 0;
	double t0 = rn_doctor_now_ms();

	ret = rn_dw_decode_inv(inv, &s->remote, why, sizeof(why));
	if (ret) {
		rn_doctor_slog("rejected %s: %s", who, why);
		return -1;
	}
	if (rn_doctor_gather(d)) {
		rn_doctor_slog("%s: cannot gather this host's facts", who);
		return -1;
	}
	io.end = session_end(d, &s->remote, t0, &pairs);
	rn_dw_io_init(&io.t, fd, RN_DOCTOR_IO_TIMEOUT_S * 1000.0, io.end);
	io.t.io.send = sio_send;
	io.t.io.recv = sio_recv;
	io.t.io.probe_ms = sio_probe_ms;
	io.run = x;
	rn_dw_inv_from_doctor(d, &s->local);
	/* neighbour and ARP work for addresses of our subnets alone, and not for many */
	left_out = rn_doctor_pair_scope(d, &s->remote, SERVE_PEER_ADDRS, s->scope);
	if (left_out)
		snprintf(lim, sizeof(lim),
			 "; %d of its %d addresses got no neighbour or ARP "
			 "work here (outside this host's subnets, or past the first %d)",
			 left_out, s->remote.nnics, SERVE_PEER_ADDRS);
	x->d = d;
	x->io = &io.t.io;
	x->flags = RN_PAIR_INV | RN_PAIR_CHECKS;
	x->local = &s->local;
	x->remote = &s->remote;
	x->scope = s->scope;
	if (rn_pair_run_b(x)) {
		switch (x->step) {
		case RN_PAIR_STEP_INV:
			rn_doctor_slog("%s: cannot send the inventory: %s", who, strerror(-x->ret));
			return -1;
		case RN_PAIR_STEP_A_CHECKS:
			rn_doctor_slog("%s: %s", who, x->why);
			return -1;
		case RN_PAIR_STEP_B_CHECKS:
			rn_doctor_slog("%s: cannot send the pair checks: %s", who,
				       strerror(-x->ret));
			return -1;
		default:
			cut = probes_stopped(d, &io, who, t0, pairs);
		}
	}
	for (n = 0; n < x->ours.npairs; n++)
		problems += rn_doctor_pair_problem(&x->ours.pairs[n]);
	problems += x->failed;
	/* The next client may come after a fix: a fresh transport sees the new routing. */
	rn_probe_release(d);
	rn_doctor_slog(
		"%s (%s, %d NIC%s): %d pair%s checked here in %.1f ms, %d RDMA probe%s, %d problem%s on this side%s%s",
		who, s->remote.host, s->remote.nnics, s->remote.nnics == 1 ? "" : "s",
		x->ours.npairs, x->ours.npairs == 1 ? "" : "s", x->check_ms, x->answered,
		x->answered == 1 ? "" : "s", problems, problems == 1 ? "" : "s",
		x->arp_probed == -EPERM ? "; skipped: arp-probe (needs CAP_NET_RAW)" : "", lim);
	if (cut)
		return -1;
	return problems || rn_doctor_host_problems(d) ? 1 : 0;
}

static int serve_session(struct rn_doctor *d, struct job *j)
{
	struct serve_session *s = calloc(1, sizeof(*s));
	int r;

	if (!s) {
		rn_doctor_slog("%s: out of memory", j->who);
		return -1;
	}
	r = serve_one(d, s, j->fd, j->who, &j->inv);
	rn_dw_inv_clear(&s->local);
	rn_dw_inv_clear(&s->remote);
	rn_pair_run_clear(&s->run);
	free(s);
	return r;
}

/* The client hung up while it waited (nothing of ours to read comes before its turn). */
static int gone(int fd)
{
	ssize_t n;
	char c;

	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* The session thread: the queue's jobs one after another until told to stop. */
static void *sessions(void *arg)
{
	struct serve *srv = arg;

	pthread_mutex_lock(&srv->lock);
	for (;;) {
		struct job j;
		double t0;
		int r;

		while (!srv->nqueued && !srv->stop)
			pthread_cond_wait(&srv->work, &srv->lock);
		if (srv->stop || (srv->d->once && srv->finished))
			break;
		j = srv->queue[0];
		memmove(&srv->queue[0], &srv->queue[1], --srv->nqueued * sizeof(srv->queue[0]));
		srv->running = 1;
		srv->running_ss = j.ss;
		pthread_mutex_unlock(&srv->lock);

		t0 = rn_doctor_now_ms();
		if (gone(j.fd)) {
			/* gave up in the queue (told how many were ahead): nothing to do */
			r = -1;
			t0 = 0;
		} else {
			r = serve_session(srv->d, &j);
			t0 = rn_doctor_now_ms() - t0;
		}

		pthread_mutex_lock(&srv->lock);
		srv->held -= j.inv.len;
		job_close(&j);
		srv->running = 0;
		srv->ended++;
		if (t0)
			srv->session_ms = srv->session_ms ? 0.75 * srv->session_ms + 0.25 * t0 : t0;
		if (r >= 0) {
			srv->finished++;
			srv->rc = RN_MAX(srv->rc, r);
		}
		if (write(srv->wake[1], "", 1) < 0) {
			/* the pipe is full: the front desk has a wake-up pending already */
		}
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* ---- the front desk ------------------------------------------------------------------ */

/* Read what @w sent; judge its deadline; queue a whole inventory. */
static void read_one(struct serve *srv, struct waiting *w)
{
	struct rn_dw_msg m;
	char why[320];
	int ret;

	ret = rn_dw_read_some(w->fd, &w->rd, &m, why, sizeof(why));
	if (!w->first_ms && (w->rd.got || !ret))
		w->first_ms = rn_doctor_now_ms();
	if (ret == -EAGAIN) {
		if (rn_doctor_now_ms() >= w_deadline(w))
			w_drop(w, w->first_ms ? "no whole inventory within " SERVE_MSG_MS_S
						" ms of its first byte" :
						"sent nothing within " SERVE_IDLE_MS_S " ms");
		return;
	}
	if (ret == -ENOBUFS) {
		w_drop(w, why);
		return;
	}
	if (ret) {
		/* garbage is news (a wrong version, another program), once a minute an address */
		log_limited(LOG_REJECT, &w->ss, "rejected %s: %s", w->who, why);
		w_close(w);
		return;
	}
	enqueue(srv, w, &m);
}

/* Every waiting connection, in turn. */
static void read_all_waiting(struct serve *srv)
{
	int i;

	for (i = 0; i < SERVE_MAX; i++)
		if (srv->tab[i].fd >= 0)
			read_one(srv, &srv->tab[i]);
}

static int serve_init(struct serve *srv, struct rn_doctor *d)
{
	int i;

	memset(srv, 0, sizeof(*srv));
	srv->d = d;
	for (i = 0; i < SERVE_MAX; i++)
		srv->tab[i].fd = -1;
	if (pipe2(srv->wake, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_cond_init(&srv->work, NULL);
	return 0;
}

static void serve_fini(struct serve *srv)
{
	int i;

	for (i = 0; i < SERVE_MAX; i++)
		if (srv->tab[i].fd >= 0)
			w_close(&srv->tab[i]);
	for (i = 0; i < srv->nqueued; i++)
		job_close(&srv->queue[i]);
	pthread_cond_destroy(&srv->work);
	pthread_mutex_destroy(&srv->lock);
	close(srv->wake[0]);
	close(srv->wake[1]);
}

int rn_doctor_cmd_serve(struct rn_doctor *d, int argc, char **argv)
{
	struct serve *srv;
	struct pollfd pfd[SERVE_MAX + 2];
	pthread_t th;
	double deadline = 0;
	int lfd, ret, i, rc = RN_DOCTOR_OK, done = 0, seen = 0;

	srv = malloc(sizeof(*srv));
	if (!srv || serve_init(srv, d)) {
		free(srv);
		fprintf(stderr, "roce-doctor: serve: %s\n", strerror(errno));
		return RN_DOCTOR_ERROR;
	}
	ret = rn_dw_listen(d->listen, d->port, &lfd);
	if (!ret && fcntl(lfd, F_SETFL, O_NONBLOCK))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "roce-doctor: serve: cannot listen on %s port %d: %s%s\n",
			d->listen ? d->listen : "every address", d->port, strerror(-ret),
			ret == -EADDRNOTAVAIL ? " (not an address of this host)" : "");
		serve_fini(srv);
		free(srv);
		return RN_DOCTOR_ERROR;
	}
	ret = pthread_create(&th, NULL, sessions, srv);
	if (ret) {
		fprintf(stderr, "roce-doctor: serve: %s\n", strerror(ret));
		close(lfd);
		serve_fini(srv);
		free(srv);
		return RN_DOCTOR_ERROR;
	}
	if (d->listen && !rn_dw_addr_is_any(d->listen))
		rn_doctor_slog("listening on %s port %d%s", d->listen, d->port,
			       d->once ? ", one client" : "");
	else if (d->listen) /* 0.0.0.0 or ::, asked for by name */
		rn_doctor_slog("listening on %s port %d (every %s address)%s", d->listen, d->port,
			       strchr(d->listen, ':') ? "IPv6" : "IPv4",
			       d->once ? ", one client" : "");
	else
		rn_doctor_slog("listening on port %d (every address; --listen ADDR for one)%s",
			       d->port, d->once ? ", one client" : "");
	if (d->timeout_s > 0)
		deadline = rn_doctor_now_ms() + d->timeout_s * 1000.0;
	while (!done) {
		double now = rn_doctor_now_ms(), next = deadline ? deadline : now + 60000.0;
		int wait, r, busy;

		pthread_mutex_lock(&srv->lock);
		busy = srv->running || srv->nqueued;
		if (srv->ended != seen) {
			/* a session ended: the clients still queued hear their new places */
			seen = srv->ended;
			tell_places(srv);
			if (deadline)
				deadline = now + d->timeout_s * 1000.0;
		}
		rc = srv->rc;
		done = d->once && srv->finished;
		pthread_mutex_unlock(&srv->lock);
		if (done)
			break;
		/* "without a client": none waiting, none in a session */
		if (deadline && now >= deadline && !busy) {
			rn_doctor_slog("no client for %d s; exiting", d->timeout_s);
			rc = d->once ? RN_DOCTOR_ERROR : rc;
			break;
		}
		pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = srv->wake[0], .events = POLLIN };
		for (i = 0; i < SERVE_MAX; i++) {
			pfd[i + 2] = (struct pollfd){ .fd = srv->tab[i].fd, .events = POLLIN };
			if (srv->tab[i].fd >= 0 && w_deadline(&srv->tab[i]) < next)
				next = w_deadline(&srv->tab[i]);
		}
		wait = next > now ? (int)(next - now) + 1 : 0;
		r = poll(pfd, SERVE_MAX + 2, wait);
		if (r < 0 && errno != EINTR) {
			rn_doctor_slog("poll: %s", strerror(errno));
			rc = RN_DOCTOR_ERROR;
			break;
		}
		if (r > 0 && pfd[1].revents) {
			char b[64];

			while (read(srv->wake[0], b, sizeof(b)) > 0)
				;
		}
		if (r > 0 && pfd[0].revents)
			take_all(srv, lfd);
		/* read whatever is there, also where it was not polled (new connections) */
		read_all_waiting(srv);
	}
	close(lfd);
	pthread_mutex_lock(&srv->lock);
	srv->stop = 1;
	pthread_cond_broadcast(&srv->work);
	pthread_mutex_unlock(&srv->lock);
	pthread_join(th, NULL); /* a session in progress ends by its deadline */
	serve_fini(srv);
	free(srv);
	return rc;
}
