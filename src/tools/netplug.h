/* SPDX-License-Identifier: MIT */
/*
 * Load an NCCL net plugin exactly as NCCL 2.28/2.30 does and call it through one
 * version-independent interface (the tools act as NCCL; they never link the core).
 * Properties come back in the v12 layout whatever version was loaded; fields an
 * older version lacks get NCCL's own defaults for them.
 */
#ifndef RN_NETPLUG_H
#define RN_NETPLUG_H

#include <stddef.h>
#include <stdint.h>

#include "nccl/net_abi.h"

struct netplug {
	void *dl;
	char lib[256];     /* the name dlopen() accepted */
	int version;       /* 6..12 */
	const char *name;  /* the table's name ("RoCE") */
	const void *table;
	int legacy_inited; /* pre-v11: init once per process */
};

/*
 * @spec is an NCCL_NET_PLUGIN value (comma list; NULL = "libnccl-net.so"). Tries
 * ncclNetPlugin_v<max_version> down to _v6 in each library, first hit wins. Logs
 * NCCL's lines through @log. 0, or -ENOENT when no library/symbol was found.
 */
int netplug_open(struct netplug *np, const char *spec, int max_version, ncclDebugLogger_t log);
void netplug_close(struct netplug *np);

/* Per communicator. Pre-v11 plugins are initialised once and get *ctx = NULL. */
ncclResult_t netplug_init(struct netplug *np, void **ctx, uint64_t comm_id, int traffic_class,
			  ncclDebugLogger_t log);
/* v11+: finalize(ctx), as NCCL also does after a failed init. Older: nothing to do. */
ncclResult_t netplug_finalize(struct netplug *np, void *ctx);

ncclResult_t netplug_devices(struct netplug *np, int *ndev);
/* makeVDevice (v9+; ncclInvalidUsage before v9 or when the plugin has none). */
ncclResult_t netplug_make_vdevice(struct netplug *np, int *d, int n, const int *devs);
ncclResult_t netplug_get_properties(struct netplug *np, int dev, ncclNetProperties_v12_t *props);

ncclResult_t netplug_listen(struct netplug *np, void *ctx, int dev, void *handle, void **lc);
ncclResult_t netplug_connect(struct netplug *np, void *ctx, int dev, int traffic_class,
			     void *handle, void **sc);
ncclResult_t netplug_accept(struct netplug *np, void *lc, void **rc);
ncclResult_t netplug_reg_mr(struct netplug *np, void *comm, void *data, size_t size, int type,
			    void **mh);
ncclResult_t netplug_dereg_mr(struct netplug *np, void *comm, void *mh);
ncclResult_t netplug_isend(struct netplug *np, void *sc, void *data, size_t size, int tag, void *mh,
			   void **req);
ncclResult_t netplug_irecv(struct netplug *np, void *rc, int n, void **data, size_t *sizes,
			   int *tags, void **mhs, void **req);
ncclResult_t netplug_test(struct netplug *np, void *req, int *done, int *sizes);
ncclResult_t netplug_close_send(struct netplug *np, void *sc);
ncclResult_t netplug_close_recv(struct netplug *np, void *rc);
ncclResult_t netplug_close_listen(struct netplug *np, void *lc);

const char *netplug_result_str(ncclResult_t res);

#endif /* RN_NETPLUG_H */
