/* SPDX-License-Identifier: MIT */
/*
 * The verdict catalogue (src/verdict.c): every cause the plugin and the doctor can
 * name, each with an id, a severity, a one-line message and the commands that fix
 * it. Tests assert on ids; the wording lives in one place.
 */
#ifndef RN_VERDICT_H
#define RN_VERDICT_H

#include <stddef.h>
#include <stdint.h>

enum rn_cause {
	RN_CAUSE_NONE = 0,
	RN_CAUSE_ARP_FLUX,            /* shared subnet, effective arp_ignore 0 or arp_announce < 2 */
	RN_CAUSE_NO_RULE,             /* no 'from <ip>' rule while NICs share a subnet */
	RN_CAUSE_RULE_WRONG_NIC,      /* the rule's table egresses another NIC */
	RN_CAUSE_ROUTE_WRONG_NIC,     /* route lookup from our IP egresses another NIC */
	RN_CAUSE_RP_FILTER,           /* strict rp_filter would drop replies */
	RN_CAUSE_NEIGH_WRONG_MAC,     /* neighbour holds another MAC than the peer's */
	RN_CAUSE_NEIGH_UNRESOLVED,    /* neighbour did not resolve in time */
	RN_CAUSE_MTU_MISMATCH,        /* netdev vs port, or between peers */
	RN_CAUSE_LINK_DOWN,           /* netdev or port not up */
	RN_CAUSE_NO_GID,              /* no GID of the wanted family/range/version */
	RN_CAUSE_GID_FORCED_MISMATCH, /* NCCL_IB_GID_INDEX disagrees with the routing */
	RN_CAUSE_PEER_REFUSED,        /* the peer's own check refused the path */
	RN_CAUSE_NO_ROUTE,            /* no route to the peer from our source IP */
	RN_CAUSE_FIREWALL,            /* RoCE v2 UDP 4791 dropped (doctor, rxe) */
	RN_CAUSE_SHARED_L2,           /* other subnets' NICs on our L2 segment answer ARP for us */
	RN_CAUSE_L2_UNCHECKED,        /* that could not be probed (no CAP_NET_RAW), sysctls unsafe */
	RN_CAUSE_ARP_SILENT,          /* effective arp_ignore=8: the NIC answers no ARP */
	RN_CAUSE_RULE_SHADOWED,       /* our rule exists but a rule ahead of it decides */
	RN_CAUSE_TABLE_NO_ROUTE,      /* our rule's table lacks our subnet (link bounced) */
	RN_CAUSE_NO_GATEWAY,          /* L3 NIC: off-subnet peers assumed on-link (no default) */
	RN_CAUSE__MAX
};

enum rn_severity {
	RN_SEV_INFO = 0,
	RN_SEV_WARN = 1,
	RN_SEV_FATAL = 2, /* refuses the NIC or the connection under strict */
};

/*
 * One problem found. The message and fix are rendered when the finding is made,
 * from the catalogue's templates and the facts at hand (NIC, IPs, table, MACs).
 */
struct rn_finding {
	enum rn_cause cause;
	enum rn_severity sev;
	char msg[256];
	char fix[512];
};

/* The catalogue's stable id for @cause ("arp-flux", "no-rule", ...); never NULL. */
const char *rn_cause_id(enum rn_cause cause);
enum rn_severity rn_cause_severity(enum rn_cause cause);

#endif /* RN_VERDICT_H */
