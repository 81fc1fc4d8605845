// SPDX-License-Identifier: MIT
/*
 * Non-blocking TCP bootstrap for the handshake. Sockets are O_NONBLOCK and
 * CLOEXEC from birth; keepalive is tightened so that a peer host that vanishes
 * without a FIN is noticed while a receiver waits for data (the comm keeps its
 * socket open for exactly that).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rn_compiler.h"
#include "rn_log.h"
#include "rn_oob.h"

/*
 * NCCL_SOCKET_IFNAME as NCCL reads it (misc/socket.cc, findInterfaces): a leading '^'
 * excludes, then a leading '=' asks for exact names (else each entry is a prefix); entries
 * are comma separated, "name[:port]" with the port ignored here. An empty list matches
 * every interface.
 */
static int ifname_listed(const char *list, const char *name)
{
	int exact = 0, hit = 0, any = 0;
	const char *e;

	if (*list == '^')
		list++;
	if (*list == '=') {
		exact = 1;
		list++;
	}
	for (e = list; *e && !hit;) {
		size_t len = strcspn(e, ","), nl = strcspn(e, ":,");

		if (nl) {
			any = 1;
			hit = exact ? strlen(name) == nl && !strncmp(e, name, nl) :
				      !strncmp(e, name, nl);
		}
		e += len;
		if (*e == ',')
			e++;
	}
	return hit || !any;
}

int rn_oob_ifname_match(const char *list, const char *name)
{
	int exclude = *list == '^';

	if (exclude && !list[1 + (list[1] == '=')])
		return 1; /* excluding nothing */
	return ifname_listed(list, name) ^ exclude;
}

int rn_oob_pick_ifaddr(const char *list, const struct ifaddrs *ifa, struct sockaddr_storage *out,
		       char *name, size_t name_len)
{
	const struct ifaddrs *i;

	for (i = ifa; i; i = i->ifa_next) {
		int family = i->ifa_addr ? i->ifa_addr->sa_family : AF_UNSPEC;

		if ((family != AF_INET && family != AF_INET6) || !(i->ifa_flags & IFF_RUNNING) ||
		    !i->ifa_name || !rn_oob_ifname_match(list, i->ifa_name))
			continue;
		if (family == AF_INET6) {
			const struct in6_addr *a =
				&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;

			/*
			 * NOTE: NCCL would take a link-local address too; the handle carries no
			 * scope, and the peer's would differ anyway, so it could not connect.
			 */
			if (IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_LINKLOCAL(a))
				continue;
		}
		memset(out, 0, sizeof(*out));
		/* getifaddrs lists IPv4 before IPv6: NCCL's order, an interface's IPv4 first */
		memcpy(out, i->ifa_addr,
		       family == AF_INET ? sizeof(struct sockaddr_in) :
					   sizeof(struct sockaddr_in6));
		if (name)
			snprintf(name, name_len, "%s", i->ifa_name);
		return 0;
	}
	return -EADDRNOTAVAIL;
}

/*
 * Once per process and value, not per listen or connect: the same setting gives the
 * same answer every time, and NCCL calls listen and connect thousands of times.
 */
static int first_time_for(const char *value, int found)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static char said[2][RN_CFG_STR_MAX];
	int first;

	pthread_mutex_lock(&lock);
	first = strcmp(said[!!found], value) != 0;
	if (first)
		snprintf(said[!!found], sizeof(said[0]), "%s", value);
	pthread_mutex_unlock(&lock);
	return first;
}

int rn_oob_local_addr(const struct rn_dev *dev, const struct rn_config *cfg,
		      struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (cfg->socket_ifname[0]) {
		struct ifaddrs *ifa;
		char name[IFNAMSIZ + 1], a[INET6_ADDRSTRLEN + 8];
		int ret;

		if (getifaddrs(&ifa))
			return -errno;
		ret = rn_oob_pick_ifaddr(cfg->socket_ifname, ifa, out, name, sizeof(name));
		freeifaddrs(ifa);
		if (!ret) {
			if (first_time_for(cfg->socket_ifname, 1))
				rn_info(RN_SUB_INIT | RN_SUB_NET,
					RN_PFX "NCCL_SOCKET_IFNAME=%s: the "
					       "handshake uses %s %s",
					cfg->socket_ifname, name,
					rn_sockaddr_str(out, a, sizeof(a)));
			return 0;
		}
		if (first_time_for(cfg->socket_ifname, 0))
			rn_warn(RN_SUB_NET,
				RN_PFX "NCCL_SOCKET_IFNAME=%s matches no running interface with "
				       "an IPv4 or a global IPv6 address: no handshake can start "
				       "(ip -br addr shows the interfaces)",
				cfg->socket_ifname);
		else
			rn_info(RN_SUB_NET, RN_PFX "NCCL_SOCKET_IFNAME=%s matches no interface",
				cfg->socket_ifname);
		return -EADDRNOTAVAIL;
	}
	if (dev->nic.ip.family == AF_INET) {
		struct sockaddr_in *in = (void *)out;

		in->sin_family = AF_INET;
		in->sin_addr = dev->nic.ip.v4;
		return 0;
	}
	if (dev->nic.ip.family == AF_INET6) {
		struct sockaddr_in6 *in6 = (void *)out;

		in6->sin6_family = AF_INET6;
		in6->sin6_addr = dev->nic.ip.v6;
		return 0;
	}
	rn_warn(RN_SUB_NET,
		RN_PFX "%s:%d has no source IP for the handshake; set "
		       "NCCL_SOCKET_IFNAME",
		dev->nic.ibdev, dev->nic.port);
	return -EADDRNOTAVAIL;
}

static socklen_t ss_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Keepalive (rn_oob.h); the user timeout comes once connected (sock_connected). */
static void sock_tune(int fd)
{
	int one = 1, idle = RN_OOB_KEEPIDLE_S, intvl = RN_OOB_KEEPINTVL_S, cnt = RN_OOB_KEEPCNT;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/*
 * A vanished host fails a connected socket in RN_OOB_USER_TIMEOUT_MS, whatever it waits
 * for. Not before the connection is up: some kernels apply it to SYN retries too, and a
 * real peer's SYN may wait behind a flood in a full listen queue.
 */
static void sock_connected(int fd)
{
	unsigned int user = RN_OOB_USER_TIMEOUT_MS;

	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

int rn_oob_listen(struct sockaddr_storage *addr, int *fd)
{
	socklen_t len = sizeof(*addr);
	int s, ret;

	s = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/*
	 * The kernel's largest queue: a flood of idle connections that arrives while
	 * nobody calls accept must not fill it, or a real peer's SYN is dropped and its
	 * connect waits for a retransmit (1 s, 3 s, ...). rn_accept drains it and evicts.
	 */
	if (bind(s, (struct sockaddr *)addr, ss_len(addr)) || listen(s, SOMAXCONN) ||
	    getsockname(s, (struct sockaddr *)addr, &len)) {
		ret = -errno;
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

int rn_oob_accept(int lfd, int *fd)
{
	int s = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (s < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
		    errno == ECONNABORTED)
			return -EAGAIN;
		return -errno;
	}
	sock_tune(s);
	sock_connected(s);
	*fd = s;
	return 0;
}

int rn_oob_connect(const struct sockaddr_storage *peer, const struct sockaddr_storage *src, int *fd)
{
	int s, ret;

	s = socket(peer->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (src && src->ss_family == peer->ss_family) {
		struct sockaddr_storage a = *src;

		/* Best effort: the source IP steers policy routing; any port will do. */
		if (a.ss_family == AF_INET)
			((struct sockaddr_in *)&a)->sin_port = 0;
		else
			((struct sockaddr_in6 *)&a)->sin6_port = 0;
		if (bind(s, (struct sockaddr *)&a, ss_len(&a)))
			rn_trace(RN_SUB_NET, RN_PFX "OOB bind to the NIC address failed: %s",
				 strerror(errno));
	}
	sock_tune(s);
	if (connect(s, (const struct sockaddr *)peer, ss_len(peer)) && errno != EINPROGRESS) {
		ret = -errno;
		close(s);
		return ret;
	}
	*fd = s;
	return 0;
}

int rn_oob_connect_poll(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int err = 0;

	/* getpeername answers ENOTCONN until the handshake is through. */
	if (!getpeername(fd, (struct sockaddr *)&ss, &len)) {
		sock_connected(fd);
		return 0;
	}
	len = sizeof(err);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return err ? -err : -EAGAIN;
}

int rn_oob_send(int fd, struct rn_oob_buf *b)
{
	while (b->off < b->len) {
		ssize_t n = send(fd, b->data + b->off, b->len - b->off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return -EAGAIN;
			return -errno;
		}
		b->off += (size_t)n;
	}
	return 0;
}

void rn_oob_recv_reset(struct rn_oob_buf *b)
{
	b->len = RN_WIRE_HDR_LEN;
	b->off = 0;
	memset(&b->hdr, 0, sizeof(b->hdr));
}

int rn_oob_recv(int fd, struct rn_oob_buf *b)
{
	int ret;

	for (;;) {
		if (b->off == b->len) {
			if (b->len > RN_WIRE_HDR_LEN || b->hdr.type)
				return 0;
			ret = rn_msg_decode_hdr(b->data, b->len, &b->hdr);
			if (ret)
				return ret;
			if (!b->hdr.len)
				return 0;
			b->len = RN_WIRE_HDR_LEN + b->hdr.len;
		}
		ssize_t n = recv(fd, b->data + b->off, b->len - b->off, MSG_DONTWAIT);

		if (n == 0)
			return -ECONNRESET;
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return -EAGAIN;
			return -errno;
		}
		b->off += (size_t)n;
	}
}

int rn_oob_peer_alive(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n == 0)
		return -ECONNRESET;
	/* TCP gave up on the path (keepalive, user timeout): the host may still be there */
	if (n < 0 && (errno == ETIMEDOUT || errno == EHOSTUNREACH || errno == ENETUNREACH))
		return -ETIMEDOUT;
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return -ECONNRESET;
	return 0;
}
