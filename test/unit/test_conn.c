// SPDX-License-Identifier: MIT
/*
 * Connection setup over loopback TCP and the fake wire: QP attributes, the
 * connection verdict (refusal on either side, warn mode), garbage on the
 * listener, handshake timeout, loopback on one NIC.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "rn_clock.h"
#include "double_conncheck.h"
#include "fixture_xfer.h"
#include "double_conncheck.c"
#include "rn_ratelimit.h"
#include "rn_verbs.h"
#include "rn_wire.h"

static int setup(void **state)
{
	static struct fx f;

	fx_setup(&f);
	fake_path_set(NULL, NULL);
	rn_ratelimit_reset();
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(fx_teardown(*state), 0);
	return 0;
}

static void qp_attributes(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	struct fake_wire_qp_attrs a;

	f->devs[1].nic.active_mtu = IBV_MTU_4096; /* path MTU is the smaller one */
	f->eng.cfg.fifo_tc = 40;
	f->eng.cfg.timeout = 14;
	assert_int_equal(fx_connect(f, 0, 1, 106, &sc, &rc), 0);
	assert_int_equal(fake_path_checks(), 2); /* both sides ran the verdict */
	assert_string_equal(fake_path_last_peer()->host, "testhost");

	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.state, IBV_QPS_RTS);
	assert_int_equal(a.rtr.path_mtu, IBV_MTU_1024);
	assert_int_equal(a.rtr.dest_qp_num, rc->c.qps[0]->qp_num);
	assert_int_equal(a.rtr.ah_attr.is_global, 1);
	assert_int_equal(a.rtr.ah_attr.grh.hop_limit, 255);
	assert_int_equal(a.rtr.ah_attr.grh.sgid_index, 1);
	assert_memory_equal(&a.rtr.ah_attr.grh.dgid, &f->devs[1].nic.gid, 16);
	assert_int_equal(a.rtr.ah_attr.grh.traffic_class, 106); /* communicator's class */
	assert_int_equal(a.rts.timeout, 14);
	assert_int_equal(a.rts.retry_cnt, 6);                   /* rxe: 7 would retry forever */
	assert_int_equal(a.rts.rnr_retry, 7);
	assert_true(fx_info_seen("capped at 6"));

	fake_wire_qp_attrs(rc->c.qps[0], &a);
	assert_int_equal(a.rtr.path_mtu, IBV_MTU_1024);
	assert_int_equal(a.rtr.ah_attr.grh.traffic_class, 40); /* NCCL_IB_FIFO_TC */
	assert_memory_equal(&a.rtr.ah_attr.grh.dgid, &f->devs[0].nic.gid, 16);
	assert_int_equal(a.rtr.dest_qp_num, sc->c.qps[0]->qp_num);

	/* the flush QP is connected to itself */
	fake_wire_qp_attrs(rc->flush_qp[0], &a);
	assert_int_equal(a.rtr.dest_qp_num, rc->flush_qp[0]->qp_num);
	assert_true(a.access & IBV_ACCESS_REMOTE_READ);
	rn_close_send(sc);
	rn_close_recv(rc);
}

static void tc_env_wins_and_retry_kept_on_real_nics(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	struct fake_wire_qp_attrs a;

	f->eng.cfg.tc = 96;
	f->eng.cfg.sl = 2;
	f->eng.cfg.retry_cnt = 7;
	f->devs[0].is_rxe = 0;
	f->devs[1].is_rxe = 0;
	assert_int_equal(fx_connect(f, 0, 1, 5, &sc, &rc), 0);
	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.grh.traffic_class, 96);
	assert_int_equal(a.rtr.ah_attr.sl, 2);
	assert_int_equal(a.rts.retry_cnt, 7);
	fake_wire_qp_attrs(rc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.grh.traffic_class, 96); /* FIFO_TC unset: TC */
	assert_int_equal(a.rtr.ah_attr.sl, 2);
	rn_close_send(sc);
	rn_close_recv(rc);
}

/* NCCL_IB_SL unset: the SL follows the communicator's traffic class, as net_ib's. */
static void sl_from_traffic_class(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	struct fake_wire_qp_attrs a;

	assert_int_equal(fx_connect(f, 0, 1, 3, &sc, &rc), 0);
	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.sl, 3);
	assert_int_equal(a.rtr.ah_attr.grh.traffic_class, 3);
	fake_wire_qp_attrs(rc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.sl, 3); /* the receiver takes the sender's */
	rn_close_send(sc);
	rn_close_recv(rc);
	/* a class that is no SL (4 bits) leaves the SL at 0 */
	assert_int_equal(fx_connect(f, 0, 1, 106, &sc, &rc), 0);
	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.sl, 0);
	assert_int_equal(a.rtr.ah_attr.grh.traffic_class, 106);
	rn_close_send(sc);
	rn_close_recv(rc);
	/* no class (-1): 0 */
	assert_int_equal(fx_connect(f, 0, 1, -1, &sc, &rc), 0);
	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.sl, 0);
	rn_close_send(sc);
	rn_close_recv(rc);
}

static int mqp_fail_left, mqp_fail_err, mqp_calls;
static int (*mqp_real)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);

static int mqp_flaky(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	mqp_calls++;
	/* fail only the handshake's RTR changes, as a loaded firmware would */
	if (attr->qp_state == IBV_QPS_RTR && mqp_fail_left > 0) {
		mqp_fail_left--;
		errno = mqp_fail_err;
		return mqp_fail_err;
	}
	return mqp_real(qp, attr, mask);
}

static void mqp_install(int n, int err)
{
	struct rn_verbs_ops o = { 0 };

	mqp_fail_left = n;
	mqp_fail_err = err;
	mqp_calls = 0;
	mqp_real = rn_verbs.modify_qp;
	o.modify_qp = mqp_flaky;
	rn_verbs_set_ops(&o);
}

/* modify_qp timing out N times, then working: net_ib's retry gets the connection up. */
static void modify_qp_etimedout_retried(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	struct fake_wire_qp_attrs a;

	assert_int_equal(f->eng.cfg.mqp_retry_cnt, 34); /* NCCL's defaults */
	assert_int_equal(f->eng.cfg.mqp_retry_sleep_ms, 100);
	assert_int_equal(f->eng.cfg.mqp_retry_all, 0);
	f->eng.cfg.mqp_retry_sleep_ms = 1;
	mqp_install(5, ETIMEDOUT);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), 0);
	assert_int_equal(mqp_fail_left, 0);
	/* INIT, RTR, RTS of 1 data QP per side + the flush QP, and the 5 failed tries */
	assert_int_equal(mqp_calls, 3 * 3 + 5);
	assert_true(fx_info_seen("NCCL_IB_MQP_RETRY_CNT"));
	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.state, IBV_QPS_RTS);
	fake_wire_qp_attrs(rc->c.qps[0], &a);
	assert_int_equal(a.state, IBV_QPS_RTS);
	rn_close_send(sc);
	rn_close_recv(rc);
	rn_verbs.modify_qp = mqp_real;
}

/* Past NCCL_IB_MQP_RETRY_CNT, or another error without RETRY_ALL: the connect fails. */
static void modify_qp_retry_bounded(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;

	f->eng.cfg.mqp_retry_sleep_ms = 1;
	f->eng.cfg.mqp_retry_cnt = 2;
	mqp_install(1000, ETIMEDOUT);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), -ETIMEDOUT);
	rn_verbs.modify_qp = mqp_real;
	mqp_install(1, EINVAL);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), -EINVAL);
	assert_int_equal(mqp_fail_left, 0);
	rn_verbs.modify_qp = mqp_real;
	/* NCCL_IB_MQP_RETRY_ALL=1 retries any error */
	f->eng.cfg.mqp_retry_all = 1;
	mqp_install(2, EINVAL);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), 0);
	rn_close_send(sc);
	rn_close_recv(rc);
	rn_verbs.modify_qp = mqp_real;
}

static void refused_by_receiver(void **state)
{
	struct fx *f = *state;
	struct fake_path_script s = { 0 };
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	struct fake_wire_stats st;

	s.eagain_polls = 3;
	s.poll_ret = -EHOSTUNREACH;
	s.finding.cause = RN_CAUSE_NEIGH_WRONG_MAC;
	s.finding.sev = RN_SEV_FATAL;
	s.finding.msg = (char *)"neighbour 198.18.0.1 holds the wrong MAC"; /* the fake copies it */
	s.finding.fix = (char *)"sysctl -w net.ipv4.conf.all.arp_ignore=1"; /* the fake copies it */
	fake_path_set("rxe1", &s);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), -EHOSTUNREACH);
	assert_null(sc);
	assert_null(rc);
	/* the last WARN is one side's: it names the finding and its fix */
	assert_non_null(strstr(fx_last_warn, "wrong MAC"));
	assert_non_null(strstr(fx_last_warn, "arp_ignore=1"));
	assert_int_equal(fx_nwarn, 2); /* one per side */
	assert_true(fx_warn_seen("connection refused here [neigh-wrong-mac]"));
	/* the sender is told, and where the fix is to be run */
	assert_true(fx_warn_seen("connection refused by the peer [neigh-wrong-mac]"));
	assert_true(fx_warn_seen("fix (on testhost): sysctl"));
	fake_wire_stats(NULL, &st);
	assert_int_equal(st.writes + st.writes_imm + st.reads, 0); /* no RDMA ever */
}

static void refused_by_sender(void **state)
{
	struct fx *f = *state;
	struct fake_path_script s = { 0 };
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;

	s.poll_ret = -EHOSTUNREACH;
	s.finding.cause = RN_CAUSE_NO_RULE;
	s.finding.msg = (char *)"no rule for 198.18.0.1";                 /* the fake copies it */
	s.finding.fix = (char *)"ip rule add from 198.18.0.1 lookup 101"; /* the fake copies it */
	fake_path_set("rxe0", &s);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), -EHOSTUNREACH);
	assert_non_null(strstr(fx_last_warn, "lookup 101"));
}

/*
 * A cause this build does not know (a newer peer's) crosses the handshake as its
 * number and is named "unknown cause N" with its text whole: a refusal, not a
 * protocol error. Its message is far past the old 255-byte field.
 */
static void newer_peer_cause_and_long_text(void **state)
{
	struct fx *f = *state;
	struct fake_path_script s = { 0 };
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	char msg[1200] = "", fix[600] = "";
	int i;

	for (i = 1; i <= 8; i++) {
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
			 "mlx5_%d:1 (ens%df0np0 198.18.0.%d) ", i - 1, i, 10 + i);
		snprintf(fix + strlen(fix), sizeof(fix) - strlen(fix),
			 "%sip rule add from 198.18.0.%d lookup %d", i > 1 ? "; " : "", 10 + i,
			 100 + i);
	}
	s.poll_ret = -EHOSTUNREACH;
	s.finding.cause = (enum rn_cause)(RN_CAUSE__MAX + 7);
	s.finding.sev = RN_SEV_FATAL;
	s.finding.msg = msg;
	s.finding.fix = fix;
	fake_path_set("rxe1", &s);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), -EHOSTUNREACH);
	assert_true(fx_warn_seen("connection refused by the peer [unknown cause"));
	assert_true(fx_warn_seen(msg));
	assert_true(fx_warn_seen("ip rule add from 198.18.0.18 lookup 108"));
}

static void warn_mode_connects(void **state)
{
	struct fx *f = *state;
	struct fake_path_script s = { 0 };
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;

	s.poll_ret = -EHOSTUNREACH;
	s.finding.cause = RN_CAUSE_NO_RULE;
	s.finding.msg = (char *)"no rule";     /* the fake copies it */
	s.finding.fix = (char *)"ip rule add"; /* the fake copies it */
	fake_path_set("rxe1", &s);
	f->eng.cfg.route_check = RN_ROUTE_CHECK_WARN;
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), 0);
	assert_int_equal(fx_nwarn, 1);
	assert_non_null(strstr(fx_last_warn, "connecting anyway"));
	rn_close_send(sc);
	rn_close_recv(rc);

	f->eng.cfg.route_check = RN_ROUTE_CHECK_OFF;
	fake_path_set(NULL, NULL);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), 0);
	assert_int_equal(fake_path_checks(), 0);
	rn_close_send(sc);
	rn_close_recv(rc);
}

static void passing_check_with_a_warning(void **state)
{
	struct fx *f = *state;
	struct fake_path_script s = { 0 };
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;

	s.poll_ret = 0;
	s.finding.cause = RN_CAUSE_MTU_MISMATCH;
	s.finding.sev = RN_SEV_WARN;
	s.finding.msg = (char *)"MTU 9000 here, 1500 there";     /* the fake copies it */
	s.finding.fix = (char *)"ip link set dev eth1 mtu 9000"; /* the fake copies it */
	fake_path_set("rxe0", &s);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), 0);
	assert_non_null(sc);
	/* connected, and the warning was said once, with its id and fix */
	assert_int_equal(fx_nwarn, 1);
	assert_non_null(strstr(fx_last_warn, "[mtu-mismatch]"));
	assert_non_null(strstr(fx_last_warn, "ip link set dev eth1 mtu 9000"));
	rn_close_send(sc);
	rn_close_recv(rc);
}

static void loopback_one_nic(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;

	assert_int_equal(fx_connect(f, 0, 0, 0, &sc, &rc), 0);
	assert_int_equal(sc->c.mem[0].dev, rc->c.mem[0].dev);
	rn_close_send(sc);
	rn_close_recv(rc);
}

/* A raw client of the listener's address. */
static int raw_client(const void *handle)
{
	struct rn_handle_info hi;
	int fd;

	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&hi.addr, sizeof(struct sockaddr_in)), 0);
	return fd;
}

static void pump_accept(struct rn_listen_comm *lc, int rounds)
{
	struct rn_recv_comm *rc;

	for (int i = 0; i < rounds; i++) {
		assert_int_equal(rn_accept(lc, &rc), 0);
		assert_null(rc);
	}
}

static void garbage_then_serve(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE], conn_handle[RN_HANDLE_SIZE];
	uint8_t msg[RN_WIRE_MAX_MSG];
	struct rn_listen_comm *lc;
	struct rn_send_comm *sc = NULL;
	struct rn_recv_comm *rc = NULL;
	struct rn_handle_info hi;
	struct rn_hello hello;
	size_t len;
	int fd, i, ret;

	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	memset(&hello, 0, sizeof(hello));
	hello.role = RN_ROLE_SEND;
	hello.nqps = 1;
	hello.qpn[0] = 0x42;
	hello.facts.active_mtu = IBV_MTU_1024;
	strcpy(hello.facts.host, "scanner");

	/* 1: connects and closes (port scanner) */
	fd = raw_client(handle);
	close(fd);
	pump_accept(lc, 20);
	/* 2: a truncated header */
	fd = raw_client(handle);
	len = rn_msg_encode_hello(msg, hi.nonce, &hello);
	assert_int_equal(write(fd, msg, 10), 10);
	close(fd);
	pump_accept(lc, 20);
	/* 3: wrong magic */
	fd = raw_client(handle);
	msg[0] = 'X';
	assert_int_equal(write(fd, msg, len), (ssize_t)len);
	pump_accept(lc, 20);
	close(fd);
	/* 4: wrong version */
	fd = raw_client(handle);
	len = rn_msg_encode_hello(msg, hi.nonce, &hello);
	msg[5] = RN_WIRE_VERSION + 1; /* a version this build does not know */
	assert_int_equal(write(fd, msg, len), (ssize_t)len);
	pump_accept(lc, 20);
	close(fd);
	/* 5: oversized length */
	fd = raw_client(handle);
	len = rn_msg_encode_hello(msg, hi.nonce, &hello);
	msg[8] = 0x10;
	assert_int_equal(write(fd, msg, len), (ssize_t)len);
	pump_accept(lc, 20);
	close(fd);
	/* 6: a valid message with the wrong nonce (meant for another listener) */
	fd = raw_client(handle);
	len = rn_msg_encode_hello(msg, hi.nonce + 1, &hello);
	assert_int_equal(write(fd, msg, len), (ssize_t)len);
	pump_accept(lc, 20);
	close(fd);
	/* 7: one that stays open and silent while a real peer connects */
	fd = raw_client(handle);
	/* each drop is logged with the peer's address: the first at WARN, then INFO */
	assert_int_equal(fx_info_count("dropped a connection from 127.0.0.1:"), 5);
	assert_int_equal(fx_nwarn, 1);
	assert_true(fx_warn_seen("dropped a connection from 127.0.0.1:"));
	assert_true(fx_warn_seen("Connection reset") || fx_warn_seen("Bad message"));
	assert_true(fx_info_seen("Protocol error"));   /* version */
	assert_true(fx_info_seen("Message too long")); /* length */

	memcpy(conn_handle, handle, sizeof(handle));
	for (i = 0; i < 200000 && (!sc || !rc); i++) {
		if (!sc) {
			ret = rn_connect(&f->eng, 0, conn_handle, 0, &sc);
			assert_int_equal(ret, 0);
		}
		if (!rc) {
			ret = rn_accept(lc, &rc);
			assert_int_equal(ret, 0);
		}
	}
	assert_non_null(sc);
	assert_non_null(rc);
	close(fd);
	rn_close_send(sc);
	rn_close_recv(rc);
	rn_close_listen(lc);
}

/* rn_connect on @handle, 1 ms apart, until it fails (no comm may come; at most @tries). */
static int connect_until_error(struct fx *f, unsigned char *handle, int tries)
{
	struct rn_send_comm *sc = NULL;
	int i, ret = 0;

	for (i = 0; i < tries && !ret; i++) {
		ret = rn_connect(&f->eng, 0, handle, 0, &sc);
		assert_null(sc);
		usleep(1000);
	}
	return ret;
}

/*
 * A listener nobody accepts on yet: the connector waits past NCCL_ROCE_CONNECT_TIMEOUT_MS
 * (NCCL has no connect timeout, a peer may accept minutes later) and connects when the
 * accept comes. And when the peer dies instead, its kernel's reset ends the wait with an
 * error naming the peer.
 */
static void connect_waits_for_a_late_accept(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	struct rn_send_comm *sc = NULL;
	struct rn_recv_comm *rc = NULL;
	struct rn_handle_info hi;
	char peer[80];
	uint64_t t0;
	int i;

	memset(handle, 0, sizeof(handle));
	assert_int_equal(rn_connect(&f->eng, 0, handle, 0, &sc), -EINVAL);
	f->eng.cfg.connect_timeout_ms = 100;
	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	/* three times the timeout without an accept: still waiting, no error */
	for (t0 = rn_now_ns(); rn_now_ns() - t0 < 300000000ull;) {
		assert_int_equal(rn_connect(&f->eng, 0, handle, 0, &sc), 0);
		assert_null(sc);
		usleep(1000);
	}
	/* NCCL polls with no pause while it waits: the figure for one call (not asserted) */
	t0 = rn_now_ns();
	for (i = 0; i < 20000; i++)
		assert_int_equal(rn_connect(&f->eng, 0, handle, 0, &sc), 0);
	print_message("connect polled while the peer has not accepted: %.2f us a call\n",
		      (double)(rn_now_ns() - t0) / 20000 / 1000);
	/* the accept comes: the connection comes up */
	for (i = 0; i < 200000 && (!sc || !rc); i++) {
		if (!sc)
			assert_int_equal(rn_connect(&f->eng, 0, handle, 0, &sc), 0);
		if (!rc)
			assert_int_equal(rn_accept(lc, &rc), 0);
	}
	assert_non_null(sc);
	assert_non_null(rc);
	assert_int_equal(handle[RN_HANDLE_PUBLIC], 0); /* the private state is released */
	rn_close_send(sc);
	rn_close_recv(rc);
	rn_close_listen(lc);

	/* a peer that dies while we wait: its listener's end is reset, the error names it */
	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	rn_sockaddr_str(&hi.addr, peer, sizeof(peer));
	for (i = 0; i < 50; i++) {
		assert_int_equal(rn_connect(&f->eng, 0, handle, 0, &sc), 0);
		usleep(1000);
	}
	rn_close_listen(lc);
	assert_int_equal(connect_until_error(f, handle, 2000), -ECONNRESET);
	assert_true(fx_warn_seen(peer));
	assert_true(fx_warn_seen("Connection reset by peer"));
	/* connected again once (it might have been an eviction), refused: the listener is gone */
	assert_true(fx_info_seen("connecting again (1 of 8)"));
	assert_true(fx_warn_seen("a new connection was refused: its listener is gone"));
	assert_int_equal(handle[RN_HANDLE_PUBLIC], 0);
}

/* A listening socket of our own on the listener's address family, port any: its fd. */
static int bouncer_listen(const void *handle, unsigned char *forged)
{
	struct rn_handle_info hi;
	socklen_t len = sizeof(hi.addr);
	int fd;

	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	((struct sockaddr_in *)&hi.addr)->sin_port = 0;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&hi.addr, sizeof(struct sockaddr_in)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&hi.addr, &len), 0);
	memcpy(forged, handle, RN_HANDLE_SIZE);
	assert_int_equal(rn_handle_encode(&hi, forged, RN_HANDLE_SIZE), 0);
	return fd;
}

/* The next connection on @lfd, within 5 s while @handle's connect is called; -1 none. */
static int bouncer_accept(struct fx *f, int lfd, unsigned char *handle, int *ret)
{
	struct rn_send_comm *sc = NULL;
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	uint64_t t0 = rn_now_ns();

	while (rn_now_ns() - t0 < 5000000000ull) {
		*ret = rn_connect(&f->eng, 0, handle, 0, &sc);
		assert_null(sc);
		if (*ret)
			return -1;
		if (poll(&p, 1, 1) == 1)
			return accept(lfd, NULL, NULL);
	}
	return -1;
}

/* The connector's HELLO on @fd (it sends it as soon as it is connected): its length. */
static size_t bouncer_hello(struct fx *f, int fd, unsigned char *handle, uint8_t *buf)
{
	struct rn_send_comm *sc = NULL;
	uint64_t t0 = rn_now_ns();
	size_t got = 0;

	while (rn_now_ns() - t0 < 5000000000ull) {
		ssize_t n = recv(fd, buf + got, RN_WIRE_MAX_MSG - got, MSG_DONTWAIT);

		if (n > 0)
			got += (size_t)n;
		if (got >= RN_WIRE_HDR_LEN) {
			struct rn_msg_hdr h;

			assert_int_equal(rn_msg_decode_hdr(buf, got, &h), 0);
			if (got >= RN_WIRE_HDR_LEN + h.len)
				return got;
		}
		assert_int_equal(rn_connect(&f->eng, 0, handle, 0, &sc), 0);
		usleep(1000);
	}
	return 0;
}

/* Close @fd with a reset, as a listener that drops a silent stranger does to the peer. */
static void reset_close(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	close(fd);
}

/*
 * A listener can drop a real peer's connection as a silent stranger (its HELLO came after
 * the grace, a retransmit on a loaded host): the connector connects again with the same
 * HELLO, and the comm comes up. Here the listener's address is a bouncer of ours that
 * resets the first connection, then relays the second one to the real listener. A
 * listener that resets every connection ends it after RN_HS_REDIALS new ones, said.
 */
static void connect_again_after_an_early_reset(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE], forged[RN_HANDLE_SIZE];
	uint8_t hello[2][RN_WIRE_MAX_MSG], buf[4096];
	struct rn_listen_comm *lc;
	struct rn_send_comm *sc = NULL;
	struct rn_recv_comm *rc = NULL;
	struct rn_handle_info hi;
	size_t len[2];
	uint64_t t0;
	int lfd, c, up, ret = 0, n = 0;

	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	lfd = bouncer_listen(handle, forged);
	/* the first connection: its HELLO read, then a reset */
	c = bouncer_accept(f, lfd, forged, &ret);
	assert_true(c >= 0);
	len[0] = bouncer_hello(f, c, forged, hello[0]);
	assert_true(len[0] > 0);
	reset_close(c);
	/* the second: the same HELLO, relayed both ways to the real listener from here on */
	c = bouncer_accept(f, lfd, forged, &ret);
	assert_true(c >= 0);
	assert_true(fx_info_seen("connecting again (1 of 8)"));
	len[1] = bouncer_hello(f, c, forged, hello[1]);
	assert_int_equal(len[1], len[0]);
	assert_memory_equal(hello[1], hello[0], len[0]);
	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	up = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(up >= 0);
	assert_int_equal(connect(up, (struct sockaddr *)&hi.addr, sizeof(struct sockaddr_in)), 0);
	assert_int_equal(send(up, hello[1], len[1], MSG_NOSIGNAL), (ssize_t)len[1]);
	for (t0 = rn_now_ns(); (!sc || !rc) && rn_now_ns() - t0 < 10000000000ull;) {
		ssize_t m;

		if (!sc)
			assert_int_equal(rn_connect(&f->eng, 0, forged, 0, &sc), 0);
		if (!rc)
			assert_int_equal(rn_accept(lc, &rc), 0);
		while ((m = recv(up, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			assert_int_equal(send(c, buf, (size_t)m, MSG_NOSIGNAL), m);
		while ((m = recv(c, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			assert_int_equal(send(up, buf, (size_t)m, MSG_NOSIGNAL), m);
	}
	assert_non_null(sc);
	assert_non_null(rc);
	rn_close_send(sc);
	rn_close_recv(rc);
	close(c);
	close(up);

	/* a listener that resets every connection: 1 + 8 of them, then the error, said */
	fx_log_reset();
	while (!ret) {
		c = bouncer_accept(f, lfd, forged, &ret);
		if (c < 0)
			break;
		n++;
		if (bouncer_hello(f, c, forged, buf))
			reset_close(c);
		else
			close(c);
	}
	if (!ret)
		ret = connect_until_error(f, forged, 5000);
	assert_int_equal(ret, -ECONNRESET);
	assert_int_equal(n, 9);
	assert_true(fx_warn_seen("Connection reset by peer before the peer's HELLO, 9 times"));
	assert_int_equal(forged[RN_HANDLE_PUBLIC], 0);
	close(lfd);
	rn_close_listen(lc);
}

static void ipv6_oob_on_the_nic_address(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	char buf[80];

	/* no NCCL_SOCKET_IFNAME: the listener binds the NIC's own (here IPv6) address */
	f->eng.cfg.socket_ifname[0] = 0;
	for (int i = 0; i < FX_DEVS; i++) {
		f->devs[i].nic.ip.family = AF_INET6;
		inet_pton(AF_INET6, "::1", &f->devs[i].nic.ip.v6);
	}
	if (fx_connect(f, 0, 1, 0, &sc, &rc) == -EADDRNOTAVAIL) {
		skip(); /* no IPv6 loopback here */
		return;
	}
	assert_non_null(sc);
	assert_string_equal(rn_sockaddr_str(&sc->c.peer_addr, buf, sizeof(buf)) + 0,
			    sc->c.peer_str);
	assert_non_null(strstr(sc->c.peer_str, "[::1]:"));
	rn_close_send(sc);
	rn_close_recv(rc);
}

static void accept_waits_for_a_held_peer(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE];
	uint8_t msg[RN_WIRE_MAX_MSG];
	struct rn_listen_comm *lc;
	struct rn_recv_comm *rc = NULL;
	struct rn_handle_info hi;
	struct rn_hello hello;
	size_t len;
	int fd, i, ret = 0;

	f->eng.cfg.connect_timeout_ms = 100;
	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	memset(&hello, 0, sizeof(hello));
	hello.role = RN_ROLE_SEND;
	hello.nqps = 1;
	hello.qpn[0] = 0x42;
	hello.facts.active_mtu = IBV_MTU_1024;
	strcpy(hello.facts.host, "mute");
	/*
	 * A valid HELLO, then silence: this peer is real and its proxy thread may be held
	 * elsewhere for minutes (NCCL runs every op of a process on one thread), so no
	 * deadline holds it: 3 times the timeout later the accept still waits. When the
	 * peer dies, the error names it.
	 */
	fd = raw_client(handle);
	len = rn_msg_encode_hello(msg, hi.nonce, &hello);
	assert_int_equal(write(fd, msg, len), (ssize_t)len);
	for (i = 0; i < 300 && !ret; i++) {
		ret = rn_accept(lc, &rc);
		assert_null(rc);
		usleep(1000);
	}
	assert_int_equal(ret, 0);
	close(fd);
	for (i = 0; i < 2000 && !ret; i++) {
		ret = rn_accept(lc, &rc);
		assert_null(rc);
		usleep(1000);
	}
	assert_int_not_equal(ret, 0);
	assert_int_not_equal(ret, -ETIMEDOUT);
	assert_non_null(strstr(fx_last_warn, "accept from 127.0.0.1:"));
	assert_non_null(strstr(fx_last_warn, "failed"));
	rn_close_listen(lc);
}

/* A handle whose private bytes claim a connect in progress at a forged address. */
static void forged_private_area_is_data(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE], copy[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	struct rn_send_comm *sc = NULL, *sc2 = NULL;
	struct rn_recv_comm *rc = NULL, *rc2 = NULL;
	uint64_t cookie = 0x524e4353434f4e4eull; /* what rn_connect writes there */
	int i;

	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	/* the bytes that used to be followed as a pointer (SEGV in hs_progress) */
	memcpy(handle + RN_HANDLE_PUBLIC, &cookie, 8);
	memset(handle + RN_HANDLE_PUBLIC + 8, 0x41, RN_HANDLE_SIZE - RN_HANDLE_PUBLIC - 8);
	for (i = 0; i < 200000 && (!sc || !rc); i++) {
		if (!sc)
			assert_int_equal(rn_connect(&f->eng, 0, handle, 0, &sc), 0);
		if (!rc)
			assert_int_equal(rn_accept(lc, &rc), 0);
		/* the handle's private bytes identify our state; they are no address */
		if (!sc && i == 0) {
			memcpy(copy, handle, sizeof(copy));
			/* the same bytes at another address find nothing: a connect of its own */
			assert_int_equal(rn_connect(&f->eng, 0, copy, 0, &sc2), 0);
		}
		if (!sc2)
			assert_int_equal(rn_connect(&f->eng, 0, copy, 0, &sc2), 0);
		if (!rc2 && rc)
			assert_int_equal(rn_accept(lc, &rc2), 0);
	}
	for (; i < 400000 && (!sc2 || !rc2); i++) {
		if (!sc2)
			assert_int_equal(rn_connect(&f->eng, 0, copy, 0, &sc2), 0);
		if (!rc2)
			assert_int_equal(rn_accept(lc, &rc2), 0);
	}
	assert_non_null(sc);
	assert_non_null(rc);
	assert_non_null(sc2);
	assert_non_null(rc2);
	assert_int_equal(handle[RN_HANDLE_PUBLIC], 0); /* released */
	rn_close_send(sc);
	rn_close_recv(rc);
	rn_close_send(sc2);
	rn_close_recv(rc2);
	rn_close_listen(lc);
}

static int raw_nb_client(const void *handle)
{
	struct rn_handle_info hi;
	int fd;

	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(fd >= 0);
	assert_true(!connect(fd, (struct sockaddr *)&hi.addr, sizeof(struct sockaddr_in)) ||
		    errno == EINPROGRESS);
	return fd;
}

static int peer_closed(int fd)
{
	char c;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

/* A connector's HELLO for @handle, as a peer whose proxy thread sends it late would. */
static size_t late_hello(const void *handle, uint8_t *msg)
{
	struct rn_handle_info hi;
	struct rn_hello hello;

	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	memset(&hello, 0, sizeof(hello));
	hello.role = RN_ROLE_SEND;
	hello.nqps = 1;
	hello.members = 1;
	hello.qpn[0] = 0x42;
	hello.facts.active_mtu = IBV_MTU_1024;
	strcpy(hello.facts.host, "late");
	return rn_msg_encode_hello(msg, hi.nonce, &hello);
}

/* Pump @lc until @fd has a reply of ours queued: 1 when it is a HELLO for @handle. */
static int answered_with_hello(struct rn_listen_comm *lc, const void *handle, int fd)
{
	uint8_t reply[RN_WIRE_MAX_MSG];
	struct rn_handle_info hi;
	struct rn_recv_comm *rc;
	struct rn_msg_hdr hdr;
	ssize_t got = 0;
	int i;

	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	for (i = 0; i < 1000 && got < RN_WIRE_HDR_LEN; i++) {
		assert_int_equal(rn_accept(lc, &rc), 0);
		assert_null(rc);
		got = recv(fd, reply, sizeof(reply), MSG_DONTWAIT | MSG_PEEK);
		if (got == 0)
			return 0; /* closed on us */
		usleep(1000);
	}
	return got >= RN_WIRE_HDR_LEN && !rn_msg_decode_hdr(reply, RN_WIRE_HDR_LEN, &hdr) &&
	       hdr.type == RN_MSG_HELLO && hdr.nonce == hi.nonce;
}

/*
 * A stranger that sends too slowly is dropped at its HELLO deadline. One that sends
 * nothing keeps its slot while no other connection needs it, long past the timeout (a
 * real peer whose proxy thread is busy elsewhere sends its HELLO late), and is served
 * when it speaks.
 */
static void stranger_deadlines(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE];
	uint8_t msg[RN_WIRE_MAX_MSG];
	struct rn_listen_comm *lc;
	size_t len;
	int idle, slow, i;

	f->eng.cfg.connect_timeout_ms = 300;
	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	len = late_hello(handle, msg);
	idle = raw_nb_client(handle);
	slow = raw_nb_client(handle);
	/* one byte every 50 ms: the HELLO would take 9 s */
	for (i = 0; i < 40 && !peer_closed(slow); i++) {
		assert_true(send(slow, &msg[i], 1, MSG_NOSIGNAL) == 1 || errno == EPIPE ||
			    errno == ECONNRESET);
		pump_accept(lc, 1);
		usleep(50000);
	}
	assert_true(peer_closed(slow));
	assert_true(i < 20); /* ~300 ms, not the 9 s the HELLO would take */
	assert_true(fx_warn_seen("no complete HELLO within 300 ms of its first byte") ||
		    fx_info_seen("no complete HELLO within 300 ms of its first byte"));
	/* the silent one, 3 timeouts on: still open, nobody needed its slot */
	for (i = 0; i < 30; i++) {
		pump_accept(lc, 1);
		usleep(20000);
	}
	assert_false(peer_closed(idle));
	/* it speaks at last: a valid HELLO, and the listener answers with its own */
	assert_int_equal(send(idle, msg, len, MSG_NOSIGNAL), (ssize_t)len);
	assert_true(answered_with_hello(lc, handle, idle));
	close(idle);
	close(slow);
	rn_close_listen(lc);
}

/*
 * A burst of connects whose first ones have not spoken yet (their QPs are being made,
 * NCCL has not called their connect again): the table is full of old strangers, the
 * silent real peer is accepted, then 100 more sockets come. They evict the old
 * strangers but not the young peer (nor each other): they wait in the kernel's queue,
 * and the peer's HELLO, sent after all of them arrived, is answered.
 */
static void late_hello_outlives_a_burst(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE];
	uint8_t msg[RN_WIRE_MAX_MSG];
	struct rn_listen_comm *lc;
	int old[64], burst[100], peer, i, evicted = 0;
	uint64_t t0;
	size_t len;

	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	len = late_hello(handle, msg);
	for (i = 0; i < 64; i++)
		old[i] = raw_nb_client(handle);
	pump_accept(lc, 20);
	usleep(1100 * 1000); /* past the grace: these may make room now */
	peer = raw_nb_client(handle);
	usleep(20000);
	pump_accept(lc, 5); /* the peer is accepted, one old stranger makes room */
	for (i = 0; i < 100; i++)
		burst[i] = raw_nb_client(handle);
	t0 = rn_now_ns();
	while (rn_now_ns() - t0 < 300000000ull) { /* well inside the peer's grace */
		pump_accept(lc, 1);
		usleep(1000);
	}
	for (i = 0; i < 64; i++)
		evicted += peer_closed(old[i]);
	assert_int_equal(evicted, 64); /* the burst took the old ones' slots */
	assert_false(peer_closed(peer));
	assert_int_equal(send(peer, msg, len, MSG_NOSIGNAL), (ssize_t)len);
	assert_true(answered_with_hello(lc, handle, peer));
	for (i = 0; i < 64; i++)
		close(old[i]);
	for (i = 0; i < 100; i++)
		close(burst[i]);
	close(peer);
	rn_close_listen(lc);
}

#define FLOOD_IDLE 200
#define FLOOD_SLOW 50
#define FLOOD_REAL 32

/* Connect FLOOD_REAL comms to @lc at once; seconds taken, or -1 when one failed. */
static double connect_all(struct fx *f, struct rn_listen_comm *lc, unsigned char *handle, int *slow,
			  int nslow)
{
	static unsigned char h[FLOOD_REAL][RN_HANDLE_SIZE];
	struct rn_send_comm *sc[FLOOD_REAL] = { NULL };
	struct rn_recv_comm *rc[FLOOD_REAL] = { NULL };
	uint64_t t0 = rn_now_ns(), last_byte = t0;
	int i, nsc = 0, nrc = 0, ok;

	for (i = 0; i < FLOOD_REAL; i++)
		memcpy(h[i], handle, RN_HANDLE_SIZE);
	while ((nsc < FLOOD_REAL || nrc < FLOOD_REAL) && rn_now_ns() - t0 < 20000000000ull) {
		for (i = 0; i < FLOOD_REAL; i++)
			if (!sc[i]) {
				assert_int_equal(rn_connect(&f->eng, 0, h[i], 0, &sc[i]), 0);
				nsc += sc[i] != NULL;
			}
		if (nrc < FLOOD_REAL) {
			assert_int_equal(rn_accept(lc, &rc[nrc]), 0);
			nrc += rc[nrc] != NULL;
		}
		if (nslow && rn_now_ns() - last_byte > 1000000000ull) {
			/* slow-loris: one byte per second each */
			for (i = 0; i < nslow; i++)
				if (write(slow[i], "R", 1) < 0) {
				}
			last_byte = rn_now_ns();
		}
	}
	ok = nsc == FLOOD_REAL && nrc == FLOOD_REAL;
	for (i = 0; i < FLOOD_REAL; i++) {
		rn_close_send(sc[i]);
		rn_close_recv(rc[i]);
	}
	return ok ? (double)(rn_now_ns() - t0) / 1e9 : -1;
}

/* 200 idle + 50 slow-loris strangers, then 32 real connects: all succeed. */
static void flood_then_real_connects(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	int idle[FLOOD_IDLE], slow[FLOOD_SLOW], i, n, evicted = 0;
	double quiet, flooded;
	uint64_t t0;

	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	quiet = connect_all(f, lc, handle, NULL, 0);
	assert_true(quiet >= 0);
	/* the flood arrives while nobody accepts (the kernel's queue holds it) */
	for (i = 0; i < FLOOD_IDLE; i++)
		idle[i] = raw_nb_client(handle);
	for (i = 0; i < FLOOD_SLOW; i++)
		slow[i] = raw_nb_client(handle);
	/* the slow ones start talking: a byte each, twice, a second apart */
	t0 = rn_now_ns();
	for (n = 0; n < 2; n++) {
		for (i = 0; i < FLOOD_SLOW; i++)
			assert_int_equal(write(slow[i], "R", 1), 1);
		while (rn_now_ns() - t0 < (uint64_t)(n + 1) * 1000000000ull) {
			pump_accept(lc, 1);
			usleep(1000);
		}
	}
	flooded = connect_all(f, lc, handle, slow, FLOOD_SLOW);
	print_message("32 connects: %.3f s quiet, %.3f s under %d idle + %d slow-loris "
		      "connections\n",
		      quiet, flooded, FLOOD_IDLE, FLOOD_SLOW);
	assert_true(flooded >= 0); /* all 32 made it */
	/* the oldest strangers made room; the drops were one WARN for the address */
	for (i = 0; i < FLOOD_IDLE; i++)
		evicted += peer_closed(idle[i]);
	assert_true(evicted >= FLOOD_IDLE + FLOOD_SLOW - 64);
	assert_int_equal(fx_nwarn, 1);
	assert_true(fx_warn_seen("dropped a connection from 127.0.0.1:"));
	assert_true(fx_info_seen("handshakes in progress; the oldest without a valid HELLO"));
	for (i = 0; i < FLOOD_IDLE; i++)
		close(idle[i]);
	for (i = 0; i < FLOOD_SLOW; i++)
		close(slow[i]);
	rn_close_listen(lc);
}

static int count_fds(void)
{
	char path[64];
	int fd, n = 0;

	for (fd = 0; fd < 4096; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/*
 * A real peer whose HELLO is already queued, behind it in the kernel's queue more
 * strangers than the listener has slots: the peer is read before any of them is
 * accepted, so none of them can evict it, and the connection comes up.
 */
static void queued_hello_is_read_before_newer_strangers(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	struct rn_send_comm *sc = NULL;
	struct rn_recv_comm *rc = NULL;
	int strangers[100], i, ret = 0;

	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	/* the connector is through its TCP handshake and has sent its HELLO */
	for (i = 0; i < 20; i++) {
		assert_int_equal(rn_connect(&f->eng, 0, handle, 0, &sc), 0);
		usleep(1000);
	}
	for (i = 0; i < 100; i++)
		strangers[i] = raw_nb_client(handle);
	usleep(20000);
	for (i = 0; i < 200000 && (!sc || !rc) && !ret; i++) {
		if (!sc)
			ret = rn_connect(&f->eng, 0, handle, 0, &sc);
		if (!rc && !ret)
			ret = rn_accept(lc, &rc);
	}
	assert_int_equal(ret, 0);
	assert_non_null(sc);
	assert_non_null(rc);
	for (i = 0; i < 100; i++)
		close(strangers[i]);
	rn_close_send(sc);
	rn_close_recv(rc);
	rn_close_listen(lc);
}

struct storm {
	struct sockaddr_storage addr;
	int stop;  /* atomic */
	long made; /* connect+close pairs */
	int rate;  /* per second */
};

/* connect, close, at @rate per second until told to stop */
static void *storm_thread(void *arg)
{
	struct storm *st = arg;
	uint64_t t0 = rn_now_ns();

	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd >= 0) {
			if (connect(fd, (struct sockaddr *)&st->addr, sizeof(struct sockaddr_in)) <
			    0) {
			}
			close(fd);
			st->made++;
		}
		while ((double)st->made > (double)(rn_now_ns() - t0) / 1e9 * st->rate)
			usleep(50);
	}
	return NULL;
}

/*
 * A continuous connect+close flood at 10k/s from another thread, while 32 real connects
 * are made one after the other: every one comes up.
 */
static void connect_close_flood(void **state)
{
	struct fx *f = *state;
	unsigned char handle[RN_HANDLE_SIZE], h[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	struct rn_handle_info hi;
	struct storm st = { .rate = 10000 };
	pthread_t t;
	uint64_t t0;
	int n, ok = 0, i;

	assert_int_equal(rn_listen(&f->eng, 1, handle, &lc), 0);
	assert_int_equal(rn_handle_decode(handle, RN_HANDLE_SIZE, &hi), 0);
	st.addr = hi.addr;
	assert_int_equal(pthread_create(&t, NULL, storm_thread, &st), 0);
	usleep(100000);
	t0 = rn_now_ns();
	for (n = 0; n < 32; n++) {
		struct rn_send_comm *sc = NULL;
		struct rn_recv_comm *rc = NULL;
		int ret = 0;

		memcpy(h, handle, sizeof(h));
		for (i = 0; i < 2000000 && (!sc || !rc) && !ret; i++) {
			if (!sc)
				ret = rn_connect(&f->eng, 0, h, 0, &sc);
			if (!rc && !ret)
				ret = rn_accept(lc, &rc);
		}
		ok += !ret && sc && rc;
		rn_close_send(sc);
		rn_close_recv(rc);
	}
	__atomic_store_n(&st.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	print_message("connect+close flood: %ld connections at %.0f/s; %d of 32 real connects up "
		      "in %.3f s\n",
		      st.made, (double)st.made / ((double)(rn_now_ns() - t0) / 1e9 + 0.1), ok,
		      (double)(rn_now_ns() - t0) / 1e9);
	assert_int_equal(ok, 32);
	rn_close_listen(lc);
}

/*
 * Connects NCCL gave up: the handle's memory gets another listener's handle (NCCL reuses
 * an op's buffer), and the old connect, never to be called again, is freed at once: its
 * socket and verbs objects do not stay.
 */
static void abandoned_connect_is_freed(void **state)
{
	struct fx *f = *state;
	unsigned char ha[RN_HANDLE_SIZE], hb[RN_HANDLE_SIZE], h[RN_HANDLE_SIZE];
	struct rn_listen_comm *la, *lb;
	struct rn_send_comm *sc = NULL;
	int fds, objs, i;

	assert_int_equal(rn_listen(&f->eng, 1, ha, &la), 0);
	assert_int_equal(rn_listen(&f->eng, 1, hb, &lb), 0);
	objs = fake_verbs_live_objects();
	memcpy(h, ha, sizeof(h));
	for (i = 0; i < 10; i++)
		assert_int_equal(rn_connect(&f->eng, 0, h, 0, &sc), 0);
	fds = count_fds(); /* its socket, and the device's event thread's pipe */
	/* the public half changes: a new connect, the old one is gone */
	memcpy(h, hb, RN_HANDLE_PUBLIC);
	for (i = 0; i < 10; i++)
		assert_int_equal(rn_connect(&f->eng, 0, h, 0, &sc), 0);
	assert_int_equal(count_fds(), fds);
	/* a fresh handle copied whole into the same memory: the same */
	memcpy(h, ha, sizeof(h));
	for (i = 0; i < 10; i++)
		assert_int_equal(rn_connect(&f->eng, 0, h, 0, &sc), 0);
	assert_int_equal(count_fds(), fds);
	assert_true(fx_info_seen("abandoned (its handle memory now holds another handle)"));
	rn_close_listen(la);
	rn_close_listen(lb);
	/* the last one, abandoned too, is the last finalize's */
	rn_engine_close_leftovers(&f->eng);
	assert_int_equal(count_fds(), fds - 2 - 3); /* listeners, the socket, the pipe */
	assert_int_equal(fake_verbs_live_objects(), objs);
}

/*
 * An abort during connection setup, as NCCL does it: listeners with handshakes in them,
 * connects in progress, a connected pair with a registration, and nothing closed. The
 * last finalize closes it all (under ASan: no leak), and a close NCCL would make
 * afterwards finds nothing to free twice.
 */
static void abort_mid_setup_then_last_finalize(void **state)
{
	struct fx *f = *state;
	static unsigned char hl[4][RN_HANDLE_SIZE], hc[4][RN_HANDLE_SIZE];
	struct rn_listen_comm *lc[4];
	struct rn_send_comm *sc = NULL, *scx;
	struct rn_recv_comm *rc = NULL, *rcx;
	struct rn_conn_counts n;
	struct rn_mr *mr;
	char *buf = malloc(1 << 16);
	int fds, objs, i, k;

	fds = count_fds();
	objs = fake_verbs_live_objects();
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), 0);
	assert_int_equal(rn_reg_mr(sc, buf, 1 << 16, RN_PTR_HOST, &mr), 0);
	for (k = 0; k < 4; k++)
		assert_int_equal(rn_listen(&f->eng, 1, hl[k], &lc[k]), 0);
	/* two connects accepted half-way, two whose accept never comes */
	for (k = 0; k < 4; k++)
		memcpy(hc[k], hl[k], RN_HANDLE_SIZE);
	for (i = 0; i < 50; i++)
		for (k = 0; k < 4; k++) {
			assert_int_equal(rn_connect(&f->eng, 0, hc[k], 0, &scx), 0);
			assert_null(scx);
		}
	for (k = 0; k < 2; k++) {
		assert_int_equal(rn_accept(lc[k], &rcx), 0);
		assert_null(rcx);
	}
	for (i = 0; i < 50; i++)
		for (k = 2; k < 4; k++) {
			assert_int_equal(rn_connect(&f->eng, 0, hc[k], 0, &scx), 0);
			assert_null(scx);
		}
	rn_conn_count(&f->eng, &n);
	assert_int_equal(n.listeners, 4);
	assert_int_equal(n.connecting, 4);
	assert_int_equal(n.comms, 2);
	assert_int_equal(n.accepting, 2);
	assert_true(count_fds() > fds);
	rn_engine_close_leftovers(&f->eng);
	assert_true(fx_info_seen("last finalize: closed what NCCL left open"));
	assert_true(fx_info_seen("4 listeners"));
	assert_true(fx_info_seen("4 connects in progress, 2 comms, 1 memory registration"));
	rn_conn_count(&f->eng, &n);
	assert_int_equal(n.listeners + n.connecting + n.comms, 0);
	assert_int_equal(count_fds(), fds);
	assert_int_equal(fake_verbs_live_objects(), objs);
	/* NCCL's late close of what finalize freed: an error, no double free */
	assert_int_equal(rn_close_send(sc), -EINVAL);
	assert_int_equal(rn_close_listen(lc[0]), -EINVAL);
	assert_true(fx_warn_seen("no open comm of ours"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(qp_attributes, setup, teardown),
		cmocka_unit_test_setup_teardown(tc_env_wins_and_retry_kept_on_real_nics, setup,
						teardown),
		cmocka_unit_test_setup_teardown(sl_from_traffic_class, setup, teardown),
		cmocka_unit_test_setup_teardown(modify_qp_etimedout_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(modify_qp_retry_bounded, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_by_receiver, setup, teardown),
		cmocka_unit_test_setup_teardown(refused_by_sender, setup, teardown),
		cmocka_unit_test_setup_teardown(newer_peer_cause_and_long_text, setup, teardown),
		cmocka_unit_test_setup_teardown(warn_mode_connects, setup, teardown),
		cmocka_unit_test_setup_teardown(passing_check_with_a_warning, setup, teardown),
		cmocka_unit_test_setup_teardown(loopback_one_nic, setup, teardown),
		cmocka_unit_test_setup_teardown(garbage_then_serve, setup, teardown),
		cmocka_unit_test_setup_teardown(connect_waits_for_a_late_accept, setup, teardown),
		cmocka_unit_test_setup_teardown(ipv6_oob_on_the_nic_address, setup, teardown),
		cmocka_unit_test_setup_teardown(accept_waits_for_a_held_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(forged_private_area_is_data, setup, teardown),
		cmocka_unit_test_setup_teardown(stranger_deadlines, setup, teardown),
		cmocka_unit_test_setup_teardown(late_hello_outlives_a_burst, setup, teardown),
		cmocka_unit_test_setup_teardown(flood_then_real_connects, setup, teardown),
		cmocka_unit_test_setup_teardown(queued_hello_is_read_before_newer_strangers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(connect_close_flood, setup, teardown),
		cmocka_unit_test_setup_teardown(connect_again_after_an_early_reset, setup,
						teardown),
		cmocka_unit_test_setup_teardown(abandoned_connect_is_freed, setup, teardown),
		cmocka_unit_test_setup_teardown(abort_mid_setup_then_last_finalize, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
