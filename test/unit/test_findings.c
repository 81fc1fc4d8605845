// SPDX-License-Identifier: MIT
/*
 * Findings end to end on a host with eight mlx5-named NICs (ens1f0np0..ens8f0np0) in
 * one subnet and every NIC-level cause at once: the verdicts (by cause id), then the
 * NCCL log as the plugin writes it (rn_nic_log through the logger bridge into a
 * logger that formats like NCCL's, into 1 KiB): every message and every fix command
 * must arrive whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_nl.h"
#include "plugin.h"
#include "rn_log.h"
#include "rn_nic.h"

#define NNICS 8
#define NCCL_LINE 1024 /* NCCL's debug logger formats into a buffer this size */

static struct fake_nl_host H;
static struct rn_config cfg;
static struct rn_nic nics[NNICS];

static struct {
	char *lines[4096];
	int n, cut;
} logged;

/* As NCCL's ncclDebugLog: vsnprintf into a fixed buffer; count what it would cut. */
static void nccl_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
			const char *fmt, ...)
{
	char buf[NCCL_LINE];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* NCCL adds "host:pid:tid [dev] NCCL WARN " in front: leave it room */
	if (n < 0 || n + 64 >= NCCL_LINE)
		logged.cut++;
	if (level == NCCL_LOG_WARN && logged.n < (int)RN_ARRAY_SIZE(logged.lines))
		logged.lines[logged.n++] = strdup(buf);
}

static void log_reset(void)
{
	int i;

	for (i = 0; i < logged.n; i++)
		free(logged.lines[i]);
	memset(&logged, 0, sizeof(logged));
}

/*
 * The log's text with split lines joined again: a "(cont.) " line continues the one
 * before it. What a reader of the NCCL log gets back.
 */
static char *log_text(void)
{
	size_t len = 1;
	char *t, *p;
	int i;

	for (i = 0; i < logged.n; i++)
		len += strlen(logged.lines[i]) + 1;
	t = calloc(1, len);
	assert_non_null(t);
	for (i = 0; i < logged.n; i++) {
		p = strstr(logged.lines[i], "(cont.) ");
		if (p && i) {
			t[strlen(t) - 1] = ' '; /* the newline of the line it continues */
			strcat(t, p + strlen("(cont.) "));
		} else {
			strcat(t, logged.lines[i]);
		}
		strcat(t, "\n");
	}
	return t;
}

static int setup(void **state)
{
	struct rn_host *h;
	char name[32], cidr[32];
	int i;

	fake_nl_init(&H);
	for (i = 0; i < NNICS; i++) {
		snprintf(name, sizeof(name), "ens%df0np0", i + 1);
		snprintf(cidr, sizeof(cidr), "198.18.0.%d/24", 11 + i);
		fake_link(&H, 2 + i, name, 0x10 + i, i != NNICS - 1); /* ens8f0np0 is down */
		fake_addr(&H, 2 + i, cidr, 0);
	}
	/* ens2f0np0: its rule's table routes the subnet out of ens1f0np0 */
	fake_rule(&H, 202, "198.18.0.12/32", 202);
	fake_route(&H, 202, "198.18.0.0/24", 2, "198.18.0.11", NULL);
	/* ens3f0np0: strict rp_filter */
	fake_sysctl(&H, "ens3f0np0", "rp_filter", 1);
	rn_config_defaults(&cfg);
	fake_nl_install(&H);
	assert_int_equal(rn_host_snapshot(&h), 0);
	for (i = 0; i < NNICS; i++) {
		snprintf(name, sizeof(name), "ens%df0np0", i + 1);
		assert_int_equal(rn_nic_from_netdev(h, name, &nics[i]), 0);
		snprintf(nics[i].ibdev, sizeof(nics[i].ibdev), "mlx5_%d", i);
		nics[i].port = 1;
		/* ens4f0np0: the port runs 4096 over a 1500-byte netdev */
		if (i == 3)
			nics[i].active_mtu = IBV_MTU_4096;
		assert_int_equal(rn_nic_assess(h, NULL, &nics[i], &cfg), 0);
	}
	rn_host_free(h);
	fake_nl_uninstall();
	log_reset();
	return 0;
}

static int teardown(void **state)
{
	int i;

	for (i = 0; i < NNICS; i++)
		rn_nic_cleanup(&nics[i]);
	rn_plugin_log_attach(NULL);
	log_reset();
	return 0;
}

static int has(const struct rn_nic *nic, enum rn_cause c)
{
	int i;

	for (i = 0; i < nic->nfindings; i++)
		if (nic->findings[i].cause == c)
			return 1;
	return 0;
}

static void every_cause_at_once(void **state)
{
	int i, k, nf = 0;

	assert_true(has(&nics[0], RN_CAUSE_ARP_FLUX));
	assert_true(has(&nics[0], RN_CAUSE_NO_RULE));
	assert_true(has(&nics[1], RN_CAUSE_RULE_WRONG_NIC));
	assert_true(has(&nics[2], RN_CAUSE_RP_FILTER));
	assert_true(has(&nics[3], RN_CAUSE_MTU_MISMATCH));
	assert_true(has(&nics[4], RN_CAUSE_ROUTE_WRONG_NIC));
	assert_true(has(&nics[7], RN_CAUSE_LINK_DOWN));
	/* no template went without a value, and no text guesses */
	assert_int_equal(rn_finding_bugs(), 0);
	for (i = 0; i < NNICS; i++)
		for (k = 0; k < nics[i].nfindings; k++, nf++) {
			const struct rn_finding *f = &nics[i].findings[k];

			assert_null(strpbrk(f->msg, "?{}"));
			assert_null(strpbrk(f->fix, "?{}"));
			assert_null(strstr(f->fix, "scripts/"));
		}
	/* no-rule is not repeated beside route-wrong-nic (same fix, pasted once) */
	assert_true(nf >= 16);
}

/* The plugin's INIT log through the logger bridge: nothing NCCL would cut, nothing lost. */
static void nccl_log_keeps_every_text_whole(void **state)
{
	char *text;
	int i, k;

	rn_plugin_log_attach(nccl_logger);
	for (i = 0; i < NNICS; i++)
		rn_nic_log(&nics[i]);
	assert_int_equal(logged.cut, 0);
	text = log_text();
	for (i = 0; i < NNICS; i++)
		for (k = 0; k < nics[i].nfindings; k++) {
			const struct rn_finding *f = &nics[i].findings[k];
			char *fix = strdup(f->fix), *save = NULL, *cmd;

			assert_non_null(strstr(text, f->msg));
			assert_non_null(fix);
			/* each command whole, on its own or with the others of its line */
			for (cmd = strtok_r(fix, ";", &save); cmd; cmd = strtok_r(NULL, ";", &save))
				assert_non_null(strstr(text, cmd + (*cmd == ' ')));
			free(fix);
		}
	free(text);
}

/* A finding far over one log line: split on spaces and per command, rejoined whole. */
static void nccl_log_splits_never_cuts(void **state)
{
	struct rn_finding f = { 0 };
	char *msg = calloc(1, 4000), *fix = calloc(1, 4000), *text;
	int i;

	assert_non_null(msg);
	assert_non_null(fix);
	for (i = 0; strlen(msg) < 3000; i++)
		sprintf(msg + strlen(msg), "%sens%df0np0 198.18.%d.%d", i ? ", " : "", i % 8 + 1,
			i / 250, i % 250);
	for (i = 0; i < 12; i++)
		sprintf(fix + strlen(fix),
			"%sip route replace 198.18.%d.0/24 dev ens%df0np0 src "
			"198.18.%d.11 table %d",
			i ? "; " : "", i, i % 8 + 1, i, 100 + i);
	assert_int_equal(rn_finding_set(&f, RN_CAUSE_ARP_FLUX, RN_SEV_FATAL, msg, fix), 0);
	rn_plugin_log_attach(nccl_logger);
	rn_finding_log(RN_LOG_WARN, RN_SUB_INIT, RN_PFX "mlx5_0:1", NULL, &f);
	assert_int_equal(logged.cut, 0);
	assert_true(logged.n >= 4 + 12); /* the message in pieces, one line per command */
	text = log_text();
	assert_non_null(strstr(text, msg));
	for (i = 0; i < 12; i++) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd),
			 "fix: ip route replace 198.18.%d.0/24 dev ens%df0np0 src "
			 "198.18.%d.11 table %d\n",
			 i, i % 8 + 1, i, 100 + i);
		assert_non_null(strstr(text, cmd));
	}
	free(text);
	free(msg);
	free(fix);
	rn_finding_clear(&f);
}

/*
 * Where each part of a fix runs, in the WARN: the peer's share by its name first, then
 * ours; a finding the peer made (its refusal) runs there; advice is not a fix.
 */
static void nccl_log_names_where_fixes_run(void **state)
{
	struct rn_finding f = { 0 }, g = { 0 };
	struct rn_vars v = RN_VARS_INIT;
	char *text, *big;

	rn_vars_set(&v, "peer_ip", "198.18.0.11");
	rn_vars_set(&v, "got_mac", "02:00:00:00:00:01");
	rn_vars_set(&v, "peer_mac", "02:00:00:00:00:02");
	rn_vars_set(&v, "peer_host", "gpu7");
	rn_vars_set(&v, "dev", "ens1f0np0");
	rn_vars_set(&v, "peer_fix",
		    "sysctl -w net.ipv4.conf.all.arp_ignore=1 "
		    "net.ipv4.conf.all.arp_announce=2");
	rn_vars_set(&v, "ip", "198.18.0.1");
	rn_vars_set(&v, "peer_dev", "ens2f0np0");
	rn_vars_set(&v, "who", "peer");
	rn_vars_set(&v, "wrong", "NIC");
	rn_vars_set(&v, "why", "ARP flux on host %s", "gpu7");
	rn_vars_set(&v, "neigh_fix", "ip neigh flush dev %s to %s nud all", "ens1f0np0",
		    "198.18.0.11");
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_NEIGH_WRONG_MAC, &v), 0);
	assert_int_equal(rn_finding_render(&g, RN_CAUSE_PEER_DIED, &v), 0);
	rn_plugin_log_attach(nccl_logger);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, RN_PFX "conn", NULL, &f);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, RN_PFX "theirs", "gpu7", &f);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, RN_PFX "died", NULL, &g);
	assert_int_equal(logged.n, 3);
	assert_non_null(strstr(logged.lines[0],
			       "; fix (on gpu7): sysctl -w net.ipv4.conf.all."
			       "arp_ignore=1 net.ipv4.conf.all.arp_announce=2; then fix: ip neigh "
			       "flush dev ens1f0np0 to 198.18.0.11 nud all"));
	/* the peer's own finding: its flush runs there, our name is not in it */
	assert_non_null(strstr(logged.lines[1], "; then fix (on gpu7): ip neigh flush"));
	assert_non_null(strstr(logged.lines[2], "[peer-died]: "));
	assert_non_null(strstr(logged.lines[2],
			       "; what to do: look at the log of the process on gpu7"));
	assert_null(strstr(logged.lines[2], "fix"));
	/* too long for one line: each part on lines of its own, labelled the same */
	log_reset();
	big = calloc(1, 1200);
	assert_non_null(big);
	memset(big, 'x', 1100);
	rn_vars_set(&v, "got_mac", "%s", big);
	free(big);
	assert_int_equal(rn_finding_render(&f, RN_CAUSE_NEIGH_WRONG_MAC, &v), 0);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, RN_PFX "conn", NULL, &f);
	assert_int_equal(logged.cut, 0);
	text = log_text();
	assert_non_null(strstr(text, "[neigh-wrong-mac] fix (on gpu7): sysctl -w net.ipv4.conf.all."
				     "arp_ignore=1 net.ipv4.conf.all.arp_announce=2\n"));
	assert_non_null(strstr(text, "[neigh-wrong-mac] then fix: ip neigh flush dev ens1f0np0 to "
				     "198.18.0.11 nud all\n"));
	free(text);
	rn_vars_free(&v);
	rn_finding_clear(&f);
	rn_finding_clear(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_cause_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(nccl_log_keeps_every_text_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(nccl_log_splits_never_cuts, setup, teardown),
		cmocka_unit_test_setup_teardown(nccl_log_names_where_fixes_run, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
