// SPDX-License-Identifier: MIT
/* The verdict catalogue: stable unique ids, severities, template rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rn_host.h"

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
	assert_string_equal(rn_cause_id((enum rn_cause)-1), "unknown");
	assert_int_equal(rn_cause_from_id("no-such-cause"), RN_CAUSE_NONE);
}

static void test_severities(void **state)
{
	assert_int_equal(rn_cause_severity(RN_CAUSE_ARP_FLUX), RN_SEV_FATAL);
	assert_int_equal(rn_cause_severity(RN_CAUSE_NEIGH_WRONG_MAC), RN_SEV_FATAL);
	assert_int_equal(rn_cause_severity(RN_CAUSE_MTU_MISMATCH), RN_SEV_WARN);
	assert_int_equal(rn_cause_severity(RN_CAUSE_GID_FORCED_MISMATCH), RN_SEV_WARN);
}

static void test_render_fix_names_dev_ip_table(void **state)
{
	struct rn_vars v = { 0 };
	struct rn_finding f;

	rn_vars_set(&v, "nic", "mlx5_1:1");
	rn_vars_set(&v, "dev", "ens1f1");
	rn_vars_set(&v, "ip", "198.18.0.2");
	rn_vars_set(&v, "subnet", "198.18.0.0/24");
	rn_vars_set(&v, "table", "%d", 102);
	rn_vars_set(&v, "prio", "%d", 102);
	rn_vars_set(&v, "others", "ens1f0");
	rn_vars_set(&v, "devs", "ens1f1 ens1f0");
	rn_vars_set(&v, "route_fix", "ip route replace 198.18.0.0/24 dev ens1f1 src 198.18.0.2 "
		    "table 102; ip rule add from 198.18.0.2 lookup 102 priority 102");
	rn_finding_render(&f, RN_CAUSE_NO_RULE, &v);
	assert_int_equal(f.cause, RN_CAUSE_NO_RULE);
	assert_int_equal(f.sev, RN_SEV_WARN);
	assert_non_null(strstr(f.fix, "ip rule add from 198.18.0.2 lookup 102 priority 102"));
	assert_non_null(strstr(f.fix, "ip route replace 198.18.0.0/24 dev ens1f1 src 198.18.0.2 table 102"));
	assert_non_null(strstr(f.fix, "roce-policy-routing ens1f1 ens1f0"));
	assert_non_null(strstr(f.msg, "mlx5_1:1"));
	assert_null(strchr(f.msg, '{'));
	assert_null(strchr(f.fix, '{'));
}

static void test_render_wrong_mac_names_peer(void **state)
{
	struct rn_vars v = { 0 };
	struct rn_finding f;

	rn_vars_set(&v, "peer_ip", "198.18.0.10");
	rn_vars_set(&v, "got_mac", "02:00:00:00:00:01");
	rn_vars_set(&v, "peer_mac", "02:00:00:00:00:00");
	rn_vars_set(&v, "peer_host", "gpu7");
	rn_vars_set(&v, "dev", "eth0");
	rn_finding_render(&f, RN_CAUSE_NEIGH_WRONG_MAC, &v);
	assert_non_null(strstr(f.msg, "peer 198.18.0.10 is reached at the wrong NIC"));
	assert_non_null(strstr(f.msg, "02:00:00:00:00:01 instead of 02:00:00:00:00:00"));
	assert_non_null(strstr(f.msg, "host gpu7"));
	assert_non_null(strstr(f.fix, "on gpu7: sysctl -w net.ipv4.conf.all.arp_ignore=1"));
}

static void test_render_missing_var_and_overflow(void **state)
{
	struct rn_vars v = { 0 };
	struct rn_finding f;
	char big[200];
	int i;

	rn_finding_render(&f, RN_CAUSE_LINK_DOWN, &v);
	assert_non_null(strstr(f.msg, "?")); /* unknown key, not garbage */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (i = 0; i < RN_VARS_MAX + 4; i++)
		rn_vars_set(&v, i % 2 ? "dev" : "nic", "%s", big);
	rn_finding_render(&f, RN_CAUSE_ARP_FLUX, &v);
	assert_true(strlen(f.msg) < sizeof(f.msg));
	assert_true(strlen(f.fix) < sizeof(f.fix));
	assert_int_equal(v.n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_cause_has_unique_id_and_text),
		cmocka_unit_test(test_severities),
		cmocka_unit_test(test_render_fix_names_dev_ip_table),
		cmocka_unit_test(test_render_wrong_mac_names_peer),
		cmocka_unit_test(test_render_missing_var_and_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
