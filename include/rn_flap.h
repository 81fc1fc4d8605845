/* SPDX-License-Identifier: MIT */
/*
 * The link history of a NIC's verdict (src/flap.c): lost carriers of its netdev
 * (carrier_down_count) and the port's link_downed, against the cluster health-check rule
 * of more than RN_FLAP_MAX_PER_DAY in 24 h. Adds link-flapping to @nic. The runtime side
 * (PORT_ERR times per port) is src/events.c's.
 */
#ifndef RN_FLAP_H
#define RN_FLAP_H

#include "rn_path.h"

#define RN_FLAP_MAX_PER_DAY 5

void rn_flap_assess(struct rn_nic *nic);

/* The link's history as sysfs counts it, each -1 when it cannot be read. */
struct rn_flap_facts {
	long carrier_changes; /* the netdev's carrier changes, up and down (carrier_changes) */
	long carrier_down;    /* ... of them, lost carriers (carrier_down_count) */
	long link_downed;     /* the RDMA port's link_downed (counters/, else hw_counters/) */
};
void rn_flap_read(const struct rn_nic *nic, struct rn_flap_facts *f);

#endif /* RN_FLAP_H */
