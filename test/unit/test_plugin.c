// SPDX-License-Identifier: MIT
/*
 * The NCCL-facing tables v6..v12 over fake verbs, the scripted route core and the
 * recording transport: lifecycle as NCCL drives it, properties in every layout,
 * argument checks, the -errno -> ncclResult_t translation, the logger bridge.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "double_net.c"
#include "double_path.c"
#include "fake_verbs.h"
#include "fixture_sysfs.h"
#include "plugin.h"
#include "rn_log.h"

static struct {
	int n, warns;
	ncclDebugLogLevel level;
	unsigned long flags;
	char msg[1024];
} logged;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		   const char *fmt, ...)
{
	va_list ap;

	logged.n++;
	logged.warns += level == NCCL_LOG_WARN;
	logged.level = level;
	logged.flags = flags;
	va_start(ap, fmt);
	vsnprintf(logged.msg, sizeof(logged.msg), fmt, ap);
	va_end(ap);
}

static struct fake_dev devs[] = {
	{ .name = "mlx5_0",
	  .guid = 0x1234,
	  .nports = 1,
	  .dmabuf = 1,
	  .ports = { { .active_speed = 32, .active_width = 2 } } },
	{ .name = "rxe0", .guid = 0x5678, .nports = 1 },
};

static int setup(void **state)
{
	fixture_sysfs_create();
	fixture_sysfs_pci("mlx5_0", "0000:3b:00.0");
	double_path_reset();
	double_net_reset();
	memset(&logged, 0, sizeof(logged));
	unsetenv("NCCL_NET_FORCE_FLUSH");
	fake_verbs_install(devs, 2);
	return 0;
}

static int teardown(void **state)
{
	assert_null(rn_engine_current());
	assert_int_equal(rn_engine_unload(), 0); /* as dlclose */
	assert_int_equal(fake_verbs_uninstall(), 0);
	fixture_sysfs_destroy();
	rn_plugin_log_attach(NULL);
	return 0;
}

/* The legacy reference stays: only the fixture goes. */
static int teardown_legacy(void **state)
{
	fixture_sysfs_destroy();
	rn_plugin_log_attach(NULL);
	return 0;
}

static void test_two_comms_lifecycle(void **state)
{
	ncclNetCommConfig_v12_t cfg = { .trafficClass = 106 };
	void *a = NULL, *b = NULL;
	int n = 0;

	assert_int_equal(ncclNetPlugin_v12.init(&a, 1, &cfg, logger, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.init(&b, 2, NULL, logger, NULL), ncclSuccess);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	assert_int_equal(double_path_snapshots, 1);
	assert_int_equal(ncclNetPlugin_v12.devices(&n), ncclSuccess);
	assert_int_equal(n, 2);
	assert_int_equal(ncclNetPlugin_v12.finalize(a), ncclSuccess);
	assert_non_null(rn_engine_current());
	assert_int_equal(ncclNetPlugin_v12.devices(&n), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.finalize(b), ncclSuccess);
	assert_null(rn_engine_current());
	assert_int_equal(logged.warns, 0);
	/* the config went to the logger through NCCL's callback */
	assert_true(logged.n > 0);
}

static void test_finalize_null_and_failed_init(void **state)
{
	void *ctx = (void *)0x1;

	assert_int_equal(ncclNetPlugin_v12.finalize(NULL), ncclSuccess);
	fake_verbs_install(NULL, 0);
	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 7, NULL, logger, NULL), ncclSystemError);
	assert_null(ctx);
	/* NCCL still calls finalize with what init left */
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
	assert_int_equal(logged.warns, 1);
	assert_int_equal(logged.level, NCCL_LOG_WARN);
	assert_true(logged.flags & NCCL_NET);
	assert_true(logged.flags & NCCL_INIT);
	assert_non_null(strstr(logged.msg, "NET/RoCE : no RoCE device: no RDMA devices found"));
}

static void test_init_misuse(void **state)
{
	void *bogus[4] = { 0 };

	assert_int_equal(ncclNetPlugin_v12.init(NULL, 1, NULL, logger, NULL), ncclInternalError);
	assert_null(rn_engine_current());
	/* not a context of ours */
	assert_int_equal(ncclNetPlugin_v12.finalize(bogus), ncclInternalError);
}

static void test_properties_v12(void **state)
{
	ncclNetProperties_v12_t p;
	void *ctx;

	setenv("NCCL_NET_FORCE_FLUSH", "1", 1);
	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, NULL, logger, NULL), ncclSuccess);
	memset(&p, 0xa5, sizeof(p));
	assert_int_equal(ncclNetPlugin_v12.getProperties(0, &p), ncclSuccess);
	assert_string_equal(p.name, "mlx5_0");
	assert_string_equal(p.pciPath, "/sys/devices/pci0000:00/0000:3b:00.0");
	assert_int_equal(p.guid, 0x1234);
	assert_int_equal(p.ptrSupport, NCCL_PTR_HOST | NCCL_PTR_DMABUF);
	assert_int_equal(p.regIsGlobal, 1);
	assert_int_equal(p.forceFlush, 1);
	assert_int_equal(p.speed, 100000);
	assert_int_equal(p.port, 1);
	assert_true(p.latency == 0.0f);
	assert_int_equal(p.maxComms, 1024);
	assert_int_equal(p.maxRecvs, 8);
	assert_int_equal(p.netDeviceType, NCCL_NET_DEVICE_HOST);
	assert_int_equal(p.netDeviceVersion, 0);
	assert_int_equal(p.vProps.ndevs, 1);
	assert_int_equal(p.vProps.devs[0], 0);
	assert_int_equal(p.maxP2pBytes, 1ULL << 40);
	assert_int_equal(p.maxCollBytes, 512ULL << 20);
	assert_int_equal(p.maxMultiRequestSize, 1);
	assert_int_equal(p.railId, -1);
	assert_int_equal(p.planeId, -1);

	assert_int_equal(ncclNetPlugin_v12.getProperties(1, &p), ncclSuccess);
	assert_string_equal(p.name, "rxe0");
	assert_null(p.pciPath); /* virtual: no PCI parent */
	assert_int_equal(p.ptrSupport, NCCL_PTR_HOST);
	assert_int_equal(p.speed, 2500);
	assert_int_equal(p.vProps.devs[0], 1);

	assert_int_equal(ncclNetPlugin_v12.getProperties(2, &p), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.getProperties(-1, &p), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
}

/*
 * NIC fusion: a vNIC follows the physical devices, reports its members' names joined
 * with '+', their speeds summed, the first member's identity, and its members in vProps.
 */
static void test_make_vdevice(void **state)
{
	ncclNetVDeviceProps_v12_t vp = { .ndevs = 2, .devs = { 0, 1 } };
	ncclNetVDeviceProps_v9_t vp9 = { .ndevs = 2, .devs = { 1, 0 } };
	ncclNetProperties_v12_t p;
	ncclNetProperties_v11_t p11;
	void *ctx;
	int d = -1, d2 = -1, n = 0;

	unsetenv("NCCL_IB_MERGE_NICS");
	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, NULL, logger, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclSuccess);
	assert_int_equal(d, 2); /* after the 2 physical devices */
	assert_int_equal(ncclNetPlugin_v12.devices(&n), ncclSuccess);
	assert_int_equal(n, 3);
	assert_int_equal(ncclNetPlugin_v12.getProperties(2, &p), ncclSuccess);
	assert_string_equal(p.name, "mlx5_0+rxe0");
	assert_int_equal(p.speed, 100000 + 2500);
	assert_int_equal(p.vProps.ndevs, 2);
	assert_int_equal(p.vProps.devs[0], 0);
	assert_int_equal(p.vProps.devs[1], 1);
	assert_string_equal(p.pciPath, "/sys/devices/pci0000:00/0000:3b:00.0");
	assert_int_equal(p.guid, 0x1234);
	assert_int_equal(p.ptrSupport, NCCL_PTR_HOST); /* what every member can take */
	assert_int_equal(p.maxRecvs, 8);
	/* a physical device still lists itself alone */
	assert_int_equal(ncclNetPlugin_v12.getProperties(1, &p), ncclSuccess);
	assert_int_equal(p.vProps.ndevs, 1);
	assert_int_equal(p.vProps.devs[0], 1);
	/* the same members again (another communicator): the same vNIC */
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d2, &vp), ncclSuccess);
	assert_int_equal(d2, 2);
	/* another order is another vNIC, through the v11 table (4-device props) */
	assert_int_equal(ncclNetPlugin_v11.makeVDevice(&d2, &vp9), ncclSuccess);
	assert_int_equal(d2, 3);
	assert_int_equal(ncclNetPlugin_v11.getProperties(3, &p11), ncclSuccess);
	assert_string_equal(p11.name, "rxe0+mlx5_0");
	assert_int_equal(p11.vProps.ndevs, 2);
	assert_int_equal(p11.vProps.devs[0], 1);
	assert_int_equal(logged.warns, 0);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
}

/*
 * NCCL with the library kept loaded (NCCL_NET_PLUGIN_REF_COUNT=1): devices() and
 * makeVDevice come only at the first init of the load; the communicator made after the
 * last was finalized uses the cached count and the vNIC index straight away.
 */
static void test_vdevice_survives_last_finalize(void **state)
{
	ncclNetVDeviceProps_v12_t vp = { .ndevs = 2, .devs = { 0, 1 } };
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	ncclNetProperties_v12_t p;
	void *ctx, *lc = NULL;
	int d = -1, n = 0, cycle;

	unsetenv("NCCL_IB_MERGE_NICS");
	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, NULL, logger, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.devices(&n), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclSuccess);
	assert_int_equal(d, 2);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
	for (cycle = 0; cycle < 3; cycle++) {
		assert_int_equal(ncclNetPlugin_v12.init(&ctx, 2 + cycle, NULL, logger, NULL),
				 ncclSuccess);
		assert_int_equal(ncclNetPlugin_v12.getProperties(d, &p), ncclSuccess);
		assert_string_equal(p.name, "mlx5_0+rxe0");
		assert_int_equal(p.vProps.ndevs, 2);
		assert_int_equal(ncclNetPlugin_v12.listen(ctx, d, handle, &lc), ncclSuccess);
		assert_int_equal(double_net_last.dev, d);
		assert_int_equal(ncclNetPlugin_v12.closeListen(lc), ncclSuccess);
		assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
	}
	assert_int_equal(double_path_snapshots, 1); /* discovered once per load */
	assert_int_equal(logged.warns, 0);
}

/* Bad member lists are refused with a WARN and change nothing. */
static void test_make_vdevice_invalid(void **state)
{
	ncclNetVDeviceProps_v12_t vp = { 0 };
	ncclNetVDeviceProps_v9_t vp9 = { .ndevs = 5, .devs = { 0, 1, 0, 1 } };
	void *ctx;
	int d = -7, n = 0, warns;

	unsetenv("NCCL_IB_MERGE_NICS");
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclInternalError); /* no init */
	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, NULL, logger, NULL), ncclSuccess);
	warns = logged.warns;
	vp.ndevs = 0;
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclInternalError);
	vp.ndevs = 9;
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclInternalError);
	vp.ndevs = 2;
	vp.devs[0] = 0;
	vp.devs[1] = 0; /* twice */
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclInternalError);
	assert_non_null(strstr(logged.msg, "listed twice"));
	vp.devs[1] = 2; /* not a physical device */
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclInternalError);
	assert_non_null(strstr(logged.msg, "only the 2 physical devices"));
	vp.devs[1] = -1;
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(NULL, &vp), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, NULL), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v11.makeVDevice(&d, &vp9), ncclInternalError); /* > 4 */
	assert_int_equal(logged.warns - warns, 8);
	assert_int_equal(d, -7);
	assert_int_equal(ncclNetPlugin_v12.devices(&n), ncclSuccess);
	assert_int_equal(n, 2);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
}

/* NCCL_IB_MERGE_NICS=0: no fusion; a call anyway is the user's misconfiguration. */
static void test_make_vdevice_merge_off(void **state)
{
	ncclNetVDeviceProps_v12_t vp = { .ndevs = 2, .devs = { 0, 1 } };
	void *ctx;
	int d = -7, n = 0;

	setenv("NCCL_IB_MERGE_NICS", "0", 1);
	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, NULL, logger, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.makeVDevice(&d, &vp), ncclInvalidUsage);
	assert_int_equal(logged.level, NCCL_LOG_WARN);
	assert_non_null(strstr(logged.msg, "NCCL_IB_MERGE_NICS=0"));
	assert_int_equal(d, -7);
	assert_int_equal(ncclNetPlugin_v12.devices(&n), ncclSuccess);
	assert_int_equal(n, 2);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
	unsetenv("NCCL_IB_MERGE_NICS");
}

/* Every older layout carries the same values as v12. */
static void test_properties_old_layouts(void **state)
{
	ncclNetProperties_v12_t p;
	ncclNetProperties_v11_t p11;
	ncclNetProperties_v9_t p9, p10;
	ncclNetProperties_v8_t p8;
	ncclNetProperties_v7_t p7;
	ncclNetProperties_v6_t p6;
	void *ctx;

	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, NULL, logger, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.getProperties(0, &p), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v11.getProperties(0, &p11), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v10.getProperties(0, &p10), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v9.getProperties(0, &p9), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v8.getProperties(0, &p8), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v7.getProperties(0, &p7), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v6.getProperties(0, &p6), ncclSuccess);

	assert_ptr_equal(p11.name, p.name);
	assert_ptr_equal(p11.pciPath, p.pciPath);
	assert_int_equal(p11.speed, p.speed);
	assert_int_equal(p11.forceFlush, p.forceFlush);
	assert_int_equal(p11.vProps.ndevs, 1);
	assert_int_equal(p11.vProps.devs[0], 0);
	assert_int_equal(p11.maxP2pBytes, p.maxP2pBytes);
	assert_int_equal(p11.maxCollBytes, p.maxCollBytes);
	assert_int_equal(p11.maxMultiRequestSize, 1);
	assert_memory_equal(&p9, &p10, sizeof(p9));
	assert_int_equal(p9.guid, p.guid);
	assert_int_equal(p9.ptrSupport, p.ptrSupport);
	assert_int_equal(p9.maxComms, p.maxComms);
	assert_int_equal(p9.maxRecvs, p.maxRecvs);
	assert_int_equal(p9.vProps.ndevs, 1);
	assert_int_equal(p9.maxCollBytes, p.maxCollBytes);
	assert_int_equal(p8.regIsGlobal, 1);
	assert_int_equal(p8.speed, p.speed);
	assert_int_equal(p8.netDeviceType, NCCL_NET_DEVICE_HOST);
	assert_int_equal(p7.port, p.port);
	assert_int_equal(p7.maxRecvs, p.maxRecvs);
	assert_int_equal(p7.netDeviceVersion, 0);
	assert_string_equal(p6.name, "mlx5_0");
	assert_int_equal(p6.guid, p.guid);
	assert_int_equal(p6.speed, p.speed);
	assert_int_equal(p6.maxComms, p.maxComms);
	assert_int_equal(p6.maxRecvs, p.maxRecvs);
	assert_int_equal(ncclNetPlugin_v6.getProperties(5, &p6), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
}

static void test_connect_carries_traffic_class(void **state)
{
	ncclNetCommConfig_v12_t cfg = { .trafficClass = 106 };
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *ctx, *lc = NULL, *sc = NULL, *rc = NULL;
	ncclNetDeviceHandle_v12_t *dc = NULL;

	assert_int_equal(ncclNetPlugin_v12.init(&ctx, 1, &cfg, logger, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.listen(ctx, 1, handle, &lc), ncclSuccess);
	assert_non_null(lc);
	assert_int_equal(double_net_last.dev, 1);
	assert_ptr_equal(double_net_last.eng, rn_engine_current());
	assert_int_equal(ncclNetPlugin_v12.connect(ctx, 0, handle, &sc, &dc), ncclSuccess);
	assert_non_null(sc);
	assert_int_equal(double_net_last.traffic_class, 106);
	assert_int_equal(ncclNetPlugin_v11.connect(ctx, 0, handle, &sc, &dc), ncclSuccess);
	assert_int_equal(double_net_last.traffic_class, 106);
	assert_int_equal(ncclNetPlugin_v12.accept(lc, &rc, &dc), ncclSuccess);
	assert_ptr_equal(double_net_last.comm, lc);
	assert_non_null(rc);
	/* bad device index or context: refused before the transport sees it */
	double_net_calls = 0;
	assert_int_equal(ncclNetPlugin_v12.listen(ctx, 2, handle, &lc), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.connect(ctx, -1, handle, &sc, &dc), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.connect(NULL, 0, handle, &sc, &dc), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.listen(handle, 0, handle, &lc), ncclInternalError);
	assert_int_equal(double_net_calls, 0);
	assert_int_equal(ncclNetPlugin_v12.finalize(ctx), ncclSuccess);
}

/*
 * NCCL 2.30.7's internal RMA is handed the net plugin's context and writes its traffic
 * class as an int at offset 0 of it (rma_proxy.cc -> net_ib/gin.cc). The context must
 * stay ours after that: listen and connect work with it, finalize frees it and drops
 * its engine reference (no leak: the last finalize leaves no engine), and a second
 * finalize of the freed context is refused, not a double free.
 */
static void test_context_survives_ncclrma_write(void **state)
{
	ncclNetCommConfig_v12_t cfg = { .trafficClass = 106 };
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *a = NULL, *b = NULL, *lc = NULL, *sc = NULL;
	ncclNetDeviceHandle_v12_t *dc = NULL;
	int gin_tc = 41, k;

	assert_int_equal(ncclNetPlugin_v12.init(&a, 1, &cfg, logger, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.init(&b, 2, &cfg, logger, NULL), ncclSuccess);
	/* as gin.cc does: *(int *)ctx = NCCL_GIN_IB_TC; on both, with several values */
	for (k = 0; k < 3; k++) {
		memcpy(a, &gin_tc, sizeof(gin_tc));
		memcpy(b, &k, sizeof(k));
		assert_int_equal(ncclNetPlugin_v12.listen(a, 1, handle, &lc), ncclSuccess);
		assert_int_equal(ncclNetPlugin_v12.connect(b, 0, handle, &sc, &dc), ncclSuccess);
		/* our own traffic class is untouched by the foreign write */
		assert_int_equal(double_net_last.traffic_class, 106);
		assert_int_equal(ncclNetPlugin_v12.setNetAttr(a, NULL), ncclSuccess);
	}
	assert_int_equal(logged.warns, 0);
	assert_int_equal(ncclNetPlugin_v12.finalize(a), ncclSuccess);
	assert_non_null(rn_engine_current());
	assert_int_equal(ncclNetPlugin_v12.finalize(b), ncclSuccess);
	assert_null(rn_engine_current()); /* both references went: nothing leaked */
	assert_int_equal(logged.warns, 0);
	/* freed: refused by name, never freed again (ASan would catch a second free) */
	assert_int_equal(ncclNetPlugin_v12.finalize(a), ncclInternalError);
	assert_non_null(strstr(logged.msg, "not a context of ours"));
}

static void test_error_translation(void **state)
{
	static const struct {
		int err;
		ncclResult_t res;
	} map[] = {
		{ 0, ncclSuccess },
		{ -EREMOTEIO, ncclRemoteError },
		{ -ECONNRESET, ncclRemoteError },
		{ -EPIPE, ncclRemoteError },
		{ -EHOSTUNREACH, ncclSystemError },
		{ -EINVAL, ncclInternalError },
		{ -EBADMSG, ncclInternalError },
		{ -ENOMEM, ncclSystemError },
		{ -ETIMEDOUT, ncclSystemError },
		{ -EMSGSIZE, ncclInvalidUsage },
	};
	char buf[64];
	void *req, *mh;
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		double_net_ret = map[i].err;
		assert_int_equal(rn_plugin_result(map[i].err), map[i].res);
		assert_int_equal(ncclNetPlugin_v12.isend(buf, buf, 8, 0, buf, NULL, &req),
				 map[i].res);
		assert_int_equal(ncclNetPlugin_v12.regMr(buf, buf, 64, NCCL_PTR_HOST, &mh),
				 map[i].res);
		assert_int_equal(ncclNetPlugin_v12.closeSend(buf), map[i].res);
	}
}

static void test_data_path_checks(void **state)
{
	char buf[64];
	void *data[9], *mhs[9], *req = NULL;
	size_t sizes[9];
	int tags[9] = { 0 }, done = 0, isz[9] = { 0 };

	for (int i = 0; i < 9; i++) {
		data[i] = buf;
		mhs[i] = buf;
		sizes[i] = 64;
	}
	assert_int_equal(ncclNetPlugin_v12.irecv(buf, 9, data, sizes, tags, mhs, NULL, &req),
			 ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.irecv(buf, 0, data, sizes, tags, mhs, NULL, &req),
			 ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.irecv(NULL, 1, data, sizes, tags, mhs, NULL, &req),
			 ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.isend(NULL, buf, 8, 0, buf, NULL, &req),
			 ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.test(NULL, &done, NULL), ncclInternalError);
	/* as net_ib: closing a NULL comm (NCCL does, after a failed connect) is a success, no WARN */
	{
		int warns;

		rn_plugin_log_attach(logger);
		warns = logged.warns;
		assert_int_equal(ncclNetPlugin_v12.closeSend(NULL), ncclSuccess);
		assert_int_equal(ncclNetPlugin_v12.closeRecv(NULL), ncclSuccess);
		assert_int_equal(ncclNetPlugin_v12.closeListen(NULL), ncclSuccess);
		assert_int_equal(ncclNetPlugin_v11.closeSend(NULL), ncclSuccess);
		assert_int_equal(ncclNetPlugin_v10.closeRecv(NULL), ncclSuccess);
		assert_int_equal(ncclNetPlugin_v6.closeListen(NULL), ncclSuccess);
		assert_int_equal(logged.warns, warns);
	}
	/* as net_ib: deregMr of a NULL handle is a success, whatever the comm */
	assert_int_equal(ncclNetPlugin_v12.deregMr(buf, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.deregMr(NULL, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v12.deregMr(NULL, buf), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v12.regMr(buf, buf, 64, 0x8, &req), ncclInternalError);
	assert_int_equal(double_net_calls, 0);

	assert_int_equal(ncclNetPlugin_v12.irecv(buf, 8, data, sizes, tags, mhs, NULL, &req),
			 ncclSuccess);
	assert_non_null(req);
	assert_int_equal(double_net_last.n, 8);
	assert_int_equal(ncclNetPlugin_v12.iflush(buf, 1, data, isz, mhs, &req), ncclSuccess);
	assert_null(req);
	assert_int_equal(ncclNetPlugin_v12.test(buf, &done, isz), ncclSuccess);
	assert_int_equal(done, 1);
}

/* v6-v8 take int sizes: they reach the transport widened, negatives refused. */
static void test_int_size_shims(void **state)
{
	char buf[64];
	void *data[2] = { buf, buf }, *mhs[2] = { buf, buf }, *req = NULL, *mh = NULL;
	int sizes[2] = { 4096, 1 << 30 }, tags[2] = { 1, 2 };
	size_t wide[2] = { 7, 9 };

	assert_int_equal(ncclNetPlugin_v6.isend(buf, buf, 12345, 3, buf, &req), ncclSuccess);
	assert_int_equal(double_net_last.size, 12345);
	assert_int_equal(double_net_last.tag, 3);
	assert_int_equal(ncclNetPlugin_v8.irecv(buf, 2, data, sizes, tags, mhs, &req), ncclSuccess);
	assert_int_equal(double_net_last.n, 2);
	assert_int_equal(double_net_last.sizes[0], 4096);
	assert_int_equal(double_net_last.sizes[1], 1 << 30);
	assert_int_equal(ncclNetPlugin_v9.irecv(buf, 2, data, wide, tags, mhs, &req), ncclSuccess);
	assert_int_equal(double_net_last.sizes[1], 9);
	assert_int_equal(ncclNetPlugin_v7.regMr(buf, buf, 2048, NCCL_PTR_HOST, &mh), ncclSuccess);
	assert_int_equal(double_net_last.size, 2048);
	assert_int_equal(ncclNetPlugin_v10.isend(buf, buf, 5000000000ULL, 0, buf, NULL, &req),
			 ncclSuccess);
	assert_int_equal(double_net_last.size, 5000000000ULL);
	double_net_calls = 0;
	assert_int_equal(ncclNetPlugin_v6.isend(buf, buf, -1, 0, buf, &req), ncclInternalError);
	assert_int_equal(ncclNetPlugin_v6.regMr(buf, buf, -5, NCCL_PTR_HOST, &mh),
			 ncclInternalError);
	assert_int_equal(double_net_calls, 0);
}

static void test_table_shapes(void **state)
{
	/* what NCCL looks at before using a plugin */
	assert_string_equal(ncclNetPlugin_v12.name, "RoCE");
	assert_string_equal(ncclNetPlugin_v6.name, "RoCE");
	assert_null(ncclNetPlugin_v12.getDeviceMr);
	assert_null(ncclNetPlugin_v12.irecvConsumed);
	assert_non_null(ncclNetPlugin_v12.makeVDevice);
	assert_non_null(ncclNetPlugin_v11.makeVDevice);
	assert_non_null(ncclNetPlugin_v9.makeVDevice);
	assert_non_null(ncclNetPlugin_v12.finalize);
	assert_non_null(ncclNetPlugin_v11.finalize);
	assert_non_null(ncclNetPlugin_v12.setNetAttr);
	assert_non_null(ncclNetPlugin_v6.regMrDmaBuf);
	/* v11 has its own init only to log which table NCCL chose */
	assert_non_null(ncclNetPlugin_v11.init);
}

/* Pre-v11 NCCL: init once per process, no ctx, no finalize. Runs last: it keeps its ref. */
static void test_legacy_v10(void **state)
{
	ncclNetCommConfig_v10_t cfg = { .trafficClass = 40 };
	char handle[NCCL_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *sc = NULL;
	ncclNetDeviceHandle_v10_t *dc = NULL;
	int n = 0;

	assert_int_equal(ncclNetPlugin_v10.init(logger, NULL), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v6.init(logger), ncclSuccess);
	assert_int_equal(double_path_snapshots, 1);
	assert_int_equal(ncclNetPlugin_v10.devices(&n), ncclSuccess);
	assert_int_equal(n, 2);
	assert_int_equal(ncclNetPlugin_v10.listen(0, handle, &lc), ncclSuccess);
	assert_non_null(lc);
	assert_int_equal(ncclNetPlugin_v10.connect(1, &cfg, handle, &sc, &dc), ncclSuccess);
	assert_int_equal(double_net_last.traffic_class, 40);
	assert_int_equal(double_net_last.dev, 1);
	assert_int_equal(ncclNetPlugin_v9.connect(0, handle, &sc, &dc), ncclSuccess);
	assert_int_equal(double_net_last.traffic_class, -1);
	assert_int_equal(ncclNetPlugin_v6.connect(0, handle, &sc), ncclSuccess);
	assert_int_equal(ncclNetPlugin_v6.connect(2, handle, &sc), ncclInternalError);
	/* v11 communicators share the same engine */
	{
		void *ctx;

		assert_int_equal(ncclNetPlugin_v11.init(&ctx, 9, NULL, logger, NULL), ncclSuccess);
		assert_int_equal(ncclNetPlugin_v11.finalize(ctx), ncclSuccess);
	}
	assert_non_null(rn_engine_current());
	assert_int_equal(double_path_snapshots, 1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_two_comms_lifecycle),
		T(test_finalize_null_and_failed_init),
		T(test_context_survives_ncclrma_write),
		T(test_init_misuse),
		T(test_properties_v12),
		T(test_properties_old_layouts),
		T(test_make_vdevice),
		T(test_vdevice_survives_last_finalize),
		T(test_make_vdevice_invalid),
		T(test_make_vdevice_merge_off),
		T(test_connect_carries_traffic_class),
		T(test_error_translation),
		T(test_data_path_checks),
		T(test_int_size_shims),
		cmocka_unit_test(test_table_shapes),
		/* last: the legacy reference lives until exit, as under NCCL < 2.28 */
		cmocka_unit_test_setup_teardown(test_legacy_v10, setup, teardown_legacy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
