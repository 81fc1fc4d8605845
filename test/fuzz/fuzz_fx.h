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
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture_xfer.h"
#include "rn_log.h"
#include "rn_param.h"

static int fz_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * Every input opens and closes loopback TCP connections, and each close leaves a TIME_WAIT
 * socket for 60 s holding its port: thousands per target, so earlier targets (or a long run)
 * used up the ephemeral ports and binding a listener failed. NOTE: each such fuzzer runs in
 * a network namespace of its own (as root, or as the root of a new user namespace), where no
 * TIME_WAIT socket is kept (tcp_max_tw_buckets 0: a closed socket is gone at once; nothing
 * else shares this loopback), so no one's sockets can take its ports. Where no namespace can
 * be made, it runs as before and says so.
 */
static void fz_private_netns(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	uid_t uid = getuid();
	gid_t gid = getgid();
	char map[64];
	int fd;

	if (unshare(CLONE_NEWNET)) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNET))
			goto shared;
		snprintf(map, sizeof(map), "0 %u 1", (unsigned int)uid);
		fz_write_file("/proc/self/setgroups", "deny");
		if (fz_write_file("/proc/self/uid_map", map))
			goto shared;
		snprintf(map, sizeof(map), "0 %u 1", (unsigned int)gid);
		fz_write_file("/proc/self/gid_map", map);
	}
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		goto lo_down;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		goto lo_down;
	close(fd);
	if (fz_write_file("/proc/sys/net/ipv4/tcp_max_tw_buckets", "0"))
		fprintf(stderr, "fuzz: own network namespace, but TIME_WAIT sockets are kept: %s\n",
			strerror(errno));
	return;
lo_down:
	/* a namespace whose loopback is down is worse than the shared one: nothing connects */
	fprintf(stderr, "fuzz: cannot bring up lo in a new network namespace: %s\n",
		strerror(errno));
	abort();
shared:
	fprintf(stderr, "fuzz: no network namespace of its own (%s); TIME_WAIT sockets of "
		"others may use up the loopback ports\n", strerror(errno));
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fz_private_netns();
	return 0;
}

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
