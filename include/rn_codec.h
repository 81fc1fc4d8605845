/* SPDX-License-Identifier: MIT */
/*
 * The one byte codec of every message this project puts on a wire: the plugin's handle
 * and handshake (src/wire.c) and the doctor's peer and sweep protocols. Big-endian,
 * explicit sizes, never a struct's bytes; a fixed string field carries its NUL.
 *
 * Two forms over the same rules: fixed offsets into a buffer the caller sized
 * (rn_put_be*, rn_get_be*, the handshake's layout), and cursors (rn_wbuf grows as it
 * writes, rn_rbuf refuses to read past its end) for variable-length messages. A cursor
 * keeps its first error (-ENOMEM, -EBADMSG) and ignores what follows, so a message is
 * written or read whole and checked once.
 */
#ifndef RN_CODEC_H
#define RN_CODEC_H

#include <stddef.h>
#include <stdint.h>

void rn_put_be16(uint8_t *p, uint16_t v);
void rn_put_be32(uint8_t *p, uint32_t v);
void rn_put_be64(uint8_t *p, uint64_t v);
uint16_t rn_get_be16(const uint8_t *p);
uint32_t rn_get_be32(const uint8_t *p);
uint64_t rn_get_be64(const uint8_t *p);
/* @s into a @size-byte field: terminated, the rest zero. */
/*
 * 1 when the @n bytes hold no control byte but tab (no NUL, newline, carriage return,
 * escape, DEL): what a peer may send as a name or a text that we print. A peer's host name
 * with "\n" and ESC forged lines in a log and on a terminal.
 */
int rn_text_clean(const uint8_t *p, size_t n);
void rn_put_field(uint8_t *p, size_t size, const char *s);
/* The field's string into @out (@size bytes): 0, or -EBADMSG without a NUL in the field. */
int rn_get_field(const uint8_t *p, size_t size, char *out);

struct rn_wbuf {
	uint8_t *p; /* malloc'ed: the caller frees it */
	size_t len, cap;
	int err;
};

/* @n bytes of @src (NULL: zeros). */
void rn_wb_put(struct rn_wbuf *b, const void *src, size_t n);
void rn_wb_u8(struct rn_wbuf *b, unsigned int v);
void rn_wb_u16(struct rn_wbuf *b, unsigned int v);
void rn_wb_u32(struct rn_wbuf *b, uint32_t v);
void rn_wb_u64(struct rn_wbuf *b, uint64_t v);
void rn_wb_field(struct rn_wbuf *b, const char *s, size_t size);
/*
 * A string of any length up to @max (at most 65535) as be16 length + bytes, no NUL: for
 * values whose size the writer's build does not fix (versions, driver names). Longer:
 * -EMSGSIZE kept, nothing written (a value is sent whole or the message fails).
 */
void rn_wb_str(struct rn_wbuf *b, const char *s, size_t max);

struct rn_rbuf {
	const uint8_t *p;
	size_t len, off;
	int err;
};

/* The next @n bytes, or NULL (and -EBADMSG kept) when fewer are left. */
const uint8_t *rn_rb_take(struct rn_rbuf *b, size_t n);
unsigned int rn_rb_u8(struct rn_rbuf *b);
unsigned int rn_rb_u16(struct rn_rbuf *b);
uint32_t rn_rb_u32(struct rn_rbuf *b);
uint64_t rn_rb_u64(struct rn_rbuf *b);
void rn_rb_bytes(struct rn_rbuf *b, void *dst, size_t n);
/* A field of @size bytes into @dst (@size bytes): it must hold its NUL, and no control
 * byte before it (rn_text_clean). */
void rn_rb_field(struct rn_rbuf *b, char *dst, size_t size);
/* A string of rn_wb_str into @dst (@size bytes with its NUL): -EBADMSG kept when it does not
 * fit or holds a NUL or another control byte; @dst is "" then. */
void rn_rb_str(struct rn_rbuf *b, char *dst, size_t size);

#endif /* RN_CODEC_H */
