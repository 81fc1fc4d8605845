// SPDX-License-Identifier: MIT
/*
 * Port counters (src/counters.c) over a sysfs fixture: each driver's table (rxe, mlx5,
 * bnxt_re under both its names, irdma), an unknown driver saying what it lacks, and the
 * causes two snapshots tell apart, with their figures; every counter of a port by its
 * driver's name, in base units (rn_ctr_read_named, the doctor's metrics).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture_sysfs.h"
#include "rn_clock.h"
#include "rn_counters.h"
#include "rn_log.h"

static void sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		 const char *msg)
{
}

static int setup(void **state)
{
	fixture_sysfs_create();
	rn_log_set_sink(sink);
	rn_ctr_reset();
	return 0;
}

static int teardown(void **state)
{
	fixture_sysfs_destroy();
	rn_ctr_reset();
	return 0;
}

/* A RoCE port of @ib on netdev @nd. */
static void port(const char *ib, const char *nd)
{
	char p[256];

	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/link_layer", ib);
	fixture_sysfs_write(p, "Ethernet\n");
	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0", ib);
	fixture_sysfs_write(p, nd);
	snprintf(p, sizeof(p), "/sys/class/net/%s/statistics/rx_packets", nd);
	fixture_sysfs_write(p, "0\n");
	snprintf(p, sizeof(p), "/sys/class/net/%s/carrier_down_count", nd);
	fixture_sysfs_write(p, "0\n");
}

static void set(const char *ib, const char *rel, unsigned long long v)
{
	fixture_sysfs_num(v, "/sys/class/infiniband/%s/ports/1/%s", ib, rel);
}

static void set_net(const char *nd, unsigned long long v)
{
	fixture_sysfs_num(v, "/sys/class/net/%s/statistics/rx_packets", nd);
}

static const char *const rxe_files[] = {
	"hw_counters/sent_pkts",           "hw_counters/rcvd_pkts",
	"hw_counters/completer_retry_err", "hw_counters/rcvd_seq_err",
	"hw_counters/out_of_seq_request",  "hw_counters/duplicate_request",
	"hw_counters/rcvd_rnr_err",        "hw_counters/retry_exceeded_err",
	"hw_counters/link_downed",
};

static void rxe(const char *ib, const char *nd)
{
	size_t i;

	port(ib, nd);
	for (i = 0; i < sizeof(rxe_files) / sizeof(rxe_files[0]); i++)
		set(ib, rxe_files[i], 0);
}

/* Each driver's table: the counters it has are read by role, the rest said lacking. */
static void driver_tables(void **state)
{
	char lacks[256];
	struct rn_ctr_snap *s;

	rxe("rxe0", "eth0");
	port("mlx5_0", "ens1f0");
	set("mlx5_0", "counters/port_xmit_packets", 10);
	set("mlx5_0", "counters/port_rcv_packets", 11);
	set("mlx5_0", "hw_counters/local_ack_timeout_err", 12);
	set("mlx5_0", "hw_counters/packet_seq_err", 0);
	set("mlx5_0", "hw_counters/out_of_sequence", 0);
	set("mlx5_0", "hw_counters/duplicate_request", 0);
	set("mlx5_0", "hw_counters/rnr_nak_retry_err", 0);
	set("mlx5_0", "hw_counters/np_cnp_sent", 0);
	set("mlx5_0", "hw_counters/rp_cnp_handled", 0);
	set("mlx5_0", "hw_counters/np_ecn_marked_roce_packets", 0);
	set("mlx5_0", "counters/link_downed", 0);
	/* bnxt_re before 6.x names (to_retransmits), renamed by udev */
	port("roceP2p1s0f0", "ens2f0");
	set("roceP2p1s0f0", "hw_counters/max_retry_exceeded", 0);
	set("roceP2p1s0f0", "hw_counters/tx_pkts", 1);
	set("roceP2p1s0f0", "hw_counters/rx_pkts", 2);
	set("roceP2p1s0f0", "hw_counters/to_retransmits", 33);
	port("irdma0", "ens3");
	set("irdma0", "hw_counters/cnpHandled", 5);
	set("irdma0", "hw_counters/TxUDP", 6);
	set("irdma0", "hw_counters/RxUDP", 7);
	port("qedr0", "ens4");
	set("qedr0", "counters/port_xmit_packets", 8);

	assert_string_equal(rn_ctr_driver("rxe0", 1), "rxe");
	assert_string_equal(rn_ctr_driver("mlx5_0", 1), "mlx5");
	assert_string_equal(rn_ctr_driver("roceP2p1s0f0", 1), "bnxt_re");
	assert_string_equal(rn_ctr_driver("irdma0", 1), "irdma");
	assert_string_equal(rn_ctr_driver("qedr0", 1), "unknown");
	assert_null(rn_ctr_driver("mlx5_9", 1));

	assert_string_equal(rn_ctr_lacks("rxe0", 1, lacks, sizeof(lacks)),
			    "CNPs sent, CNPs handled, ECN-marked packets");
	assert_string_equal(rn_ctr_lacks("mlx5_0", 1, lacks, sizeof(lacks)), "retries exhausted");
	assert_non_null(strstr(rn_ctr_lacks("roceP2p1s0f0", 1, lacks, sizeof(lacks)),
			       "sequence-error NAKs"));
	assert_null(strstr(lacks, "retransmission timeouts"));
	assert_non_null(strstr(rn_ctr_lacks("irdma0", 1, lacks, sizeof(lacks)),
			       "retransmission timeouts"));
	assert_null(strstr(lacks, "CNPs handled"));
	/* an unknown driver: the PMA packet counters only, and it says what it lacks */
	assert_non_null(strstr(rn_ctr_lacks("qedr0", 1, lacks, sizeof(lacks)),
			       "packets received, retransmission timeouts"));

	s = rn_ctr_snap_take();
	assert_non_null(s);
	assert_int_equal(s->n, 5);
	/* the NIC list is sorted: irdma0 mlx5_0 qedr0 roceP2p1s0f0 rxe0 */
	assert_int_equal(s->nic[0].v[RN_CTR_CNP_RCVD], 5);
	assert_int_equal(s->nic[0].v[RN_CTR_TX], 6);
	assert_int_equal(s->nic[1].v[RN_CTR_TIMEOUT], 12);
	assert_int_equal(s->nic[1].v[RN_CTR_RX], 11);
	assert_int_equal(s->nic[2].v[RN_CTR_TX], 8);
	assert_false(s->nic[2].have & (1u << RN_CTR_RX));
	assert_int_equal(s->nic[3].v[RN_CTR_TIMEOUT], 33);
	assert_int_equal(s->nic[3].v[RN_CTR_RX], 2);
	rn_ctr_snap_free(s);
}

/* The newer bnxt_re names win where both exist. */
static void bnxt_new_names(void **state)
{
	struct rn_ctr_snap *s;

	port("bnxt_re0", "ens5");
	set("bnxt_re0", "hw_counters/local_ack_timeout_err", 4);
	set("bnxt_re0", "hw_counters/to_retransmits", 99);
	set("bnxt_re0", "hw_counters/rx_cnp_pkts", 3);
	set("bnxt_re0", "hw_counters/rx_ecn_marked_pkts", 2);
	s = rn_ctr_snap_take();
	assert_non_null(s);
	assert_int_equal(s->nic[0].v[RN_CTR_TIMEOUT], 4);
	assert_int_equal(s->nic[0].v[RN_CTR_CNP_RCVD], 3);
	assert_int_equal(s->nic[0].v[RN_CTR_ECN], 2);
	rn_ctr_snap_free(s);
}

/*
 * A comm's baseline is the history's newest snapshot while it is younger than a tick (no
 * sysfs read: NCCL makes hundreds of comms at start), or newer than the comm; a new one after.
 */
static void shared_baseline_within_a_tick(void **state)
{
	struct rn_ctr_snap *a, *b, *c, *d;
	uint64_t t0 = rn_now_ns();

	port("rxe0", "eth0");
	set("rxe0", "hw_counters/sent_pkts", 10);
	a = rn_ctr_snap_shared(t0);
	assert_non_null(a);
	assert_int_equal(a->nic[0].v[RN_CTR_TX], 10);
	set("rxe0", "hw_counters/sent_pkts", 20);
	b = rn_ctr_snap_shared(a->t_ns + RN_CTR_TICK_NS / 2);
	assert_non_null(b);
	assert_int_equal(b->nic[0].v[RN_CTR_TX], 10); /* the shared copy, not a new read */
	assert_int_equal(b->t_ns, a->t_ns);
	c = rn_ctr_snap_shared(a->t_ns + RN_CTR_TICK_NS);
	assert_non_null(c);
	assert_int_equal(c->nic[0].v[RN_CTR_TX], 20);
	/* a comm made while an event thread's snapshot was being read (it waited for the
	 * lock): the snapshot, newer than the comm, is shared, not read a second time */
	set("rxe0", "hw_counters/sent_pkts", 30);
	d = rn_ctr_snap_shared(c->t_ns - 1000);
	assert_non_null(d);
	assert_int_equal(d->nic[0].v[RN_CTR_TX], 20);
	assert_int_equal(d->t_ns, c->t_ns);
	rn_ctr_snap_free(d);
	rn_ctr_snap_free(a);
	rn_ctr_snap_free(b);
	rn_ctr_snap_free(c);
	/* and it is the history's too: the failure's judge finds it */
	c = rn_ctr_recent(0);
	assert_non_null(c);
	rn_ctr_snap_free(c);
}

static enum rn_cause judge(struct rn_ctr_snap *a, struct rn_vars *v)
{
	struct rn_ctr_snap *b = rn_ctr_snap_take();
	enum rn_cause c;

	assert_non_null(b);
	c = rn_ctr_judge(a, NULL, b, "rxe0", 1, v);
	rn_ctr_snap_free(b);
	return c;
}

/* Two rxe NICs on one host: each cause the deltas tell apart, with its figures. */
static void causes(void **state)
{
	struct rn_vars v = RN_VARS_INIT;
	struct rn_ctr_snap *a;

	rxe("rxe0", "eth0");
	rxe("rxe1", "eth1");
	a = rn_ctr_snap_take();
	assert_non_null(a);

	/* nothing moved */
	assert_int_equal(judge(a, &v), RN_CAUSE_NONE);
	assert_non_null(strstr(rn_vars_get(&v, "counters"), "none moved"));

	/* sent and retransmitted, nothing back: no-reply */
	set("rxe0", "hw_counters/sent_pkts", 400);
	set("rxe0", "hw_counters/rcvd_pkts", 3);
	set("rxe0", "hw_counters/completer_retry_err", 6);
	assert_int_equal(judge(a, &v), RN_CAUSE_NO_REPLY);
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "sent 400 packets and received 3"));
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "6 retransmission timeouts"));
	assert_null(strstr(rn_vars_get(&v, "figures"), "firewall here"));

	/* ...and our own netdev got what rxe0 never saw: dropped on this host */
	set_net("eth0", 450);
	assert_int_equal(judge(a, &v), RN_CAUSE_NO_REPLY);
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "eth0 itself received 447 packets"));
	set_net("eth0", 3);

	/* the replies land on eth1, whose rxe1 takes none of them: replies-elsewhere */
	set_net("eth1", 150);
	assert_int_equal(judge(a, &v), RN_CAUSE_REPLIES_ELSEWHERE);
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "eth1 (rxe1) received 150 packets"));
	assert_non_null(strstr(rn_vars_get(&v, "counters"), "eth1 (rxe1) got 150 packets"));
	/* eth1's own RoCE traffic is no stray */
	set("rxe1", "hw_counters/rcvd_pkts", 150);
	assert_int_equal(judge(a, &v), RN_CAUSE_NO_REPLY);

	/* replies come back, but with retransmissions and out-of-sequence: fabric-loss */
	set("rxe0", "hw_counters/rcvd_pkts", 380);
	set("rxe0", "hw_counters/out_of_seq_request", 9);
	assert_int_equal(judge(a, &v), RN_CAUSE_FABRIC_LOSS);
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "6 retransmission timeouts"));
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "9 out-of-sequence packets"));

	/* RNR NAKs name the receiver */
	set("rxe0", "hw_counters/rcvd_rnr_err", 2);
	assert_int_equal(judge(a, &v), RN_CAUSE_RNR);
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "2 RNR NAKs"));

	/* a counter that went backwards (driver reset) is no delta */
	set("rxe0", "hw_counters/sent_pkts", 0);
	set("rxe0", "hw_counters/rcvd_pkts", 0);
	set("rxe0", "hw_counters/completer_retry_err", 0);
	set("rxe0", "hw_counters/out_of_seq_request", 0);
	set("rxe0", "hw_counters/rcvd_rnr_err", 0);
	assert_int_equal(judge(a, &v), RN_CAUSE_NONE);

	/* an unknown NIC: nothing to judge, said so */
	assert_int_equal(rn_ctr_judge(a, NULL, a, "mlx5_7", 1, &v), RN_CAUSE_NONE);
	assert_non_null(strstr(rn_vars_get(&v, "counters"), "none read for mlx5_7:1"));
	rn_ctr_snap_free(a);
	rn_vars_free(&v);
}

/*
 * UDP 4791 dropped at the peer's input: its requests reach us (and come again, since our ACKs
 * never reach it), ours never reach it. What came back is the peer's retries: no-reply, not
 * fabric-loss (seen on the bed: sent 8, received 4 of which 3 duplicates, 3 timeouts).
 */
static void peer_retries_are_no_reply(void **state)
{
	struct rn_vars v = RN_VARS_INIT;
	struct rn_ctr_snap *a;

	rxe("rxe0", "eth0");
	a = rn_ctr_snap_take();
	assert_non_null(a);
	set("rxe0", "hw_counters/sent_pkts", 8);
	set("rxe0", "hw_counters/rcvd_pkts", 4);
	set("rxe0", "hw_counters/completer_retry_err", 3);
	set("rxe0", "hw_counters/duplicate_request", 3);
	set("rxe0", "hw_counters/retry_exceeded_err", 1);
	assert_int_equal(judge(a, &v), RN_CAUSE_NO_REPLY);
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "sent 8 packets and received 4"));
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "3 of those received were the peer's"));
	/* the same duplicates beside real replies are loss on the way, not silence */
	set("rxe0", "hw_counters/rcvd_pkts", 40);
	assert_int_equal(judge(a, &v), RN_CAUSE_FABRIC_LOSS);
	rn_ctr_snap_free(a);
	rn_vars_free(&v);
}

/* mlx5: congestion marks from its DCQCN counters. */
static void congestion_mlx5(void **state)
{
	struct rn_vars v = RN_VARS_INIT;
	struct rn_ctr_snap *a, *b;

	port("mlx5_0", "ens1f0");
	set("mlx5_0", "counters/port_xmit_packets", 0);
	set("mlx5_0", "counters/port_rcv_packets", 0);
	set("mlx5_0", "hw_counters/np_ecn_marked_roce_packets", 0);
	set("mlx5_0", "hw_counters/np_cnp_sent", 0);
	set("mlx5_0", "hw_counters/rp_cnp_handled", 0);
	a = rn_ctr_snap_take();
	set("mlx5_0", "counters/port_xmit_packets", 1000);
	set("mlx5_0", "counters/port_rcv_packets", 1000);
	set("mlx5_0", "hw_counters/np_ecn_marked_roce_packets", 40);
	set("mlx5_0", "hw_counters/np_cnp_sent", 40);
	b = rn_ctr_snap_take();
	assert_int_equal(rn_ctr_judge(a, NULL, b, "mlx5_0", 1, &v), RN_CAUSE_CONGESTION);
	assert_non_null(strstr(rn_vars_get(&v, "figures"), "40 ECN-marked packets received, 40 "
							   "CNPs sent"));
	assert_int_equal(rn_ctr_delta(a, b, "mlx5_0", 1, RN_CTR_TX), 1000);
	rn_ctr_snap_free(a);
	rn_ctr_snap_free(b);
	rn_vars_free(&v);
}

/* The history: the newest snapshot before a time, else the oldest kept. */
static void history(void **state)
{
	struct rn_ctr_snap *s;

	rxe("rxe0", "eth0");
	assert_null(rn_ctr_recent(~0ull));
	rn_ctr_tick(RN_CTR_TICK_NS * 10);
	s = rn_ctr_recent(~0ull);
	assert_non_null(s);
	rn_ctr_snap_free(s);
	s = rn_ctr_recent(0); /* none before: the oldest */
	assert_non_null(s);
	rn_ctr_snap_free(s);
}

static const struct rn_ctr_named *named(const struct rn_ctr_named *v, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

/*
 * Every counter by the driver's name, sorted: the PMA data counters in bytes (4-byte words
 * in sysfs), a name in both groups once, the table's roles marked, lifespan and what does
 * not read as a number left out; a driver we do not know gets its files all the same.
 */
static void read_named(void **state)
{
	struct rn_ctr_named *v;
	int n, i;

	port("mlx5_0", "ens1f0");
	set("mlx5_0", "counters/port_xmit_data", 1000);
	set("mlx5_0", "counters/port_rcv_data", 3);
	set("mlx5_0", "counters/port_xmit_packets", 1000);
	set("mlx5_0", "counters/link_downed", 2);
	set("mlx5_0", "hw_counters/local_ack_timeout_err", 7);
	set("mlx5_0", "hw_counters/link_downed", 9); /* both groups: hw_counters' taken */
	set("mlx5_0", "hw_counters/lifespan", 10);
	fixture_sysfs_write("/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait", "N/A");
	port("qedr0", "ens4");
	set("qedr0", "counters/port_xmit_packets", 8);
	set("qedr0", "hw_counters/rdma_tx_bytes", 4096);

	n = rn_ctr_read_named("mlx5_0", 1, &v);
	assert_int_equal(n, 5);
	for (i = 1; i < n; i++)
		assert_true(strcmp(v[i - 1].name, v[i].name) < 0);
	assert_int_equal(named(v, n, "port_xmit_data")->value, 4000);
	assert_int_equal(named(v, n, "port_rcv_data")->value, 12);
	assert_int_equal(named(v, n, "port_xmit_packets")->value, 1000);
	assert_int_equal(named(v, n, "port_xmit_packets")->role, RN_CTR_TX);
	assert_int_equal(named(v, n, "local_ack_timeout_err")->value, 7);
	assert_int_equal(named(v, n, "local_ack_timeout_err")->role, RN_CTR_TIMEOUT);
	assert_int_equal(named(v, n, "link_downed")->value, 9);
	assert_int_equal(named(v, n, "port_xmit_data")->role, -1);
	assert_null(named(v, n, "lifespan"));
	assert_null(named(v, n, "port_xmit_wait"));
	assert_string_equal(rn_ctr_role_name(RN_CTR_TIMEOUT), "retransmission timeouts");
	assert_string_equal(rn_ctr_role_name(-1), "");
	free(v);

	n = rn_ctr_read_named("qedr0", 1, &v);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, "port_xmit_packets");
	assert_int_equal(v[0].role, RN_CTR_TX);
	assert_string_equal(v[1].name, "rdma_tx_bytes"); /* a driver's own bytes: as they are */
	assert_int_equal(v[1].value, 4096);
	free(v);

	assert_int_equal(rn_ctr_read_named("mlx5_9", 1, &v), -ENODEV);
	assert_null(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(driver_tables, setup, teardown),
		cmocka_unit_test_setup_teardown(bnxt_new_names, setup, teardown),
		cmocka_unit_test_setup_teardown(shared_baseline_within_a_tick, setup, teardown),
		cmocka_unit_test_setup_teardown(peer_retries_are_no_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(causes, setup, teardown),
		cmocka_unit_test_setup_teardown(congestion_mlx5, setup, teardown),
		cmocka_unit_test_setup_teardown(history, setup, teardown),
		cmocka_unit_test_setup_teardown(read_named, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
