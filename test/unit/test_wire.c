// SPDX-License-Identifier: MIT
/* Handle and handshake encodings: round trips and every rejection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rn_codec.h"
#include "rn_net.h"
#include "rn_wire.h"

static void handle_roundtrip(void **state)
{
	uint8_t buf[RN_HANDLE_SIZE];
	struct rn_handle_info in, out;
	struct sockaddr_in *a = (void *)&in.addr;
	struct sockaddr_in6 *a6 = (void *)&in.addr;

	memset(buf, 0xaa, sizeof(buf));
	memset(&in, 0, sizeof(in));
	a->sin_family = AF_INET;
	a->sin_port = htons(41000);
	inet_pton(AF_INET, "198.18.0.7", &a->sin_addr);
	in.nonce = 0x0123456789abcdefull;
	assert_int_equal(rn_handle_encode(&in, buf, sizeof(buf)), 0);
	/* big-endian on the wire, private area zeroed */
	assert_int_equal(buf[0], 'R');
	assert_int_equal(buf[3], '1');
	assert_int_equal(buf[8], 41000 >> 8);
	assert_int_equal(buf[28], 0x01);
	for (int i = RN_HANDLE_PUBLIC; i < RN_HANDLE_SIZE; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(rn_handle_decode(buf, sizeof(buf), &out), 0);
	assert_memory_equal(&out.addr, &in.addr, sizeof(struct sockaddr_in));
	assert_true(out.nonce == in.nonce);

	memset(&in, 0, sizeof(in));
	a6->sin6_family = AF_INET6;
	a6->sin6_port = htons(9);
	inet_pton(AF_INET6, "fd00::1", &a6->sin6_addr);
	assert_int_equal(rn_handle_encode(&in, buf, sizeof(buf)), 0);
	assert_int_equal(rn_handle_decode(buf, sizeof(buf), &out), 0);
	assert_memory_equal(&out.addr, &in.addr, sizeof(struct sockaddr_in6));
}

static void handle_rejects(void **state)
{
	uint8_t buf[RN_HANDLE_SIZE], bad[RN_HANDLE_SIZE];
	struct rn_handle_info in, out;
	struct sockaddr_in *a = (void *)&in.addr;

	memset(&in, 0, sizeof(in));
	a->sin_family = AF_INET;
	a->sin_port = htons(1);
	assert_int_equal(rn_handle_encode(&in, buf, sizeof(buf)), 0);
	assert_int_equal(rn_handle_encode(&in, buf, 64), -EINVAL);
	assert_int_equal(rn_handle_decode(buf, 10, &out), -EINVAL);
	memcpy(bad, buf, sizeof(bad));
	bad[0] ^= 1;
	assert_int_equal(rn_handle_decode(bad, sizeof(bad), &out), -EBADMSG);
	memcpy(bad, buf, sizeof(bad));
	bad[5] = RN_WIRE_VERSION + 1;
	assert_int_equal(rn_handle_decode(bad, sizeof(bad), &out), -EPROTO);
	bad[5] = 8; /* a listener whose failover mailboxes lie 256 bytes apart */
	assert_int_equal(rn_handle_decode(bad, sizeof(bad), &out), -EPROTO);
	bad[5] = 3; /* a listener from before NIC fusion: its data path differs (CTS entries) */
	assert_int_equal(rn_handle_decode(bad, sizeof(bad), &out), -EPROTO);
	bad[5] = RN_WIRE_HELLO_MIN;
	assert_int_equal(rn_handle_decode(bad, sizeof(bad), &out), 0);
	memcpy(bad, buf, sizeof(bad));
	bad[6] = 5;
	assert_int_equal(rn_handle_decode(bad, sizeof(bad), &out), -EBADMSG);
	memcpy(bad, buf, sizeof(bad));
	bad[8] = bad[9] = 0;
	assert_int_equal(rn_handle_decode(bad, sizeof(bad), &out), -EBADMSG);
	memset(&in, 0, sizeof(in));
	assert_int_equal(rn_handle_encode(&in, buf, sizeof(buf)), -EINVAL);
}

static void fill_hello(struct rn_hello *m, int nqps)
{
	memset(m, 0, sizeof(*m));
	m->role = RN_ROLE_SEND;
	m->nqps = nqps;
	m->tc = 106;
	m->sl = 3;
	strcpy(m->facts.host, "node-a");
	strcpy(m->facts.netdev, "eth1");
	m->facts.mac[0] = 0x52;
	m->facts.mac[5] = 0x07;
	m->facts.gid.raw[15] = 9;
	m->facts.ip.family = AF_INET;
	inet_pton(AF_INET, "198.18.0.9", &m->facts.ip.v4);
	m->facts.mtu = 9000;
	m->facts.active_mtu = IBV_MTU_4096;
	m->facts.verdict_cause = RN_CAUSE_ARP_FLUX;
	m->fifo_addr = 0x7f0000001000ull;
	m->fifo_rkey = 0xabcdef;
	m->sizes_addr = 0x55;
	m->sizes_rkey = 0x66;
	for (int i = 0; i < nqps; i++)
		m->qpn[i] = 0x100 + (uint32_t)i;
}

/* Version 5: spare NIC pairs after the QP numbers, each with its NIC, rkey and QPs. */
static void hello_spares_roundtrip(void **state)
{
	uint8_t buf[RN_WIRE_MAX_MSG];
	struct rn_msg_hdr h;
	struct rn_hello m, out;
	size_t len, base;
	int j, q;

	(void)state;
	fill_hello(&m, 4);
	base = rn_msg_encode_hello(buf, 9, &m);
	m.spares = RN_SPARES_MAX;
	for (j = 0; j < m.spares; j++) {
		m.spare[j].facts = m.facts;
		snprintf(m.spare[j].facts.netdev, sizeof(m.spare[j].facts.netdev), "eth%d", j + 2);
		m.spare[j].ctrl_rkey = 0x1000u + (uint32_t)j;
		for (q = 0; q < m.nqps; q++)
			m.spare[j].qpn[q] = 0x200u + 16u * (uint32_t)j + (uint32_t)q;
	}
	len = rn_msg_encode_hello(buf, 9, &m);
	assert_int_equal(len, base + (size_t)RN_SPARES_MAX * (RN_HELLO_SPARE_LEN + 4 * 4));
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_int_equal(out.spares, RN_SPARES_MAX);
	for (j = 0; j < out.spares; j++) {
		char want[16];

		snprintf(want, sizeof(want), "eth%d", j + 2);
		assert_string_equal(out.spare[j].facts.netdev, want);
		assert_int_equal(out.spare[j].ctrl_rkey, 0x1000u + (uint32_t)j);
		for (q = 0; q < out.nqps; q++)
			assert_int_equal(out.spare[j].qpn[q],
					 0x200u + 16u * (uint32_t)j + (uint32_t)q);
	}
	/* a count the length does not carry, one over the maximum, a QP number of 0: refused */
	buf[RN_WIRE_HDR_LEN + 157] = RN_SPARES_MAX - 1;
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	buf[RN_WIRE_HDR_LEN + 157] = RN_SPARES_MAX + 1;
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	buf[RN_WIRE_HDR_LEN + 157] = RN_SPARES_MAX;
	memset(buf + len - 4, 0, 4);
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
}

/* READY: empty (no spares), or the connector's verdicts on them as a mask. */
static void ready_mask(void **state)
{
	uint8_t buf[RN_WIRE_MAX_MSG];
	struct rn_msg_hdr h;
	uint32_t m;
	size_t len;

	(void)state;
	len = rn_msg_encode_ready_mask(buf, 5, 0x5);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(h.len, 4);
	assert_int_equal(rn_msg_decode_ready(buf + RN_WIRE_HDR_LEN, h.len, &m), 0);
	assert_int_equal(m, 0x5);
	assert_int_equal(rn_msg_decode_ready(buf, 0, &m), 0);
	assert_int_equal(m, 0);
	assert_int_equal(rn_msg_decode_ready(buf + RN_WIRE_HDR_LEN, 3, &m), -EBADMSG);
	rn_put_be32(buf + RN_WIRE_HDR_LEN, 1u << RN_SPARES_MAX); /* a spare that cannot exist */
	assert_int_equal(rn_msg_decode_ready(buf + RN_WIRE_HDR_LEN, 4, &m), -EBADMSG);
	rn_put_be32(buf + 8, 5);                                 /* READY of 5 bytes */
	assert_int_equal(rn_msg_decode_hdr(buf, len + 1, &h), -EBADMSG);
}

static void hello_roundtrip(void **state)
{
	uint8_t buf[RN_WIRE_MAX_MSG];
	struct rn_msg_hdr h;
	struct rn_hello m, out;
	size_t len;

	fill_hello(&m, 4);
	len = rn_msg_encode_hello(buf, 77, &m);
	assert_int_equal(len, RN_WIRE_HDR_LEN + RN_HELLO_FIXED_LEN + 16);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(h.type, RN_MSG_HELLO);
	assert_true(h.nonce == 77);
	assert_int_equal(h.len, len - RN_WIRE_HDR_LEN);
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_string_equal(out.facts.host, "node-a");
	assert_string_equal(out.facts.netdev, "eth1");
	assert_memory_equal(out.facts.mac, m.facts.mac, 6);
	assert_memory_equal(&out.facts.gid, &m.facts.gid, 16);
	assert_int_equal(out.facts.ip.family, AF_INET);
	assert_true(out.facts.ip.v4.s_addr == m.facts.ip.v4.s_addr);
	assert_int_equal(out.facts.mtu, 9000);
	assert_int_equal(out.facts.active_mtu, IBV_MTU_4096);
	assert_int_equal(out.facts.verdict_cause, RN_CAUSE_ARP_FLUX);
	assert_int_equal(out.tc, 106);
	assert_int_equal(out.sl, 3);
	assert_int_equal(out.nqps, 4);
	assert_true(out.fifo_addr == m.fifo_addr);
	assert_int_equal(out.fifo_rkey, m.fifo_rkey);
	assert_true(out.sizes_addr == 0x55);
	assert_int_equal(out.qpn[3], 0x103);
}

/* A vNIC end: a block per further member (its facts and rkeys), then the QPs. */
static void hello_vnic_roundtrip(void **state)
{
	uint8_t buf[RN_WIRE_MAX_MSG];
	struct rn_msg_hdr h;
	struct rn_hello m, out;
	size_t len;

	fill_hello(&m, 4);
	m.members = 3;
	m.more[0].facts = m.facts;
	strcpy(m.more[0].facts.netdev, "eth2");
	m.more[0].fifo_rkey = 0x1111;
	m.more[0].sizes_rkey = 0x2222;
	m.more[1].facts = m.facts;
	m.more[1].facts.gid.raw[15] = 10;
	m.more[1].fifo_rkey = 0x3333;
	len = rn_msg_encode_hello(buf, 5, &m);
	assert_int_equal(len, RN_WIRE_HDR_LEN + RN_HELLO_FIXED_LEN + 2 * RN_HELLO_MEMBER_LEN + 16);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_int_equal(out.members, 3);
	assert_string_equal(out.more[0].facts.netdev, "eth2");
	assert_int_equal(out.more[0].fifo_rkey, 0x1111);
	assert_int_equal(out.more[0].sizes_rkey, 0x2222);
	assert_int_equal(out.more[1].facts.gid.raw[15], 10);
	assert_int_equal(out.more[1].fifo_rkey, 0x3333);
	assert_int_equal(out.fifo_rkey, m.fifo_rkey);
	assert_int_equal(out.qpn[3], 0x103);
	/* fewer QPs than members: some member would carry nothing */
	m.nqps = 2;
	len = rn_msg_encode_hello(buf, 5, &m);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	/* a member count that does not fit the length */
	m.nqps = 4;
	len = rn_msg_encode_hello(buf, 5, &m);
	buf[RN_WIRE_HDR_LEN + 156] = 2;
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	buf[RN_WIRE_HDR_LEN + 156] = 0;
	assert_int_equal(rn_msg_decode_hello(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
}

/* The listener's member count travels in the handle; a version-2 peer is told apart. */
static void handle_members_and_old_peer(void **state)
{
	uint8_t buf[RN_HANDLE_SIZE];
	struct rn_handle_info in, out;
	struct sockaddr_in *a = (void *)&in.addr;
	struct rn_msg_hdr h;
	uint8_t msg[RN_WIRE_MAX_MSG];
	size_t len;

	memset(&in, 0, sizeof(in));
	a->sin_family = AF_INET;
	a->sin_port = htons(7);
	assert_int_equal(rn_handle_encode(&in, buf, sizeof(buf)), 0);
	assert_int_equal(rn_handle_decode(buf, sizeof(buf), &out), 0);
	assert_int_equal(out.members, 1); /* 0 encodes as 1 */
	in.members = 2;
	assert_int_equal(rn_handle_encode(&in, buf, sizeof(buf)), 0);
	assert_int_equal(rn_handle_decode(buf, sizeof(buf), &out), 0);
	assert_int_equal(out.members, 2);
	buf[36] = RN_VNIC_MAX + 1;
	assert_int_equal(rn_handle_decode(buf, sizeof(buf), &out), -EBADMSG);
	/* a peer from before NIC fusion (version 3): -EPROTO, the connect's clean error */
	buf[36] = 1;
	buf[5] = 3;
	assert_int_equal(rn_handle_decode(buf, sizeof(buf), &out), -EPROTO);
	{
		struct rn_hello m;

		memset(&m, 0, sizeof(m));
		m.role = RN_ROLE_SEND;
		m.nqps = 1;
		m.qpn[0] = 0x11;
		m.facts.active_mtu = IBV_MTU_1024;
		len = rn_msg_encode_hello(msg, 1, &m);
		assert_int_equal(rn_msg_decode_hdr(msg, len, &h), 0);
		msg[5] = 3; /* its HELLO has another layout */
		assert_int_equal(rn_msg_decode_hdr(msg, len, &h), -EPROTO);
	}
}

static void hello_rejects(void **state)
{
	uint8_t buf[RN_WIRE_MAX_MSG], p[RN_WIRE_MAX_MSG];
	struct rn_msg_hdr h;
	struct rn_hello m, out;
	size_t len, plen;

	fill_hello(&m, 2);
	len = rn_msg_encode_hello(buf, 1, &m);
	plen = len - RN_WIRE_HDR_LEN;
	/* header */
	assert_int_equal(rn_msg_decode_hdr(buf, 10, &h), -EBADMSG);
	buf[0] ^= 0xff;
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), -EBADMSG);
	buf[0] ^= 0xff;
	buf[5] = RN_WIRE_VERSION + 1;
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), -EPROTO);
	buf[5] = RN_WIRE_VERSION;
	buf[8] = 0x7f; /* 2 GB payload */
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), -EMSGSIZE);
	buf[8] = 0;
	buf[11] = (uint8_t)(plen + 1); /* not a whole QP number */
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), -EBADMSG);
	buf[11] = (uint8_t)plen;
	buf[7] = 9; /* unknown type */
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), -EBADMSG);
	buf[7] = RN_MSG_HELLO;
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	/* payload */
	memcpy(p, buf + RN_WIRE_HDR_LEN, plen);
	assert_int_equal(rn_msg_decode_hello(p, plen - 4, &out), -EBADMSG);
	p[1] = 0;
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), -EBADMSG);
	p[1] = 2;
	p[0] = 3;
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), -EBADMSG);
	p[0] = RN_ROLE_RECV;
	memset(p + 4, 'x', 64); /* host without terminator */
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), -EBADMSG);
	memcpy(p, buf + RN_WIRE_HDR_LEN, plen);
	p[109] = 9; /* MTU enum */
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), -EBADMSG);
	memcpy(p, buf + RN_WIRE_HDR_LEN, plen);
	p[108] = 5; /* IP family */
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), -EBADMSG);
	memcpy(p, buf + RN_WIRE_HDR_LEN, plen);
	memset(p + RN_HELLO_FIXED_LEN, 0, 4); /* QPN 0 */
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), -EBADMSG);
	memcpy(p, buf + RN_WIRE_HDR_LEN, plen);
	/* a host name with a newline or an escape would forge the lines that name the peer */
	memcpy(p + 4, "h\nNCCL WARN", sizeof("h\nNCCL WARN"));
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), -EBADMSG);
	memcpy(p + 4, "h\x1b[31m", sizeof("h\x1b[31m"));
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), -EBADMSG);
	memcpy(p, buf + RN_WIRE_HDR_LEN, plen);
	assert_int_equal(rn_msg_decode_hello(p, plen, &out), 0);
}

static void verdict_roundtrip_and_rejects(void **state)
{
	static uint8_t buf[RN_WIRE_MAX_MSG];
	struct rn_verdict_msg m = { 0 }, out = { 0 };
	struct rn_msg_hdr h;
	char lb[32];
	size_t len;

	m.refused = 1;
	m.finding.cause = RN_CAUSE_NO_RULE;
	m.finding.sev = RN_SEV_FATAL;
	m.finding.msg = (char *)"no rule from 198.18.0.2";
	m.finding.fix = (char *)"ip rule add from 198.18.0.2 lookup 101";
	len = rn_msg_encode_verdict(buf, 5, &m);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(h.type, RN_MSG_VERDICT);
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_int_equal(out.refused, 1);
	assert_int_equal(out.finding.cause, RN_CAUSE_NO_RULE);
	assert_string_equal(out.finding.msg, m.finding.msg);
	assert_string_equal(out.finding.fix, m.finding.fix);
	assert_string_equal(out.finding.fix_host, "");
	assert_string_equal(out.finding.advice, "");
	/* a newer peer's cause: kept, shown as "unknown cause N", not a protocol error */
	buf[RN_WIRE_HDR_LEN + 1] = RN_CAUSE__MAX + 3;
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_int_equal(out.finding.cause, RN_CAUSE__MAX + 3);
	assert_non_null(strstr(rn_cause_label(out.finding.cause, lb, sizeof(lb)), "unknown cause"));
	buf[RN_WIRE_HDR_LEN + 1] = RN_CAUSE_NO_RULE;
	/* lengths that do not add up, beyond the limit, a NUL inside a text, a bad severity */
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len - 1, &out), -EBADMSG);
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, 10, &out), -EBADMSG);
	buf[RN_WIRE_HDR_LEN + 4] = 0x7f;
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	buf[RN_WIRE_HDR_LEN + 4] = 0;
	buf[RN_WIRE_HDR_LEN + RN_VERDICT_FIXED_LEN + RN_VERDICT_EXT_LEN + 2] = '\0';
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	buf[RN_WIRE_HDR_LEN + RN_VERDICT_FIXED_LEN + RN_VERDICT_EXT_LEN + 2] = ' ';
	buf[RN_WIRE_HDR_LEN + 3] |= 0x80; /* a flag this build does not know */
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	buf[RN_WIRE_HDR_LEN + 3] &= 0x7f;
	buf[RN_WIRE_HDR_LEN + 2] = 7;
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	assert_null(out.finding.msg); /* a rejected message leaves nothing behind */
	len = rn_msg_encode_ready(buf, 5);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(h.type, RN_MSG_READY);
	buf[11] = 1; /* READY carries nothing */
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), -EBADMSG);
	rn_verdict_msg_clear(&out);
}

/* Where each part of a fix runs, and the advice, cross whole (version 3). */
static void verdict_hosts_and_advice(void **state)
{
	static uint8_t buf[RN_WIRE_MAX_MSG];
	struct rn_verdict_msg m = { 0 }, out = { 0 };
	struct rn_msg_hdr h;
	size_t len;

	m.refused = 1;
	assert_int_equal(rn_finding_set(&m.finding, RN_CAUSE_NEIGH_WRONG_MAC, RN_SEV_FATAL, "wrong",
					"ip neigh flush dev eth0 to 198.18.0.11 nud all"),
			 0);
	assert_int_equal(rn_finding_set_where(&m.finding, "",
					      "sysctl -w net.ipv4.conf.all.arp_ignore=1", "gpu7",
					      "first the peer"),
			 0);
	len = rn_msg_encode_verdict(buf, 5, &m);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_int_equal(out.refused, 1);
	assert_string_equal(out.finding.fix, m.finding.fix);
	assert_string_equal(out.finding.fix_host, "");
	assert_string_equal(out.finding.pre_fix, m.finding.pre_fix);
	assert_string_equal(out.finding.pre_host, "gpu7");
	assert_string_equal(out.finding.advice, "first the peer");
	/* a host name over its (short) limit is a broken message */
	buf[RN_WIRE_HDR_LEN + RN_VERDICT_FIXED_LEN] = 0x7f;
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), -EBADMSG);
	rn_verdict_msg_clear(&m);
	rn_verdict_msg_clear(&out);
}

/* A version 2 peer: its header, handle and VERDICT (no hosts, no advice) still decode. */
static void verdict_from_older_peer(void **state)
{
	static const uint8_t v2[] = {
		'R',
		'N',
		'H',
		'S',
		0,
		2,
		0,
		RN_MSG_VERDICT,
		0,
		0,
		0,
		12 + 3 + 2,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		0,
		5,
		0,
		RN_CAUSE_NO_RULE,
		RN_SEV_FATAL,
		1,
		0,
		0,
		0,
		3,
		0,
		0,
		0,
		2,
		'm',
		's',
		'g',
		'i',
		'p',
	};
	uint8_t old[sizeof(v2)];
	struct rn_verdict_msg out = { 0 };
	struct rn_msg_hdr h;

	assert_int_equal(rn_msg_decode_hdr(v2, sizeof(v2), &h), 0);
	assert_int_equal(h.len, 17);
	assert_int_equal(rn_msg_decode_verdict(v2 + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_int_equal(out.refused, 1);
	assert_string_equal(out.finding.msg, "msg");
	assert_string_equal(out.finding.fix, "ip");
	assert_string_equal(rn_finding_fix_host(&out.finding), "");
	assert_string_equal(rn_finding_pre_fix(&out.finding), "");
	/* versions 1 and 4: not ours */
	memcpy(old, v2, sizeof(v2));
	old[5] = 1;
	assert_int_equal(rn_msg_decode_hdr(old, sizeof(old), &h), -EPROTO);
	old[5] = RN_WIRE_VERSION + 1;
	assert_int_equal(rn_msg_decode_hdr(old, sizeof(old), &h), -EPROTO);
	rn_verdict_msg_clear(&out);
}

/* Eight mlx5 names' worth of message and fix cross whole; over the limit, a note. */
static void verdict_long_texts(void **state)
{
	static uint8_t buf[RN_WIRE_MAX_MSG];
	static char msg[RN_VERDICT_TEXT_MAX + 2], fix[RN_VERDICT_TEXT_MAX];
	struct rn_verdict_msg m = { 0 }, out = { 0 };
	struct rn_msg_hdr h;
	size_t len;
	int i;

	for (i = 1; i <= 8; i++) {
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
			 "mlx5_%d:1 (ens%df0np0 198.18.0.%d), ", i - 1, i, i);
		snprintf(fix + strlen(fix), sizeof(fix) - strlen(fix),
			 "ip rule add from 198.18.0.%d lookup %d priority %d; "
			 "sysctl -w net.ipv4.conf.ens%df0np0.rp_filter=2; ",
			 i, 100 + i, 100 + i, i);
	}
	assert_true(strlen(msg) > 255 && strlen(fix) > 511);
	m.finding.cause = RN_CAUSE_ARP_FLUX;
	m.finding.msg = msg;
	m.finding.fix = fix;
	len = rn_msg_encode_verdict(buf, 9, &m);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_string_equal(out.finding.msg, msg);
	assert_string_equal(out.finding.fix, fix);
	memset(msg, 'm', RN_VERDICT_TEXT_MAX + 1);
	msg[RN_VERDICT_TEXT_MAX + 1] = '\0';
	len = rn_msg_encode_verdict(buf, 9, &m);
	assert_true(len <= RN_WIRE_MAX_MSG);
	assert_int_equal(rn_msg_decode_hdr(buf, len, &h), 0);
	assert_int_equal(rn_msg_decode_verdict(buf + RN_WIRE_HDR_LEN, h.len, &out), 0);
	assert_non_null(strstr(out.finding.msg, "over the handshake's limit"));
	assert_string_equal(out.finding.fix, fix);
	rn_verdict_msg_clear(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(handle_roundtrip),
		cmocka_unit_test(handle_rejects),
		cmocka_unit_test(hello_roundtrip),
		cmocka_unit_test(hello_spares_roundtrip),
		cmocka_unit_test(ready_mask),
		cmocka_unit_test(hello_vnic_roundtrip),
		cmocka_unit_test(handle_members_and_old_peer),
		cmocka_unit_test(hello_rejects),
		cmocka_unit_test(verdict_roundtrip_and_rejects),
		cmocka_unit_test(verdict_hosts_and_advice),
		cmocka_unit_test(verdict_from_older_peer),
		cmocka_unit_test(verdict_long_texts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
