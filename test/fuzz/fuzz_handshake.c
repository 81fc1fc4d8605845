// SPDX-License-Identifier: MIT
/*
 * The handshake parsers: the input is what a peer (or a port scanner) sends.
 * 1. Header + payload decoders on the bytes as one message; whatever decodes
 *    must survive encode -> decode unchanged.
 * 2. The same bytes through the non-blocking OOB reader over a socketpair, as
 *    the listener reads them: it must end in a message or an error, never
 *    read past its buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rn_oob.h"
#include "rn_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_message(const uint8_t *data, size_t size)
{
	static uint8_t out[RN_WIRE_MAX_MSG];
	struct rn_msg_hdr h;
	const uint8_t *p = data + RN_WIRE_HDR_LEN;

	if (rn_msg_decode_hdr(data, size, &h) || size < RN_WIRE_HDR_LEN + (size_t)h.len)
		return;
	if (h.type == RN_MSG_HELLO) {
		struct rn_hello m, m2;

		if (rn_msg_decode_hello(p, h.len, &m))
			return;
		rn_msg_encode_hello(out, h.nonce, &m);
		if (rn_msg_decode_hello(out + RN_WIRE_HDR_LEN, h.len, &m2) ||
		    memcmp(&m, &m2, sizeof(m)))
			abort();
	} else if (h.type == RN_MSG_VERDICT) {
		struct rn_verdict_msg m = { 0 }, m2 = { 0 };
		size_t n;

		if (rn_msg_decode_verdict(p, h.len, &m)) {
			rn_verdict_msg_clear(&m);
			return;
		}
		/* a version 2 verdict comes back in version 3's layout: its own length */
		n = rn_msg_encode_verdict(out, h.nonce, &m);
		if (rn_msg_decode_verdict(out + RN_WIRE_HDR_LEN, n - RN_WIRE_HDR_LEN, &m2) ||
		    m.refused != m2.refused || m.finding.cause != m2.finding.cause ||
		    m.finding.sev != m2.finding.sev || strcmp(m.finding.msg, m2.finding.msg) ||
		    strcmp(m.finding.fix, m2.finding.fix) ||
		    strcmp(rn_finding_fix_host(&m.finding), rn_finding_fix_host(&m2.finding)) ||
		    strcmp(rn_finding_pre_fix(&m.finding), rn_finding_pre_fix(&m2.finding)) ||
		    strcmp(rn_finding_pre_host(&m.finding), rn_finding_pre_host(&m2.finding)) ||
		    strcmp(rn_finding_advice(&m.finding), rn_finding_advice(&m2.finding)))
			abort();
		rn_verdict_msg_clear(&m);
		rn_verdict_msg_clear(&m2);
	}
}

static void check_stream(const uint8_t *data, size_t size)
{
	static struct rn_oob_buf b;
	int sv[2], ret, i;

	if (size > 60000)
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
		return;
	if (size && write(sv[1], data, size) != (ssize_t)size)
		goto out;
	close(sv[1]);
	sv[1] = -1;
	rn_oob_recv_reset(&b);
	for (i = 0; i < 4; i++) {
		ret = rn_oob_recv(sv[0], &b);
		if (ret == 0) {
			if (b.len > sizeof(b.data) || b.len != RN_WIRE_HDR_LEN + b.hdr.len)
				abort();
			rn_oob_recv_reset(&b); /* next message, as the handshake does */
			continue;
		}
		if (ret == -EAGAIN) /* the writer closed: the reader must see it */
			abort();
		break;
	}
out:
	close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_message(data, size);
	check_stream(data, size);
	return 0;
}
