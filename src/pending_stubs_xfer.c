// SPDX-License-Identifier: MIT
/*
 * TEMPORARY: deleted when the route and plugin branches merge.
 * -ENOSYS placeholders for the route-awareness functions the transport calls, so
 * that the .so and the fuzz targets link on the xfer branch alone. With them a
 * connection goes ahead unchecked (with one WARN) and a completion error carries
 * "diagnosis unavailable".
 */
#include <errno.h>
#include <string.h>

#include "rn_path.h"

void rn_peer_facts_from_nic(const struct rn_nic *nic, struct rn_peer_facts *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->netdev, nic->netdev, sizeof(out->netdev));
	memcpy(out->mac, nic->mac, sizeof(out->mac));
	out->gid = nic->gid;
	out->ip = nic->ip;
	out->mtu = nic->mtu;
	out->active_mtu = nic->active_mtu;
}

int rn_conn_check_start(const struct rn_nic *nic, const struct rn_peer_facts *peer,
			int timeout_ms, struct rn_conn_check **out)
{
	*out = NULL;
	return -ENOSYS;
}

int rn_conn_check_poll(struct rn_conn_check *chk, struct rn_finding *out)
{
	return -ENOSYS;
}

void rn_conn_check_free(struct rn_conn_check *chk)
{
}

int rn_diagnose_peer(const struct rn_nic *nic, const struct rn_peer_facts *peer,
		     struct rn_finding *out)
{
	return -ENOSYS;
}

const char *rn_cause_id(enum rn_cause cause)
{
	return "?";
}
