// SPDX-License-Identifier: MIT
/*
 * The peer protocol's TCP transport (the codec is doctor_wire.c's): sockets, a message
 * sent or received whole by a deadline, the server's non-blocking reads, and the pair
 * runner's rn_pair_io over one connection. A deadline bounds a whole message, never one
 * read, so a peer that trickles a byte now and then cannot stretch it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "doctor_io.h"

/* ---- a message whole by a deadline ---------------------------------------------------- */

/* Wait for @ev on @fd until @deadline_ms: 1 ready, 0 the deadline passed, -errno. */
static int wait_fd(int fd, short ev, double deadline_ms)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = ev };
		double left = deadline_ms - rn_doctor_now_ms();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&pfd, 1, (int)left + 1);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * @iov whole. Deadline 0: blocking sends (the socket's timeout bounds each); RN_DW_NOW:
 * never waits; else every send is non-blocking and the wait between them ends at the
 * deadline, so a peer that reads a byte now and then cannot stretch it.
 */
static int write_iov(int fd, struct iovec *iov, int n, double deadline_ms)
{
	int flags = MSG_NOSIGNAL | (deadline_ms ? MSG_DONTWAIT : 0);

	while (n) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t k = sendmsg(fd, &mh, flags);
		int r;

		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			if (!deadline_ms || deadline_ms == RN_DW_NOW)
				return -ETIMEDOUT;
			r = wait_fd(fd, POLLOUT, deadline_ms);
			if (r <= 0)
				return r ? r : -ETIMEDOUT;
			continue;
		}
		while (n && (size_t)k >= iov->iov_len) {
			k -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n) {
			iov->iov_base = (uint8_t *)iov->iov_base + k;
			iov->iov_len -= (size_t)k;
		}
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len, size_t *got)
{
	uint8_t *p = buf;

	*got = 0;
	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		}
		p += n;
		len -= (size_t)n;
		*got += (size_t)n;
	}
	return 0;
}

int rn_dw_send(int fd, uint16_t type, const void *payload, size_t len, double deadline_ms)
{
	uint8_t hdr[RN_DW_HDR_LEN];
	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)payload, len } };
	int ret = rn_dw_encode_hdr(hdr, type, len);

	if (ret)
		return ret;
	/* one sendmsg for both: a small message leaves whole or not at all (RN_DW_NOW) */
	return write_iov(fd, iov, len ? 2 : 1, deadline_ms);
}

/* A message the codec encodes (rn_dw_encode_*), sent whole by @deadline_ms. */
static int send_encoded(int fd, uint16_t type, int ret, uint8_t *p, size_t len, double deadline_ms)
{
	if (!ret)
		ret = rn_dw_send(fd, type, p, len, deadline_ms);
	free(p);
	return ret;
}

int rn_dw_send_inv(int fd, const struct rn_dw_inv *inv, double deadline_ms)
{
	uint8_t *p = NULL;
	size_t len = 0;
	int ret = rn_dw_encode_inv(inv, &p, &len);

	return send_encoded(fd, RN_DW_INV, ret, p, len, deadline_ms);
}

int rn_dw_send_checks(int fd, const struct rn_dw_checks *c, double deadline_ms)
{
	uint8_t *p = NULL;
	size_t len = 0;
	int ret = rn_dw_encode_checks(c, &p, &len);

	return send_encoded(fd, RN_DW_CHECKS, ret, p, len, deadline_ms);
}

int rn_dw_recv(int fd, struct rn_dw_msg *m, char *why, size_t why_len)
{
	uint8_t hdr[RN_DW_HDR_LEN];
	size_t got;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = read_all(fd, hdr, sizeof(hdr), &got);
	if (ret && got) {
		snprintf(why, why_len, "not a roce-doctor message (%zu bytes, then %s)", got,
			 ret == -ECONNRESET ? "the connection closed" : strerror(-ret));
		return -EBADMSG;
	}
	if (ret) {
		snprintf(why, why_len, "%s",
			 ret == -ECONNRESET ? "connection closed" :
			 ret == -ETIMEDOUT  ? "timed out waiting for a message" :
					      strerror(-ret));
		return ret;
	}
	ret = rn_dw_decode_hdr(hdr, m, why, why_len);
	if (ret)
		return ret;
	m->payload = malloc(m->len ? m->len : 1);
	if (!m->payload) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	ret = read_all(fd, m->payload, m->len, &got);
	if (ret) {
		snprintf(why, why_len, "message cut short (%s)",
			 ret == -ECONNRESET ? "connection closed" : strerror(-ret));
		rn_dw_msg_free(m);
	}
	return ret;
}

int rn_dw_read_some(int fd, struct rn_dw_reader *r, struct rn_dw_msg *out, char *why, size_t len)
{
	for (;;) {
		size_t room;
		uint8_t *dst = rn_dw_reader_room(r, &room);
		ssize_t n = recv(fd, dst, room, MSG_DONTWAIT);
		int ret;

		if (n == 0) {
			if (r->got && r->got < RN_DW_HDR_LEN)
				snprintf(why, len,
					 "not a roce-doctor message (%zu bytes, then the "
					 "connection closed)",
					 r->got);
			else if (r->got)
				snprintf(why, len,
					 "message cut short after %zu bytes (connection "
					 "closed)",
					 r->got);
			else
				snprintf(why, len, "connection closed");
			return r->got ? -EBADMSG : -ECONNRESET;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -EAGAIN;
			ret = -errno;
			snprintf(why, len, "%s", strerror(errno));
			return ret;
		}
		ret = rn_dw_reader_took(r, (size_t)n, out, why, len);
		if (ret != -EAGAIN)
			return ret;
	}
}

int rn_dw_recv_by(int fd, struct rn_dw_msg *m, double deadline_ms, char *why, size_t len)
{
	struct rn_dw_reader r;
	int ret;

	rn_dw_reader_init(&r);
	memset(m, 0, sizeof(*m));
	for (;;) {
		ret = rn_dw_read_some(fd, &r, m, why, len);
		if (ret != -EAGAIN)
			break;
		ret = wait_fd(fd, POLLIN, deadline_ms);
		if (!ret) {
			snprintf(why, len, "no whole message in time (%zu bytes came)", r.got);
			ret = -ETIMEDOUT;
			break;
		}
		if (ret < 0) {
			snprintf(why, len, "poll: %s", strerror(-ret));
			break;
		}
	}
	rn_dw_reader_free(&r);
	return ret;
}

/* ---- sockets ----------------------------------------------------------------------------- */

int rn_dw_set_timeout(int fd, int secs)
{
	struct timeval tv = { .tv_sec = secs };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -errno;
	return 0;
}

int rn_dw_connect(const char *host, int port, double deadline_ms, int *fd, char *why, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *ai;
	char ps[16];
	int s = -1, ret = -EHOSTUNREACH, g;

	snprintf(ps, sizeof(ps), "%d", port);
	g = getaddrinfo(host, ps, &hints, &res);
	if (g) {
		snprintf(why, len, "cannot resolve '%s': %s", host, gai_strerror(g));
		return -EINVAL;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		socklen_t sl = sizeof(int);
		int err = 0, r;

		s = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (s < 0) {
			ret = -errno;
			continue;
		}
		if (connect(s, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
			ret = -errno;
			goto next;
		}
		r = wait_fd(s, POLLOUT, deadline_ms);
		if (r <= 0) {
			ret = r ? r : -ETIMEDOUT;
			goto next;
		}
		if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &sl) || err) {
			ret = -(err ? err : errno);
			goto next;
		}
		freeaddrinfo(res);
		*fd = s;
		return 0;
next:
		close(s);
		s = -1;
	}
	freeaddrinfo(res);
	snprintf(why, len,
		 "cannot connect to %s port %d: %s (is `roce-doctor serve` running there?)", host,
		 port, strerror(-ret));
	return ret;
}

static int listen_on(int family, const struct sockaddr *sa, socklen_t sl, int v6only, int *fd)
{
	int one = 1, s, ret;

	s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
	/*
	 * The kernel's largest accept queue: a flood that arrives while a session runs
	 * must not make the kernel drop a real client's SYN (a retransmit costs it 1-3 s).
	 */
	if (bind(s, sa, sl) || listen(s, SOMAXCONN)) {
		ret = -errno;
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

int rn_dw_addr_is_any(const char *addr)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, addr, &a4) == 1)
		return a4.s_addr == htonl(INADDR_ANY);
	return inet_pton(AF_INET6, addr, &a6) == 1 && IN6_IS_ADDR_UNSPECIFIED(&a6);
}

int rn_dw_listen(const char *addr, int port, int *fd)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (addr) {
		/*
		 * That address alone, its family alone (IPv6 without the mapped IPv4 ones).
		 * inet_pton's forms only: getaddrinfo would take inet_aton's too ("127.1",
		 * "0x7fffffff", "0"), which no operator means.
		 */
		if (inet_pton(AF_INET, addr, &a4.sin_addr) == 1)
			return listen_on(AF_INET, (struct sockaddr *)&a4, sizeof(a4), 1, fd);
		if (inet_pton(AF_INET6, addr, &a6.sin6_addr) == 1)
			return listen_on(AF_INET6, (struct sockaddr *)&a6, sizeof(a6), 1, fd);
		return -EINVAL;
	}
	/* Dual-stack where IPv6 exists (any NIC address, either family), else IPv4 only. */
	if (!listen_on(AF_INET6, (struct sockaddr *)&a6, sizeof(a6), 0, fd))
		return 0;
	return listen_on(AF_INET, (struct sockaddr *)&a4, sizeof(a4), 0, fd);
}

/* ---- the pair runner's transport over one connection (rn_pair_io) ------------------- */

double rn_dw_io_deadline(const struct rn_dw_io *t)
{
	double by = rn_doctor_now_ms() + t->budget_ms;

	return t->end_ms > 0 ? RN_MIN(by, t->end_ms) : by;
}

static int io_send(struct rn_pair_io *io, uint16_t type, const void *buf, size_t len)
{
	struct rn_dw_io *t = (struct rn_dw_io *)io;

	return rn_dw_send(t->fd, type, buf, len, rn_dw_io_deadline(t));
}

static int io_recv(struct rn_pair_io *io, uint16_t type, struct rn_dw_msg *m, char *why, size_t len)
{
	struct rn_dw_io *t = (struct rn_dw_io *)io;

	return rn_dw_recv_by(t->fd, m, rn_dw_io_deadline(t), why, len);
}

/* A probe's wait: its own bound, at most what is left of the session (a millisecond). */
static int io_probe_ms(struct rn_pair_io *io)
{
	struct rn_dw_io *t = (struct rn_dw_io *)io;
	double left = RN_DOCTOR_PROBE_TIMEOUT_MS;

	if (t->end_ms > 0)
		left = RN_MIN(left, t->end_ms - rn_doctor_now_ms());
	return (int)RN_MAX(left, 1);
}

void rn_dw_io_init(struct rn_dw_io *t, int fd, double budget_ms, double end_ms)
{
	t->io.send = io_send;
	t->io.recv = io_recv;
	t->io.probe_ms = io_probe_ms;
	t->fd = fd;
	t->budget_ms = budget_ms;
	t->end_ms = end_ms;
}
