/* SPDX-License-Identifier: MIT */
/* nccl-net-driver rma (driver_rma.c): the plugin's RMA table, as NCCL 2.30.7 drives it. */
#ifndef RN_DRIVER_RMA_H
#define RN_DRIVER_RMA_H

#include <stddef.h>

#include "netplug.h"

struct driver_rma_opts {
	int ranks, rank;
	int dev;
	size_t size;      /* each put and get */
	int rounds;
	long iters;       /* puts of the bandwidth figure (rank 0 to rank 1) */
	int timeout_ms;   /* every wait */
	int nap_us;       /* sleep after a poll round without progress (0: busy poll) */
	const char *addr; /* rank 0's side channel: the handles' allgather */
};

/* With @np loaded and @net_ctx its net init's context: an exit code (rn_cli.h). */
int driver_rma(struct netplug *np, void *net_ctx, const struct driver_rma_opts *o);

#endif /* RN_DRIVER_RMA_H */
