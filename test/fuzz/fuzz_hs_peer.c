// SPDX-License-Identifier: MIT
/*
 * The handshake state machine fed byte streams as a peer, on either side:
 *   first byte bit 0 = 0: a raw client sends the bytes to our listener (rn_accept's side)
 *   bit 0 = 1: rn_connect dials a raw server that answers with the bytes (connect's side;
 *   a connection closed before its first byte is dialled again, up to 8 times, and each
 *   new one gets the same bytes)
 * Bit 1 puts a valid HELLO with the right nonce first and bit 2 a VERDICT after it, so
 * the bytes also land in the later states. Then the peer stops sending (shutdown): the
 * state machine must end in a comm or a clean error within its timeout, never crash,
 * hang or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rn_clock.h"
#include "fuzz_fx.h"
#include "rn_net.h"
#include "rn_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a well-behaved peer of @role would send first, into @buf; returns the length. */
static size_t prefix(uint8_t mode, int role, uint64_t nonce, uint8_t *buf)
{
	struct rn_hello m;
	struct rn_verdict_msg v;
	size_t len = 0;

	if (!(mode & 2))
		return 0;
	memset(&m, 0, sizeof(m));
	m.role = role;
	m.nqps = 1;
	m.qpn[0] = 0x42;
	m.facts.active_mtu = IBV_MTU_1024;
	len = rn_msg_encode_hello(buf, nonce, &m);
	if (mode & 4) {
		memset(&v, 0, sizeof(v));
		len += rn_msg_encode_verdict(buf + len, nonce, &v);
	}
	return len;
}

static void feed(int fd, const uint8_t *pre, size_t plen, const uint8_t *data, size_t size)
{
	uint8_t *all = malloc(plen + size + 1);

	if (!all)
		abort();
	memcpy(all, pre, plen);
	memcpy(all + plen, data, size);
	fz_write(fd, all, plen + size);
	free(all);
	shutdown(fd, SHUT_WR);
}

static void as_client(struct fx *f, uint8_t mode, const uint8_t *data, size_t size)
{
	static uint8_t pre[2 * RN_WIRE_MAX_MSG];
	unsigned char lh[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	struct rn_recv_comm *rc = NULL;
	struct rn_handle_info hi;
	uint64_t t0 = rn_now_ns();
	int fd, ret = 0;

	if (rn_listen(&f->eng, 1, lh, &lc) || rn_handle_decode(lh, sizeof(lh), &hi))
		abort();
	fd = fz_client(&hi.addr);
	if (fd < 0)
		abort();
	feed(fd, pre, prefix(mode, RN_ROLE_SEND, hi.nonce, pre), data, size);
	/* until a comm, a real peer's error, or the stray was dropped (the socket closes) */
	for (;;) {
		char c;
		ssize_t r;

		ret = rn_accept(lc, &rc);
		fz_check_ret(ret);
		if (ret || rc)
			break;
		r = recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			break;
		fz_drain(fd);
		if (rn_now_ns() - t0 > 5000000000ull)
			abort(); /* past the 300 ms handshake bound: a hang */
	}
	rn_close_recv(rc);
	close(fd);
	rn_close_listen(lc);
}

static void as_server(struct fx *f, uint8_t mode, const uint8_t *data, size_t size)
{
	static uint8_t pre[2 * RN_WIRE_MAX_MSG];
	struct sockaddr_storage ss;
	struct rn_handle_info hi;
	unsigned char h[RN_HANDLE_SIZE];
	struct rn_send_comm *sc = NULL;
	socklen_t sl = sizeof(ss);
	uint64_t t0 = rn_now_ns();
	int lfd, fd = -1, ret = 0;

	memset(&ss, 0, sizeof(ss));
	((struct sockaddr_in *)&ss)->sin_family = AF_INET;
	((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)) ||
	    listen(lfd, 4) || getsockname(lfd, (struct sockaddr *)&ss, &sl))
		abort();
	memset(&hi, 0, sizeof(hi));
	hi.addr = ss;
	hi.nonce = 0x1122334455667788ull;
	if (rn_handle_encode(&hi, h, sizeof(h)))
		abort();
	while (!sc && !ret) {
		int nfd;

		ret = rn_connect(&f->eng, 0, h, 0, &sc);
		fz_check_ret(ret);
		nfd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (nfd >= 0) {
			if (fd >= 0)
				close(fd);
			fd = nfd;
			feed(fd, pre, prefix(mode, RN_ROLE_RECV, hi.nonce, pre), data, size);
		}
		fz_drain(fd);
		if (rn_now_ns() - t0 > 5000000000ull)
			abort();
	}
	rn_close_send(sc);
	if (fd >= 0)
		close(fd);
	close(lfd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fx f;
	uint8_t mode;

	if (size < 1)
		return 0;
	mode = data[0];
	fz_setup(&f, 300);
	if (mode & 1)
		as_server(&f, mode, data + 1, size - 1);
	else
		as_client(&f, mode, data + 1, size - 1);
	fz_teardown(&f);
	return 0;
}
