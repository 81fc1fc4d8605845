// SPDX-License-Identifier: MIT
/*
 * ncclNetPlugin_v6 .. v11: thin adapters over the v12 implementation. They copy
 * properties into the older layouts, widen int sizes to size_t, and give pre-v11
 * NCCL (init once, no finalize, no ctx) the shared legacy engine reference.
 */
#include <errno.h>
#include <string.h>

#include "plugin.h"
#include "rn_compiler.h"
#include "rn_net.h"

/* ---- properties ---- */

static ncclResult_t get_props_v11(int dev, ncclNetProperties_v11_t *p)
{
	ncclNetProperties_v12_t q;
	ncclResult_t res = rn_plugin_get_properties(dev, &q);
	int i;

	if (res != ncclSuccess)
		return res;
	p->name = q.name;
	p->pciPath = q.pciPath;
	p->guid = q.guid;
	p->ptrSupport = q.ptrSupport;
	p->regIsGlobal = q.regIsGlobal;
	p->forceFlush = q.forceFlush;
	p->speed = q.speed;
	p->port = q.port;
	p->latency = q.latency;
	p->maxComms = q.maxComms;
	p->maxRecvs = q.maxRecvs;
	p->netDeviceType = q.netDeviceType;
	p->netDeviceVersion = q.netDeviceVersion;
	/* v12 allows 8 devices per vNIC, v9-v11 only 4 (their makeVDevice takes no more) */
	p->vProps.ndevs = RN_MIN(q.vProps.ndevs, NCCL_NET_MAX_DEVS_PER_NIC_V9);
	for (i = 0; i < p->vProps.ndevs; i++)
		p->vProps.devs[i] = q.vProps.devs[i];
	p->maxP2pBytes = q.maxP2pBytes;
	p->maxCollBytes = q.maxCollBytes;
	p->maxMultiRequestSize = q.maxMultiRequestSize;
	return ncclSuccess;
}

static ncclResult_t get_props_v9(int dev, ncclNetProperties_v9_t *p)
{
	ncclNetProperties_v11_t q;
	ncclResult_t res = get_props_v11(dev, &q);

	if (res != ncclSuccess)
		return res;
	/* v9/v10 is v11 without maxMultiRequestSize at the end */
	memcpy(p, &q, sizeof(*p));
	return ncclSuccess;
}

static ncclResult_t get_props_v8(int dev, ncclNetProperties_v8_t *p)
{
	ncclNetProperties_v9_t q;
	ncclResult_t res = get_props_v9(dev, &q);

	if (res != ncclSuccess)
		return res;
	p->name = q.name;
	p->pciPath = q.pciPath;
	p->guid = q.guid;
	p->ptrSupport = q.ptrSupport;
	p->regIsGlobal = q.regIsGlobal;
	p->speed = q.speed;
	p->port = q.port;
	p->latency = q.latency;
	p->maxComms = q.maxComms;
	p->maxRecvs = q.maxRecvs;
	p->netDeviceType = q.netDeviceType;
	p->netDeviceVersion = q.netDeviceVersion;
	return ncclSuccess;
}

static ncclResult_t get_props_v7(int dev, ncclNetProperties_v7_t *p)
{
	ncclNetProperties_v8_t q;
	ncclResult_t res = get_props_v8(dev, &q);

	if (res != ncclSuccess)
		return res;
	p->name = q.name;
	p->pciPath = q.pciPath;
	p->guid = q.guid;
	p->ptrSupport = q.ptrSupport;
	p->speed = q.speed;
	p->port = q.port;
	p->latency = q.latency;
	p->maxComms = q.maxComms;
	p->maxRecvs = q.maxRecvs;
	p->netDeviceType = q.netDeviceType;
	p->netDeviceVersion = q.netDeviceVersion;
	return ncclSuccess;
}

static ncclResult_t get_props_v6(int dev, ncclNetProperties_v6_t *p)
{
	ncclNetProperties_v7_t q;
	ncclResult_t res = get_props_v7(dev, &q);

	if (res != ncclSuccess)
		return res;
	/* v6 is v7 without the device-offload fields at the end */
	memcpy(p, &q, sizeof(*p));
	return ncclSuccess;
}

/* ---- init / listen / connect shapes ---- */

/* One init per table, so the plugin can say which one NCCL chose. */
static ncclResult_t init_v6(ncclDebugLogger_t logger)
{
	return rn_plugin_init_legacy(6, logger);
}

static ncclResult_t init_v7(ncclDebugLogger_t logger)
{
	return rn_plugin_init_legacy(7, logger);
}

static ncclResult_t init_v8(ncclDebugLogger_t logger)
{
	return rn_plugin_init_legacy(8, logger);
}

static ncclResult_t init_v9(ncclDebugLogger_t logger)
{
	return rn_plugin_init_legacy(9, logger);
}

static ncclResult_t init_v10(ncclDebugLogger_t logger, ncclProfilerCallback_t prof)
{
	return rn_plugin_init_legacy(10, logger);
}

static ncclResult_t listen_legacy(int dev, void *handle, void **listen_comm)
{
	return rn_plugin_listen(NULL, dev, handle, listen_comm);
}

static ncclResult_t connect_v6(int dev, void *handle, void **send_comm)
{
	return rn_plugin_connect_tc(NULL, dev, -1, handle, send_comm);
}

static ncclResult_t connect_v7(int dev, void *handle, void **send_comm,
			       ncclNetDeviceHandle_v7_t **send_dev_comm)
{
	return rn_plugin_connect_tc(NULL, dev, -1, handle, send_comm);
}

static ncclResult_t connect_v10(int dev, ncclNetCommConfig_v10_t *config, void *handle,
				void **send_comm, ncclNetDeviceHandle_v10_t **send_dev_comm)
{
	return rn_plugin_connect_tc(NULL, dev, config ? config->trafficClass : -1, handle,
				    send_comm);
}

static ncclResult_t accept_v6(void *listen_comm, void **recv_comm)
{
	return rn_plugin_accept(listen_comm, recv_comm, NULL);
}

/* ---- int sizes (v6-v8) ---- */

static ncclResult_t reg_mr_int(void *comm, void *data, int size, int type, void **mhandle)
{
	if (size < 0)
		return rn_plugin_result(-EINVAL);
	return rn_plugin_reg_mr(comm, data, (size_t)size, type, mhandle);
}

static ncclResult_t isend_int(void *send_comm, void *data, int size, int tag, void *mhandle,
			      void **request)
{
	if (size < 0)
		return rn_plugin_result(-EINVAL);
	return rn_plugin_isend(send_comm, data, (size_t)size, tag, mhandle, NULL, request);
}

static ncclResult_t irecv_int(void *recv_comm, int n, void **data, int *sizes, int *tags,
			      void **mhandles, void **request)
{
	size_t wide[RN_MAX_RECVS];
	int i;

	if (n < 1 || n > RN_MAX_RECVS || !sizes)
		return rn_plugin_irecv(recv_comm, n, data, NULL, tags, mhandles, NULL, request);
	for (i = 0; i < n; i++)
		wide[i] = sizes[i] < 0 ? 0 : (size_t)sizes[i];
	return rn_plugin_irecv(recv_comm, n, data, wide, tags, mhandles, NULL, request);
}

/* ---- size_t sizes without profiler handles (v9) ---- */

static ncclResult_t isend_v9(void *send_comm, void *data, size_t size, int tag, void *mhandle,
			     void **request)
{
	return rn_plugin_isend(send_comm, data, size, tag, mhandle, NULL, request);
}

static ncclResult_t irecv_v9(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
			     void **mhandles, void **request)
{
	return rn_plugin_irecv(recv_comm, n, data, sizes, tags, mhandles, NULL, request);
}

/* ---- NIC fusion: v9-v11 props hold 4 devices ---- */

static ncclResult_t make_vdevice_v9(int *d, ncclNetVDeviceProps_v9_t *props)
{
	if (!props || props->ndevs < 1 || props->ndevs > NCCL_NET_MAX_DEVS_PER_NIC_V9) {
		rn_warn(RN_SUB_NET, RN_PFX "makeVDevice: %d devices; a v9-v11 vNIC holds 1 to %d",
			props ? props->ndevs : -1, NCCL_NET_MAX_DEVS_PER_NIC_V9);
		return ncclInternalError;
	}
	return rn_plugin_make_vdevice(d, props->ndevs, props->devs);
}

/* ---- the tables ---- */

/* v11 differs from v12 only in the property and vDevice layouts. */
__rn_export const ncclNet_v11_t ncclNetPlugin_v11 = {
	.name = RN_PLUGIN_NAME,
	.init = rn_plugin_init_v11,
	.devices = rn_plugin_devices,
	.getProperties = get_props_v11,
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
	.makeVDevice = make_vdevice_v9,
	.finalize = rn_plugin_finalize,
	.setNetAttr = rn_plugin_set_net_attr,
};

__rn_export const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = RN_PLUGIN_NAME,
	.init = init_v10,
	.devices = rn_plugin_devices,
	.getProperties = get_props_v9,
	.listen = listen_legacy,
	.connect = connect_v10,
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
	.makeVDevice = make_vdevice_v9,
};

__rn_export const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = RN_PLUGIN_NAME,
	.init = init_v9,
	.devices = rn_plugin_devices,
	.getProperties = get_props_v9,
	.listen = listen_legacy,
	.connect = connect_v7,
	.accept = rn_plugin_accept,
	.regMr = rn_plugin_reg_mr,
	.regMrDmaBuf = rn_plugin_reg_mr_dmabuf,
	.deregMr = rn_plugin_dereg_mr,
	.isend = isend_v9,
	.irecv = irecv_v9,
	.iflush = rn_plugin_iflush,
	.test = rn_plugin_test,
	.closeSend = rn_plugin_close_send,
	.closeRecv = rn_plugin_close_recv,
	.closeListen = rn_plugin_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
	.makeVDevice = make_vdevice_v9,
};

__rn_export const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = RN_PLUGIN_NAME,
	.init = init_v8,
	.devices = rn_plugin_devices,
	.getProperties = get_props_v8,
	.listen = listen_legacy,
	.connect = connect_v7,
	.accept = rn_plugin_accept,
	.regMr = rn_plugin_reg_mr,
	.regMrDmaBuf = rn_plugin_reg_mr_dmabuf,
	.deregMr = rn_plugin_dereg_mr,
	.isend = isend_int,
	.irecv = irecv_int,
	.iflush = rn_plugin_iflush,
	.test = rn_plugin_test,
	.closeSend = rn_plugin_close_send,
	.closeRecv = rn_plugin_close_recv,
	.closeListen = rn_plugin_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
};

__rn_export const ncclNet_v7_t ncclNetPlugin_v7 = {
	.name = RN_PLUGIN_NAME,
	.init = init_v7,
	.devices = rn_plugin_devices,
	.getProperties = get_props_v7,
	.listen = listen_legacy,
	.connect = connect_v7,
	.accept = rn_plugin_accept,
	.regMr = reg_mr_int,
	.regMrDmaBuf = rn_plugin_reg_mr_dmabuf,
	.deregMr = rn_plugin_dereg_mr,
	.isend = isend_int,
	.irecv = irecv_int,
	.iflush = rn_plugin_iflush,
	.test = rn_plugin_test,
	.closeSend = rn_plugin_close_send,
	.closeRecv = rn_plugin_close_recv,
	.closeListen = rn_plugin_close_listen,
	.getDeviceMr = NULL,
	.irecvConsumed = NULL,
};

__rn_export const ncclNet_v6_t ncclNetPlugin_v6 = {
	.name = RN_PLUGIN_NAME,
	.init = init_v6,
	.devices = rn_plugin_devices,
	.getProperties = get_props_v6,
	.listen = listen_legacy,
	.connect = connect_v6,
	.accept = accept_v6,
	.regMr = reg_mr_int,
	.regMrDmaBuf = rn_plugin_reg_mr_dmabuf,
	.deregMr = rn_plugin_dereg_mr,
	.isend = isend_int,
	.irecv = irecv_int,
	.iflush = rn_plugin_iflush,
	.test = rn_plugin_test,
	.closeSend = rn_plugin_close_send,
	.closeRecv = rn_plugin_close_recv,
	.closeListen = rn_plugin_close_listen,
};
