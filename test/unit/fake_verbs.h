/* SPDX-License-Identifier: MIT */
/*
 * A fake verbs device model for unit tests: devices, ports, GID tables, PDs and MRs
 * (MRs register real host memory, so a wire fake can look keys up and copy).
 * Install with fake_verbs_install(); it overrides the device-level ops of rn_verbs.
 * Queue pairs and completion queues are another fake's business (fake_wire.c).
 */
#ifndef FAKE_VERBS_H
#define FAKE_VERBS_H

#include <infiniband/verbs.h>
#include <stdint.h>

#define FAKE_MAX_GIDS 16
#define FAKE_MAX_PORTS 4

struct fake_gid {
	const char *addr;       /* "198.18.0.1" (IPv4-mapped), "fe80::1", NULL = empty slot */
	enum ibv_gid_type type; /* IBV_GID_TYPE_ROCE_V1 / IBV_GID_TYPE_ROCE_V2 */
	uint32_t ifindex;       /* netdev the GID belongs to (0: attribute unreadable) */
};

struct fake_port {
	enum ibv_port_state state;   /* 0 means IBV_PORT_ACTIVE, for short fixtures */
	uint8_t link_layer;          /* 0 means IBV_LINK_LAYER_ETHERNET */
	enum ibv_mtu active_mtu;     /* 0 means IBV_MTU_1024 */
	uint8_t active_width;        /* 0 means 1X (1) */
	uint8_t active_speed;        /* 0 means 2.5 Gbps (1) */
	struct fake_gid gids[FAKE_MAX_GIDS];
	int gid_fail[FAKE_MAX_GIDS]; /* query_gid_ex fails with this errno (unreadable attrs) */
};

struct fake_dev {
	const char *name;
	uint64_t guid;
	int nports;
	struct fake_port ports[FAKE_MAX_PORTS];
	int dmabuf;     /* reg_dmabuf_mr supported */
	int table_fail; /* query_gid_table fails with this errno (no table method) */
	int fail_open;  /* open_device fails with this errno */
	int no_atomics; /* atomic_cap IBV_ATOMIC_NONE */
};

/* How often the GID reads were called since the test zeroed this. */
struct fake_verbs_calls {
	int query_gid_ex;
	int query_gid_table;
};
extern struct fake_verbs_calls fake_verbs_calls;

/* Install @n devices (the array must outlive the test). */
void fake_verbs_install(struct fake_dev *devs, int n);
/* Restore the real verbs and check nothing leaked: returns the number of open objects. */
int fake_verbs_uninstall(void);

/* Objects currently alive (contexts + PDs + MRs). */
int fake_verbs_live_objects(void);

/* Look a registered MR up by rkey/lkey (NULL when none): for the wire fake. */
struct ibv_mr *fake_verbs_mr_find(uint32_t key);

/* The fake_dev behind a context. */
struct fake_dev *fake_verbs_dev_of(struct ibv_context *ctx);

#endif /* FAKE_VERBS_H */
