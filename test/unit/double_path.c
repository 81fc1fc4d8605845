// SPDX-License-Identifier: MIT
/*
 * A scripted stand-in for init's assessment (rn_path.h's rn_assess), #included by the tests
 * of the engine and the plugin, installed before main. Deliberately not named fake_*.c:
 * those are linked into every unit test and would replace the real assessment in its own
 * tests.
 *
 * Each NIC's verdict comes from double_path_plan (by ibdev:port); NICs without a
 * plan row get a GID and an OK verdict. Counters let tests see what was called.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_path.h"
#include "rn_verdict.h"

struct double_nic_plan {
	const char *ibdev;
	int port;
	int gid_index;       /* -1: no usable GID */
	enum rn_verdict_kind verdict;
	enum rn_cause cause; /* the finding, when not OK */
};

static struct double_nic_plan double_path_plan[8];
static int double_path_snapshot_ret; /* what rn_host_snapshot answers */
static int double_path_assess_ret;   /* what rn_nic_assess answers */
static int double_path_snapshots, double_path_frees, double_path_assessed, double_path_logged;
static struct rn_host {
	int dummy;
} double_path_host;

static void double_path_reset(void)
{
	memset(double_path_plan, 0, sizeof(double_path_plan));
	double_path_snapshot_ret = 0;
	double_path_assess_ret = 0;
	double_path_snapshots = double_path_frees = double_path_assessed = double_path_logged = 0;
}

static int dbl_snapshot(struct rn_host **out)
{
	double_path_snapshots++;
	*out = double_path_snapshot_ret ? NULL : &double_path_host;
	return double_path_snapshot_ret;
}

static void dbl_host_free(struct rn_host *host)
{
	if (host)
		double_path_frees++;
}

static int dbl_assess(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		      const struct rn_config *cfg)
{
	const struct double_nic_plan *p = NULL;
	size_t i;

	double_path_assessed++;
	if (double_path_assess_ret)
		return double_path_assess_ret;
	for (i = 0; i < sizeof(double_path_plan) / sizeof(double_path_plan[0]); i++)
		if (double_path_plan[i].ibdev && !strcmp(double_path_plan[i].ibdev, nic->ibdev) &&
		    double_path_plan[i].port == nic->port)
			p = &double_path_plan[i];
	nic->gid_index = p ? p->gid_index : 3;
	nic->ip.family = AF_INET;
	nic->ip.v4.s_addr = htonl(0xc6120000u | (uint32_t)double_path_assessed); /* 198.18.0.x */
	nic->verdict = p ? p->verdict : RN_VERDICT_OK;
	rn_nic_cleanup(nic);
	if (p && p->verdict != RN_VERDICT_OK) {
		nic->findings = calloc(1, sizeof(*nic->findings));
		if (!nic->findings)
			return -ENOMEM;
		nic->findings_cap = nic->nfindings = 1;
		nic->findings[0].cause = p->cause;
		nic->findings[0].sev = p->verdict == RN_VERDICT_REFUSED ? RN_SEV_FATAL :
									  RN_SEV_WARN;
	}
	return 0;
}

static void dbl_nic_log(const struct rn_nic *nic)
{
	double_path_logged++;
}

__attribute__((constructor)) static void double_path_install(void)
{
	rn_assess = (struct rn_assess_ops){
		.snapshot = dbl_snapshot,
		.free = dbl_host_free,
		.assess = dbl_assess,
		.log = dbl_nic_log,
	};
}
