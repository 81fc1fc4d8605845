/* SPDX-License-Identifier: MIT */
/*
 * GID choice (src/gid.c): which GID, and so which source IP, a NIC uses. The choice
 * fills @nic's choice part and returns what is wrong with it; it makes no finding
 * (assess.c does).
 */
#ifndef RN_GID_H
#define RN_GID_H

#include "rn_host.h"
#include "rn_param.h"
#include "rn_verdict.h"

/* What the choice found wrong: a cause (NONE: nothing) and the facts its templates name. */
struct rn_gid_result {
	enum rn_cause cause; /* RN_CAUSE_NONE, RN_CAUSE_NO_GID or RN_CAUSE_GID_FORCED_MISMATCH */
	struct rn_vars vars; /* owned: rn_gid_result_free() */
};

/*
 * Choose @nic's GID from its port's table (through rn_verbs with @ctx; NULL: from the
 * netdev's addresses, as the doctor's --netdev does). 0 with @res filled (free it), or
 * -errno when the facts could not be read (@res left empty).
 */
int rn_gid_choose(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		  const struct rn_config *cfg, struct rn_gid_result *res);
void rn_gid_result_free(struct rn_gid_result *res);

/*
 * Follow @nic's address in its port's GID table (a comm about to be made, GID_CHANGE,
 * PORT_ACTIVE): the kernel registers an address's GID again at another index when the
 * address is re-added or a link comes back, and the old index may then hold another
 * address. Sets *@old to the index used so far. 0: unchanged (one query); 1: moved,
 * @nic->gid_index updated; -ENOENT: the address is gone, @v holds gid-gone's facts;
 * other -errno: the table could not be read. The caller serialises access to @nic.
 */
int rn_gid_refresh(struct ibv_context *ctx, struct rn_nic *nic, int *old, struct rn_vars *v);

/*
 * The GID index NCCL's own IB transport would use on @port (its RMA and GIN backends do):
 * the lowest entry of the wanted family, range and version, whatever its netdev. -errno
 * when the table cannot be read, -ENOENT when none fits.
 */
int rn_gid_netib_index(struct ibv_context *ctx, int port, const struct rn_config *cfg);

#endif /* RN_GID_H */
