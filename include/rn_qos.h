/* SPDX-License-Identifier: MIT */
/*
 * The QoS check of a NIC's verdict (src/qos.c): does the class NCCL's QPs use land on
 * a lossless (PFC) priority while another one is? Adds qos-lossy to @nic; a netdev
 * without DCB is said at INFO. 0 or -ENOMEM.
 */
#ifndef RN_QOS_H
#define RN_QOS_H

#include "rn_param.h"
#include "rn_path.h"

int rn_qos_assess(struct rn_nic *nic, const struct rn_config *cfg);

#endif /* RN_QOS_H */
