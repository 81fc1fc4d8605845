// SPDX-License-Identifier: MIT
/* Per-connection check (state machine) and diagnosis over a fake host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/neighbour.h>
#include <cmocka.h>

#include "fake_nl.h"
#include "rn_nic.h"

/* a finding a test holds is released when it goes out of scope */
#define AUTO_FINDING __attribute__((cleanup(rn_finding_clear)))

static struct fake_nl_host H;
static struct rn_config cfg;
static struct rn_nic nic;
static struct rn_peer_facts peer;

/* Our eth1 (198.18.0.2) with policy routing; the peer is 198.18.0.10, MAC ..:20. */
static int setup(void **state)
{
	struct rn_host *h;

	fake_nl_init(&H);
	fake_link(&H, 2, "eth0", 0x10, 1);
	fake_link(&H, 3, "eth1", 0x11, 1);
	fake_addr(&H, 2, "198.18.0.1/24", 0);
	fake_addr(&H, 3, "198.18.0.2/24", 0);
	fake_policy_routing(&H, 2, 2, "198.18.0.0/24");
	rn_config_defaults(&cfg);
	fake_nl_install(&H);
	assert_int_equal(rn_host_snapshot(&h), 0);
	assert_int_equal(rn_nic_from_netdev(h, "eth1", &nic), 0);
	assert_int_equal(rn_nic_assess(h, NULL, &nic, &cfg), 0);
	assert_int_equal(nic.verdict, RN_VERDICT_OK);
	rn_host_free(h);
	memset(&peer, 0, sizeof(peer));
	snprintf(peer.host, sizeof(peer.host), "gpu7");
	snprintf(peer.netdev, sizeof(peer.netdev), "ens1");
	rn_ip_parse("198.18.0.10", &peer.ip);
	peer.mac[0] = 0x02;
	peer.mac[5] = 0x20;
	peer.mtu = 1500;
	return 0;
}

static int teardown(void **state)
{
	rn_nic_cleanup(&nic);
	fake_nl_uninstall();
	return 0;
}

/* Poll until decided (bounded by a poll count, not by time). */
static int run(int timeout_ms, struct rn_finding *f, int *polls)
{
	struct rn_conn_check *c;
	int ret, n = 0;

	assert_int_equal(rn_conn_check_start(&nic, &peer, timeout_ms, &c), 0);
	do {
		ret = rn_conn_check_poll(c, f);
		if (ret == -EAGAIN)
			usleep(1000);
	} while (ret == -EAGAIN && ++n < 100000);
	rn_conn_check_free(c);
	if (polls)
		*polls = n;
	return ret;
}

static void test_right_mac_passes(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	fake_neigh(&H, 3, "198.18.0.10", 0x20, NUD_REACHABLE);
	assert_int_equal(run(1000, &f, NULL), 0);
	assert_int_equal(f.cause, RN_CAUSE_NONE);
	assert_int_equal(H.probes, 0);
}

static void test_stale_wrong_mac_refused(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	/* STALE still goes into a QP at RTR: it counts. */
	fake_neigh(&H, 3, "198.18.0.10", 0x21, NUD_STALE);
	assert_int_equal(run(1000, &f, NULL), -EHOSTUNREACH);
	assert_int_equal(f.cause, RN_CAUSE_NEIGH_WRONG_MAC);
	assert_non_null(strstr(f.msg, "198.18.0.10"));
	assert_non_null(strstr(f.msg, "02:00:00:00:00:21")); /* the MAC it holds */
	assert_non_null(strstr(f.msg, "02:00:00:00:00:20")); /* the peer's */
	assert_non_null(strstr(f.msg, "gpu7"));
	assert_non_null(strstr(f.fix, "ip neigh flush dev eth1 to 198.18.0.10"));
}

/* A PERMANENT entry: nothing on the peer made it; deleting it is the whole fix. */
static void test_static_wrong_mac_deleted(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	fake_neigh(&H, 3, "198.18.0.10", 0x21, NUD_PERMANENT);
	assert_int_equal(run(1000, &f, NULL), -EHOSTUNREACH);
	assert_int_equal(f.cause, RN_CAUSE_NEIGH_WRONG_MAC);
	assert_non_null(strstr(f.msg, "PERMANENT"));
	assert_string_equal(f.fix, "ip neigh del 198.18.0.10 dev eth1");
	assert_string_equal(f.pre_fix, "");
}

static void test_entry_on_other_nic_does_not_count(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	fake_neigh(&H, 2, "198.18.0.10", 0x21, NUD_REACHABLE); /* eth0's, not ours */
	fake_neigh_on_probe(&H, 3, "198.18.0.10", 0x20);
	assert_int_equal(run(1000, &f, NULL), 0);
	assert_int_equal(H.probes, 1);
}

static void test_absent_then_resolved_by_probe(void **state)
{
	struct rn_conn_check *c;
	struct rn_finding f AUTO_FINDING = { 0 };

	fake_neigh_on_probe(&H, 3, "198.18.0.10", 0x20);
	assert_int_equal(rn_conn_check_start(&nic, &peer, 1000, &c), 0);
	assert_int_equal(H.probes, 1);
	assert_int_equal(rn_conn_check_poll(c, &f), 0);
	rn_conn_check_free(c);
}

static void test_incomplete_then_wrong_mac(void **state)
{
	struct rn_conn_check *c;
	struct rn_finding f AUTO_FINDING = { 0 };

	fake_neigh(&H, 3, "198.18.0.10", -1, NUD_INCOMPLETE);
	assert_int_equal(rn_conn_check_start(&nic, &peer, 1000, &c), 0);
	assert_int_equal(rn_conn_check_poll(c, &f), -EAGAIN);
	H.neighs[0].state = NUD_REACHABLE;
	H.neighs[0].has_mac = 1;
	H.neighs[0].mac[0] = 0x02;
	H.neighs[0].mac[5] = 0x21;
	assert_int_equal(rn_conn_check_poll(c, &f), -EHOSTUNREACH);
	assert_int_equal(f.cause, RN_CAUSE_NEIGH_WRONG_MAC);
	/* decided: asking again gives the same answer */
	assert_int_equal(rn_conn_check_poll(c, &f), -EHOSTUNREACH);
	rn_conn_check_free(c);
}

static void test_unresolved_times_out(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };
	int polls;

	assert_int_equal(run(30, &f, &polls), -EHOSTUNREACH);
	assert_int_equal(f.cause, RN_CAUSE_NEIGH_UNRESOLVED);
	assert_non_null(strstr(f.msg, "30 ms"));
	assert_true(polls > 0);
	assert_true(H.probes >= 1);
}

static void test_peer_refused(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	peer.verdict_cause = RN_CAUSE_ARP_FLUX;
	assert_int_equal(run(1000, &f, NULL), -EHOSTUNREACH);
	assert_int_equal(f.cause, RN_CAUSE_PEER_REFUSED);
	assert_non_null(strstr(f.msg, "arp-flux"));
}

static void test_mtu_mismatch_warns_only(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };
	const struct rn_finding *all;
	struct rn_conn_check *c;

	peer.mtu = 9000;
	fake_neigh(&H, 3, "198.18.0.10", 0x20, NUD_REACHABLE);
	assert_int_equal(rn_conn_check_start(&nic, &peer, 1000, &c), 0);
	assert_int_equal(rn_conn_check_poll(c, &f), 0);
	assert_int_equal(f.cause, RN_CAUSE_MTU_MISMATCH);
	assert_int_equal(f.sev, RN_SEV_WARN);
	assert_int_equal(rn_conn_check_findings(c, &all), 1);
	assert_int_equal(all[0].cause, RN_CAUSE_MTU_MISMATCH);
	assert_non_null(strstr(all[0].fix, "ip link set dev eth1 mtu 9000"));
	rn_conn_check_free(c);
}

static void test_route_via_other_nic_refused(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	/* Break eth1's table: it now routes the subnet out of eth0. */
	H.routes[H.nroutes - 1].oif = 2;
	assert_int_equal(run(1000, &f, NULL), -EHOSTUNREACH);
	assert_int_equal(f.cause, RN_CAUSE_ROUTE_WRONG_NIC);
	assert_non_null(strstr(f.msg, "eth0"));
}

static void test_route_fix_never_names_main(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	/* A NIC without a rule of its own: the fix must propose a table, not main (254). */
	nic.table = 254;
	H.routes[H.nroutes - 1].oif = 2;
	assert_int_equal(run(1000, &f, NULL), -EHOSTUNREACH);
	assert_int_equal(f.cause, RN_CAUSE_ROUTE_WRONG_NIC);
	assert_non_null(strstr(f.fix, "ip rule add from"));
	assert_null(strstr(f.fix, "lookup 254"));
}

static void test_local_peer_is_fine(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	rn_ip_parse("198.18.0.1", &peer.ip);
	assert_int_equal(run(1000, &f, NULL), 0);
	assert_int_equal(H.probes, 0);
}

static void test_bad_args(void **state)
{
	struct rn_conn_check *c;

	assert_int_equal(rn_conn_check_start(NULL, &peer, 10, &c), -EINVAL);
	rn_ip_parse("fd00::1", &peer.ip);
	assert_int_equal(rn_conn_check_start(&nic, &peer, 10, &c), -EAFNOSUPPORT);
	assert_int_equal(rn_conn_check_poll(NULL, NULL), -EINVAL);
	rn_conn_check_free(NULL);
}

static void test_diag(void **state)
{
	struct rn_finding f AUTO_FINDING = { 0 };

	assert_int_equal(rn_diagnose_peer(&nic, &peer, &f), 0);
	assert_int_equal(f.cause, RN_CAUSE_NEIGH_UNRESOLVED);
	assert_int_equal(H.probes, 0); /* diagnosis never sends ARP */
	fake_neigh(&H, 3, "198.18.0.10", 0x21, NUD_REACHABLE);
	assert_int_equal(rn_diagnose_peer(&nic, &peer, &f), 0);
	assert_int_equal(f.cause, RN_CAUSE_NEIGH_WRONG_MAC);
	H.neighs[0].mac[5] = 0x20;
	assert_int_equal(rn_diagnose_peer(&nic, &peer, &f), -ENOENT);
	peer.mtu = 4200;
	assert_int_equal(rn_diagnose_peer(&nic, &peer, &f), 0);
	assert_int_equal(f.cause, RN_CAUSE_MTU_MISMATCH);
	/* carrier lost on an admin-up netdev: advice, no command that does nothing */
	H.links[2].oper_up = 0;
	assert_int_equal(rn_diagnose_peer(&nic, &peer, &f), 0);
	assert_int_equal(f.cause, RN_CAUSE_NO_CARRIER);
	assert_string_equal(f.fix, "");
	H.links[2].flags &= ~IFF_UP;
	assert_int_equal(rn_diagnose_peer(&nic, &peer, &f), 0);
	assert_int_equal(f.cause, RN_CAUSE_LINK_DOWN);
}

static void test_peer_facts_from_nic(void **state)
{
	struct rn_peer_facts p;

	rn_peer_facts_from_nic(&nic, &p);
	assert_string_equal(p.netdev, "eth1");
	assert_true(rn_ip_equal(&p.ip, &nic.ip));
	assert_memory_equal(p.mac, nic.mac, 6);
	assert_int_equal(p.verdict_cause, RN_CAUSE_NONE);
	assert_true(p.host[0]);
	/* A refused NIC advertises the cause that refused it, not an earlier warning. */
	nic.verdict = RN_VERDICT_REFUSED;
	nic.findings = calloc(2, sizeof(*nic.findings));
	assert_non_null(nic.findings);
	nic.findings_cap = nic.nfindings = 2;
	assert_int_equal(rn_finding_set(&nic.findings[0], RN_CAUSE_MTU_MISMATCH, RN_SEV_WARN, "mtu",
					"ip link"),
			 0);
	assert_int_equal(rn_finding_set(&nic.findings[1], RN_CAUSE_ARP_FLUX, RN_SEV_FATAL, "flux",
					"sysctl"),
			 0);
	rn_peer_facts_from_nic(&nic, &p);
	assert_int_equal(p.verdict_cause, RN_CAUSE_ARP_FLUX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_right_mac_passes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_wrong_mac_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_static_wrong_mac_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_entry_on_other_nic_does_not_count, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_absent_then_resolved_by_probe, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_incomplete_then_wrong_mac, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unresolved_times_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mtu_mismatch_warns_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_via_other_nic_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_fix_never_names_main, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_peer_is_fine, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_diag, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_facts_from_nic, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
