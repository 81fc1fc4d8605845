/* SPDX-License-Identifier: MIT */
/*
 * The comm and QP factory (src/comm.c): what a comm is made of (a CQ, a control-block
 * registration and, for a receiver, a flush QP per member NIC; its data QPs; the spare
 * NIC pairs failover keeps), the QP state steps the handshake takes (src/conn.c), and the
 * retry and stall bounds. The handshake decides when; this file says what.
 */
#ifndef RN_COMM_H
#define RN_COMM_H

#include <stdint.h>

#include "rn_conn.h"
#include "rn_wire.h"

/* The attributes of the step to INIT (with @access), RTR and RTS; each returns its mask. */
int rn_qp_attr_init(const struct rn_dev *dev, unsigned int access, struct ibv_qp_attr *a);
int rn_qp_attr_rtr(const struct rn_dev *dev, int sgid_index, uint32_t remote_qpn,
		   const union ibv_gid *dgid, enum ibv_mtu mtu, int tc, int sl, int rd_atom,
		   struct ibv_qp_attr *a);
int rn_qp_attr_rts(const struct rn_comm *c, const struct rn_dev *dev, struct ibv_qp_attr *a);
/*
 * READs and atomics in flight per QP: 1 for the net protocol, what the device allows up
 * to 16 for an RMA comm (@dest: as the responder).
 */
int rn_qp_rd_atom(const struct rn_comm *c, const struct rn_dev *dev, int dest);

/*
 * A comm on NCCL device @devidx (physical, or a vNIC of several members) with @nqps
 * QPs, in RESET; @rmem is the peer's member count (QP q: member q % nmem here, q % rmem
 * there); @flags what it is for (RN_CONN_*: an RMA comm's send queue is deeper). NULL with
 * errno set (said).
 */
struct rn_comm *rn_comm_create(struct rn_engine *eng, int devidx, int role, int nqps, int rmem,
			       unsigned int flags);
/* All of @c: its spares, QPs, CQs, registrations, side channel. NULL is nothing. */
void rn_comm_free(struct rn_comm *c);
/* Each member's GID index now: -EADDRNOTAVAIL (said, gid-gone) when one's address is gone. */
int rn_comm_members_follow(struct rn_engine *eng, int devidx);

/* How many spare pairs a comm of @nmem members against @rmem keeps (0: none). */
int rn_comm_spares_wanted(const struct rn_engine *eng, int nmem, int rmem, unsigned int flags);
/* Up to @want spare pairs on this host's other NICs (c->fo, or NULL). 0 or -ENOMEM. */
int rn_comm_spares_create(struct rn_comm *c, int want);
/* The peer's end of each spare its HELLO @h offers (the ones past its count dropped). */
void rn_comm_spares_take_peer(struct rn_comm *c, const struct rn_hello *h);
/* READY's mask: bit j-1 when our check passed spare j. */
uint32_t rn_comm_spares_ok(const struct rn_comm *c);
/* The connector's verdicts on the spares (READY @p, @len bytes): 0 or -EBADMSG. */
int rn_comm_ready_take(struct rn_comm *c, const uint8_t *p, uint32_t len);

#endif /* RN_COMM_H */
