// SPDX-License-Identifier: MIT
/* The OOB socket layer: address choice, framing across partial reads, EOF, bad headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "rn_log.h"
#include "rn_oob.h"

static void quiet(enum rn_log_level level, unsigned long sub, const char *file, int line,
		  const char *msg)
{
}

static void local_addr_choice(void **state)
{
	struct rn_dev dev;
	struct rn_config cfg;
	struct sockaddr_storage ss;
	char buf[80];

	rn_log_set_sink(quiet);
	memset(&dev, 0, sizeof(dev));
	rn_config_defaults(&cfg);
	/* default: the NIC's own source IP */
	dev.nic.ip.family = AF_INET;
	inet_pton(AF_INET, "198.18.0.11", &dev.nic.ip.v4);
	assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), 0);
	assert_string_equal(rn_sockaddr_str(&ss, buf, sizeof(buf)), "198.18.0.11:0");
	dev.nic.ip.family = AF_INET6;
	inet_pton(AF_INET6, "fd00::11", &dev.nic.ip.v6);
	assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), 0);
	assert_string_equal(rn_sockaddr_str(&ss, buf, sizeof(buf)), "[fd00::11]:0");
	dev.nic.ip.family = 0;
	assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), -EADDRNOTAVAIL);
	/* NCCL_SOCKET_IFNAME wins: first IPv4 of the interface (exact or prefix) */
	strcpy(cfg.socket_ifname, "lo");
	assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), 0);
	assert_string_equal(rn_sockaddr_str(&ss, buf, sizeof(buf)), "127.0.0.1:0");
	strcpy(cfg.socket_ifname, "=nosuchif0,lo");
	assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), 0);
	strcpy(cfg.socket_ifname, "nosuchif");
	assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), -EADDRNOTAVAIL);
	rn_log_set_sink(NULL);
}

/* getifaddrs' shape, by hand: every IPv4 entry before the IPv6 ones, as the kernel dumps them. */
static struct ifaddrs ifs[8];
static struct sockaddr_storage ifsa[8];

static void ifs_build(void)
{
	static const struct {
		const char *name, *addr;
		int running;
	} t[] = {
		{ "lo", "127.0.0.1", 1 },
		{ "eth0", "198.18.0.1", 1 },
		{ "eth1", "198.18.1.1", 0 },
		{ "ens1f0np0.100", "198.18.2.1", 1 },
		{ "lo", "::1", 1 },
		{ "ens1f0np0", "fe80::1", 1 },
		{ "ens1f0np0", "fd00::1", 1 },
		{ "eth0", "fd00::10", 1 },
	};
	size_t i;

	memset(ifs, 0, sizeof(ifs));
	memset(ifsa, 0, sizeof(ifsa));
	for (i = 0; i < 8; i++) {
		if (strchr(t[i].addr, ':')) {
			struct sockaddr_in6 *a = (void *)&ifsa[i];

			a->sin6_family = AF_INET6;
			inet_pton(AF_INET6, t[i].addr, &a->sin6_addr);
		} else {
			struct sockaddr_in *a = (void *)&ifsa[i];

			a->sin_family = AF_INET;
			inet_pton(AF_INET, t[i].addr, &a->sin_addr);
		}
		ifs[i].ifa_name = (char *)t[i].name;
		ifs[i].ifa_flags = IFF_UP | (t[i].running ? IFF_RUNNING : 0);
		ifs[i].ifa_addr = (struct sockaddr *)&ifsa[i];
		ifs[i].ifa_next = i < 7 ? &ifs[i + 1] : NULL;
	}
}

static const char *pick(const char *list)
{
	static char out[96];
	struct sockaddr_storage ss;
	char name[IFNAMSIZ + 1], a[80];

	if (rn_oob_pick_ifaddr(list, ifs, &ss, name, sizeof(name)))
		return "none";
	snprintf(out, sizeof(out), "%s %s", name, rn_sockaddr_str(&ss, a, sizeof(a)));
	return out;
}

/* NCCL_SOCKET_IFNAME as NCCL reads it: '^' excludes, '=' is exact, IPv4 or IPv6. */
static void socket_ifname_syntax(void **state)
{
	ifs_build();
	assert_string_equal(pick("eth"), "eth0 198.18.0.1:0");
	assert_string_equal(pick("eth0:5555"), "eth0 198.18.0.1:0"); /* the port is ignored */
	assert_string_equal(pick("eth1"), "none");                   /* not running */
	/* prefix: the VLAN's IPv4 comes first; exact: the parent's global IPv6 */
	assert_string_equal(pick("ens1f0np0"), "ens1f0np0.100 198.18.2.1:0");
	assert_string_equal(pick("=ens1f0np0"), "ens1f0np0 [fd00::1]:0");
	assert_string_equal(pick("=nosuch,ens1f0np0.100"), "ens1f0np0.100 198.18.2.1:0");
	/* exclusion lists */
	assert_string_equal(pick("^lo,eth"), "ens1f0np0.100 198.18.2.1:0");
	assert_string_equal(pick("^=lo"), "eth0 198.18.0.1:0");
	assert_string_equal(pick("^lo,eth,ens1f0np0."), "ens1f0np0 [fd00::1]:0");
	assert_string_equal(pick("^lo,eth,ens"), "none"); /* ::1 and fe80:: are never used */
	assert_string_equal(pick("^"), "lo 127.0.0.1:0");
	assert_true(rn_oob_ifname_match("^docker,lo", "eth0"));
	assert_false(rn_oob_ifname_match("^docker,lo", "docker0"));
	assert_false(rn_oob_ifname_match("=eth", "eth0"));
	assert_true(rn_oob_ifname_match("=eth,eth0", "eth0"));
}

static int nwarns;

static void count_warns(enum rn_log_level level, unsigned long sub, const char *file, int line,
			const char *msg)
{
	nwarns += level == RN_LOG_WARN;
}

/* A setting that selects nothing: one WARN per process, not one per listen or connect. */
static void socket_ifname_warns_once(void **state)
{
	struct rn_dev dev;
	struct rn_config cfg;
	struct sockaddr_storage ss;
	int i;

	rn_log_set_sink(count_warns);
	nwarns = 0;
	memset(&dev, 0, sizeof(dev));
	rn_config_defaults(&cfg);
	strcpy(cfg.socket_ifname, "=nosuch_once,lo"); /* found: no WARN */
	assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), 0);
	strcpy(cfg.socket_ifname, "=nosuch_once0");
	for (i = 0; i < 100; i++)
		assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), -EADDRNOTAVAIL);
	assert_int_equal(nwarns, 1);
	strcpy(cfg.socket_ifname, "=nosuch_once1");
	assert_int_equal(rn_oob_local_addr(&dev, &cfg, &ss), -EADDRNOTAVAIL);
	assert_int_equal(nwarns, 2);
	rn_log_set_sink(NULL);
}

static void framing_byte_by_byte(void **state)
{
	static struct rn_oob_buf in;
	static struct {
		uint8_t data[2 * RN_WIRE_MAX_MSG];
		size_t len;
	} out;
	struct rn_verdict_msg v;
	int sv[2], i, ret = -EAGAIN;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	memset(&v, 0, sizeof(v));
	v.finding.msg = (char *)"m"; /* the encoder only reads it */
	out.len = rn_msg_encode_verdict(out.data, 42, &v);
	out.len += rn_msg_encode_ready(out.data + out.len, 42);
	rn_oob_recv_reset(&in);
	/* the peer's bytes trickle in one at a time: never a partial message */
	for (i = 0; i < (int)out.len; i++) {
		assert_int_equal(write(sv[1], out.data + i, 1), 1);
		ret = rn_oob_recv(sv[0], &in);
		if (ret == 0)
			break;
		assert_int_equal(ret, -EAGAIN);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(in.hdr.type, RN_MSG_VERDICT);
	assert_int_equal(i + 1, RN_WIRE_HDR_LEN + RN_VERDICT_FIXED_LEN + RN_VERDICT_EXT_LEN + 1);
	rn_oob_recv_reset(&in);
	for (i++; i < (int)out.len; i++)
		assert_int_equal(write(sv[1], out.data + i, 1), 1);
	assert_int_equal(rn_oob_recv(sv[0], &in), 0);
	assert_int_equal(in.hdr.type, RN_MSG_READY);
	assert_int_equal(in.hdr.nonce, 42);
	/* nothing more: EAGAIN; the peer closes mid-header: ECONNRESET */
	rn_oob_recv_reset(&in);
	assert_int_equal(rn_oob_recv(sv[0], &in), -EAGAIN);
	assert_int_equal(rn_oob_peer_alive(sv[0]), 0);
	assert_int_equal(write(sv[1], out.data, 5), 5);
	close(sv[1]);
	assert_int_equal(rn_oob_recv(sv[0], &in), -ECONNRESET);
	assert_int_equal(rn_oob_peer_alive(sv[0]), -ECONNRESET);
	close(sv[0]);
}

static void bad_header_stops_reading(void **state)
{
	static struct rn_oob_buf in;
	uint8_t junk[64];
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	memset(junk, 'G', sizeof(junk)); /* "GET / HTTP/1.1" and friends */
	assert_int_equal(write(sv[1], junk, sizeof(junk)), (ssize_t)sizeof(junk));
	rn_oob_recv_reset(&in);
	assert_int_equal(rn_oob_recv(sv[0], &in), -EBADMSG);
	assert_int_equal(in.off, RN_WIRE_HDR_LEN); /* read no further than the header */
	close(sv[0]);
	close(sv[1]);
}

static void listen_connect_accept(void **state)
{
	struct sockaddr_storage a;
	struct sockaddr_in *in = (void *)&a;
	int l, c, s = -1, i, ret = -EAGAIN;

	memset(&a, 0, sizeof(a));
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(rn_oob_listen(&a, &l), 0);
	assert_true(in->sin_port != 0); /* the kernel's port, reported back */
	assert_int_equal(rn_oob_accept(l, &s), -EAGAIN);
	assert_int_equal(rn_oob_connect(&a, &a, &c), 0);
	for (i = 0; i < 100000 && ret == -EAGAIN; i++)
		ret = rn_oob_connect_poll(c);
	assert_int_equal(ret, 0);
	assert_int_equal(rn_oob_accept(l, &s), 0);
	close(s);
	close(c);
	close(l);
	/* nobody listens there any more: refused, not a hang */
	assert_int_equal(rn_oob_connect(&a, NULL, &c), 0);
	for (i = 0, ret = -EAGAIN; i < 100000 && ret == -EAGAIN; i++)
		ret = rn_oob_connect_poll(c);
	assert_int_equal(ret, -ECONNREFUSED);
	close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(local_addr_choice),        cmocka_unit_test(socket_ifname_syntax),
		cmocka_unit_test(socket_ifname_warns_once), cmocka_unit_test(framing_byte_by_byte),
		cmocka_unit_test(bad_header_stops_reading), cmocka_unit_test(listen_connect_accept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
