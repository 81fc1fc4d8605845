/* SPDX-License-Identifier: MIT */
/*
 * The RMA backend (src/rma.c): one-sided puts, signals and gets between the ranks of a
 * group, on the same engine, GID choice and per-connection route and ARP check as the
 * net transport. plugin/plugin_rma.c exports it to NCCL 2.30.7 as ncclRmaPlugin_v14.
 *
 * The shape, as NCCL calls it:
 *   rn_rma_listen    a TCP listener on the device's source IP; its handle goes to every rank;
 *   rn_rma_connect   collective: a TCP mesh over every rank's handle (the group's allgather);
 *   rn_rma_ctx_create collective: one RMA comm pair per rank, itself included, through the
 *                    net transport's handshake (rn_connect_flags with RN_CONN_RMA), so each
 *                    pair is judged like a net connection and refused by name;
 *   rn_rma_reg       collective: registers, then learns every rank's address and key;
 *   rn_rma_put / rn_rma_get / rn_rma_flush   post on the QP to the target rank;
 *   rn_rma_test      polls that QP's CQ; a failed completion fails the comm with the data
 *                    path's diagnosis, and every later call says so.
 * The collective calls block, each bounded by NCCL_ROCE_CONNECT_TIMEOUT_MS: NCCL calls
 * them once, from its RMA proxy, and expects the group back (a dead rank is an error).
 * Everything else never blocks. All of it is 0 / -errno.
 */
#ifndef RN_RMA_H
#define RN_RMA_H

#include <stddef.h>
#include <stdint.h>

#include "rn_dev.h"

#define RN_RMA_HANDLE_SIZE 128 /* NCCL_NET_HANDLE_MAXSIZE */
#define RN_RMA_MAX_RANKS 4096
#define RN_RMA_INFLIGHT 32     /* requests in flight per target rank that NCCL may post */

struct rn_rma_listen;
struct rn_rma_coll;
struct rn_rma_ctx;
struct rn_rma_mr;
struct rn_rma_req;
struct ibv_qp;

/* iputSignal's signal: 8 bytes at @off of @mr on the target, += @value (INC: += 1). */
struct rn_rma_signal {
	struct rn_rma_mr *mr;
	uint64_t off;
	uint64_t value;
};

int rn_rma_listen(struct rn_engine *eng, int dev, void *handle, struct rn_rma_listen **out);
int rn_rma_close_listen(struct rn_rma_listen *l);
/* @handles: every rank's listen handle (RN_RMA_HANDLE_SIZE each), ours at @rank. */
int rn_rma_connect(struct rn_engine *eng, void *const *handles, int nranks, int rank,
		   struct rn_rma_listen *l, struct rn_rma_coll **out);
int rn_rma_close(struct rn_rma_coll *g);

/* @tc: the traffic class (-1: NCCL_IB_TC or none); @tc_forced: as given (NCCL_GIN_IB_TC). */
int rn_rma_ctx_create(struct rn_rma_coll *g, int ncontexts, int tc, int tc_forced, int stride,
		      struct rn_rma_ctx **out);
int rn_rma_ctx_destroy(struct rn_rma_ctx *x);

int rn_rma_reg(struct rn_rma_coll *g, void *data, size_t size, int type, int dmabuf_fd,
	       uint64_t offset, struct rn_rma_mr **out);
int rn_rma_dereg(struct rn_rma_coll *g, struct rn_rma_mr *mr);

/* RDMA WRITE of @size bytes, then (with @sig) the signal, ordered after the data. */
int rn_rma_put(struct rn_rma_ctx *x, int context, uint64_t src_off, struct rn_rma_mr *src,
	       size_t size, uint64_t dst_off, struct rn_rma_mr *dst, int rank,
	       const struct rn_rma_signal *sig, struct rn_rma_req **out);
/* RDMA READ of @size bytes of @rank's @remote at @remote_off into ours at @local_off. */
int rn_rma_get(struct rn_rma_ctx *x, int context, uint64_t remote_off, struct rn_rma_mr *remote,
	       size_t size, uint64_t local_off, struct rn_rma_mr *local, int rank,
	       struct rn_rma_req **out);
/* Done once every put posted to @rank before it has landed there (a READ behind them). */
int rn_rma_flush(struct rn_rma_ctx *x, int context, struct rn_rma_mr *mr, int rank,
		 struct rn_rma_req **out);
/* *done = 1 once @req completed (it is freed then); an error for a failed one. */
int rn_rma_test(struct rn_rma_req *req, int *done);
/* Poll every rank's CQ. */
int rn_rma_progress(struct rn_rma_ctx *x);
/* The first error of any of @x's comms (0: none). */
int rn_rma_last_error(const struct rn_rma_ctx *x);
/* The QP @x posts on to @rank (NULL: none), for the diagnosis' tools and the tests. */
struct ibv_qp *rn_rma_qp(const struct rn_rma_ctx *x, int rank);

/*
 * At init: one WARN for each way NCCL 2.30's device-API traffic would not come through
 * this plugin (NCCL_RMA_PLUGIN naming another backend; NCCL's own GDAKI on mlx5), said
 * only where that matters: we refused @nrefused NICs (@refused names them) or NCCL's
 * own GID choice differs from ours on a NIC we offer.
 */
void rn_rma_bypass_check(const struct rn_engine *eng, int nrefused, const char *refused);

#endif /* RN_RMA_H */
