/* SPDX-License-Identifier: MIT */
/*
 * The netlink edge (src/nl.c, the only libnl user): links, addresses, rules,
 * routes of every table, neighbours, the kernel's own route answer (like
 * `ip route get DST from SRC [oif DEV]`) and a non-blocking neighbour probe.
 * Facts come back as plain structs so the path code never sees libnl, and unit
 * tests install a fake table (test/unit/fake_nl.c) fed from fixtures.
 *
 * Convention: every op returns 0 or -errno. Errors the kernel reports in
 * NLMSG_ERROR keep their errno (ENETUNREACH, ENOENT, ...); only transport
 * failures become -EIO. Dumps return a malloc'ed array (free() it) and its length.
 */
#ifndef RN_NL_H
#define RN_NL_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>

#include "rn_ip.h"

/*
 * The five sysctls that decide ARP and reverse-path behaviour. -1 = unreadable. Here
 * because the link dump carries a device's (IFLA_INET_CONF); rn_host.h reads and combines
 * them.
 */
struct rn_sysctls {
	int arp_ignore;
	int arp_announce;
	int arp_filter;
	int rp_filter;
	int accept_local;
	int proxy_arp;  /* answers ARP for addresses routed out of another link */
	int forwarding; /* the device's own: conf/all's is copied to every device */
};

struct rn_nl_link {
	int ifindex;
	char name[IF_NAMESIZE];
	uint8_t mac[6];
	int mtu;
	unsigned int flags; /* IFF_* */
	int oper_up;        /* IFF_UP and carrier (IFF_LOWER_UP), not dormant or testing */
	int master;         /* ifindex of the bond/bridge/VRF master, 0 = none */
	/* The device's IPv4 conf as the dump carries it (IFLA_INET_CONF, the same values as
	 * /proc/sys/net/ipv4/conf/<dev>/): init then reads no file a NIC. 0: not in the
	 * message (no IPv4 on the device, a fake), and the sysctls are read instead. */
	int has_inet_conf;
	struct rn_sysctls inet_conf;
};

struct rn_nl_addr {
	int ifindex;
	struct rn_ip ip;
	int prefixlen;
	int scope;          /* RT_SCOPE_* */
	unsigned int flags; /* IFA_F_* (IFA_F_SECONDARY for a secondary address) */
};

struct rn_nl_rule {
	int family;
	uint32_t priority;
	uint32_t table;
	int action;       /* FR_ACT_* */
	struct rn_ip src; /* family 0: any */
	int src_len;
	struct rn_ip dst;
	int dst_len;
	char iif[IF_NAMESIZE]; /* "" = any */
	char oif[IF_NAMESIZE];
	uint32_t fwmark;
	int invert;   /* 'not' */
	int suppress; /* suppress_prefixlength + 1 (wg-quick's rule); 0 = none */
	/* selectors the snapshot's lookup does not model (uidrange, ipproto, ports, l3mdev,
	 * tos/dscp, a fwmark mask, goto, suppress_ifgroup, tun_id): rn_host_route_get asks the
	 * kernel when such a rule is in its way */
	int opaque;
	/* those selectors as `ip rule` shows them ("uidrange 1000-1000 ipproto 6"), "" none */
	char more[96];
};

struct rn_nl_route {
	uint32_t table;
	int type;             /* RTN_* */
	int scope;            /* RT_SCOPE_* */
	int protocol;
	struct rn_ip dst;     /* family set even for default routes (dst_len 0) */
	int dst_len;
	struct rn_ip prefsrc; /* family 0: none */
	struct rn_ip gw;      /* family 0: on-link */
	int oif;              /* 0 = none (blackhole, unreachable); multipath: the first hop's */
	uint32_t metric;
	int nhops;            /* >1 for a multipath (ECMP) route */
	/* what the snapshot's lookup does not model (tos, nexthop objects, encap, dead or
	 * linkdown next hops): rn_host_route_get asks the kernel when it meets one */
	int opaque;
};

struct rn_nl_neigh {
	int ifindex;
	struct rn_ip ip;
	uint8_t mac[6];
	int has_mac;
	uint16_t state; /* NUD_* */
};

/* One ARP probe of rn_nl_ops.arp_probe: who on @ifindex's L2 segment answers for @target. */
struct rn_arp_query {
	int ifindex;       /* sent out of this link */
	uint8_t mac[6];    /* its MAC: the request's sender hardware address */
	struct in_addr target;
	uint8_t answer[6]; /* the first MAC that answered */
	int answered;
};

/*
 * A netdev's DCB state as iproute2's `dcb` reads it (RTM_GETDCB, DCB_CMD_IEEE_GET): IEEE
 * PFC and the APP table. A netdev without DCB support answers -EOPNOTSUPP.
 */
#define RN_DCB_APP_MAX 128
#define RN_DCB_SEL_DSCP 5 /* IEEE_8021QAZ_APP_SEL_DSCP */
struct rn_nl_dcb {
	int has_pfc;
	uint8_t pfc_cap; /* traffic classes that can be lossless */
	uint8_t pfc_en;  /* bit p: priority p is lossless */
	int napp;
	struct {
		uint8_t selector; /* RN_DCB_SEL_DSCP: protocol is a DSCP */
		uint8_t prio;
		uint16_t protocol;
	} app[RN_DCB_APP_MAX];
};

struct rn_nl_ops {
	int (*link_dump)(struct rn_nl_link **out, int *n);
	/* Dumps of @family, or of IPv4 and IPv6 at once for AF_UNSPEC (one round trip). */
	int (*addr_dump)(int family, struct rn_nl_addr **out, int *n);
	int (*rule_dump)(int family, struct rn_nl_rule **out, int *n);
	/* Routes of every table (main, local, per-NIC tables). */
	int (*route_dump)(int family, struct rn_nl_route **out, int *n);
	/*
	 * RTM_GETROUTE for @dst from @src (src family 0: none) out of @oif (0: none).
	 * @out->table is the table the kernel used (RTM_F_LOOKUP_TABLE).
	 */
	int (*route_get)(const struct rn_ip *dst, const struct rn_ip *src, int oif,
			 struct rn_nl_route *out);
	/* Every neighbour entry of @family (all links): the static ones are judged. */
	int (*neigh_dump)(int family, struct rn_nl_neigh **out, int *n);
	/* The neighbour entry for @ip on @ifindex; -ENOENT when there is none. */
	int (*neigh_get)(int ifindex, const struct rn_ip *ip, struct rn_nl_neigh *out);
	/*
	 * Ask the kernel to resolve @dst on @ifindex without waiting: one datagram from
	 * @src to the discard port, sent out of @ifindex, makes the kernel send ARP/ND
	 * exactly as the RDMA stack would. Unprivileged.
	 */
	int (*neigh_probe)(int ifindex, const struct rn_ip *src, const struct rn_ip *dst);
	int (*link_get)(int ifindex, struct rn_nl_link *out);
	/*
	 * ARP probes (RFC 5227: sender IP 0.0.0.0, so no rp_filter, arp_filter or
	 * arp_ignore=2 on the answering host judges the sender) for every query at once,
	 * collecting answers for up to @wait_ms (less when all are answered). Blocks:
	 * init time only. Needs CAP_NET_RAW: -EPERM without (src/arp.c).
	 */
	int (*arp_probe)(struct rn_arp_query *q, int n, int wait_ms);
	/* DCB of netdev @ifname (struct rn_nl_dcb). -EOPNOTSUPP: no DCB on it. */
	int (*dcb_get)(const char *ifname, struct rn_nl_dcb *out);
};

/* The table in use: the real one unless a test installed a fake. */
extern struct rn_nl_ops rn_nl;
extern const struct rn_nl_ops rn_nl_real_ops;
/* The real arp_probe (src/arp.c: a packet socket per link). */
int rn_arp_probe_real(struct rn_arp_query *q, int n, int wait_ms);

/*
 * Parse one RTM_GETDCB reply (a whole netlink message, header included) into @out: the
 * real dcb_get's parser, open to tests that feed it recorded or hand-made replies.
 * 0 or -EBADMSG.
 */
int rn_nl_dcb_parse(const void *msg, size_t len, struct rn_nl_dcb *out);

/* Copy the non-NULL pointers of @ops over the table in use; reset restores the real one. */
void rn_nl_set_ops(const struct rn_nl_ops *ops);
void rn_nl_reset_ops(void);
/* The table reset restores (NULL: the real one); see rn_verbs_set_base(). */
void rn_nl_set_base(const struct rn_nl_ops *ops);

/*
 * The real ops share one route socket per process (thread-safe). rn_nl_close() closes
 * it (the engine's last reference; the next request opens a new one);
 * rn_nl_sockets_opened() counts the sockets opened so far (tests, benchmarks).
 */
void rn_nl_close(void);
unsigned long rn_nl_sockets_opened(void);

#endif /* RN_NL_H */
