// SPDX-License-Identifier: MIT
/*
 * roce-doctor's peer protocol (src/doctor/doctor_wire.c, and its TCP transport
 * doctor_io.c; linked in here: the doctor is not part of the library): inventory and pair-check round trips over a
 * socketpair, and every rejection a serving doctor must survive.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <time.h>

#include "../../src/doctor/doctor_io.h"
#include "rn_codec.h"
#include "rn_net.h"
#include "rn_nic.h"

static int sp[2];

static int setup(void **state)
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	assert_int_equal(rn_dw_set_timeout(sp[0], 2), 0);
	assert_int_equal(rn_dw_set_timeout(sp[1], 2), 0);
	return 0;
}

static int teardown(void **state)
{
	close(sp[0]);
	close(sp[1]);
	return 0;
}

static void sample_inv(struct rn_dw_inv *inv)
{
	struct rn_dw_nic *n;
	struct rn_vars v = RN_VARS_INIT;

	memset(inv, 0, sizeof(*inv));
	snprintf(inv->host, sizeof(inv->host), "hostb");
	inv->nnics = 2;
	n = &inv->nics[0];
	snprintf(n->netdev, sizeof(n->netdev), "eth0");
	snprintf(n->ibdev, sizeof(n->ibdev), "rxe0");
	n->port = 1;
	rn_ip_parse("198.18.0.20", &n->ip);
	n->prefixlen = 24;
	memcpy(n->mac, "\x52\x54\x00\x18\x01\x00", 6);
	n->link_up = 1;
	n->verdict = RN_VERDICT_REFUSED;
	rn_gid_from_ip(&n->ip, &n->gid);
	n->gid_index = 1;
	n->mtu = 9000;
	n->active_mtu = 4096;
	rn_vars_set(&v, "dev", "eth0");
	rn_vars_set(&v, "nic", "rxe0:1");
	n->findings = calloc(1, sizeof(*n->findings));
	assert_non_null(n->findings);
	assert_int_equal(rn_finding_render(&n->findings[0], RN_CAUSE_LINK_DOWN, &v), 0);
	n->nfindings = 1;
	rn_vars_free(&v);
	n = &inv->nics[1];
	snprintf(n->netdev, sizeof(n->netdev), "eth1");
	n->gid_index = -1; /* netdev-only */
	n->mtu = 1500;
}

static void inv_roundtrip(void **state)
{
	struct rn_dw_inv in = { 0 }, out = { 0 };
	struct rn_dw_msg m;
	char why[256];

	sample_inv(&in);
	assert_int_equal(rn_dw_send_inv(sp[0], &in, 0), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	assert_int_equal(m.type, RN_DW_INV);
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), 0);
	assert_string_equal(out.host, "hostb");
	assert_int_equal(out.nnics, 2);
	assert_string_equal(out.nics[0].ibdev, "rxe0");
	assert_true(rn_ip_equal(&out.nics[0].ip, &in.nics[0].ip));
	assert_memory_equal(out.nics[0].mac, in.nics[0].mac, 6);
	assert_memory_equal(out.nics[0].gid.raw, in.nics[0].gid.raw, 16);
	assert_int_equal(out.nics[0].gid_index, 1);
	assert_int_equal(out.nics[0].mtu, 9000);
	assert_int_equal(out.nics[0].active_mtu, 4096);
	assert_int_equal(out.nics[0].verdict, RN_VERDICT_REFUSED);
	assert_int_equal(out.nics[0].nfindings, 1);
	assert_int_equal(out.nics[0].findings[0].cause, RN_CAUSE_LINK_DOWN);
	assert_string_equal(out.nics[0].findings[0].fix, in.nics[0].findings[0].fix);
	assert_int_equal(out.nics[1].gid_index, -1);
	assert_int_equal(out.nics[1].ip.family, 0);
	rn_dw_msg_free(&m);
	rn_dw_inv_clear(&in);
	rn_dw_inv_clear(&out);
}

static void checks_roundtrip(void **state)
{
	struct rn_dw_inv a = { 0 }, b = { 0 };
	struct rn_dw_checks *in = calloc(1, sizeof(*in)), *out = calloc(1, sizeof(*out));
	struct rn_dw_msg m;
	struct rn_vars v = RN_VARS_INIT;
	char why[256];

	sample_inv(&a);
	sample_inv(&b);
	in->npairs = 2;
	in->pairs[0] = (struct rn_dw_pair){ .local = 0, .remote = 1, .status = 0 };
	in->pairs[1] = (struct rn_dw_pair){ .local = 1, .remote = 0, .status = 1, .nfindings = 1 };
	rn_vars_set(&v, "peer_host", "hostb");
	rn_vars_set(&v, "peer_ip", "198.18.0.20");
	rn_vars_set(&v, "got_mac", "52:54:00:18:01:01");
	rn_vars_set(&v, "peer_mac", "52:54:00:18:01:00");
	rn_vars_set(&v, "dev", "eth1");
	rn_vars_set(&v, "peer_fix", "sysctl -w net.ipv4.conf.all.arp_ignore=1");
	rn_vars_set(&v, "who", "peer");
	rn_vars_set(&v, "wrong", "NIC");
	rn_vars_set(&v, "why", "ARP flux on host %s", "hostb");
	rn_vars_set(&v, "neigh_fix", "ip neigh flush dev %s to %s nud all", "eth1", "198.18.0.20");
	assert_int_equal(rn_finding_render(&in->pairs[1].findings[0], RN_CAUSE_NEIGH_WRONG_MAC, &v),
			 0);
	rn_vars_free(&v);
	assert_int_equal(rn_dw_send_checks(sp[0], in, 0), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	assert_int_equal(rn_dw_decode_checks(&m, &a, &b, out, why, sizeof(why)), 0);
	assert_int_equal(out->npairs, 2);
	assert_int_equal(out->pairs[1].status, 1);
	assert_int_equal(out->pairs[1].findings[0].cause, RN_CAUSE_NEIGH_WRONG_MAC);
	/* where each part runs crosses too (protocol 3) */
	assert_string_equal(out->pairs[1].findings[0].pre_fix,
			    "sysctl -w net.ipv4.conf.all.arp_ignore=1");
	assert_string_equal(out->pairs[1].findings[0].pre_host, "hostb");
	assert_string_equal(out->pairs[1].findings[0].fix,
			    "ip neigh flush dev eth1 to 198.18.0.20 nud all");
	assert_string_equal(out->pairs[1].findings[0].fix_host, "");
	assert_string_equal(out->pairs[1].findings[0].msg, in->pairs[1].findings[0].msg);
	rn_dw_msg_free(&m);

	/* a pair naming a NIC the receiver does not have */
	in->pairs[0].remote = 5;
	assert_int_equal(rn_dw_send_checks(sp[0], in, 0), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	assert_int_equal(rn_dw_decode_checks(&m, &a, &b, out, why, sizeof(why)), -EBADMSG);
	rn_dw_msg_free(&m);
	rn_dw_checks_clear(in);
	rn_dw_checks_clear(out);
	rn_dw_inv_clear(&a);
	rn_dw_inv_clear(&b);
	free(in);
	free(out);
}

/*
 * Eight mlx5-named NICs' worth of text, well past the old 256/512-byte fields, and a
 * cause this build does not know (a newer peer's): all of it arrives whole.
 */
static void long_findings_and_unknown_cause(void **state)
{
	struct rn_dw_inv in = { 0 }, out = { 0 };
	struct rn_dw_msg m;
	char why[256], msg[2048] = "", fix[4096] = "", lb[32];
	int i;

	for (i = 1; i <= 8; i++) {
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
			 "mlx5_%d:1 (ens%df0np0 198.18.0.%d), ", i - 1, i, i);
		snprintf(fix + strlen(fix), sizeof(fix) - strlen(fix),
			 "ip rule add from 198.18.0.%d lookup %d priority %d; "
			 "ip route replace 198.18.0.0/24 dev ens%df0np0 src 198.18.0.%d table %d; ",
			 i, 100 + i, 100 + i, i, i, 100 + i);
	}
	assert_true(strlen(msg) > 255 && strlen(fix) > 511);
	sample_inv(&in);
	assert_int_equal(rn_finding_set(&in.nics[0].findings[0], (enum rn_cause)999, RN_SEV_FATAL,
					msg, fix),
			 0);
	assert_int_equal(rn_dw_send_inv(sp[0], &in, 0), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), 0);
	assert_string_equal(out.nics[0].findings[0].msg, msg);
	assert_string_equal(out.nics[0].findings[0].fix, fix);
	assert_string_equal(rn_cause_label(out.nics[0].findings[0].cause, lb, sizeof(lb)),
			    "unknown cause 999");
	rn_dw_msg_free(&m);

	/* a text over the limit is not cut: a note says so, and the rest goes through */
	{
		char *huge = malloc(RN_DW_TEXT_MAX + 2);

		assert_non_null(huge);
		memset(huge, 'y', RN_DW_TEXT_MAX + 1);
		huge[RN_DW_TEXT_MAX + 1] = '\0';
		assert_int_equal(rn_finding_set(&in.nics[0].findings[0], RN_CAUSE_NO_RULE,
						RN_SEV_WARN, huge, "ip link"),
				 0);
		free(huge);
	}
	assert_int_equal(rn_dw_send_inv(sp[0], &in, 0), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), 0);
	assert_non_null(strstr(out.nics[0].findings[0].msg, "over the peer protocol's limit"));
	assert_string_equal(out.nics[0].findings[0].fix, "ip link");
	rn_dw_msg_free(&m);
	rn_dw_inv_clear(&in);
	rn_dw_inv_clear(&out);
}

/* A length field beyond the limit, or a NUL inside a text: a clean rejection. */
static void finding_text_bounds(void **state)
{
	struct rn_dw_inv in = { 0 }, out = { 0 };
	struct rn_dw_msg m;
	char why[256];
	size_t off;

	sample_inv(&in);
	assert_int_equal(rn_dw_send_inv(sp[0], &in, 0), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	/* the first finding follows host (64), counts (4) and NIC 0's fixed part (140) */
	off = 64 + 4 + 140;
	assert_int_equal(m.payload[off + 4 + 3], (uint8_t)strlen(in.nics[0].findings[0].msg));
	m.payload[off + 4] = 0x7f; /* message length: 2 GB */
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	m.payload[off + 4] = 0;
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), 0);
	m.payload[off + 4 + 4 * 6] = '\0'; /* a NUL inside the message (after 6 lengths) */
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	/* a newline or an escape in a text would forge a report line or drive the terminal */
	m.payload[off + 4 + 4 * 6] = '\n';
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	m.payload[off + 4 + 4 * 6] = 0x1b;
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	m.payload[off + 4 + 4 * 6] = '\t'; /* a tab is text */
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), 0);
	rn_dw_inv_clear(&out);
	/* the host name (the first field): "evil\n..." forged a line in serve's log */
	memcpy(m.payload, "evil\nverdict: all good", sizeof("evil\nverdict: all good"));
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	memcpy(m.payload, "evil\x1b[2J", sizeof("evil\x1b[2J"));
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	rn_dw_msg_free(&m);
	rn_dw_inv_clear(&in);
	rn_dw_inv_clear(&out);
}

/* Raw bytes in, the receiver's verdict out. */
static int recv_raw(const void *buf, size_t len, char *why, size_t wlen)
{
	struct rn_dw_msg m;
	int ret;

	assert_int_equal(write(sp[0], buf, len), (ssize_t)len);
	shutdown(sp[0], SHUT_WR);
	ret = rn_dw_recv(sp[1], &m, why, wlen);
	if (!ret)
		rn_dw_msg_free(&m);
	return ret;
}

static void garbage(void **state)
{
	char why[256];

	assert_int_equal(recv_raw("junk\n", 5, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "not a roce-doctor message"));
}

static void bad_magic(void **state)
{
	char why[256];

	assert_int_equal(recv_raw("GET / HTTP/1.1\r\n\r\n", 18, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "magic"));
}

static void other_version(void **state)
{
	char why[256];

	assert_int_equal(recv_raw("RNDR\0\11\0\1\0\0\0\0\0\0\0\0", 16, why, sizeof(why)), -EPROTO);
}

/* A version 2 sender (findings without hosts or advice) is still read. */
static void older_peer(void **state)
{
	static const uint8_t v2[] = {
		0,           1,
		0,           0, /* one pair */
		0,           1,
		1,           1, /* local 0, remote 1, problem, one finding */
		0,           RN_CAUSE_MTU_MISMATCH,
		RN_SEV_WARN, 0, /* x = 0: version 2's finding */
		0,           0,
		0,           3,
		0,           0,
		0,           2,
		'm',         's',
		'g',         'i',
		'p',
	};
	struct rn_dw_inv a = { 0 }, b = { 0 };
	struct rn_dw_checks *out = calloc(1, sizeof(*out));
	struct rn_dw_msg m = { .type = RN_DW_CHECKS, .len = sizeof(v2) };
	char why[256];

	assert_non_null(out);
	m.payload = malloc(sizeof(v2));
	assert_non_null(m.payload);
	memcpy(m.payload, v2, sizeof(v2));
	sample_inv(&a);
	sample_inv(&b);
	assert_int_equal(recv_raw("RNDR\0\2\0\6\0\0\0\0\0\0\0\0", 16, why, sizeof(why)), 0);
	assert_int_equal(rn_dw_decode_checks(&m, &a, &b, out, why, sizeof(why)), 0);
	assert_int_equal(out->pairs[0].findings[0].cause, RN_CAUSE_MTU_MISMATCH);
	assert_string_equal(out->pairs[0].findings[0].msg, "msg");
	assert_string_equal(out->pairs[0].findings[0].fix, "ip");
	assert_string_equal(rn_finding_fix_host(&out->pairs[0].findings[0]), "");
	assert_string_equal(rn_finding_advice(&out->pairs[0].findings[0]), "");
	/* a count of extra texts this build does not know: rejected, not guessed */
	m.payload[11] = 3;
	assert_int_equal(rn_dw_decode_checks(&m, &a, &b, out, why, sizeof(why)), -EBADMSG);
	rn_dw_msg_free(&m);
	rn_dw_checks_clear(out);
	free(out);
	rn_dw_inv_clear(&a);
	rn_dw_inv_clear(&b);
}

static void unknown_type(void **state)
{
	char why[256];

	assert_int_equal(recv_raw("RNDR\0\2\0\77\0\0\0\0\0\0\0\0", 16, why, sizeof(why)), -EBADMSG);
}

static void too_long(void **state)
{
	char why[256];

	assert_int_equal(recv_raw("RNDR\0\2\0\1\177\0\0\0\0\0\0\0", 16, why, sizeof(why)),
			 -EMSGSIZE);
}

static void cut_short(void **state)
{
	char why[256];

	assert_int_equal(recv_raw("RNDR\0\2\0\1\0\0\0\100\0\0\0\0abc", 19, why, sizeof(why)),
			 -ECONNRESET);
	assert_non_null(strstr(why, "cut short"));
}

static void inv_lengths(void **state)
{
	struct rn_dw_inv in = { 0 }, out = { 0 };
	struct rn_dw_msg m;
	char why[256];

	sample_inv(&in);
	assert_int_equal(rn_dw_send_inv(sp[0], &in, 0), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	/* one byte less than the counts say, and one more */
	m.len--;
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	m.len += 2;
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	m.len--;
	/* a host name without its NUL */
	memset(m.payload, 'x', 64);
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
	rn_dw_msg_free(&m);
	/* more NICs than a doctor handles */
	in.nnics = RN_DOCTOR_MAX_NICS + 1;
	{
		struct rn_wbuf b = { 0 };

		rn_wb_field(&b, "h", 64);
		rn_wb_u16(&b, (unsigned int)in.nnics);
		rn_wb_u16(&b, 0);
		m.type = RN_DW_INV;
		m.payload = b.p;
		m.len = (uint32_t)b.len;
		assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), -EBADMSG);
		free(b.p);
	}
	in.nnics = 2;
	rn_dw_inv_clear(&in);
	rn_dw_inv_clear(&out);
}

/* The server's reader takes a message in pieces and never reads past it. */
static void piecewise_reader(void **state)
{
	struct rn_dw_reader r;
	struct rn_dw_msg m;
	uint8_t req[4] = { 1, 0, 0, 0 };
	char why[256], c;
	int i;

	assert_int_equal(rn_dw_send(sp[1], RN_DW_PROBE_REQ, req, sizeof(req), 0), 0);
	assert_int_equal(rn_dw_send(sp[1], RN_DW_DONE, NULL, 0, 0), 0);
	rn_dw_reader_init(&r);
	/* nothing yet beyond what is there: whole, then the next one separately */
	assert_int_equal(rn_dw_read_some(sp[0], &r, &m, why, sizeof(why)), 0);
	assert_int_equal(m.type, RN_DW_PROBE_REQ);
	assert_int_equal(m.len, 4);
	assert_memory_equal(m.payload, req, 4);
	rn_dw_msg_free(&m);
	assert_int_equal(rn_dw_read_some(sp[0], &r, &m, why, sizeof(why)), 0);
	assert_int_equal(m.type, RN_DW_DONE);
	rn_dw_msg_free(&m);
	assert_int_equal(rn_dw_read_some(sp[0], &r, &m, why, sizeof(why)), -EAGAIN);
	/* a header a byte at a time */
	assert_int_equal(rn_dw_send(sp[1], RN_DW_PROBE_REQ, req, sizeof(req), 0), 0);
	for (i = 0; i < RN_DW_HDR_LEN + 3; i++) {
		assert_int_equal(recv(sp[0], &c, 1, 0), 1);
		assert_int_equal(rn_dw_reader_feed(&r, (uint8_t *)&c, 1, &(size_t){ 0 }, &m, why,
						   sizeof(why)),
				 -EAGAIN);
	}
	assert_int_equal(rn_dw_read_some(sp[0], &r, &m, why, sizeof(why)), 0);
	assert_int_equal(m.type, RN_DW_PROBE_REQ);
	rn_dw_msg_free(&m);
	/* garbage is said at its 16th byte, an EOF mid-header too */
	assert_int_equal(write(sp[1], "GET / HTTP/1.0\r\n", 16), 16);
	assert_int_equal(rn_dw_read_some(sp[0], &r, &m, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "bad magic"));
	rn_dw_reader_free(&r);
	assert_int_equal(write(sp[1], "RNDR", 4), 4);
	close(sp[1]);
	sp[1] = socket(AF_UNIX, SOCK_STREAM, 0); /* for the teardown */
	assert_int_equal(rn_dw_read_some(sp[0], &r, &m, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "4 bytes, then the connection closed"));
	rn_dw_reader_free(&r);
}

/* A deadline per message: a sender that trickles a byte every 20 ms misses 150 ms. */
static void deadline_per_message(void **state)
{
	uint8_t msg[RN_DW_HDR_LEN + 4] = { 'R', 'N', 'D', 'R', 0, 1, 0, 3, 0, 0, 0, 4 };
	struct rn_dw_msg m;
	char why[256];
	double t0;
	pid_t pid;
	int st;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		for (size_t i = 0; i < sizeof(msg); i++) {
			if (write(sp[1], &msg[i], 1) != 1)
				_exit(1);
			usleep(20000);
		}
		_exit(0);
	}
	t0 = rn_doctor_now_ms();
	assert_int_equal(rn_dw_recv_by(sp[0], &m, t0 + 150, why, sizeof(why)), -ETIMEDOUT);
	/* cut at the deadline, not after the 20 bytes' 400 ms nor a read timeout */
	assert_true(rn_doctor_now_ms() - t0 < 350);
	assert_non_null(strstr(why, "no whole message in time"));
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Each type's limit holds at the header, for the receiver and the sender alike. */
static void type_limits(void **state)
{
	uint8_t hdr[RN_DW_HDR_LEN] = { 'R', 'N', 'D', 'R', 0, 3 };
	static const struct {
		unsigned int type;
		uint32_t len;
		int ret;
	} cases[] = {
		{ RN_DW_INV, RN_DW_INV_MAX, 0 },
		{ RN_DW_INV, RN_DW_INV_MAX + 1, -EMSGSIZE },
		{ RN_DW_INV, 16u << 20, -EMSGSIZE },
		{ RN_DW_CHECKS, RN_DW_CHECKS_MAX + 1, -EMSGSIZE },
		{ RN_DW_PROBE_REQ, 4, 0 },
		{ RN_DW_PROBE_REQ, 5, -EMSGSIZE },
		{ RN_DW_PROBE_HANDLE, 4 + RN_HANDLE_SIZE + 1, -EMSGSIZE },
		{ RN_DW_PROBE_RESULT, 4 + RN_DW_WHY_MAX, -EMSGSIZE },
		{ RN_DW_DONE, 1, -EMSGSIZE },
		{ RN_DW_WAIT, RN_DW_WAIT_LEN, 0 },
		{ RN_DW_BUSY, RN_DW_WAIT_LEN + 1, -EMSGSIZE },
	};
	struct rn_dw_msg m;
	char why[256];
	uint8_t *big;
	size_t i;

	for (i = 0; i < RN_ARRAY_SIZE(cases); i++) {
		rn_put_be16(hdr + 6, (uint16_t)cases[i].type);
		rn_put_be32(hdr + 8, cases[i].len);
		assert_int_equal(rn_dw_decode_hdr(hdr, &m, why, sizeof(why)), cases[i].ret);
	}
	assert_non_null(strstr(why, "BUSY of 9 bytes exceeds its limit of 8 bytes"));
	/* a sender over the limit sends nothing at all */
	big = calloc(1, RN_DW_INV_MAX + 1);
	assert_non_null(big);
	assert_int_equal(rn_dw_send(sp[0], RN_DW_INV, big, RN_DW_INV_MAX + 1, 0), -EMSGSIZE);
	assert_int_equal(rn_dw_send(sp[0], RN_DW_PROBE_REQ, big, 5, 0), -EMSGSIZE);
	free(big);
	assert_int_equal(recv(sp[1], why, 1, MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

static int refused, admitted_len;

static int admit_small(struct rn_dw_reader *r, const struct rn_dw_msg *hdr, char *why, size_t len)
{
	if (hdr->len > 100) {
		refused++;
		snprintf(why, len, "no room for %u", hdr->len);
		return -ENOBUFS;
	}
	admitted_len = (int)hdr->len;
	return 0;
}

/* The admit hook is asked after a valid header and before its payload is allocated. */
static void admit_before_alloc(void **state)
{
	uint8_t hdr[RN_DW_HDR_LEN] = { 'R', 'N', 'D', 'R', 0, 3, 0, RN_DW_INV };
	struct rn_dw_reader r;
	struct rn_dw_msg m;
	char why[256];
	size_t used;

	rn_dw_reader_init(&r);
	r.admit = admit_small;
	rn_put_be32(hdr + 8, 1000);
	assert_int_equal(rn_dw_reader_feed(&r, hdr, sizeof(hdr), &used, &m, why, sizeof(why)),
			 -ENOBUFS);
	assert_int_equal(refused, 1);
	assert_null(r.m.payload); /* nothing taken */
	assert_string_equal(why, "no room for 1000");
	rn_dw_reader_free(&r);
	/* garbage never reaches the hook */
	assert_int_equal(rn_dw_reader_feed(&r, (const uint8_t *)"GET / HTTP/1.0\r\n", 16, &used, &m,
					   why, sizeof(why)),
			 -EBADMSG);
	assert_int_equal(refused, 1);
	rn_dw_reader_free(&r);
	rn_put_be32(hdr + 8, 3);
	assert_int_equal(rn_dw_reader_feed(&r, hdr, sizeof(hdr), &used, &m, why, sizeof(why)),
			 -EAGAIN);
	assert_int_equal(admitted_len, 3);
	assert_int_equal(rn_dw_reader_feed(&r, (const uint8_t *)"abc", 3, &used, &m, why,
					   sizeof(why)),
			 0);
	assert_int_equal(m.len, 3);
	rn_dw_msg_free(&m);
	rn_dw_reader_free(&r);
}

/* A receiver that does not read cannot hold a sender past its deadline. */
static void send_deadline(void **state)
{
	uint8_t *p = calloc(1, RN_DW_CHECKS_MAX);
	uint8_t w[RN_DW_WAIT_LEN] = { 0 };
	int flags = fcntl(sp[0], F_GETFL);

	assert_non_null(p);
	assert_int_equal(fcntl(sp[0], F_SETFL, flags | O_NONBLOCK), 0);
	/* 4 MiB into a socket buffer a fraction of that, nobody reading */
	assert_int_equal(rn_dw_send(sp[0], RN_DW_CHECKS, p, RN_DW_CHECKS_MAX,
				    rn_doctor_now_ms() + 100),
			 -ETIMEDOUT);
	/* now or never: the full socket takes not even a small message, and says so at once */
	assert_int_equal(rn_dw_send(sp[0], RN_DW_WAIT, w, sizeof(w), RN_DW_NOW), -ETIMEDOUT);
	free(p);
}

/* WAIT and BUSY carry the place and a session's length; the inventory its caps. */
static void wait_and_caps(void **state)
{
	uint8_t w[RN_DW_WAIT_LEN];
	struct rn_dw_msg m;
	struct rn_dw_inv in = { 0 }, out = { 0 };
	char why[256];
	double ms;
	int ahead;

	rn_dw_put_wait(w, 7, 812.5);
	assert_int_equal(rn_dw_send(sp[0], RN_DW_WAIT, w, sizeof(w), 0), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	assert_int_equal(rn_dw_get_wait(&m, &ahead, &ms), 0);
	assert_int_equal(ahead, 7);
	assert_true(ms == 812);
	m.type = RN_DW_DONE;
	assert_int_equal(rn_dw_get_wait(&m, &ahead, &ms), -EBADMSG);
	rn_dw_msg_free(&m);
	sample_inv(&in);
	in.caps = RN_DW_CAP_WAIT;
	assert_int_equal(rn_dw_send_inv(sp[0], &in, rn_doctor_now_ms() + 1000), 0);
	assert_int_equal(rn_dw_recv(sp[1], &m, why, sizeof(why)), 0);
	assert_int_equal(rn_get_be16(m.payload + 66), RN_DW_CAP_WAIT);
	assert_int_equal(rn_dw_decode_inv(&m, &out, why, sizeof(why)), 0);
	assert_int_equal(out.caps, RN_DW_CAP_WAIT);
	rn_dw_msg_free(&m);
	rn_dw_inv_clear(&in);
	rn_dw_inv_clear(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(inv_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(checks_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(long_findings_and_unknown_cause, setup, teardown),
		cmocka_unit_test_setup_teardown(finding_text_bounds, setup, teardown),
		cmocka_unit_test_setup_teardown(garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_magic, setup, teardown),
		cmocka_unit_test_setup_teardown(other_version, setup, teardown),
		cmocka_unit_test_setup_teardown(older_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_type, setup, teardown),
		cmocka_unit_test_setup_teardown(too_long, setup, teardown),
		cmocka_unit_test_setup_teardown(cut_short, setup, teardown),
		cmocka_unit_test_setup_teardown(inv_lengths, setup, teardown),
		cmocka_unit_test_setup_teardown(piecewise_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(deadline_per_message, setup, teardown),
		cmocka_unit_test_setup_teardown(type_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(admit_before_alloc, setup, teardown),
		cmocka_unit_test_setup_teardown(send_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(wait_and_caps, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
