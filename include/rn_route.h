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
/* Judge @nic's routing and ARP (its GID chosen): findings added to @nic. 0 or -errno. */
int rn_route_assess(struct rn_host *host, struct rn_nic *nic, const struct rn_config *cfg);
/*
 * "route_fix": the commands that give @nic's IP a table routing its subnet out of it
 * (the route, and the rule when none exists). @host may be NULL (connection time).
 */
void rn_route_fix_vars(const struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v);

#endif /* RN_ROUTE_H */
