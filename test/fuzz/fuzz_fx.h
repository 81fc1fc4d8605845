/* SPDX-License-Identifier: MIT */
/*
 * The transport test bed for fuzzers (fixture_xfer: fake verbs, the OOB over loopback
 * TCP), set up and torn down around every input so that a leaked comm, QP or MR is
 * a crash. Only 127.0.0.1 is ever connected to. The route check is off (no netlink).
 */
#ifndef FUZZ_FX_H
#define FUZZ_FX_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture_xfer.h"
#include "rn_log.h"
#include "rn_param.h"

static void fz_quiet(enum rn_log_level level, unsigned long sub, const char *file, int line,
		     const char *msg)
{
	(void)level, (void)sub, (void)file, (void)line, (void)msg;
}

static inline void fz_setup(struct fx *f, int connect_timeout_ms)
{
	fx_setup(f);
	rn_log_set_sink(fz_quiet);
	f->eng.cfg.route_check = RN_ROUTE_CHECK_OFF;
	f->eng.cfg.connect_timeout_ms = connect_timeout_ms;
}

static inline void fz_teardown(struct fx *f)
{
	if (fx_teardown(f))
		abort(); /* a comm, QP, CQ or MR outlived its handshake */
}

/* A non-blocking client of @sa (127.0.0.1 only); -1 on failure. */
static inline int fz_client(const struct sockaddr_storage *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(struct sockaddr_in)) &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Write what the socket takes now (never blocks); drain what it has for us. */
static inline void fz_write(int fd, const void *p, size_t n)
{
	if (fd >= 0 && n && send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* a full or reset socket: the peer's problem, as on a wire */
	}
}

static inline void fz_drain(int fd)
{
	char buf[4096];

	while (fd >= 0 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* A comm handed out must be usable enough to close; rn_accept/rn_connect errors are -errno. */
static inline void fz_check_ret(int ret)
{
	if (ret > 0 || ret < -4095)
		abort();
}

#endif /* FUZZ_FX_H */
