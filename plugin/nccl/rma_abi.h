/* SPDX-License-Identifier: MIT */
/*
 * NCCL 2.30.7's RMA backend ABI (ncclRmaPlugin_v14), declared from our own notes
 * (docs: nccl-2.30.md), not copied from NCCL's headers. NCCL looks the table up in
 * the loaded net plugin's library and runs its host RMA API (ncclPutSignal, ...) and
 * the GIN proxy over it. test/abi/layout.c pins the layout on x86-64.
 */
#ifndef RN_NCCL_RMA_ABI_H
#define RN_NCCL_RMA_ABI_H

#include <stdbool.h>

#include "nccl/net_abi.h"

/* iputSignal's signalOp: what the 64-bit signal word at the target gets. */
#define NCCL_NET_SIGNAL_OP_INC 0x1 /* += 1 */
#define NCCL_NET_SIGNAL_OP_ADD 0x2 /* += signalValue */

/* regMrSym's mrFlags, besides net_abi.h's NCCL_NET_MR_FLAG_FORCE_SO */
#define NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET (1 << 1) /* a signal buffer */

typedef struct {
	int nContexts;    /* contexts the caller may name in iput & co (0..n-1) */
	int trafficClass; /* the communicator's; -1 = undefined */
	int rankStride;   /* connect every rankStride-th rank (nranks % stride == 0) */
} ncclRmaConfig_v14_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v12_t *props);
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
	/* collective over all ranks; ctx is NCCL's net context, not init's */
	ncclResult_t (*connect)(void *ctx, void *handles[], int nranks, int rank, void *listenComm,
				void **collComm);
	ncclResult_t (*createContext)(void *collComm, ncclRmaConfig_v14_t *config, void **rmaCtx);
	/* collective: every rank registers, and learns every rank's address and key */
	ncclResult_t (*regMrSym)(void *collComm, void *data, size_t size, int type,
				 uint64_t mrFlags, void **mhandle);
	ncclResult_t (*regMrSymDmaBuf)(void *collComm, void *data, size_t size, int type,
				       uint64_t offset, int fd, uint64_t mrFlags, void **mhandle);
	ncclResult_t (*deregMrSym)(void *collComm, void *mhandle);
	ncclResult_t (*destroyContext)(void *rmaCtx);
	ncclResult_t (*closeColl)(void *collComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*iput)(void *rmaCtx, int context, uint64_t srcOff, void *srcMhandle,
			     size_t size, uint64_t dstOff, void *dstMhandle, uint32_t rank,
			     void **request);
	ncclResult_t (*iputSignal)(void *rmaCtx, int context, uint64_t srcOff, void *srcMhandle,
				   size_t size, uint64_t dstOff, void *dstMhandle, uint32_t rank,
				   uint64_t signalOff, void *signalMhandle, uint64_t signalValue,
				   uint32_t signalOp, bool isStrongSignal, void **request);
	ncclResult_t (*iget)(void *rmaCtx, int context, uint64_t remoteOff, void *remoteMhandle,
			     size_t size, uint64_t localOff, void *localMhandle, uint32_t rank,
			     void **request);
	ncclResult_t (*iflush)(void *rmaCtx, int context, void *mhandle, uint32_t rank,
			       void **request);
	ncclResult_t (*test)(void *collComm, void *request, int *done);
	ncclResult_t (*rmaProgress)(void *rmaCtx); /* NCCL calls it when not NULL */
	ncclResult_t (*queryLastError)(void *rmaCtx, bool *hasError);
	ncclResult_t (*finalize)(void *ctx);
} ncclRma_v14_t;

#endif /* RN_NCCL_RMA_ABI_H */
