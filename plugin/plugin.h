/* SPDX-License-Identifier: MIT */
/*
 * What plugin.c (the v12 implementation), plugin_compat.c (v6-v11 adapters) and
 * plugin_log.c share. Nothing here is exported: only the ncclNetPlugin_vN tables are.
 */
#ifndef RN_PLUGIN_H
#define RN_PLUGIN_H

#include "nccl/net_abi.h"
#include "nccl/rma_abi.h"
#include "rn_log.h"

#define RN_PLUGIN_NAME "RoCE"

/* The tables; plugin.map and -fvisibility keep only these visible. */
extern const ncclNet_v6_t ncclNetPlugin_v6;
extern const ncclNet_v7_t ncclNetPlugin_v7;
extern const ncclNet_v8_t ncclNetPlugin_v8;
extern const ncclNet_v9_t ncclNetPlugin_v9;
extern const ncclNet_v10_t ncclNetPlugin_v10;
extern const ncclNet_v11_t ncclNetPlugin_v11;
extern const ncclNet_v12_t ncclNetPlugin_v12;
/* NCCL 2.30.7's RMA backend (plugin_rma.c), found in the net plugin's library. */
extern const ncclRma_v14_t ncclRmaPlugin_v14;

/* NCCL handed us what it must not (a NULL, an index out of range): said, and its error. */
#define misuse(fmt, ...) \
	({ \
		rn_warn(RN_SUB_NET, RN_PFX "%s: " fmt, __func__, ##__VA_ARGS__); \
		ncclInternalError; \
	})

/* The one translation of the core's -errno into NCCL's result codes (see rn_net.h). */
ncclResult_t rn_plugin_result(int err);

/* Route rn_log to NCCL's logger (NULL: back to stderr). */
void rn_plugin_log_attach(ncclDebugLogger_t logger);
/* The NCCL subsystem flags a line of @level and rn_log subsystems @sub goes out with:
 * NCCL_ALL for every WARN (shown under any NCCL_DEBUG_SUBSYS), else its own. */
unsigned long rn_plugin_log_flags(enum rn_log_level level, unsigned long sub);

/*
 * Which ncclNetPlugin_vN NCCL picked, as told by the init it called (0 before any);
 * the first init logs it with the plugin's version, once per process.
 */
int rn_plugin_abi(void);

/*
 * Pre-v11 NCCL calls init once per process and never finalize: those versions share
 * one engine reference taken by the first init. Their listen/connect use it.
 */
ncclResult_t rn_plugin_init_legacy(int abi, ncclDebugLogger_t logger);

/* v12 calls, reused by the adapters. @ctx NULL = the legacy reference. */
ncclResult_t rn_plugin_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v12_t *config,
			    ncclDebugLogger_t logger, ncclProfilerCallback_t prof);
/* v11's init: v12's, told apart only to log which table NCCL chose. */
ncclResult_t rn_plugin_init_v11(void **ctx, uint64_t comm_id, ncclNetCommConfig_v12_t *config,
				ncclDebugLogger_t logger, ncclProfilerCallback_t prof);
ncclResult_t rn_plugin_finalize(void *ctx);
/*
 * A communicator's context (an engine reference, in the registry finalize looks in):
 * what the net's init and the RMA backend's init hand NCCL. rn_plugin_ctx_ok: 1 for a
 * live one of ours.
 */
ncclResult_t rn_plugin_ctx_open(void **ctx, uint64_t comm_id, int traffic_class);
int rn_plugin_ctx_ok(void *ctx);
ncclResult_t rn_plugin_listen_ctx(void *ctx, int dev, void *handle, void **listen_comm);
ncclResult_t rn_plugin_connect(void *ctx, int dev, void *handle, void **send_comm,
			       ncclNetDeviceHandle_v12_t **send_dev_comm);
ncclResult_t rn_plugin_set_net_attr(void *ctx, ncclNetAttr_v12_t *attr);
ncclResult_t rn_plugin_devices(int *ndev);
ncclResult_t rn_plugin_get_properties(int dev, ncclNetProperties_v12_t *props);
/* makeVDevice of every version, once the member list is out of its props. */
ncclResult_t rn_plugin_make_vdevice(int *d, int ndevs, const int *devs);
ncclResult_t rn_plugin_listen(void *ctx, int dev, void *handle, void **listen_comm);
ncclResult_t rn_plugin_connect_tc(void *ctx, int dev, int traffic_class, void *handle,
				  void **send_comm);
ncclResult_t rn_plugin_accept(void *listen_comm, void **recv_comm,
			      ncclNetDeviceHandle_v12_t **recv_dev_comm);
ncclResult_t rn_plugin_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
ncclResult_t rn_plugin_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
				     int fd, void **mhandle);
ncclResult_t rn_plugin_dereg_mr(void *comm, void *mhandle);
ncclResult_t rn_plugin_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
			     void *phandle, void **request);
ncclResult_t rn_plugin_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			     void **mhandles, void **phandles, void **request);
ncclResult_t rn_plugin_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
			      void **request);
ncclResult_t rn_plugin_test(void *request, int *done, int *sizes);
ncclResult_t rn_plugin_close_send(void *send_comm);
ncclResult_t rn_plugin_close_recv(void *recv_comm);
ncclResult_t rn_plugin_close_listen(void *listen_comm);

#endif /* RN_PLUGIN_H */
