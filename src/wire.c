// SPDX-License-Identifier: MIT
/*
 * Handle and handshake encoding (layout in rn_wire.h). Written with explicit
 * byte offsets (the byte codec, rn_codec.h) rather than packed structs so that the
 * format does not depend on the compiler or the host's endianness.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_codec.h"
#include "rn_compiler.h"
#include "rn_net.h"
#include "rn_wire.h"

_Static_assert(RN_HELLO_MAX_LEN <= RN_WIRE_MAX_PAYLOAD, "hello fits");
_Static_assert(RN_HANDLE_PUBLIC + 16 <= RN_HANDLE_SIZE, "handle private area fits");

int rn_handle_encode(const struct rn_handle_info *h, void *buf, size_t len)
{
	uint8_t *p = buf;

	if (len < RN_HANDLE_SIZE)
		return -EINVAL;
	memset(p, 0, RN_HANDLE_SIZE);
	rn_put_be32(p, RN_HANDLE_MAGIC);
	rn_put_be16(p + 4, RN_WIRE_VERSION);
	if (h->addr.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)&h->addr;

		p[6] = 4;
		memcpy(p + 8, &in->sin_port, 2); /* already network order */
		memcpy(p + 12, &in->sin_addr, 4);
	} else if (h->addr.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)&h->addr;

		p[6] = 6;
		memcpy(p + 8, &in6->sin6_port, 2);
		memcpy(p + 12, &in6->sin6_addr, 16);
	} else {
		return -EINVAL;
	}
	rn_put_be64(p + 28, h->nonce);
	p[36] = (uint8_t)(h->members > 0 ? h->members : 1);
	return 0;
}

int rn_handle_decode(const void *buf, size_t len, struct rn_handle_info *h)
{
	const uint8_t *p = buf;
	uint16_t port;

	if (len < RN_HANDLE_PUBLIC)
		return -EINVAL;
	if (rn_get_be32(p) != RN_HANDLE_MAGIC)
		return -EBADMSG;
	/* an older listener's data path cannot talk to ours (see RN_WIRE_HELLO_MIN) */
	if (rn_get_be16(p + 4) < RN_WIRE_HELLO_MIN || rn_get_be16(p + 4) > RN_WIRE_VERSION)
		return -EPROTO;
	port = rn_get_be16(p + 8);
	if (!port)
		return -EBADMSG;
	memset(h, 0, sizeof(*h));
	if (p[6] == 4) {
		struct sockaddr_in *in = (void *)&h->addr;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		memcpy(&in->sin_addr, p + 12, 4);
	} else if (p[6] == 6) {
		struct sockaddr_in6 *in6 = (void *)&h->addr;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		memcpy(&in6->sin6_addr, p + 12, 16);
	} else {
		return -EBADMSG;
	}
	h->nonce = rn_get_be64(p + 28);
	h->members = p[36];
	if (h->members < 1 || h->members > RN_VNIC_MAX)
		return -EBADMSG;
	return 0;
}

static void put_hdr(uint8_t *buf, uint16_t type, uint32_t len, uint64_t nonce)
{
	rn_put_be32(buf, RN_WIRE_MAGIC);
	rn_put_be16(buf + 4, RN_WIRE_VERSION);
	rn_put_be16(buf + 6, type);
	rn_put_be32(buf + 8, len);
	rn_put_be32(buf + 12, 0);
	rn_put_be64(buf + 16, nonce);
}

/* A member's facts: 128 bytes at @p (host, netdev, MAC, GID, IP, MTUs, verdict). */
static void put_facts(uint8_t *p, const struct rn_peer_facts *f)
{
	rn_put_field(p, 64, f->host);
	rn_put_field(p + 64, 16, f->netdev);
	memcpy(p + 80, f->mac, 6);
	memcpy(p + 88, f->gid.raw, 16);
	if (f->ip.family == AF_INET) {
		p[104] = 4;
		memcpy(p + 108, &f->ip.v4, 4);
	} else if (f->ip.family == AF_INET6) {
		p[104] = 6;
		memcpy(p + 108, &f->ip.v6, 16);
	}
	p[105] = (uint8_t)f->active_mtu;
	rn_put_be16(p + 106, f->verdict_cause);
	rn_put_be32(p + 124, (uint32_t)f->mtu);
}

static int get_facts(const uint8_t *p, struct rn_peer_facts *f)
{
	if (rn_get_field(p, 64, f->host) || rn_get_field(p + 64, 16, f->netdev))
		return -EBADMSG;
	memcpy(f->mac, p + 80, 6);
	memcpy(f->gid.raw, p + 88, 16);
	switch (p[104]) {
	case 0:
		break;
	case 4:
		f->ip.family = AF_INET;
		memcpy(&f->ip.v4, p + 108, 4);
		break;
	case 6:
		f->ip.family = AF_INET6;
		memcpy(&f->ip.v6, p + 108, 16);
		break;
	default:
		return -EBADMSG;
	}
	if (p[105] < IBV_MTU_256 || p[105] > IBV_MTU_4096)
		return -EBADMSG;
	f->active_mtu = (enum ibv_mtu)p[105];
	/* any number: a newer peer's cause is shown as "unknown cause N" */
	f->verdict_cause = rn_get_be16(p + 106);
	f->mtu = (int)rn_get_be32(p + 124);
	return f->mtu < 0 ? -EBADMSG : 0;
}

static size_t hello_len(int members, int nqps)
{
	return RN_HELLO_FIXED_LEN + RN_HELLO_MEMBER_LEN * (size_t)(members - 1) + 4 * (size_t)nqps;
}

static size_t spare_len(int nqps)
{
	return RN_HELLO_SPARE_LEN + 4 * (size_t)nqps;
}

size_t rn_msg_encode_hello(uint8_t *buf, uint64_t nonce, const struct rn_hello *m)
{
	uint8_t *p = buf + RN_WIRE_HDR_LEN, *q;
	int members = m->members > 0 ? RN_MIN(m->members, RN_VNIC_MAX) : 1;
	int spares = RN_MAX(0, RN_MIN(m->spares, RN_SPARES_MAX)), i, j;
	uint32_t len = (uint32_t)(hello_len(members, m->nqps) + spares * spare_len(m->nqps));

	put_hdr(buf, RN_MSG_HELLO, len, nonce);
	memset(p, 0, len);
	p[0] = (uint8_t)m->role;
	p[1] = (uint8_t)m->nqps;
	p[2] = (uint8_t)m->tc;
	p[3] = (uint8_t)m->sl;
	put_facts(p + 4, &m->facts);
	rn_put_be64(p + 132, m->fifo_addr);
	rn_put_be32(p + 140, m->fifo_rkey);
	rn_put_be64(p + 144, m->sizes_addr);
	rn_put_be32(p + 152, m->sizes_rkey);
	p[156] = (uint8_t)members;
	p[157] = (uint8_t)spares;
	for (i = 1; i < members; i++) {
		q = p + RN_HELLO_FIXED_LEN + RN_HELLO_MEMBER_LEN * (i - 1);
		put_facts(q, &m->more[i - 1].facts);
		rn_put_be32(q + 128, m->more[i - 1].fifo_rkey);
		rn_put_be32(q + 132, m->more[i - 1].sizes_rkey);
	}
	q = p + hello_len(members, 0);
	for (i = 0; i < m->nqps; i++)
		rn_put_be32(q + 4 * i, m->qpn[i]);
	for (j = 0; j < spares; j++) {
		q = p + hello_len(members, m->nqps) + (size_t)j * spare_len(m->nqps);
		put_facts(q, &m->spare[j].facts);
		rn_put_be32(q + 128, m->spare[j].ctrl_rkey);
		for (i = 0; i < m->nqps; i++)
			rn_put_be32(q + RN_HELLO_SPARE_LEN + 4 * i, m->spare[j].qpn[i]);
	}
	return RN_WIRE_HDR_LEN + len;
}

/* The limit of the @i-th text: the message and the fix are long, the rest short. */
static uint32_t text_max(int i)
{
	return i < 2 ? RN_VERDICT_TEXT_MAX : RN_VERDICT_AUX_MAX;
}

/* @text, or a note in its place when it is over the limit: whole, or not at all. */
static const char *verdict_text(const char *text, uint32_t max, char *note, size_t len)
{
	size_t n = strlen(text ? text : "");

	if (n <= max)
		return text ? text : "";
	snprintf(note, len,
		 "(%zu bytes, over the handshake's limit of %u: the sender's log "
		 "has the whole text)",
		 n, max);
	return note;
}

size_t rn_msg_encode_verdict(uint8_t *buf, uint64_t nonce, const struct rn_verdict_msg *m)
{
	uint8_t *p = buf + RN_WIRE_HDR_LEN;
	const struct rn_finding *f = &m->finding;
	char notes[RN_VERDICT_NTEXTS][128];
	const char *t[RN_VERDICT_NTEXTS] = { f->msg,     f->fix,      f->fix_host,
					     f->pre_fix, f->pre_host, f->advice };
	uint32_t l[RN_VERDICT_NTEXTS], len = RN_VERDICT_FIXED_LEN + RN_VERDICT_EXT_LEN, off;
	int i;

	for (i = 0; i < RN_VERDICT_NTEXTS; i++) {
		t[i] = verdict_text(t[i], text_max(i), notes[i], sizeof(notes[i]));
		l[i] = (uint32_t)strlen(t[i]);
		len += l[i];
	}
	put_hdr(buf, RN_MSG_VERDICT, len, nonce);
	rn_put_be16(p, (uint16_t)f->cause);
	p[2] = (uint8_t)f->sev;
	p[3] = (m->refused ? RN_VERDICT_FLAG_REFUSED : 0) | RN_VERDICT_FLAG_EXT;
	rn_put_be32(p + 4, l[0]);
	rn_put_be32(p + 8, l[1]);
	for (i = 2; i < RN_VERDICT_NTEXTS; i++)
		rn_put_be32(p + RN_VERDICT_FIXED_LEN + 4 * (i - 2), l[i]);
	off = RN_VERDICT_FIXED_LEN + RN_VERDICT_EXT_LEN;
	for (i = 0; i < RN_VERDICT_NTEXTS; i++) {
		memcpy(p + off, t[i], l[i]);
		off += l[i];
	}
	return RN_WIRE_HDR_LEN + len;
}

size_t rn_msg_encode_ready(uint8_t *buf, uint64_t nonce)
{
	put_hdr(buf, RN_MSG_READY, 0, nonce);
	return RN_WIRE_HDR_LEN;
}

size_t rn_msg_encode_ready_mask(uint8_t *buf, uint64_t nonce, uint32_t spares_ok)
{
	put_hdr(buf, RN_MSG_READY, 4, nonce);
	rn_put_be32(buf + RN_WIRE_HDR_LEN, spares_ok);
	return RN_WIRE_HDR_LEN + 4;
}

int rn_msg_decode_ready(const uint8_t *p, size_t len, uint32_t *spares_ok)
{
	*spares_ok = 0;
	if (len == 0)
		return 0;
	if (len != 4)
		return -EBADMSG;
	*spares_ok = rn_get_be32(p);
	/* a bit for a spare that cannot exist is a broken peer, not a choice */
	return *spares_ok >> RN_SPARES_MAX ? -EBADMSG : 0;
}

int rn_msg_decode_hdr(const uint8_t *buf, size_t len, struct rn_msg_hdr *h)
{
	uint32_t plen;

	if (len < RN_WIRE_HDR_LEN || rn_get_be32(buf) != RN_WIRE_MAGIC)
		return -EBADMSG;
	if (rn_get_be16(buf + 4) < RN_WIRE_VERSION_MIN || rn_get_be16(buf + 4) > RN_WIRE_VERSION)
		return -EPROTO;
	if (rn_get_be32(buf + 12) != 0)
		return -EBADMSG;
	plen = rn_get_be32(buf + 8);
	if (plen > RN_WIRE_MAX_PAYLOAD)
		return -EMSGSIZE;
	h->type = rn_get_be16(buf + 6);
	h->len = plen;
	h->nonce = rn_get_be64(buf + 16);
	switch (h->type) {
	case RN_MSG_HELLO:
		if (rn_get_be16(buf + 4) < RN_WIRE_HELLO_MIN)
			return -EPROTO; /* another layout, and another data path after it */
		/* the exact length needs the payload's counts: rn_msg_decode_hello checks it */
		if (plen < RN_HELLO_FIXED_LEN + 4 || plen > RN_HELLO_MAX_LEN || plen % 4)
			return -EBADMSG;
		return 0;
	case RN_MSG_VERDICT:
		return plen >= RN_VERDICT_FIXED_LEN ? 0 : -EBADMSG;
	case RN_MSG_READY:
		return plen == 0 || plen == 4 ? 0 : -EBADMSG;
	default:
		return -EBADMSG;
	}
}

int rn_msg_decode_hello(const uint8_t *p, size_t len, struct rn_hello *m)
{
	const uint8_t *q;
	int i, j;

	memset(m, 0, sizeof(*m));
	if (len < RN_HELLO_FIXED_LEN)
		return -EBADMSG;
	m->role = p[0];
	m->nqps = p[1];
	m->tc = p[2];
	m->sl = p[3];
	m->members = p[156];
	m->spares = p[157];
	/* every member carries at least one QP on each side (QP q is member q % members) */
	if ((m->role != RN_ROLE_SEND && m->role != RN_ROLE_RECV) || m->nqps < 1 ||
	    m->nqps > RN_MAX_QPS || m->members < 1 || m->members > RN_VNIC_MAX ||
	    m->nqps < m->members || m->spares > RN_SPARES_MAX || p[158] || p[159] ||
	    len != hello_len(m->members, m->nqps) + (size_t)m->spares * spare_len(m->nqps) ||
	    m->sl > 15)
		return -EBADMSG;
	if (get_facts(p + 4, &m->facts))
		return -EBADMSG;
	m->fifo_addr = rn_get_be64(p + 132);
	m->fifo_rkey = rn_get_be32(p + 140);
	m->sizes_addr = rn_get_be64(p + 144);
	m->sizes_rkey = rn_get_be32(p + 152);
	for (i = 1; i < m->members; i++) {
		q = p + RN_HELLO_FIXED_LEN + RN_HELLO_MEMBER_LEN * (i - 1);
		if (get_facts(q, &m->more[i - 1].facts))
			return -EBADMSG;
		m->more[i - 1].fifo_rkey = rn_get_be32(q + 128);
		m->more[i - 1].sizes_rkey = rn_get_be32(q + 132);
	}
	q = p + hello_len(m->members, 0);
	for (i = 0; i < m->nqps; i++) {
		m->qpn[i] = rn_get_be32(q + 4 * i);
		if (!m->qpn[i] || m->qpn[i] > 0xffffff) /* QP numbers are 24 bits */
			return -EBADMSG;
	}
	for (j = 0; j < m->spares; j++) {
		q = p + hello_len(m->members, m->nqps) + (size_t)j * spare_len(m->nqps);
		if (get_facts(q, &m->spare[j].facts))
			return -EBADMSG;
		m->spare[j].ctrl_rkey = rn_get_be32(q + 128);
		for (i = 0; i < m->nqps; i++) {
			m->spare[j].qpn[i] = rn_get_be32(q + RN_HELLO_SPARE_LEN + 4 * i);
			if (!m->spare[j].qpn[i] || m->spare[j].qpn[i] > 0xffffff)
				return -EBADMSG;
		}
	}
	return 0;
}

void rn_verdict_msg_clear(struct rn_verdict_msg *m)
{
	rn_finding_clear(&m->finding);
	m->refused = 0;
}

/* A text field: no NUL inside (it would hide the rest). */
static int text_ok(const uint8_t *p, uint32_t n)
{
	return !memchr(p, 0, n);
}

int rn_msg_decode_verdict(const uint8_t *p, size_t len, struct rn_verdict_msg *m)
{
	uint32_t l[RN_VERDICT_NTEXTS] = { 0 };
	char *t[RN_VERDICT_NTEXTS] = { 0 };
	size_t off = RN_VERDICT_FIXED_LEN, want;
	int i, n = 2, ret = -EBADMSG;

	rn_verdict_msg_clear(m);
	if (len < RN_VERDICT_FIXED_LEN || p[2] > RN_SEV_FATAL ||
	    (p[3] & ~(RN_VERDICT_FLAG_REFUSED | RN_VERDICT_FLAG_EXT)))
		return -EBADMSG;
	/* version 2 sends the message and the fix only; 3 says where and what else */
	if (p[3] & RN_VERDICT_FLAG_EXT) {
		if (len < RN_VERDICT_FIXED_LEN + RN_VERDICT_EXT_LEN)
			return -EBADMSG;
		n = RN_VERDICT_NTEXTS;
		for (i = 2; i < n; i++)
			l[i] = rn_get_be32(p + RN_VERDICT_FIXED_LEN + 4 * (i - 2));
		off += RN_VERDICT_EXT_LEN;
	}
	l[0] = rn_get_be32(p + 4);
	l[1] = rn_get_be32(p + 8);
	want = off;
	for (i = 0; i < n; i++) {
		if (l[i] > text_max(i))
			return -EBADMSG;
		want += l[i];
	}
	if (len != want)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		if (!text_ok(p + off, l[i]))
			goto out;
		t[i] = strndup((const char *)p + off, l[i]);
		if (!t[i]) {
			ret = -ENOMEM;
			goto out;
		}
		off += l[i];
	}
	m->finding.cause = (enum rn_cause)rn_get_be16(p);
	m->finding.sev = (enum rn_severity)p[2];
	m->finding.msg = t[0];
	m->finding.fix = t[1];
	m->finding.fix_host = t[2];
	m->finding.pre_fix = t[3];
	m->finding.pre_host = t[4];
	m->finding.advice = t[5];
	m->refused = p[3] & RN_VERDICT_FLAG_REFUSED;
	return 0;
out:
	for (i = 0; i < n; i++)
		free(t[i]);
	return ret;
}

const char *rn_sockaddr_str(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(in->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
	} else {
		snprintf(buf, len, "(none)");
	}
	return buf;
}
