// SPDX-License-Identifier: MIT
/*
 * The doctor's model of this host: gathered once (snapshot, discovery, the library's
 * NIC verdicts, each NIC's link history and port counters), then shown by whichever renderer the command chose (text, JSON,
 * Prometheus) and carried to a peer as an inventory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "doctor_probe.h"
#include "rn_nic.h"
#include "rn_policy.h"
#include "rn_route.h"

static void explain(struct rn_doctor *d, struct rn_doctor_nic *dn)
{
	struct rn_host_link *l = rn_host_link_by_index(d->host, dn->nic.ifindex);
	const struct rn_nl_rule *r;

	/* the library's own reason, not a guess made again here */
	dn->gid_why = dn->nic.ip.family ? rn_gid_why_str(dn->nic.gid_why) : "none";
	if (l) {
		dn->sys_eff = *rn_host_sysctls(d->host, l);
		dn->sys_dev = l->dev;
	}
	dn->rule_prio = -1;
	if (!dn->nic.ip.family)
		return;
	r = rn_rule_for_src(d->host, &dn->nic.ip);
	if (r) {
		dn->rule_prio = (int)r->priority;
		dn->rule_table = r->table;
	}
}

void rn_doctor_nic_counters(struct rn_doctor_nic *dn)
{
	int n;

	rn_flap_read(&dn->nic, &dn->flap);
	free(dn->ctr);
	dn->ctr = NULL;
	dn->nctr = 0;
	dn->ctr_driver = NULL;
	dn->ctr_lacks[0] = '\0';
	if (!dn->dev)
		return;
	/* the library's counter tables: its NIC list, each driver's names */
	dn->ctr_driver = rn_ctr_driver(dn->nic.ibdev, dn->nic.port);
	if (!dn->ctr_driver)
		return; /* not a RoCE port sysfs knows (a fake device, an InfiniBand port) */
	rn_ctr_lacks(dn->nic.ibdev, dn->nic.port, dn->ctr_lacks, sizeof(dn->ctr_lacks));
	n = rn_ctr_read_named(dn->nic.ibdev, dn->nic.port, &dn->ctr);
	dn->nctr = n > 0 ? n : 0;
}

/*
 * The device whose port the library's assessment puts on netdev @name in this namespace
 * (that assessment moved into @out), else d->ndevs. In a pod a shared device's port is named after the node's netdev (or
 * another pod's, in /sys), never the pod's own net1: only the assessment (the GID whose
 * address is net1's) says the port is net1's.
 */
static int dev_assessed_as(struct rn_doctor *d, const struct rn_config *cfg, const int *used,
			   const char *name, struct rn_nic *out)
{
	int k;

	for (k = 0; k < d->ndevs; k++) {
		struct rn_nic n = { 0 };

		if (used[k] || rn_nic_copy(&n, &d->devs[k]->nic))
			continue;
		if (!rn_nic_assess(d->host, d->devs[k]->ctx, &n, cfg) && !strcmp(n.netdev, name)) {
			*out = n;
			return k;
		}
		rn_nic_cleanup(&n);
	}
	return d->ndevs;
}

/* Remove d->nics[i] (its findings and counters freed). */
static void nic_drop(struct rn_doctor *d, int i)
{
	struct rn_doctor_nic *dn = &d->nics[i];

	rn_nic_cleanup(&dn->nic);
	free(dn->ctr);
	memmove(dn, dn + 1, (size_t)(d->nnics - i - 1) * sizeof(*dn));
	memset(&d->nics[--d->nnics], 0, sizeof(*dn));
}

/*
 * As the plugin (engine.c): a node's device seen from a pod through an interface that has
 * an RDMA device of its own is not the pod's; it goes to the skipped list, saying why.
 */
static void leave_shadowed(struct rn_doctor *d)
{
	const struct rn_nic *nics[RN_DOCTOR_MAX_NICS];
	int i, k, drop[RN_DOCTOR_MAX_NICS] = { 0 };

	for (i = 0; i < d->nnics; i++)
		nics[i] = &d->nics[i].nic;
	for (i = 0; i < d->nnics; i++) {
		size_t len = strlen(d->skipped);

		k = d->nics[i].err ? -1 : rn_nic_own_device(nics, d->nnics, i);
		if (k < 0 || d->nics[k].err)
			continue;
		drop[i] = 1;
		snprintf(d->skipped + len, sizeof(d->skipped) - len,
			 "%s%s:%d (%s has an RDMA "
			 "device of its own: %s:%d)",
			 len ? ", " : "", nics[i]->ibdev, nics[i]->port, nics[i]->netdev,
			 nics[k]->ibdev, nics[k]->port);
	}
	for (i = d->nnics - 1; i >= 0; i--)
		if (drop[i])
			nic_drop(d, i);
}

int rn_doctor_gather(struct rn_doctor *d)
{
	struct rn_config cfg = d->cfg;
	double t0 = rn_doctor_now_ms();
	int used[RN_MAX_DEVS] = { 0 };
	int assessed[RN_DOCTOR_MAX_NICS] = { 0 }; /* by dev_assessed_as: not again */
	int i, k, n, ret, nproblems = 0;

	rn_doctor_release(d);
	/* The doctor always runs the route checks, whatever the plugin was told. */
	if (cfg.route_check == RN_ROUTE_CHECK_OFF)
		cfg.route_check = RN_ROUTE_CHECK_WARN;
	ret = rn_host_snapshot(&d->host);
	if (ret) {
		rn_doctor_err(d, "cannot read links, addresses, rules and routes: %s",
			      strerror(-ret));
		return ret;
	}
	d->snapshot_ms = rn_doctor_now_ms() - t0;
	n = rn_dev_discover(&d->cfg, d->devs, RN_MAX_DEVS, d->skipped, sizeof(d->skipped),
			    &nproblems);
	d->discover_ms = rn_doctor_now_ms() - t0 - d->snapshot_ms;
	d->ndevs = n > 0 ? n : 0;
	/* the library says which ports were left out for something to fix */
	if (d->ndevs && d->skipped[0])
		d->skipped_problem = nproblems > 0;

	if (d->netdevs) {
		for (i = 0; i < d->nnames; i++) {
			struct rn_doctor_nic *dn = &d->nics[d->nnics];

			for (k = 0; k < d->ndevs; k++)
				if (!used[k] && !strcmp(d->devs[k]->nic.netdev, d->names[i]))
					break;
			if (k == d->ndevs) {
				k = dev_assessed_as(d, &cfg, used, d->names[i], &dn->nic);
				assessed[d->nnics] = k < d->ndevs;
			}
			if (k < d->ndevs) {
				used[k] = 1;
				ret = assessed[d->nnics] ? 0 :
							   rn_nic_copy(&dn->nic, &d->devs[k]->nic);
				if (ret)
					return ret;
				dn->dev = d->devs[k];
			} else if (rn_nic_from_netdev(d->host, d->names[i], &dn->nic)) {
				rn_doctor_err(d, "--netdev: no netdev '%s' on this host",
					      d->names[i]);
				return -ENODEV;
			}
			d->nnics++;
		}
		/* RoCE ports the user did not name are not ours to judge. */
		d->skipped_problem = 0;
	} else {
		for (k = 0; k < d->ndevs && d->nnics < RN_DOCTOR_MAX_NICS; k++) {
			ret = rn_nic_copy(&d->nics[d->nnics].nic, &d->devs[k]->nic);
			if (ret)
				return ret;
			d->nics[d->nnics].dev = d->devs[k];
			d->nnics++;
		}
	}
	/* every RoCE NIC judged, so that each one's MTU is compared with the others' */
	for (i = 0; i < d->nnics; i++)
		rn_host_mark_roce(d->host, d->nics[i].nic.ifindex, d->nics[i].nic.netdev);
	for (i = 0; i < d->nnics; i++) {
		struct rn_doctor_nic *dn = &d->nics[i];

		dn->err = assessed[i] ? 0 :
					rn_nic_assess(d->host, dn->dev ? dn->dev->ctx : NULL,
						      &dn->nic, &cfg);
		if (dn->err == -ENODEV && dn->dev && !d->netdevs) {
			size_t len = strlen(d->skipped);

			/* a shared RDMA device seen from a pod without a netdev on it: not its NIC */
			snprintf(d->skipped + len, sizeof(d->skipped) - len,
				 "%s%s:%d (no netdev "
				 "of this network namespace on it)",
				 len ? ", " : "", dn->nic.ibdev, dn->nic.port);
			nic_drop(d, i);
			i--;
			continue;
		}
		/* the device carries its verdict too: the RDMA probe's engine runs on it */
		if (dn->dev && !dn->err) {
			ret = rn_nic_copy(&dn->dev->nic, &dn->nic);
			if (ret)
				return ret;
		}
		explain(d, dn);
		rn_doctor_nic_counters(dn);
	}
	if (!d->netdevs)
		leave_shadowed(d);
	d->gather_ms = rn_doctor_now_ms() - t0;
	d->verdict_ms = d->gather_ms - d->snapshot_ms - d->discover_ms;
	return 0;
}

void rn_doctor_release(struct rn_doctor *d)
{
	int i;

	rn_probe_release(d); /* its engine runs on the devices freed below */
	for (i = 0; i < d->ndevs; i++)
		rn_dev_free(d->devs[i]);
	d->ndevs = 0;
	rn_host_free(d->host);
	d->host = NULL;
	for (i = 0; i < RN_DOCTOR_MAX_NICS; i++) {
		rn_nic_cleanup(&d->nics[i].nic);
		free(d->nics[i].ctr);
	}
	memset(d->nics, 0, sizeof(d->nics));
	d->nnics = 0;
	d->skipped[0] = '\0';
	d->skipped_problem = 0;
}

int rn_doctor_nic_problem(const struct rn_doctor_nic *dn)
{
	int i;

	if (dn->err || dn->nic.verdict != RN_VERDICT_OK)
		return 1;
	for (i = 0; i < dn->nic.nfindings; i++)
		if (dn->nic.findings[i].sev >= RN_SEV_WARN)
			return 1;
	return 0;
}

int rn_doctor_host_problems(const struct rn_doctor *d)
{
	int i;

	if (!d->nnics || d->skipped_problem)
		return 1;
	for (i = 0; i < d->nnics; i++)
		if (rn_doctor_nic_problem(&d->nics[i]))
			return 1;
	return 0;
}

/* Causes that roce-policy-routing's tables, rules and ARP sysctls take away. */
int rn_doctor_script_fixes(enum rn_cause c)
{
	switch (c) {
	case RN_CAUSE_ARP_FLUX:
	case RN_CAUSE_SHARED_L2:
	case RN_CAUSE_ARP_SILENT:
	case RN_CAUSE_NO_RULE:
	case RN_CAUSE_ROUTE_WRONG_NIC:
	case RN_CAUSE_RULE_WRONG_NIC:
	case RN_CAUSE_TABLE_NO_ROUTE:
	case RN_CAUSE_RP_FILTER:
		return 1;
	default:
		return 0;
	}
}
