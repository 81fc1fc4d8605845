// SPDX-License-Identifier: MIT
/*
 * The one definition of a NIC's table, rule priority and management NIC (policy.c,
 * shared with scripts/roce-policy-routing): 100 + ifindex, taken numbers skipped in
 * ifindex order, the priority ahead of every shadowing rule, main's best default route.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include "fake_nl.h"
#include "rn_policy.h"

static struct fake_nl_host H;

/* lo (1), eth0 (2) .1, eth1 (3) .2 in 198.18.0.0/24; the kernel's rules only. */
static int setup(void **state)
{
	fake_nl_init(&H);
	fake_link(&H, 2, "eth0", 0x10, 1);
	fake_link(&H, 3, "eth1", 0x11, 1);
	fake_addr(&H, 2, "198.18.0.1/24", 0);
	fake_addr(&H, 3, "198.18.0.2/24", 0);
	return 0;
}

static struct rn_host *snap(void)
{
	struct rn_host *h;

	fake_nl_install(&H);
	assert_int_equal(rn_host_snapshot(&h), 0);
	fake_nl_uninstall();
	return h;
}

static void propose(int ifindex, uint32_t want_table, uint32_t want_prio)
{
	struct rn_host *h = snap();
	uint32_t t, p;

	rn_propose_table(h, ifindex, &t, &p);
	assert_int_equal(t, want_table);
	assert_int_equal(p, want_prio);
	rn_host_free(h);
}

/* A 'from all' rule like wg-quick's or Tailscale's: fwmark, not, action as given. */
static void all_rule(uint32_t prio, int family, uint32_t fwmark, int invert, int action,
		     uint32_t table)
{
	fake_rule(&H, prio, family == AF_INET6 ? "::/0" : NULL, table);
	for (int i = 0; i < H.nrules; i++) {
		struct rn_nl_rule *r = &H.rules[i];

		if (r->priority == prio && r->table == table && !r->src_len) {
			r->fwmark = fwmark;
			r->invert = invert;
			r->action = action;
		}
	}
}

static void test_flat_host_gets_100_plus_ifindex(void **state)
{
	propose(2, 102, 102);
	propose(3, 103, 103);
	propose(-1, 100, 100);
}

static void test_taken_numbers_claimed_in_ifindex_order(void **state)
{
	/* 102 holds a route of another link; 103 is a foreign rule's priority */
	fake_route(&H, 102, "198.19.5.0/24", 1, NULL, NULL);
	all_rule(103, AF_INET, 9, 0, FR_ACT_TO_TBL, 300);
	/* eth0 skips 102, 103 (taken) and no other link's 100 + ifindex is in the way */
	propose(2, 104, 104);
	/* eth1's own 103 is taken; eth0 claimed 104 first */
	propose(3, 105, 105);
}

static void test_own_rules_do_not_take_the_number(void **state)
{
	/* the IPv6 half of eth0's policy routing already uses 102 */
	fake_addr(&H, 2, "2001:db8:18::1/64", 0);
	fake_rule(&H, 102, "2001:db8:18::1/128", 102);
	fake_route(&H, 102, "2001:db8:18::/64", 2, "2001:db8:18::1", NULL);
	propose(2, 102, 102);
	/* for eth1 it is someone else's */
	fake_route(&H, 103, "198.19.6.0/24", 2, NULL, NULL);
	propose(3, 104, 104);
}

static void test_reserved_tables_skipped(void **state)
{
	fake_link(&H, 153, "eth153", 0x12, 1);
	propose(153, 256, 256);
}

static void test_priority_ahead_of_wg_quick(void **state)
{
	struct rn_host *h;

	/* wg-quick brought up after per-NIC rules: its priority-less rules got 40/41 */
	all_rule(41, AF_INET, 0xca6c, 1, FR_ACT_TO_TBL, 51820);
	all_rule(40, AF_INET, 0, 0, FR_ACT_TO_TBL, RN_TABLE_MAIN);
	h = snap();
	assert_int_equal(rn_rule_first_shadow(h), 40);
	assert_int_equal(rn_rule_prio_for(h, 2, 102), 39);
	rn_host_free(h);
	propose(2, 102, 39);
	propose(3, 103, 39); /* several NICs may share it: their 'from' differs */
}

static void test_what_shadows(void **state)
{
	struct rn_host *h;
	struct rn_nl_rule r = {
		.family = AF_INET, .priority = 5270, .action = FR_ACT_TO_TBL, .table = 52
	};

	assert_true(rn_rule_shadows(&r));  /* Tailscale's lookup 52 */
	r.fwmark = 0x80000;
	assert_false(rn_rule_shadows(&r)); /* marked traffic only */
	r.invert = 1;
	assert_true(rn_rule_shadows(&r));  /* not fwmark: unmarked traffic */
	r.fwmark = 0;
	assert_false(rn_rule_shadows(&r)); /* 'not from all' matches nothing */
	r.invert = 0;
	r.action = FR_ACT_UNREACHABLE;
	assert_true(rn_rule_shadows(&r));
	r.action = FR_ACT_GOTO;
	assert_false(rn_rule_shadows(&r));
	r.action = FR_ACT_TO_TBL;
	r.table = RN_TABLE_LOCAL;
	assert_false(rn_rule_shadows(&r));
	r.table = 52;
	strcpy(r.iif, "lo");
	assert_true(rn_rule_shadows(&r)); /* local output has iif lo */
	strcpy(r.iif, "eth0");
	assert_false(rn_rule_shadows(&r));
	r.iif[0] = '\0';
	r.src_len = 24;
	assert_false(rn_rule_shadows(&r)); /* a 'from' rule is a NIC's own kind */
	r.src_len = 0;
	r.priority = 0;
	assert_false(rn_rule_shadows(&r));

	/* Tailscale's rules: 5270 shadows; a table ahead of it keeps its number */
	all_rule(5210, AF_INET, 0x80000, 0, FR_ACT_TO_TBL, RN_TABLE_MAIN);
	all_rule(5250, AF_INET, 0x80000, 0, FR_ACT_UNREACHABLE, 0);
	all_rule(5270, AF_INET, 0, 0, FR_ACT_TO_TBL, 52);
	h = snap();
	assert_int_equal(rn_rule_first_shadow(h), 5270);
	assert_int_equal(rn_rule_prio_for(h, 2, 102), 102);
	/* a rule behind it (6000 into table 6000) moves to the highest free number ahead */
	assert_int_equal(rn_rule_prio_for(h, 2, 6000), 5269);
	rn_host_free(h);
}

static void test_management_nic_is_mains_best_default(void **state)
{
	struct rn_host *h;

	fake_route(&H, RN_TABLE_MAIN, "default", 2, NULL, "198.18.0.254");
	fake_route(&H, RN_TABLE_MAIN, "default", 3, NULL, "198.18.0.253");
	H.routes[H.nroutes - 2].metric = 100;
	H.routes[H.nroutes - 1].metric = 50;
	h = snap();
	assert_int_equal(rn_host_mgmt_ifindex(h, AF_INET), 3);
	assert_int_equal(rn_host_mgmt_ifindex(h, AF_INET6), 0);
	rn_host_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_flat_host_gets_100_plus_ifindex, setup),
		cmocka_unit_test_setup(test_taken_numbers_claimed_in_ifindex_order, setup),
		cmocka_unit_test_setup(test_own_rules_do_not_take_the_number, setup),
		cmocka_unit_test_setup(test_reserved_tables_skipped, setup),
		cmocka_unit_test_setup(test_priority_ahead_of_wg_quick, setup),
		cmocka_unit_test_setup(test_what_shadows, setup),
		cmocka_unit_test_setup(test_management_nic_is_mains_best_default, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
