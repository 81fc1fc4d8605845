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

#endif /* RN_FLAP_H */
