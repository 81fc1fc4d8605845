// SPDX-License-Identifier: MIT
/* GID choice over fixture GID tables (fake verbs) and fixture routing (fake netlink). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "fake_nl.h"
#include "fake_verbs.h"
#include "fixture_sysfs.h"
#include "rn_gid.h"
#include "rn_log.h"
#include "rn_verbs.h"
#include "rn_nic.h"

/* the findings a test's NIC holds are released when it goes out of scope */
#define AUTO_NIC __attribute__((cleanup(rn_nic_cleanup)))

/* Replace a test's NIC by a new verdict, releasing the old one's findings. */
static void renew(struct rn_nic *dst, struct rn_nic src)
{
	rn_nic_cleanup(dst);
	*dst = src;
}

#define V1 IBV_GID_TYPE_ROCE_V1
#define V2 IBV_GID_TYPE_ROCE_V2

static struct fake_nl_host H;
static struct fake_dev dev;
static struct rn_config cfg;

static int setup(void **state)
{
	fake_nl_init(&H);
	fake_link(&H, 2, "eth0", 0x10, 1);
	fake_addr(&H, 2, "198.18.0.1/24", 0);
	memset(&dev, 0, sizeof(dev));
	dev.name = "mlx5_0";
	dev.nports = 1;
	rn_config_defaults(&cfg);
	return 0;
}

static void gids(const struct fake_gid *g, int n)
{
	int i;

	for (i = 0; i < n; i++)
		dev.ports[0].gids[i] = g[i];
}

/* Open the fake device, assess port 1 of eth0, close; returns the NIC. */
static struct rn_nic assess(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct rn_host *h;
	struct rn_nic nic = { 0 };

	fake_verbs_install(&dev, 1);
	fake_nl_install(&H);
	assert_int_equal(rn_host_snapshot(&h), 0);
	list = rn_verbs.get_device_list(NULL);
	ctx = rn_verbs.open_device(list[0]);
	assert_non_null(ctx);
	assert_int_equal(rn_nic_from_netdev(h, "eth0", &nic), 0);
	snprintf(nic.ibdev, sizeof(nic.ibdev), "mlx5_0");
	nic.port = 1;
	assert_int_equal(rn_nic_assess(h, ctx, &nic, &cfg), 0);
	rn_verbs.close_device(ctx);
	rn_host_free(h);
	fake_nl_uninstall();
	assert_int_equal(fake_verbs_uninstall(), 0);
	return nic;
}

static int has(const struct rn_nic *nic, enum rn_cause c)
{
	int i;

	for (i = 0; i < nic->nfindings; i++)
		if (nic->findings[i].cause == c)
			return i + 1;
	return 0;
}

static void ip_is(const struct rn_nic *nic, const char *s)
{
	char b[64];

	assert_string_equal(rn_ip_str(&nic->ip, b, sizeof(b)), s);
}

static const struct fake_gid mlx5[] = {
	{ "fe80::10", V1, 2 },
	{ "fe80::10", V2, 2 },
	{ "198.18.0.1", V1, 2 },
	{ "198.18.0.1", V2, 2 },
};

static void test_mlx5_layout_picks_3(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	gids(mlx5, 4);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 3);
	ip_is(&nic, "198.18.0.1");
	assert_int_equal(nic.prefixlen, 24);
	assert_int_equal(nic.verdict, RN_VERDICT_OK);
	assert_int_equal(nic.table, RN_TABLE_MAIN);
}

static void test_roce_v1_wanted_picks_2(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	gids(mlx5, 4);
	cfg.roce_version = 1;
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 2);
}

static void test_rxe_layout_picks_1(void **state)
{
	static const struct fake_gid rxe[] = { { "fe80::10", V2, 2 }, { "198.18.0.1", V2, 2 } };
	struct rn_nic nic AUTO_NIC = { 0 };

	gids(rxe, 2);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 1);
	ip_is(&nic, "198.18.0.1");
}

static const struct fake_gid v6only[] = {
	{ "fe80::10", V1, 2 },
	{ "fe80::10", V2, 2 },
	{ "fd00::1", V1, 2 },
	{ "fd00::1", V2, 2 },
};

static void test_ipv6_only_is_no_gid_and_names_family(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	fake_addr(&H, 2, "fd00::1/64", 0); /* a GID is there only for the netdev's address */
	gids(v6only, 4);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, -1);
	assert_int_equal(nic.gid_why, RN_GID_WHY_NONE);
	assert_int_equal(nic.verdict, RN_VERDICT_REFUSED);
	i = has(&nic, RN_CAUSE_NO_GID);
	assert_true(i);
	assert_non_null(strstr(nic.findings[i - 1].fix, "NCCL_IB_ADDR_FAMILY=AF_INET6"));
	assert_non_null(strstr(nic.findings[i - 1].msg, "AF_INET"));
	assert_non_null(strstr(nic.findings[i - 1].msg, "fd00::1"));
}

static void test_ipv6_wanted_picks_v6_v2(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_addr(&H, 2, "fd00::1/64", 0);
	gids(v6only, 4);
	cfg.addr_family = AF_INET6;
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 3);
	ip_is(&nic, "fd00::1");
}

static const struct fake_gid two_ips[] = {
	{ "fe80::10", V1, 2 },     { "fe80::10", V2, 2 },     /* eth0 */
	{ "198.18.0.1", V1, 2 },   { "198.18.0.1", V2, 2 },   /* eth0 */
	{ "198.18.0.101", V1, 2 }, { "198.18.0.101", V2, 2 }, /* eth0 */
};

static void test_several_ips_primary_without_rules(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_addr(&H, 2, "198.18.0.101/24", 1);
	gids(two_ips, 6);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 3);
	ip_is(&nic, "198.18.0.1");
	assert_int_equal(nic.gid_why, RN_GID_WHY_PRIMARY);
}

static void test_several_ips_policy_source_wins(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_addr(&H, 2, "198.18.0.101/24", 1);
	fake_rule(&H, 100, "198.18.0.101/32", 100);
	fake_route(&H, 100, "198.18.0.0/24", 2, "198.18.0.101", NULL);
	gids(two_ips, 6);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 5);
	ip_is(&nic, "198.18.0.101");
	assert_int_equal(nic.table, 100);
	assert_int_equal(nic.gid_why, RN_GID_WHY_POLICY);
}

static void test_policy_rule_to_table_of_other_nic_is_not_a_source(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	/* The .101 rule's table routes out of eth1: not eth0's policy source. */
	fake_link(&H, 3, "eth1", 0x11, 1);
	fake_addr(&H, 2, "198.18.0.101/24", 1);
	fake_rule(&H, 100, "198.18.0.101/32", 100);
	fake_route(&H, 100, "198.18.0.0/24", 3, NULL, NULL);
	gids(two_ips, 6);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 3);
}

static void test_gid_on_other_netdev_skipped(void **state)
{
	static const struct fake_gid g[] = {
		{ "fe80::10", V1, 2 },   { "fe80::10", V2, 2 },
		{ "198.19.0.1", V1, 3 }, { "198.19.0.1", V2, 3 }, /* eth0.100 */
		{ "198.18.0.1", V1, 2 }, { "198.18.0.1", V2, 2 },
	};
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_link(&H, 3, "eth0.100", 0x10, 1);
	fake_addr(&H, 3, "198.19.0.1/24", 0);
	gids(g, 6);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 5);
	ip_is(&nic, "198.18.0.1");
}

/*
 * The mlx5 (and rxe) way to RoCE over a VLAN: the port's netdev eth0 has no address, its
 * VLAN eth0.100 has, and the VLAN's GIDs sit in the port's table bound to eth0.100. The
 * NIC is judged as eth0.100 (its address, MAC, MTU): not refused for lack of a GID on eth0.
 */
static void vlan_host(void)
{
	fake_nl_init(&H);
	fake_link(&H, 2, "eth0", 0x10, 1);
	fake_link(&H, 3, "eth0.100", 0x10, 1);
	fake_link(&H, 4, "eth0.200", 0x10, 1);
}

static const struct fake_gid vlans[] = {
	{ "fe80::10", V1, 2 },   { "fe80::10", V2, 2 },   /* eth0 */
	{ "fe80::10", V1, 3 },   { "fe80::10", V2, 3 },   /* eth0.100 */
	{ "198.18.0.1", V1, 3 }, { "198.18.0.1", V2, 3 }, /* eth0.100 */
	{ "198.18.1.1", V1, 4 }, { "198.18.1.1", V2, 4 }, /* eth0.200 */
};

static void test_vlan_gid_makes_the_vlan_the_nic(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	vlan_host();
	fake_addr(&H, 3, "198.18.0.1/24", 0);
	gids(vlans, 6);
	renew(&nic, assess());
	assert_false(has(&nic, RN_CAUSE_NO_GID));
	assert_string_equal(nic.netdev, "eth0.100");
	assert_int_equal(nic.ifindex, 3);
	assert_int_equal(nic.gid_index, 5);
	ip_is(&nic, "198.18.0.1");
	assert_int_equal(nic.prefixlen, 24);
	assert_int_equal(nic.verdict, RN_VERDICT_OK);
}

/* Two VLANs with addresses on one port: the one policy routing makes a source wins. */
static void test_vlan_with_policy_source_wins(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	vlan_host();
	fake_addr(&H, 3, "198.18.0.1/24", 0);
	fake_addr(&H, 4, "198.18.1.1/24", 0);
	gids(vlans, 8);
	renew(&nic, assess());
	assert_string_equal(nic.netdev, "eth0.100"); /* no rules: the first in table order */
	fake_rule(&H, 104, "198.18.1.1/32", 104);
	fake_route(&H, 104, "198.18.1.0/24", 4, "198.18.1.1", NULL);
	renew(&nic, assess());
	assert_string_equal(nic.netdev, "eth0.200");
	assert_int_equal(nic.gid_index, 7);
	assert_int_equal(nic.table, 104);
	assert_int_equal(nic.gid_why, RN_GID_WHY_POLICY);
}

/* The port's own address outside NCCL_IB_ADDR_RANGE, its VLAN's inside: the VLAN. */
static void test_addr_range_selects_the_vlan(void **state)
{
	static const struct fake_gid g[] = {
		{ "fe80::10", V2, 2 },
		{ "198.18.0.1", V2, 2 },
		{ "fe80::10", V2, 3 },
		{ "198.19.0.1", V2, 3 }, /* eth0.100 */
	};
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_link(&H, 3, "eth0.100", 0x10, 1);
	fake_addr(&H, 3, "198.19.0.1/24", 0);
	gids(g, 4);
	renew(&nic, assess());
	assert_string_equal(nic.netdev, "eth0"); /* untagged first while it has a GID */
	snprintf(cfg.addr_range, sizeof(cfg.addr_range), "198.19.0.0/16");
	renew(&nic, assess());
	assert_string_equal(nic.netdev, "eth0.100");
	assert_int_equal(nic.gid_index, 3);
	assert_false(has(&nic, RN_CAUSE_NO_GID));
}

/* A VLAN's GID forced with NCCL_IB_GID_INDEX: the NIC is judged where its packets go. */
static void test_forced_vlan_gid_judges_the_vlan(void **state)
{
	static const struct fake_gid g[] = {
		{ "fe80::10", V2, 2 },
		{ "198.18.0.1", V2, 2 },
		{ "fe80::10", V2, 3 },
		{ "198.19.0.1", V2, 3 }, /* eth0.100 */
	};
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_link(&H, 3, "eth0.100", 0x10, 1);
	fake_addr(&H, 3, "198.19.0.1/24", 0);
	gids(g, 4);
	cfg.gid_index = 3;
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 3);
	assert_string_equal(nic.netdev, "eth0.100");
	ip_is(&nic, "198.19.0.1");
	assert_false(has(&nic, RN_CAUSE_NO_GID));
}

static void test_forced_index_mismatch_warns(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	gids(mlx5, 4);
	cfg.gid_index = 2; /* RoCE v1 of the right IP */
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 2);
	i = has(&nic, RN_CAUSE_GID_FORCED_MISMATCH);
	assert_true(i);
	assert_non_null(strstr(nic.findings[i - 1].msg, "GID index 3"));
	assert_int_equal(nic.verdict, RN_VERDICT_WARN);
}

static void test_forced_index_agreeing_is_silent(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	gids(mlx5, 4);
	cfg.gid_index = 3;
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 3);
	assert_int_equal(nic.nfindings, 0);
	assert_int_equal(nic.gid_why, RN_GID_WHY_FORCED);
}

static int nwarn;
static char last_warn[1024];

static void sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		 const char *msg)
{
	if (level == RN_LOG_WARN) {
		nwarn++;
		snprintf(last_warn, sizeof(last_warn), "%s", msg);
	}
}

/* An index that names no GID (past the table, or an empty slot) is a bad value: WARN, auto. */
static void test_forced_bad_index_defaults_to_auto(void **state)
{
	static const int bad[] = { 9, 999, 65535 };
	struct rn_nic nic AUTO_NIC = { 0 };
	size_t i;

	gids(mlx5, 4);
	rn_log_set_sink(sink);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		nwarn = 0;
		cfg.gid_index = bad[i];
		renew(&nic, assess());
		assert_int_equal(nic.gid_index, 3);
		assert_false(has(&nic, RN_CAUSE_NO_GID));
		assert_int_equal(nic.verdict, RN_VERDICT_OK);
		assert_int_equal(nwarn, 1);
		assert_non_null(strstr(last_warn, "NCCL_IB_GID_INDEX"));
		assert_non_null(strstr(last_warn, "default"));
	}
	rn_log_set_sink(NULL);
}

/* A forced link-local GID (index 0 on RoCE) is refused at init, by name, with the fix. */
static void test_forced_link_local_refused(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	gids(mlx5, 4);
	cfg.gid_index = 0;
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, -1);
	i = has(&nic, RN_CAUSE_NO_GID);
	assert_true(i);
	assert_int_equal(nic.verdict, RN_VERDICT_REFUSED);
	assert_non_null(strstr(nic.findings[i - 1].msg, "NCCL_IB_GID_INDEX=0"));
	assert_non_null(strstr(nic.findings[i - 1].msg, "link-local fe80::10"));
	assert_non_null(strstr(nic.findings[i - 1].fix, "unset NCCL_IB_GID_INDEX"));
	assert_non_null(strstr(nic.findings[i - 1].fix, "index 3"));
	assert_null(strstr(nic.findings[i - 1].fix, "SOCKET_IFNAME"));
}

static void test_addr_range_filters(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	gids(mlx5, 4);
	snprintf(cfg.addr_range, sizeof(cfg.addr_range), "198.19.0.0/16");
	renew(&nic, assess());
	i = has(&nic, RN_CAUSE_NO_GID);
	assert_true(i);
	assert_non_null(strstr(nic.findings[i - 1].fix, "NCCL_IB_ADDR_RANGE"));
	snprintf(cfg.addr_range, sizeof(cfg.addr_range), "198.18.0.0/24");
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 3);
}

static void test_link_local_only_never_chosen(void **state)
{
	static const struct fake_gid g[] = { { "fe80::10", V1, 2 },
					     { "fe80::10", V2, 2 },
					     { "::", V2, 2 } };
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	gids(g, 3);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, -1);
	i = has(&nic, RN_CAUSE_NO_GID);
	assert_true(i);
	/* no knob helps, the address is the site's to choose: no command, what to do */
	assert_string_equal(nic.findings[i - 1].fix, "");
	assert_non_null(strstr(nic.findings[i - 1].advice, "ip addr add <address>/<prefix> dev "));
	assert_null(strstr(nic.findings[i - 1].msg, "ip addr add"));
}

/* ---- pods: a shared RDMA device seen from a pod's network namespace ---- */

/*
 * What dev.c hands over in a pod: the port's netdev named by the GID table's first entry
 * (the node's eth0, or another pod's net1: names repeat across pods), resolved in this
 * namespace if a netdev of that name is here, else ifindex 0.
 */
static int assess_from(const char *netdev, struct rn_nic *out)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct rn_host *h;
	struct rn_nic nic = { 0 };
	int ret;

	fake_verbs_install(&dev, 1);
	fake_nl_install(&H);
	assert_int_equal(rn_host_snapshot(&h), 0);
	list = rn_verbs.get_device_list(NULL);
	ctx = rn_verbs.open_device(list[0]);
	assert_non_null(ctx);
	if (rn_nic_from_netdev(h, netdev, &nic)) {
		snprintf(nic.netdev, sizeof(nic.netdev), "%s", netdev);
		nic.gid_index = -1;
	}
	snprintf(nic.ibdev, sizeof(nic.ibdev), "%s", dev.name);
	nic.port = 1;
	ret = rn_nic_assess(h, ctx, &nic, &cfg);
	rn_verbs.close_device(ctx);
	rn_host_free(h);
	fake_nl_uninstall();
	assert_int_equal(fake_verbs_uninstall(), 0);
	rn_nic_cleanup(out);
	*out = nic;
	return ret;
}

/* Pod A: lo and net1 (ifindex 3 here, a macvlan on the node's eth0) with 198.18.0.111. */
static void pod_host(void)
{
	fake_nl_init(&H);
	fake_link(&H, 3, "net1", 0x31, 1);
	fake_addr(&H, 3, "198.18.0.111/24", 0);
	dev.name = "rxe0";
}

/*
 * rxe0's table on a node with two pods: the node's eth0 (ifindex 2 in the node's
 * namespace), pod B's net1 and pod A's net1, both ifindex 3 in their own namespaces.
 */
static const struct fake_gid shared[] = {
	{ "fe80::10", V2, 2 },     { "198.18.0.10", V2, 2 }, /* node eth0 */
	{ "198.18.0.112", V2, 3 }, { "fe80::b1", V2, 3 },    /* pod B net1 */
	{ "198.18.0.111", V2, 3 }, { "fe80::a1", V2, 3 },    /* pod A net1 */
};

/* In pod A the node's eth0 is not there: the NIC is net1, with pod A's GID, never B's. */
static void test_pod_shared_device_takes_own_gid(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	pod_host();
	gids(shared, 6);
	assert_int_equal(assess_from("eth0", &nic), 0);
	assert_string_equal(nic.netdev, "net1");
	assert_int_equal(nic.ifindex, 3);
	assert_true(nic.link_up);
	assert_string_equal(nic.port_netdev, "eth0");
	assert_int_equal(nic.gid_index, 4);
	ip_is(&nic, "198.18.0.111");
	assert_int_equal(nic.prefixlen, 24);
	assert_false(has(&nic, RN_CAUSE_NO_GID));
}

/*
 * Pod A's own GID not (yet) in the table, pod B's bound to the same ifindex 3: refused
 * for want of a GID, never B's address (its packets would carry B's source).
 */
static void test_pod_other_namespace_gid_never_taken(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	pod_host();
	gids(shared, 4);
	assert_int_equal(assess_from("net1", &nic), 0);
	assert_int_equal(nic.gid_index, -1);
	i = has(&nic, RN_CAUSE_NO_GID);
	assert_true(i);
	assert_null(strstr(nic.findings[i - 1].msg, "198.18.0.112 v2 on net1"));
	assert_non_null(strstr(nic.findings[i - 1].msg, "other network namespace"));
}

/* The node's view of the same table: its eth0 is ifindex 2, and so were pods' net1 there. */
static void test_node_never_takes_a_pods_gid(void **state)
{
	static const struct fake_gid g[] = {
		{ "fe80::a1", V2, 2 },
		{ "198.18.0.111", V2, 2 }, /* a pod's net1, ifindex 2 */
		{ "fe80::10", V2, 2 },     /* eth0's IPv4 GID not yet */
	};
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_addr(&H, 2, "198.18.0.10/24", 1);
	gids(g, 3);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, -1);
	assert_true(has(&nic, RN_CAUSE_NO_GID));
}

/*
 * Repeated names: rxe1's table starts at 6 (sparse), its first GID is pod B's "net1" (so
 * dev.c names net1, which here is pod A's net1 on rxe0's port); pod A's NIC on rxe1 is
 * net2. The GID's address, not its netdev's name, says whose it is.
 */
static void test_pod_repeated_name_sparse_table(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	pod_host();
	fake_link(&H, 4, "net2", 0x32, 1);
	fake_addr(&H, 4, "198.18.0.121/24", 0);
	dev.name = "rxe1";
	dev.ports[0].gids[6] = (struct fake_gid){ "198.18.0.122", V2, 3 }; /* pod B net1 */
	dev.ports[0].gids[7] = (struct fake_gid){ "fe80::b1", V2, 3 };
	dev.ports[0].gids[9] = (struct fake_gid){ "198.18.0.121", V2, 4 }; /* pod A net2 */
	dev.ports[0].gids[10] = (struct fake_gid){ "fe80::a2", V2, 4 };
	assert_int_equal(assess_from("net1", &nic), 0);
	assert_string_equal(nic.netdev, "net2");
	assert_int_equal(nic.gid_index, 9);
	ip_is(&nic, "198.18.0.121");
}

/* A sparse table whose first GID is at 6: no index is assumed. */
static void test_sparse_table_first_gid_at_6(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	dev.ports[0].gids[6] = (struct fake_gid){ "fe80::10", V2, 2 };
	dev.ports[0].gids[7] = (struct fake_gid){ "198.18.0.1", V2, 2 };
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 7);
	assert_int_equal(nic.verdict, RN_VERDICT_OK);
}

/*
 * The port's table comes in one read (rxe has 1024 slots, mostly empty: one ioctl each
 * cost ~1,000 calls per NIC at init); a device without the table method (or whose sysfs
 * fallback fails) is read entry by entry, to the same choice.
 */
static void test_one_table_read_per_choice(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	dev.ports[0].gids[3] = (struct fake_gid){ "fe80::10", V2, 2 };
	dev.ports[0].gids[9] = (struct fake_gid){ "198.18.0.1", V1, 2 };
	dev.ports[0].gids[14] = (struct fake_gid){ "198.18.0.1", V2, 2 };
	memset(&fake_verbs_calls, 0, sizeof(fake_verbs_calls));
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 14);
	assert_int_equal(nic.verdict, RN_VERDICT_OK);
	assert_int_equal(fake_verbs_calls.query_gid_table, 1);
	assert_int_equal(fake_verbs_calls.query_gid_ex, 0);

	dev.table_fail = EOPNOTSUPP;
	memset(&fake_verbs_calls, 0, sizeof(fake_verbs_calls));
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 14);
	assert_int_equal(nic.verdict, RN_VERDICT_OK);
	assert_int_equal(fake_verbs_calls.query_gid_table, 1);
	assert_int_equal(fake_verbs_calls.query_gid_ex, FAKE_MAX_GIDS);
}

/* gid_attrs' netdev unreadable (ifindex 0 for every GID): the address decides. */
static void test_pod_unknown_netdev_attr_takes_own_address(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	pod_host();
	gids(shared, 6);
	for (i = 0; i < 6; i++)
		dev.ports[0].gids[i].ifindex = 0;
	assert_int_equal(assess_from("eth0", &nic), 0);
	assert_string_equal(nic.netdev, "net1");
	assert_int_equal(nic.gid_index, 4);
	ip_is(&nic, "198.18.0.111");
}

/*
 * GIDs whose attributes cannot be read here (bound to netdevs this namespace cannot see)
 * fail one by one: the scan goes on past them to the pod's own.
 */
static void test_pod_unreadable_gid_attrs_skipped(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	pod_host();
	gids(shared, 6);
	for (i = 0; i < 4; i++)
		dev.ports[0].gid_fail[i] = ENODEV;
	memset(&fake_verbs_calls, 0, sizeof(fake_verbs_calls));
	assert_int_equal(assess_from("eth0", &nic), 0);
	assert_string_equal(nic.netdev, "net1");
	assert_int_equal(nic.gid_index, 4);
	/* the whole-table read failed on them, so the entries were read one by one */
	assert_true(fake_verbs_calls.query_gid_table >= 1);
	assert_true(fake_verbs_calls.query_gid_ex >= 6);
}

/* A port none of whose GIDs is this namespace's (another pod's device): -ENODEV, not ours. */
static void test_pod_port_of_no_netdev_here(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };

	pod_host();
	gids(shared, 4);
	assert_int_equal(assess_from("eth0", &nic), -ENODEV);
}

/*
 * Entered with nsenter --net, /sys is still the node's: dev.c read the node's eth0 there,
 * ifindex 3, which in the pod is net1. The ifindex alone does not make the NIC net1 by the
 * name eth0: the NIC is judged as net1, its port's netdev named eth0.
 */
static void test_pod_sysfs_of_another_namespace(void **state)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct rn_host *h;
	struct rn_nic nic AUTO_NIC = { 0 };

	pod_host();
	gids(shared, 6);
	fake_verbs_install(&dev, 1);
	fake_nl_install(&H);
	assert_int_equal(rn_host_snapshot(&h), 0);
	list = rn_verbs.get_device_list(NULL);
	ctx = rn_verbs.open_device(list[0]);
	snprintf(nic.netdev, sizeof(nic.netdev), "eth0");
	nic.ifindex = 3;
	nic.mtu = 9000;
	snprintf(nic.ibdev, sizeof(nic.ibdev), "rxe0");
	nic.port = 1;
	assert_int_equal(rn_nic_assess(h, ctx, &nic, &cfg), 0);
	rn_verbs.close_device(ctx);
	rn_host_free(h);
	fake_nl_uninstall();
	assert_int_equal(fake_verbs_uninstall(), 0);
	assert_string_equal(nic.netdev, "net1");
	assert_string_equal(nic.port_netdev, "eth0");
	assert_int_equal(nic.gid_index, 4);
	assert_int_equal(nic.mtu, 1500); /* net1's, from netlink, not the node's eth0's */
}

/*
 * NCCL_IB_GID_INDEX as in NCCL: the index is used as given, also another pod's; the
 * warning says it is not this namespace's address.
 */
static void test_pod_forced_index_of_other_pod_used_and_warned(void **state)
{
	struct rn_nic nic AUTO_NIC = { 0 };
	int i;

	pod_host();
	gids(shared, 6);
	cfg.gid_index = 2;
	assert_int_equal(assess_from("eth0", &nic), 0);
	assert_int_equal(nic.gid_index, 2);
	assert_string_equal(nic.netdev, "net1");
	i = has(&nic, RN_CAUSE_GID_FORCED_MISMATCH);
	assert_true(i);
	assert_non_null(strstr(nic.findings[i - 1].msg, "GID index 4"));
	assert_non_null(strstr(nic.findings[i - 1].msg,
			       "not an address of this network namespace"));
	cfg.gid_index = 4;
	assert_int_equal(assess_from("eth0", &nic), 0);
	assert_int_equal(nic.gid_index, 4);
	assert_int_equal(nic.nfindings, 0);
}

/* SR-IOV, exclusive netns: the VF's RDMA device and netdev both in the pod (fakes only). */
static void test_pod_exclusive_vf(void **state)
{
	static const struct fake_gid g[] = { { "fe80::51", V2, 5 }, { "198.18.0.111", V2, 5 } };
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_nl_init(&H);
	fake_link(&H, 5, "net1", 0x51, 1);
	fake_addr(&H, 5, "198.18.0.111/24", 0);
	dev.name = "mlx5_3";
	gids(g, 2);
	assert_int_equal(assess_from("net1", &nic), 0);
	assert_int_equal(nic.gid_index, 1);
	assert_int_equal(nic.verdict, RN_VERDICT_OK);
}

/*
 * Another pod's own device (shared netns mode): its port's netdev is net1 of that pod, named
 * and numbered as this pod's net1, and its table holds that pod's GIDs only. The port's
 * default GID (sysfs gids/0, fe80::EUI-64 of its netdev's MAC) is not this net1's: the port
 * is left out (-ENODEV), not judged on this net1 and refused as no-gid. With this net1's MAC
 * there it is judged on net1, as before.
 */
static void test_pod_namesake_of_another_pods_device(void **state)
{
	static const struct fake_gid g[] = { { "fe80::ff:fe00:77", V2, 3 },
					     { "198.18.0.112", V2, 3 } };
	struct rn_nic nic AUTO_NIC = { 0 };

	fake_nl_init(&H);
	fake_link(&H, 3, "net1", 0x51, 1);
	fake_addr(&H, 3, "198.18.0.110/24", 0);
	dev.name = "rxb0";
	gids(g, 2);
	fixture_sysfs_create();
	fixture_sysfs_write("/sys/class/infiniband/rxb0/ports/1/gids/0",
			    "fe80:0000:0000:0000:0000:00ff:fe00:0077\n");
	assert_int_equal(assess_from("net1", &nic), -ENODEV);
	/* the same table with this net1's own default GID: its namesake is the port's netdev */
	fixture_sysfs_write("/sys/class/infiniband/rxb0/ports/1/gids/0",
			    "fe80:0000:0000:0000:0000:00ff:fe00:0051\n");
	assert_int_equal(assess_from("net1", &nic), 0);
	assert_int_equal(nic.gid_index, -1);
	fixture_sysfs_destroy();
}

/*
 * rn_gid_refresh: the address re-added behind another one comes back at another index, and
 * the old index holds the other address: followed (1). Removed: -ENOENT with gid-gone's facts.
 */
static void test_refresh_follows_the_address(void **state)
{
	const struct fake_gid g[] = {
		{ "fe80::1", V2, 2 },
		{ "198.18.0.1", V2, 2 },
	};
	struct rn_nic nic AUTO_NIC = { 0 };
	struct rn_vars v = RN_VARS_INIT;
	struct rn_finding f = { 0 };
	struct ibv_device **list;
	struct ibv_context *ctx;
	int old;

	gids(g, 2);
	renew(&nic, assess());
	assert_int_equal(nic.gid_index, 1);
	assert_int_equal(nic.gid_type, V2);
	fake_verbs_install(&dev, 1);
	list = rn_verbs.get_device_list(NULL);
	ctx = rn_verbs.open_device(list[0]);
	assert_non_null(ctx);
	/* nothing changed: one query, the same index */
	assert_int_equal(rn_gid_refresh(ctx, &nic, &old, &v), 0);
	assert_int_equal(nic.gid_index, 1);
	/* del .1; add .99 (takes slot 1); add .1 (slot 2), and a v1 twin of it first at 3 */
	dev.ports[0].gids[1] = (struct fake_gid){ "198.18.0.99", V2, 2 };
	dev.ports[0].gids[2] = (struct fake_gid){ "198.18.0.1", V1, 2 };
	dev.ports[0].gids[3] = (struct fake_gid){ "198.18.0.1", V2, 2 };
	assert_int_equal(rn_gid_refresh(ctx, &nic, &old, &v), 1);
	assert_int_equal(old, 1);
	assert_int_equal(nic.gid_index, 3); /* the same type, not the v1 twin */
	/* on another netdev it is not ours */
	dev.ports[0].gids[3].ifindex = 7;
	assert_int_equal(rn_gid_refresh(ctx, &nic, &old, &v), -ENOENT);
	dev.ports[0].gids[3].ifindex = 2;
	assert_int_equal(rn_gid_refresh(ctx, &nic, &old, &v), 0);
	/* removed */
	dev.ports[0].gids[2] = (struct fake_gid){ 0 };
	dev.ports[0].gids[3] = (struct fake_gid){ 0 };
	assert_int_equal(rn_gid_refresh(ctx, &nic, &old, &v), -ENOENT);
	assert_int_equal(nic.gid_index, 3); /* left as it was: the caller refuses */
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_GID_GONE, &v), 0);
	assert_int_equal(f.sev, RN_SEV_FATAL);
	assert_non_null(strstr(f.msg,
			       "address 198.18.0.1 is no longer in the port's GID table "
			       "(it was at index 3, which now holds nothing; the table holds idx0 "
			       "link-local v2"));
	assert_non_null(strstr(f.msg, "idx1 198.18.0.99 v2"));
	assert_string_equal(f.fix, "ip addr add 198.18.0.1/24 dev eth0");
	rn_finding_clear(&f);
	rn_vars_free(&v);
	rn_verbs.close_device(ctx);
	assert_int_equal(fake_verbs_uninstall(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_refresh_follows_the_address, setup),
		cmocka_unit_test_setup(test_mlx5_layout_picks_3, setup),
		cmocka_unit_test_setup(test_one_table_read_per_choice, setup),
		cmocka_unit_test_setup(test_roce_v1_wanted_picks_2, setup),
		cmocka_unit_test_setup(test_rxe_layout_picks_1, setup),
		cmocka_unit_test_setup(test_ipv6_only_is_no_gid_and_names_family, setup),
		cmocka_unit_test_setup(test_ipv6_wanted_picks_v6_v2, setup),
		cmocka_unit_test_setup(test_several_ips_primary_without_rules, setup),
		cmocka_unit_test_setup(test_several_ips_policy_source_wins, setup),
		cmocka_unit_test_setup(test_policy_rule_to_table_of_other_nic_is_not_a_source,
				       setup),
		cmocka_unit_test_setup(test_gid_on_other_netdev_skipped, setup),
		cmocka_unit_test_setup(test_vlan_gid_makes_the_vlan_the_nic, setup),
		cmocka_unit_test_setup(test_vlan_with_policy_source_wins, setup),
		cmocka_unit_test_setup(test_addr_range_selects_the_vlan, setup),
		cmocka_unit_test_setup(test_forced_vlan_gid_judges_the_vlan, setup),
		cmocka_unit_test_setup(test_forced_index_mismatch_warns, setup),
		cmocka_unit_test_setup(test_forced_index_agreeing_is_silent, setup),
		cmocka_unit_test_setup(test_forced_bad_index_defaults_to_auto, setup),
		cmocka_unit_test_setup(test_forced_link_local_refused, setup),
		cmocka_unit_test_setup(test_addr_range_filters, setup),
		cmocka_unit_test_setup(test_link_local_only_never_chosen, setup),
		cmocka_unit_test_setup(test_pod_shared_device_takes_own_gid, setup),
		cmocka_unit_test_setup(test_pod_other_namespace_gid_never_taken, setup),
		cmocka_unit_test_setup(test_node_never_takes_a_pods_gid, setup),
		cmocka_unit_test_setup(test_pod_repeated_name_sparse_table, setup),
		cmocka_unit_test_setup(test_sparse_table_first_gid_at_6, setup),
		cmocka_unit_test_setup(test_pod_unknown_netdev_attr_takes_own_address, setup),
		cmocka_unit_test_setup(test_pod_unreadable_gid_attrs_skipped, setup),
		cmocka_unit_test_setup(test_pod_port_of_no_netdev_here, setup),
		cmocka_unit_test_setup(test_pod_forced_index_of_other_pod_used_and_warned, setup),
		cmocka_unit_test_setup(test_pod_exclusive_vf, setup),
		cmocka_unit_test_setup(test_pod_sysfs_of_another_namespace, setup),
		cmocka_unit_test_setup(test_pod_namesake_of_another_pods_device, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
