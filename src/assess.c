// SPDX-License-Identifier: MIT
/*
 * The NIC verdict: choose the GID (gid.c), turn what the choice found into a finding,
 * run the route checks (route.c) unless there is nothing to route, then judge the
 * findings under NCCL_ROCE_ROUTE_CHECK; and log the result as NCCL would show it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rn_flap.h"
#include "rn_gid.h"
#include "rn_host.h"
#include "rn_log.h"
#include "rn_nic.h"
#include "rn_qos.h"
#include "rn_route.h"
#include "rn_sys.h"

/*
 * Is link @l the netdev of @ctx's port, or only a netdev of the same name and ifindex in
 * this namespace? A pod's own RDMA device (`rdma link add` in the pod, shared netns mode)
 * is seen from every other pod, and its port's net1 is named and numbered as theirs. The
 * port's default GID (index 0) is fe80::/64 with the EUI-64 of its netdev's MAC (ib_core
 * makes it so for every RoCE port): another MAC there is another netdev. A GID 0 of
 * another form says nothing, and the link is taken as the port's.
 */
static int port_netdev_is(const struct rn_nic *nic, const struct rn_host_link *l)
{
	const uint8_t *m = l->link.mac;
	uint8_t g[16];
	char buf[64];

	/* sysfs, not a verbs query: the GID choice reads the table once, as a whole */
	if (!nic->ibdev[0] ||
	    rn_sys_readf(buf, sizeof(buf), "/sys/class/infiniband/%s/ports/%d/gids/0", nic->ibdev,
			 nic->port) ||
	    inet_pton(AF_INET6, buf, g) != 1)
		return 1;
	if (g[0] != 0xfe || g[1] != 0x80 || g[11] != 0xff || g[12] != 0xfe)
		return 1;
	return g[8] == (m[0] ^ 2) && g[9] == m[1] && g[10] == m[2] && g[13] == m[3] &&
	       g[14] == m[4] && g[15] == m[5];
}

static enum rn_verdict_kind judge(const struct rn_nic *nic, const struct rn_config *cfg)
{
	enum rn_verdict_kind k = RN_VERDICT_OK;
	int i;

	for (i = 0; i < nic->nfindings; i++) {
		if (nic->findings[i].cause == RN_CAUSE_NO_GID)
			return RN_VERDICT_REFUSED; /* nothing to run RoCE on, whatever the mode */
		if (nic->findings[i].sev == RN_SEV_FATAL)
			k = cfg->route_check == RN_ROUTE_CHECK_STRICT ? RN_VERDICT_REFUSED :
									RN_MAX(k, RN_VERDICT_WARN);
		else if (nic->findings[i].sev == RN_SEV_WARN)
			k = RN_MAX(k, RN_VERDICT_WARN);
	}
	return k;
}

int rn_nic_assess(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		  const struct rn_config *cfg)
{
	struct rn_gid_result res;
	struct rn_host_link *l;
	int ret, named = 0;

	if (!host || !nic || !cfg)
		return -EINVAL;
	nic->gid_index = -1;
	nic->gid_why = RN_GID_WHY_NONE;
	memset(&nic->gid, 0, sizeof(nic->gid));
	memset(&nic->ip, 0, sizeof(nic->ip));
	nic->prefixlen = 0;
	nic->table = RN_TABLE_MAIN;
	memset(&nic->gw, 0, sizeof(nic->gw));
	memset(&nic->route, 0, sizeof(nic->route));
	rn_nic_findings_clear(nic);
	nic->verdict = RN_VERDICT_OK;
	l = rn_host_link_by_index(host, nic->ifindex);
	/*
	 * dev.c read the ifindex in /sys, which may be another namespace's (nsenter --net
	 * keeps the caller's /sys): the ifindex is this namespace's only if the name agrees.
	 */
	if (l && nic->netdev[0] && strcmp(l->link.name, nic->netdev))
		l = NULL;
	if (!l) {
		named = 1;
		l = nic->netdev[0] ? rn_host_link_by_name(host, nic->netdev) : NULL;
	}
	/* a namesake in this namespace is not the port's netdev (another pod's own device) */
	if (l && ctx && !port_netdev_is(nic, l)) {
		named = 1;
		l = NULL;
	}
	if (named) {
		/*
		 * The port's netdev in another namespace (a shared RDMA device seen from a
		 * pod): the GID choice finds the netdev of ours that the port carries, if any.
		 */
		if (!l && !ctx)
			return -ENODEV;
		nic->ifindex = l ? l->link.ifindex : 0;
		if (l) { /* its facts from netlink, this namespace's */
			memcpy(nic->mac, l->link.mac, 6);
			nic->mtu = l->link.mtu;
		}
	}
	/*
	 * The link's state from the snapshot the checks judge (its carrier, rn_nl.h), not the
	 * operstate dev.c read in /sys at discovery: that one lags the carrier after a link
	 * comes up, and a NIC would be refused as no-carrier with its carrier back.
	 */
	if (l)
		nic->link_up = l->link.oper_up;
	ret = rn_gid_choose(host, ctx, nic, cfg, &res);
	if (ret < 0)
		return ret;
	if (res.cause != RN_CAUSE_NONE)
		rn_nic_add_finding(nic, res.cause, &res.vars);
	/* no GID: no source address to route from */
	if (cfg->route_check != RN_ROUTE_CHECK_OFF && res.cause != RN_CAUSE_NO_GID)
		rn_route_assess(host, nic, cfg);
	/* what the route check cannot see: the link's history, the class the QPs ride */
	rn_flap_assess(nic);
	if (ctx && res.cause != RN_CAUSE_NO_GID)
		rn_qos_assess(nic, cfg);
	rn_gid_result_free(&res);
	nic->verdict = judge(nic, cfg);
	return 0;
}

void rn_nic_log(const struct rn_nic *nic)
{
	char ip[INET6_ADDRSTRLEN], name[96], label[32];
	struct rn_vars v = RN_VARS_INIT;
	int i;

	snprintf(name, sizeof(name), "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev, nic->port);
	rn_vars_set(&v, "causes", "%s", "");
	for (i = 0; i < nic->nfindings; i++)
		rn_vars_append(&v, "causes", ",", "%s",
			       rn_cause_label(nic->findings[i].cause, label, sizeof(label)));
	rn_info(RN_SUB_INIT | RN_SUB_NET,
		RN_PFX "NIC %s netdev %s GID %d IP %s/%d table %d verdict %s%s%s", name,
		nic->netdev, nic->gid_index, rn_ip_str(&nic->ip, ip, sizeof(ip)), nic->prefixlen,
		nic->table, rn_verdict_str(nic->verdict), nic->nfindings ? " causes " : "",
		rn_vars_get(&v, "causes") ? rn_vars_get(&v, "causes") : "");
	rn_vars_free(&v);
	snprintf(name, sizeof(name), RN_PFX "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev,
		 nic->port);
	for (i = 0; i < nic->nfindings; i++)
		rn_finding_log(RN_LOG_WARN, RN_SUB_INIT | RN_SUB_NET, name, NULL,
			       &nic->findings[i]);
}
