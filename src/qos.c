// SPDX-License-Identifier: MIT
/*
 * The class NCCL's QPs ride, followed to the NIC's priority: NCCL_IB_TC (data) and
 * NCCL_IB_FIFO_TC (the receiver's CTS writes), or the mlx5 per-device override
 * (tc/PORT/traffic_class) that replaces both → DSCP (the class's upper 6 bits) → the
 * netdev's DCB (RTM_GETDCB as `dcb` reads it): with DSCP entries in the APP table the NIC
 * trusts DSCP and maps it (an unmapped DSCP gets the default map, DSCP / 8), without it
 * trusts PCP and untagged RoCE rides priority 0 → is that priority lossless (IEEE PFC)?
 * A lossy class while another priority is lossless is the misconfiguration that drops
 * RoCE under load (NCCL#2383): a warning with the NCCL_IB_TC (or override) value that
 * lands on the lossless priority and the dcb command that maps ours there instead.
 * A netdev without DCB (rxe, virtio, most VMs) is said at INFO and is no finding.
 * NOTE: mlx5 also has an explicit trust setting (mlnx_qos, DCB_ATTR_DCB_APP_TRUST_TABLE on
 * 6.3+); we infer trust from the APP table as mlx5 itself does when entries are added.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_host.h"
#include "rn_log.h"
#include "rn_nic.h"
#include "rn_qos.h"
#include "rn_sys.h"

/* The mlx5 override, -1 when none ("Global tclass=106", or an empty file). */
static int tc_override(const struct rn_nic *nic)
{
	char buf[256], *p;

	if (!nic->ibdev[0] || rn_sys_readf(buf, sizeof(buf),
					   "/sys/class/infiniband/%s/tc/%d/"
					   "traffic_class",
					   nic->ibdev, nic->port))
		return -1;
	p = strstr(buf, "tclass=");
	if (!p)
		return -1;
	return atoi(p + strlen("tclass="));
}

static int trusts_dscp(const struct rn_nl_dcb *d)
{
	int i;

	for (i = 0; i < d->napp; i++)
		if (d->app[i].selector == RN_DCB_SEL_DSCP)
			return 1;
	return 0;
}

/* The priority @dscp gets, and how (into @how). */
static int prio_of(const struct rn_nl_dcb *d, int dscp, char *how, size_t len)
{
	int i;

	if (!trusts_dscp(d)) {
		snprintf(how, len,
			 "trust pcp: no DSCP entry in the APP table, untagged RoCE gets "
			 "priority 0");
		return 0;
	}
	for (i = 0; i < d->napp; i++)
		if (d->app[i].selector == RN_DCB_SEL_DSCP && d->app[i].protocol == dscp) {
			snprintf(how, len, "trust dscp, APP table dscp-prio %d:%u", dscp,
				 d->app[i].prio);
			return d->app[i].prio & 7;
		}
	snprintf(how, len, "trust dscp, DSCP %d not in the APP table: default map DSCP/8", dscp);
	return (dscp >> 3) & 7;
}

/* A DSCP that lands on @prio: the APP table's first, else the default map's. */
static int dscp_for(const struct rn_nl_dcb *d, int prio)
{
	int i;

	for (i = 0; i < d->napp; i++)
		if (d->app[i].selector == RN_DCB_SEL_DSCP && d->app[i].prio == prio)
			return d->app[i].protocol & 63;
	return prio * 8;
}

static void judge_class(struct rn_nic *nic, const struct rn_nl_dcb *d, const char *what,
			const char *knob, int tc, int override)
{
	struct rn_vars v = RN_VARS_INIT;
	int dscp = tc >> 2, prio, lossless, good;
	char how[128];

	prio = prio_of(d, dscp, how, sizeof(how));
	if (d->pfc_en & (1u << prio))
		return;
	for (lossless = 0; lossless < 8 && !(d->pfc_en & (1u << lossless)); lossless++)
		;
	/* keep the class's ECN bits: NCCL's usual 106 is DSCP 26 with ECT(0) */
	good = dscp_for(d, lossless) << 2 | (tc & 3);
	rn_vars_set(&v, "nic", "%s:%d", nic->ibdev, nic->port);
	rn_vars_set(&v, "dev", "%s", nic->netdev);
	rn_vars_set(&v, "what", "%s", what);
	rn_vars_set(&v, "tc", "%d", tc);
	rn_vars_set(&v, "dscp", "%d", dscp);
	rn_vars_set(&v, "prio", "%d", prio);
	rn_vars_set(&v, "how", "%s%s", how,
		    override >= 0 ? "; the class is the mlx5 override "
				    "tc/PORT/traffic_class" :
				    "");
	rn_vars_set(&v, "lossless", "%d", lossless);
	if (!trusts_dscp(d))
		/* no DSCP entry: the class cannot move it, the APP table (trust dscp) can */
		rn_vars_set(&v, "qos_fix", "dcb app add dev %s dscp-prio %d:%d", nic->netdev, dscp,
			    lossless);
	else if (override >= 0)
		rn_vars_set(&v, "qos_fix",
			    "echo %d > /sys/class/infiniband/%s/tc/%d/traffic_class"
			    "  # or map DSCP %d to the lossless priority: dcb app add dev %s "
			    "dscp-prio %d:%d",
			    good, nic->ibdev, nic->port, dscp, nic->netdev, dscp, lossless);
	else
		rn_vars_set(&v, "qos_fix",
			    "export %s=%d  # or map DSCP %d to the lossless "
			    "priority: dcb app add dev %s dscp-prio %d:%d",
			    knob, good, dscp, nic->netdev, dscp, lossless);
	rn_nic_add_finding(nic, RN_CAUSE_QOS_LOSSY, &v);
	rn_vars_free(&v);
}

int rn_qos_assess(struct rn_nic *nic, const struct rn_config *cfg)
{
	struct rn_nl_dcb *d;
	int ret, override, tc, fifo;

	if (!nic->ibdev[0] || !nic->netdev[0])
		return 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = rn_nl.dcb_get(nic->netdev, d);
	if (ret) {
		rn_info(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "%s:%d: %s has no DCB (%s): PFC and the "
			       "DSCP map cannot be read, the class is not checked",
			nic->ibdev, nic->port, nic->netdev, strerror(-ret));
		free(d);
		return 0;
	}
	if (!d->has_pfc || !d->pfc_en) {
		rn_info(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "%s:%d: %s has DCB but no lossless "
			       "priority (PFC off): nothing to ride instead",
			nic->ibdev, nic->port, nic->netdev);
		free(d);
		return 0;
	}
	override = tc_override(nic);
	tc = override >= 0 ? override : cfg->tc >= 0 ? cfg->tc : 0;
	fifo = override >= 0 ? override : cfg->fifo_tc >= 0 ? cfg->fifo_tc : tc;
	judge_class(nic, d, "data", "NCCL_IB_TC", tc & 255, override);
	if ((fifo >> 2) != (tc >> 2))
		judge_class(nic, d, "CTS (FIFO)", "NCCL_IB_FIFO_TC", fifo & 255, override);
	free(d);
	return 0;
}
