// SPDX-License-Identifier: MIT
/* Host facts: effective sysctls, IP/GID helpers, the snapshot over a fake host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "fake_nl.h"
#include "rn_nic.h"

/* the findings a test's NIC holds are released when it goes out of scope */
#define AUTO_NIC __attribute__((cleanup(rn_nic_cleanup)))

static struct rn_sysctls S(int ig, int an, int fi, int rp, int al) {
	struct rn_sysctls s = { ig, an, fi, rp, al, 0, 0 };

	return s;
}

static void
test_effective_max_and_or(void **state)
{
	struct rn_sysctls all, dev, e;

	all = S(0, 0, 0, 1, 0);
	dev = S(1, 2, 0, 0, 0);
	rn_sysctls_effective(&all, &dev, &e);
	assert_int_equal(e.arp_ignore, 1);   /* max */
	assert_int_equal(e.arp_announce, 2); /* max */
	assert_int_equal(e.rp_filter, 1);    /* max: dev 0 does not undo all 1 */
	assert_int_equal(e.arp_filter, 0);
	all = S(2, 1, 1, 2, 0);
	dev = S(1, 0, 0, 1, 1);
	rn_sysctls_effective(&all, &dev, &e);
	assert_int_equal(e.arp_ignore, 2);
	assert_int_equal(e.arp_announce, 1);
	assert_int_equal(e.rp_filter, 2);    /* loose beats strict */
	assert_int_equal(e.arp_filter, 1);   /* OR */
	assert_int_equal(e.accept_local, 1); /* OR */
	/* unreadable (-1) counts as 0 */
	all = S(-1, -1, -1, -1, -1);
	dev = S(-1, 2, -1, -1, -1);
	rn_sysctls_effective(&all, &dev, &e);
	assert_int_equal(e.arp_ignore, 0);
	assert_int_equal(e.arp_announce, 2);
	assert_int_equal(e.arp_filter, 0);
}

static void test_arp_ignore_protection_values(void **state)
{
	assert_false(rn_arp_ignore_protects(0));
	assert_true(rn_arp_ignore_protects(1));
	assert_true(rn_arp_ignore_protects(2));
	assert_false(rn_arp_ignore_protects(3));
	assert_false(rn_arp_ignore_protects(5)); /* reserved values answer */
	assert_false(rn_arp_ignore_protects(8)); /* answers nothing at all */
	assert_true(rn_arp_ignore_quiet(8));
	assert_false(rn_arp_ignore_quiet(3));
}

static void test_ip_from_gid(void **state)
{
	union ibv_gid g;
	struct rn_ip ip, back;
	char b[64];

	memset(&g, 0, sizeof(g));
	assert_int_equal(rn_ip_from_gid(&g, &ip), -EINVAL); /* zero */
	g.raw[0] = 0xfe;
	g.raw[1] = 0x80;
	g.raw[15] = 1;
	assert_int_equal(rn_ip_from_gid(&g, &ip), -EINVAL); /* link-local */
	assert_int_equal(rn_ip_parse("198.18.0.7", &back), 0);
	rn_gid_from_ip(&back, &g);
	assert_int_equal(g.raw[10], 0xff);
	assert_int_equal(rn_ip_from_gid(&g, &ip), 0);
	assert_int_equal(ip.family, AF_INET);
	assert_string_equal(rn_ip_str(&ip, b, sizeof(b)), "198.18.0.7");
	assert_int_equal(rn_ip_parse("fd00::5", &back), 0);
	rn_gid_from_ip(&back, &g);
	assert_int_equal(rn_ip_from_gid(&g, &ip), 0);
	assert_int_equal(ip.family, AF_INET6);
	assert_true(rn_ip_equal(&ip, &back));
}

static void test_prefix_and_cidr(void **state)
{
	struct rn_ip a, net;
	int len;

	assert_int_equal(rn_cidr_parse("198.18.0.0/24", &net, &len), 0);
	assert_int_equal(len, 24);
	rn_ip_parse("198.18.0.200", &a);
	assert_true(rn_ip_in_prefix(&a, &net, 24));
	assert_false(rn_ip_in_prefix(&a, &net, 25));
	rn_ip_parse("198.18.1.1", &a);
	assert_false(rn_ip_in_prefix(&a, &net, 24));
	assert_true(rn_ip_in_prefix(&a, &net, 15));
	assert_int_equal(rn_cidr_parse("198.18.0.0/33", &net, &len), -EINVAL);
	assert_int_equal(rn_cidr_parse("nonsense", &net, &len), -EINVAL);
	assert_int_equal(rn_cidr_parse("fd00::/8", &net, &len), 0);
	assert_int_equal(len, 8);
	assert_int_equal(rn_cidr_parse("198.18.0.1", &net, &len), 0);
	assert_int_equal(len, 32);
}

static void test_snapshot_reads_fake_host(void **state)
{
	static struct fake_nl_host H;
	struct rn_host *h;
	const struct rn_sysctls *e;
	struct rn_host_link *l;
	int i;

	fake_nl_init(&H);
	fake_link(&H, 2, "eth0", 0x10, 1);
	fake_addr(&H, 2, "198.18.0.1/24", 0);
	fake_rule(&H, 200, "198.18.0.1/32", 200);
	fake_rule(&H, 100, "198.18.0.9/32", 100);
	fake_sysctl(&H, "all", "arp_ignore", 1);
	fake_sysctl(&H, "eth0", "arp_announce", 2);
	fake_sysctl(&H, "eth0", "rp_filter", 1);
	fake_nl_install(&H);
	assert_int_equal(rn_host_snapshot(&h), 0);
	assert_int_equal(h->nlinks, 2);
	assert_int_equal(h->naddrs, 1);
	for (i = 1; i < h->nrules; i++)
		assert_true(h->rules[i - 1].priority <= h->rules[i].priority);
	l = rn_host_link_by_name(h, "eth0");
	assert_non_null(l);
	e = rn_host_sysctls(h, l);
	assert_int_equal(e->arp_ignore, 1);
	assert_int_equal(e->arp_announce, 2);
	assert_int_equal(e->rp_filter, 1);
	{
		struct rn_nic nic AUTO_NIC = { 0 };

		assert_int_equal(rn_nic_from_netdev(h, "nope0", &nic), -ENODEV);
		assert_int_equal(rn_nic_from_netdev(h, "eth0", &nic), 0);
		assert_int_equal(nic.ifindex, 2);
		assert_int_equal(nic.mac[5], 0x10);
		assert_int_equal(nic.mtu, 1500);
		assert_true(nic.link_up);
	}
	rn_host_free(h);
	fake_nl_uninstall();
}

static void test_roce_mtu(void **state)
{
	assert_int_equal(rn_roce_mtu_of(1500), 1024);
	assert_int_equal(rn_roce_mtu_of(4200), 4096);
	assert_int_equal(rn_roce_mtu_of(9000), 4096);
	assert_int_equal(rn_roce_mtu_of(2200), 2048);
	assert_int_equal(rn_ibv_mtu_bytes(IBV_MTU_4096), 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_effective_max_and_or),
		cmocka_unit_test(test_arp_ignore_protection_values),
		cmocka_unit_test(test_ip_from_gid),
		cmocka_unit_test(test_prefix_and_cidr),
		cmocka_unit_test(test_snapshot_reads_fake_host),
		cmocka_unit_test(test_roce_mtu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
