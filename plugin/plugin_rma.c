// SPDX-License-Identifier: MIT
/*
 * ncclRmaPlugin_v14: NCCL 2.30.7 finds it in the net plugin's library and runs its
 * one-sided traffic (the host API's ncclPutSignal/ncclSignal, the GIN proxy) over it
 * instead of its internal RMA over IB. Checks what NCCL hands over, calls src/rma.c,
 * and translates its -errno once (rn_plugin_result).
 */
#include <errno.h>
#include <string.h>

#include "plugin.h"
#include "rn_compiler.h"
#include "rn_dev.h"
#include "rn_log.h"
#include "rn_rma.h"

static ncclResult_t rma_init(void **ctx, uint64_t comm_id, ncclDebugLogger_t logger)
{
	if (logger)
		rn_plugin_log_attach(logger);
	return rn_plugin_ctx_open(ctx, comm_id, -1);
}

/* The physical devices: NCCL's RMA proxy picks its NICs by topology, one group each. */
static ncclResult_t rma_devices(int *ndev)
{
	struct rn_engine *eng = rn_engine_current();

	if (!ndev)
		return misuse("ndev is NULL");
	*ndev = eng ? eng->ndevs : 0;
	return eng ? ncclSuccess : misuse("called before init");
}

static ncclResult_t rma_get_properties(int dev, ncclNetProperties_v12_t *props)
{
	struct rn_engine *eng = rn_engine_current();
	ncclResult_t res;

	if (!eng || dev < 0 || dev >= eng->ndevs)
		return misuse("no device %d (%d)", dev, eng ? eng->ndevs : 0);
	res = rn_plugin_get_properties(dev, props);
	if (res != ncclSuccess)
		return res;
	/* as NCCL's own RMA: the GIN proxy type */
	props->netDeviceType = NCCL_NET_DEVICE_GIN_PROXY;
	/* NCCL keeps NCCL_NET_MAX_REQUESTS x maxRecvs requests in flight per rank */
	props->maxRecvs = RN_RMA_INFLIGHT / NCCL_NET_MAX_REQUESTS;
	return ncclSuccess;
}

static ncclResult_t rma_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
	struct rn_engine *eng = rn_engine_current();
	struct rn_rma_listen *l = NULL;
	ncclResult_t res;

	if (!handle || !listen_comm)
		return misuse("handle or listenComm is NULL");
	*listen_comm = NULL;
	if (!rn_plugin_ctx_ok(ctx))
		return misuse("ctx %p is not from init", ctx);
	if (!eng || dev < 0 || dev >= eng->ndevs)
		return misuse("no device %d", dev);
	res = rn_plugin_result(rn_rma_listen(eng, dev, handle, &l));
	*listen_comm = l;
	return res;
}

/*
 * NCCL 2.30.7 passes its net context here (rma/rma_proxy.cc), which is ours only when the
 * net plugin is: it is not needed, the engine is the process's.
 */
static ncclResult_t rma_connect(void *ctx, void *handles[], int nranks, int rank, void *listen_comm,
				void **coll_comm)
{
	struct rn_engine *eng = rn_engine_current();
	struct rn_rma_coll *g = NULL;
	ncclResult_t res;
	int r;

	if (!coll_comm || !handles || !listen_comm)
		return misuse("handles, listenComm or collComm is NULL");
	*coll_comm = NULL;
	if (!eng)
		return misuse("called before init");
	if (nranks < 1 || nranks > RN_RMA_MAX_RANKS || rank < 0 || rank >= nranks)
		return misuse("rank %d of %d ranks", rank, nranks);
	for (r = 0; r < nranks; r++)
		if (!handles[r])
			return misuse("rank %d's handle is NULL", r);
	res = rn_plugin_result(rn_rma_connect(eng, handles, nranks, rank, listen_comm, &g));
	*coll_comm = g;
	return res;
}

static ncclResult_t rma_create_context(void *coll_comm, ncclRmaConfig_v14_t *config, void **rma_ctx)
{
	struct rn_engine *eng = rn_engine_current();
	struct rn_rma_ctx *x = NULL;
	int tc, forced;
	ncclResult_t res;

	if (!coll_comm || !config || !rma_ctx)
		return misuse("collComm, config or rmaCtx is NULL");
	*rma_ctx = NULL;
	if (!eng)
		return misuse("called before init");
	/* as NCCL's own RMA: NCCL_GIN_IB_TC, else NCCL_IB_TC, else the communicator's */
	forced = eng->cfg.gin_tc >= 0;
	tc = forced ? eng->cfg.gin_tc : config->trafficClass;
	if (tc < 0 || tc > 255) /* NCCL_CONFIG_UNDEF_INT (INT_MIN) when the user set none */
		tc = -1;
	res = rn_plugin_result(rn_rma_ctx_create(coll_comm, config->nContexts, tc, forced,
						 config->rankStride, &x));
	*rma_ctx = x;
	return res;
}

static ncclResult_t rma_reg(void *coll_comm, void *data, size_t size, int type, int fd,
			    uint64_t offset, void **mhandle)
{
	struct rn_rma_mr *m = NULL;
	ncclResult_t res;

	if (!coll_comm || !mhandle || !data || !size)
		return misuse("collComm, data, size or mhandle is NULL");
	*mhandle = NULL;
	if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA)
		return misuse("memory type %d", type);
	res = rn_plugin_result(rn_rma_reg(coll_comm, data, size, type, fd, offset, &m));
	*mhandle = m;
	return res;
}

static ncclResult_t rma_reg_mr_sym(void *coll_comm, void *data, size_t size, int type,
				   uint64_t flags, void **mhandle)
{
	return rma_reg(coll_comm, data, size, type, -1, 0, mhandle);
}

static ncclResult_t rma_reg_mr_sym_dmabuf(void *coll_comm, void *data, size_t size, int type,
					  uint64_t offset, int fd, uint64_t flags, void **mhandle)
{
	if (fd < 0)
		return misuse("DMA-BUF fd %d", fd);
	return rma_reg(coll_comm, data, size, type, fd, offset, mhandle);
}

static ncclResult_t rma_dereg_mr_sym(void *coll_comm, void *mhandle)
{
	if (!coll_comm || !mhandle)
		return misuse("collComm or mhandle is NULL");
	return rn_plugin_result(rn_rma_dereg(coll_comm, mhandle));
}

static ncclResult_t rma_destroy_context(void *rma_ctx)
{
	return rn_plugin_result(rn_rma_ctx_destroy(rma_ctx));
}

static ncclResult_t rma_close_coll(void *coll_comm)
{
	return rn_plugin_result(rn_rma_close(coll_comm));
}

static ncclResult_t rma_close_listen(void *listen_comm)
{
	return rn_plugin_result(rn_rma_close_listen(listen_comm));
}

static ncclResult_t rma_iput(void *rma_ctx, int context, uint64_t src_off, void *src_mh,
			     size_t size, uint64_t dst_off, void *dst_mh, uint32_t rank,
			     void **request)
{
	struct rn_rma_req *q = NULL;
	ncclResult_t res;

	if (!rma_ctx || !src_mh || !dst_mh || !request)
		return misuse("rmaCtx, a memory handle or request is NULL");
	res = rn_plugin_result(rn_rma_put(rma_ctx, context, src_off, src_mh, size, dst_off, dst_mh,
					  (int)rank, NULL, &q));
	*request = q;
	return res;
}

static ncclResult_t rma_iput_signal(void *rma_ctx, int context, uint64_t src_off, void *src_mh,
				    size_t size, uint64_t dst_off, void *dst_mh, uint32_t rank,
				    uint64_t signal_off, void *signal_mh, uint64_t signal_value,
				    uint32_t signal_op, bool strong, void **request)
{
	struct rn_rma_signal sig = { .mr = signal_mh, .off = signal_off };
	struct rn_rma_req *q = NULL;
	ncclResult_t res;

	if (!rma_ctx || !signal_mh || !request || (size && (!src_mh || !dst_mh)))
		return misuse("rmaCtx, a memory handle or request is NULL");
	switch (signal_op) {
	case NCCL_NET_SIGNAL_OP_INC:
		sig.value = 1;
		break;
	case NCCL_NET_SIGNAL_OP_ADD:
		sig.value = signal_value;
		break;
	default:
		return misuse("signal op %u (INC %d or ADD %d)", signal_op, NCCL_NET_SIGNAL_OP_INC,
			      NCCL_NET_SIGNAL_OP_ADD);
	}
	/* strong or not, the signal lands after the data (src/rma.c says why) */
	(void)strong;
	res = rn_plugin_result(rn_rma_put(rma_ctx, context, src_off, src_mh, size, dst_off, dst_mh,
					  (int)rank, &sig, &q));
	*request = q;
	return res;
}

static ncclResult_t rma_iget(void *rma_ctx, int context, uint64_t remote_off, void *remote_mh,
			     size_t size, uint64_t local_off, void *local_mh, uint32_t rank,
			     void **request)
{
	struct rn_rma_req *q = NULL;
	ncclResult_t res;

	if (!rma_ctx || !remote_mh || !local_mh || !request)
		return misuse("rmaCtx, a memory handle or request is NULL");
	res = rn_plugin_result(rn_rma_get(rma_ctx, context, remote_off, remote_mh, size, local_off,
					  local_mh, (int)rank, &q));
	*request = q;
	return res;
}

static ncclResult_t rma_iflush(void *rma_ctx, int context, void *mhandle, uint32_t rank,
			       void **request)
{
	struct rn_rma_req *q = NULL;
	ncclResult_t res;

	if (!rma_ctx || !mhandle || !request)
		return misuse("rmaCtx, mhandle or request is NULL");
	res = rn_plugin_result(rn_rma_flush(rma_ctx, context, mhandle, (int)rank, &q));
	*request = q;
	return res;
}

static ncclResult_t rma_test(void *coll_comm, void *request, int *done)
{
	if (!request || !done)
		return misuse("request or done is NULL");
	return rn_plugin_result(rn_rma_test(request, done));
}

static ncclResult_t rma_progress(void *rma_ctx)
{
	return rn_plugin_result(rn_rma_progress(rma_ctx));
}

static ncclResult_t rma_query_last_error(void *rma_ctx, bool *has_error)
{
	if (!rma_ctx || !has_error)
		return misuse("rmaCtx or hasError is NULL");
	*has_error = rn_rma_last_error(rma_ctx) != 0;
	return ncclSuccess;
}

__rn_export const ncclRma_v14_t ncclRmaPlugin_v14 = {
	.name = RN_PLUGIN_NAME,
	.init = rma_init,
	.devices = rma_devices,
	.getProperties = rma_get_properties,
	.listen = rma_listen,
	.connect = rma_connect,
	.createContext = rma_create_context,
	.regMrSym = rma_reg_mr_sym,
	.regMrSymDmaBuf = rma_reg_mr_sym_dmabuf,
	.deregMrSym = rma_dereg_mr_sym,
	.destroyContext = rma_destroy_context,
	.closeColl = rma_close_coll,
	.closeListen = rma_close_listen,
	.iput = rma_iput,
	.iputSignal = rma_iput_signal,
	.iget = rma_iget,
	.iflush = rma_iflush,
	.test = rma_test,
	.rmaProgress = rma_progress,
	.queryLastError = rma_query_last_error,
	.finalize = rn_plugin_finalize,
};
