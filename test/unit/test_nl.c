// SPDX-License-Identifier: MIT
/*
 * The real netlink edge (src/nl.c) against the kernel, inside a private network
 * namespace of this test process (unshare, as libnl's own tests do). Skipped when
 * namespaces cannot be created. Configuration is made with iproute2, which runs
 * in the same namespace as its parent.
 */
#include <errno.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <cmocka.h>

#include "rn_host.h"
#include "rn_nl.h"
#include "rn_sys.h"
#include "rn_nic.h"

/* the findings a test's NIC holds are released when it goes out of scope */
#define AUTO_NIC __attribute__((cleanup(rn_nic_cleanup)))

static int have_ns;

static int sh(const char *cmd)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s >/dev/null 2>&1", cmd);
	return system(buf);
}

static int group_setup(void **state)
{
	if (unshare(CLONE_NEWNET) || sh("ip link set lo up"))
		return 0;
	if (sh("ip link add rnd0 type veth peer name rnd0p") || sh("ip link set rnd0p up") ||
	    sh("ip link set rnd0 mtu 4200 up") || sh("ip addr add 198.18.0.1/24 dev rnd0") ||
	    sh("ip addr add 198.18.0.101/24 dev rnd0") ||
	    sh("ip link add rnd1 type veth peer name rnd1p") || sh("ip link set rnd1p up") ||
	    sh("ip link set rnd1 up") || sh("ip addr add 198.18.0.2/24 dev rnd1") ||
	    sh("ip route replace 198.18.0.0/24 dev rnd1 src 198.18.0.2 table 102") ||
	    sh("ip rule add from 198.18.0.2 lookup 102 priority 102") ||
	    sh("ip rule add from 198.18.0.2 uidrange 1000-1999 ipproto tcp dport 80 lookup 102 "
	       "priority 103") ||
	    sh("ip neigh replace 198.18.0.20 lladdr 02:00:00:00:00:20 dev rnd1 nud permanent"))
		return 0;
	have_ns = 1;
	return 0;
}

#define NEED_NS() \
	do { \
		if (!have_ns) { \
			printf("skip: cannot create a network namespace with iproute2\n"); \
			skip(); \
		} \
	} while (0)

/* The link @name as a dump has it (zeroed, oper_up -1, when there is none). */
static struct rn_nl_link link_of(const char *name)
{
	struct rn_nl_link *l, one = { .oper_up = -1 };
	int n, i;

	assert_int_equal(rn_nl.link_dump(&l, &n), 0);
	for (i = 0; i < n; i++)
		if (!strcmp(l[i].name, name))
			one = l[i];
	free(l);
	return one;
}

static int ifindex_of(const char *name)
{
	return link_of(name).ifindex;
}

static void test_links(void **state)
{
	struct rn_nl_link *l, one;
	int n, i, found = 0;

	NEED_NS();
	assert_int_equal(rn_nl.link_dump(&l, &n), 0);
	for (i = 0; i < n; i++) {
		if (strcmp(l[i].name, "rnd0"))
			continue;
		found = 1;
		assert_int_equal(l[i].mtu, 4200);
		assert_true(l[i].oper_up);
		assert_int_equal(rn_nl.link_get(l[i].ifindex, &one), 0);
		assert_string_equal(one.name, "rnd0");
		assert_memory_equal(one.mac, l[i].mac, 6);
	}
	free(l);
	assert_true(found);
	assert_int_equal(rn_nl.link_get(999999, &one), -ENODEV);
}

static int link_up_of(const char *name)
{
	return link_of(name).oper_up;
}

/* Up means admin-up with a carrier: a bridge has one while a port of it forwards. */
static void test_link_up_is_the_carrier(void **state)
{
	NEED_NS();
	assert_int_equal(sh("ip link add rnbr0 type bridge && ip link set rnbr0 up && "
			    "ip link add rnv3 type veth peer name rnv3p && ip link set rnv3p up && "
			    "ip link set rnv3 master rnbr0 && ip link set rnv3 up"),
			 0);
	assert_int_equal(link_up_of("rnbr0"), 1);
	assert_int_equal(sh("ip link set rnv3p down"), 0); /* the port loses its carrier */
	assert_int_equal(link_up_of("rnv3"), 0);
	assert_int_equal(link_up_of("rnbr0"), 0); /* admin-up, no port forwarding: NO-CARRIER */
	assert_int_equal(sh("ip link set rnv3p up"), 0);
	assert_int_equal(link_up_of("rnv3"), 1);
	assert_int_equal(sh("ip link set rnbr0 down"), 0);
	assert_int_equal(link_up_of("rnbr0"), 0); /* admin-down whatever its ports say */
	sh("ip link del rnv3");
	sh("ip link del rnbr0");
}

static void test_addrs_and_secondary(void **state)
{
	struct rn_nl_addr *a;
	int n, i, prim = 0, sec = 0, idx;
	char b[64];

	NEED_NS();
	idx = ifindex_of("rnd0");
	assert_int_equal(rn_nl.addr_dump(AF_INET, &a, &n), 0);
	for (i = 0; i < n; i++) {
		if (a[i].ifindex != idx)
			continue;
		rn_ip_str(&a[i].ip, b, sizeof(b));
		assert_int_equal(a[i].prefixlen, 24);
		if (!strcmp(b, "198.18.0.1"))
			prim = !(a[i].flags & 0x01 /* IFA_F_SECONDARY */);
		if (!strcmp(b, "198.18.0.101"))
			sec = !!(a[i].flags & 0x01);
	}
	free(a);
	assert_true(prim);
	assert_true(sec);
}

static void test_rules_and_routes(void **state)
{
	struct rn_nl_rule *r;
	struct rn_nl_route *rt;
	int n, i, found = 0, idx;
	char b[64];

	NEED_NS();
	idx = ifindex_of("rnd1");
	assert_int_equal(rn_nl.rule_dump(AF_INET, &r, &n), 0);
	for (i = 0; i < n; i++)
		if (r[i].priority == 102) {
			found = 1;
			assert_int_equal(r[i].table, 102);
			assert_int_equal(r[i].action, FR_ACT_TO_TBL);
			assert_int_equal(r[i].src_len, 32);
			assert_string_equal(rn_ip_str(&r[i].src, b, sizeof(b)), "198.18.0.2");
			assert_string_equal(r[i].more, "");
		} else if (r[i].priority == 103) {
			/* the selectors a message names, as `ip rule` shows them */
			assert_string_equal(r[i].more, "uidrange 1000-1999 ipproto 6 dport 80");
			assert_true(r[i].opaque);
		}
	free(r);
	assert_true(found);
	found = 0;
	assert_int_equal(rn_nl.route_dump(AF_INET, &rt, &n), 0);
	for (i = 0; i < n; i++)
		if (rt[i].table == 102) {
			found = 1;
			assert_int_equal(rt[i].oif, idx);
			assert_int_equal(rt[i].dst_len, 24);
			assert_string_equal(rn_ip_str(&rt[i].prefsrc, b, sizeof(b)), "198.18.0.2");
		}
	free(rt);
	assert_true(found);
}

static void test_route_get(void **state)
{
	struct rn_nl_route r;
	struct rn_ip dst, src;
	int i0, i1;

	NEED_NS();
	i0 = ifindex_of("rnd0");
	i1 = ifindex_of("rnd1");
	rn_ip_parse("198.18.0.50", &dst);
	rn_ip_parse("198.18.0.2", &src);
	assert_int_equal(rn_nl.route_get(&dst, &src, 0, &r), 0);
	assert_int_equal(r.oif, i1);
	assert_int_equal(r.table, 102); /* RTM_F_LOOKUP_TABLE */
	rn_ip_parse("198.18.0.1", &src);
	assert_int_equal(rn_nl.route_get(&dst, &src, 0, &r), 0);
	assert_int_equal(r.table, RN_TABLE_MAIN);
	/* With oif the kernel pins the egress (roce-routing.md 1.4). */
	rn_ip_parse("198.18.0.2", &src);
	assert_int_equal(rn_nl.route_get(&dst, &src, i0, &r), 0);
	assert_int_equal(r.oif, i0);
	/* Local destination. */
	rn_ip_parse("198.18.0.1", &dst);
	assert_int_equal(rn_nl.route_get(&dst, NULL, 0, &r), 0);
	assert_int_equal(r.type, RTN_LOCAL);
	/* The kernel's errno survives (libnl would say NLE_FAILURE). */
	rn_ip_parse("198.19.7.7", &dst);
	assert_int_equal(rn_nl.route_get(&dst, NULL, 0, &r), -ENETUNREACH);
	/* A source that is not ours. */
	rn_ip_parse("198.18.0.50", &dst);
	rn_ip_parse("198.18.0.77", &src);
	assert_true(rn_nl.route_get(&dst, &src, 0, &r) < 0);
}

static void test_neigh(void **state)
{
	struct rn_nl_neigh nb;
	struct rn_ip ip, src;
	int i1;

	NEED_NS();
	i1 = ifindex_of("rnd1");
	rn_ip_parse("198.18.0.20", &ip);
	assert_int_equal(rn_nl.neigh_get(i1, &ip, &nb), 0);
	assert_true(nb.has_mac);
	assert_int_equal(nb.mac[5], 0x20);
	assert_true(nb.state & NUD_PERMANENT);
	rn_ip_parse("198.18.0.21", &ip);
	assert_int_equal(rn_nl.neigh_get(i1, &ip, &nb), -ENOENT);
	/* the dump holds the permanent entry with its MAC (the host check judges it) */
	{
		struct rn_nl_neigh *all;
		int n, k, seen = 0;

		assert_int_equal(rn_nl.neigh_dump(AF_INET, &all, &n), 0);
		for (k = 0; k < n; k++)
			if (all[k].ifindex == i1 && all[k].has_mac && all[k].mac[5] == 0x20 &&
			    (all[k].state & NUD_PERMANENT))
				seen = 1;
		free(all);
		assert_true(seen);
	}
	/* The probe leaves (ARP into an empty veth), nothing answers, nothing blocks. */
	rn_ip_parse("198.18.0.2", &src);
	assert_int_equal(rn_nl.neigh_probe(i1, &src, &ip), 0);
}

/*
 * The link dump carries each device's IPv4 conf, so init reads no sysctl file per NIC:
 * the values must be /proc/sys/net/ipv4/conf/<dev>/'s. Two settings away from the
 * defaults, where no two fields agree in both (a field read from the wrong index shows),
 * and the host's per-NIC sysctls must come out as the files' would.
 */
static void check_conf_from_dump(const int want[5])
{
	struct rn_sysctls files;
	struct rn_host_link *hl;
	struct rn_nl_link *l;
	struct rn_host *h;
	char cmd[512];
	int n, i, found = 0;

	snprintf(cmd, sizeof(cmd),
		 "sysctl -w net.ipv4.conf.rnd0.arp_ignore=%d net.ipv4.conf.rnd0.arp_announce=%d "
		 "net.ipv4.conf.rnd0.arp_filter=%d net.ipv4.conf.rnd0.rp_filter=%d "
		 "net.ipv4.conf.rnd0.accept_local=%d",
		 want[0], want[1], want[2], want[3], want[4]);
	assert_int_equal(sh(cmd), 0);
	assert_int_equal(rn_sysctls_read("rnd0", &files), 0);
	assert_int_equal(files.arp_ignore, want[0]);
	assert_int_equal(files.accept_local, want[4]);
	assert_int_equal(rn_nl.link_dump(&l, &n), 0);
	for (i = 0; i < n; i++) {
		if (strcmp(l[i].name, "rnd0"))
			continue;
		found = 1;
		assert_true(l[i].has_inet_conf);
		assert_int_equal(l[i].inet_conf.arp_ignore, files.arp_ignore);
		assert_int_equal(l[i].inet_conf.arp_announce, files.arp_announce);
		assert_int_equal(l[i].inet_conf.arp_filter, files.arp_filter);
		assert_int_equal(l[i].inet_conf.rp_filter, files.rp_filter);
		assert_int_equal(l[i].inet_conf.accept_local, files.accept_local);
	}
	free(l);
	assert_true(found);
	assert_int_equal(rn_host_snapshot(&h), 0);
	hl = rn_host_link_by_name(h, "rnd0");
	assert_non_null(hl);
	rn_host_sysctls(h, hl);
	assert_memory_equal(&hl->dev, &files, sizeof(files));
	rn_host_free(h);
}

static void test_link_dump_carries_the_sysctls(void **state)
{
	static const int a[5] = { 2, 1, 1, 2, 0 }, b[5] = { 3, 2, 0, 1, 1 }, zero[5] = { 0 };

	NEED_NS();
	rn_sys_set_ops(&rn_sys_real_ops);
	check_conf_from_dump(a);
	check_conf_from_dump(b);
	check_conf_from_dump(zero);
	rn_sys_reset_ops();
}

static void test_snapshot_and_nic_from_netdev(void **state)
{
	struct rn_host *h;
	struct rn_nic nic AUTO_NIC = { 0 };
	struct rn_config cfg;

	NEED_NS();
	assert_int_equal(rn_host_snapshot(&h), 0);
	assert_true(h->nrules >= 4);
	assert_int_equal(rn_nic_from_netdev(h, "rnd1", &nic), 0);
	rn_config_defaults(&cfg);
	assert_int_equal(rn_nic_assess(h, NULL, &nic, &cfg), 0);
	assert_int_equal(nic.table, 102);
	rn_host_free(h);
}

static void *route_getter(void *arg)
{
	struct rn_ip dst, src;
	struct rn_nl_route r;
	int i, *fails = arg;

	rn_ip_parse("198.18.0.20", &dst);
	rn_ip_parse("198.18.0.2", &src);
	for (i = 0; i < 200; i++)
		if (rn_nl.route_get(&dst, &src, 0, &r) || r.table != 102)
			(*fails)++;
	return NULL;
}

/* One route socket for all requests, from any thread; a fork()ed child opens its own. */
static void test_one_socket_shared(void **state)
{
	pthread_t th[4];
	int fails[4] = { 0 }, i, status;
	unsigned long before;
	struct rn_nl_link l;
	pid_t pid;

	NEED_NS();
	rn_nl_close();
	before = rn_nl_sockets_opened();
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, route_getter, &fails[i]), 0);
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(fails[i], 0);
	}
	assert_int_equal(rn_nl_sockets_opened() - before, 1); /* 800 requests, one socket */
	/* a kernel error answer keeps the socket */
	assert_int_equal(rn_nl.link_get(999999, &l), -ENODEV);
	assert_int_equal(rn_nl.link_get(if_nametoindex("rnd0"), &l), 0);
	assert_int_equal(rn_nl_sockets_opened() - before, 1);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(rn_nl.link_get(if_nametoindex("rnd0"), &l) ||
		      rn_nl_sockets_opened() - before != 2);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(rn_nl.link_get(if_nametoindex("rnd1"), &l), 0);
	assert_int_equal(rn_nl_sockets_opened() - before, 1);
	rn_nl_close();
	assert_int_equal(rn_nl.link_get(if_nametoindex("rnd1"), &l), 0);
	assert_int_equal(rn_nl_sockets_opened() - before, 2);
}

/*
 * A dump the kernel interrupts (the table changed between two of its batches: a link coming
 * up adds addresses and routes) is asked again, not failed: seen on the bed as a plugin init
 * failing "cannot read the host's addresses and routes (Input/output error)" right after a
 * NIC came back up. 2000 addresses (on a veth) make the dump span many batches; a child adds and
 * removes one address every 10 ms or so all along (a burst of changes, not a storm: under a
 * storm every try is interrupted, and the error goes back).
 */
static void test_dump_while_the_table_changes(void **state)
{
	struct rn_nl_addr *a = NULL;
	int i, n, fails = 0, ok = 0;
	pid_t pid;
	FILE *f;

	NEED_NS();
	assert_int_equal(sh("ip link add rnd2 type veth peer name rnd2p && ip link set rnd2 up"),
			 0);
	f = popen("ip -batch - >/dev/null 2>&1", "w");
	assert_non_null(f);
	for (i = 0; i < 2000; i++)
		fprintf(f, "addr add 198.19.%d.%d/32 dev rnd2\n", 1 + i / 250, 1 + i % 250);
	assert_int_equal(pclose(f), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;)
			if (sh("ip addr add 198.19.99.1/32 dev rnd2; sleep 0.01; "
			       "ip addr del 198.19.99.1/32 dev rnd2; sleep 0.01"))
				_exit(1);
	}
	for (i = 0; i < 200; i++) {
		int r = rn_nl.addr_dump(AF_INET, &a, &n);

		if (r) {
			if (!fails++)
				printf("addr dump %d of 200: %s\n", i + 1, strerror(-r));
			continue;
		}
		ok += n >= 2000;
		free(a);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	sh("ip link del rnd2");
	assert_int_equal(fails, 0);
	assert_int_equal(ok, 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_links),
		cmocka_unit_test(test_link_up_is_the_carrier),
		cmocka_unit_test(test_addrs_and_secondary),
		cmocka_unit_test(test_rules_and_routes),
		cmocka_unit_test(test_route_get),
		cmocka_unit_test(test_neigh),
		cmocka_unit_test(test_link_dump_carries_the_sysctls),
		cmocka_unit_test(test_snapshot_and_nic_from_netdev),
		cmocka_unit_test(test_one_socket_shared),
		cmocka_unit_test(test_dump_while_the_table_changes),
	};

	/*
	 * The real netlink and /sys of a namespace of this process's own: what this test is
	 * about (the unit tests' base fails every op, test/unit/fake_base.c).
	 */
	rn_nl_set_base(NULL);
	rn_sys_set_base(NULL);
	group_setup(NULL);
	if (!have_ns) {
		printf("skip: cannot create a network namespace (needs root and iproute2)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
