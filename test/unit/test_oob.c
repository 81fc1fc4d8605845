// SPDX-License-Identifier: MIT
/* The OOB socket layer: address choice, framing across partial reads, EOF, bad headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
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
		cmocka_unit_test(local_addr_choice),
		cmocka_unit_test(framing_byte_by_byte),
		cmocka_unit_test(bad_header_stops_reading),
		cmocka_unit_test(listen_connect_accept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
