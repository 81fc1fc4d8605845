/* SPDX-License-Identifier: MIT */
/*
 * What the per-connection check (src/conncheck.c) shares with the diagnosis after a
 * completion error (src/diag.c). The API of both is in rn_path.h.
 */
#ifndef RN_CONNCHECK_H
#define RN_CONNCHECK_H

#include <stdint.h>

#include "rn_path.h"

/* The facts every connection-level template names (nic, dev, ip, peer_*, table, subnet). */
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

#endif /* RN_CONNCHECK_H */
