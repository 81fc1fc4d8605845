// SPDX-License-Identifier: MIT
/*
 * The listener's connection table fed a sequence of events, as a flood of strangers
 * and real peers produce them: connect, bytes, a valid HELLO/VERDICT/READY (right or
 * wrong nonce), close, and rn_accept calls. Up to 80 clients, more than the table
 * holds, so eviction runs. Whatever the sequence: no crash, rn_accept returns 0 or
 * -errno, every comm it hands out closes, and nothing leaks once the listener closes.
 *
 * Input: op bytes, each followed by its arguments:
 *   0 connect         1 idx len bytes...: raw bytes   2 idx: close
 *   3 n: rn_accept (n % 8 + 1) times   4 idx flags: HELLO (flags: bit0 wrong nonce,
 *   bits 1-2 nqps-1, bit3 claims the receive role)   5 idx flags: VERDICT (bit0
 *   refused, bit1 wrong nonce) or READY (bit2)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fx.h"
#include "rn_net.h"
#include "rn_wire.h"

#define MAXC 80

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void pump(struct rn_listen_comm *lc, int n)
{
	struct rn_recv_comm *rc;

	while (n--) {
		rc = NULL;
		fz_check_ret(rn_accept(lc, &rc));
		rn_close_recv(rc);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fx f;
	static uint8_t msg[RN_WIRE_MAX_MSG];
	unsigned char lh[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	struct rn_handle_info hi;
	int fds[MAXC], n = 0, i;
	size_t p = 0;

	fz_setup(&f, 1000);
	if (rn_listen(&f.eng, 1, lh, &lc) || rn_handle_decode(lh, sizeof(lh), &hi))
		abort();
	while (p < size) {
		uint8_t op = data[p++] % 6;
		int idx = p < size ? data[p] % (n ? n : 1) : 0;

		switch (op) {
		case 0:
			if (n < MAXC)
				fds[n++] = fz_client(&hi.addr);
			break;
		case 1: {
			size_t len;

			if (p + 2 > size)
				goto out;
			len = data[p + 1];
			p += 2;
			if (len > size - p)
				len = size - p;
			if (n)
				fz_write(fds[idx], data + p, len);
			p += len;
			break;
		}
		case 2:
			p++;
			if (n && fds[idx] >= 0) {
				close(fds[idx]);
				fds[idx] = -1;
			}
			break;
		case 3:
			pump(lc, p < size ? data[p] % 8 + 1 : 1);
			p++;
			break;
		case 4: {
			struct rn_hello m;
			uint8_t fl = p + 1 < size ? data[p + 1] : 0;
			size_t len;

			p += 2;
			memset(&m, 0, sizeof(m));
			m.role = fl & 8 ? RN_ROLE_RECV : RN_ROLE_SEND;
			m.nqps = ((fl >> 1) & 3) + 1;
			m.facts.active_mtu = IBV_MTU_1024;
			for (i = 0; i < m.nqps; i++)
				m.qpn[i] = 0x40 + (uint32_t)i;
			len = rn_msg_encode_hello(msg, hi.nonce + (fl & 1), &m);
			if (n)
				fz_write(fds[idx], msg, len);
			break;
		}
		case 5: {
			struct rn_verdict_msg v;
			uint8_t fl = p + 1 < size ? data[p + 1] : 0;
			size_t len;

			p += 2;
			memset(&v, 0, sizeof(v));
			v.refused = fl & 1;
			if (fl & 4)
				len = rn_msg_encode_ready(msg, hi.nonce + ((fl >> 1) & 1));
			else
				len = rn_msg_encode_verdict(msg, hi.nonce + ((fl >> 1) & 1), &v);
			if (n)
				fz_write(fds[idx], msg, len);
			break;
		}
		}
		for (i = 0; i < n; i++)
			fz_drain(fds[i]);
	}
out:
	pump(lc, 4);
	for (i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	pump(lc, 4);
	rn_close_listen(lc);
	fz_teardown(&f);
	return 0;
}
