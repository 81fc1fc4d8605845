// SPDX-License-Identifier: MIT
/*
 * roce-doctor's peer protocol (src/doctor/doctor_wire.c): the input is what a client
 * or a port scanner sends to `serve`, or a server sends to `peer`.
 * 1. The server's piecewise reader (fed in chunks whose size the first byte picks) and
 *    the client's blocking reader over a socketpair agree: the same first message or
 *    both an error; never a length beyond the maximum.
 * 2. Whatever decodes (inventory, pair checks against a 4-NIC inventory) survives
 *    encode -> decode unchanged.
 * 3. An incomplete message misses a deadline that has passed at once, not later.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "doctor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

double rn_doctor_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A socketpair whose one end holds @data, the writer closed unless @keep. */
static int loaded(const uint8_t *data, size_t size, int keep, int *wr)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	if (keep) {
		*wr = sv[1];
	} else {
		close(sv[1]);
		*wr = -1;
	}
	return sv[0];
}

/* Encode @m's decoded form and decode it again into *@inv / *@c. */
static void again(uint16_t type, struct rn_dw_inv *inv, struct rn_dw_checks *c,
		  const struct rn_dw_inv *four)
{
	struct rn_dw_msg m2;
	char why[256];
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (type == RN_DW_INV ? rn_dw_send_inv(sv[1], inv) : rn_dw_send_checks(sv[1], c))
		abort();
	if (rn_dw_recv(sv[0], &m2, why, sizeof(why)))
		abort();
	if (type == RN_DW_INV ? rn_dw_decode_inv(&m2, inv, why, sizeof(why)) :
				rn_dw_decode_checks(&m2, four, four, c, why, sizeof(why)))
		abort();
	rn_dw_msg_free(&m2);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Decoded once, then encoded and decoded twice: the last two agree byte for byte (the
 * first may differ only in bytes after a string's NUL, which the encoder zeroes).
 */
static void check_roundtrip(const struct rn_dw_msg *m)
{
	static struct rn_dw_inv inv, inv2, four;
	static struct rn_dw_checks c, c2;
	char why[256];
	int i;

	if (m->len > 60000) /* the re-encoded message must fit the socket without a reader */
		return;
	four.nnics = 4;
	if (m->type == RN_DW_INV) {
		if (rn_dw_decode_inv(m, &inv, why, sizeof(why)))
			return;
		inv2 = inv;
		again(RN_DW_INV, &inv2, NULL, &four);
		if (strcmp(inv.host, inv2.host) || inv.nnics != inv2.nnics)
			abort();
		for (i = 0; i < inv.nnics; i++)
			if (strcmp(inv.nics[i].netdev, inv2.nics[i].netdev) ||
			    inv.nics[i].nfindings != inv2.nics[i].nfindings ||
			    inv.nics[i].mtu != inv2.nics[i].mtu)
				abort();
		inv = inv2;
		again(RN_DW_INV, &inv2, NULL, &four);
		if (memcmp(&inv, &inv2, sizeof(inv)))
			abort();
	} else if (m->type == RN_DW_CHECKS) {
		if (rn_dw_decode_checks(m, &four, &four, &c, why, sizeof(why)))
			return;
		c2 = c;
		again(RN_DW_CHECKS, NULL, &c2, &four);
		if (c.npairs != c2.npairs)
			abort();
		c = c2;
		again(RN_DW_CHECKS, NULL, &c2, &four);
		if (memcmp(&c, &c2, sizeof(c)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_dw_reader r;
	struct rn_dw_msg a, b;
	char why[256];
	size_t step, off = 0, used;
	int ra = -EAGAIN, rb, fd, wr;
	double t0;

	if (size < 1)
		return 0;
	step = data[0] % 32 + 1;
	data++, size--;
	/* 1: piecewise vs blocking */
	rn_dw_reader_init(&r);
	memset(&a, 0, sizeof(a));
	while (ra == -EAGAIN && off < size) {
		size_t n = step < size - off ? step : size - off;

		ra = rn_dw_reader_feed(&r, data + off, n, &used, &a, why, sizeof(why));
		if (used > n)
			abort();
		off += used;
	}
	rn_dw_reader_free(&r);
	fd = loaded(data, size, 0, &wr);
	rb = rn_dw_recv(fd, &b, why, sizeof(why));
	close(fd);
	if ((ra == 0) != (rb == 0))
		abort();
	if (!ra) {
		if (a.type != b.type || a.len != b.len || a.len > RN_DW_MAX_PAYLOAD ||
		    memcmp(a.payload, b.payload, a.len) || off != RN_DW_HDR_LEN + a.len)
			abort();
		/* 2 */
		check_roundtrip(&a);
		rn_dw_msg_free(&a);
		rn_dw_msg_free(&b);
	}
	/* 3: the writer stays open; a deadline already passed is not waited for */
	fd = loaded(data, size, 1, &wr);
	t0 = rn_doctor_now_ms();
	rb = rn_dw_recv_by(fd, &b, t0, why, sizeof(why));
	if ((rb == 0) != (ra == 0) || rn_doctor_now_ms() - t0 > 1000)
		abort();
	if (!rb)
		rn_dw_msg_free(&b);
	close(fd);
	close(wr);
	return 0;
}
