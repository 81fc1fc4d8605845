// SPDX-License-Identifier: MIT
/*
 * Pins plugin/nccl/net_abi.h to NCCL's x86-64 layout: every struct's size and every
 * field's offset for v6..v12, and the signatures that change between versions; and
 * plugin/nccl/rma_abi.h's ncclRma_v14_t (NCCL 2.30.7's include/plugin/rma/rma_v14.h order).
 * The numbers are worked out by hand from the field order in docs/nccl-net-abi.md
 * and the C alignment rules; they are literals on purpose.
 */
#include <stddef.h>
#include <stdio.h>

#include "nccl/net_abi.h"
#include "nccl/rma_abi.h"

static int failures, checks;

#define OFF(type, field, want) check(#type "." #field, offsetof(type, field), want)
#define SIZE(type, want) check("sizeof(" #type ")", sizeof(type), want)
#define SIG(type, field, ...)                                                              \
	check(#type "." #field " signature",                                               \
	      __builtin_types_compatible_p(__typeof__(((type *)0)->field), __VA_ARGS__), 1)

static void check(const char *what, size_t got, size_t want)
{
	checks++;
	if (got == want)
		return;
	failures++;
	printf("FAIL %s: %zu, NCCL has %zu\n", what, got, want);
}

static void props(void)
{
	SIZE(ncclNetProperties_v6_t, 48);
	OFF(ncclNetProperties_v6_t, name, 0);
	OFF(ncclNetProperties_v6_t, pciPath, 8);
	OFF(ncclNetProperties_v6_t, guid, 16);
	OFF(ncclNetProperties_v6_t, ptrSupport, 24);
	OFF(ncclNetProperties_v6_t, speed, 28);
	OFF(ncclNetProperties_v6_t, port, 32);
	OFF(ncclNetProperties_v6_t, latency, 36);
	OFF(ncclNetProperties_v6_t, maxComms, 40);
	OFF(ncclNetProperties_v6_t, maxRecvs, 44);

	SIZE(ncclNetProperties_v7_t, 56);
	OFF(ncclNetProperties_v7_t, name, 0);
	OFF(ncclNetProperties_v7_t, pciPath, 8);
	OFF(ncclNetProperties_v7_t, guid, 16);
	OFF(ncclNetProperties_v7_t, ptrSupport, 24);
	OFF(ncclNetProperties_v7_t, speed, 28);
	OFF(ncclNetProperties_v7_t, port, 32);
	OFF(ncclNetProperties_v7_t, latency, 36);
	OFF(ncclNetProperties_v7_t, maxComms, 40);
	OFF(ncclNetProperties_v7_t, maxRecvs, 44);
	OFF(ncclNetProperties_v7_t, netDeviceType, 48);
	OFF(ncclNetProperties_v7_t, netDeviceVersion, 52);

	SIZE(ncclNetProperties_v8_t, 64);
	OFF(ncclNetProperties_v8_t, name, 0);
	OFF(ncclNetProperties_v8_t, pciPath, 8);
	OFF(ncclNetProperties_v8_t, guid, 16);
	OFF(ncclNetProperties_v8_t, ptrSupport, 24);
	OFF(ncclNetProperties_v8_t, regIsGlobal, 28);
	OFF(ncclNetProperties_v8_t, speed, 32);
	OFF(ncclNetProperties_v8_t, port, 36);
	OFF(ncclNetProperties_v8_t, latency, 40);
	OFF(ncclNetProperties_v8_t, maxComms, 44);
	OFF(ncclNetProperties_v8_t, maxRecvs, 48);
	OFF(ncclNetProperties_v8_t, netDeviceType, 52);
	OFF(ncclNetProperties_v8_t, netDeviceVersion, 56);

	SIZE(ncclNetVDeviceProps_v9_t, 20);
	OFF(ncclNetVDeviceProps_v9_t, ndevs, 0);
	OFF(ncclNetVDeviceProps_v9_t, devs, 4);
	SIZE(ncclNetVDeviceProps_v12_t, 36);
	OFF(ncclNetVDeviceProps_v12_t, devs, 4);

	/* v9 and v10 share one layout */
	SIZE(ncclNetProperties_v9_t, 104);
	SIZE(ncclNetProperties_v10_t, 104);
	OFF(ncclNetProperties_v10_t, name, 0);
	OFF(ncclNetProperties_v10_t, pciPath, 8);
	OFF(ncclNetProperties_v10_t, guid, 16);
	OFF(ncclNetProperties_v10_t, ptrSupport, 24);
	OFF(ncclNetProperties_v10_t, regIsGlobal, 28);
	OFF(ncclNetProperties_v10_t, forceFlush, 32);
	OFF(ncclNetProperties_v10_t, speed, 36);
	OFF(ncclNetProperties_v10_t, port, 40);
	OFF(ncclNetProperties_v10_t, latency, 44);
	OFF(ncclNetProperties_v10_t, maxComms, 48);
	OFF(ncclNetProperties_v10_t, maxRecvs, 52);
	OFF(ncclNetProperties_v10_t, netDeviceType, 56);
	OFF(ncclNetProperties_v10_t, netDeviceVersion, 60);
	OFF(ncclNetProperties_v10_t, vProps, 64);
	OFF(ncclNetProperties_v10_t, maxP2pBytes, 88);
	OFF(ncclNetProperties_v10_t, maxCollBytes, 96);

	SIZE(ncclNetProperties_v11_t, 112);
	OFF(ncclNetProperties_v11_t, name, 0);
	OFF(ncclNetProperties_v11_t, pciPath, 8);
	OFF(ncclNetProperties_v11_t, guid, 16);
	OFF(ncclNetProperties_v11_t, ptrSupport, 24);
	OFF(ncclNetProperties_v11_t, regIsGlobal, 28);
	OFF(ncclNetProperties_v11_t, forceFlush, 32);
	OFF(ncclNetProperties_v11_t, speed, 36);
	OFF(ncclNetProperties_v11_t, port, 40);
	OFF(ncclNetProperties_v11_t, latency, 44);
	OFF(ncclNetProperties_v11_t, maxComms, 48);
	OFF(ncclNetProperties_v11_t, maxRecvs, 52);
	OFF(ncclNetProperties_v11_t, netDeviceType, 56);
	OFF(ncclNetProperties_v11_t, netDeviceVersion, 60);
	OFF(ncclNetProperties_v11_t, vProps, 64);
	OFF(ncclNetProperties_v11_t, maxP2pBytes, 88);
	OFF(ncclNetProperties_v11_t, maxCollBytes, 96);
	OFF(ncclNetProperties_v11_t, maxMultiRequestSize, 104);

	SIZE(ncclNetProperties_v12_t, 128);
	OFF(ncclNetProperties_v12_t, name, 0);
	OFF(ncclNetProperties_v12_t, pciPath, 8);
	OFF(ncclNetProperties_v12_t, guid, 16);
	OFF(ncclNetProperties_v12_t, ptrSupport, 24);
	OFF(ncclNetProperties_v12_t, regIsGlobal, 28);
	OFF(ncclNetProperties_v12_t, forceFlush, 32);
	OFF(ncclNetProperties_v12_t, speed, 36);
	OFF(ncclNetProperties_v12_t, port, 40);
	OFF(ncclNetProperties_v12_t, latency, 44);
	OFF(ncclNetProperties_v12_t, maxComms, 48);
	OFF(ncclNetProperties_v12_t, maxRecvs, 52);
	OFF(ncclNetProperties_v12_t, netDeviceType, 56);
	OFF(ncclNetProperties_v12_t, netDeviceVersion, 60);
	OFF(ncclNetProperties_v12_t, vProps, 64);
	OFF(ncclNetProperties_v12_t, maxP2pBytes, 104);
	OFF(ncclNetProperties_v12_t, maxCollBytes, 112);
	OFF(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
	OFF(ncclNetProperties_v12_t, railId, 124);
	OFF(ncclNetProperties_v12_t, planeId, 126);
}

static void small_types(void)
{
	SIZE(ncclResult_t, 4);
	SIZE(ncclNetDeviceType, 4);
	SIZE(ncclNetDeviceHandle_v7_t, 32);
	OFF(ncclNetDeviceHandle_v7_t, netDeviceType, 0);
	OFF(ncclNetDeviceHandle_v7_t, netDeviceVersion, 4);
	OFF(ncclNetDeviceHandle_v7_t, handle, 8);
	OFF(ncclNetDeviceHandle_v7_t, size, 16);
	OFF(ncclNetDeviceHandle_v7_t, needsProxyProgress, 24);
	SIZE(ncclNetCommConfig_v10_t, 4);
	SIZE(ncclNetCommConfig_v12_t, 4);
	SIZE(ncclNetCommAttr_v11_t, 16);
	OFF(ncclNetCommAttr_v11_t, maxConcurrentPeers, 0);
	OFF(ncclNetCommAttr_v11_t, minConcurrentPeers, 4);
	OFF(ncclNetCommAttr_v11_t, maxFlowsPerPeer, 8);
	OFF(ncclNetCommAttr_v11_t, minFlowsPerPeer, 12);
	SIZE(ncclNetAttr_v12_t, 44);
	OFF(ncclNetAttr_v12_t, sendCommAttr, 0);
	OFF(ncclNetAttr_v12_t, recvCommAttr, 16);
	OFF(ncclNetAttr_v12_t, op, 32);
	OFF(ncclNetAttr_v12_t, algo, 36);
	OFF(ncclNetAttr_v12_t, proto, 40);
	/* constants NCCL and we must agree on */
	check("NCCL_NET_HANDLE_MAXSIZE", NCCL_NET_HANDLE_MAXSIZE, 128);
	check("NCCL_NET_MAX_REQUESTS", NCCL_NET_MAX_REQUESTS, 32);
	check("NCCL_PTR_DMABUF", NCCL_PTR_DMABUF, 4);
	check("NCCL_NET", NCCL_NET, 0x10);
	check("ncclRemoteError", ncclRemoteError, 6);
	check("NCCL_LOG_TRACE", NCCL_LOG_TRACE, 5);
}

/* The fields every table shares, in order. */
#define COMMON_OFFSETS(T)                     \
	do {                                  \
		OFF(T, name, 0);              \
		OFF(T, init, 8);              \
		OFF(T, devices, 16);          \
		OFF(T, getProperties, 24);    \
		OFF(T, listen, 32);           \
		OFF(T, connect, 40);          \
		OFF(T, accept, 48);           \
		OFF(T, regMr, 56);            \
		OFF(T, regMrDmaBuf, 64);      \
		OFF(T, deregMr, 72);          \
		OFF(T, isend, 80);            \
		OFF(T, irecv, 88);            \
		OFF(T, iflush, 96);           \
		OFF(T, test, 104);            \
		OFF(T, closeSend, 112);       \
		OFF(T, closeRecv, 120);       \
		OFF(T, closeListen, 128);     \
	} while (0)

static void tables(void)
{
	COMMON_OFFSETS(ncclNet_v6_t);
	SIZE(ncclNet_v6_t, 136);
	COMMON_OFFSETS(ncclNet_v7_t);
	OFF(ncclNet_v7_t, getDeviceMr, 136);
	OFF(ncclNet_v7_t, irecvConsumed, 144);
	SIZE(ncclNet_v7_t, 152);
	COMMON_OFFSETS(ncclNet_v8_t);
	OFF(ncclNet_v8_t, getDeviceMr, 136);
	OFF(ncclNet_v8_t, irecvConsumed, 144);
	SIZE(ncclNet_v8_t, 152);
	COMMON_OFFSETS(ncclNet_v9_t);
	OFF(ncclNet_v9_t, makeVDevice, 152);
	SIZE(ncclNet_v9_t, 160);
	COMMON_OFFSETS(ncclNet_v10_t);
	OFF(ncclNet_v10_t, makeVDevice, 152);
	SIZE(ncclNet_v10_t, 160);
	COMMON_OFFSETS(ncclNet_v11_t);
	OFF(ncclNet_v11_t, getDeviceMr, 136);
	OFF(ncclNet_v11_t, irecvConsumed, 144);
	OFF(ncclNet_v11_t, makeVDevice, 152);
	OFF(ncclNet_v11_t, finalize, 160);
	OFF(ncclNet_v11_t, setNetAttr, 168);
	SIZE(ncclNet_v11_t, 176);
	COMMON_OFFSETS(ncclNet_v12_t);
	OFF(ncclNet_v12_t, makeVDevice, 152);
	OFF(ncclNet_v12_t, finalize, 160);
	OFF(ncclNet_v12_t, setNetAttr, 168);
	SIZE(ncclNet_v12_t, 176);
}

/* What changes from version to version: the shims depend on these shapes. */
static void signatures(void)
{
	SIG(ncclNet_v6_t, init, ncclResult_t (*)(ncclDebugLogger_t));
	SIG(ncclNet_v9_t, init, ncclResult_t (*)(ncclDebugLogger_t));
	SIG(ncclNet_v10_t, init, ncclResult_t (*)(ncclDebugLogger_t, ncclProfilerCallback_t));
	SIG(ncclNet_v11_t, init, ncclResult_t (*)(void **, uint64_t, ncclNetCommConfig_v11_t *,
						  ncclDebugLogger_t, ncclProfilerCallback_t));
	SIG(ncclNet_v6_t, connect, ncclResult_t (*)(int, void *, void **));
	SIG(ncclNet_v7_t, connect,
	    ncclResult_t (*)(int, void *, void **, ncclNetDeviceHandle_v7_t **));
	SIG(ncclNet_v10_t, connect, ncclResult_t (*)(int, ncclNetCommConfig_v10_t *, void *, void **,
						     ncclNetDeviceHandle_v10_t **));
	SIG(ncclNet_v12_t, connect,
	    ncclResult_t (*)(void *, int, void *, void **, ncclNetDeviceHandle_v12_t **));
	SIG(ncclNet_v10_t, listen, ncclResult_t (*)(int, void *, void **));
	SIG(ncclNet_v12_t, listen, ncclResult_t (*)(void *, int, void *, void **));
	SIG(ncclNet_v6_t, accept, ncclResult_t (*)(void *, void **));
	SIG(ncclNet_v7_t, regMr, ncclResult_t (*)(void *, void *, int, int, void **));
	SIG(ncclNet_v8_t, regMr, ncclResult_t (*)(void *, void *, size_t, int, void **));
	SIG(ncclNet_v8_t, isend, ncclResult_t (*)(void *, void *, int, int, void *, void **));
	SIG(ncclNet_v9_t, isend, ncclResult_t (*)(void *, void *, size_t, int, void *, void **));
	SIG(ncclNet_v10_t, isend,
	    ncclResult_t (*)(void *, void *, size_t, int, void *, void *, void **));
	SIG(ncclNet_v8_t, irecv,
	    ncclResult_t (*)(void *, int, void **, int *, int *, void **, void **));
	SIG(ncclNet_v9_t, irecv,
	    ncclResult_t (*)(void *, int, void **, size_t *, int *, void **, void **));
	SIG(ncclNet_v12_t, irecv,
	    ncclResult_t (*)(void *, int, void **, size_t *, int *, void **, void **, void **));
	SIG(ncclNet_v12_t, iflush,
	    ncclResult_t (*)(void *, int, void **, int *, void **, void **));
	SIG(ncclNet_v12_t, test, ncclResult_t (*)(void *, int *, int *));
	SIG(ncclNet_v11_t, getProperties, ncclResult_t (*)(int, ncclNetProperties_v11_t *));
	SIG(ncclNet_v12_t, makeVDevice, ncclResult_t (*)(int *, ncclNetVDeviceProps_v12_t *));
	SIG(ncclNet_v11_t, makeVDevice, ncclResult_t (*)(int *, ncclNetVDeviceProps_v11_t *));
}

/* The RMA backend's table: 21 members in NCCL's order, its config of three ints. */
static void rma(void)
{
	OFF(ncclRmaConfig_v14_t, nContexts, 0);
	OFF(ncclRmaConfig_v14_t, trafficClass, 4);
	OFF(ncclRmaConfig_v14_t, rankStride, 8);
	SIZE(ncclRmaConfig_v14_t, 12);
	OFF(ncclRma_v14_t, name, 0);
	OFF(ncclRma_v14_t, init, 8);
	OFF(ncclRma_v14_t, devices, 16);
	OFF(ncclRma_v14_t, getProperties, 24);
	OFF(ncclRma_v14_t, listen, 32);
	OFF(ncclRma_v14_t, connect, 40);
	OFF(ncclRma_v14_t, createContext, 48);
	OFF(ncclRma_v14_t, regMrSym, 56);
	OFF(ncclRma_v14_t, regMrSymDmaBuf, 64);
	OFF(ncclRma_v14_t, deregMrSym, 72);
	OFF(ncclRma_v14_t, destroyContext, 80);
	OFF(ncclRma_v14_t, closeColl, 88);
	OFF(ncclRma_v14_t, closeListen, 96);
	OFF(ncclRma_v14_t, iput, 104);
	OFF(ncclRma_v14_t, iputSignal, 112);
	OFF(ncclRma_v14_t, iget, 120);
	OFF(ncclRma_v14_t, iflush, 128);
	OFF(ncclRma_v14_t, test, 136);
	OFF(ncclRma_v14_t, rmaProgress, 144);
	OFF(ncclRma_v14_t, queryLastError, 152);
	OFF(ncclRma_v14_t, finalize, 160);
	SIZE(ncclRma_v14_t, 168);
	SIG(ncclRma_v14_t, init, ncclResult_t (*)(void **, uint64_t, ncclDebugLogger_t));
	SIG(ncclRma_v14_t, getProperties, ncclResult_t (*)(int, ncclNetProperties_v12_t *));
	SIG(ncclRma_v14_t, connect, ncclResult_t (*)(void *, void **, int, int, void *, void **));
	SIG(ncclRma_v14_t, createContext,
	    ncclResult_t (*)(void *, ncclRmaConfig_v14_t *, void **));
	SIG(ncclRma_v14_t, regMrSym,
	    ncclResult_t (*)(void *, void *, size_t, int, uint64_t, void **));
	SIG(ncclRma_v14_t, regMrSymDmaBuf,
	    ncclResult_t (*)(void *, void *, size_t, int, uint64_t, int, uint64_t, void **));
	SIG(ncclRma_v14_t, iput, ncclResult_t (*)(void *, int, uint64_t, void *, size_t, uint64_t,
						  void *, uint32_t, void **));
	SIG(ncclRma_v14_t, iputSignal,
	    ncclResult_t (*)(void *, int, uint64_t, void *, size_t, uint64_t, void *, uint32_t,
			     uint64_t, void *, uint64_t, uint32_t, bool, void **));
	SIG(ncclRma_v14_t, iget, ncclResult_t (*)(void *, int, uint64_t, void *, size_t, uint64_t,
						  void *, uint32_t, void **));
	SIG(ncclRma_v14_t, iflush, ncclResult_t (*)(void *, int, void *, uint32_t, void **));
	SIG(ncclRma_v14_t, test, ncclResult_t (*)(void *, void *, int *));
	SIG(ncclRma_v14_t, queryLastError, ncclResult_t (*)(void *, bool *));
	check("NCCL_NET_SIGNAL_OP_INC", NCCL_NET_SIGNAL_OP_INC, 1);
	check("NCCL_NET_SIGNAL_OP_ADD", NCCL_NET_SIGNAL_OP_ADD, 2);
	check("NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET", NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET, 2);
	check("NCCL_NET_DEVICE_GIN_PROXY", NCCL_NET_DEVICE_GIN_PROXY, 2);
}

int main(void)
{
	if (sizeof(void *) != 8 || sizeof(size_t) != 8) {
		printf("skip: the pinned layout is x86-64/LP64's\n");
		return 77;
	}
	props();
	small_types();
	tables();
	signatures();
	rma();
	printf("%d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
