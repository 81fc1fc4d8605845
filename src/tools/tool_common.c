// SPDX-License-Identifier: MIT
/*
 * Logging, parsing and the TCP side channel of the tools (see tool_common.h).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "nccl_log.h"
#include "tool_common.h"

static int log_level = -1;
static char last_warn[2048];

static ncclDebugLogLevel level_from_env(void)
{
	/* NCCL's names; unset shows WARNs (NCCL itself would show nothing) */
	return nccl_log_parse_level(getenv("NCCL_DEBUG"), NCCL_LOG_WARN);
}

void tool_log_set_level(ncclDebugLogLevel level)
{
	log_level = level;
}

void tool_log_at_least(ncclDebugLogLevel level)
{
	if ((int)tool_log_level() < (int)level)
		log_level = level;
}

ncclDebugLogLevel tool_log_level(void)
{
	if (log_level < 0)
		log_level = level_from_env();
	return (ncclDebugLogLevel)log_level;
}

/*
 * Copy the string at @p (at most @max bytes, NUL-terminated in @out) without faulting:
 * process_vm_readv on ourselves answers EFAULT for memory we cannot read. Page by page,
 * so a short string at the end of a mapping still reads. 0, or -EFAULT.
 */
static int safe_strcpy(char *out, size_t max, const char *p)
{
	size_t got = 0;

	while (got < max) {
		uintptr_t a = (uintptr_t)p + got;
		size_t chunk = 4096 - (a & 4095), i;
		struct iovec l = { out + got, 0 }, r = { (void *)a, 0 };

		if (chunk > max - got)
			chunk = max - got;
		l.iov_len = r.iov_len = chunk;
		if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != (ssize_t)chunk) {
			out[got] = '\0';
			return got ? 0 : -EFAULT;
		}
		for (i = 0; i < chunk; i++)
			if (!out[got + i])
				return 0;
		got += chunk;
	}
	out[max] = '\0';
	return 0;
}

static void put(char *buf, size_t len, size_t *at, const char *s, size_t n)
{
	if (*at + 1 < len) {
		size_t room = len - 1 - *at;

		memcpy(buf + *at, s, n < room ? n : room);
	}
	*at += n;
}

/* NOTE: each conversion is handed to snprintf alone, with the one argument it takes. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
int tool_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	/* as long as the loggers' lines (2048): a plugin logs its whole message as one %s */
	char spec[32], tmp[2048 + 64], str[2048];
	size_t at = 0;
	const char *p = fmt, *start;

	if (!fmt)
		fmt = p = "(null format)";
	while (*p) {
		int lmod = 0, prec = -1, n = 0, k;
		size_t sl;

		if (*p != '%') {
			const char *q = strchr(p, '%');
			size_t run = q ? (size_t)(q - p) : strlen(p);

			put(buf, len, &at, p, run);
			p += run;
			continue;
		}
		start = p++;
		if (*p == '%') {
			put(buf, len, &at, "%", 1);
			p++;
			continue;
		}
		/* flags, width, precision: '*' takes an int, as printf does */
		sl = 0;
		spec[sl++] = '%';
		while (*p && strchr("-+ #0'", *p) && sl < 8)
			spec[sl++] = *p++;
		if (*p == '*') {
			n = va_arg(ap, int);
			sl += (size_t)snprintf(spec + sl, sizeof(spec) - sl, "%d",
					       n < -1000 ? -1000 :
					       n > 1000  ? 1000 :
							   n);
			p++;
		} else {
			while (*p >= '0' && *p <= '9' && sl < 14)
				spec[sl++] = *p++;
			while (*p >= '0' && *p <= '9')
				p++;
		}
		if (*p == '.') {
			p++;
			prec = 0;
			if (*p == '*') {
				prec = va_arg(ap, int);
				p++;
			} else {
				for (; *p >= '0' && *p <= '9'; p++)
					if (prec < 10000)
						prec = prec * 10 + (*p - '0');
			}
			if (prec > 2047)
				prec = 2047;
			if (prec >= 0)
				sl += (size_t)snprintf(spec + sl, sizeof(spec) - sl, ".%d", prec);
		}
		/* length: 1 h/hh (promoted to int), 2 l, 3 ll/j/q, 4 z/t, 5 L */
		for (; *p && strchr("hlLqjzt", *p); p++)
			lmod = *p == 'h'              ? (lmod ? lmod : 1) :
			       *p == 'l'              ? (lmod == 2 ? 3 : 2) :
			       *p == 'L'              ? 5 :
			       *p == 'z' || *p == 't' ? 4 :
							3;
		if (!*p)
			break;
		k = *p++;
		tmp[0] = '\0';
		switch (k) {
		case 'd':
		case 'i':
		case 'u':
		case 'x':
		case 'X':
		case 'o':
		case 'c': {
			const char *m = lmod == 2 ? "l" : lmod == 3 ? "ll" : lmod == 4 ? "z" : "";

			sl += (size_t)snprintf(spec + sl, sizeof(spec) - sl, "%s%c",
					       k == 'c' ? "" : m, k);
			if (k == 'c' || lmod < 2 || lmod == 5)
				snprintf(tmp, sizeof(tmp), spec, va_arg(ap, int));
			else if (lmod == 2)
				snprintf(tmp, sizeof(tmp), spec, va_arg(ap, long));
			else if (lmod == 3)
				snprintf(tmp, sizeof(tmp), spec, va_arg(ap, long long));
			else
				snprintf(tmp, sizeof(tmp), spec, va_arg(ap, size_t));
			break;
		}
		case 'f':
		case 'F':
		case 'e':
		case 'E':
		case 'g':
		case 'G':
		case 'a':
		case 'A':
			if (lmod == 5) {
				sl += (size_t)snprintf(spec + sl, sizeof(spec) - sl, "L%c", k);
				snprintf(tmp, sizeof(tmp), spec, va_arg(ap, long double));
			} else {
				sl += (size_t)snprintf(spec + sl, sizeof(spec) - sl, "%c", k);
				snprintf(tmp, sizeof(tmp), spec, va_arg(ap, double));
			}
			break;
		case 'p':
			snprintf(tmp, sizeof(tmp), "%p", va_arg(ap, void *));
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			size_t max = prec >= 0 ? (size_t)prec : sizeof(str) - 1;

			if (!s)
				s = "(null)";
			else if (safe_strcpy(str, max, s))
				s = "(bad pointer)";
			else
				s = str;
			sl += (size_t)snprintf(spec + sl, sizeof(spec) - sl, "s");
			snprintf(tmp, sizeof(tmp), spec, s);
			break;
		}
		case 'm':
			snprintf(tmp, sizeof(tmp), "%s", strerror(errno));
			break;
		case 'n':
			(void)va_arg(ap, void *); /* never written: a format is not ours to trust */
			break;
		default:
			/* unknown conversion: the text as it stands, no argument taken */
			put(buf, len, &at, start, (size_t)(p - start));
			continue;
		}
		put(buf, len, &at, tmp, strlen(tmp));
	}
	if (len)
		buf[at < len ? at : len - 1] = '\0';
	return (int)at;
}
#pragma GCC diagnostic pop

void tool_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		 const char *fmt, ...)
{
	static char host[64];
	const char *tag = level == NCCL_LOG_TRACE ? "TRACE" : "INFO";
	long tid = (long)syscall(SYS_gettid);
	char msg[2048];
	va_list ap;
	FILE *out;

	if (level != NCCL_LOG_WARN &&
	    (level == NCCL_LOG_NONE || (int)level > (int)tool_log_level()))
		return;
	if (!host[0] && gethostname(host, sizeof(host) - 1))
		strcpy(host, "?");
	va_start(ap, fmt);
	tool_vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level == NCCL_LOG_WARN)
		snprintf(last_warn, sizeof(last_warn), "%.*s", (int)sizeof(last_warn) - 1, msg);
	/* NCCL's filter: level, NCCL_DEBUG_SUBSYS (WARNs too), NCCL_DEBUG_FILE */
	if (!nccl_log_wanted(level, flags, tool_log_level()))
		return;
	out = nccl_log_stream(tool_log_level());
	/* NCCL's format; WARN lines also name the file and line, as NCCL does */
	if (level == NCCL_LOG_WARN)
		fprintf(out, "%s:%d:%ld [0] NCCL WARN %s:%d %s\n", host, getpid(), tid, file, line,
			msg);
	else
		fprintf(out, "%s:%d:%ld [0] NCCL %s %s\n", host, getpid(), tid, tag, msg);
	fflush(out);
}

const char *tool_last_warn(void)
{
	return last_warn;
}

void tool_nap(int us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	if (us > 0)
		nanosleep(&ts, NULL);
}

double tool_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int resolve_inet(const char *addr, int passive, struct addrinfo **res)
{
	char host[256], *port;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };

	snprintf(host, sizeof(host), "%s", addr);
	port = strrchr(host, ':');
	if (!port)
		return -EINVAL;
	*port++ = '\0';
	if (!*port || strlen(port) > 5 || strspn(port, "0123456789") != strlen(port) ||
	    atoi(port) > 65535)
		return -EINVAL;
	if (host[0] == '[') {
		size_t l = strlen(host);

		if (l < 2 || host[l - 1] != ']')
			return -EINVAL;
		host[l - 1] = '\0';
		memmove(host, host + 1, l - 1);
	}
	if (passive)
		hints.ai_flags |= AI_PASSIVE;
	return getaddrinfo(host[0] ? host : NULL, port, &hints, res) ? -EINVAL : 0;
}

/* "unix:/path": a local socket, for tests that must not touch any network. */
static int unix_addr(const char *addr, struct sockaddr_un *sun)
{
	if (strncmp(addr, "unix:", 5))
		return 0;
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (!addr[5])
		return -EINVAL;
	if (strlen(addr + 5) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	strcpy(sun->sun_path, addr + 5);
	return 1;
}

static int resolve(const char *addr, int passive, struct addrinfo **res)
{
	static struct sockaddr_un sun;
	static struct addrinfo unix_ai;
	int ret = unix_addr(addr, &sun);

	if (ret < 0)
		return ret;
	if (ret) {
		unix_ai = (struct addrinfo){ .ai_family = AF_UNIX,
					     .ai_socktype = SOCK_STREAM,
					     .ai_addr = (struct sockaddr *)&sun,
					     .ai_addrlen = sizeof(sun) };
		*res = &unix_ai;
		return 0;
	}
	return resolve_inet(addr, passive, res);
}

static void resolve_free(struct addrinfo *ai)
{
	/* the unix: entry is static; only getaddrinfo's list is ours to free */
	if (ai->ai_family != AF_UNIX)
		freeaddrinfo(ai);
}

int side_addr_check(const char *addr)
{
	struct addrinfo *ai;
	int ret = resolve(addr, 0, &ai);

	if (!ret)
		resolve_free(ai);
	return ret;
}

int side_listen(const char *addr)
{
	struct addrinfo *ai;
	int fd, one = 1, ret = resolve(addr, 1, &ai);

	if (ret)
		return ret;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, SIDE_MAX_PENDING)) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		fd = ret;
	}
	resolve_free(ai);
	return fd;
}

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n = poll(&p, 1, timeout_ms);

	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

int side_accept(int lfd, int timeout_ms)
{
	int ret = wait_fd(lfd, POLLIN, timeout_ms), fd;

	if (ret)
		return ret;
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A connection accepted but not yet known to be the peer: what it sent so far. */
struct side_cand {
	int fd;
	size_t got;
};

static void cand_drop(struct side_cand *c)
{
	close(c->fd);
	c->fd = -1;
}

/* Read what candidate @c has: 1 when it sent the whole @greeting, 0 for more to come, -1
 * when it is a stray (closed, an error, or a byte that does not match). */
static int cand_read(struct side_cand *c, const unsigned char *greeting, size_t len)
{
	unsigned char buf[64];
	ssize_t n;

	n = recv(c->fd, buf, len - c->got < sizeof(buf) ? len - c->got : sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0 || memcmp(buf, greeting + c->got, (size_t)n))
		return -1;
	c->got += (size_t)n;
	return c->got == len;
}

int side_accept_greeted(int lfd, const void *greeting, size_t len, int timeout_ms)
{
	struct side_cand cand[SIDE_MAX_PENDING];
	struct pollfd p[SIDE_MAX_PENDING + 1];
	double deadline = tool_now() + timeout_ms / 1000.0;
	int i, n, ret = -ETIMEDOUT, oldest = 0;

	for (i = 0; i < SIDE_MAX_PENDING; i++)
		cand[i].fd = -1;
	for (;;) {
		double left = deadline - tool_now();

		if (left <= 0)
			break;
		p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < SIDE_MAX_PENDING; i++)
			p[i + 1] = (struct pollfd){ .fd = cand[i].fd, .events = POLLIN };
		n = poll(p, SIDE_MAX_PENDING + 1, (int)(left * 1000) + 1);
		if (n < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
		for (i = 0; n > 0 && i < SIDE_MAX_PENDING; i++) {
			if (cand[i].fd < 0 || !p[i + 1].revents)
				continue;
			switch (cand_read(&cand[i], greeting, len)) {
			case 1:
				ret = cand[i].fd;
				cand[i].fd = -1;
				goto out;
			case -1:
				cand_drop(&cand[i]);
				break;
			}
		}
		if (n > 0 && (p[0].revents & POLLIN)) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd < 0)
				continue; /* gone again (a reset in the backlog): not our error */
			for (i = 0; i < SIDE_MAX_PENDING && cand[i].fd >= 0; i++)
				;
			if (i == SIDE_MAX_PENDING) {
				/* all slots held by silent connections: the oldest goes */
				i = oldest;
				oldest = (oldest + 1) % SIDE_MAX_PENDING;
				cand_drop(&cand[i]);
			}
			cand[i] = (struct side_cand){ .fd = fd, .got = 0 };
		}
	}
out:
	for (i = 0; i < SIDE_MAX_PENDING; i++)
		if (cand[i].fd >= 0)
			cand_drop(&cand[i]);
	return ret;
}

int side_connect(const char *addr, int timeout_ms)
{
	double deadline = tool_now() + timeout_ms / 1000.0;
	struct addrinfo *ai;
	int ret = resolve(addr, 0, &ai), fd = -1;

	if (ret)
		return ret;
	do {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			ret = 0;
			break;
		}
		ret = -errno;
		close(fd);
		fd = -1;
		/* the server may not be listening yet */
		usleep(100 * 1000);
	} while ((ret == -ECONNREFUSED || ret == -ETIMEDOUT || ret == -ENOENT) &&
		 tool_now() < deadline);
	resolve_free(ai);
	return ret ? ret : fd;
}

int side_send(int fd, const void *buf, size_t len, int timeout_ms)
{
	const char *p = buf;

	while (len) {
		ssize_t n;
		int ret = wait_fd(fd, POLLOUT, timeout_ms);

		if (ret)
			return ret;
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
	return 0;
}

int side_recv(int fd, void *buf, size_t len, int timeout_ms)
{
	char *p = buf;

	while (len) {
		ssize_t n;
		int ret = wait_fd(fd, POLLIN, timeout_ms);

		if (ret)
			return ret;
		n = recv(fd, p, len, 0);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
	return 0;
}

/* Per message id: 64-bit words of a mix of the id and the word's index. */
static uint64_t pattern(uint64_t id, uint64_t k)
{
	uint64_t x = (id + 1) * 0x9e3779b97f4a7c15ull ^ (k + 1) * 0xd6e8feb86659fd93ull;

	x ^= x >> 31;
	return x * 0xbf58476d1ce4e5b9ull;
}

void tool_fill(unsigned char *buf, size_t size, uint64_t id)
{
	size_t k;

	for (k = 0; k * 8 < size; k++) {
		uint64_t w = pattern(id, k);

		memcpy(buf + k * 8, &w, size - k * 8 < 8 ? size - k * 8 : 8);
	}
}

/* -1 when @buf holds message @id, else the offset of the first wrong byte. */
long tool_check(const unsigned char *buf, size_t size, uint64_t id)
{
	size_t k, j;

	for (k = 0; k * 8 < size; k++) {
		uint64_t w = pattern(id, k);
		size_t n = size - k * 8 < 8 ? size - k * 8 : 8;

		if (memcmp(buf + k * 8, &w, n))
			for (j = 0; j < n; j++)
				if (buf[k * 8 + j] != ((unsigned char *)&w)[j])
					return (long)(k * 8 + j);
	}
	return -1;
}

/* A checksum of what was really sent / received, compared at the end. */
uint64_t tool_checksum(const unsigned char *buf, size_t size, uint64_t id)
{
	uint64_t h = 0xcbf29ce484222325ull ^ id, w;
	size_t k;

	for (k = 0; k + 8 <= size; k += 8) {
		memcpy(&w, buf + k, 8);
		h = (h ^ w) * 0x100000001b3ull;
	}
	for (; k < size; k++)
		h = (h ^ buf[k]) * 0x100000001b3ull;
	return h ^ size;
}
