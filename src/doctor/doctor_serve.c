// SPDX-License-Identifier: MIT
/*
 * `roce-doctor serve`: many clients wait at once, one session runs at a time.
 *
 * One thread, poll(2) over the listening socket and up to SERVE_MAX connections that
 * have not sent their whole inventory yet. Each reads without blocking, a piece at a
 * time, against a deadline for the whole message (SERVE_IDLE_MS to send a first byte,
 * SERVE_MSG_MS from that byte to finish), so a client that trickles one byte per
 * second, or sends nothing, is dropped however many reads it makes; when the table is
 * full the connection waiting longest makes room for the newest (a real client sends
 * its inventory at once, so it is never the oldest for long). A flood of idle or slow
 * connections therefore costs a real client nothing but a table slot.
 *
 * The session itself (checks, ARP probes, RDMA probes) runs on this thread, one
 * client after another, not in parallel: two sessions would send ARP requests while
 * the other checks the very neighbour entries those requests rewrite, and both would
 * share the one probe transport (doctor_rdma.c). Sessions are bounded (every message
 * by its deadline, each probe by PROBE_TIMEOUT_MS), and clients that arrive meanwhile
 * wait in the kernel's queue and the table; what they sent meanwhile is read before
 * their deadlines are judged, and each gets a second's grace after a session.
 * Simpler than a thread pool, and nothing here needs locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "doctor.h"
#include "rn_net.h"
#include "rn_ratelimit.h"
#include "rn_wire.h"

#define SERVE_MAX 64          /* connections waiting for their inventory */
#define SERVE_IDLE_MS 5000    /* accept -> first byte */
#define SERVE_MSG_MS 5000     /* first byte -> the whole inventory (~200 KB at most) */
#define DROP_LOG_NS (60ull * 1000000000ull) /* one line per address per minute */
#define STR_(x) #x
#define STR(x) STR_(x)

struct waiting {
	int fd;                   /* -1: free */
	double accept_ms;         /* the idle deadline and the eviction order count from here */
	double first_ms;          /* its first byte (0: none yet) */
	double grace_ms;          /* not dropped before (set after a session) */
	struct sockaddr_storage ss;
	char who[80];
	struct rn_dw_reader rd;
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

static void w_close(struct waiting *w)
{
	rn_dw_reader_free(&w->rd);
	close(w->fd);
	w->fd = -1;
}

/* A stranger that was slow or idle: one line per address per minute (a flood is 250). */
static void w_drop(struct waiting *w, const char *why)
{
	unsigned int held = 0;

	if (rn_ratelimit_peer(&w->ss, (uint64_t)(rn_doctor_now_ms() * 1e6), DROP_LOG_NS, &held))
		rn_doctor_slog("dropped %s: %s (%u more from this address in the last minute; "
			       "those within a minute are not logged)", w->who, why, held);
	w_close(w);
}

static double w_deadline(const struct waiting *w)
{
	double t = w->first_ms ? w->first_ms + SERVE_MSG_MS : w->accept_ms + SERVE_IDLE_MS;

	return RN_MAX(t, w->grace_ms);
}

/* What the server keeps of one client's session. */
struct serve_session {
	struct rn_dw_inv local, remote;
	struct rn_dw_checks ours, theirs;
	double check_ms;
	int arp_probed;             /* pairs probed for ARP uniqueness, -errno: skipped */
};

/*
 * One client whose inventory @inv came whole (read without blocking).
 * Every later message must come whole within its deadline (rn_dw_recv_by), so a client
 * that trickles bytes is cut off; sends are bounded by the socket's timeout.
 * Returns 0/1 (its verdict from our side) or -1 when it was rejected.
 */
static int serve_one(struct rn_doctor *d, struct serve_session *s, int fd, const char *who,
		     const struct rn_dw_msg *inv)
{
	struct rn_dw_msg m;
	struct rn_dw_io io;
	char why[RN_DW_WHY_MAX];
	int ret, n, problems = 0, probes = 0;

	rn_dw_set_timeout(fd, RN_DOCTOR_IO_TIMEOUT_S);
	rn_dw_io_init(&io, fd, RN_DOCTOR_IO_TIMEOUT_S * 1000.0 + RN_DOCTOR_PROBE_TIMEOUT_MS);
	ret = rn_dw_decode_inv(inv, &s->remote, why, sizeof(why));
	if (ret) {
		rn_doctor_slog("rejected %s: %s", who, why);
		return -1;
	}
	if (rn_doctor_gather(d)) {
		rn_doctor_slog("%s: cannot gather this host's facts", who);
		return -1;
	}
	rn_dw_inv_from_doctor(d, &s->local);
	ret = rn_dw_send_inv(fd, &s->local);
	if (ret) {
		rn_doctor_slog("%s: cannot send the inventory: %s", who, strerror(-ret));
		return -1;
	}
	ret = rn_dw_recv_by(fd, &m, rn_doctor_now_ms() + RN_DOCTOR_IO_TIMEOUT_S * 1000.0, why, sizeof(why));
	if (!ret) {
		ret = rn_dw_decode_checks(&m, &s->remote, &s->local, &s->theirs, why, sizeof(why));
		rn_dw_msg_free(&m);
	}
	if (ret) {
		rn_doctor_slog("%s: %s", who, why);
		return -1;
	}
	rn_doctor_pair_checks(d, &s->remote, &s->ours, &s->check_ms);
	s->arp_probed = rn_doctor_arp_unique(d, &s->remote, &s->ours);
	ret = rn_dw_send_checks(fd, &s->ours);
	if (ret) {
		rn_doctor_slog("%s: cannot send the pair checks: %s", who, strerror(-ret));
		return -1;
	}
	for (n = 0; n < s->ours.npairs; n++)
		problems += rn_doctor_pair_problem(&s->ours.pairs[n]);
	for (;;) {
		ret = io.io.recv(&io.io, RN_DW_PROBE_REQ, &m, why, sizeof(why));
		if (ret) {
			rn_doctor_slog("%s: %s before DONE", who, why);
			break;
		}
		if (m.type == RN_DW_DONE) {
			rn_dw_msg_free(&m);
			break;
		}
		if (m.type == RN_DW_PROBE_REQ && m.len == 4 && m.payload[0] < d->nnics &&
		    m.payload[1] < s->remote.nnics) {
			int io_err;

			probes++;
			problems += rn_pair_probe_answer(d, &io.io, &m, RN_DOCTOR_PROBE_TIMEOUT_MS,
							 &io_err) != 0;
			rn_dw_msg_free(&m);
			if (io_err)
				break;
			continue;
		}
		rn_doctor_slog("%s: unexpected message type %u; closing", who, m.type);
		rn_dw_msg_free(&m);
		break;
	}
	/* The next client may come after a fix: a fresh transport sees the new routing. */
	rn_probe_release();
	rn_doctor_slog("%s (%s, %d NIC%s): %d pair%s checked here in %.1f ms, %d RDMA probe%s, %d problem%s on this side%s",
	     who, s->remote.host, s->remote.nnics, s->remote.nnics == 1 ? "" : "s", s->ours.npairs,
	     s->ours.npairs == 1 ? "" : "s", s->check_ms, probes, probes == 1 ? "" : "s", problems,
	     problems == 1 ? "" : "s",
	     s->arp_probed == -EPERM ? "; skipped: arp-probe (needs CAP_NET_RAW)" : "");
	return problems || rn_doctor_host_problems(d) ? 1 : 0;
}

static int serve_session(struct rn_doctor *d, int fd, const char *who,
			 const struct rn_dw_msg *inv)
{
	struct serve_session *s = calloc(1, sizeof(*s));
	int r;

	if (!s) {
		rn_doctor_slog("%s: out of memory", who);
		return -1;
	}
	r = serve_one(d, s, fd, who, inv);
	rn_dw_inv_clear(&s->local);
	rn_dw_inv_clear(&s->remote);
	rn_dw_checks_clear(&s->ours);
	rn_dw_checks_clear(&s->theirs);
	free(s);
	return r;
}

/* Take every queued connection; a full table drops the one waiting longest. */
static void take_all(int lfd, struct waiting *tab)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct waiting *w = NULL;
		int fd, i;

		fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return; /* EAGAIN: the queue is empty; anything else: try at the next poll */
		for (i = 0; i < SERVE_MAX && !w; i++)
			if (tab[i].fd < 0)
				w = &tab[i];
		if (!w) {
			w = &tab[0];
			for (i = 1; i < SERVE_MAX; i++)
				if (tab[i].accept_ms < w->accept_ms)
					w = &tab[i];
			w_drop(w, "the longest waiting of " STR(SERVE_MAX) " connections without "
			       "an inventory makes room for a new one");
		}
		memset(w, 0, sizeof(*w));
		w->fd = fd;
		w->accept_ms = rn_doctor_now_ms();
		w->ss = ss;
		peer_str(&w->ss, w->who, sizeof(w->who));
		rn_dw_reader_init(&w->rd);
	}
}

int rn_doctor_cmd_serve(struct rn_doctor *d, int argc, char **argv)
{
	struct waiting *tab;
	struct pollfd pfd[SERVE_MAX + 1];
	double deadline = 0;
	int lfd, ret, i, rc = RN_DOCTOR_OK, done = 0;

	tab = calloc(SERVE_MAX, sizeof(*tab));
	if (!tab) {
		fprintf(stderr, "roce-doctor: out of memory\n");
		return RN_DOCTOR_ERROR;
	}
	for (i = 0; i < SERVE_MAX; i++)
		tab[i].fd = -1;
	ret = rn_dw_listen(d->port, &lfd);
	if (!ret && fcntl(lfd, F_SETFL, O_NONBLOCK))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "roce-doctor: serve: cannot listen on port %d: %s\n", d->port,
			strerror(-ret));
		free(tab);
		return RN_DOCTOR_ERROR;
	}
	rn_doctor_slog("listening on port %d (any address)%s", d->port, d->once ? ", one client" : "");
	if (d->timeout_s > 0)
		deadline = rn_doctor_now_ms() + d->timeout_s * 1000.0;
	while (!done) {
		double now = rn_doctor_now_ms(), next = deadline ? deadline : now + 60000.0;
		int wait, r;

		if (deadline && now >= deadline) {
			rn_doctor_slog("no client for %d s; exiting", d->timeout_s);
			rc = d->once ? RN_DOCTOR_ERROR : rc;
			break;
		}
		pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < SERVE_MAX; i++) {
			pfd[i + 1] = (struct pollfd){ .fd = tab[i].fd, .events = POLLIN };
			if (tab[i].fd >= 0 && w_deadline(&tab[i]) < next)
				next = w_deadline(&tab[i]);
		}
		wait = next > now ? (int)(next - now) + 1 : 0;
		r = poll(pfd, SERVE_MAX + 1, wait);
		if (r < 0 && errno != EINTR) {
			rn_doctor_slog("poll: %s", strerror(errno));
			rc = RN_DOCTOR_ERROR;
			break;
		}
		if (r > 0 && pfd[0].revents)
			take_all(lfd, tab);
		for (i = 0; i < SERVE_MAX && !done; i++) {
			struct waiting *w = &tab[i];
			struct rn_dw_msg m;
			char why[320];

			if (w->fd < 0)
				continue;
			/* read whatever is there even when it was not polled (new, or after a session) */
			ret = rn_dw_read_some(w->fd, &w->rd, &m, why, sizeof(why));
			if (!w->first_ms && w->rd.got)
				w->first_ms = rn_doctor_now_ms();
			if (ret == -EAGAIN) {
				now = rn_doctor_now_ms();
				if (now >= w_deadline(w))
					w_drop(w, w->first_ms ? "no whole inventory within "
					       STR(SERVE_MSG_MS) " ms of its first byte" :
					       "sent nothing within " STR(SERVE_IDLE_MS) " ms");
				continue;
			}
			if (ret) {
				/* garbage is news (a wrong version, another program): always said */
				rn_doctor_slog("rejected %s: %s", w->who, why);
				w_close(w);
				continue;
			}
			if (m.type != RN_DW_INV) {
				rn_doctor_slog("rejected %s: message type %u before the inventory",
					       w->who, m.type);
				rn_dw_msg_free(&m);
				w_close(w);
				continue;
			}
			/* the session's replies are blocking sends bounded by the socket's timeout */
			if (fcntl(w->fd, F_SETFL, 0)) {
				rn_doctor_slog("%s: %s", w->who, strerror(errno));
				rn_dw_msg_free(&m);
				w_close(w);
				continue;
			}
			r = serve_session(d, w->fd, w->who, &m);
			rn_dw_msg_free(&m);
			w_close(w);
			/*
			 * The others waited on us: whatever they sent meanwhile is read before
			 * their deadlines are judged, and each gets a second more than that.
			 */
			now = rn_doctor_now_ms();
			for (int k = 0; k < SERVE_MAX; k++)
				tab[k].grace_ms = now + 1000.0;
			if (r < 0)
				continue;
			rc = RN_MAX(rc, r);
			if (d->once)
				done = 1;
			if (deadline)
				deadline = rn_doctor_now_ms() + d->timeout_s * 1000.0;
		}
	}
	for (i = 0; i < SERVE_MAX; i++)
		if (tab[i].fd >= 0)
			w_close(&tab[i]);
	close(lfd);
	free(tab);
	return rc;
}
