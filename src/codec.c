// SPDX-License-Identifier: MIT
/* The byte codec (include/rn_codec.h): big-endian fields, growing writer, bounded reader. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rn_codec.h"

void rn_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void rn_put_be32(uint8_t *p, uint32_t v)
{
	rn_put_be16(p, (uint16_t)(v >> 16));
	rn_put_be16(p + 2, (uint16_t)v);
}

void rn_put_be64(uint8_t *p, uint64_t v)
{
	rn_put_be32(p, (uint32_t)(v >> 32));
	rn_put_be32(p + 4, (uint32_t)v);
}

uint16_t rn_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint32_t rn_get_be32(const uint8_t *p)
{
	return (uint32_t)rn_get_be16(p) << 16 | rn_get_be16(p + 2);
}

uint64_t rn_get_be64(const uint8_t *p)
{
	return (uint64_t)rn_get_be32(p) << 32 | rn_get_be32(p + 4);
}

void rn_put_field(uint8_t *p, size_t size, const char *s)
{
	size_t n = strnlen(s, size - 1);

	memset(p, 0, size);
	memcpy(p, s, n);
}

int rn_text_clean(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
			return 0;
	return 1;
}

int rn_get_field(const uint8_t *p, size_t size, char *out)
{
	size_t n = strnlen((const char *)p, size);

	if (n == size)
		return -EBADMSG; /* no terminator inside the field */
	if (!rn_text_clean(p, n))
		return -EBADMSG; /* a name with a newline or an escape would forge log lines */
	memcpy(out, p, n);
	out[n] = 0;
	return 0;
}

void rn_wb_put(struct rn_wbuf *b, const void *src, size_t n)
{
	if (b->err || !n)
		return; /* nothing to add: b->p may still be NULL (memset(NULL, 0, 0) is UB) */
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		uint8_t *q;

		while (cap < b->len + n)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q) {
			b->err = -ENOMEM;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	if (src)
		memcpy(b->p + b->len, src, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
}

void rn_wb_u8(struct rn_wbuf *b, unsigned int v)
{
	uint8_t x = (uint8_t)v;

	rn_wb_put(b, &x, 1);
}

void rn_wb_u16(struct rn_wbuf *b, unsigned int v)
{
	uint8_t x[2];

	rn_put_be16(x, (uint16_t)v);
	rn_wb_put(b, x, 2);
}

void rn_wb_u32(struct rn_wbuf *b, uint32_t v)
{
	uint8_t x[4];

	rn_put_be32(x, v);
	rn_wb_put(b, x, 4);
}

void rn_wb_u64(struct rn_wbuf *b, uint64_t v)
{
	uint8_t x[8];

	rn_put_be64(x, v);
	rn_wb_put(b, x, 8);
}

void rn_wb_field(struct rn_wbuf *b, const char *s, size_t size)
{
	size_t n = strnlen(s, size - 1);

	rn_wb_put(b, s, n);
	rn_wb_put(b, NULL, size - n);
}

void rn_wb_str(struct rn_wbuf *b, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (b->err)
		return;
	if (n > max || n > UINT16_MAX) {
		b->err = -EMSGSIZE;
		return;
	}
	rn_wb_u16(b, (unsigned int)n);
	rn_wb_put(b, s, n);
}

const uint8_t *rn_rb_take(struct rn_rbuf *b, size_t n)
{
	const uint8_t *q;

	if (b->err || b->len - b->off < n) {
		b->err = -EBADMSG;
		return NULL;
	}
	q = b->p + b->off;
	b->off += n;
	return q;
}

unsigned int rn_rb_u8(struct rn_rbuf *b)
{
	const uint8_t *q = rn_rb_take(b, 1);

	return q ? q[0] : 0;
}

unsigned int rn_rb_u16(struct rn_rbuf *b)
{
	const uint8_t *q = rn_rb_take(b, 2);

	return q ? rn_get_be16(q) : 0;
}

uint32_t rn_rb_u32(struct rn_rbuf *b)
{
	const uint8_t *q = rn_rb_take(b, 4);

	return q ? rn_get_be32(q) : 0;
}

uint64_t rn_rb_u64(struct rn_rbuf *b)
{
	const uint8_t *q = rn_rb_take(b, 8);

	return q ? rn_get_be64(q) : 0;
}

void rn_rb_bytes(struct rn_rbuf *b, void *dst, size_t n)
{
	const uint8_t *q = rn_rb_take(b, n);

	if (q)
		memcpy(dst, q, n);
}

void rn_rb_field(struct rn_rbuf *b, char *dst, size_t size)
{
	const uint8_t *q = rn_rb_take(b, size);

	dst[0] = '\0';
	if (q && rn_get_field(q, size, dst))
		b->err = -EBADMSG;
}

void rn_rb_str(struct rn_rbuf *b, char *dst, size_t size)
{
	size_t n = rn_rb_u16(b);
	const uint8_t *q;

	dst[0] = '\0';
	if (b->err)
		return;
	if (n >= size) {
		b->err = -EBADMSG;
		return;
	}
	q = rn_rb_take(b, n);
	if (!q)
		return;
	if (!rn_text_clean(q, n)) { /* NUL, newline, escape: nothing a name holds */
		b->err = -EBADMSG;
		return;
	}
	memcpy(dst, q, n);
	dst[n] = '\0';
}
