// SPDX-License-Identifier: MIT
/*
 * roce-doctor's peer protocol (src/doctor/doctor_wire.c): the input is what a client
 * or a port scanner sends to `serve`, or a server sends to `peer`.
 * 1. The server's piecewise reader (fed in chunks whose size the first byte picks) and
 *    the client's blocking reader over a socketpair agree: the same first message or
 *    both an error; never a length beyond its type's limit (rn_dw_type_max).
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

#include "doctor_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

/*
 * Encode @inv / @c and decode the bytes into *@inv_out / *@c_out (distinct structs: a
 * decode clears its destination, and decoded findings own their text).
 */
static void again(uint16_t type, const struct rn_dw_inv *inv, struct rn_dw_inv *inv_out,
		  const struct rn_dw_checks *c, struct rn_dw_checks *c_out,
		  const struct rn_dw_inv *four)
{
	struct rn_dw_msg m2;
	char why[256];
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (type == RN_DW_INV ? rn_dw_send_inv(sv[1], inv, 0) : rn_dw_send_checks(sv[1], c, 0))
		abort();
	if (rn_dw_recv(sv[0], &m2, why, sizeof(why)))
		abort();
	if (type == RN_DW_INV ? rn_dw_decode_inv(&m2, inv_out, why, sizeof(why)) :
				rn_dw_decode_checks(&m2, four, four, c_out, why, sizeof(why)))
		abort();
	rn_dw_msg_free(&m2);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Whether two decoded forms encode to the same bytes: findings own heap text, so the
 * structs themselves differ in their pointers even when their content is the same.
 */
static int same_inv(const struct rn_dw_inv *a, const struct rn_dw_inv *b)
{
	uint8_t *ea = NULL, *eb = NULL;
	size_t la = 0, lb = 0;
	int same;

	if (rn_dw_encode_inv(a, &ea, &la) || rn_dw_encode_inv(b, &eb, &lb))
		abort();
	same = la == lb && !memcmp(ea, eb, la);
	free(ea);
	free(eb);
	return same;
}

static int same_checks(const struct rn_dw_checks *a, const struct rn_dw_checks *b)
{
	uint8_t *ea = NULL, *eb = NULL;
	size_t la = 0, lb = 0;
	int same;

	if (rn_dw_encode_checks(a, &ea, &la) || rn_dw_encode_checks(b, &eb, &lb))
		abort();
	same = la == lb && !memcmp(ea, eb, la);
	free(ea);
	free(eb);
	return same;
}

/*
 * Decoded once, then encoded and decoded twice: the last two encode to the same bytes
 * (the first may differ only in bytes after a string's NUL, which the encoder zeroes).
 */
static void check_roundtrip(const struct rn_dw_msg *m)
{
	static struct rn_dw_inv inv, inv2, inv3, four;
	static struct rn_dw_checks c, c2, c3;
	char why[256];
	int i;

	if (m->len > 60000) /* the re-encoded message must fit the socket without a reader */
		return;
	four.nnics = 4;
	if (m->type == RN_DW_INV) {
		if (rn_dw_decode_inv(m, &inv, why, sizeof(why)))
			return;
		again(RN_DW_INV, &inv, &inv2, NULL, NULL, &four);
		if (strcmp(inv.host, inv2.host) || inv.nnics != inv2.nnics)
			abort();
		for (i = 0; i < inv.nnics; i++)
			if (strcmp(inv.nics[i].netdev, inv2.nics[i].netdev) ||
			    inv.nics[i].nfindings != inv2.nics[i].nfindings ||
			    inv.nics[i].mtu != inv2.nics[i].mtu)
				abort();
		again(RN_DW_INV, &inv2, &inv3, NULL, NULL, &four);
		if (!same_inv(&inv2, &inv3))
			abort();
	} else if (m->type == RN_DW_CHECKS) {
		if (rn_dw_decode_checks(m, &four, &four, &c, why, sizeof(why)))
			return;
		again(RN_DW_CHECKS, NULL, NULL, &c, &c2, &four);
		if (c.npairs != c2.npairs)
			abort();
		again(RN_DW_CHECKS, NULL, NULL, &c2, &c3, &four);
		if (!same_checks(&c2, &c3))
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
		if (a.type != b.type || a.len != b.len || a.len > rn_dw_type_max(a.type) ||
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
