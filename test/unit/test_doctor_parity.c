// SPDX-License-Identifier: MIT
/*
 * Report parity: each report renders one model both ways, as text and as JSON, and every
 * field of the model that a report carries is in both (the host report here, the sweep's
 * below; peer's in test_doctor_report.c). A field only one form carries is named, with
 * why, in that report's list: a new field must land in both forms or in that list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* doctor_host.c's reports are static: the file is compiled in (the rest is linked). */
#include "../../src/doctor/doctor_host.c"
#include "../../src/doctor/doctor_sweep.h"
#include "rn_json.h"

/* One field: its name, how the text shows it, how the JSON does. */
struct form {
	char field[64], text[128], json[128];
};

#define MAXF 160
static struct form forms[MAXF];
static int nforms;

static void field(const char *name, const char *text, const char *json)
{
	struct form *f = &forms[nforms++];

	assert_true(nforms <= MAXF);
	snprintf(f->field, sizeof(f->field), "%s", name);
	snprintf(f->text, sizeof(f->text), "%s", text);
	snprintf(f->json, sizeof(f->json), "%s", json);
}

static void check_forms(const char *text, const char *json)
{
	int k, bad = 0;

	if (getenv("TEST_VERBOSE"))
		printf("%s\n%s\n", text, json);
	for (k = 0; k < nforms; k++) {
		if (!strstr(text, forms[k].text)) {
			print_error("%s: '%s' not in the text\n", forms[k].field, forms[k].text);
			bad++;
		}
		if (!strstr(json, forms[k].json)) {
			print_error("%s: '%s' not in the JSON\n", forms[k].field, forms[k].json);
			bad++;
		}
	}
	if (bad) {
		print_error("text:\n%s\njson:\n%s\n", text, json);
		fail();
	}
	nforms = 0;
}

static char *render(void (*fn)(void *arg, FILE *f), void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(arg, f);
	fclose(f);
	return buf;
}

/* ---- host ------------------------------------------------------------------------------- */

static struct rn_doctor doc;
static struct rn_host host;
static struct rn_dev devs[2];
static struct rn_nl_rule rule;

static void sysctls(struct rn_sysctls *s, int base)
{
	*s = (struct rn_sysctls){ base, base + 1, base + 2, base + 3, base + 4, 0, 0 };
}

static void host_nic(int i, const char *netdev, const char *ibdev, int mtu)
{
	struct rn_doctor_nic *dn = &doc.nics[i];
	struct rn_nic *n = &dn->nic;

	snprintf(n->netdev, sizeof(n->netdev), "%s", netdev);
	snprintf(n->ibdev, sizeof(n->ibdev), "%s", ibdev);
	n->port = 1;
	n->ifindex = 10 + i;
	n->link_up = !i;
	n->mtu = mtu;
	n->active_mtu = IBV_MTU_4096;
	n->ip.family = AF_INET;
	n->ip.v4.s_addr = htonl(0x0a000001u + ((uint32_t)i << 8));
	n->prefixlen = 24;
	n->gid_index = 3 + i;
	n->table = 101 + i;
	n->verdict = i ? RN_VERDICT_WARN : RN_VERDICT_OK;
	dn->dev = &devs[i];
	dn->gid_why = i ? "primary" : "policy";
	dn->rule_prio = i ? -1 : 100;
	dn->rule_table = 101;
	sysctls(&dn->sys_dev, 20 + 10 * i);
	sysctls(&dn->sys_eff, 25 + 10 * i);
}

static void host_model(void)
{
	memset(&doc, 0, sizeof(doc));
	memset(&host, 0, sizeof(host));
	snprintf(doc.hostname, sizeof(doc.hostname), "node7");
	doc.host = &host;
	doc.verbose = 1;
	sysctls(&host.all, 11);
	rule = (struct rn_nl_rule){ .family = AF_INET,
				    .priority = 100,
				    .src_len = 32,
				    .table = 101,
				    .action = FR_ACT_TO_TBL };
	rule.src.family = AF_INET;
	rule.src.v4.s_addr = htonl(0x0a000001u);
	host.rules = &rule;
	host.nrules = 1;
	host_nic(0, "ens1f0", "mlx5_0", 9000);
	host_nic(1, "ens2f0", "mlx5_1", 1500);
	doc.nics[1].nic.nfindings = 1;
	doc.nics[1].nic.findings = calloc(1, sizeof(struct rn_finding));
	assert_non_null(doc.nics[1].nic.findings);
	assert_int_equal(rn_finding_set(doc.nics[1].nic.findings, RN_CAUSE_MTU_MISMATCH,
					RN_SEV_WARN, "MTU 1500 where the others have 9000",
					"ip link set dev ens2f0 mtu 9000"),
			 0);
	doc.nnics = 2;
	doc.gather_ms = 1.5;
	doc.snapshot_ms = 0.25;
	doc.discover_ms = 0.5;
	doc.verdict_ms = 0.75;
}

static void host_text(void *arg, FILE *f)
{
	doc.out = f;
	print_host(&doc);
}

static void host_json(void *arg, FILE *f)
{
	doc.out = f;
	json_host(&doc, RN_DOCTOR_PROBLEMS);
}

static void host_fields(void)
{
	static const char *const sys[] = { "arp_ignore", "arp_announce", "arp_filter", "rp_filter",
					   "accept_local" };
	char t[128], j[128];
	int i, k;

	field("host", "on node7", "\"host\": \"node7\"");
	field("nics", "2 RoCE NICs", "\"nics\": 2");
	for (k = 0; k < 5; k++) {
		snprintf(t, sizeof(t), "%-13s %4d", sys[k], 11 + k);
		snprintf(j, sizeof(j), "\"%s\": %d", sys[k], 11 + k);
		field("sysctl all", t, j);
	}
	for (i = 0; i < 2; i++) {
		const struct rn_doctor_nic *dn = &doc.nics[i];
		const struct rn_nic *n = &dn->nic;

		snprintf(t, sizeof(t), " %s ", n->netdev);
		snprintf(j, sizeof(j), "\"netdev\": \"%s\"", n->netdev);
		field("netdev", t, j);
		snprintf(t, sizeof(t), "%s:%d", n->ibdev, n->port);
		snprintf(j, sizeof(j), "\"ibdev\": \"%s\"", n->ibdev);
		field("ibdev", t, j);
		field("port", t, "\"port\": 1");
		snprintf(t, sizeof(t), " %s ", n->link_up ? "up" : "down");
		snprintf(j, sizeof(j), "\"link_up\": %s", n->link_up ? "true" : "false");
		field("link", t, j);
		snprintf(t, sizeof(t), "%d/4096", n->mtu);
		snprintf(j, sizeof(j), "\"mtu\": %d", n->mtu);
		field("mtu", t, j);
		field("active_mtu", t, "\"active_mtu\": 4096");
		snprintf(t, sizeof(t), "10.0.%d.1/24", i);
		snprintf(j, sizeof(j), "\"ip\": \"10.0.%d.1\"", i);
		field("ip", t, j);
		field("prefixlen", t, "\"prefixlen\": 24");
		snprintf(t, sizeof(t), "%d %s", n->gid_index, dn->gid_why);
		snprintf(j, sizeof(j), "\"gid_index\": %d", n->gid_index);
		field("gid_index", t, j);
		snprintf(j, sizeof(j), "\"gid_why\": \"%s\"", dn->gid_why);
		field("gid_why", t, j);
		snprintf(t, sizeof(t), " %s ", dn->rule_prio >= 0 ? "101" : "main");
		snprintf(j, sizeof(j), "\"table\": %d", n->table);
		field("table", t, j);
		snprintf(t, sizeof(t), " %s", rn_verdict_str(n->verdict));
		snprintf(j, sizeof(j), "\"verdict\": \"%s\"", rn_verdict_str(n->verdict));
		field("verdict", t, j);
		for (k = 0; k < 5; k++) {
			const int *dv = &dn->sys_dev.arp_ignore, *ev = &dn->sys_eff.arp_ignore;

			snprintf(t, sizeof(t), "%d->%d", dv[k], ev[k]);
			snprintf(j, sizeof(j), "\"%s\": %d", sys[k], dv[k]);
			field("sysctl dev", t, j);
			snprintf(j, sizeof(j), "\"%s\": %d", sys[k], ev[k]);
			field("sysctl effective", t, j);
		}
	}
	field("rule", "100: from 10.0.0.1 lookup 101", "\"priority\": 100");
	field("rule from", "from 10.0.0.1 ", "\"from\": \"10.0.0.1/32\"");
	field("rule table", "lookup 101", "\"table\": 101");
	field("cause", "mtu-mismatch [warn] on ens2f0", "\"cause\": \"mtu-mismatch\"");
	field("severity", "[warn]", "\"severity\": \"warn\"");
	field("message", "MTU 1500 where the others have 9000",
	      "\"message\": \"MTU 1500 where the others have 9000\"");
	field("fix", "fix: ip link set dev ens2f0 mtu 9000",
	      "\"fix\": \"ip link set dev ens2f0 mtu 9000\"");
	field("elapsed", "checked in 1.5 ms", "\"elapsed_us\": 1500");
	field("snapshot", "netlink snapshot 0.25 ms", "\"snapshot_us\": 250");
	field("discover", "RDMA discovery 0.50 ms", "\"discover_us\": 500");
	field("verdicts", "verdicts 0.75 ms", "\"verdict_us\": 750");
}

/*
 * JSON alone, by design: the MAC, the ifindex, every address and the GID itself (the
 * text's row has no room: ip/json lists them), the config line, the exit code (the
 * text's reader has $?). Text alone: nothing.
 */
static void host_parity(void **state)
{
	char *text, *json;

	host_model();
	host_fields();
	text = render(host_text, NULL);
	json = render(host_json, NULL);
	check_forms(text, json);
	free(text);
	free(json);
	rn_finding_clear(doc.nics[1].nic.findings);
	free(doc.nics[1].nic.findings);
}

/* ---- the sweep ------------------------------------------------------------------------- */

static struct rn_sweep sw;

static void finding(struct rn_finding *f, enum rn_cause c, const char *msg, const char *fix)
{
	assert_int_equal(rn_finding_set(f, c, RN_SEV_WARN, msg, fix), 0);
}

/* Two hosts of two NICs: h0:eth0 - h1:eth1 has an MTU mismatch found by h0, h0:eth1 -
 * h1:eth0's ping failed; h1:eth1 drops RDMA (a firewall). */
static void sweep_model(void)
{
	struct rn_pair_result *p;
	struct rn_finding f = { 0 };
	int h, c;

	assert_int_equal(rn_sweep_init(&sw, 2), 0);
	sw.rounds = 1;
	sw.startup_ms = 1500;
	sw.facts_ms = 250;
	sw.rounds_ms = sw.round_max_ms = 2000;
	sw.total_ms = 4000;
	for (h = 0; h < 2; h++) {
		sw.hosts[h].facts = sw.hosts[h].results = 1;
		snprintf(sw.hosts[h].name, sizeof(sw.hosts[h].name), "host%d", h);
		sw.hosts[h].inv = calloc(1, sizeof(struct rn_dw_inv));
		assert_non_null(sw.hosts[h].inv);
		sw.hosts[h].inv->nnics = 2;
		strcpy(sw.hosts[h].inv->nics[0].netdev, "eth0");
		strcpy(sw.hosts[h].inv->nics[1].netdev, "eth1");
	}
	p = calloc(1, sizeof(*p));
	assert_non_null(p);
	p->a = 0;
	p->b = 1;
	p->na = p->nb = 2;
	p->cells = calloc(4, sizeof(*p->cells));
	assert_non_null(p->cells);
	for (c = 0; c < 4; c++) {
		p->cells[c].a_checked = p->cells[c].b_checked = 1;
		p->cells[c].rdma = RN_PAIR_RDMA_OK;
	}
	p->cells[1].a_cause = RN_CAUSE_MTU_MISMATCH;
	p->cells[1].a_sev = RN_SEV_WARN;
	finding(&f, RN_CAUSE_MTU_MISMATCH, "MTU 9000 here, 1500 there",
		"ip link set dev eth1 mtu 9000");
	assert_int_equal(rn_pair_result_add_find(p, 0, 1, RN_PAIR_FROM_A, &f), 0);
	rn_finding_clear(&f);
	p->cells[2].rdma = RN_PAIR_RDMA_ERROR;
	p->cells[2].rdma_us = 1234;
	assert_int_equal(rn_finding_set(&f, RN_CAUSE_NONE, RN_SEV_INFO, "connect: no route", ""),
			 0);
	assert_int_equal(rn_pair_result_add_find(p, 1, 0, RN_PAIR_FROM_RDMA, &f), 0);
	rn_finding_clear(&f);
	sw.pairs[0] = p;
	sw.hosts[1].drops = calloc(2, sizeof(struct rn_finding));
	assert_non_null(sw.hosts[1].drops);
	finding(&sw.hosts[1].drops[1], RN_CAUSE_FIREWALL, "RDMA dies at eth1", "open udp 4791");
}

static void sweep_text(void *arg, FILE *f)
{
	rn_sweep_print(f, &sw, 1);
}

static void sweep_json(void *arg, FILE *f)
{
	rn_sweep_json(f, &sw, rn_sweep_exit(&sw));
}

static void sweep_fields(void)
{
	char t[128], j[128];
	int h, i;

	field("hosts", "2 hosts, 1 round, 1 of 1 host pairs checked", "\"hosts\": 2");
	field("rounds", "1 round", "\"rounds\": 1");
	field("host pairs checked", "1 of 1 host pairs", "\"host_pairs_checked\": 1");
	for (h = 0; h < 2; h++) {
		snprintf(t, sizeof(t), "%-24.24s %-8s %-5d %-9d", sw.hosts[h].name,
			 rn_sweep_host_status(&sw, h), 2, rn_sweep_bad_pairs(&sw, h));
		snprintf(j, sizeof(j), "\"host\": \"%s\"", sw.hosts[h].name);
		field("host", t, j);
		snprintf(j, sizeof(j), "\"status\": \"%s\"", rn_sweep_host_status(&sw, h));
		field("status", t, j);
		snprintf(j, sizeof(j), "\"bad_pairs\": %d", rn_sweep_bad_pairs(&sw, h));
		field("bad pairs", t, j);
		for (i = 0; i < 2; i++) {
			snprintf(t, sizeof(t), " eth%d=ok", i);
			snprintf(j, sizeof(j), "\"netdev\": \"eth%d\"", i);
			field("netdev", t, j);
			field("verdict", t, "\"verdict\": \"ok\"");
		}
	}
	field("bad pair", "host0:eth0 <-> host1:eth1  mtu-mismatch", "\"nic_b\": \"eth1\"");
	field("bad pair result", "  mtu-mismatch\n", "\"result\": \"mtu-mismatch\"");
	field("its finding", "MTU 9000 here, 1500 there",
	      "\"message\": \"MTU 9000 here, 1500 there\"");
	field("its fix", "ip link set dev eth1 mtu 9000",
	      "\"fix\": \"ip link set dev eth1 mtu 9000\"");
	field("failed probe", "host0:eth1 <-> host1:eth0  rdma-error",
	      "\"result\": \"rdma-error\"");
	field("probe error", "host0:eth1->host1:eth0: connect: no route",
	      "\"error\": \"connect: no route\"");
	field("drop", "firewall [warn] on host1:eth1", "\"cause\": \"firewall\"");
	field("drop message", "RDMA dies at eth1", "\"message\": \"RDMA dies at eth1\"");
	field("drop fix", "open udp 4791", "\"fix\": \"open udp 4791\"");
	field("startup", "ranks up 1.5 s", "\"startup_us\": 1500000");
	field("facts", "facts 250 ms", "\"facts_us\": 250000");
	field("rounds time", "1 round 2.0 s", "\"rounds_us\": 2000000");
	field("slowest round", "(slowest 2.0 s)", "\"round_max_us\": 2000000");
	field("total", "total 4.0 s", "\"elapsed_us\": 4000000");
}

/*
 * JSON alone, by design: a host's rank, facts (versions, paths: the text names those that
 * differ from the fleet), gather time; a NIC's ibdev, IP, driver, firmware, MTU and
 * sysctls (the same); a probe's time; --pair-timeout; the exit code. Text alone: the heat
 * map (the bad pairs list is its JSON form).
 */
static void sweep_parity(void **state)
{
	char *text, *json;

	sweep_model();
	sweep_fields();
	text = render(sweep_text, NULL);
	json = render(sweep_json, NULL);
	check_forms(text, json);
	free(text);
	free(json);
	rn_sweep_free(&sw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_parity),
		cmocka_unit_test(sweep_parity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
