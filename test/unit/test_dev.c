// SPDX-License-Identifier: MIT
/*
 * Device discovery over the fake verbs model and a sysfs fixture: which ports are
 * kept, the identity each NIC gets, the speed and pointer-support probes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_verbs.h"
#include "fixture_sysfs.h"
#include "rn_dev.h"
#include "rn_mr.h"
#include "rn_log.h"
#include "rn_verbs.h"
#include "rn_sys.h"
#include "rn_nl.h"

static struct rn_dev *devs[RN_MAX_DEVS];
static int ndevs, nproblems;
static char why[1024];
static struct rn_config cfg;

static void sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		 const char *msg)
{
}

static int setup(void **state)
{
	fixture_sysfs_create();
	rn_log_set_sink(sink);
	rn_config_defaults(&cfg);
	ndevs = 0;
	why[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	int i;

	for (i = 0; i < ndevs; i++)
		rn_dev_free(devs[i]);
	ndevs = 0;
	/* every context, PD and probe MR was released */
	assert_int_equal(fake_verbs_uninstall(), 0);
	fixture_sysfs_destroy();
	rn_log_set_sink(NULL);
	return 0;
}

static void discover(void)
{
	ndevs = rn_dev_discover(&cfg, devs, RN_MAX_DEVS, why, sizeof(why), &nproblems);
	assert_true(ndevs >= 0);
}

static void test_no_devices(void **state)
{
	fake_verbs_install(NULL, 0);
	discover();
	assert_int_equal(ndevs, 0);
	assert_non_null(strstr(why, "no RDMA devices found"));
}

static void test_down_port_and_ib_dropped(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0",
		  .guid = 0x11,
		  .nports = 2,
		  .ports = { { .gids = { [3] = { "198.18.0.1", IBV_GID_TYPE_ROCE_V2, 5 } } },
			     { .state = IBV_PORT_DOWN } } },
		{ .name = "mlx5_1",
		  .guid = 0x22,
		  .nports = 1,
		  .ports = { { .link_layer = IBV_LINK_LAYER_INFINIBAND } } },
	};

	fake_verbs_install(fd, 2);
	discover();
	assert_int_equal(ndevs, 1);
	assert_string_equal(devs[0]->nic.ibdev, "mlx5_0");
	assert_int_equal(devs[0]->nic.port, 1);
	assert_int_equal(devs[0]->guid, 0x11);
	assert_int_equal(nproblems, 1); /* the DOWN port, not the InfiniBand one */
}

static void test_nothing_usable_says_why(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0", .nports = 1, .ports = { { .state = IBV_PORT_DOWN } } },
		{ .name = "mlx5_1",
		  .nports = 1,
		  .ports = { { .link_layer = IBV_LINK_LAYER_INFINIBAND } } },
	};

	fake_verbs_install(fd, 2);
	discover();
	assert_int_equal(ndevs, 0);
	assert_non_null(strstr(why, "2 RDMA devices"));
	assert_non_null(strstr(why, "mlx5_0:1 is DOWN"));
	assert_non_null(strstr(why, "mlx5_1:1 is InfiniBand"));
}

/* Forty ports down with long names: the reason lists whole items and counts the rest. */
static void test_many_skipped_ports_never_cut(void **state)
{
	static struct fake_dev fd[10];
	static char names[10][32];
	char *p, *save = NULL;
	int i;

	for (i = 0; i < 10; i++) {
		snprintf(names[i], sizeof(names[i]), "mlx5_bond_rail%02d_long", i);
		fd[i] = (struct fake_dev){ .name = names[i], .nports = 4 };
		fd[i].ports[0].state = fd[i].ports[1].state = IBV_PORT_DOWN;
		fd[i].ports[2].state = fd[i].ports[3].state = IBV_PORT_DOWN;
	}
	fake_verbs_install(fd, 10);
	discover();
	assert_int_equal(ndevs, 0);
	assert_int_equal(nproblems, 40);
	assert_true(strlen(why) < sizeof(why) - 1);
	assert_non_null(strstr(why, "more (INFO log)"));
	p = strchr(why, ':');
	assert_non_null(p);
	/* every listed item is a whole "<dev>:<port> is DOWN" */
	for (p = strtok_r(p + 2, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		while (*p == ' ')
			p++;
		if (!strncmp(p, "and ", 4))
			break;
		assert_non_null(strstr(p, " is DOWN"));
	}
}

static void test_hca_filter_applies(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_1", .nports = 1 },
		{ .name = "mlx5_10", .nports = 1 },
		{ .name = "mlx5_2", .nports = 2 },
	};

	fake_verbs_install(fd, 3);
	strcpy(cfg.ib_hca, "=mlx5_1,mlx5_2:2");
	discover();
	assert_int_equal(ndevs, 2);
	assert_string_equal(devs[0]->nic.ibdev, "mlx5_1");
	assert_string_equal(devs[1]->nic.ibdev, "mlx5_2");
	assert_int_equal(devs[1]->nic.port, 2);
	assert_int_equal(nproblems, 0); /* left out by the user's choice only */
	/* the two NICs of one device have their own contexts */
	assert_ptr_not_equal(devs[0]->ctx, devs[1]->ctx);
}

static void test_hca_excludes_everything(void **state)
{
	static struct fake_dev fd[] = { { .name = "rxe0", .nports = 1 } };

	fake_verbs_install(fd, 1);
	strcpy(cfg.ib_hca, "^rxe");
	discover();
	assert_int_equal(ndevs, 0);
	assert_non_null(strstr(why, "not selected by NCCL_IB_HCA=^rxe"));
}

/* An exclusion list with an entry that cannot be read: no NIC, never all of them (#21). */
static void test_hca_unreadable_exclusion_offers_none(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0", .nports = 1 },
		{ .name = "mlx5_1", .nports = 1 },
	};

	fake_verbs_install(fd, 2);
	setenv("NCCL_IB_HCA", "^mlx5_1,mlx5_0:x", 1);
	rn_config_load(&cfg);
	unsetenv("NCCL_IB_HCA");
	discover();
	assert_int_equal(ndevs, 0);
	assert_non_null(strstr(why, "NCCL_IB_HCA"));
}

static void test_identity_pci_device(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0",
		  .guid = 0xabc,
		  .nports = 1,
		  .ports = { { .active_speed = 32,
			       .active_width = 2,
			       .active_mtu = IBV_MTU_4096,
			       .gids = { [0] = { "fe80::1", IBV_GID_TYPE_ROCE_V1, 5 },
					 [3] = { "198.18.0.1", IBV_GID_TYPE_ROCE_V2, 5 } } } } },
	};
	struct rn_dev *d;

	fixture_sysfs_pci("mlx5_0", "0000:3b:00.0");
	fixture_sysfs_gid_ndev("mlx5_0", 1, 0, "ens1f0");
	fixture_sysfs_netdev("ens1f0", 5, "02:00:c6:12:00:01", 9000, "up");
	fake_verbs_install(fd, 1);
	discover();
	assert_int_equal(ndevs, 1);
	d = devs[0];
	assert_string_equal(d->pci_path, "/sys/devices/pci0000:00/0000:3b:00.0");
	assert_false(d->is_rxe);
	assert_string_equal(d->nic.netdev, "ens1f0");
	assert_int_equal(d->nic.ifindex, 5);
	assert_int_equal(d->nic.mtu, 9000);
	assert_int_equal(d->nic.link_up, 1);
	assert_int_equal(d->nic.mac[0], 0x02);
	assert_int_equal(d->nic.mac[5], 0x01);
	assert_int_equal(d->nic.active_mtu, IBV_MTU_4096);
	assert_int_equal(d->nic.gid_index, -1); /* the route core chooses it */
	/* EDR (25 Gb/s per lane) x 4 lanes */
	assert_int_equal(d->speed_mbps, 100000);
	assert_int_equal(d->attr.max_qp, 1024);
	assert_non_null(d->pd);
	assert_int_equal(d->ptr_support, RN_PTR_HOST);
}

/*
 * A dual-port NIC seen as two PCI functions (mlx5_0, mlx5_1): NCCL is told one PCI
 * device (function 0) with ports 1 and 2, as net_ib numbers them; another NIC keeps 1.
 */
static void test_dual_port_numbering(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0", .nports = 1 },
		{ .name = "mlx5_1", .nports = 1 },
		{ .name = "mlx5_2", .nports = 1 },
	};

	fixture_sysfs_pci("mlx5_0", "0000:3b:00.0");
	fixture_sysfs_pci("mlx5_1", "0000:3b:00.1");
	fixture_sysfs_pci("mlx5_2", "0000:5e:00.0");
	strcpy(cfg.ib_hca, "mlx5_0::3:1,mlx5_1::3:2,mlx5_2");
	fake_verbs_install(fd, 3);
	discover();
	assert_int_equal(ndevs, 3);
	assert_string_equal(devs[1]->pci_path, "/sys/devices/pci0000:00/0000:3b:00.1");
	assert_string_equal(devs[0]->nccl_pci_path, "/sys/devices/pci0000:00/0000:3b:00.0");
	assert_string_equal(devs[1]->nccl_pci_path, "/sys/devices/pci0000:00/0000:3b:00.0");
	assert_int_equal(devs[0]->nccl_port, 1);
	assert_int_equal(devs[1]->nccl_port, 2);
	assert_int_equal(devs[2]->nccl_port, 1);
	assert_int_equal(devs[0]->rail, 3);
	assert_int_equal(devs[0]->plane, 1);
	assert_int_equal(devs[1]->plane, 2);
	assert_int_equal(devs[2]->rail, -1);
}

/*
 * One device with two ports: each is a device for NCCL, numbered as net_ib does (the
 * port plus the devices found before on the same PCI path): 1, then 2 + 1 = 3.
 */
static void test_two_port_device_numbering(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx4_0", .nports = 2 },
	};

	fixture_sysfs_pci("mlx4_0", "0000:3b:00.0");
	fake_verbs_install(fd, 1);
	discover();
	assert_int_equal(ndevs, 2);
	assert_int_equal(devs[0]->nic.port, 1);
	assert_int_equal(devs[1]->nic.port, 2);
	assert_string_equal(devs[1]->nccl_pci_path, devs[0]->nccl_pci_path);
	assert_int_equal(devs[0]->nccl_port, 1);
	assert_int_equal(devs[1]->nccl_port, 3);
}

/* NCCL_IB_MERGE_VFS (default 1): VFs of a NIC are numbered as its further ports. */
static void test_vf_numbering(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0", .nports = 1 },
		{ .name = "mlx5_4", .nports = 1 },
	};

	fixture_sysfs_pci("mlx5_0", "0000:3b:00.0");
	fixture_sysfs_pci("mlx5_4", "0000:3b:00.3"); /* a VF */
	fake_verbs_install(fd, 2);
	discover();
	assert_int_equal(ndevs, 2);
	assert_string_equal(devs[1]->nccl_pci_path, "/sys/devices/pci0000:00/0000:3b:00.0");
	assert_int_equal(devs[1]->nccl_port, 2);
}

static void test_vf_numbering_unmerged(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0", .nports = 1 },
		{ .name = "mlx5_4", .nports = 1 },
	};

	cfg.merge_vfs = 0;
	fixture_sysfs_pci("mlx5_0", "0000:3b:00.0");
	fixture_sysfs_pci("mlx5_4", "0000:3b:01.0"); /* another device number: not merged */
	fake_verbs_install(fd, 2);
	discover();
	assert_int_equal(ndevs, 2);
	assert_string_equal(devs[1]->nccl_pci_path, "/sys/devices/pci0000:00/0000:3b:01.0");
	assert_int_equal(devs[1]->nccl_port, 1);
}

static void test_identity_rxe(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "rxe0",
		  .nports = 1,
		  .ports = { { .gids = { [1] = { "198.18.0.2", IBV_GID_TYPE_ROCE_V2, 3 } } } } },
	};

	/* no ndevs attribute: the netdev is found by the GID's ifindex */
	fixture_sysfs_netdev("lo", 1, "00:00:00:00:00:00", 65536, "unknown");
	fixture_sysfs_netdev("eth1", 3, "52:54:00:12:34:56", 1500, "down");
	fake_verbs_install(fd, 1);
	discover();
	assert_int_equal(ndevs, 1);
	assert_string_equal(devs[0]->pci_path, "");
	assert_true(devs[0]->is_rxe);
	assert_string_equal(devs[0]->nic.netdev, "eth1");
	assert_int_equal(devs[0]->nic.ifindex, 3);
	assert_int_equal(devs[0]->nic.link_up, 0);
}

/*
 * rxe has no PCI device of its own: the pciPath NCCL places it by is the netdev's PCI
 * function (virtio-net: the netdev's device is a virtio node under it; a VLAN takes
 * its lower netdev's), and stays "" where there is none (veth).
 */
static void test_rxe_pci_path_from_netdev(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "rxe0",
		  .nports = 1,
		  .ports = { { .gids = { [1] = { "198.18.0.2", IBV_GID_TYPE_ROCE_V2, 3 } } } } },
		{ .name = "rxe1",
		  .nports = 1,
		  .ports = { { .gids = { [1] = { "198.18.1.2", IBV_GID_TYPE_ROCE_V2, 5 } } } } },
		{ .name = "rxe2",
		  .nports = 1,
		  .ports = { { .gids = { [1] = { "198.18.2.2", IBV_GID_TYPE_ROCE_V2, 6 } } } } },
	};

	fixture_sysfs_netdev("eth1", 3, "52:54:00:12:34:56", 1500, "up");
	fixture_sysfs_virtio_netdev("eth1", "0000:00:04.0", 1);
	fixture_sysfs_netdev("eth2", 4, "52:54:00:12:34:57", 1500, "up");
	fixture_sysfs_virtio_netdev("eth2", "0000:00:05.0", 2);
	fixture_sysfs_netdev("eth2.100", 5, "52:54:00:12:34:57", 1500, "up");
	fixture_sysfs_lower("eth2.100", "eth2");
	fixture_sysfs_netdev("veth0", 6, "52:54:00:12:34:58", 1500, "up");
	fake_verbs_install(fd, 3);
	discover();
	assert_int_equal(ndevs, 3);
	assert_string_equal(devs[0]->nic.netdev, "eth1");
	assert_string_equal(devs[0]->pci_path, "/sys/devices/pci0000:00/0000:00:04.0");
	assert_true(devs[0]->pci_from_netdev);
	assert_true(devs[0]->is_rxe); /* still Soft-RoCE: retry_cnt and the rest follow */
	assert_string_equal(devs[1]->nic.netdev, "eth2.100");
	assert_string_equal(devs[1]->pci_path, "/sys/devices/pci0000:00/0000:00:05.0");
	/* numbered as net_ib numbers PCI NICs (NCCL_IB_MERGE_VFS: device and function 0) */
	assert_string_equal(devs[0]->nccl_pci_path, "/sys/devices/pci0000:00/0000:00:00.0");
	assert_string_equal(devs[1]->nccl_pci_path, devs[0]->nccl_pci_path);
	assert_int_equal(devs[0]->nccl_port, 1);
	assert_int_equal(devs[1]->nccl_port, 2);
	assert_string_equal(devs[2]->nic.netdev, "veth0");
	assert_string_equal(devs[2]->pci_path, "");
	assert_false(devs[2]->pci_from_netdev);
	assert_string_equal(devs[2]->nccl_pci_path, "");
}

static void test_free_releases_leftover_mrs(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "rxe0",
		  .nports = 1,
		  .ports = { { .gids = { [1] = { "198.18.0.2", IBV_GID_TYPE_ROCE_V2, 3 } } } } },
	};
	static char buf[8192];
	struct rn_mr *mr;

	fixture_sysfs_netdev("eth1", 3, "52:54:00:12:34:56", 1500, "up");
	fake_verbs_install(fd, 1);
	discover();
	assert_int_equal(ndevs, 1);
	/* NCCL never deregisters this one: closing the device must, or the PD leaks. */
	assert_int_equal(rn_mr_get(devs[0], buf, sizeof(buf), RN_PTR_HOST, -1, 0, &mr), 0);
	/* teardown frees the device and asserts no fake object is left alive */
}

static void test_renamed_rxe_by_parent(void **state)
{
	static struct fake_dev fd[] = { { .name = "roce_a", .nports = 1 } };

	fixture_sysfs_write("/sys/class/infiniband/roce_a/parent", "eth2");
	fixture_sysfs_netdev("eth2", 4, "52:54:00:00:00:02", 1500, "up");
	fake_verbs_install(fd, 1);
	discover();
	assert_int_equal(ndevs, 1);
	assert_true(devs[0]->is_rxe);
	assert_string_equal(devs[0]->nic.netdev, "eth2");
	assert_int_equal(devs[0]->nic.link_up, 1);
}

static void test_ptr_support_probes(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0", .nports = 1, .dmabuf = 1 },
		{ .name = "mlx5_1", .nports = 1, .dmabuf = 0 },
	};

	fixture_sysfs_write("/sys/module/nvidia_peermem/version", "1.0");
	fake_verbs_install(fd, 2);
	discover();
	assert_int_equal(ndevs, 2);
	assert_int_equal(devs[0]->ptr_support, RN_PTR_HOST | RN_PTR_CUDA | RN_PTR_DMABUF);
	assert_int_equal(devs[1]->ptr_support, RN_PTR_HOST | RN_PTR_CUDA);
}

static void test_failed_open_skipped(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "mlx5_0", .nports = 1, .fail_open = EACCES },
		{ .name = "mlx5_1", .nports = 1 },
	};

	fake_verbs_install(fd, 2);
	discover();
	assert_int_equal(ndevs, 1);
	assert_string_equal(devs[0]->nic.ibdev, "mlx5_1");
}

static void test_max_devices(void **state)
{
	static struct fake_dev fd[] = {
		{ .name = "a", .nports = 2 },
		{ .name = "b", .nports = 2 },
	};

	fake_verbs_install(fd, 2);
	ndevs = rn_dev_discover(&cfg, devs, 3, why, sizeof(why), NULL);
	assert_int_equal(ndevs, 3);
}

static void test_speed_table(void **state)
{
	struct ibv_port_attr pa = { 0 };

	pa.active_speed = 1, pa.active_width = 1;
	assert_int_equal(rn_port_speed_mbps(&pa), 2500);
	pa.active_speed = 64, pa.active_width = 2;   /* HDR x4 */
	assert_int_equal(rn_port_speed_mbps(&pa), 200000);
	pa.active_speed = 128, pa.active_width = 16; /* NDR x2 */
	assert_int_equal(rn_port_speed_mbps(&pa), 200000);
	pa.active_speed = 16, pa.active_width = 8;   /* FDR x12 */
	assert_int_equal(rn_port_speed_mbps(&pa), 168000);
	pa.active_speed = 4, pa.active_width = 4;    /* QDR x8 */
	assert_int_equal(rn_port_speed_mbps(&pa), 80000);
}

/* XDR: a code only active_speed_ex holds, or (an older libibverbs) the kernel's rate. */
static void test_speed_xdr(void **state)
{
	struct ibv_port_attr pa = { 0 };

	assert_int_equal(rn_speed_code_mbps(0x100, 2), 800000);  /* XDR x4 */
	assert_int_equal(rn_speed_code_mbps(0x100, 16), 400000); /* XDR x2 */
	assert_int_equal(rn_speed_code_mbps(0x80, 2), 400000);   /* NDR x4 */
	pa.active_speed = 0; /* the 8-bit field cannot say XDR */
	pa.active_width = 2;
	fixture_sysfs_write("/sys/class/infiniband/mlx5_9/ports/1/rate", "800 Gb/sec (4X XDR)\n");
	assert_int_equal(rn_dev_port_speed("mlx5_9", 1, &pa), 800000);
	pa.active_speed = 64; /* a field that holds it wins */
	assert_int_equal(rn_dev_port_speed("mlx5_9", 1, &pa), 200000);
	pa.active_speed = 0;  /* no rate file: the old answer */
	assert_int_equal(rn_dev_port_speed("mlx5_8", 1, &pa), 10000);
}

/*
 * Outside the fakes and fixtures nothing reaches the machine: every unit test starts from
 * an all-failing base (fake_base.c), and a fake's reset comes back to it, not to the real
 * libibverbs, netlink or /sys (which on a host with RDMA NICs would be read by omission).
 */
static void test_fakes_start_from_a_failing_base(void **state)
{
	struct rn_nl_link *l = NULL;
	char buf[64];
	int n = -1;

	(void)state;
	assert_int_equal(rn_sys.read("/proc/version", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(rn_nl.link_dump(&l, &n), -ENOSYS);
	assert_null(rn_verbs.get_device_list(&n));
	assert_int_equal(n, 0);
	fake_verbs_install(NULL, 0);
	assert_int_equal(fake_verbs_uninstall(), 0);
	assert_null(rn_verbs.get_device_list(&n));
	fixture_sysfs_create();
	fixture_sysfs_write("/proc/version", "fixture\n");
	assert_int_equal(rn_sys.read("/proc/version", buf, sizeof(buf)), 0);
	fixture_sysfs_destroy();
	assert_int_equal(rn_sys.read("/proc/version", buf, sizeof(buf)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fakes_start_from_a_failing_base),
		cmocka_unit_test_setup_teardown(test_no_devices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_down_port_and_ib_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_usable_says_why, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_skipped_ports_never_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hca_filter_applies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hca_excludes_everything, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hca_unreadable_exclusion_offers_none, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_identity_pci_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity_rxe, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rxe_pci_path_from_netdev, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dual_port_numbering, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_port_device_numbering, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vf_numbering, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vf_numbering_unmerged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_renamed_rxe_by_parent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ptr_support_probes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_open_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_devices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_releases_leftover_mrs, setup, teardown),
		cmocka_unit_test(test_speed_table),
		cmocka_unit_test_setup_teardown(test_speed_xdr, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
