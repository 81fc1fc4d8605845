/* SPDX-License-Identifier: MIT */
/*
 * The device table and the engine: the process-wide state behind the plugin,
 * reference-counted because NCCL >= 2.28 calls init/finalize once per
 * communicator. src/dev.c discovers devices (NCCL_IB_HCA filter, ACTIVE
 * Ethernet ports), src/engine.c owns the refcount.
 */
#ifndef RN_DEV_H
#define RN_DEV_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "rn_param.h"
#include "rn_path.h"

#define RN_MAX_DEVS 32

/* Same bits as NCCL_PTR_* */
#define RN_PTR_HOST 0x1
#define RN_PTR_CUDA 0x2
#define RN_PTR_DMABUF 0x4

struct rn_mr_cache; /* src/mr.c */

struct rn_dev {
	struct rn_nic nic; /* identity, GID choice, verdict */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	/*
	 * The RDMA device's PCI function or, where it has none (rxe, siw), its netdev's
	 * (pci_from_netdev); "" when neither has one (rxe over veth).
	 */
	char pci_path[PATH_MAX];
	int pci_from_netdev;
	/*
	 * What NCCL is told, numbered as net_ib does: the PCI path with the function
	 * made 0, so the functions of one multi-port NIC are one device, and the port
	 * plus the devices found before on that path (mlx5_0:1 -> 1, mlx5_1:1 -> 2).
	 */
	char nccl_pci_path[PATH_MAX];
	int nccl_port;
	int rail, plane; /* NCCL_IB_HCA name::rail:plane (2.30), -1 = unset */
	uint64_t guid;
	int speed_mbps;
	int is_rxe;           /* Soft-RoCE: retry_cnt 7 means forever there */
	int ptr_support;      /* RN_PTR_* */
	int relaxed_ordering; /* MRs get IBV_ACCESS_RELAXED_ORDERING */
	uint32_t max_msg_size;
	struct rn_mr_cache *mrs;
	pthread_mutex_t lock;
	int kept_out_told; /* the flap limit's WARN was given (src/failover.c, lock) */
};

/*
 * A vNIC (NCCL's NIC fusion, makeVDevice): physical devices used as one. NCCL numbers
 * it after the physical devices (ndevs + its index here). Entries are only appended,
 * and never change once nvdevs counts them, so readers need no lock.
 */
#define RN_MAX_VDEVS RN_MAX_DEVS

struct rn_vdev {
	int n;
	int devs[RN_VNIC_MAX];       /* physical device indices, in the order NCCL gave */
	char name[RN_VNIC_MAX * 64]; /* "mlx5_0+mlx5_1", what getProperties reports */
};

struct rn_engine {
	struct rn_config cfg;
	int ndevs; /* physical devices offered to NCCL */
	struct rn_dev *devs[RN_MAX_DEVS];
	char hostname[64];
	int nvdevs; /* vNICs made so far (atomic: read without the lock) */
	struct rn_vdev vdevs[RN_MAX_VDEVS];
};

/*
 * Take a reference on the engine, initialising it on the first one of the library's
 * life (config, devices, route verdicts). -ENODEV when no usable RoCE device is left;
 * the reason has been logged once, and the next get tries again. rn_engine_put()
 * drops the reference (safe after a failed get); the last one releases what belongs
 * to communicators, never the devices or the vNICs: NCCL keeps their indices for as
 * long as the library stays loaded.
 */
int rn_engine_get(struct rn_engine **out);
void rn_engine_put(void);
/*
 * Free the devices and vNICs (the library's destructor; tests). 0, or -EBUSY while a
 * reference is held (nothing freed). The next get discovers again.
 */
int rn_engine_unload(void);

/*
 * Close what NCCL left open on @eng (listeners, handshakes, comms, registrations), with
 * one INFO line saying what; rn_engine_put() runs it at the last reference.
 */
void rn_engine_close_leftovers(struct rn_engine *eng);

/* The engine while at least one reference is held, else NULL. */
struct rn_engine *rn_engine_current(void);

/*
 * A private engine over devices the caller discovered and judged itself (roce-doctor's
 * RDMA probe): @cfg is used as given (no environment read), no second discovery.
 * Keeps the devices whose NIC holds a GID choice (rn_nic_assess); they stay the
 * caller's, who frees them only after the engine's last comm is closed (the engine
 * itself holds nothing to free). 0, or -ENODEV when no device has a GID.
 */
int rn_engine_init_with(struct rn_engine *eng, const struct rn_config *cfg, const char *hostname,
			struct rn_dev *const *devs, int n);

/*
 * NIC fusion (src/vdev.c). rn_vdev_make() checks @n members (1..RN_VNIC_MAX, each a
 * physical device index, no repeats, one link layer) and appends the vNIC, returning
 * its NCCL index (ndevs + k) in @out; the same members in the same order give the same
 * vNIC again (NCCL may merge once per communicator). 0, -EINVAL (bad members, logged)
 * or -ENOSPC (table full). Nothing changes on an error.
 */
int rn_vdev_make(struct rn_engine *eng, const int *devs, int n, int *out);
/* Physical devices plus vNICs: what NCCL's devices() gets. */
int rn_engine_ndevs_all(const struct rn_engine *eng);
/* The vNIC at NCCL index @dev, NULL for a physical (or no) device. */
const struct rn_vdev *rn_engine_vdev(const struct rn_engine *eng, int dev);
/*
 * The physical devices behind NCCL index @dev into @out (RN_VNIC_MAX entries): one
 * for a physical device, the members for a vNIC. The count, or -EINVAL for no device.
 */
int rn_engine_members(const struct rn_engine *eng, int dev, struct rn_dev **out);

/*
 * What NCCL's getProperties reports of index @dev, a physical device or a vNIC, decided
 * here alone (plugin/ only translates): a vNIC is its first member's identity (PCI path,
 * guid, port, rail, plane: where NCCL's topology places it) with the members' summed
 * speed, the fewest QPs any member allows and the pointer kinds every member supports.
 */
struct rn_props {
	const char *name;     /* "mlx5_0", a vNIC's "mlx5_0+mlx5_1" */
	const char *pci_path; /* NULL: none */
	uint64_t guid;
	int ptr_support;      /* RN_PTR_* */
	int speed_mbps;
	int port;
	int max_comms;
	int rail, plane; /* -1: not given */
	int ndevs;       /* the physical devices behind it */
	int devs[RN_VNIC_MAX];
};
/* 0, or -EINVAL for no device @dev. */
int rn_engine_props(const struct rn_engine *eng, int dev, struct rn_props *out);

/*
 * NCCL_IB_HCA matching, exactly as NCCL: comma list of name[:port], a leading '^'
 * excludes, a leading '=' asks for exact names (else prefix match). Returns 1 when
 * @ibdev/@port is selected by @spec ("" selects everything).
 */
int rn_hca_match(const char *spec, const char *ibdev, int port);
/*
 * As rn_hca_match, and for an inclusion list the rail and plane the matching entry gives
 * (NCCL 2.30's name[:port[:rail[:plane]]], e.g. "mlx5_0::3:1": any port, rail 3,
 * plane 1); -1 where the entry leaves them out or empty.
 */
int rn_hca_lookup(const char *spec, const char *ibdev, int port, int *rail, int *plane);

/*
 * Device discovery (src/dev.c), used by the engine. Opens every RDMA device port that
 * is ACTIVE, Ethernet and selected by NCCL_IB_HCA, fills its identity (netdev, MAC,
 * MTU, PCI path, speed, GID-independent properties), allocates its PD and probes
 * DMA-BUF and GPUDirect. Returns the number of devices put in @out (each freed with
 * rn_dev_free()) or -errno; when it returns 0, @why says why in one line. @nproblems
 * (may be NULL) counts the ports left out for something to fix (down, cannot be
 * opened), not for NCCL_IB_HCA or a link that is not Ethernet.
 */
int rn_dev_discover(const struct rn_config *cfg, struct rn_dev **out, int max, char *why,
		    size_t why_len, int *nproblems);
void rn_dev_free(struct rn_dev *dev);

/* NCCL's speed for a port: active speed (Mbps per lane) x width. */
int rn_port_speed_mbps(const struct ibv_port_attr *pa);
/* The same for an IB speed code as active_speed_ex holds it (XDR = 0x100). */
int rn_speed_code_mbps(uint32_t code, int width);
/* A port's speed: active_speed, or the kernel's rate when that field cannot hold it (XDR). */
int rn_dev_port_speed(const char *ibdev, int port, const struct ibv_port_attr *pa);

#endif /* RN_DEV_H */
