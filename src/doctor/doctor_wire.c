// SPDX-License-Identifier: MIT
/*
 * The peer protocol between `roce-doctor peer` and `roce-doctor serve` (and the MPI
 * sweep's ranks): its messages as bytes. Moving them is a transport's (TCP: doctor_io.c).
 * Big-endian; fixed-size fields except a finding's texts and a probe's reason,
 * which are length-prefixed. A receiver checks the magic, the version, the type,
 * the length against the maximum and, per type, that the payload is exactly as
 * long as its counts and lengths say; fixed strings must carry their NUL, texts
 * must have none.
 *
 * Header (16 B): be32 magic "RNDR", be16 version, be16 type, be32 payload length,
 *                be32 zero. The length is checked against the type's limit
 *                (rn_dw_type_max) before any byte of the payload is taken.
 * INV:    host[64], be16 nnics, be16 caps (bit 0: the sender reads WAIT and BUSY;
 *         ignored by receivers before it), then per NIC:
 *         netdev[16] ibdev[64] be16 port, u8 family (4|6|0), u8 prefixlen, ip[16],
 *         mac[6], u8 link_up, u8 verdict, gid[16], be32 gid_index (signed),
 *         be32 mtu, be32 active_mtu (bytes), be16 nfindings, be16 0,
 *         then nfindings x FINDING (nfindings <= RN_DW_MAX_FINDINGS)
 * FINDING: be16 cause, u8 severity, u8 x (0 in version 2, 4 from 3), be32 m, be32 f,
 *         x more be32 lengths (h, p, ph, a), then the message (m bytes), the fix (f)
 *         and the x texts: the host the fix runs on ("" = the sender), the part to
 *         run first and its host, the advice; whole and without NULs, each <=
 *         RN_DW_TEXT_MAX. A cause the receiver does not know is kept as a number
 *         ("unknown cause N"). A receiver reads version 2 (x = 0) and 3.
 * CHECKS: be16 npairs, be16 0, then per pair: u8 local, u8 remote, u8 status,
 *         u8 nfindings (<= RN_DW_PAIR_FINDINGS), then nfindings x FINDING
 * PROBE_REQ: u8 server NIC, u8 client NIC, be16 0
 * PROBE_HANDLE: be32 errno (0: ok), handle[128]
 * PROBE_RESULT: be32 errno (0: the ping arrived), then the reason (the rest of the
 *         payload, < RN_DW_WHY_MAX bytes, no NUL)
 * DONE: empty
 * RESULTS (the sweep's ranks to rank 0, over MPI; never on a connection): version 4 in its
 *         header, which readers of 2 and 3 refuse; the payload is doctor_result.h's.
 * WAIT, BUSY (server, only to a client whose caps have bit 0): be16 sessions ahead,
 *         be16 0, be32 how long a session there takes (ms, 0 unknown). WAIT: queued,
 *         the inventory comes when its turn does; BUSY: not taken, the server closes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_wire.h"
#include "rn_codec.h"
#include "rn_net.h"
#include "rn_nic.h"

/* ---- inventory ------------------------------------------------------------------- */

void rn_dw_inv_clear(struct rn_dw_inv *inv)
{
	int i, k;

	for (i = 0; i < RN_DOCTOR_MAX_NICS; i++) {
		struct rn_dw_nic *n = &inv->nics[i];

		for (k = 0; n->findings && k < n->nfindings; k++)
			rn_finding_clear(&n->findings[k]);
		free(n->findings);
		n->findings = NULL;
		n->nfindings = 0;
	}
	memset(inv, 0, sizeof(*inv));
}

void rn_dw_checks_clear(struct rn_dw_checks *c)
{
	int i, k;

	for (i = 0; i < c->npairs && i < (int)RN_ARRAY_SIZE(c->pairs); i++)
		for (k = 0; k < RN_DW_PAIR_FINDINGS; k++)
			rn_finding_clear(&c->pairs[i].findings[k]);
	c->npairs = 0;
}

int rn_dw_inv_from_doctor(const struct rn_doctor *d, struct rn_dw_inv *inv)
{
	int i, k;

	rn_dw_inv_clear(inv);
	snprintf(inv->host, sizeof(inv->host), "%s", d->hostname);
	inv->nnics = d->nnics;
	for (i = 0; i < d->nnics; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];
		struct rn_dw_nic *n = &inv->nics[i];

		snprintf(n->netdev, sizeof(n->netdev), "%s", dn->nic.netdev);
		if (dn->dev)
			snprintf(n->ibdev, sizeof(n->ibdev), "%s", dn->nic.ibdev);
		n->port = dn->nic.port;
		n->ip = dn->nic.ip;
		n->prefixlen = dn->nic.prefixlen;
		memcpy(n->mac, dn->nic.mac, 6);
		n->link_up = dn->nic.link_up;
		n->verdict = dn->err ? RN_VERDICT_REFUSED : (int)dn->nic.verdict;
		n->gid = dn->nic.gid;
		n->gid_index = dn->dev ? dn->nic.gid_index : -1;
		n->mtu = dn->nic.mtu;
		n->active_mtu = rn_ibv_mtu_bytes(dn->nic.active_mtu);
		if (!dn->nic.nfindings)
			continue;
		n->findings = calloc((size_t)dn->nic.nfindings, sizeof(*n->findings));
		if (!n->findings)
			return -ENOMEM;
		for (k = 0; k < dn->nic.nfindings; k++, n->nfindings++)
			if (rn_finding_copy(&n->findings[k], &dn->nic.findings[k]))
				return -ENOMEM;
	}
	return 0;
}

static enum ibv_mtu mtu_enum(int bytes)
{
	switch (bytes) {
	case 256:
		return IBV_MTU_256;
	case 512:
		return IBV_MTU_512;
	case 1024:
		return IBV_MTU_1024;
	case 2048:
		return IBV_MTU_2048;
	case 4096:
		return IBV_MTU_4096;
	}
	return (enum ibv_mtu)0;
}

void rn_dw_peer_facts(const struct rn_dw_inv *inv, int idx, struct rn_peer_facts *out)
{
	const struct rn_dw_nic *n = &inv->nics[idx];

	memset(out, 0, sizeof(*out));
	snprintf(out->host, sizeof(out->host), "%s", inv->host);
	snprintf(out->netdev, sizeof(out->netdev), "%s", n->netdev);
	memcpy(out->mac, n->mac, 6);
	out->gid = n->gid;
	out->ip = n->ip;
	out->mtu = n->mtu;
	out->active_mtu = mtu_enum(n->active_mtu);
	/* The remote's own verdict is reported on its own; here we want our path's truth. */
	out->verdict_cause = RN_CAUSE_NONE;
}

#define FINDING_TEXTS 6

void rn_dw_put_finding(struct rn_wbuf *b, const struct rn_finding *f)
{
	const char *t[FINDING_TEXTS] = { rn_finding_msg(f),      rn_finding_fix(f),
					 rn_finding_fix_host(f), rn_finding_pre_fix(f),
					 rn_finding_pre_host(f), rn_finding_advice(f) };
	static const char over[] = "(text over the peer protocol's limit: see the sender's output)";
	uint32_t l[FINDING_TEXTS];
	int i;

	/* whole, or a note that it was not sent: never a cut text */
	for (i = 0; i < FINDING_TEXTS; i++) {
		if (strlen(t[i]) > RN_DW_TEXT_MAX)
			t[i] = over;
		l[i] = (uint32_t)strlen(t[i]);
	}
	rn_wb_u16(b, (unsigned int)f->cause);
	rn_wb_u8(b, (unsigned int)f->sev);
	rn_wb_u8(b, FINDING_TEXTS - 2);
	for (i = 0; i < FINDING_TEXTS; i++)
		rn_wb_u32(b, l[i]);
	for (i = 0; i < FINDING_TEXTS; i++)
		rn_wb_put(b, t[i], l[i]);
}

static char *get_text(struct rn_rbuf *b, uint32_t n)
{
	const uint8_t *q;
	char *s;

	if (n > RN_DW_TEXT_MAX) {
		b->err = -EBADMSG;
		return NULL;
	}
	q = rn_rb_take(b, n);
	if (!q)
		return NULL;
	/* printed as they come: no line a peer could forge, no terminal escape */
	if (!rn_text_clean(q, n)) {
		b->err = -EBADMSG;
		return NULL;
	}
	s = strndup((const char *)q, n);
	if (!s)
		b->err = -ENOMEM;
	return s;
}

void rn_dw_get_finding(struct rn_rbuf *b, struct rn_finding *f)
{
	unsigned int c = rn_rb_u16(b), s = rn_rb_u8(b), x = rn_rb_u8(b);
	uint32_t l[FINDING_TEXTS] = { 0 };
	char **t[FINDING_TEXTS] = { &f->msg,     &f->fix,      &f->fix_host,
				    &f->pre_fix, &f->pre_host, &f->advice };
	unsigned int i;

	rn_finding_clear(f);
	/* version 2 has no extra texts; a later version may send more than we know */
	if (x != 0 && x != FINDING_TEXTS - 2) {
		b->err = -EBADMSG;
		return;
	}
	for (i = 0; i < 2 + x; i++)
		l[i] = rn_rb_u32(b);
	for (i = 0; i < 2 + x; i++)
		*t[i] = get_text(b, l[i]);
	if (s > RN_SEV_FATAL)
		b->err = -EBADMSG;
	/* a newer peer's cause: kept as its number, shown as "unknown cause N" */
	f->cause = (enum rn_cause)c;
	f->sev = (enum rn_severity)(s <= RN_SEV_FATAL ? s : RN_SEV_FATAL);
}

static void put_inv(struct rn_wbuf *bp, const struct rn_dw_inv *inv)
{
	struct rn_wbuf b = *bp;
	int i, k;

	rn_wb_field(&b, inv->host, sizeof(inv->host));
	rn_wb_u16(&b, (unsigned int)inv->nnics);
	rn_wb_u16(&b, inv->caps);
	for (i = 0; i < inv->nnics; i++) {
		const struct rn_dw_nic *n = &inv->nics[i];

		rn_wb_field(&b, n->netdev, sizeof(n->netdev));
		rn_wb_field(&b, n->ibdev, sizeof(n->ibdev));
		rn_wb_u16(&b, (unsigned int)n->port);
		rn_wb_u8(&b, n->ip.family == AF_INET ? 4 : n->ip.family == AF_INET6 ? 6 : 0);
		rn_wb_u8(&b, (unsigned int)n->prefixlen);
		rn_wb_put(&b, &n->ip.v6, 16);
		rn_wb_put(&b, n->mac, 6);
		rn_wb_u8(&b, (unsigned int)!!n->link_up);
		rn_wb_u8(&b, (unsigned int)n->verdict);
		rn_wb_put(&b, n->gid.raw, 16);
		rn_wb_u32(&b, (uint32_t)n->gid_index);
		rn_wb_u32(&b, (uint32_t)n->mtu);
		rn_wb_u32(&b, (uint32_t)n->active_mtu);
		rn_wb_u16(&b, (unsigned int)n->nfindings);
		rn_wb_u16(&b, 0);
		for (k = 0; k < n->nfindings; k++)
			rn_dw_put_finding(&b, &n->findings[k]);
	}
	*bp = b;
}

int rn_dw_encode_inv(const struct rn_dw_inv *inv, uint8_t **out, size_t *len)
{
	struct rn_wbuf b = { 0 };

	put_inv(&b, inv);
	if (b.err) {
		free(b.p);
		return b.err;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

static int bad(char *why, size_t len, const char *what)
{
	snprintf(why, len, "malformed message: %s", what);
	return -EBADMSG;
}

int rn_dw_decode_inv(const struct rn_dw_msg *m, struct rn_dw_inv *inv, char *why, size_t len)
{
	struct rn_rbuf b = { m->payload, m->len, 0, 0 };
	int i, k;

	rn_dw_inv_clear(inv);
	if (m->type != RN_DW_INV)
		return bad(why, len, "expected an inventory");
	rn_rb_field(&b, inv->host, sizeof(inv->host));
	inv->nnics = (int)rn_rb_u16(&b);
	inv->caps = rn_rb_u16(&b);
	if (inv->nnics > RN_DOCTOR_MAX_NICS)
		return bad(why, len, "too many NICs");
	for (i = 0; i < inv->nnics && !b.err; i++) {
		struct rn_dw_nic *n = &inv->nics[i];
		unsigned int fam;

		rn_rb_field(&b, n->netdev, sizeof(n->netdev));
		rn_rb_field(&b, n->ibdev, sizeof(n->ibdev));
		n->port = (int)rn_rb_u16(&b);
		fam = rn_rb_u8(&b);
		n->prefixlen = (int)rn_rb_u8(&b);
		rn_rb_bytes(&b, &n->ip.v6, 16);
		n->ip.family = fam == 4 ? AF_INET : fam == 6 ? AF_INET6 : 0;
		if ((fam != 0 && fam != 4 && fam != 6) || n->prefixlen > (fam == 4 ? 32 : 128))
			return bad(why, len, "address family or prefix");
		rn_rb_bytes(&b, n->mac, 6);
		n->link_up = (int)rn_rb_u8(&b);
		n->verdict = (int)rn_rb_u8(&b);
		rn_rb_bytes(&b, n->gid.raw, 16);
		n->gid_index = (int)(int32_t)rn_rb_u32(&b);
		n->mtu = (int)rn_rb_u32(&b);
		n->active_mtu = (int)rn_rb_u32(&b);
		n->nfindings = (int)rn_rb_u16(&b);
		rn_rb_u16(&b);
		if (n->nfindings > RN_DW_MAX_FINDINGS || n->verdict > RN_VERDICT_REFUSED ||
		    n->mtu < 0 || n->mtu > 1 << 20) {
			n->nfindings = 0;
			return bad(why, len, "NIC record out of range");
		}
		if (!n->nfindings)
			continue;
		n->findings = calloc((size_t)n->nfindings, sizeof(*n->findings));
		if (!n->findings) {
			n->nfindings = 0;
			b.err = -ENOMEM;
		}
		for (k = 0; k < n->nfindings && !b.err; k++)
			rn_dw_get_finding(&b, &n->findings[k]);
	}
	if (b.err)
		return bad(why, len, "inventory shorter than its counts, or a field out of range");
	if (b.off != b.len)
		return bad(why, len, "inventory longer than its counts");
	return 0;
}

/* ---- pair checks ------------------------------------------------------------------- */

static void put_checks(struct rn_wbuf *bp, const struct rn_dw_checks *c)
{
	struct rn_wbuf b = *bp;
	int i, k;

	rn_wb_u16(&b, (unsigned int)c->npairs);
	rn_wb_u16(&b, 0);
	for (i = 0; i < c->npairs; i++) {
		const struct rn_dw_pair *p = &c->pairs[i];

		rn_wb_u8(&b, (unsigned int)p->local);
		rn_wb_u8(&b, (unsigned int)p->remote);
		rn_wb_u8(&b, (unsigned int)p->status);
		rn_wb_u8(&b, (unsigned int)p->nfindings);
		for (k = 0; k < p->nfindings; k++)
			rn_dw_put_finding(&b, &p->findings[k]);
	}
	*bp = b;
}

int rn_dw_encode_checks(const struct rn_dw_checks *c, uint8_t **out, size_t *len)
{
	struct rn_wbuf b = { 0 };

	put_checks(&b, c);
	if (b.err) {
		free(b.p);
		return b.err;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}

int rn_dw_decode_checks(const struct rn_dw_msg *m, const struct rn_dw_inv *sender,
			const struct rn_dw_inv *receiver, struct rn_dw_checks *c, char *why,
			size_t len)
{
	struct rn_rbuf b = { m->payload, m->len, 0, 0 };
	int i, k;

	rn_dw_checks_clear(c);
	memset(c, 0, sizeof(*c));
	if (m->type != RN_DW_CHECKS)
		return bad(why, len, "expected pair checks");
	c->npairs = (int)rn_rb_u16(&b);
	rn_rb_u16(&b);
	if (c->npairs > (int)RN_ARRAY_SIZE(c->pairs)) {
		c->npairs = 0;
		return bad(why, len, "too many pairs");
	}
	for (i = 0; i < c->npairs && !b.err; i++) {
		struct rn_dw_pair *p = &c->pairs[i];

		p->local = (int)rn_rb_u8(&b);
		p->remote = (int)rn_rb_u8(&b);
		p->status = (int)rn_rb_u8(&b);
		p->nfindings = (int)rn_rb_u8(&b);
		if (p->local >= sender->nnics || p->remote >= receiver->nnics || p->status > 2 ||
		    p->nfindings > (int)RN_ARRAY_SIZE(p->findings))
			return bad(why, len, "pair record out of range");
		for (k = 0; k < p->nfindings && !b.err; k++)
			rn_dw_get_finding(&b, &p->findings[k]);
	}
	if (b.err || b.off != b.len)
		return bad(why, len, "pair checks do not match their counts");
	return 0;
}

/* ---- framing ------------------------------------------------------------------------- */

size_t rn_dw_type_max(unsigned int type)
{
	switch (type) {
	case RN_DW_INV:
		return RN_DW_INV_MAX;
	case RN_DW_CHECKS:
		return RN_DW_CHECKS_MAX;
	case RN_DW_PROBE_REQ:
		return 4;
	case RN_DW_PROBE_HANDLE:
		return 4 + RN_HANDLE_SIZE;
	case RN_DW_PROBE_RESULT:
		return 4 + RN_DW_WHY_MAX - 1;
	case RN_DW_DONE:
		return 0;
	case RN_DW_WAIT:
	case RN_DW_BUSY:
		return RN_DW_WAIT_LEN;
	case RN_DW_RESULTS:
		return RN_DW_RESULTS_MAX;
	}
	return 0;
}

int rn_dw_encode_hdr(uint8_t *hdr, uint16_t type, size_t len)
{
	struct rn_wbuf h = { 0 };

	if (len > rn_dw_type_max(type))
		return -EMSGSIZE;
	rn_wb_u32(&h, RN_DW_MAGIC);
	/* RESULTS carries its own version: a reader of 2 or 3 refuses it at the header */
	rn_wb_u16(&h, type == RN_DW_RESULTS ? RN_DW_RESULTS_VERSION : RN_DW_VERSION);
	rn_wb_u16(&h, type);
	rn_wb_u32(&h, (uint32_t)len);
	rn_wb_u32(&h, 0);
	if (!h.err)
		memcpy(hdr, h.p, RN_DW_HDR_LEN);
	free(h.p);
	return h.err;
}

/* The magic, and the version within [@min, @max]: 0, -EBADMSG or -EPROTO with @why. */
static int hdr_check(struct rn_rbuf *b, unsigned int min, unsigned int max, unsigned int *type,
		     uint32_t *len, char *why, size_t why_len)
{
	uint32_t magic = rn_rb_u32(b);
	unsigned int version = rn_rb_u16(b);

	*type = rn_rb_u16(b);
	*len = rn_rb_u32(b);
	if (magic != RN_DW_MAGIC) {
		snprintf(why, why_len, "not a roce-doctor message (bad magic 0x%08x)", magic);
		return -EBADMSG;
	}
	if (version < min || version > max) {
		snprintf(why, why_len, "protocol version %u, this roce-doctor speaks %u to %u",
			 version, min, max);
		return -EPROTO;
	}
	return 0;
}

int rn_dw_decode_hdr(const uint8_t *hdr, struct rn_dw_msg *m, char *why, size_t why_len)
{
	static const char *const names[] = { "",
					     "an inventory",
					     "pair checks",
					     "a probe request",
					     "a probe handle",
					     "a probe result",
					     "DONE",
					     "WAIT",
					     "BUSY" };
	struct rn_rbuf b = { hdr, RN_DW_HDR_LEN, 0, 0 };
	uint32_t len;
	unsigned int type;
	int ret;

	memset(m, 0, sizeof(*m));
	ret = hdr_check(&b, RN_DW_VERSION_MIN, RN_DW_VERSION, &type, &len, why, why_len);
	if (ret)
		return ret;
	/* RESULTS is the sweep's, never a connection's (rn_dw_decode_results_hdr) */
	if (type < RN_DW_INV || type > RN_DW_BUSY || rn_rb_u32(&b)) {
		snprintf(why, why_len, "unknown message type %u", type);
		return -EBADMSG;
	}
	/* before a byte is allocated: a header alone cannot make a receiver hold 16 MiB */
	if (len > rn_dw_type_max(type)) {
		snprintf(why, why_len, "%s of %u bytes exceeds its limit of %zu bytes", names[type],
			 len, rn_dw_type_max(type));
		return -EMSGSIZE;
	}
	m->type = (uint16_t)type;
	m->len = len;
	return 0;
}

int rn_dw_decode_results_hdr(const uint8_t *buf, size_t n, uint32_t *len, char *why, size_t why_len)
{
	struct rn_rbuf b = { buf, n, 0, 0 };
	unsigned int type;
	int ret;

	if (n < RN_DW_HDR_LEN) {
		snprintf(why, why_len, "not a roce-doctor message (%zu bytes)", n);
		return -EBADMSG;
	}
	ret = hdr_check(&b, RN_DW_RESULTS_VERSION, RN_DW_RESULTS_VERSION, &type, len, why, why_len);
	if (ret)
		return ret;
	if (type != RN_DW_RESULTS || rn_rb_u32(&b) || *len != n - RN_DW_HDR_LEN) {
		snprintf(why, why_len, "not pair results (type %u, %u of %zu bytes)", type, *len,
			 n - RN_DW_HDR_LEN);
		return -EBADMSG;
	}
	return 0;
}

/* ---- a message as its bytes arrive (the server's non-blocking reads) ------------------- */

void rn_dw_reader_init(struct rn_dw_reader *r)
{
	memset(r, 0, sizeof(*r));
}

void rn_dw_reader_free(struct rn_dw_reader *r)
{
	rn_dw_msg_free(&r->m);
	r->got = 0;
}

uint8_t *rn_dw_reader_room(struct rn_dw_reader *r, size_t *n)
{
	if (r->got < RN_DW_HDR_LEN) {
		*n = RN_DW_HDR_LEN - r->got;
		return r->hdr + r->got;
	}
	*n = RN_DW_HDR_LEN + r->m.len - r->got;
	return r->m.payload + (r->got - RN_DW_HDR_LEN);
}

/* @n more bytes are in place: 1 when the message is whole, 0 for more, or the error. */
static int reader_advance(struct rn_dw_reader *r, size_t n, char *why, size_t len)
{
	int ret;

	r->got += n;
	if (r->got == RN_DW_HDR_LEN && !r->m.payload) {
		ret = rn_dw_decode_hdr(r->hdr, &r->m, why, len);
		if (!ret && r->admit)
			ret = r->admit(r, &r->m, why, len);
		if (ret) {
			r->m.len = 0; /* nothing was taken: rn_dw_reader_free has nothing to free */
			return ret;
		}
		/* the payload's room is taken only once a valid, admitted header promised it */
		r->m.payload = malloc(r->m.len ? r->m.len : 1);
		if (!r->m.payload) {
			snprintf(why, len, "out of memory");
			return -ENOMEM;
		}
	}
	return r->m.payload && r->got == RN_DW_HDR_LEN + r->m.len;
}

int rn_dw_reader_took(struct rn_dw_reader *r, size_t n, struct rn_dw_msg *out, char *why,
		      size_t len)
{
	int ret = reader_advance(r, n, why, len);

	if (ret < 0)
		return ret;
	if (!ret)
		return -EAGAIN;
	*out = r->m;
	memset(&r->m, 0, sizeof(r->m));
	r->got = 0;
	return 0;
}

int rn_dw_reader_feed(struct rn_dw_reader *r, const uint8_t *p, size_t n, size_t *used,
		      struct rn_dw_msg *out, char *why, size_t len)
{
	*used = 0;
	while (*used < n) {
		size_t room, k;
		uint8_t *dst = rn_dw_reader_room(r, &room);
		int ret;

		k = RN_MIN(room, n - *used);
		memcpy(dst, p + *used, k);
		*used += k;
		ret = rn_dw_reader_took(r, k, out, why, len);
		if (ret != -EAGAIN)
			return ret;
	}
	return -EAGAIN;
}

void rn_dw_msg_free(struct rn_dw_msg *m)
{
	free(m->payload);
	m->payload = NULL;
	m->len = 0;
}

void rn_dw_put_wait(uint8_t *p, int ahead, double session_ms)
{
	rn_put_be16(p, (uint16_t)RN_MIN(RN_MAX(ahead, 0), 65535));
	rn_put_be16(p + 2, 0);
	rn_put_be32(p + 4, (uint32_t)RN_MIN(RN_MAX(session_ms, 0), 4e9));
}

int rn_dw_get_wait(const struct rn_dw_msg *m, int *ahead, double *session_ms)
{
	if ((m->type != RN_DW_WAIT && m->type != RN_DW_BUSY) || m->len != RN_DW_WAIT_LEN)
		return -EBADMSG;
	*ahead = rn_get_be16(m->payload);
	*session_ms = rn_get_be32(m->payload + 4);
	return 0;
}
