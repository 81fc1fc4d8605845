/* SPDX-License-Identifier: MIT */
/*
 * Configuration: one table of environment knobs (src/param.c). The NCCL_IB_* ones
 * keep NCCL's names and defaults so existing job scripts keep working; ours are
 * NCCL_ROCE_*. A bad value is reported once (WARN naming the variable and what it
 * accepts) and replaced by the default: a typo must never take a job down.
 */
#ifndef RN_PARAM_H
#define RN_PARAM_H

#include <stddef.h>

struct rn_ip;

enum rn_route_check {
	RN_ROUTE_CHECK_OFF = 0,
	RN_ROUTE_CHECK_WARN = 1,
	RN_ROUTE_CHECK_STRICT = 2,
};

#define RN_CFG_STR_MAX 256
/* NICs fused in one vNIC (NCCL_NET_MAX_DEVS_PER_NIC v12): the device table's and the
 * handshake's bound, here so that rn_dev.h needs no handshake header. */
#define RN_VNIC_MAX 8
/* NCCL_IB_HCA: an exclusion list on a big host easily passes 256 characters */
#define RN_HCA_STR_MAX 4096

/* Sibling NIC pairs a comm keeps connected for failover (src/failover.c), at most. */
#define RN_SPARES_MAX 3

struct rn_config {
	char ib_hca[RN_HCA_STR_MAX];        /* NCCL_IB_HCA, "" = all */
	int gid_index;                      /* NCCL_IB_GID_INDEX, -1 = auto */
	int addr_family;                    /* NCCL_IB_ADDR_FAMILY: AF_INET / AF_INET6 */
	char addr_range[RN_CFG_STR_MAX];    /* NCCL_IB_ADDR_RANGE, "" = any */
	int roce_version;                   /* NCCL_IB_ROCE_VERSION_NUM */
	int tc;                             /* NCCL_IB_TC, -1 = communicator's or 0 */
	int fifo_tc;                        /* NCCL_IB_FIFO_TC, -1 = tc */
	int gin_tc;                         /* NCCL_GIN_IB_TC: the RMA backend's, -1 = tc */
	char rma_plugin[128];               /* NCCL_RMA_PLUGIN (NCCL's; warned about) */
	int gin_type;                       /* NCCL_GIN_TYPE, -1 = NCCL's choice */
	int gin_enable;                     /* NCCL_GIN_ENABLE */
	int sl;                             /* NCCL_IB_SL, -1 = communicator's or 0 */
	int timeout;                        /* NCCL_IB_TIMEOUT */
	int retry_cnt;                      /* NCCL_IB_RETRY_CNT */
	int qps_per_conn;                   /* NCCL_IB_QPS_PER_CONNECTION */
	int split_data_on_qps;              /* NCCL_IB_SPLIT_DATA_ON_QPS */
	int pci_relaxed_ordering;           /* NCCL_IB_PCI_RELAXED_ORDERING: 0, 1, 2 = auto */
	int gdr_flush_disable;              /* NCCL_GDR_FLUSH_DISABLE */
	int force_flush;                    /* NCCL_NET_FORCE_FLUSH */
	char socket_ifname[RN_CFG_STR_MAX]; /* NCCL_SOCKET_IFNAME: OOB override */
	int route_check;                    /* NCCL_ROCE_ROUTE_CHECK: enum rn_route_check */
	int neigh_timeout_ms;               /* NCCL_ROCE_NEIGH_TIMEOUT_MS: ARP resolution bound */
	int connect_timeout_ms;             /* NCCL_ROCE_CONNECT_TIMEOUT_MS: handshake bound */
	int ib_disable;                     /* NCCL_IB_DISABLE: 1 = offer no device (as net_ib) */
	int mqp_retry_all;      /* NCCL_IB_MQP_RETRY_ALL: retry modify_qp on any error */
	int mqp_retry_cnt;      /* NCCL_IB_MQP_RETRY_CNT: retries of modify_qp */
	int mqp_retry_sleep_ms; /* NCCL_IB_MQP_RETRY_SLEEP_MSEC: backoff step */
	int merge_vfs;          /* NCCL_IB_MERGE_VFS: VFs numbered as their NIC's ports */
	int merge_nics;         /* NCCL_IB_MERGE_NICS: makeVDevice allowed */
	int failover;           /* NCCL_ROCE_FAILOVER: move a comm off a failed NIC */
	int failover_spares;    /* NCCL_ROCE_FAILOVER_SPARES: pairs kept per comm */
	int ib_port_failover;   /* NCCL_IB_RESILIENCY_PORT_FAILOVER, -1 unset */
	int recovery;           /* NCCL_ROCE_RECOVERY: failed pairs come back */
	int recovery_delay_ms;  /* NCCL_ROCE_RECOVERY_DELAY_MS: up this long first */
	int flap_max;           /* NCCL_ROCE_FLAP_MAX: failures kept out past this */
	int flap_window_s;      /* NCCL_ROCE_FLAP_WINDOW_S: ... within this window */
	int ib_port_recovery;   /* NCCL_IB_RESILIENCY_PORT_RECOVERY, -1 unset */
	char peer_subnets[RN_CFG_STR_MAX]; /* NCCL_ROCE_PEER_SUBNETS: routed peers, CIDR,... */
	char gateways[RN_CFG_STR_MAX];     /* NCCL_ROCE_GATEWAYS: GW or NETDEV=GW,... */
};

/*
 * The list knobs, entry by entry (NCCL_ROCE_PEER_SUBNETS, NCCL_ROCE_GATEWAYS): the
 * @i-th CIDR of @list (an address alone is a host prefix). 0, -ENOENT past the end,
 * -EINVAL for an entry that does not parse.
 */
int rn_cfg_cidr_at(const char *list, int i, struct rn_ip *net, int *len);
/*
 * The @i-th entry of a gateway list: its NETDEV into @dev ("" for a plain GW), its
 * address into @gw. 0, -ENOENT past the end, -EINVAL for an entry that does not parse.
 */
int rn_cfg_gateway_at(const char *list, int i, char *dev, size_t len, struct rn_ip *gw);
/*
 * The gateway NCCL_ROCE_GATEWAYS gives @netdev in @family: its own NETDEV=GW entry
 * first, else the first plain GW entry of that family. 0 or -ENOENT.
 */
int rn_cfg_gateway(const char *list, const char *netdev, int family, struct rn_ip *gw);

/* Fill @cfg with the defaults, then the environment. Returns the number of bad values. */
int rn_config_load(struct rn_config *cfg);

/* Defaults only (tests, tools). */
void rn_config_defaults(struct rn_config *cfg);

/* Log the effective configuration at INFO, one line. */
void rn_config_log(const struct rn_config *cfg);

/* Render "NAME=value NAME=value ..." of every knob into @buf. */
int rn_config_format(const struct rn_config *cfg, char *buf, size_t len);

/* The knob table, for the man page (test/abi/manpages.t checks it against this). */
struct rn_param_desc {
	const char *name;
	const char *def;
	const char *help;
};
const struct rn_param_desc *rn_param_table(size_t *n);

#endif /* RN_PARAM_H */
