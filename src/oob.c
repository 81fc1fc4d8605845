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
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rn_compiler.h"
#include "rn_log.h"
#include "rn_oob.h"

static int ifname_match(const char *list, const char *name)
{
	char buf[RN_CFG_STR_MAX], *tok, *save = NULL;
	int exact = 0;

	snprintf(buf, sizeof(buf), "%s", list);
	tok = buf;
	if (*tok == '=') {
		exact = 1;
		tok++;
	}
	for (tok = strtok_r(tok, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (exact ? !strcmp(tok, name) : !strncmp(tok, name, strlen(tok)))
			return 1;
	}
	return 0;
}

int rn_oob_local_addr(const struct rn_dev *dev, const struct rn_config *cfg,
		      struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (cfg->socket_ifname[0]) {
		struct ifaddrs *ifa, *i;
		int found = 0;

		if (cfg->socket_ifname[0] == '^') {
			rn_warn(RN_SUB_NET, RN_PFX "NCCL_SOCKET_IFNAME=%s: exclusion lists are not "
				"supported for the OOB address; using the NIC's IP",
				cfg->socket_ifname);
			goto nic;
		}
		if (getifaddrs(&ifa))
			return -errno;
		for (i = ifa; i && !found; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
			    !ifname_match(cfg->socket_ifname, i->ifa_name))
				continue;
			memcpy(out, i->ifa_addr, sizeof(struct sockaddr_in));
			found = 1;
		}
		freeifaddrs(ifa);
		if (found)
			return 0;
		rn_warn(RN_SUB_NET,
			RN_PFX "NCCL_SOCKET_IFNAME=%s matches no interface with an IPv4 address",
			cfg->socket_ifname);
		return -EADDRNOTAVAIL;
	}
nic:
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
	rn_warn(RN_SUB_NET, RN_PFX "%s:%d has no source IP for the handshake; set "
		"NCCL_SOCKET_IFNAME", dev->nic.ibdev, dev->nic.port);
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

int rn_oob_connect(const struct sockaddr_storage *peer, const struct sockaddr_storage *src,
		   int *fd)
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
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return -ECONNRESET;
	return 0;
}
