/* SPDX-License-Identifier: MIT */
/*
 * The route and ARP checks of one NIC (src/route.c): each problem becomes a finding
 * on the NIC.
 */
#ifndef RN_ROUTE_H
#define RN_ROUTE_H

#include "rn_host.h"
#include "rn_param.h"
#include "rn_verdict.h"

/*
 * The destination the NIC verdict asks the kernel about: the first address of @nic's
 * subnet that is not local (a would-be peer). 0, or -ENOENT (no room, e.g. a /32).
 */
int rn_route_probe_dst(const struct rn_host *host, const struct rn_nic *nic, struct rn_ip *dst);
/*
 * Judge @nic's routing and ARP (its GID chosen): findings added to @nic, and the lookups
 * judged kept in @nic->route. 0 or -errno.
 */
int rn_route_assess(struct rn_host *host, struct rn_nic *nic, const struct rn_config *cfg);
/*
 * "route_fix": the commands that give @nic's IP a table routing its subnet out of it
 * (the route, and the rule when none exists). @host may be NULL (connection time).
 */
void rn_route_fix_vars(const struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v);

/*
 * "gw", "gw_hint" and "gw_fix" (no-gateway's, and a routed peer's route_fix): a default
 * route via @gw (NULL: not known, then the hint says what to add) in @nic's table, with
 * the subnet route and the rule when @nic has no table of its own. @host may be NULL.
 */
void rn_route_gw_vars(const struct rn_host *host, const struct rn_nic *nic, const struct rn_ip *gw,
		      struct rn_vars *v);

/*
 * neigh-wrong-mac's words for a PERMANENT or NOARP entry for @ip on @dev (@state its
 * NUD_*), @who "peer" or "gateway": the kernel never checks it, and the fix deletes it
 * ('ip neigh del IP dev DEV'); no first part on a peer.
 */
void rn_neigh_static_vars(const char *dev, const char *ip, uint16_t state, const char *who,
			  struct rn_vars *v);
#endif /* RN_ROUTE_H */
