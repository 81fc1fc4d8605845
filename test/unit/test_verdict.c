// SPDX-License-Identifier: MIT
/* The verdict catalogue: stable unique ids, severities, template rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rn_host.h"
#include "rn_conncheck.h"

static void test_every_cause_has_unique_id_and_text(void **state)
{
	int a, b;

	for (a = 1; a < RN_CAUSE__MAX; a++) {
		assert_string_not_equal(rn_cause_id(a), "unknown");
		assert_true(strlen(rn_cause_msg_template(a)) > 10);
		assert_int_equal(rn_cause_from_id(rn_cause_id(a)), a);
		for (b = a + 1; b < RN_CAUSE__MAX; b++)
			assert_string_not_equal(rn_cause_id(a), rn_cause_id(b));
	}
	assert_string_equal(rn_cause_id(RN_CAUSE__MAX), "unknown");
	assert_string_equal(rn_cause_id((enum rn_cause) - 1), "unknown");
	assert_int_equal(rn_cause_from_id("no-such-cause"), RN_CAUSE_NONE);
}

static void test_severities(void **state)
{
	assert_int_equal(rn_cause_severity(RN_CAUSE_ARP_FLUX), RN_SEV_FATAL);
	assert_int_equal(rn_cause_severity(RN_CAUSE_NEIGH_WRONG_MAC), RN_SEV_FATAL);
	assert_int_equal(rn_cause_severity(RN_CAUSE_MTU_MISMATCH), RN_SEV_WARN);
	assert_int_equal(rn_cause_severity(RN_CAUSE_GID_FORCED_MISMATCH), RN_SEV_WARN);
}

#define AUTO_FINDING __attribute__((cleanup(rn_finding_clear)))
#define AUTO_VARS __attribute__((cleanup(rn_vars_free)))

static void test_render_fix_names_dev_ip_table(void **state)
{
	struct rn_vars v AUTO_VARS = RN_VARS_INIT;
	struct rn_finding f AUTO_FINDING = { 0 };

	rn_vars_set(&v, "nic", "mlx5_1:1");
	rn_vars_set(&v, "dev", "ens1f1");
	rn_vars_set(&v, "ip", "198.18.0.2");
	rn_vars_set(&v, "subnet", "198.18.0.0/24");
	rn_vars_set(&v, "table", "%d", 102);
	rn_vars_set(&v, "prio", "%d", 102);
	rn_vars_set(&v, "others", "ens1f0");
	rn_vars_set(&v, "devs", "ens1f1 ens1f0");
	rn_vars_set(&v, "route_fix",
		    "ip route replace 198.18.0.0/24 dev ens1f1 src 198.18.0.2 "
		    "table 102; ip rule add from 198.18.0.2 lookup 102 priority 102");
	rn_vars_set(&v, "alt", "  # or, for all NICs at once: roce-policy-routing ens1f1 ens1f0");
	rn_vars_set(&v, "qualified", "%s", ""); /* no 'from' rule with a mark or an iif */
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_NO_RULE, &v), 0);
	assert_int_equal(f.cause, RN_CAUSE_NO_RULE);
	assert_int_equal(f.sev, RN_SEV_WARN);
	assert_non_null(strstr(f.fix, "ip rule add from 198.18.0.2 lookup 102 priority 102"));
	assert_non_null(strstr(
		f.fix, "ip route replace 198.18.0.0/24 dev ens1f1 src 198.18.0.2 table 102"));
	/* the installed command, never a path into the source tree */
	assert_non_null(strstr(f.fix, "roce-policy-routing ens1f1 ens1f0"));
	assert_null(strstr(f.fix, "scripts/"));
	assert_non_null(strstr(f.msg, "mlx5_1:1"));
	assert_null(strchr(f.msg, '{'));
	assert_null(strchr(f.fix, '{'));
}

static void test_render_wrong_mac_names_peer(void **state)
{
	struct rn_vars v AUTO_VARS = RN_VARS_INIT;
	struct rn_finding f AUTO_FINDING = { 0 };

	rn_vars_set(&v, "peer_ip", "198.18.0.10");
	rn_vars_set(&v, "got_mac", "02:00:00:00:00:01");
	rn_vars_set(&v, "peer_mac", "02:00:00:00:00:00");
	rn_vars_set(&v, "peer_host", "gpu7");
	rn_vars_set(&v, "dev", "eth0");
	rn_vars_set(&v, "peer_fix", "sysctl -w net.ipv4.conf.all.arp_ignore=1");
	rn_vars_set(&v, "who", "peer");
	rn_vars_set(&v, "wrong", "NIC");
	rn_vars_set(&v, "why", "ARP flux on host %s", "gpu7");
	rn_vars_set(&v, "neigh_fix", "ip neigh flush dev %s to %s nud all", "eth0", "198.18.0.10");
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_NEIGH_WRONG_MAC, &v), 0);
	assert_non_null(strstr(f.msg, "198.18.0.10"));
	assert_non_null(strstr(f.msg, "02:00:00:00:00:01"));
	assert_non_null(strstr(f.msg, "gpu7"));
	/* two parts, each pasteable on one host: the peer's sysctls first, then our entry */
	assert_string_equal(f.pre_fix, "sysctl -w net.ipv4.conf.all.arp_ignore=1");
	assert_string_equal(f.pre_host, "gpu7");
	assert_string_equal(f.fix, "ip neigh flush dev eth0 to 198.18.0.10 nud all");
	assert_string_equal(f.fix_host, "");
	assert_null(strstr(f.fix, "on gpu7"));
	assert_string_equal(rn_finding_where(&f, 1, NULL), "gpu7");
	assert_string_equal(rn_finding_where(&f, 0, NULL), "");
	assert_string_equal(rn_finding_where(&f, 0, "gpu3"), "gpu3");
}

/*
 * A connection-level cause's fix is commands for one host, never advice: what no
 * command can do is advice, and such a cause offers no command at all.
 */
static void test_fix_is_commands_advice_is_text(void **state)
{
	static const enum rn_cause advice_only[] = { RN_CAUSE_NEIGH_UNRESOLVED,
						     RN_CAUSE_PEER_REFUSED, RN_CAUSE_PEER_DIED };
	static const char *const not_commands[] = { "on {",    "then here",       "check that",
						    "look at", "run roce-doctor", "# the same" };
	int c, i, k;

	for (i = 0; i < (int)RN_ARRAY_SIZE(advice_only); i++) {
		assert_string_equal(rn_cause_fix_template(advice_only[i]), "");
		assert_true(strlen(rn_cause_template(advice_only[i], RN_TPL_ADVICE)) > 20);
	}
	for (c = 1; c < RN_CAUSE__MAX; c++)
		for (k = 0; k < (int)RN_ARRAY_SIZE(not_commands); k++) {
			assert_null(strstr(rn_cause_fix_template(c), not_commands[k]));
			assert_null(strstr(rn_cause_template(c, RN_TPL_PRE), not_commands[k]));
		}
}

/* mtu-mismatch: the smaller side is raised, on the host that has it. */
static void test_mtu_fix_runs_where_the_smaller_mtu_is(void **state)
{
	struct rn_vars v AUTO_VARS = RN_VARS_INIT;
	struct rn_finding f AUTO_FINDING = { 0 };
	struct rn_nic nic = { .netdev = "eth0", .mtu = 9000 };
	struct rn_peer_facts peer = { .host = "gpu7", .netdev = "p1", .mtu = 1500 };

	rn_vars_set(&v, "peer_host", "gpu7");
	rn_vars_set(&v, "peer_dev", "p1");
	rn_vars_set(&v, "nic", "eth0");
	rn_vars_set(&v, "dev", "eth0");
	assert_int_equal(rn_mtu_vars(&nic, &peer, &v), 1);
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_MTU_MISMATCH, &v), 0);
	assert_string_equal(f.fix, "ip link set dev p1 mtu 9000");
	assert_string_equal(f.fix_host, "gpu7");
	assert_non_null(strstr(f.advice, "same MTU"));
	nic.mtu = 1500;
	peer.mtu = 9000;
	assert_int_equal(rn_mtu_vars(&nic, &peer, &v), 1);
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_MTU_MISMATCH, &v), 0);
	assert_string_equal(f.fix, "ip link set dev eth0 mtu 9000");
	assert_string_equal(f.fix_host, "");
	/* the netdevs agree, the ports do not: nothing to type, only what to do */
	peer.mtu = 1500;
	nic.active_mtu = IBV_MTU_1024;
	peer.active_mtu = IBV_MTU_4096;
	assert_int_equal(rn_mtu_vars(&nic, &peer, &v), 1);
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_MTU_MISMATCH, &v), 0);
	assert_string_equal(f.fix, "");
	assert_true(f.advice[0]);
}

/* A key the template names but nobody set is a bug: an error, never a guess like '?'. */
static void test_render_missing_key_is_an_error(void **state)
{
	struct rn_vars v AUTO_VARS = RN_VARS_INIT;
	struct rn_finding f AUTO_FINDING = { 0 };
	unsigned int bugs = rn_finding_bugs();

	rn_vars_set(&v, "nic", "rxe0:1");
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_LINK_DOWN, &v), -EINVAL);
	assert_int_equal(f.cause, RN_CAUSE_LINK_DOWN);
	assert_null(strchr(f.msg, '?'));
	assert_non_null(strstr(f.msg, "{dev}"));
	assert_int_equal(rn_finding_bugs(), bugs + 2); /* message and fix */
}

/* Every row renders from exactly the keys it documents: none missing, none left over. */
static void test_every_row_renders_from_its_documented_keys(void **state)
{
	int c;

	for (c = 1; c < RN_CAUSE__MAX; c++) {
		struct rn_vars v AUTO_VARS = RN_VARS_INIT;
		struct rn_finding f AUTO_FINDING = { 0 };
		char *keys = strdup(rn_cause_keys(c)), *save = NULL, *k;
		const char *out[RN_TPL__MAX];
		int t, used;

		assert_non_null(keys);
		for (k = strtok_r(keys, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
			char ref[80];

			rn_vars_set(&v, k, "<%s>", k);
			/* each documented key is used by one of the templates */
			snprintf(ref, sizeof(ref), "{%s}", k);
			for (t = used = 0; t < RN_TPL__MAX; t++)
				used |= strstr(rn_cause_template(c, (enum rn_tpl)t), ref) != NULL;
			assert_true(used);
		}
		free(keys);
		if (rn_finding_render(&f, c, &v))
			fail_msg("cause %s: a template names an undocumented key", rn_cause_id(c));
		out[RN_TPL_MSG] = f.msg;
		out[RN_TPL_FIX] = f.fix;
		out[RN_TPL_FIX_ON] = f.fix_host;
		out[RN_TPL_PRE] = f.pre_fix;
		out[RN_TPL_PRE_ON] = f.pre_host;
		out[RN_TPL_ADVICE] = f.advice;
		for (t = 0; t < RN_TPL__MAX; t++)
			assert_null(strchr(out[t], '{'));
		/* a part to run first says where; advice only beside a fix or in its place */
		assert_int_equal(!rn_cause_template(c, RN_TPL_PRE)[0],
				 !rn_cause_template(c, RN_TPL_PRE_ON)[0]);
		assert_true(rn_cause_template(c, RN_TPL_FIX)[0] ||
			    rn_cause_template(c, RN_TPL_ADVICE)[0]);
	}
}

/* No cap: many keys, long values, long text; the values are the finding's own copy. */
static void test_no_caps(void **state)
{
	struct rn_vars v AUTO_VARS = RN_VARS_INIT;
	struct rn_finding f AUTO_FINDING = { 0 }, g AUTO_FINDING = { 0 };
	char big[2000], key[16];
	int i;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		rn_vars_set(&v, key, "%d", i);
	}
	assert_int_equal(v.n, 40);
	assert_string_equal(rn_vars_get(&v, "k39"), "39");
	rn_vars_set(&v, "nic", "%s", big);
	rn_vars_set(&v, "dev", "ens8f0np0");
	for (i = 0; i < 8; i++)
		rn_vars_append(&v, "dev", ".", "%d", i);
	assert_string_equal(rn_vars_get(&v, "dev"), "ens8f0np0.0.1.2.3.4.5.6.7");
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_LINK_DOWN, &v), 0);
	assert_non_null(strstr(f.msg, big));
	assert_non_null(strstr(f.fix, "ip link set dev ens8f0np0.0.1.2.3.4.5.6.7 up"));
	assert_int_equal(rn_finding_copy(&g, &f), 0);
	rn_vars_free(&v); /* the finding keeps its own text */
	assert_string_equal(g.msg, f.msg);
	rn_finding_move(&g, &f);
	assert_null(f.msg);
	assert_non_null(strstr(g.msg, big));
}

static void test_unknown_cause_label(void **state)
{
	char b[32];

	assert_string_equal(rn_cause_label(RN_CAUSE_ARP_FLUX, b, sizeof(b)), "arp-flux");
	assert_string_equal(rn_cause_label((enum rn_cause)4242, b, sizeof(b)),
			    "unknown cause 4242");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_cause_has_unique_id_and_text),
		cmocka_unit_test(test_severities),
		cmocka_unit_test(test_render_fix_names_dev_ip_table),
		cmocka_unit_test(test_render_wrong_mac_names_peer),
		cmocka_unit_test(test_fix_is_commands_advice_is_text),
		cmocka_unit_test(test_mtu_fix_runs_where_the_smaller_mtu_is),
		cmocka_unit_test(test_render_missing_key_is_an_error),
		cmocka_unit_test(test_every_row_renders_from_its_documented_keys),
		cmocka_unit_test(test_no_caps),
		cmocka_unit_test(test_unknown_cause_label),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
