/* SPDX-License-Identifier: MIT */
/*
 * The host snapshot (src/host.c): links, addresses, rules, routes and ARP sysctls read
 * once, the L2 probe, and the IP helpers. The checks built on it include their own
 * headers (rn_policy.h, rn_gid.h, rn_route.h, rn_nic.h, rn_conncheck.h); the plugin
 * goes through rn_path.h.
 */
#ifndef RN_HOST_H
#define RN_HOST_H

#include <stdint.h>

#include "rn_compiler.h"
#include "rn_nl.h"
#include "rn_path.h"

#define RN_TABLE_MAIN 254
#define RN_TABLE_LOCAL 255

/* struct rn_sysctls: rn_nl.h (the link dump carries a device's) */

/*
 * The kernel's combination of conf/all and conf/<dev> (include/linux/inetdevice.h):
 * arp_ignore, arp_announce, rp_filter = max(all, dev); arp_filter, accept_local,
 * proxy_arp = all OR dev; forwarding = dev's own. An unreadable value (-1) counts as
 * the kernel default 0.
 */
void rn_sysctls_effective(const struct rn_sysctls *all, const struct rn_sysctls *dev,
			  struct rn_sysctls *eff);
/* Read conf/<name> ("all", "default" or a netdev) through rn_sys. 0 or -errno. */
int rn_sysctls_read(const char *name, struct rn_sysctls *out);
/*
 * arp_ignore values that keep a NIC answering for its own address only (1, 2).
 * 8 answers nothing at all (peers never resolve the NIC), 3..7 and above answer for
 * any local address like 0 (Documentation/networking/ip-sysctl.rst, arp_ignore()).
 */
int rn_arp_ignore_protects(int v);
/* The value stops the NIC from answering for other NICs' addresses (1, 2 and 8). */
int rn_arp_ignore_quiet(int v);
/*
 * "net.ipv4.conf.DEV.KEY" into @buf, or the slash form sysctl(8) needs when DEV holds a
 * dot (a VLAN such as ens1f0np0.100): "net/ipv4/conf/ens1f0np0.100/KEY".
 */
const char *rn_sysctl_key(char *buf, size_t len, const char *dev, const char *key);

struct rn_host_link {
	struct rn_nl_link link;
	int sysctl_read;       /* sysctls below are cached */
	struct rn_sysctls dev; /* conf/<dev> as read */
	struct rn_sysctls eff; /* combined with conf/all */
};

#define RN_HOST_ROCE_MAX 64

struct rn_host {
	struct rn_host_link *links;
	int nlinks;
	struct rn_nl_addr *addrs; /* IPv4 and IPv6 */
	int naddrs;
	struct rn_nl_rule *rules; /* sorted by priority */
	int nrules;
	struct rn_nl_route *routes;
	int nroutes;
	struct rn_sysctls all;
	int all_read;
	double snapshot_ms; /* how long the netlink dumps took */
	/* rn_host_route_get: answered from the snapshot, or asked of the kernel */
	int routes_answered, routes_asked;
	/* Which links share an L2 segment (rn_host_same_l2), probed on first use. */
	int l2_state;    /* 0 not probed, 1 probed, -errno could not */
	signed char *l2; /* nlinks x nlinks, by position in @links */
	double l2_ms;    /* how long the ARP probes took */
	/* the links the caller assesses as RoCE NICs (rn_host_mark_roce): the MTU check's set */
	int roce_links[RN_HOST_ROCE_MAX];
	int nroce_links;
	/* IPv4 neighbour entries (rn_host_neighs), dumped on first use */
	int neigh_state; /* 0 not dumped, 1 dumped, -errno could not */
	struct rn_nl_neigh *neighs;
	int nneighs;
};

struct rn_host_link *rn_host_link_by_index(struct rn_host *host, int ifindex);
struct rn_host_link *rn_host_link_by_name(struct rn_host *host, const char *name);
/* Effective sysctls of @l (read and cached on first use). */
const struct rn_sysctls *rn_host_sysctls(struct rn_host *host, struct rn_host_link *l);
/* The address record of @ip on @ifindex (0: any link), NULL when not local. */
const struct rn_nl_addr *rn_host_addr_find(const struct rn_host *host, int ifindex,
					   const struct rn_ip *ip);
/*
 * Whether links @a and @b (ifindex) hear each other's ARP broadcasts: 1 yes, 0 no,
 * -EPERM when it cannot be told (no CAP_NET_RAW), other -errno. The first call
 * probes every candidate link at once (up, not enslaved, with an IPv4 address:
 * RN_L2_WAIT_MS, rn_nl.arp_probe) and caches the answer in the snapshot.
 */
#define RN_L2_WAIT_MS 30
int rn_host_same_l2(struct rn_host *host, int a, int b);

/*
 * The IPv4 neighbour table (every link), dumped once per snapshot on first use: the
 * number of entries with *@out set, or -errno.
 */
int rn_host_neighs(struct rn_host *host, const struct rn_nl_neigh **out);

/*
 * rn_nl.route_get's answer (RTM_GETROUTE for @dst from @src, out of @oif when not 0)
 * computed from the snapshot's rules and routes, as the kernel's IPv4 policy routing
 * would; what the snapshot cannot tell for sure (IPv6, multipath, a rule or route with
 * selectors it does not model, the kernel's on-link guess, ...) is asked of the kernel.
 * 0 or -errno, the kernel's errno for the same question.
 */
int rn_host_route_get(struct rn_host *host, const struct rn_ip *dst, const struct rn_ip *src,
		      int oif, struct rn_nl_route *out);

/* An address RoCE v2 can use: not link-scoped (fe80::), not tentative (DAD). */
int rn_addr_usable(const struct rn_nl_addr *a);

#endif /* RN_HOST_H */
