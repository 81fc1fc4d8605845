// SPDX-License-Identifier: MIT
/*
 * The plugin loader and version adapter of the tools (see netplug.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "netplug.h"

#define V(n) ((const ncclNet_v##n##_t *)np->table)

/* Every version's table starts with the same fields up to closeListen. */
#define CALL_ANY(field, ...) \
	switch (np->version) { \
	case 12: \
		return V(12)->field(__VA_ARGS__); \
	case 11: \
		return V(11)->field(__VA_ARGS__); \
	case 10: \
		return V(10)->field(__VA_ARGS__); \
	case 9: \
		return V(9)->field(__VA_ARGS__); \
	case 8: \
		return V(8)->field(__VA_ARGS__); \
	case 7: \
		return V(7)->field(__VA_ARGS__); \
	case 6: \
		return V(6)->field(__VA_ARGS__); \
	} \
	return ncclInternalError

const char *netplug_result_str(ncclResult_t res)
{
	static const char *const names[] = {
		"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
		"ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
		"ncclRemoteError",   "ncclInProgress",
	};

	return (unsigned)res < sizeof(names) / sizeof(names[0]) ? names[res] : "ncclUnknownResult";
}

static int try_symbols(struct netplug *np, int max_version, ncclDebugLogger_t log)
{
	int v;

	for (v = max_version; v >= 6; v--) {
		char sym[32];

		snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
		np->table = dlsym(np->dl, sym);
		if (np->table) {
			np->version = v;
			/* name is every table's first field */
			np->name = *(const char *const *)np->table;
			return 0;
		}
	}
	return -ENOENT;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/* NCCL: dlopen(name); failing that, libnccl-net-<name>.so for a bare short name. */
static void *open_one(const char *name, char *used, size_t len, ncclDebugLogger_t log)
{
	void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	snprintf(used, len, "%s", name);
	if (dl)
		return dl;
	log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__, "Could not find: %s. %s", name,
	    dlerror());
	if (strchr(name, '/') || (!strncmp(name, "lib", 3) && ends_with(name, ".so")))
		return NULL;
	snprintf(used, len, "libnccl-net-%s.so", name);
	dl = dlopen(used, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__,
		    "Could not find: %s. %s", used, dlerror());
	return dl;
}

/*
 * As NCCL's bootstrap (ncclOsSetFilesLimit) before any plugin runs: the soft limit on open
 * files up to the hard one. A comm holds its side channel's socket and a listen comm one
 * more, so 1,024 connections need more than the usual soft limit of 1,024.
 */
static void files_limit_raise(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int netplug_open(struct netplug *np, const char *spec, int max_version, ncclDebugLogger_t log)
{
	char list[1024], *tok, *save = NULL;

	memset(np, 0, sizeof(*np));
	files_limit_raise();
	snprintf(list, sizeof(list), "%s", spec && *spec ? spec : "libnccl-net.so");
	if (!strcasecmp(list, "none"))
		return -ENOENT;
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		np->dl = open_one(tok, np->lib, sizeof(np->lib), log);
		if (!np->dl)
			continue;
		if (!try_symbols(np, max_version, log)) {
			log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__,
			    "NET/Plugin: Loaded net plugin %s (v%d)", np->name, np->version);
			return 0;
		}
		log(NCCL_LOG_INFO, NCCL_INIT | NCCL_NET, __FILE__, __LINE__,
		    "NET/Plugin: External network plugin %s is unsupported", np->lib);
		dlclose(np->dl);
		np->dl = NULL;
	}
	return -ENOENT;
}

void netplug_close(struct netplug *np)
{
	if (np->dl)
		dlclose(np->dl);
	memset(np, 0, sizeof(*np));
}

ncclResult_t netplug_init(struct netplug *np, void **ctx, uint64_t comm_id, int traffic_class,
			  ncclDebugLogger_t log)
{
	ncclNetCommConfig_v12_t cfg = { .trafficClass = traffic_class };
	ncclResult_t res;

	*ctx = NULL;
	if (np->version >= 11)
		return np->version == 12 ? V(12)->init(ctx, comm_id, &cfg, log, NULL) :
					   V(11)->init(ctx, comm_id, &cfg, log, NULL);
	/* NCCL 2.28 wraps older plugins this way: init once, refcounted by the core. */
	if (np->legacy_inited)
		return ncclSuccess;
	if (np->version == 10)
		res = V(10)->init(log, NULL);
	else
		res = V(6)->init(log); /* same shape v6..v9 */
	if (res == ncclSuccess)
		np->legacy_inited = 1;
	return res;
}

ncclResult_t netplug_finalize(struct netplug *np, void *ctx)
{
	if (np->version == 12)
		return V(12)->finalize(ctx);
	if (np->version == 11)
		return V(11)->finalize(ctx);
	return ncclSuccess;
}

ncclResult_t netplug_devices(struct netplug *np, int *ndev)
{
	CALL_ANY(devices, ndev);
}

ncclResult_t netplug_make_vdevice(struct netplug *np, int *d, int n, const int *devs)
{
	int i;

	if (np->version >= 12 && V(12)->makeVDevice) {
		ncclNetVDeviceProps_v12_t p = { .ndevs = n };

		if (n < 0 || n > NCCL_NET_MAX_DEVS_PER_NIC_V12)
			return ncclInvalidArgument;
		for (i = 0; i < n; i++)
			p.devs[i] = devs[i];
		return V(12)->makeVDevice(d, &p);
	}
	/* v9, v10 and v11 share the 4-device props and the field's place */
	if (np->version >= 9 && V(9)->makeVDevice) {
		ncclNetVDeviceProps_v9_t p = { .ndevs = n };

		if (n < 0 || n > NCCL_NET_MAX_DEVS_PER_NIC_V9)
			return ncclInvalidArgument;
		for (i = 0; i < n; i++)
			p.devs[i] = devs[i];
		return V(9)->makeVDevice(d, &p);
	}
	return ncclInvalidUsage; /* no makeVDevice before v9, or a plugin without one */
}

ncclResult_t netplug_get_properties(struct netplug *np, int dev, ncclNetProperties_v12_t *p)
{
	ncclResult_t res;
	int i;

	memset(p, 0, sizeof(*p));
	p->vProps.ndevs = 1;
	p->vProps.devs[0] = dev;
	p->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
	p->maxCollBytes = NCCL_MAX_COLLNET_SIZE;
	p->maxMultiRequestSize = 1;
	p->railId = -1;
	p->planeId = -1;
	switch (np->version) {
	case 12:
		return V(12)->getProperties(dev, p);
	case 11: {
		ncclNetProperties_v11_t q;

		res = V(11)->getProperties(dev, &q);
		memcpy(p, &q, offsetof(ncclNetProperties_v11_t, vProps));
		p->vProps.ndevs = q.vProps.ndevs;
		for (i = 0; i < q.vProps.ndevs && i < NCCL_NET_MAX_DEVS_PER_NIC_V9; i++)
			p->vProps.devs[i] = q.vProps.devs[i];
		p->maxP2pBytes = q.maxP2pBytes;
		p->maxCollBytes = q.maxCollBytes;
		p->maxMultiRequestSize = q.maxMultiRequestSize;
		return res;
	}
	case 10:
	case 9: {
		ncclNetProperties_v9_t q;

		res = V(9)->getProperties(dev, &q);
		memcpy(p, &q, offsetof(ncclNetProperties_v9_t, vProps));
		p->vProps.ndevs = q.vProps.ndevs;
		for (i = 0; i < q.vProps.ndevs && i < NCCL_NET_MAX_DEVS_PER_NIC_V9; i++)
			p->vProps.devs[i] = q.vProps.devs[i];
		p->maxP2pBytes = q.maxP2pBytes;
		p->maxCollBytes = q.maxCollBytes;
		return res;
	}
	case 8: {
		ncclNetProperties_v8_t q;

		res = V(8)->getProperties(dev, &q);
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
		return res;
	}
	case 7:
	case 6: {
		ncclNetProperties_v7_t q = { 0 };

		/* v6 is v7's prefix */
		res = np->version == 7 ? V(7)->getProperties(dev, &q) :
					 V(6)->getProperties(dev, (ncclNetProperties_v6_t *)&q);
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
		return res;
	}
	}
	return ncclInternalError;
}

ncclResult_t netplug_listen(struct netplug *np, void *ctx, int dev, void *handle, void **lc)
{
	switch (np->version) {
	case 12:
		return V(12)->listen(ctx, dev, handle, lc);
	case 11:
		return V(11)->listen(ctx, dev, handle, lc);
	default:
		return V(6)->listen(dev, handle, lc); /* same shape v6..v10 */
	}
}

ncclResult_t netplug_connect(struct netplug *np, void *ctx, int dev, int traffic_class,
			     void *handle, void **sc)
{
	ncclNetDeviceHandle_v7_t *dev_comm = NULL;
	ncclNetCommConfig_v10_t cfg = { .trafficClass = traffic_class };

	switch (np->version) {
	case 12:
		return V(12)->connect(ctx, dev, handle, sc, &dev_comm);
	case 11:
		return V(11)->connect(ctx, dev, handle, sc, &dev_comm);
	case 10:
		return V(10)->connect(dev, &cfg, handle, sc, &dev_comm);
	case 9:
	case 8:
	case 7:
		return V(7)->connect(dev, handle, sc, &dev_comm); /* same shape v7..v9 */
	default:
		return V(6)->connect(dev, handle, sc);
	}
}

ncclResult_t netplug_accept(struct netplug *np, void *lc, void **rc)
{
	ncclNetDeviceHandle_v7_t *dev_comm = NULL;

	if (np->version == 6)
		return V(6)->accept(lc, rc);
	return V(7)->accept(lc, rc, &dev_comm); /* same shape v7..v12 */
}

ncclResult_t netplug_reg_mr(struct netplug *np, void *comm, void *data, size_t size, int type,
			    void **mh)
{
	if (np->version <= 7) {
		if (size > INT32_MAX)
			return ncclInvalidArgument;
		return V(6)->regMr(comm, data, (int)size, type, mh);
	}
	return V(8)->regMr(comm, data, size, type, mh); /* same shape v8..v12 */
}

ncclResult_t netplug_dereg_mr(struct netplug *np, void *comm, void *mh)
{
	CALL_ANY(deregMr, comm, mh);
}

ncclResult_t netplug_isend(struct netplug *np, void *sc, void *data, size_t size, int tag, void *mh,
			   void **req)
{
	if (np->version >= 10)
		return V(10)->isend(sc, data, size, tag, mh, NULL, req); /* same shape v10..v12 */
	if (np->version == 9)
		return V(9)->isend(sc, data, size, tag, mh, req);
	if (size > INT32_MAX)
		return ncclInvalidArgument;
	return V(6)->isend(sc, data, (int)size, tag, mh, req);
}

ncclResult_t netplug_irecv(struct netplug *np, void *rc, int n, void **data, size_t *sizes,
			   int *tags, void **mhs, void **req)
{
	void *phandles[NCCL_NET_MAX_REQUESTS] = { 0 };
	int narrow[NCCL_NET_MAX_REQUESTS];
	int i;

	if (np->version >= 10)
		return V(10)->irecv(rc, n, data, sizes, tags, mhs, phandles, req);
	if (np->version == 9)
		return V(9)->irecv(rc, n, data, sizes, tags, mhs, req);
	if (n < 0 || n > NCCL_NET_MAX_REQUESTS)
		return ncclInvalidArgument;
	for (i = 0; i < n; i++) {
		if (sizes[i] > INT32_MAX)
			return ncclInvalidArgument;
		narrow[i] = (int)sizes[i];
	}
	return V(6)->irecv(rc, n, data, narrow, tags, mhs, req);
}

ncclResult_t netplug_test(struct netplug *np, void *req, int *done, int *sizes)
{
	CALL_ANY(test, req, done, sizes);
}

ncclResult_t netplug_close_send(struct netplug *np, void *sc)
{
	CALL_ANY(closeSend, sc);
}

ncclResult_t netplug_close_recv(struct netplug *np, void *rc)
{
	CALL_ANY(closeRecv, rc);
}

ncclResult_t netplug_close_listen(struct netplug *np, void *lc)
{
	CALL_ANY(closeListen, lc);
}
