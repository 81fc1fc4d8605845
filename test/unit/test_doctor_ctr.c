// SPDX-License-Identifier: MIT
/*
 * roce-doctor peer's counters around a failed RDMA probe (src/doctor/doctor_ctr.c, with
 * the host report and JSON writer compiled in), over a sysfs fixture of two rxe NICs
 * whose counters the test moves between the two reads: the counters that went up, by
 * the driver's names with the library's roles, and what the library's judge makes of
 * them (no-reply, replies-elsewhere) with its figures and fix; nothing moved; a NIC
 * whose counters cannot be read; more counters than are kept; a probe that worked
 * keeps nothing (the sanitizer sees no leak).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture_sysfs.h"
#include "rn_log.h"
#include "../../src/doctor/doctor_probe.h"
#include "rn_conncheck.h"
#include "rn_json.h"

static struct rn_nic nic;
static struct rn_peer_facts peer;
static struct rn_probe_ctr out;

static void quiet(enum rn_log_level level, unsigned long sub, const char *file, int line,
		  const char *msg)
{
}

static const char *const rxe_files[] = {
	"sent_pkts",          "rcvd_pkts",         "completer_retry_err", "rcvd_seq_err",
	"out_of_seq_request", "duplicate_request", "rcvd_rnr_err",        "retry_exceeded_err",
	"link_downed",        "lifespan",
};

static void set(const char *ib, const char *name, unsigned long long v)
{
	fixture_sysfs_num(v, "/sys/class/infiniband/%s/ports/1/hw_counters/%s", ib, name);
}

static void set_net(const char *nd, unsigned long long v)
{
	fixture_sysfs_num(v, "/sys/class/net/%s/statistics/rx_packets", nd);
}

static void rxe(const char *ib, const char *nd)
{
	char p[256];
	size_t i;

	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/link_layer", ib);
	fixture_sysfs_write(p, "Ethernet");
	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0", ib);
	fixture_sysfs_write(p, nd);
	for (i = 0; i < RN_ARRAY_SIZE(rxe_files); i++)
		set(ib, rxe_files[i], 0);
	set_net(nd, 0);
}

static int setup(void **state)
{
	rn_log_set_sink(quiet);
	fixture_sysfs_create();
	rn_ctr_reset();
	rxe("rxe0", "eth0");
	rxe("rxe1", "eth1");
	memset(&nic, 0, sizeof(nic));
	snprintf(nic.ibdev, sizeof(nic.ibdev), "rxe0");
	snprintf(nic.netdev, sizeof(nic.netdev), "eth0");
	nic.port = 1;
	assert_int_equal(rn_ip_parse("198.18.0.11", &nic.ip), 0);
	nic.prefixlen = 24;
	memset(&peer, 0, sizeof(peer));
	snprintf(peer.host, sizeof(peer.host), "hostb");
	snprintf(peer.netdev, sizeof(peer.netdev), "eth0");
	assert_int_equal(rn_ip_parse("198.18.0.21", &peer.ip), 0);
	memset(&out, 0, sizeof(out));
	return 0;
}

static int teardown(void **state)
{
	rn_probe_ctr_clear(&out);
	fixture_sysfs_destroy();
	rn_ctr_reset();
	return 0;
}

static char *print(const struct rn_probe_ctr *c)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	assert_non_null(f);
	rn_probe_ctr_print(f, "    ", c, NULL);
	fclose(f);
	return s;
}

static char *json(const struct rn_probe_ctr *c)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	struct rn_json j;

	assert_non_null(f);
	rn_json_begin_line(&j, f);
	rn_probe_ctr_json(&j, "counters", c, "hosta");
	rn_json_end(&j);
	fclose(f);
	return s;
}

static void has(const char *s, const char *want)
{
	if (!strstr(s, want)) {
		fprintf(stderr, "--- output:\n%s--- wanted: %s\n", s, want);
		fail();
	}
}

/* Sent, retransmitted, nothing back: the deltas by name and role, and no-reply. */
static void no_reply(void **state)
{
	struct rn_probe_ctr_snap *b = rn_probe_ctr_begin(&nic);
	char *s;

	assert_non_null(b);
	set("rxe0", "sent_pkts", 8);
	set("rxe0", "completer_retry_err", 7);
	set("rxe0", "retry_exceeded_err", 1);
	set("rxe0", "lifespan", 20); /* a setting: never a delta */
	rn_probe_ctr_end(b, &nic, &peer, &out);
	assert_int_equal(out.read, 1);
	assert_string_equal(out.nic, "rxe0:1");
	assert_string_equal(out.driver, "rxe");
	assert_int_equal(out.n, 3);
	assert_int_equal(out.more, 0);
	/* sorted by name */
	assert_string_equal(out.delta[0].name, "completer_retry_err");
	assert_int_equal(out.delta[0].d, 7);
	assert_int_equal(out.delta[0].role, RN_CTR_TIMEOUT);
	assert_string_equal(out.delta[2].name, "sent_pkts");
	assert_int_equal(out.shows.cause, RN_CAUSE_NO_REPLY);

	s = print(&out);
	has(s, "    counters of rxe0:1 (rxe) over the probe's ");
	has(s, " s: completer_retry_err +7 (retransmission timeouts), retry_exceeded_err +1 "
	       "(retries exhausted), sent_pkts +8 (packets sent)\n");
	assert_null(strstr(s, "has no counter of")); /* a cause shown: what it lacks is moot */
	has(s, "    they show no-reply [fatal]: rxe0:1 (eth0): nothing came back from peer "
	       "198.18.0.21 (hostb): rxe0 sent 8 packets and received 0 in ");
	has(s, "      what to do: run roce-doctor peer 198.18.0.21");
	assert_null(strstr(s, "lifespan"));
	free(s);

	s = json(&out);
	has(s, "\"counters\": {\"nic\": \"rxe0:1\", \"driver\": \"rxe\", \"window_s\": ");
	has(s, "\"deltas\": [{\"counter\": \"completer_retry_err\", \"delta\": 7, \"role\": "
	       "\"retransmission timeouts\"}, ");
	has(s, "{\"counter\": \"sent_pkts\", \"delta\": 8, \"role\": \"packets sent\"}], "
	       "\"more\": 0, \"lacks\": \"CNPs sent, CNPs handled, ECN-marked packets\", "
	       "\"shows\": [{\"cause\": \"no-reply\", \"severity\": \"fatal\"");
	free(s);
}

/* The peer's replies counted by another NIC's netdev (ARP flux): replies-elsewhere. */
static void replies_elsewhere(void **state)
{
	struct rn_probe_ctr_snap *b = rn_probe_ctr_begin(&nic);
	char *s;

	set("rxe0", "sent_pkts", 8);
	set("rxe0", "completer_retry_err", 7);
	set_net("eth1", 9); /* rxe1 took none of them: not its address */
	rn_probe_ctr_end(b, &nic, &peer, &out);
	assert_int_equal(out.shows.cause, RN_CAUSE_REPLIES_ELSEWHERE);
	s = print(&out);
	has(s, "they show replies-elsewhere [fatal]: rxe0:1 (eth0): the peer's packets land on "
	       "another NIC of this host: eth1 (rxe1) received 9 packets addressed to no "
	       "address of its own");
	/* its fix runs on the peer */
	has(s, "      fix (on hostb): ");
	has(s, "ip neigh flush dev eth0 to 198.18.0.11 nud all");
	free(s);
}

/* Nothing moved: said so, and no cause. */
static void none_moved(void **state)
{
	char *s;

	rn_probe_ctr_end(rn_probe_ctr_begin(&nic), &nic, &peer, &out);
	assert_int_equal(out.read, 1);
	assert_int_equal(out.n, 0);
	assert_int_equal(out.shows.cause, RN_CAUSE_NONE);
	s = print(&out);
	has(s, " s: none moved\n");
	has(s, "      they show nothing wrong; rxe has no counter of CNPs sent, CNPs handled, "
	       "ECN-marked packets\n");
	assert_null(strstr(s, "]: ")); /* no cause line */
	free(s);
	s = json(&out);
	has(s, "\"deltas\": [], \"more\": 0");
	has(s, "\"shows\": []}");
	free(s);
}

/* A NIC sysfs does not know (a fake device): said, not guessed. */
static void unreadable(void **state)
{
	struct rn_probe_ctr_snap *b;
	char *s;

	snprintf(nic.ibdev, sizeof(nic.ibdev), "mlx5_7");
	b = rn_probe_ctr_begin(&nic);
	assert_non_null(b);
	rn_probe_ctr_end(b, &nic, &peer, &out);
	assert_int_equal(out.read, -ENODEV);
	s = print(&out);
	assert_string_equal(s, "    counters of mlx5_7:1 around the probe: not read (No such "
			       "device)\n");
	free(s);
	s = json(&out);
	has(s, "\"counters\": {\"nic\": \"mlx5_7:1\", \"error\": \"No such device\"}");
	free(s);
}

/* More counters moved than are kept: the first by name, and how many more. */
static void more_than_kept(void **state)
{
	struct rn_probe_ctr_snap *b;
	char name[32], *s;
	int k;

	for (k = 0; k < RN_PROBE_CTR_MAX + 3; k++) {
		snprintf(name, sizeof(name), "x_%02d", k);
		set("rxe0", name, 0);
	}
	b = rn_probe_ctr_begin(&nic);
	for (k = 0; k < RN_PROBE_CTR_MAX + 3; k++) {
		snprintf(name, sizeof(name), "x_%02d", k);
		set("rxe0", name, 1);
	}
	rn_probe_ctr_end(b, &nic, &peer, &out);
	assert_int_equal(out.n, RN_PROBE_CTR_MAX);
	assert_int_equal(out.more, 3);
	s = print(&out);
	has(s, "x_15 +1 and 3 more\n");
	free(s);
}

/* A probe that worked: the snapshot is dropped, nothing to print. */
static void probe_worked(void **state)
{
	char *s;

	rn_probe_ctr_end(rn_probe_ctr_begin(&nic), NULL, NULL, NULL);
	rn_probe_ctr_end(NULL, &nic, &peer, &out); /* no snapshot taken: nothing */
	assert_int_equal(out.read, 0);
	s = print(&out);
	assert_string_equal(s, "");
	free(s);
	s = json(&out);
	assert_string_equal(s, "{}\n");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(no_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(replies_elsewhere, setup, teardown),
		cmocka_unit_test_setup_teardown(none_moved, setup, teardown),
		cmocka_unit_test_setup_teardown(unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(more_than_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(probe_worked, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
