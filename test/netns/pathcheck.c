// SPDX-License-Identifier: MIT
/*
 * rn-pathcheck: drives the route-awareness core over netdev-only NICs (no RDMA
 * device needed) for the netns tests, and prints machine-readable lines.
 *
 *   rn-pathcheck nic DEV...                 NIC verdicts (GID choice from addresses)
 *   rn-pathcheck conn DEV PEER_IP PEER_MAC [TIMEOUT_MS [PEER_HOST [PEER_DEV [PEER_MTU
 *                [PEER_CAUSE]]]]]          per-connection check, polled every 1 ms
 *                                           (PEER_MTU 0: ours; PEER_CAUSE: the peer
 *                                           refused its own path with that cause id)
 *   rn-pathcheck diag DEV PEER_IP PEER_MAC  diagnosis (no ARP sent)
 *   rn-pathcheck bench N DEV...             time snapshot + assess, N rounds
 *   rn-pathcheck routes DEV...              the snapshot's route answers against the
 *                                           kernel's, from each NIC's IP to its probe
 *                                           peer, the other NICs' and the gateways, with
 *                                           and without oif: "routes answered=A asked=K
 *                                           differ=D", a "differ ..." line each
 *
 * Options before the command: -c strict|warn|off (NCCL_ROCE_ROUTE_CHECK), -v (log).
 * Output: "nic DEV ip=IP/LEN table=T verdict=V causes=ID,ID" then one
 * "finding DEV ID SEV msg=... fix=..." per finding, followed by one
 * "paste DEV ID HOST COMMANDS" per part of its fix in the order to run them (HOST
 * "here" or the host named) and "advice DEV ID TEXT" when it has advice;
 * "conn DEV PEER result=ok|refused cause=ID polls=N max_poll_us=U elapsed_ms=M".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "rn_host.h"
#include "rn_nic.h"
#include "rn_route.h"

#define MAX_DSTS 64
#include "rn_log.h"
#include "rn_param.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const char *sev_str(enum rn_severity s)
{
	return s == RN_SEV_FATAL ? "fatal" : s == RN_SEV_WARN ? "warn" : "info";
}

static void print_finding(const char *dev, const struct rn_finding *f)
{
	const char *id = rn_cause_id(f->cause);

	printf("finding %s %s %s msg=%s fix=%s\n", dev, id, sev_str(f->sev), rn_finding_msg(f),
	       rn_finding_fix(f));
	if (rn_finding_pre_fix(f)[0]) {
		const char *h = rn_finding_where(f, 1, NULL);

		printf("paste %s %s %s %s\n", dev, id, h[0] ? h : "here", rn_finding_pre_fix(f));
	}
	if (rn_finding_fix(f)[0]) {
		const char *h = rn_finding_where(f, 0, NULL);

		printf("paste %s %s %s %s\n", dev, id, h[0] ? h : "here", rn_finding_fix(f));
	}
	if (rn_finding_advice(f)[0])
		printf("advice %s %s %s\n", dev, id, rn_finding_advice(f));
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static int assess(struct rn_host *h, const char *dev, const struct rn_config *cfg,
		  struct rn_nic *nic)
{
	int ret;

	rn_nic_cleanup(nic); /* the previous NIC's findings */
	ret = rn_nic_from_netdev(h, dev, nic);

	if (ret) {
		fprintf(stderr, "rn-pathcheck: %s: %s\n", dev, strerror(-ret));
		return ret;
	}
	ret = rn_nic_assess(h, NULL, nic, cfg);
	if (ret)
		fprintf(stderr, "rn-pathcheck: assess %s: %s\n", dev, strerror(-ret));
	return ret;
}

static void print_nic(const struct rn_nic *nic)
{
	char ip[64], causes[256] = "";
	size_t o = 0;
	int i;

	for (i = 0; i < nic->nfindings; i++)
		o += (size_t)snprintf(causes + o, sizeof(causes) - o, "%s%s", i ? "," : "",
				      rn_cause_id(nic->findings[i].cause));
	printf("nic %s ip=%s/%d table=%d verdict=%s causes=%s\n", nic->netdev,
	       rn_ip_str(&nic->ip, ip, sizeof(ip)), nic->prefixlen, nic->table,
	       rn_verdict_str(nic->verdict), o ? causes : "none");
	for (i = 0; i < nic->nfindings; i++)
		print_finding(nic->netdev, &nic->findings[i]);
}

static int cmd_nic(int argc, char **argv, const struct rn_config *cfg, int bench)
{
	struct rn_host *h;
	struct rn_nic nic = { 0 };
	int i, r, rounds = 1, ret = 0;
	double t_snap = 0, t_assess = 0, t0;

	if (bench) {
		rounds = atoi(argv[0]);
		argv++;
		argc--;
		if (rounds < 1 || argc < 1)
			return 2;
	}
	for (r = 0; r < rounds; r++) {
		t0 = now_ms();
		ret = rn_host_snapshot(&h);
		if (ret) {
			fprintf(stderr, "rn-pathcheck: snapshot: %s\n", strerror(-ret));
			return 1;
		}
		t_snap += now_ms() - t0;
		for (i = 0; i < argc; i++) {
			t0 = now_ms();
			if (assess(h, argv[i], cfg, &nic)) {
				rn_host_free(h);
				return 1;
			}
			t_assess += now_ms() - t0;
			if (!bench)
				print_nic(&nic);
			if (!bench && rn_log_enabled(RN_LOG_INFO))
				rn_nic_log(&nic);
		}
		rn_host_free(h);
	}
	if (bench)
		printf("bench rounds=%d nics=%d snapshot_ms=%.3f assess_ms_per_nic=%.3f "
		       "init_ms_per_nic=%.3f\n",
		       rounds, argc, t_snap / rounds, t_assess / rounds / argc,
		       (t_snap / rounds + t_assess / rounds) / argc);
	return 0;
}

static int peer_from_args(char **argv, int argc, struct rn_peer_facts *peer)
{
	memset(peer, 0, sizeof(*peer));
	if (rn_ip_parse(argv[0], &peer->ip) || parse_mac(argv[1], peer->mac)) {
		fprintf(stderr, "rn-pathcheck: bad peer ip or mac\n");
		return -EINVAL;
	}
	snprintf(peer->host, sizeof(peer->host), "%s", argc > 3 ? argv[3] : "peer");
	snprintf(peer->netdev, sizeof(peer->netdev), "%s", argc > 4 ? argv[4] : "?");
	/* what the peer's HELLO would say: its MTU, its own verdict's cause */
	peer->mtu = argc > 5 ? atoi(argv[5]) : 0;
	if (argc > 6) {
		peer->verdict_cause = (uint16_t)rn_cause_from_id(argv[6]);
		if (!peer->verdict_cause) {
			fprintf(stderr, "rn-pathcheck: no cause '%s'\n", argv[6]);
			return -EINVAL;
		}
	}
	return 0;
}

static int cmd_conn(int argc, char **argv, const struct rn_config *cfg, int diag)
{
	struct rn_peer_facts peer;
	struct rn_conn_check *chk;
	struct rn_finding f = { 0 };
	struct rn_host *h;
	struct rn_nic nic = { 0 };
	int timeout = argc > 3 ? atoi(argv[3]) : cfg->neigh_timeout_ms;
	double t0, t1, maxp = 0;
	int ret, polls = 0;

	if (argc < 3)
		return 2;
	if (peer_from_args(argv + 1, argc - 1, &peer))
		return 2;
	ret = rn_host_snapshot(&h);
	if (ret)
		return 1;
	ret = assess(h, argv[0], cfg, &nic);
	rn_host_free(h);
	if (ret)
		return 1;
	if (!peer.mtu)
		peer.mtu = nic.mtu;
	if (diag) {
		ret = rn_diagnose_peer(&nic, &peer, &f);
		printf("diag %s %s result=%s cause=%s\n", argv[0], argv[1],
		       ret == 0 ? "found" : ret == -ENOENT ? "healthy" : strerror(-ret),
		       ret == 0 ? rn_cause_id(f.cause) : "none");
		if (ret == 0)
			print_finding(argv[0], &f);
		return ret == 0 || ret == -ENOENT ? 0 : 1;
	}
	t0 = now_ms();
	ret = rn_conn_check_start(&nic, &peer, timeout, &chk);
	t1 = now_ms();
	maxp = t1 - t0;
	if (ret) {
		fprintf(stderr, "rn-pathcheck: conn start: %s\n", strerror(-ret));
		return 1;
	}
	for (;;) {
		double a = now_ms();

		ret = rn_conn_check_poll(chk, &f);
		polls++;
		a = now_ms() - a;
		if (a > maxp)
			maxp = a;
		if (ret != -EAGAIN)
			break;
		usleep(1000);
	}
	printf("conn %s %s result=%s cause=%s polls=%d max_poll_us=%.0f elapsed_ms=%.1f\n",
	       argv[0], argv[1], ret == 0 ? "ok" : ret == -EHOSTUNREACH ? "refused" : "error",
	       rn_cause_id(f.cause), polls, maxp * 1000, now_ms() - t0);
	if (f.cause)
		print_finding(argv[0], &f);
	rn_conn_check_free(chk);
	return ret == 0 || ret == -EHOSTUNREACH ? 0 : 1;
}

static int route_eq(int ra, const struct rn_nl_route *a, int rb, const struct rn_nl_route *b)
{
	if (ra || rb)
		return ra == rb;
	return a->type == b->type && a->oif == b->oif && a->table == b->table &&
	       a->gw.family == b->gw.family && (!a->gw.family || rn_ip_equal(&a->gw, &b->gw));
}

static int cmd_routes(int argc, char **argv, const struct rn_config *cfg)
{
	struct rn_host *h;
	struct rn_ip dsts[MAX_DSTS];
	int i, j, k, n, differ = 0, ret = rn_host_snapshot(&h);

	if (ret) {
		fprintf(stderr, "rn-pathcheck: snapshot: %s\n", strerror(-ret));
		return 1;
	}
	for (i = 0; i < argc; i++) {
		struct rn_nic nic = { 0 };

		/* the verdict chooses the GID, hence the IP the questions come from */
		if (assess(h, argv[i], cfg, &nic)) {
			rn_host_free(h);
			return 1;
		}
		rn_nic_cleanup(&nic);
		if (!nic.ip.family)
			continue;
		n = 0;
		if (!rn_route_probe_dst(h, &nic, &dsts[n]))
			n++;
		for (j = 0; j < h->naddrs && n < MAX_DSTS; j++)
			if (h->addrs[j].ip.family == nic.ip.family)
				dsts[n++] = h->addrs[j].ip;
		for (j = 0; j < h->nroutes && n < MAX_DSTS; j++)
			if (h->routes[j].gw.family == nic.ip.family)
				dsts[n++] = h->routes[j].gw;
		if (n < MAX_DSTS && !rn_ip_parse(nic.ip.family == AF_INET ? "198.19.255.1" :
						  "fd00:ffff::1", &dsts[n]))
			n++;
		for (j = 0; j < n; j++)
			for (k = 0; k < 2; k++) {
				struct rn_nl_route a, b;
				int oif = k ? nic.ifindex : 0, asked = h->routes_asked, ra, rb;
				char d[64], x[64], y[64];

				ra = rn_host_route_get(h, &dsts[j], &nic.ip, oif, &a);
				if (h->routes_asked != asked)
					continue; /* the kernel's own answer */
				rb = rn_nl.route_get(&dsts[j], &nic.ip, oif, &b);
				if (route_eq(ra, &a, rb, &b))
					continue;
				differ++;
				printf("differ %s dst=%s oif=%d snapshot=%d/type%d/oif%d/table%u/gw%s "
				       "kernel=%d/type%d/oif%d/table%u/gw%s\n", argv[i],
				       rn_ip_str(&dsts[j], d, sizeof(d)), oif, ra, a.type, a.oif,
				       a.table, rn_ip_str(&a.gw, x, sizeof(x)), rb, b.type, b.oif,
				       b.table, rn_ip_str(&b.gw, y, sizeof(y)));
			}
	}
	printf("routes answered=%d asked=%d differ=%d\n", h->routes_answered, h->routes_asked,
	       differ);
	rn_host_free(h);
	return differ ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct rn_config cfg;
	int opt;

	rn_config_defaults(&cfg);
	rn_log_set_level(RN_LOG_NONE);
	while ((opt = getopt(argc, argv, "+c:g:v6")) != -1) {
		switch (opt) {
		case 'c':
			cfg.route_check = !strcmp(optarg, "off")    ? RN_ROUTE_CHECK_OFF
					  : !strcmp(optarg, "warn") ? RN_ROUTE_CHECK_WARN
								    : RN_ROUTE_CHECK_STRICT;
			break;
		case 'g': /* NCCL_ROCE_GATEWAYS */
			snprintf(cfg.gateways, sizeof(cfg.gateways), "%s", optarg);
			break;
		case 'v':
			rn_log_set_level(RN_LOG_INFO);
			break;
		case '6':
			cfg.addr_family = AF_INET6; /* NCCL_IB_ADDR_FAMILY=AF_INET6 */
			break;
		default:
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 2) {
		fprintf(stderr, "usage: rn-pathcheck [-c strict|warn|off] [-g GATEWAYS] [-v] [-6] "
				"nic DEV...|conn DEV IP MAC [MS [HOST [PEERDEV [MTU [CAUSE]]]]]|"
				"diag DEV IP MAC|bench N DEV...|routes DEV...\n");
		return 2;
	}
	if (!strcmp(argv[0], "nic"))
		return cmd_nic(argc - 1, argv + 1, &cfg, 0);
	if (!strcmp(argv[0], "bench"))
		return cmd_nic(argc - 1, argv + 1, &cfg, 1);
	if (!strcmp(argv[0], "conn"))
		return cmd_conn(argc - 1, argv + 1, &cfg, 0);
	if (!strcmp(argv[0], "routes"))
		return cmd_routes(argc - 1, argv + 1, &cfg);
	if (!strcmp(argv[0], "diag"))
		return cmd_conn(argc - 1, argv + 1, &cfg, 1);
	return 2;
}
