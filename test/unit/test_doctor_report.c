// SPDX-License-Identifier: MIT
/*
 * roce-doctor's peer report (src/doctor/doctor_peer.c over the rest of the doctor): eight
 * mlx5-named NICs a side, long findings on NICs and pairs, and a cause from a newer peer. The matrix names each pair's cause, the human report and the JSON
 * carry every message and fix whole; and parity: every field the report carries is in
 * both forms (the host and sweep reports' parity is test_doctor_parity.c's).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#undef skip /* cmocka's; doctor_peer.c has a function of that name */
/* doctor_peer.c's own report functions are static: the file is compiled in; the rest of the
 * doctor (model, host report, wire, pair checks, counters) is linked from its archive. */
#include "../../src/doctor/doctor_peer.c"
#include "rn_json.h"

#define N 8
#define UNKNOWN_CAUSE 999

static void fill_inv(struct rn_dw_inv *inv, const char *host, int base)
{
	int i;

	snprintf(inv->host, sizeof(inv->host), "%s", host);
	inv->nnics = N;
	for (i = 0; i < N; i++) {
		struct rn_dw_nic *n = &inv->nics[i];

		snprintf(n->netdev, sizeof(n->netdev), "ens%df0np0", (i + 1) % 10);
		snprintf(n->ibdev, sizeof(n->ibdev), "mlx5_%d", i);
		n->port = 1;
		n->ip.family = AF_INET;
		n->ip.v4.s_addr = htonl(0xc6120000u | (uint32_t)(base + i));
		n->prefixlen = 24;
		n->link_up = 1;
		n->gid_index = 3;
		n->mtu = 9000;
		n->active_mtu = 4096;
	}
}

/* A long finding naming every NIC, from the catalogue (so with real wording). */
static void nic_finding(struct rn_dw_nic *n, const char *host, int i)
{
	struct rn_vars v = RN_VARS_INIT;
	int k;

	n->findings = calloc(1, sizeof(*n->findings));
	assert_non_null(n->findings);
	n->nfindings = 1;
	n->verdict = RN_VERDICT_REFUSED;
	rn_vars_set(&v, "nic", "mlx5_%d:1", i);
	rn_vars_set(&v, "dev", "ens%df0np0", i + 1);
	rn_vars_set(&v, "ip", "198.18.0.%d", 11 + i);
	rn_vars_set(&v, "subnet", "198.18.0.0/24");
	rn_vars_set(&v, "others", "%d other NICs: ", N - 1);
	rn_vars_set(&v, "devs", "ens%df0np0", i + 1);
	rn_vars_set(&v, "why", "effective arp_ignore=0 on %s", "");
	for (k = 0; k < N; k++) {
		if (k != i)
			rn_vars_append(&v, "others", k == (i ? 0 : 1) ? "" : ", ",
				       "ens%df0np0 (%s)", k + 1, host);
		if (k != i)
			rn_vars_append(&v, "devs", " ", "ens%df0np0", k + 1);
		rn_vars_append(&v, "why", k ? "," : "", "ens%df0np0", k + 1);
	}
	rn_vars_set(&v, "sysctls",
		    "net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2");
	assert_int_equal(rn_finding_render(&n->findings[0], RN_CAUSE_ARP_FLUX, &v), 0);
	rn_vars_free(&v);
}

static void pair_finding(struct rn_dw_pair *p, int i, int j, const char *peer_host)
{
	struct rn_vars v = RN_VARS_INIT;

	rn_vars_set(&v, "peer_ip", "198.18.0.%d", 21 + j);
	rn_vars_set(&v, "got_mac", "02:00:00:00:01:%02x", j + 1);
	rn_vars_set(&v, "peer_mac", "02:00:00:00:01:%02x", j);
	rn_vars_set(&v, "peer_host", "%s", peer_host);
	rn_vars_set(&v, "dev", "ens%df0np0", i + 1);
	rn_vars_set(&v, "peer_fix", "sysctl -w net.ipv4.conf.ens%df0np0.arp_ignore=1", j + 1);
	rn_vars_set(&v, "who", "peer");
	rn_vars_set(&v, "wrong", "NIC");
	rn_vars_set(&v, "why", "ARP flux on host %s", peer_host);
	rn_vars_set(&v, "neigh_fix", "ip neigh flush dev ens%df0np0 to 198.18.0.%d nud all", i + 1,
		    21 + j);
	assert_int_equal(rn_finding_render(&p->findings[p->nfindings++], RN_CAUSE_NEIGH_WRONG_MAC,
					   &v),
			 0);
	p->status = 1;
	rn_vars_free(&v);
}

static struct session *sample(void)
{
	static const char *ha = "gpu-node-a.rack17.example", *hb = "gpu-node-b.rack17.example";
	struct session *s = calloc(1, sizeof(*s));
	int i, j;

	assert_non_null(s);
	s->run.step = RN_PAIR_STEP_END; /* a run that went through, as peer reports only those */
	fill_inv(&s->local, ha, 11);
	fill_inv(&s->remote, hb, 21);
	for (i = 0; i < N; i += 2)
		nic_finding(&s->local.nics[i], ha, i);
	nic_finding(&s->remote.nics[5], hb, 5);
	/* a cause this build does not know, from a newer peer */
	assert_int_equal(rn_finding_set(&s->remote.nics[5].findings[0], UNKNOWN_CAUSE, RN_SEV_FATAL,
					"a newer peer's finding about ens6f0np0 that this build "
					"cannot name but shows whole",
					"roce-policy-routing --newer-option ens6f0np0"),
			 0);
	for (i = 0; i < N; i++)
		for (j = 0; j < N; j++) {
			struct rn_dw_pair *a = &s->run.ours.pairs[s->run.ours.npairs++];
			struct rn_dw_pair *b = &s->run.theirs.pairs[s->run.theirs.npairs++];

			*a = (struct rn_dw_pair){ .local = i, .remote = j };
			*b = (struct rn_dw_pair){ .local = j, .remote = i };
			if (i == j + 1)
				pair_finding(a, i, j, hb);
			if (j == 7)
				pair_finding(b, j, i, ha);
			if (i == 2 && j == 3) { /* the newer peer's pair check */
				assert_int_equal(rn_finding_set(&b->findings[b->nfindings++],
								UNKNOWN_CAUSE - 1, RN_SEV_FATAL,
								"a newer check", ""),
						 0);
				b->status = 1;
			}
		}
	return s;
}

static char *report(struct session *s, int json)
{
	struct rn_doctor *d = calloc(1, sizeof(*d));
	char *buf = NULL;
	size_t len = 0;

	assert_non_null(d);
	if (!s->res.cells) /* as peer does after its run: the session's result, judged */
		assert_int_equal(session_record(s), 0);
	d->out = open_memstream(&buf, &len);
	assert_non_null(d->out);
	d->verbose = 1;
	if (json)
		json_session(d, s, "198.18.0.21", 1);
	else
		print_session(d, s, "198.18.0.21");
	fclose(d->out);
	free(d);
	return buf;
}

static void matrix_and_findings_whole(void **state)
{
	struct session *s = sample();
	char *h = report(s, 0), *j = report(s, 1);
	int i, k;

	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "%s\n%s\n", h, j);
	/* the matrix: each pair's cause by id, the newer peer's as "unknown cause N" */
	assert_non_null(strstr(h, "neigh-wrong-mac"));
	assert_non_null(strstr(h, "unknown cause 999"));
	assert_non_null(strstr(h, " unknown cause 998(peer) "));
	assert_null(strstr(h, "?"));
	/* every NIC and pair text whole, in both reports */
	for (i = 0; i < N; i++) {
		const struct rn_dw_nic *nl = &s->local.nics[i], *nr = &s->remote.nics[i];

		for (k = 0; k < nl->nfindings; k++) {
			assert_true(strlen(nl->findings[k].msg) > 255);
			assert_non_null(strstr(j, nl->findings[k].msg));
			assert_non_null(strstr(j, nl->findings[k].fix));
			/* the human report shows a fix once for the NICs whose fix reads the same */
			if (i == 0)
				assert_non_null(strstr(h, nl->findings[k].fix));
		}
		for (k = 0; k < nr->nfindings; k++) {
			assert_non_null(strstr(j, nr->findings[k].msg));
			assert_non_null(strstr(h, nr->findings[k].msg));
			assert_non_null(strstr(h, nr->findings[k].fix));
		}
	}
	assert_non_null(strstr(h, s->local.nics[0].findings[0].msg)); /* the first of its cause */
	for (i = 0; i < s->run.ours.npairs; i++)
		for (k = 0; k < s->run.ours.pairs[i].nfindings; k++) {
			assert_non_null(strstr(j, s->run.ours.pairs[i].findings[k].msg));
			assert_non_null(strstr(j, s->run.ours.pairs[i].findings[k].fix));
			assert_non_null(strstr(h, s->run.ours.pairs[i].findings[k].fix));
		}
	assert_non_null(strstr(j, "\"cause\": \"unknown cause 999\""));
	/*
	 * Where each part runs, by name: our pair's wrong MAC is the remote's sysctls first,
	 * then our flush; the remote's pair finding flushes there, after our sysctls.
	 */
	assert_non_null(strstr(h,
			       "\n    fix ens2f0np0->gpu-node-b.rack17.example:ens1f0np0 (on "
			       "gpu-node-b.rack17.example): sysctl -w "
			       "net.ipv4.conf.ens1f0np0.arp_ignore=1\n    then fix ens2f0np0->"
			       "gpu-node-b.rack17.example:ens1f0np0: ip neigh flush dev ens2f0np0 "
			       "to 198.18.0.21 nud all\n"));
	assert_non_null(strstr(h, "\n    fix gpu-node-b.rack17.example:ens8f0np0->ens1f0np0 (on "
				  "gpu-node-a.rack17.example): sysctl -w "));
	assert_non_null(strstr(h,
			       "\n    then fix gpu-node-b.rack17.example:ens8f0np0->ens1f0np0 "
			       "(on gpu-node-b.rack17.example): ip neigh flush dev ens8f0np0 to "));
	assert_non_null(
		strstr(j, "\"pre_fix\": \"sysctl -w net.ipv4.conf.ens1f0np0.arp_ignore=1\",\n"));
	assert_non_null(strstr(j, "\"pre_host\": \"gpu-node-b.rack17.example\""));
	{
		const char *fx =
			strstr(j,
			       "\"fix\": \"ip neigh flush dev ens2f0np0 to 198.18.0.21 nud all\",");

		assert_non_null(fx);
		fx = strchr(fx, '\n');
		assert_non_null(fx);
		fx += strspn(fx, " \n");
		assert_memory_equal(fx, "\"fix_host\": \"gpu-node-a.rack17.example\"", 38);
	}
	free(h);
	free(j);
	session_clear(s);
	free(s);
}

/*
 * A failed probe's counters (doctor_ctr.c's, filled here): under the probe's error in the
 * human report, the moved counters and what they show; in the JSON, the probe's "counters".
 * session_clear releases the finding they carry (the sanitizer checks).
 */
static void probe_counters_shown(void **state)
{
	struct session *s = sample();
	struct rn_pair_probe *p = &s->probes[1][2];
	char *h, *j;

	p->tried = 1;
	p->ret = -ETIMEDOUT;
	p->timeout = 1;
	snprintf(p->why, sizeof(p->why), "send: completion error 12 (retry exceeded)");
	p->ctr.read = 1;
	snprintf(p->ctr.nic, sizeof(p->ctr.nic), "mlx5_1:1");
	p->ctr.driver = "mlx5";
	p->ctr.secs = 2.5;
	p->ctr.n = 1;
	snprintf(p->ctr.delta[0].name, sizeof(p->ctr.delta[0].name), "local_ack_timeout_err");
	p->ctr.delta[0].role = RN_CTR_TIMEOUT;
	p->ctr.delta[0].d = 7;
	assert_int_equal(rn_finding_set(&p->ctr.shows, RN_CAUSE_NO_REPLY, RN_SEV_FATAL,
					"mlx5_1:1 (ens2f0np0): nothing came back", ""),
			 0);
	h = report(s, 0);
	j = report(s, 1);
	assert_non_null(
		strstr(h, "rdma probes that failed:\n  ens2f0np0->gpu-node-b.rack17.example:"
			  "ens3f0np0: send: completion error 12 (retry exceeded)\n      "
			  "counters of mlx5_1:1 (mlx5) over the probe's 2.5 s: "
			  "local_ack_timeout_err +7 (retransmission timeouts)\n      they show "
			  "no-reply [fatal]: mlx5_1:1 (ens2f0np0): nothing came back\n"));
	assert_non_null(strstr(j, "\"counters\": {\n"));
	assert_non_null(strstr(j, "\"counter\": \"local_ack_timeout_err\",\n"));
	assert_non_null(strstr(j, "\"cause\": \"no-reply\",\n"));
	free(h);
	free(j);
	session_clear(s);
	free(s);
}

/* @a, then @b after it, then @c after that, in @hay: one pair's fields in their order. */
static int in_order(const char *hay, const char *a, const char *b, const char *c)
{
	const char *p = strstr(hay, a);

	p = p ? strstr(p + strlen(a), b) : NULL;
	return p && strstr(p + strlen(b), c);
}

static void both(const char *h, const char *j, const char *field, const char *ht, const char *jt)
{
	if (!strstr(h, ht))
		fail_msg("%s: '%s' not in the text", field, ht);
	if (!strstr(j, jt))
		fail_msg("%s: '%s' not in the JSON", field, jt);
}

/*
 * A finding: its cause and its fix in both; its message whole in the JSON, in the text the
 * first of its cause's (the text groups a cause's findings: one screen for 8 NICs).
 */
static void finding_both(const char *h, const char *j, const char *field,
			 const struct rn_finding *x)
{
	char lb[32], t[160];
	const char *label = rn_cause_label(x->cause, lb, sizeof(lb));

	snprintf(t, sizeof(t), "\"cause\": \"%s\"", label);
	both(h, j, field, label, t);
	snprintf(t, sizeof(t), "\"message\": \"%.100s", rn_finding_msg(x));
	if (!strstr(j, t))
		fail_msg("%s: '%s' not in the JSON", field, t);
	if (rn_finding_fix(x)[0])
		both(h, j, field, rn_finding_fix(x), rn_finding_fix(x));
}

/*
 * Parity: one session rendered both ways, every field the peer report carries in both.
 * JSON alone, by design: a NIC's prefix length, MAC, link, GID and its index, MTUs, own
 * verdict and ibdev (the text's matrix shows the pair, the findings the NIC), each check's
 * status (the text's cell words it), a probe's time, arp_probed and the exit code; and a
 * finding's message but the first of its cause (the text groups them).
 */
static void peer_parity(void **state)
{
	struct session *s = sample();
	struct rn_pair_probe *p = &s->probes[3][4];
	char *h, *j, a[64], b[64], c[96], ip[INET6_ADDRSTRLEN];
	int i, k, f;

	p->tried = 1;
	p->ret = -EHOSTUNREACH;
	p->ms = 2;
	snprintf(p->why, sizeof(p->why), "connect: no route to the peer's GID");
	snprintf(s->skips[0].why, sizeof(s->skips[0].why), "no CAP_NET_RAW here");
	s->skips[0].check = "arp-probe";
	s->nskips = 1;
	assert_int_equal(rn_finding_set(&s->drops_local[6], RN_CAUSE_FIREWALL, RN_SEV_FATAL,
					"RDMA dies at ens7f0np0", "open udp 4791 on ens7f0np0"),
			 0);
	s->run.check_ms = 1.5;
	h = report(s, 0);
	j = report(s, 1);
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "%s\n%s\n", h, j);
	both(h, j, "local host", "gpu-node-a.rack17.example (8 NICs)",
	     "\"host\": \"gpu-node-a.rack17.example\"");
	both(h, j, "remote host", "<-> gpu-node-b.rack17.example via",
	     "\"host\": \"gpu-node-b.rack17.example\"");
	both(h, j, "peer", "via 198.18.0.21", "\"peer\": \"198.18.0.21\"");
	for (i = 0; i < N; i++) {
		const struct rn_dw_nic *ln = &s->local.nics[i], *rm = &s->remote.nics[i];

		snprintf(a, sizeof(a), "%s %s", ln->netdev, rn_ip_str(&ln->ip, ip, sizeof(ip)));
		snprintf(b, sizeof(b), "\"ip\": \"%s\"", ip);
		both(h, j, "local NIC", a, b);
		snprintf(a, sizeof(a), " %s", rn_ip_str(&rm->ip, ip, sizeof(ip)));
		snprintf(b, sizeof(b), "\"ip\": \"%s\"", ip);
		both(h, j, "remote NIC", a, b);
		for (k = 0; k < N; k++) {
			char w[64], row[64];

			cell(s, i, k, w, sizeof(w));
			snprintf(row, sizeof(row), "\n%s %s", ln->netdev,
				 rn_ip_str(&ln->ip, ip, sizeof(ip)));
			snprintf(a, sizeof(a), "\"local\": \"%s\"", ln->netdev);
			snprintf(b, sizeof(b), "\"remote\": \"%s\"", s->remote.nics[k].netdev);
			snprintf(c, sizeof(c), "\"result\": \"%s\"", w);
			if (!in_order(j, a, b, c))
				fail_msg("pair %d x %d: '%s' not in the JSON", i, k, w);
			if (!strstr(strstr(h, row), w))
				fail_msg("pair %d x %d: '%s' not in the text's row", i, k, w);
		}
	}
	for (i = 0; i < s->run.ours.npairs; i++)
		for (f = 0; f < s->run.ours.pairs[i].nfindings; f++) {
			const struct rn_finding *x = &s->run.ours.pairs[i].findings[f];

			finding_both(h, j, "our check's finding", x);
		}
	for (i = 0; i < s->run.theirs.npairs; i++)
		for (f = 0; f < s->run.theirs.pairs[i].nfindings; f++) {
			const struct rn_finding *x = &s->run.theirs.pairs[i].findings[f];

			finding_both(h, j, "their check's finding", x);
		}
	both(h, j, "probe error", "connect: no route to the peer's GID",
	     "\"error\": \"connect: no route to the peer's GID\"");
	both(h, j, "skip", "skipped: arp-probe: no CAP_NET_RAW here",
	     "\"why\": \"no CAP_NET_RAW here\"");
	both(h, j, "skip check", "arp-probe", "\"check\": \"arp-probe\"");
	both(h, j, "drop", "RDMA dies at ens7f0np0", "\"message\": \"RDMA dies at ens7f0np0\"");
	both(h, j, "drop fix", "open udp 4791 on ens7f0np0",
	     "\"fix\": \"open udp 4791 on ens7f0np0\"");
	both(h, j, "check time", "(pair checks 1.5 ms)", "\"elapsed_us\": 1500");
	free(h);
	free(j);
	session_clear(s);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(matrix_and_findings_whole),
		cmocka_unit_test(probe_counters_shown),
		cmocka_unit_test(peer_parity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
