// SPDX-License-Identifier: MIT
/*
 * roce-doctor mesh's arithmetic (src/doctor/doctor_mesh_stats.c): the probe rate's token
 * bucket, the rotation over NIC pairs under a rate smaller than the pairs, the window's
 * loss and nearest-rank percentiles, the metrics text (and that `localize` reads back
 * what the agent writes), and the verdicts: one NIC, one host, the link between two
 * groups, and nothing for a lone failing pair or a clean mesh. The JSON reader and a
 * sweep's report as pair observations (localize over `sweep --json`).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../src/doctor/doctor_jsonin.h"
#include "../../src/doctor/doctor_mesh.h"

static void bucket_rate(void **state)
{
	struct rn_mesh_bucket b;
	int i, got = 0;

	(void)state;
	rn_mesh_bucket_init(&b, 10, 5, 100.0);
	/* the burst first, then nothing until time passes */
	for (i = 0; i < 20; i++)
		got += rn_mesh_bucket_take(&b, 100.0);
	assert_int_equal(got, 5);
	/* 10 a second: 0.35 s more gives 3 (the 4th would need 0.4 s) */
	for (got = 0, i = 0; i < 20; i++)
		got += rn_mesh_bucket_take(&b, 100.35);
	assert_int_equal(got, 3);
	/* a long pause saves the burst, not more */
	for (got = 0, i = 0; i < 100; i++)
		got += rn_mesh_bucket_take(&b, 200.0);
	assert_int_equal(got, 5);
	/* a clock that goes back adds nothing */
	assert_int_equal(rn_mesh_bucket_take(&b, 150.0), 0);
	/* over 10 s at 10/s: 100 tokens and the burst, whatever the steps */
	rn_mesh_bucket_init(&b, 10, 1, 0.0);
	for (got = 0, i = 0; i <= 1000; i++)
		got += rn_mesh_bucket_take(&b, i * 0.01);
	assert_in_range(got, 100, 101);
}

static int even_ready(void *arg, int idx)
{
	(void)arg;
	return idx % 2 == 0;
}

static int all_ready(void *arg, int idx)
{
	int *seen = arg;

	(void)idx;
	return seen != NULL;
}

static void sched_rotates(void **state)
{
	struct rn_mesh_sched s = { 0 };
	int out[16], seen[10] = { 0 }, n, i, round;

	(void)state;
	/* 10 pairs, 3 a tick: every pair in turn, none twice before all once */
	for (round = 0; round < 10; round++) {
		n = rn_mesh_sched_pick(&s, 10, all_ready, seen, 3, out);
		assert_int_equal(n, 3);
		for (i = 0; i < n; i++)
			seen[out[i]]++;
		if (round == 2) { /* 9 taken: each of the first 9 once */
			for (i = 0; i < 9; i++)
				assert_int_equal(seen[i], 1);
			assert_int_equal(seen[9], 0);
		}
	}
	for (i = 0; i < 10; i++)
		assert_int_equal(seen[i], 3);
	/* only the ready ones, from the cursor on */
	memset(&s, 0, sizeof(s));
	n = rn_mesh_sched_pick(&s, 10, even_ready, NULL, 2, out);
	assert_int_equal(n, 2);
	assert_int_equal(out[0], 0);
	assert_int_equal(out[1], 2);
	n = rn_mesh_sched_pick(&s, 10, even_ready, NULL, 10, out);
	assert_int_equal(n, 5);
	assert_int_equal(out[0], 4);
	assert_int_equal(out[4], 2);
	/* none ready, no room, no pairs */
	assert_int_equal(rn_mesh_sched_pick(&s, 10, all_ready, NULL, 4, out), 0);
	assert_int_equal(rn_mesh_sched_pick(&s, 10, all_ready, seen, 0, out), 0);
	assert_int_equal(rn_mesh_sched_pick(&s, 0, all_ready, seen, 4, out), 0);
}

static void window_figs(void **state)
{
	struct rn_mesh_win w = { 0 };
	struct rn_mesh_figs f;
	int i;

	(void)state;
	rn_mesh_win_figs(&w, &f);
	assert_int_equal(f.n, 0);
	assert_true(f.loss == 0 && f.p50_s == 0 && f.p99_s == 0);
	/* 100 us .. 1000 us, then 2 lost of 12 */
	for (i = 1; i <= 10; i++)
		rn_mesh_win_add(&w, (uint32_t)(i * 100));
	rn_mesh_win_add(&w, RN_MESH_LOST);
	rn_mesh_win_add(&w, RN_MESH_LOST);
	rn_mesh_win_figs(&w, &f);
	assert_int_equal(f.n, 12);
	assert_int_equal(f.answered, 10);
	assert_true(f.loss > 0.1666 && f.loss < 0.1667);
	assert_true(f.p50_s > 0.000499 && f.p50_s < 0.000501); /* the 5th of 10 */
	assert_true(f.p99_s > 0.000999 && f.p99_s < 0.001001);
	assert_int_equal(w.lost_run, 2);
	assert_int_equal(w.sent, 12);
	assert_int_equal(w.lost, 2);
	/* an answer ends the run of losses; the window keeps the last RN_MESH_WIN */
	rn_mesh_win_add(&w, 50);
	assert_int_equal(w.lost_run, 0);
	for (i = 0; i < RN_MESH_WIN; i++)
		rn_mesh_win_add(&w, RN_MESH_LOST);
	rn_mesh_win_figs(&w, &f);
	assert_int_equal(f.n, RN_MESH_WIN);
	assert_int_equal(f.answered, 0);
	assert_true(f.loss == 1.0 && f.p50_s == 0);
	assert_int_equal(w.sent, 13 + RN_MESH_WIN);
}

static void pct_nearest_rank(void **state)
{
	uint32_t v[] = { 1, 2, 3, 4, 5 }, one[] = { 7 };

	(void)state;
	assert_int_equal(rn_mesh_pct(v, 5, 0.5), 3);
	assert_int_equal(rn_mesh_pct(v, 5, 0.99), 5);
	assert_int_equal(rn_mesh_pct(v, 5, 0.2), 1);
	assert_int_equal(rn_mesh_pct(v, 5, 0.21), 2);
	assert_int_equal(rn_mesh_pct(one, 1, 0.99), 7);
	assert_int_equal(rn_mesh_pct(v, 0, 0.5), 0);
}

static void render_and_read_back(void **state)
{
	struct rn_mesh_view v[2] = {
		{ .host = "h0",
		  .nic = "nic0",
		  .peer_host = "h\"1",
		  .peer_nic = "nic1",
		  .group = "a",
		  .peer_group = "b",
		  .kind = "udp",
		  .up = 0,
		  .cause = "no-reply",
		  .figs = { .n = 4, .answered = 0, .loss = 1 },
		  .sent = 9,
		  .lost = 4 },
		{ .host = "h0",
		  .nic = "nic1",
		  .peer_host = "h2",
		  .peer_nic = "nic0",
		  .group = "a",
		  .peer_group = "a",
		  .kind = "udp",
		  .up = 1,
		  .figs = { .n = 4, .answered = 4, .p50_s = 0.0002, .p99_s = 0.0009 },
		  .base_s = 0.003,
		  .sent = 4,
		  .lost = 0 },
	};
	struct rn_mesh_self s = { .host = "h0", .peers = 2, .pairs = 2, .probes_sent = 13 };
	struct rn_mesh_obs o;
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	enum rn_mesh_series kind;
	int ups = 0, causes = 0, bases = 0;

	(void)state;
	assert_non_null(f);
	rn_mesh_render(f, v, 2, &s);
	fclose(f);
	assert_non_null(strstr(buf,
			       "roce_mesh_pair_up{host=\"h0\",nic=\"nic0\",peer_host=\"h\\\"1\","
			       "peer_nic=\"nic1\",group=\"a\",peer_group=\"b\",cross=\"1\","
			       "kind=\"udp\"} 0\n"));
	assert_non_null(strstr(buf, "cross=\"0\",kind=\"udp\"} 1\n"));
	assert_non_null(strstr(buf, "kind=\"udp\",cause=\"no-reply\"} 1\n"));
	/* an RTT only where a probe was answered */
	assert_non_null(strstr(buf, "roce_mesh_pair_rtt_p99_seconds{host=\"h0\",nic=\"nic1\""));
	assert_null(strstr(buf, "roce_mesh_pair_rtt_p50_seconds{host=\"h0\",nic=\"nic0\""));
	assert_non_null(strstr(buf, "roce_mesh_pair_lost_total{host=\"h0\",nic=\"nic0\","));
	assert_non_null(strstr(buf, "# TYPE roce_mesh_probes_sent_total counter\n"
				    "roce_mesh_probes_sent_total{host=\"h0\"} 13\n"));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (rn_mesh_parse_line(line, &o, &kind))
			continue;
		if (kind == RN_MESH_BASE) {
			bases++;
			assert_true(o.base_s > 0.0029 && o.base_s < 0.0031);
		} else if (kind == RN_MESH_CAUSE) {
			causes++;
			assert_string_equal(o.cause, "no-reply");
			assert_string_equal(o.peer_host, "h\"1");
		} else {
			ups++;
		}
	}
	assert_int_equal(ups, 2);
	assert_int_equal(causes, 1);
	assert_int_equal(bases, 1); /* where there is one */
	free(buf);
	assert_int_equal(rn_mesh_parse_line("roce_mesh_pair_up{host=\"x\"} 1", &o, &kind),
			 -EBADMSG);
	assert_int_equal(rn_mesh_parse_line("roce_mesh_pair_up{host=\"x} 1", &o, &kind), -EBADMSG);
	assert_int_equal(rn_mesh_parse_line("up 1", &o, &kind), -ENOENT);
}

/* A mesh of @nh hosts of 2 NICs, hosts below @split in group a, the others b; @bad says
 * which pairs fail. Both ends' views. */
static int mesh(struct rn_mesh_obs *o, int nh, int split, int (*bad)(int h, int i, int g, int j))
{
	int h, g, i, j, n = 0;

	for (h = 0; h < nh; h++)
		for (g = 0; g < nh; g++)
			for (i = 0; i < 2 && g != h; i++)
				for (j = 0; j < 2; j++) {
					struct rn_mesh_obs *x = &o[n++];

					memset(x, 0, sizeof(*x));
					snprintf(x->host, sizeof(x->host), "h%d", h);
					snprintf(x->nic, sizeof(x->nic), "nic%d", i);
					snprintf(x->peer_host, sizeof(x->peer_host), "h%d", g);
					snprintf(x->peer_nic, sizeof(x->peer_nic), "nic%d", j);
					strcpy(x->group, h < split ? "a" : "b");
					strcpy(x->peer_group, g < split ? "a" : "b");
					x->up = !bad(h, i, g, j);
					if (!x->up)
						strcpy(x->cause, h == 1 || g == 1 ?
									 "route-wrong-nic" :
									 "no-reply");
				}
	return n;
}

static int none(int h, int i, int g, int j)
{
	(void)h, (void)i, (void)g, (void)j;
	return 0;
}

static int nic_h1_1(int h, int i, int g, int j)
{
	return (h == 1 && i == 1) || (g == 1 && j == 1);
}

static int host_h3(int h, int i, int g, int j)
{
	(void)i, (void)j;
	return h == 3 || g == 3;
}

static int link_ab(int h, int i, int g, int j)
{
	(void)i, (void)j;
	return (h < 2) != (g < 2);
}

/* one NIC pair, both ends' views of it */
static int one_pair(int h, int i, int g, int j)
{
	return (h == 0 && i == 0 && g == 2 && j == 1) || (h == 2 && i == 1 && g == 0 && j == 0);
}

/* The one verdict of the mesh @bad makes (groups split at @split), as @v[0]. */
static void one_verdict(int split, int (*bad)(int h, int i, int g, int j), enum rn_mesh_blame blame,
			int nbad, int of, struct rn_mesh_verdict *v)
{
	struct rn_mesh_obs o[64];
	int n = mesh(o, 4, split, bad);

	assert_int_equal(rn_mesh_localize(o, n, v, 8), 1);
	assert_int_equal(v[0].blame, blame);
	assert_int_equal(v[0].bad, nbad);
	assert_int_equal(v[0].of, of);
}

static void localize(void **state)
{
	struct rn_mesh_obs o[64];
	struct rn_mesh_verdict v[8];
	int n;

	(void)state;
	n = mesh(o, 4, 2, none);
	assert_int_equal(n, 48);
	assert_int_equal(rn_mesh_localize(o, n, v, 8), 0);
	n = mesh(o, 4, 2, one_pair);
	assert_int_equal(rn_mesh_localize(o, n, v, 8), 0);

	one_verdict(2, nic_h1_1, RN_MESH_BLAME_NIC, 12, 12, v);
	assert_string_equal(v[0].host, "h1");
	assert_string_equal(v[0].nic, "nic1");
	assert_string_equal(v[0].cause, "route-wrong-nic");
	one_verdict(2, host_h3, RN_MESH_BLAME_HOST, 24, 24, v);
	assert_string_equal(v[0].host, "h3");
	assert_string_equal(v[0].cause, "no-reply");
	one_verdict(2, link_ab, RN_MESH_BLAME_LINK, 32, 32, v);
	assert_string_equal(v[0].group, "a");
	assert_string_equal(v[0].peer_group, "b");
	/* one group: the same host fault, no link to name */
	one_verdict(4, host_h3, RN_MESH_BLAME_HOST, 24, 24, v);
	/* more verdicts than room: counted, @max written */
	n = mesh(o, 4, 4, nic_h1_1);
	assert_int_equal(rn_mesh_localize(o, n, v, 0), 1);
}

/* Hosts 0-1 and 2-3 a gap apart (5 ms across, 0.1 ms inside), no groups given. */
static void rtt_groups(void **state)
{
	struct rn_mesh_obs o[64];
	struct rn_mesh_verdict v[8];
	int n, i;

	(void)state;
	n = mesh(o, 4, 4, link_ab);
	for (i = 0; i < n; i++)
		o[i].base_s = (o[i].host[1] < '2') != (o[i].peer_host[1] < '2') ? 0.005 : 0.0001;
	/* with one group the link cannot be told: every host fails with most (4 of 6) peers */
	assert_int_equal(rn_mesh_localize(o, n, v, 8), 4);
	assert_int_equal(v[0].blame, RN_MESH_BLAME_HOST);
	assert_int_equal(rn_mesh_rtt_groups(o, n), 2);
	assert_string_equal(o[0].group, "near-h0");
	for (i = 0; i < n; i++)
		if (!strcmp(o[i].host, "h3"))
			assert_string_equal(o[i].group, "near-h2");
	assert_int_equal(rn_mesh_localize(o, n, v, 8), 1);
	assert_int_equal(v[0].blame, RN_MESH_BLAME_LINK);
	assert_string_equal(v[0].group, "near-h0");
	assert_string_equal(v[0].peer_group, "near-h2");
	/* no gap of 3x (0.1 vs 0.2 ms): one group, nothing rewritten */
	n = mesh(o, 4, 4, none);
	for (i = 0; i < n; i++)
		o[i].base_s = o[i].host[1] == '0' ? 0.0002 : 0.0001;
	assert_int_equal(rn_mesh_rtt_groups(o, n), 1);
	assert_string_equal(o[0].group, "a");
	/* no baseline at all: one group */
	n = mesh(o, 4, 4, none);
	assert_int_equal(rn_mesh_rtt_groups(o, n), 1);
}

static void jsonin(void **state)
{
	struct rn_jv *v;
	char why[128];
	static const char *bad[] = { "",      "{",   "[1,]",    "{\"a\" 1}",   "\"x",
				     "[1] 2", "tru", "\"\\q\"", "\"\\u12g4\"", "{1:2}" };
	char deep[200];
	size_t i;

	(void)state;
	assert_int_equal(rn_jv_parse(" {\"a\": [1, -2.5e1, true, null, \"x\\u00e9\\n\"], "
				     "\"b\": {}} ",
				     &v, why, sizeof(why)),
			 0);
	assert_int_equal(v->t, RN_JV_OBJ);
	assert_int_equal(rn_jv_get(v, "a")->n, 5);
	assert_true(rn_jv_get(v, "a")->kids[1].num == -25.0);
	assert_int_equal(rn_jv_get(v, "a")->kids[2].t, RN_JV_BOOL);
	assert_int_equal(rn_jv_get(v, "a")->kids[3].t, RN_JV_NULL);
	assert_string_equal(rn_jv_str(&rn_jv_get(v, "a")->kids[4]), "x\xc3\xa9\n");
	assert_int_equal(rn_jv_get(v, "b")->t, RN_JV_OBJ);
	assert_null(rn_jv_get(v, "c"));
	assert_null(rn_jv_str(rn_jv_get(v, "b")));
	rn_jv_free(v);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rn_jv_parse(bad[i], &v, why, sizeof(why)), -EBADMSG);
		assert_null(v);
		assert_non_null(strstr(why, "offset "));
	}
	/* nesting past RN_JV_DEPTH is refused, not recursed into */
	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = 0;
	assert_int_equal(rn_jv_parse(deep, &v, why, sizeof(why)), -EBADMSG);
	assert_non_null(strstr(why, "too deep"));
}

static int sweep_cb(void *arg, const struct rn_mesh_obs *o)
{
	struct {
		struct rn_mesh_obs o[64];
		int n;
	} *x = arg;

	assert_true(x->n < 64);
	x->o[x->n++] = *o;
	return 0;
}

static void sweep_obs(void **state)
{
	static struct {
		struct rn_mesh_obs o[64];
		int n;
	} x;
	struct rn_mesh_verdict v[8];
	char why[128];
	int k, down = 0;
	/* 3 hosts x 2 NICs; b's eth1 with every NIC of a and c; a-c never answered */
	static const char *js =
		"{\"schema\": \"roce-doctor-sweep/1\", \"hosts\": ["
		"{\"host\": \"a\", \"status\": \"ok\", \"nics\": [{\"netdev\": \"eth0\"}, {\"netdev\": \"eth1\"}]},"
		"{\"host\": \"b\", \"status\": \"problem\", \"nics\": [{\"netdev\": \"eth0\"}, {\"netdev\": \"eth1\"}]},"
		"{\"host\": \"c\", \"status\": \"ok\", \"nics\": [{\"netdev\": \"eth0\"}, {\"netdev\": \"eth1\"}]}],"
		"\"bad_pairs\": ["
		"{\"host_a\": \"a\", \"nic_a\": \"eth0\", \"host_b\": \"b\", \"nic_b\": \"eth1\", \"result\": \"route\", \"causes\": [\"no-rule\"]},"
		"{\"host_a\": \"a\", \"nic_a\": \"eth1\", \"host_b\": \"b\", \"nic_b\": \"eth1\", \"result\": \"route\", \"causes\": [\"no-rule\"]},"
		"{\"host_a\": \"b\", \"nic_a\": \"eth1\", \"host_b\": \"c\", \"nic_b\": \"eth0\", \"result\": \"route\", \"causes\": []},"
		"{\"host_a\": \"b\", \"nic_a\": \"eth1\", \"host_b\": \"c\", \"nic_b\": \"eth1\", \"result\": \"route\", \"causes\": [\"no-rule\"]},"
		"{\"host_a\": \"a\", \"nic_a\": null, \"host_b\": \"c\", \"nic_b\": null, \"result\": \"no-answer\"}]}";

	(void)state;
	assert_int_equal(rn_mesh_sweep_obs(js, sweep_cb, &x, why, sizeof(why)), 0);
	assert_int_equal(x.n, 12);
	for (k = 0; k < x.n; k++) {
		down += !x.o[k].up;
		if (!strcmp(x.o[k].host, "b") && !strcmp(x.o[k].peer_nic, "eth0") &&
		    !strcmp(x.o[k].peer_host, "c"))
			assert_string_equal(x.o[k].cause,
					    strcmp(x.o[k].nic, "eth1") ? "" : "route");
		if (!strcmp(x.o[k].host, "a") && !strcmp(x.o[k].peer_host, "c"))
			assert_string_equal(x.o[k].cause, "no-answer");
		assert_string_equal(x.o[k].group, "all");
	}
	assert_int_equal(down, 4 + 4);
	/*
	 * b's eth1 bad with all 4 of its peers: that NIC; each NIC of a and c bad with 3 of
	 * its 4 (the other host's two, and b's eth1): those hosts
	 */
	assert_int_equal(rn_mesh_localize(x.o, x.n, v, 8), 3);
	for (k = 0, down = 0; k < 3; k++)
		if (v[k].blame == RN_MESH_BLAME_NIC)
			down += !strcmp(v[k].host, "b") && !strcmp(v[k].nic, "eth1");
		else
			down += v[k].blame == RN_MESH_BLAME_HOST &&
				(!strcmp(v[k].host, "a") || !strcmp(v[k].host, "c"));
	assert_int_equal(down, 3);
	assert_int_equal(rn_mesh_sweep_obs("{\"schema\": \"other\", \"hosts\": []}", sweep_cb, &x,
					   why, sizeof(why)),
			 -EBADMSG);
	assert_non_null(strstr(why, "not a sweep report"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bucket_rate),
		cmocka_unit_test(sched_rotates),
		cmocka_unit_test(window_figs),
		cmocka_unit_test(pct_nearest_rank),
		cmocka_unit_test(render_and_read_back),
		cmocka_unit_test(localize),
		cmocka_unit_test(rtt_groups),
		cmocka_unit_test(jsonin),
		cmocka_unit_test(sweep_obs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
