/* SPDX-License-Identifier: MIT */
/*
 * The NIC object's internals (src/nic.c): its findings list and the MTU arithmetic.
 * The public part (struct rn_nic, rn_nic_cleanup/copy/assess/log) is in rn_path.h.
 */
#ifndef RN_NIC_H
#define RN_NIC_H

#include "rn_host.h"
#include "rn_verdict.h"

/* Add a finding to @nic (the list grows). 0, or -EINVAL/-ENOMEM from the render. */
int rn_nic_add_finding(struct rn_nic *nic, enum rn_cause cause, const struct rn_vars *v);
/* Release @nic's findings, keeping the list's room (a NIC assessed again). */
void rn_nic_findings_clear(struct rn_nic *nic);
/*
 * Fill the identity part of @nic (netdev, ifindex, MAC, MTU, link) from the
 * snapshot: what a netdev-only check (doctor --netdev, netns tests) needs. @nic is
 * overwritten (release one holding findings with rn_nic_cleanup() first).
 * -ENODEV when @netdev does not exist.
 */
int rn_nic_from_netdev(struct rn_host *host, const char *netdev, struct rn_nic *nic);

/* Bytes of an ibv_mtu (0 for an unknown value) and the RoCE MTU of a netdev MTU. */
int rn_ibv_mtu_bytes(enum ibv_mtu m);
int rn_roce_mtu_of(int netdev_mtu);

#endif /* RN_NIC_H */
