/* SPDX-License-Identifier: MIT */
/*
 * A fake host for the netlink and sysctl edges: links, addresses (with the
 * connected and local routes the kernel would add), rules, routes, neighbours and
 * sysctls, built by small helpers. route_get runs a miniature RPDB over the
 * fixture (rules by priority, longest prefix per table, oif pinning), so tests
 * state the configuration, never the kernel's answer.
 */
#ifndef FAKE_NL_H
#define FAKE_NL_H

#include "rn_host.h"

#define FAKE_NL_MAX 64

struct fake_sysctl {
	char name[IF_NAMESIZE]; /* "all" or a netdev */
	struct rn_sysctls v;
};

struct fake_nl_host {
	struct rn_nl_link links[FAKE_NL_MAX];
	int nlinks;
	struct rn_nl_addr addrs[FAKE_NL_MAX];
	int naddrs;
	struct rn_nl_rule rules[FAKE_NL_MAX];
	int nrules;
	struct rn_nl_route routes[FAKE_NL_MAX];
	int nroutes;
	struct rn_nl_neigh neighs[FAKE_NL_MAX];
	int nneighs;
	/* Entries that appear when a probe is sent for them (ARP answered). */
	struct rn_nl_neigh on_probe[8];
	int non_probe;
	struct fake_sysctl sys[FAKE_NL_MAX];
	int nsys;
	int probes;
	int route_gets;
	int dumps; /* link, address, rule and route dumps: one round trip each */
	/* ARP probes: -EPERM (no CAP_NET_RAW) unless set; l2[a][b] = ifindex a hears b. */
	int arp_ret;
	unsigned char l2[FAKE_NL_MAX][FAKE_NL_MAX];
	int arp_probes;
	/* hosts beyond ours that answer ARP probes (fake_arp_peer) */
	struct {
		struct rn_ip ip;
		uint8_t mac[6];
	} arp_peers[8];
	int narp_peers;
	/* DCB per netdev (dcb_get); a netdev not listed has none (-EOPNOTSUPP) */
	struct {
		char name[IF_NAMESIZE];
		struct rn_nl_dcb dcb;
	} dcb[4];
	int ndcb;
};

/* A host with 'lo' (ifindex 1) and the default rules 0/32766/32767. */
void fake_nl_init(struct fake_nl_host *h);
/* Install @h as the netlink and sys edges; uninstall restores the real ones. */
void fake_nl_install(struct fake_nl_host *h);
void fake_nl_uninstall(void);

/* MAC 02:00:00:00:00:<mac_last>. */
void fake_link(struct fake_nl_host *h, int ifindex, const char *name, int mac_last, int up);
/* "198.18.0.1/24"; adds main's connected route and the local route like the kernel. */
void fake_addr(struct fake_nl_host *h, int ifindex, const char *cidr, int secondary);
void fake_rule(struct fake_nl_host *h, uint32_t prio, const char *from, uint32_t table);
/* Route @dst ("198.18.0.0/24", "default") in @table out of @ifindex, optional src/gw. */
void fake_route(struct fake_nl_host *h, uint32_t table, const char *dst, int ifindex,
		const char *src, const char *gw);
void fake_neigh(struct fake_nl_host *h, int ifindex, const char *ip, int mac_last, uint16_t state);
void fake_neigh_on_probe(struct fake_nl_host *h, int ifindex, const char *ip, int mac_last);
/* Another host's @ip answers ARP probes with MAC 02:00:00:00:00:<mac_last>. */
void fake_arp_peer(struct fake_nl_host *h, const char *ip, int mac_last);
/* Set conf/<name>/<key> (arp_ignore, arp_announce, arp_filter, rp_filter, accept_local). */
void fake_sysctl(struct fake_nl_host *h, const char *name, const char *key, int value);
/* The seed's fix for @n NICs with ifindex first..: per-NIC table 100+i, arp sysctls. */
void fake_policy_routing(struct fake_nl_host *h, int first, int n, const char *subnet);

#endif /* FAKE_NL_H */
