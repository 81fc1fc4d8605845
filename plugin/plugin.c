// SPDX-License-Identifier: MIT
/*
 * ncclNetPlugin_v12: the implementation every older table adapts. Checks what NCCL
 * hands over, calls the core, and translates its -errno once (rn_plugin_result).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"
#include "rn_compiler.h"
#include "rn_dev.h"
#include "rn_log.h"
#include "rn_net.h"
#include "rn_version.h"

/* The transport as the ABI layer calls it (rn_net.h); a unit test may record the calls. */
struct rn_net_ops rn_net = {
	.listen = rn_listen,
	.connect = rn_connect,
	.accept = rn_accept,
	.reg_mr = rn_reg_mr,
	.reg_mr_dmabuf = rn_reg_mr_dmabuf,
	.dereg_mr = rn_dereg_mr,
	.isend = rn_isend,
	.irecv = rn_irecv,
	.iflush = rn_iflush,
	.test = rn_test,
	.close_send = rn_close_send,
	.close_recv = rn_close_recv,
	.close_listen = rn_close_listen,
};

/* The version, readable in the file (roce-doctor-mpi reads it without loading the library). */
__attribute__((used)) static const char rn_version_tag[] = RN_VERSION_TAG RN_VERSION;

/*
 * One per communicator (v11+): its traffic class and its engine reference.
 *
 * NOTE: nothing of ours at offset 0, and nothing inside the context tells whether it is
 * ours. NCCL 2.30.7 hands the net plugin's context to its RMA backend's connect
 * (rma/rma_proxy.cc), and its internal RMA over IB writes its traffic class as an int
 * at offset 0 of whatever it was given (transport/net_ib/gin.cc, connect.cc). A magic
 * kept there was overwritten, every finalize then refused the context, and each
 * communicator leaked it and its engine reference. Contexts are known by their address
 * in a registry instead (ctx_find), and offset 0 is a slot that NCCL may scribble on.
 */
struct rn_plugin_ctx {
	int nccl_scratch;  /* written by NCCL's internal RMA; never read */
	int traffic_class; /* -1 = undefined */
	uint64_t comm_id;
	struct rn_engine *eng;
	struct rn_plugin_ctx *next; /* in its registry bucket */
};

#define CTX_BUCKETS 64
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_plugin_ctx *ctx_set[CTX_BUCKETS];

static unsigned int ctx_bucket(const void *p)
{
	uintptr_t h = (uintptr_t)p >> 4; /* malloc's alignment carries no information */

	return (unsigned int)((h ^ (h >> 7) ^ (h >> 17)) % CTX_BUCKETS);
}

static void ctx_add(struct rn_plugin_ctx *pc)
{
	unsigned int b = ctx_bucket(pc);

	pthread_mutex_lock(&ctx_lock);
	pc->next = ctx_set[b];
	ctx_set[b] = pc;
	pthread_mutex_unlock(&ctx_lock);
}

/* @ctx if it is a live context of ours (taken out of the registry when @take), else NULL. */
static struct rn_plugin_ctx *ctx_find(const void *ctx, int take)
{
	struct rn_plugin_ctx **pp, *pc = NULL;

	if (!ctx)
		return NULL;
	pthread_mutex_lock(&ctx_lock);
	for (pp = &ctx_set[ctx_bucket(ctx)]; *pp; pp = &(*pp)->next)
		if (*pp == ctx) {
			pc = *pp;
			if (take)
				*pp = pc->next;
			break;
		}
	pthread_mutex_unlock(&ctx_lock);
	return pc;
}

static pthread_mutex_t legacy_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_engine *legacy_eng;
static atomic_int picked_abi;

int rn_plugin_abi(void)
{
	return atomic_load(&picked_abi);
}

/*
 * Every init starts here: NCCL's logger first, then, at the first init of the
 * process, one INFO line saying what was loaded and which table NCCL chose, so a
 * user's log answers "which plugin, which version, which ABI" before anything else.
 */
static void plugin_hello(int abi, ncclDebugLogger_t logger)
{
	int none = 0;

	if (logger)
		rn_plugin_log_attach(logger);
	if (atomic_compare_exchange_strong(&picked_abi, &none, abi))
		rn_info(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "nccl-net-roce " RN_VERSION
			       ", NCCL net plugin ABI v%d (ncclNetPlugin_v%d)",
			abi, abi);
}

ncclResult_t rn_plugin_result(int err)
{
	switch (err) {
	case 0:
		return ncclSuccess;
	case -EREMOTEIO:
	case -ECONNRESET:
	case -EPIPE:
		return ncclRemoteError;
	case -EINVAL:
	case -EBADMSG:
		return ncclInternalError;
	case -EMSGSIZE:
		/* NCCL posted a receive smaller than the send: a collective mismatch. */
		return ncclInvalidUsage;
	default:
		return ncclSystemError;
	}
}

static struct rn_plugin_ctx *to_ctx(void *ctx)
{
	return ctx_find(ctx, 0);
}

/* The engine a call works with: the communicator's, else the pre-v11 shared one. */
static struct rn_engine *engine_of(void *ctx)
{
	struct rn_plugin_ctx *pc = to_ctx(ctx);

	return pc ? pc->eng : rn_engine_current();
}

ncclResult_t rn_plugin_ctx_open(void **ctx, uint64_t comm_id, int traffic_class)
{
	struct rn_plugin_ctx *pc;
	int ret;

	if (!ctx)
		return misuse("ctx is NULL");
	*ctx = NULL;
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return ncclSystemError;
	ret = rn_engine_get(&pc->eng);
	if (ret) {
		free(pc);
		return rn_plugin_result(ret);
	}
	pc->comm_id = comm_id;
	pc->traffic_class = traffic_class;
	ctx_add(pc);
	*ctx = pc;
	rn_trace(RN_SUB_INIT | RN_SUB_NET, RN_PFX "init comm %#llx tc %d",
		 (unsigned long long)comm_id, pc->traffic_class);
	return ncclSuccess;
}

int rn_plugin_ctx_ok(void *ctx)
{
	return to_ctx(ctx) != NULL;
}

static ncclResult_t plugin_init(int abi, void **ctx, uint64_t comm_id,
				ncclNetCommConfig_v12_t *config, ncclDebugLogger_t logger)
{
	plugin_hello(abi, logger);
	return rn_plugin_ctx_open(ctx, comm_id, config ? config->trafficClass : -1);
}

ncclResult_t rn_plugin_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_v12_t *config,
			    ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	return plugin_init(12, ctx, comm_id, config, logger);
}

ncclResult_t rn_plugin_init_v11(void **ctx, uint64_t comm_id, ncclNetCommConfig_v12_t *config,
				ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	return plugin_init(11, ctx, comm_id, config, logger);
}

/* NCCL calls this also after a failed init, with whatever init left: NULL. */
ncclResult_t rn_plugin_finalize(void *ctx)
{
	struct rn_plugin_ctx *pc = ctx_find(ctx, 1);

	if (!ctx)
		return ncclSuccess;
	if (!pc) /* a stranger, or finalized twice: nothing of ours to free */
		return misuse("not a context of ours: %p", ctx);
	free(pc);
	rn_engine_put();
	return ncclSuccess;
}

ncclResult_t rn_plugin_init_legacy(int abi, ncclDebugLogger_t logger)
{
	int ret = 0;

	plugin_hello(abi, logger);
	pthread_mutex_lock(&legacy_lock);
	if (!legacy_eng)
		ret = rn_engine_get(&legacy_eng);
	pthread_mutex_unlock(&legacy_lock);
	return rn_plugin_result(ret);
}

ncclResult_t rn_plugin_devices(int *ndev)
{
	struct rn_engine *eng = rn_engine_current();

	if (!ndev)
		return misuse("ndev is NULL");
	*ndev = eng ? rn_engine_ndevs_all(eng) : 0;
	if (!eng)
		return misuse("called before init");
	return ncclSuccess;
}

/* The device NCCL names by @dev (a vNIC's first member), NULL for none. */
static struct rn_dev *dev_of(struct rn_engine *eng, int dev)
{
	struct rn_dev *m[RN_VNIC_MAX];

	return eng && rn_engine_members(eng, dev, m) > 0 ? m[0] : NULL;
}

/*
 * NIC fusion: @ndevs physical devices used as one (NCCL merges the NICs close to the
 * same GPU). With NCCL_IB_MERGE_NICS=0 the user asked for no fusion: refused with a
 * WARN, as a misconfiguration (NCCL does not call this then; another caller might).
 */
ncclResult_t rn_plugin_make_vdevice(int *d, int ndevs, const int *devs)
{
	struct rn_engine *eng = rn_engine_current();
	int ret;

	if (!d || !devs)
		return misuse("d or props is NULL");
	if (!eng)
		return misuse("called before init");
	if (!eng->cfg.merge_nics) {
		rn_warn(RN_SUB_NET,
			RN_PFX "makeVDevice: NCCL_IB_MERGE_NICS=0 disables NIC "
			       "fusion; not fusing %d devices",
			ndevs);
		return ncclInvalidUsage;
	}
	/* bad members (-EINVAL, logged) are the caller's misuse: ncclInternalError */
	ret = rn_vdev_make(eng, devs, ndevs, d);
	return rn_plugin_result(ret);
}

static ncclResult_t make_vdevice_v12(int *d, ncclNetVDeviceProps_v12_t *props)
{
	if (!props)
		return misuse("props is NULL");
	if (props->ndevs < 1 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC_V12)
		return misuse("%d devices; a v12 vNIC holds 1 to %d", props->ndevs,
			      NCCL_NET_MAX_DEVS_PER_NIC_V12);
	return rn_plugin_make_vdevice(d, props->ndevs, props->devs);
}

ncclResult_t rn_plugin_get_properties(int dev, ncclNetProperties_v12_t *props)
{
	struct rn_engine *eng = rn_engine_current();
	struct rn_props p;
	int i;

	if (!props)
		return misuse("props is NULL");
	if (!eng || rn_engine_props(eng, dev, &p))
		return misuse("no device %d (%d devices)", dev, eng ? rn_engine_ndevs_all(eng) : 0);
	memset(props, 0, sizeof(*props));
	props->name = (char *)p.name;
	props->pciPath = (char *)p.pci_path;
	props->guid = p.guid;
	props->ptrSupport = p.ptr_support;
	props->regIsGlobal = 1;
	props->forceFlush = eng->cfg.force_flush;
	props->speed = p.speed_mbps;
	props->port = p.port;
	props->latency = 0;
	props->maxComms = p.max_comms;
	props->maxRecvs = RN_MAX_RECVS;
	props->netDeviceType = NCCL_NET_DEVICE_HOST;
	props->netDeviceVersion = 0;
	props->vProps.ndevs = p.ndevs;
	for (i = 0; i < p.ndevs; i++)
		props->vProps.devs[i] = p.devs[i];
	props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
	props->maxCollBytes = NCCL_MAX_COLLNET_SIZE;
	props->maxMultiRequestSize = 1;
	props->railId = (int16_t)p.rail;
	props->planeId = (int16_t)p.plane;
	return ncclSuccess;
}

ncclResult_t rn_plugin_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
	struct rn_engine *eng = engine_of(ctx);
	struct rn_listen_comm *lc = NULL;
	ncclResult_t res;

	if (!handle || !listen_comm)
		return misuse("handle or listenComm is NULL");
	*listen_comm = NULL;
	if (!dev_of(eng, dev))
		return misuse("no device %d", dev);
	res = rn_plugin_result(rn_net.listen(eng, dev, handle, &lc));
	*listen_comm = lc;
	return res;
}

ncclResult_t rn_plugin_connect_tc(void *ctx, int dev, int traffic_class, void *handle,
				  void **send_comm)
{
	struct rn_engine *eng = engine_of(ctx);
	struct rn_send_comm *sc = NULL;
	ncclResult_t res;

	if (!handle || !send_comm)
		return misuse("handle or sendComm is NULL");
	*send_comm = NULL;
	if (!dev_of(eng, dev))
		return misuse("no device %d", dev);
	res = rn_plugin_result(rn_net.connect(eng, dev, handle, traffic_class, &sc));
	*send_comm = sc;
	return res;
}

ncclResult_t rn_plugin_connect(void *ctx, int dev, void *handle, void **send_comm,
			       ncclNetDeviceHandle_v12_t **send_dev_comm)
{
	struct rn_plugin_ctx *pc = to_ctx(ctx);

	if (!pc)
		return misuse("ctx %p is not from init", ctx);
	return rn_plugin_connect_tc(ctx, dev, pc->traffic_class, handle, send_comm);
}

ncclResult_t rn_plugin_listen_ctx(void *ctx, int dev, void *handle, void **listen_comm)
{
	if (!to_ctx(ctx))
		return misuse("ctx %p is not from init", ctx);
	return rn_plugin_listen(ctx, dev, handle, listen_comm);
}

ncclResult_t rn_plugin_accept(void *listen_comm, void **recv_comm,
			      ncclNetDeviceHandle_v12_t **recv_dev_comm)
{
	struct rn_recv_comm *rc = NULL;
	ncclResult_t res;

	if (!listen_comm || !recv_comm)
		return misuse("listenComm or recvComm is NULL");
	res = rn_plugin_result(rn_net.accept(listen_comm, &rc));
	*recv_comm = rc;
	return res;
}

ncclResult_t rn_plugin_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle)
{
	struct rn_mr *mr = NULL;
	ncclResult_t res;

	if (!comm || !mhandle)
		return misuse("comm or mhandle is NULL");
	if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA)
		return misuse("memory type %d", type);
	res = rn_plugin_result(rn_net.reg_mr(comm, data, size, type, &mr));
	*mhandle = mr;
	return res;
}

ncclResult_t rn_plugin_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
				     int fd, void **mhandle)
{
	struct rn_mr *mr = NULL;
	ncclResult_t res;

	if (!comm || !mhandle)
		return misuse("comm or mhandle is NULL");
	if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA)
		return misuse("memory type %d", type);
	res = rn_plugin_result(rn_net.reg_mr_dmabuf(comm, data, size, type, offset, fd, &mr));
	*mhandle = mr;
	return res;
}

ncclResult_t rn_plugin_dereg_mr(void *comm, void *mhandle)
{
	if (!mhandle)
		return ncclSuccess; /* as net_ib: deregMr(NULL) is no error */
	if (!comm)
		return misuse("comm is NULL");
	return rn_plugin_result(rn_net.dereg_mr(comm, mhandle));
}

ncclResult_t rn_plugin_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
			     void *phandle, void **request)
{
	struct rn_req *req = NULL;
	ncclResult_t res;

	if (!send_comm || !request)
		return misuse("sendComm or request is NULL");
	if (size && !mhandle)
		return misuse("%zu bytes without an mhandle", size);
	res = rn_plugin_result(rn_net.isend(send_comm, data, size, tag, mhandle, &req));
	*request = req;
	return res;
}

ncclResult_t rn_plugin_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			     void **mhandles, void **phandles, void **request)
{
	struct rn_req *req = NULL;
	ncclResult_t res;

	if (!recv_comm || !request)
		return misuse("recvComm or request is NULL");
	if (n < 1 || n > RN_MAX_RECVS)
		return misuse("n=%d outside 1..%d", n, RN_MAX_RECVS);
	if (!data || !sizes || !tags || !mhandles)
		return misuse("NULL buffer array");
	res = rn_plugin_result(rn_net.irecv(recv_comm, n, data, sizes, tags,
					    (struct rn_mr **)mhandles, &req));
	*request = req;
	return res;
}

ncclResult_t rn_plugin_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
			      void **request)
{
	struct rn_req *req = NULL;
	ncclResult_t res;

	if (!recv_comm || !request)
		return misuse("recvComm or request is NULL");
	if (n < 1 || n > RN_MAX_RECVS)
		return misuse("n=%d outside 1..%d", n, RN_MAX_RECVS);
	res = rn_plugin_result(rn_net.iflush(recv_comm, n, data, sizes, (struct rn_mr **)mhandles,
					     &req));
	*request = req;
	return res;
}

ncclResult_t rn_plugin_test(void *request, int *done, int *sizes)
{
	if (!request || !done)
		return misuse("request or done is NULL");
	return rn_plugin_result(rn_net.test(request, done, sizes));
}

/*
 * NULL is no comm, not a misuse: after a failed connect or accept NCCL closes what it
 * holds, NULL included (transport/net.cc, sendProxyFree), as net_ib answers success to
 * it, and as deregMr(NULL). A WARN here would add a second, misleading line to the
 * failure already reported.
 */
ncclResult_t rn_plugin_close_send(void *send_comm)
{
	if (!send_comm)
		return ncclSuccess; /* see below */
	return rn_plugin_result(rn_net.close_send(send_comm));
}

ncclResult_t rn_plugin_close_recv(void *recv_comm)
{
	if (!recv_comm)
		return ncclSuccess; /* see below */
	return rn_plugin_result(rn_net.close_recv(recv_comm));
}

ncclResult_t rn_plugin_close_listen(void *listen_comm)
{
	if (!listen_comm)
		return ncclSuccess; /* see below */
	return rn_plugin_result(rn_net.close_listen(listen_comm));
}

/* NCCL only reads these hints; the transport has no per-op tuning yet. */
ncclResult_t rn_plugin_set_net_attr(void *ctx, ncclNetAttr_v12_t *attr)
{
	return to_ctx(ctx) ? ncclSuccess : misuse("ctx %p is not from init", ctx);
}

__rn_export const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_plugin_init,
	.devices = rn_plugin_devices,
	.getProperties = rn_plugin_get_properties,
	.listen = rn_plugin_listen_ctx,
	.connect = rn_plugin_connect,
	.accept = rn_plugin_accept,
	.regMr = rn_plugin_reg_mr,
	.regMrDmaBuf = rn_plugin_reg_mr_dmabuf,
	.deregMr = rn_plugin_dereg_mr,
	.isend = rn_plugin_isend,
	.irecv = rn_plugin_irecv,
	.iflush = rn_plugin_iflush,
	.test = rn_plugin_test,
	.closeSend = rn_plugin_close_send,
	.closeRecv = rn_plugin_close_recv,
	.closeListen = rn_plugin_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = make_vdevice_v12,
	.finalize = rn_plugin_finalize,
	.setNetAttr = rn_plugin_set_net_attr,
};
