/* SPDX-License-Identifier: MIT */
/*
 * Out-of-band TCP for the handshake (src/oob.c). Every call is non-blocking:
 * -EAGAIN means "call again later". A message is read and written whole through
 * a struct rn_oob_buf that keeps the partial progress between calls.
 */
#ifndef RN_OOB_H
#define RN_OOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rn_dev.h"
#include "rn_wire.h"

/*
 * How TCP tells a vanished peer host, since the handshake has no deadline of its own
 * until the peer's first byte (src/conn.c): a connect that no SYN-ACK answers fails after
 * the kernel's SYN retries (net.ipv4.tcp_syn_retries, 6 by default: ~2 min; kept, as a
 * flood that fills a listener's queue drops real SYNs too). Once connected, a keepalive
 * probe goes out after RN_OOB_KEEPIDLE_S idle seconds, then every RN_OOB_KEEPINTVL_S, and
 * the connection fails RN_OOB_USER_TIMEOUT_MS after the last thing the peer acknowledged
 * (unacknowledged data included): 25 s. A dead process on a live host is told at once
 * (refused, reset).
 */
#define RN_OOB_KEEPIDLE_S 10
#define RN_OOB_KEEPINTVL_S 5
#define RN_OOB_KEEPCNT 3
#define RN_OOB_USER_TIMEOUT_MS 25000

struct rn_oob_buf {
	uint8_t data[RN_WIRE_MAX_MSG];
	size_t len;            /* bytes to send, or bytes expected so far when receiving */
	size_t off;            /* bytes done */
	struct rn_msg_hdr hdr; /* receiving: valid once the header is in */
};

/*
 * The address the listener binds to (and a connect's source): with NCCL_SOCKET_IFNAME
 * set, the first address of the first running interface it selects (rn_oob_pick_ifaddr),
 * else the NIC's own source IP so that the handshake follows the same path as the RDMA
 * traffic. A setting that selects nothing is one WARN per process, not one per call.
 */
int rn_oob_local_addr(const struct rn_dev *dev, const struct rn_config *cfg,
		      struct sockaddr_storage *out);

/*
 * NCCL_SOCKET_IFNAME's syntax, as NCCL: "[^][=]name[:port],...": '^' excludes, '=' asks
 * for exact names, else each entry is a prefix. 1 when @name is selected by @list.
 */
int rn_oob_ifname_match(const char *list, const char *name);

struct ifaddrs;
/*
 * The first entry of @ifa (getifaddrs order: IPv4 before IPv6) on a running interface
 * selected by @list, IPv4 or IPv6 but neither loopback ::1 nor link-local (a handle
 * carries no scope). 0 with its address in @out (port 0) and its interface in @name
 * (may be NULL), or -EADDRNOTAVAIL.
 */
int rn_oob_pick_ifaddr(const char *list, const struct ifaddrs *ifa, struct sockaddr_storage *out,
		       char *name, size_t name_len);

/* A non-blocking listening socket on @addr (port 0 = ephemeral); @addr gets the port. */
int rn_oob_listen(struct sockaddr_storage *addr, int *fd);
/* Accept one pending connection: 0 with *fd, -EAGAIN when none is waiting. */
int rn_oob_accept(int lfd, int *fd);
/* Start connecting to @peer from @src (port 0; NULL = any). 0 with *fd, or -errno. */
int rn_oob_connect(const struct sockaddr_storage *peer, const struct sockaddr_storage *src,
		   int *fd);
/* 0 once connected, -EAGAIN while in progress, -errno when refused. */
int rn_oob_connect_poll(int fd);

/* Send what is left of @b: 0 when all is out, -EAGAIN, -errno. */
int rn_oob_send(int fd, struct rn_oob_buf *b);
/* Prepare @b to receive the next message. */
void rn_oob_recv_reset(struct rn_oob_buf *b);
/*
 * Read towards one whole message: 0 when @b holds it (b->hdr valid, payload at
 * b->data + RN_WIRE_HDR_LEN), -EAGAIN, -ECONNRESET on EOF, a header error of
 * rn_msg_decode_hdr(), or -errno.
 */
int rn_oob_recv(int fd, struct rn_oob_buf *b);

/*
 * 0 while the peer keeps the socket open (nothing to read is fine), -ECONNRESET when it
 * closed it (its process ended), -ETIMEDOUT when TCP gave up on the path (keepalive,
 * user timeout, unreachable: the peer may well be alive behind a failed NIC).
 */
int rn_oob_peer_alive(int fd);

#endif /* RN_OOB_H */
