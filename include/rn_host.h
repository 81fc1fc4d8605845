/* SPDX-License-Identifier: MIT */
/*
 * Host facts and the helpers the path files share (src/host.c, gid.c, route.c,
 * neigh.c, diag.c, verdict.c), in one place like rxe_loc.h. The doctor may read
 * the snapshot directly; the plugin goes through rn_path.h.
 */
#ifndef RN_HOST_H
#define RN_HOST_H

#include <stdint.h>

#include "rn_compiler.h"
#include "rn_nl.h"
#include "rn_path.h"
#include "rn_verdict.h"

#define RN_TABLE_MAIN 254
#define RN_TABLE_LOCAL 255

/* The five sysctls that decide ARP and reverse-path behaviour. -1 = unreadable. */
struct rn_sysctls {
	int arp_ignore;
	int arp_announce;
	int arp_filter;
	int rp_filter;
	int accept_local;
};

/*
 * The kernel's combination of conf/all and conf/<dev> (include/linux/inetdevice.h):
 * arp_ignore, arp_announce, rp_filter = max(all, dev); arp_filter, accept_local =
 * all OR dev. An unreadable value (-1) counts as the kernel default 0.
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
	int sysctl_read;           /* sysctls below are cached */
	struct rn_sysctls dev;     /* conf/<dev> as read */
	struct rn_sysctls eff;     /* combined with conf/all */
};

struct rn_host {
	struct rn_host_link *links;
	int nlinks;
	struct rn_nl_addr *addrs;  /* IPv4 and IPv6 */
	int naddrs;
	struct rn_nl_rule *rules;  /* sorted by priority */
	int nrules;
	struct rn_nl_route *routes;
	int nroutes;
	struct rn_sysctls all;
	int all_read;
	double snapshot_ms;        /* how long the netlink dumps took */
	/* Which links share an L2 segment (rn_host_same_l2), probed on first use. */
	int l2_state;              /* 0 not probed, 1 probed, -errno could not */
	signed char *l2;           /* nlinks x nlinks, by position in @links */
	double l2_ms;              /* how long the ARP probes took */
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
 * Fill the identity part of @nic (netdev, ifindex, MAC, MTU, link) from the
 * snapshot: what a netdev-only check (doctor --netdev, netns tests) needs. @nic is
 * overwritten (release one holding findings with rn_nic_cleanup() first).
 * -ENODEV when @netdev does not exist.
 */
int rn_nic_from_netdev(struct rn_host *host, const char *netdev, struct rn_nic *nic);

/* IP helpers */
int rn_ip_parse(const char *s, struct rn_ip *ip);
int rn_ip_equal(const struct rn_ip *a, const struct rn_ip *b);
/* 1 when @ip is inside @net/@len (same family). */
int rn_ip_in_prefix(const struct rn_ip *ip, const struct rn_ip *net, int len);
/* @ip with the host bits cleared. */
void rn_ip_mask(const struct rn_ip *ip, int len, struct rn_ip *out);
/* "198.18.0.0/24" style CIDR parse (NCCL_IB_ADDR_RANGE). */
int rn_cidr_parse(const char *s, struct rn_ip *net, int *len);
const char *rn_mac_str(const uint8_t mac[6], char *buf, size_t len);
/* The RoCE GID for an address (IPv4-mapped for AF_INET). */
void rn_gid_from_ip(const struct rn_ip *ip, union ibv_gid *gid);

/* The templates behind rn_finding_render (never NULL). */
const char *rn_cause_msg_template(enum rn_cause cause);
const char *rn_cause_fix_template(enum rn_cause cause);
enum rn_tpl {
	RN_TPL_MSG,
	RN_TPL_FIX,
	RN_TPL_FIX_ON,  /* the host the fix runs on ("": the finding's own) */
	RN_TPL_PRE,     /* commands to run first, elsewhere */
	RN_TPL_PRE_ON,
	RN_TPL_ADVICE,
	RN_TPL__MAX
};
/* Any template of @cause, "" when it has none. */
const char *rn_cause_template(enum rn_cause cause, enum rn_tpl which);
/* RN_CAUSE_NONE when @id names no cause. */
enum rn_cause rn_cause_from_id(const char *id);
/* "ok", "warn", "refused". */
const char *rn_verdict_str(enum rn_verdict_kind v);

/* GID choice (gid.c): see rn_nic_assess(). */
int rn_gid_choose(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		  const struct rn_config *cfg);
/*
 * The IP that policy routing makes this netdev's source: an address of @ifindex
 * with a 'from' rule whose table routes the address's subnet out of @ifindex (with
 * src = the address where the route names one). Returns the rule's table (>0) and
 * sets @ip, or 0 when none.
 */
int rn_policy_source(const struct rn_host *host, int ifindex, int family, struct rn_ip *ip,
		     uint32_t *prio);
/* The first rule the kernel would try for a lookup from @ip (no iif/oif/mark), NULL if none. */
const struct rn_nl_rule *rn_rule_for_src(const struct rn_host *host, const struct rn_ip *ip);

/* Route checks and the NIC verdict (route.c). */
/*
 * The destination the NIC verdict asks the kernel about: the first address of @nic's
 * subnet that is not local (a would-be peer). 0, or -ENOENT (no room, e.g. a /32).
 */
int rn_route_probe_dst(const struct rn_host *host, const struct rn_nic *nic, struct rn_ip *dst);
int rn_route_assess(struct rn_host *host, struct rn_nic *nic, const struct rn_config *cfg);
/* Add a finding to @nic (the list grows). 0, or -EINVAL/-ENOMEM from the render. */
int rn_nic_add_finding(struct rn_nic *nic, enum rn_cause cause, const struct rn_vars *v);
/*
 * "route_fix": the commands that give @nic's IP a table routing its subnet out of it
 * (the route, and the rule when none exists). @host may be NULL (connection time).
 */
void rn_route_fix_vars(const struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v);
/*
 * Table and priority to propose for @ifindex's policy routing: table 100 + ifindex or the
 * next free number, priority the table's when free and ahead of every shadowing rule.
 * The definition (route.c) is shared with roce-policy-routing (scripts/).
 */
void rn_propose_table(const struct rn_host *host, int ifindex, uint32_t *table, uint32_t *prio);
/* 1 when @r matches unmarked local traffic from any source and ends the lookup. */
int rn_rule_shadows(const struct rn_nl_rule *r);
/* The priority of the first shadowing rule (32766, main's, when there is none). */
uint32_t rn_rule_first_shadow(const struct rn_host *host);
/*
 * The priority @ifindex's rule into @table gets (also where a shadowed rule moves to):
 * the table's number when free and ahead of the first shadowing rule, else the highest
 * free priority ahead of it; 0 when none is free.
 */
uint32_t rn_rule_prio_for(const struct rn_host *host, int ifindex, uint32_t table);
/* ifindex of main's best default route of @family (the management NIC), 0 when none. */
int rn_host_mgmt_ifindex(const struct rn_host *host, int family);

/* Connection checks shared by neigh.c and diag.c. */
void rn_conn_vars(const struct rn_nic *nic, const struct rn_peer_facts *peer, struct rn_vars *v);
/* NUD states whose MAC the kernel would hand to a QP (REACHABLE, STALE, ...). */
int rn_neigh_valid(uint16_t state);
/*
 * Route from our IP to the peer: 0 ok (@nexthop is the peer or the gateway),
 * 1 refused (@f filled), 2 the peer is a local address.
 */
int rn_conn_route(const struct rn_nic *nic, const struct rn_peer_facts *peer, struct rn_vars *v,
		  struct rn_ip *nexthop, int *nh_is_peer, struct rn_finding *f);
/* 1 when the two ends' MTUs disagree (vars "what", "mtu_fix", "fix_host" set). */
int rn_mtu_vars(const struct rn_nic *nic, const struct rn_peer_facts *peer, struct rn_vars *v);

/* Bytes of an ibv_mtu (0 for an unknown value) and the RoCE MTU of a netdev MTU. */
int rn_ibv_mtu_bytes(enum ibv_mtu m);
int rn_roce_mtu_of(int netdev_mtu);

#endif /* RN_HOST_H */
