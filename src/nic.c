// SPDX-License-Identifier: MIT
/*
 * The NIC object: its identity from the host snapshot, its growable list of findings
 * (added, cleared, copied), and the MTU arithmetic the checks share. No check lives
 * here: the GID choice (gid.c), the route checks (route.c) and the verdict that joins
 * them (assess.c) all build on this file, never the other way round.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_host.h"
#include "rn_nic.h"

int rn_ibv_mtu_bytes(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256:
		return 256;
	case IBV_MTU_512:
		return 512;
	case IBV_MTU_1024:
		return 1024;
	case IBV_MTU_2048:
		return 2048;
	case IBV_MTU_4096:
		return 4096;
	}
	return 0;
}

/* iboe_get_mtu(): the netdev MTU less 96 bytes of RoCE headers, rounded down. */
int rn_roce_mtu_of(int netdev_mtu)
{
	int m = netdev_mtu - 96, b;

	for (b = 4096; b >= 256; b /= 2)
		if (m >= b)
			return b;
	return 0;
}

int rn_nic_add_finding(struct rn_nic *nic, enum rn_cause cause, const struct rn_vars *v)
{
	int ret;

	if (nic->nfindings == nic->findings_cap) {
		int cap = nic->findings_cap ? 2 * nic->findings_cap : 8;
		struct rn_finding *f = realloc(nic->findings, (size_t)cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		memset(f + nic->findings_cap, 0, (size_t)(cap - nic->findings_cap) * sizeof(*f));
		nic->findings = f;
		nic->findings_cap = cap;
	}
	ret = rn_finding_render(&nic->findings[nic->nfindings], cause, v);
	/* A finding with a template bug still names its cause; only ENOMEM loses it. */
	if (ret != -ENOMEM)
		nic->nfindings++;
	return ret;
}

void rn_nic_findings_clear(struct rn_nic *nic)
{
	int i;

	for (i = 0; i < nic->nfindings; i++)
		rn_finding_clear(&nic->findings[i]);
	nic->nfindings = 0;
}

void rn_nic_cleanup(struct rn_nic *nic)
{
	if (!nic)
		return;
	rn_nic_findings_clear(nic);
	free(nic->findings);
	nic->findings = NULL;
	nic->findings_cap = 0;
}

int rn_nic_copy(struct rn_nic *dst, const struct rn_nic *src)
{
	int i, n = src->nfindings;

	if (dst == src)
		return 0;
	rn_nic_cleanup(dst);
	*dst = *src;
	dst->findings = NULL;
	dst->findings_cap = 0;
	dst->nfindings = 0;
	if (!n)
		return 0;
	dst->findings = calloc((size_t)n, sizeof(*dst->findings));
	if (!dst->findings)
		return -ENOMEM;
	dst->findings_cap = n;
	for (i = 0; i < n; i++, dst->nfindings++)
		if (rn_finding_copy(&dst->findings[i], &src->findings[i]))
			return -ENOMEM;
	return 0;
}

int rn_nic_from_netdev(struct rn_host *host, const char *netdev, struct rn_nic *nic)
{
	struct rn_host_link *l = rn_host_link_by_name(host, netdev);

	if (!l)
		return -ENODEV;
	memset(nic, 0, sizeof(*nic)); /* an output: release a filled one first */
	snprintf(nic->netdev, sizeof(nic->netdev), "%s", l->link.name);
	nic->ifindex = l->link.ifindex;
	memcpy(nic->mac, l->link.mac, 6);
	nic->mtu = l->link.mtu;
	nic->link_up = l->link.oper_up;
	nic->gid_index = -1;
	nic->table = RN_TABLE_MAIN;
	return 0;
}

int rn_nic_own_device(const struct rn_nic *const *nics, int n, int i)
{
	int k;

	if (!nics[i]->port_netdev[0] || !nics[i]->ifindex)
		return -1;
	for (k = 0; k < n; k++)
		if (k != i && !nics[k]->port_netdev[0] && nics[k]->ifindex == nics[i]->ifindex &&
		    !strcmp(nics[k]->netdev, nics[i]->netdev) && nics[k]->gid_index >= 0)
			return k;
	return -1;
}
