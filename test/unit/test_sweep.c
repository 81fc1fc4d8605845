// SPDX-License-Identifier: MIT
/*
 * The fleet sweep's MPI-free half (src/doctor/doctor_sweep*.c, linked in here with the
 * JSON writer): the round-robin tournament meets every pair of hosts exactly once in
 * N-1 rounds (N odd: N rounds, one bye each), the cells' worst cause, the firewall
 * inference (a NIC that times out with every peer, not one that fails with one host
 * only), the exit status and the JSON report; fleet consistency (who differs from the
 * majority, with the field, both values and the fix) and the bandwidth gate (slow pairs,
 * the second pass's plan, which end is the bad one) over fake pair results: the netns
 * layer has no RDMA to measure with.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../src/doctor/doctor_sweep.h"
#include "rn_json.h"
#include "rn_codec.h"

/* doctor_host.c is the CLI's report: a one-line stand-in for the grouped findings. */
void rn_doctor_print_grouped(FILE *f, const struct rn_doctor_item *it, int n, int all)
{
	int i;

	for (i = 0; i < n; i++)
		fprintf(f, "%s %s\n", it[i].who, rn_cause_id(it[i].f->cause));
}

static void test_schedule(void **state)
{
	int n, r, k, p;

	for (n = 1; n <= 70; n++) {
		char *met = calloc((size_t)(n * n), 1);

		assert_non_null(met);
		assert_int_equal(rn_sweep_rounds(n), n < 2 ? 0 : n % 2 ? n : n - 1);
		for (r = 0; r < rn_sweep_rounds(n); r++) {
			int byes = 0;

			for (k = 0; k < n; k++) {
				p = rn_sweep_partner(n, r, k);
				if (p < 0) {
					byes++;
					continue;
				}
				assert_true(p < n);
				assert_int_not_equal(p, k);
				assert_int_equal(rn_sweep_partner(n, r, p), k);
				if (k < p) {
					assert_int_equal(met[k * n + p], 0);
					met[k * n + p] = 1;
				}
			}
			assert_int_equal(byes, n % 2);
		}
		for (k = 0; k < n; k++)
			for (p = k + 1; p < n; p++)
				assert_int_equal(met[k * n + p], 1);
		assert_int_equal(rn_sweep_partner(n, rn_sweep_rounds(n), 0), -1);
		free(met);
	}
	assert_int_equal(rn_sweep_pair_index(4, 0, 1), 0);
	assert_int_equal(rn_sweep_pair_index(4, 3, 2), 5);
	assert_int_equal(rn_sweep_pair_index(1000, 998, 999), 1000L * 999 / 2 - 1);
}

/* 3 hosts x 2 NICs, every pair checked, every probe ok. */
static void fleet(struct rn_sweep *s)
{
	int h, a, b, c;

	assert_int_equal(rn_sweep_init(s, 3), 0);
	for (h = 0; h < 3; h++) {
		s->hosts[h].facts = s->hosts[h].results = 1;
		snprintf(s->hosts[h].name, sizeof(s->hosts[h].name), "h%d", h);
		s->hosts[h].inv = calloc(1, sizeof(struct rn_dw_inv));
		assert_non_null(s->hosts[h].inv);
		s->hosts[h].inv->nnics = 2;
		strcpy(s->hosts[h].inv->nics[0].netdev, "eth0");
		strcpy(s->hosts[h].inv->nics[1].netdev, "eth1");
	}
	for (a = 0; a < 3; a++)
		for (b = a + 1; b < 3; b++) {
			struct rn_pair_result *p = calloc(1, sizeof(*p));

			assert_non_null(p);
			p->a = a;
			p->b = b;
			p->na = p->nb = 2;
			p->cells = calloc(4, sizeof(*p->cells));
			assert_non_null(p->cells);
			for (c = 0; c < 4; c++) {
				p->cells[c].a_checked = p->cells[c].b_checked = 1;
				p->cells[c].rdma = RN_PAIR_RDMA_OK;
			}
			s->pairs[rn_sweep_pair_index(3, a, b)] = p;
		}
}

static struct rn_pair_cell *cell(struct rn_sweep *s, int a, int i, int b, int j)
{
	struct rn_pair_result *p = s->pairs[rn_sweep_pair_index(s->n, a, b)];

	return &p->cells[i * p->nb + j];
}

static void test_cells_and_exit(void **state)
{
	struct rn_sweep s;
	char buf[64];

	fleet(&s);
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_OK);
	assert_string_equal(rn_sweep_cell_str(cell(&s, 0, 0, 1, 0), buf, sizeof(buf)), "ok");
	/* the worse side wins, a route cause before the probe's timeout */
	cell(&s, 0, 1, 2, 0)->b_cause = RN_CAUSE_ROUTE_WRONG_NIC;
	cell(&s, 0, 1, 2, 0)->b_sev = RN_SEV_FATAL;
	cell(&s, 0, 1, 2, 0)->a_cause = RN_CAUSE_MTU_MISMATCH;
	cell(&s, 0, 1, 2, 0)->a_sev = RN_SEV_WARN;
	cell(&s, 0, 1, 2, 0)->rdma = RN_PAIR_RDMA_TIMEOUT;
	assert_string_equal(rn_sweep_cell_str(cell(&s, 0, 1, 2, 0), buf, sizeof(buf)),
			    "route-wrong-nic");
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_PROBLEMS);
	*cell(&s, 0, 1, 2, 0) = (struct rn_pair_cell){ 0 };
	assert_string_equal(rn_sweep_cell_str(cell(&s, 0, 1, 2, 0), buf, sizeof(buf)), "-");
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_OK);
	/* a host whose results never came: incomplete, exit 2 */
	s.hosts[2].results = 0;
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_ERROR);
	rn_sweep_free(&s);
}

static void test_infer(void **state)
{
	struct rn_sweep s;
	int o, y;

	fleet(&s);
	/* h2:eth1 times out with every NIC of every peer; its eth0 gets through */
	for (o = 0; o < 2; o++)
		for (y = 0; y < 2; y++)
			cell(&s, o, y, 2, 1)->rdma = RN_PAIR_RDMA_TIMEOUT;
	/* h1:eth0 times out with h0 only (one pair of hosts): not the NIC's firewall */
	cell(&s, 0, 0, 1, 0)->rdma = RN_PAIR_RDMA_TIMEOUT;
	cell(&s, 0, 1, 1, 0)->rdma = RN_PAIR_RDMA_TIMEOUT;
	rn_sweep_infer(&s);
	assert_int_equal(s.hosts[2].drops[1].cause, RN_CAUSE_FIREWALL);
	assert_int_equal(s.hosts[2].drops[0].cause, 0);
	assert_int_equal(s.hosts[1].drops[0].cause, 0);
	assert_int_equal(s.hosts[0].drops[0].cause, 0);
	assert_int_equal(s.hosts[0].drops[1].cause, 0);
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_PROBLEMS);
	rn_sweep_free(&s);
}

static void test_json(void **state)
{
	struct rn_sweep s;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	fleet(&s);
	cell(&s, 1, 0, 2, 1)->rdma = RN_PAIR_RDMA_ERROR;
	f = open_memstream(&text, &len);
	assert_non_null(f);
	rn_sweep_json(f, &s, rn_sweep_exit(&s));
	fclose(f);
	assert_non_null(strstr(text, "\"schema\": \"roce-doctor-sweep/1\""));
	assert_non_null(strstr(text, "\"host_a\": \"h1\""));
	assert_non_null(strstr(text, "\"nic_b\": \"eth1\""));
	assert_non_null(strstr(text, "\"result\": \"rdma-error\""));
	assert_non_null(strstr(text, "\"bad_nic_pairs\": 1"));
	assert_non_null(strstr(text, "\"exit\": 1"));
	free(text);
	rn_sweep_free(&s);
}

/* ---- fleet consistency ---------------------------------------------------------------- */

/* Every host of @s alike: the versions, drivers, firmware, MTU 9000, arp_ignore=1/announce=2. */
static void facts(struct rn_sweep *s)
{
	int h, i;

	for (h = 0; h < s->n; h++) {
		struct rn_doctor_facts *f = calloc(1, sizeof(*f));

		assert_non_null(f);
		strcpy(f->plugin, "0.3.0");
		strcpy(f->kernel, "6.1.0-21-amd64");
		strcpy(f->rdma_core, "44.0");
		strcpy(f->nccl, "2.21.5+cuda12.4");
		f->all = (struct rn_sysctls){ 1, 2, 0, 0, 0, 0, 0 };
		f->nnics = s->hosts[h].inv->nnics;
		for (i = 0; i < f->nnics; i++) {
			strcpy(f->nics[i].driver, "mlx5_core");
			strcpy(f->nics[i].fw, "28.39.1002");
			f->nics[i].eff = f->all;
			s->hosts[h].inv->nics[i].mtu = 9000;
		}
		s->hosts[h].hf = f;
	}
}

static const struct rn_sweep_diff *diff(const struct rn_sweep *s, int h, int i, int field)
{
	int k;

	for (k = 0; k < s->ndiffs; k++)
		if (s->diffs[k].h == h && s->diffs[k].i == i && s->diffs[k].field == field)
			return &s->diffs[k];
	fail_msg("no difference h%d nic %d %s", h, i, rn_sweep_field_name(field));
	return NULL;
}

static char *report(const struct rn_sweep *s, int json)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	if (json)
		rn_sweep_json(f, s, rn_sweep_exit(s));
	else
		rn_sweep_print(f, s, 0);
	fclose(f);
	return text;
}

static void test_consistency_agree(void **state)
{
	struct rn_sweep s;
	char *t;

	fleet(&s);
	facts(&s);
	assert_int_equal(rn_sweep_consistency(&s), 0);
	assert_int_equal(s.ndiffs, 0);
	assert_string_equal(s.fleet[RN_SW_F_MTU], "9000");
	assert_string_equal(s.fleet[RN_SW_F_RDMA_CORE], "44.0");
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_OK);
	t = report(&s, 0);
	assert_non_null(strstr(t, "differs from the fleet: nothing"));
	free(t);
	rn_sweep_free(&s);
}

static void test_consistency_names_the_odd_ones(void **state)
{
	const struct rn_sweep_diff *d;
	struct rn_sweep s;
	char *t;

	fleet(&s);
	facts(&s);
	strcpy(s.hosts[2].hf->kernel, "6.1.0-18-amd64");
	strcpy(s.hosts[1].hf->nccl, "not found");
	s.hosts[1].inv->nics[1].mtu = 1500;
	/* another NIC model: its driver differs, its firmware is compared with nobody's */
	strcpy(s.hosts[0].hf->nics[0].driver, "bnxt_en");
	strcpy(s.hosts[0].hf->nics[0].fw, "226.0.145");
	strcpy(s.hosts[2].hf->nics[0].fw, "28.35.1012");
	/* conf/all holds h0's arp_ignore above the fleet's; h1:eth0's rp_filter is its own */
	s.hosts[0].hf->all.arp_ignore = 2;
	s.hosts[0].hf->nics[0].eff.arp_ignore = s.hosts[0].hf->nics[1].eff.arp_ignore = 2;
	s.hosts[1].hf->nics[0].eff.rp_filter = 2;
	assert_int_equal(rn_sweep_consistency(&s), 0);
	assert_int_equal(s.ndiffs, 8);

	d = diff(&s, 2, -1, RN_SW_F_KERNEL);
	assert_string_equal(d->value, "6.1.0-18-amd64");
	assert_string_equal(d->majority, "6.1.0-21-amd64");
	assert_int_equal(d->count, 2);
	assert_int_equal(d->of, 3);
	assert_false(d->tie);
	assert_int_equal(d->f.cause, RN_CAUSE_FLEET_DIFFERS);
	assert_string_equal(d->f.fix, "");
	assert_non_null(strstr(d->f.advice, "make kernel on h2 what the other hosts have"));
	d = diff(&s, 1, -1, RN_SW_F_NCCL);
	assert_string_equal(d->value, "not found");

	d = diff(&s, 1, 1, RN_SW_F_MTU);
	assert_string_equal(d->value, "1500");
	assert_string_equal(d->majority, "9000");
	assert_int_equal(d->count, 5);
	assert_int_equal(d->of, 6);
	assert_string_equal(d->f.fix, "ip link set dev eth1 mtu 9000");
	assert_string_equal(d->f.msg, "h1:eth1: mtu is 1500, where 5 of 6 NICs have 9000");

	d = diff(&s, 0, 0, RN_SW_F_DRIVER);
	assert_string_equal(d->value, "bnxt_en");
	d = diff(&s, 2, 0, RN_SW_F_FW);
	assert_int_equal(d->count, 4);
	assert_int_equal(d->of, 5);
	assert_non_null(strstr(d->f.msg, "4 of 5 mlx5_core NICs have 28.39.1002"));

	/* max(all, dev): conf/all must come down too */
	d = diff(&s, 0, 1, RN_SW_F_ARP_IGNORE);
	assert_string_equal(
		d->f.fix,
		"sysctl -w net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.eth1.arp_ignore=1");
	diff(&s, 0, 0, RN_SW_F_ARP_IGNORE);
	d = diff(&s, 1, 0, RN_SW_F_RP_FILTER);
	assert_string_equal(d->f.fix, "sysctl -w net.ipv4.conf.eth0.rp_filter=0");

	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_PROBLEMS);
	t = report(&s, 0);
	assert_non_null(strstr(t, "differs from the fleet (8):"));
	assert_non_null(strstr(t, "  h1:eth1                  mtu 1500, where 5 of 6 have 9000\n"));
	assert_non_null(
		strstr(t, "  h2                       kernel 6.1.0-18-amd64, where 2 of 3 have "
			  "6.1.0-21-amd64\n"));
	assert_non_null(strstr(t, "h1:eth1 fleet-differs"));
	free(t);
	t = report(&s, 1);
	assert_non_null(strstr(t, "\"differences\": [\n    {\n      \"field\": \"kernel\",\n"
				  "      \"host\": \"h2\",\n      \"nic\": null,\n"
				  "      \"value\": \"6.1.0-18-amd64\",\n"));
	assert_non_null(strstr(t, "\"rdma_core\": \"44.0\""));
	assert_non_null(strstr(t, "\"firmware\": \"226.0.145\""));
	assert_non_null(strstr(t, "\"differences\": 8"));
	free(t);
	rn_sweep_free(&s);
}

/* Two hosts that disagree: no majority, said so; a host without facts is not counted. */
static void test_consistency_tie(void **state)
{
	const struct rn_sweep_diff *d;
	struct rn_sweep s;

	fleet(&s);
	facts(&s);
	free(s.hosts[2].hf);
	s.hosts[2].hf = NULL;
	strcpy(s.hosts[1].hf->plugin, "0.2.9");
	assert_int_equal(rn_sweep_consistency(&s), 0);
	d = diff(&s, 1, -1, RN_SW_F_PLUGIN);
	assert_int_equal(d->count, 1);
	assert_int_equal(d->of, 2);
	assert_true(d->tie);
	/* h2, whose facts did not come, is in no comparison: its MTUs neither */
	s.hosts[2].inv->nics[0].mtu = 1500;
	assert_int_equal(rn_sweep_consistency(&s), 0);
	assert_int_equal(s.ndiffs, 1);
	rn_sweep_free(&s);
}

/*
 * A host where NCCL_NET_PLUGIN finds no plugin, beside one on another version: the missing
 * one is plugin-missing, fatal, on one line of its own, and is no vote in the version's
 * majority; the other is fleet-differs. Where no host has the plugin, nothing differs.
 */
static void test_consistency_plugin_missing(void **state)
{
	const struct rn_sweep_diff *d;
	struct rn_sweep s;
	char *t, *line;
	int h;

	fleet(&s);
	facts(&s);
	strcpy(s.hosts[1].hf->plugin, "not found");
	strcpy(s.hosts[2].hf->plugin, "0.2.9");
	assert_int_equal(rn_sweep_consistency(&s), 0);
	assert_int_equal(s.ndiffs, 2);
	d = diff(&s, 1, -1, RN_SW_F_PLUGIN);
	assert_int_equal(d->f.cause, RN_CAUSE_PLUGIN_MISSING);
	assert_int_equal(d->f.sev, RN_SEV_FATAL);
	assert_int_equal(d->count, 1);
	assert_int_equal(d->of, 3);
	assert_string_equal(d->majority, "0.3.0");
	assert_non_null(strstr(d->f.advice, "install nccl-net-roce 0.3.0 on h1"));
	/* 0.2.9 against 0.3.0, one each: the missing host did not vote */
	d = diff(&s, 2, -1, RN_SW_F_PLUGIN);
	assert_int_equal(d->f.cause, RN_CAUSE_FLEET_DIFFERS);
	assert_int_equal(d->of, 2);
	assert_true(d->tie);
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_PROBLEMS);
	t = report(&s, 0);
	line = strstr(t, "  h1                       plugin-missing (fatal): no NCCL net plugin: "
			 "NCCL_NET_PLUGIN finds no library on h1, ");
	assert_non_null(line);
	assert_null(strchr(line, '\n') ?
			    strstr(strchr(line, '\n'), "  h1                       plugin") :
			    NULL);
	free(t);
	rn_sweep_free(&s);

	fleet(&s);
	facts(&s);
	for (h = 0; h < s.n; h++)
		strcpy(s.hosts[h].hf->plugin, "not found");
	assert_int_equal(rn_sweep_consistency(&s), 0);
	assert_int_equal(s.ndiffs, 0);
	assert_string_equal(s.fleet[RN_SW_F_PLUGIN], "not found");
	rn_sweep_free(&s);
}

/* ---- bandwidth: the gate and which end is slow ------------------------------------------ */

/* Every NIC pair measured at @mbps. */
static void bw_all(struct rn_sweep *s, uint32_t mbps)
{
	long k;
	int c;

	s->min_gbps = 10;
	for (k = 0; k < (long)s->n * (s->n - 1) / 2; k++)
		for (c = 0; s->pairs[k] && c < s->pairs[k]->na * s->pairs[k]->nb; c++) {
			s->pairs[k]->cells[c].bw = RN_PAIR_BW_OK;
			s->pairs[k]->cells[c].bw_mbps = mbps;
		}
}

static int finds_with(const struct rn_sweep *s, const char *text)
{
	long k;
	int q, n = 0;

	for (k = 0; k < (long)s->n * (s->n - 1) / 2; k++)
		for (q = 0; s->pairs[k] && q < s->pairs[k]->nfind; q++)
			n += s->pairs[k]->finds[q].by == RN_PAIR_FROM_BW &&
			     s->pairs[k]->finds[q].f.cause == RN_CAUSE_BANDWIDTH_LOW &&
			     strstr(s->pairs[k]->finds[q].f.msg, text) != NULL;
	return n;
}

/* h2:eth1 is slow with everyone: the second pass checks it alone; it is named. */
static void test_bw_the_bad_end(void **state)
{
	struct rn_sweep s;
	char buf[64], *t;
	int o, y;

	fleet(&s);
	bw_all(&s, 20000);
	for (o = 0; o < 2; o++)
		for (y = 0; y < 2; y++)
			cell(&s, o, y, 2, 1)->bw_mbps = 3000;
	rn_sweep_bw_judge(&s);
	assert_true(cell(&s, 0, 0, 2, 1)->slow);
	assert_false(cell(&s, 0, 0, 2, 0)->slow);
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_PROBLEMS);
	assert_string_equal(rn_sweep_cell_str(cell(&s, 1, 1, 2, 1), buf, sizeof(buf)),
			    "bandwidth-low");
	/* its peers are fast elsewhere: only h2:eth1 is looked at again, against a fast NIC */
	assert_int_equal(rn_sweep_bw_plan(&s), 0);
	assert_int_equal(s.nrechecks, 1);
	assert_int_equal(s.recheck_rounds, 1);
	assert_int_equal(s.rechecks[0].h, 2);
	assert_int_equal(s.rechecks[0].i, 1);
	assert_int_equal(s.rechecks[0].w, 0);
	assert_int_equal(s.rechecks[0].k, 0);
	assert_int_equal(s.rechecks[0].bw, RN_PAIR_BW_NONE);
	/* alone it is as slow */
	s.rechecks[0].bw = RN_PAIR_BW_OK;
	s.rechecks[0].mbps = 3100;
	rn_sweep_bw_blame(&s);
	for (o = 0; o < 2; o++)
		for (y = 0; y < 2; y++)
			assert_int_equal(cell(&s, o, y, 2, 1)->blame, RN_SW_BLAME_B);
	assert_int_equal(cell(&s, 0, 0, 2, 0)->blame, RN_SW_BLAME_NONE);
	assert_int_equal(s.hosts[2].slow[1].cause, RN_CAUSE_SLOW_NIC);
	assert_int_equal(s.hosts[2].slow[0].cause, 0);
	assert_null(s.hosts[0].slow);
	assert_non_null(
		strstr(s.hosts[2].slow[1].msg,
		       "h2:eth1: slow with every peer measured "
		       "(4 of 4 NIC pairs under 10 Gbit/s, the best 3.10 Gbit/s) while h0:eth0 is "
		       "fast with others (measured again alone against it: 3.10 Gbit/s)"));
	assert_non_null(strstr(s.hosts[2].slow[1].advice, "ethtool -S eth1"));
	assert_int_equal(finds_with(&s, "the slow end is h2:eth1"), 4);
	assert_int_equal(finds_with(&s, "h1:eth0 -> h2:eth1: 3.00 Gbit/s"), 1);
	t = report(&s, 0);
	assert_non_null(
		strstr(t, "  h0:eth0 <-> h2:eth1  bandwidth-low 3.00 Gbit/s, slow end h2:eth1\n"));
	assert_non_null(strstr(t, "  h2:eth1 against h0:eth0: 3.10 Gbit/s: slow\n"));
	assert_non_null(strstr(t, "slow NICs (the bad ends): h2:eth1\n"));
	assert_non_null(strstr(t, "12 NIC pairs measured"));
	free(t);
	t = report(&s, 1);
	assert_non_null(strstr(t, "\"bandwidth\": {\n        \"status\": \"ok\",\n"
				  "        \"gbps\": 3.000,\n        \"slow\": true,\n"
				  "        \"blame\": \"b\"\n"));
	assert_non_null(strstr(t, "\"witness_host\": \"h0\",\n        \"witness_nic\": \"eth0\""));
	assert_non_null(strstr(t, "\"cause\": \"slow-nic\""));
	free(t);
	rn_sweep_free(&s);
}

/* The same, but alone it is fast: the first figures were a passing load, no NIC is named. */
static void test_bw_recheck_clears(void **state)
{
	struct rn_sweep s;
	int o, y;

	fleet(&s);
	bw_all(&s, 20000);
	for (o = 0; o < 2; o++)
		for (y = 0; y < 2; y++)
			cell(&s, o, y, 2, 1)->bw_mbps = 3000;
	rn_sweep_bw_judge(&s);
	assert_int_equal(rn_sweep_bw_plan(&s), 0);
	s.rechecks[0].bw = RN_PAIR_BW_OK;
	s.rechecks[0].mbps = 25000;
	rn_sweep_bw_blame(&s);
	assert_int_equal(cell(&s, 0, 0, 2, 1)->blame, RN_SW_BLAME_PATH);
	assert_null(s.hosts[2].slow);
	rn_sweep_free(&s);
}

/* One slow pair between NICs fast with everyone else: the path, nothing to recheck. */
static void test_bw_the_path(void **state)
{
	struct rn_sweep s;

	fleet(&s);
	bw_all(&s, 20000);
	cell(&s, 0, 0, 1, 0)->bw_mbps = 2000;
	rn_sweep_bw_judge(&s);
	assert_int_equal(rn_sweep_bw_plan(&s), 0);
	assert_int_equal(s.nrechecks, 0);
	rn_sweep_bw_blame(&s);
	assert_int_equal(cell(&s, 0, 0, 1, 0)->blame, RN_SW_BLAME_PATH);
	assert_int_equal(finds_with(&s, "both ends are fast with other peers"), 1);
	assert_null(s.hosts[0].slow);
	assert_null(s.hosts[1].slow);
	rn_sweep_free(&s);
}

/* A new fleet of @n hosts with @nics NICs, every pair checked and measured at 20 Gbit/s. */
static void small_fleet(struct rn_sweep *s, int n, int nics)
{
	int h, a, b, c;

	assert_int_equal(rn_sweep_init(s, n), 0);
	for (h = 0; h < n; h++) {
		s->hosts[h].facts = s->hosts[h].results = 1;
		snprintf(s->hosts[h].name, sizeof(s->hosts[h].name), "h%d", h);
		s->hosts[h].inv = calloc(1, sizeof(struct rn_dw_inv));
		assert_non_null(s->hosts[h].inv);
		s->hosts[h].inv->nnics = nics;
		for (c = 0; c < nics; c++)
			snprintf(s->hosts[h].inv->nics[c].netdev, 16, "eth%d", c);
	}
	for (a = 0; a < n; a++)
		for (b = a + 1; b < n; b++) {
			struct rn_pair_result *p = calloc(1, sizeof(*p));

			assert_non_null(p);
			p->a = a;
			p->b = b;
			p->na = p->nb = nics;
			p->cells = calloc((size_t)(nics * nics), sizeof(*p->cells));
			assert_non_null(p->cells);
			for (c = 0; c < nics * nics; c++) {
				p->cells[c].a_checked = p->cells[c].b_checked = 1;
				p->cells[c].rdma = RN_PAIR_RDMA_OK;
			}
			s->pairs[rn_sweep_pair_index(n, a, b)] = p;
		}
	bw_all(s, 20000);
}

/* Two hosts: no third one, but h1:eth0's sibling eth1 vouches for h0's NICs. */
static void test_bw_two_hosts_sibling_witness(void **state)
{
	struct rn_sweep s;

	small_fleet(&s, 2, 2);
	cell(&s, 0, 0, 1, 0)->bw_mbps = 1000;
	cell(&s, 0, 1, 1, 0)->bw = RN_PAIR_BW_FAILED; /* a stream that failed is slow */
	rn_sweep_bw_judge(&s);
	assert_true(cell(&s, 0, 1, 1, 0)->slow);
	assert_int_equal(rn_sweep_bw_plan(&s), 0);
	assert_int_equal(s.nrechecks, 1);
	assert_int_equal(s.rechecks[0].h, 1);
	assert_int_equal(s.rechecks[0].i, 0);
	assert_int_equal(s.rechecks[0].w, 0);
	/* without the second pass's figures the rounds already tell */
	rn_sweep_bw_blame(&s);
	assert_int_equal(cell(&s, 0, 0, 1, 0)->blame, RN_SW_BLAME_B);
	assert_int_equal(cell(&s, 0, 1, 1, 0)->blame, RN_SW_BLAME_B);
	assert_int_equal(s.hosts[1].slow[0].cause, RN_CAUSE_SLOW_NIC);
	rn_sweep_free(&s);
}

/* Two hosts, one NIC each: nothing can tell which end; every pair slow: the threshold? */
static void test_bw_cannot_tell(void **state)
{
	struct rn_sweep s;
	char *t;

	small_fleet(&s, 2, 1);
	cell(&s, 0, 0, 1, 0)->bw_mbps = 1000;
	rn_sweep_bw_judge(&s);
	assert_int_equal(rn_sweep_bw_plan(&s), 0);
	assert_int_equal(s.nrechecks, 0);
	rn_sweep_bw_blame(&s);
	assert_int_equal(cell(&s, 0, 0, 1, 0)->blame, RN_SW_BLAME_UNKNOWN);
	assert_int_equal(finds_with(&s, "which end is slow cannot be told"), 1);
	assert_null(s.hosts[0].slow);
	t = report(&s, 0);
	assert_non_null(strstr(t, "no NIC pair reached 10 Gbit/s"));
	assert_non_null(strstr(t, ", which end: cannot tell\n"));
	free(t);
	rn_sweep_free(&s);
}

/* --min-gbps with nothing measured (no RDMA): named as skipped, never passed. */
static void test_bw_skipped(void **state)
{
	struct rn_sweep s;
	char *t;
	long k;
	int c;

	fleet(&s);
	s.min_gbps = 10;
	s.no_rdma = 1;
	for (k = 0; k < 3; k++)
		for (c = 0; c < 4; c++)
			s.pairs[k]->cells[c].rdma = RN_PAIR_RDMA_SKIPPED;
	rn_sweep_bw_judge(&s);
	assert_int_equal(rn_sweep_exit(&s), RN_DOCTOR_OK);
	t = report(&s, 0);
	assert_non_null(strstr(t, "\nskipped: bandwidth: no NIC pair was measured"));
	assert_non_null(strstr(t, "verdict: no problems found; bandwidth not measured"));
	free(t);
	t = report(&s, 1);
	assert_non_null(strstr(t, "\"measured\": 0"));
	free(t);
	rn_sweep_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_cells_and_exit),
		cmocka_unit_test(test_infer),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_consistency_agree),
		cmocka_unit_test(test_consistency_names_the_odd_ones),
		cmocka_unit_test(test_consistency_tie),
		cmocka_unit_test(test_consistency_plugin_missing),
		cmocka_unit_test(test_bw_the_bad_end),
		cmocka_unit_test(test_bw_recheck_clears),
		cmocka_unit_test(test_bw_the_path),
		cmocka_unit_test(test_bw_two_hosts_sibling_witness),
		cmocka_unit_test(test_bw_cannot_tell),
		cmocka_unit_test(test_bw_skipped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
