/* SPDX-License-Identifier: MIT */
/*
 * Port counters of every local RoCE NIC (src/counters.c), read through the sysfs
 * edge: /sys/class/infiniband/DEV/ports/P/{hw_counters,counters}/ and the netdev's
 * statistics. Each driver names its counters its own way (one table per driver in
 * counters.c); a snapshot holds what the NIC's driver has, by role. Two snapshots
 * around a failure tell apart what the route check cannot: replies landing on
 * another local NIC, nothing coming back, retransmissions, congestion marks, RNR,
 * link downs. None of this runs on the data path: a snapshot is taken when a comm
 * is made, at its first error, and by the event threads every RN_CTR_TICK_NS.
 */
#ifndef RN_COUNTERS_H
#define RN_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "rn_verdict.h"

enum rn_ctr {
	RN_CTR_TX = 0,       /* RoCE packets sent */
	RN_CTR_RX,           /* RoCE packets received */
	RN_CTR_TIMEOUT,      /* retransmissions after an ACK timeout */
	RN_CTR_SEQ_NAK,      /* sequence-error NAKs received (we retransmit) */
	RN_CTR_OOS,          /* out-of-sequence packets received */
	RN_CTR_DUP,          /* duplicate requests received */
	RN_CTR_RNR,          /* receiver-not-ready NAKs received */
	RN_CTR_RETRY_EXC,    /* QPs that ran out of retries */
	RN_CTR_CNP_SENT,     /* congestion notifications sent (we saw ECN marks) */
	RN_CTR_CNP_RCVD,     /* congestion notifications handled (we were told to slow) */
	RN_CTR_ECN,          /* ECN-marked RoCE packets received */
	RN_CTR_LINK_DOWNED,  /* the port's link went down */
	RN_CTR_NETDEV_RX,    /* the netdev's rx_packets */
	RN_CTR_CARRIER_DOWN, /* the netdev's carrier_down_count */
	RN_CTR__MAX
};

/* A snapshot of every local RoCE NIC's counters at @t_ns (CLOCK_MONOTONIC). */
struct rn_ctr_nic_vals {
	uint64_t v[RN_CTR__MAX];
	uint32_t have; /* bit per enum rn_ctr read */
};
struct rn_ctr_snap {
	uint64_t t_ns;
	int n;
	struct rn_ctr_nic_vals nic[];
};

#define RN_CTR_TICK_NS (500ull * 1000000ull)

/* A snapshot now (malloc'd; rn_ctr_snap_free). NULL with errno on failure. */
struct rn_ctr_snap *rn_ctr_snap_take(void);
void rn_ctr_snap_free(struct rn_ctr_snap *s);
struct rn_ctr_snap *rn_ctr_snap_dup(const struct rn_ctr_snap *s);

/*
 * The process-wide history: rn_ctr_tick() adds a snapshot when the newest is older than
 * RN_CTR_TICK_NS (the event threads call it, RN_CTR_RING kept); rn_ctr_recent() copies the
 * newest one taken at or before @before_ns, else the oldest kept (NULL: none).
 */
void rn_ctr_tick(uint64_t now_ns);
struct rn_ctr_snap *rn_ctr_recent(uint64_t before_ns);
/*
 * A comm's baseline: a copy of the history's newest snapshot when it is younger than
 * RN_CTR_TICK_NS at @now_ns or newer than it (an event thread's, read while this waited for
 * it), else a new one, added to the history. Reading every NIC's counters costs
 * ~6 sysfs files per NIC, and NCCL makes hundreds of comms in a burst at start.
 */
struct rn_ctr_snap *rn_ctr_snap_shared(uint64_t now_ns);

/* The driver whose table applies to @ibdev ("rxe", "mlx5", ..., "unknown"); NULL: no such NIC. */
const char *rn_ctr_driver(const char *ibdev, int port);
/* What the driver of @ibdev lacks ("" when it has every counter the diagnosis reads). */
const char *rn_ctr_lacks(const char *ibdev, int port, char *buf, size_t len);

/*
 * What the counters of @ibdev:@port did between @a and @b and the other local NICs between
 * @wide (an earlier snapshot; NULL: @a) and @b, judged for a comm to the peer described in
 * @v (rn_conn_vars' keys). Sets "figures" (the
 * deltas that support the cause) and "counters" (a summary line, always) in @v and returns
 * the cause: RN_CAUSE_REPLIES_ELSEWHERE, _NO_REPLY, _RNR, _FABRIC_LOSS, _CONGESTION, or
 * RN_CAUSE_NONE when they show nothing wrong (or cannot be read).
 */
enum rn_cause rn_ctr_judge(const struct rn_ctr_snap *a, const struct rn_ctr_snap *wide,
			   const struct rn_ctr_snap *b, const char *ibdev, int port,
			   struct rn_vars *v);
/* The link-downed and lost-carrier deltas of @ibdev:@port between @a and @b (0: none). */
uint64_t rn_ctr_delta(const struct rn_ctr_snap *a, const struct rn_ctr_snap *b, const char *ibdev,
		      int port, enum rn_ctr c);

/* The role as the diagnosis names it ("retransmission timeouts"); "" out of range. */
const char *rn_ctr_role_name(int role);

/* One counter of a port by the name its driver gives it, in base units. */
struct rn_ctr_named {
	char name[64];  /* the file's name under hw_counters/ or counters/ ("sent_pkts") */
	uint64_t value; /* bytes for the PMA data counters (port_xmit_data, port_rcv_data) */
	int role;       /* the enum rn_ctr the driver's table reads from it, -1 none */
};

/*
 * Every counter of the RoCE port @ibdev:@port (hw_counters/ and counters/; a name in both
 * once, hw_counters' value), sorted by name, in base units: the IB PMA's port_xmit_data
 * and port_rcv_data count 4-byte words and come back in bytes. A file that does not read
 * as a number (hw_counters/lifespan is a setting; a PMA counter the driver does not
 * answer fails) is left out. @out gets a malloc'd array (free()), NULL when empty.
 * Returns how many, or -ENODEV (no such RoCE port) / -ENOMEM.
 */
int rn_ctr_read_named(const char *ibdev, int port, struct rn_ctr_named **out);

/* Forget the NIC list (tests that change the fake sysfs between cases). */
void rn_ctr_reset(void);

#endif /* RN_COUNTERS_H */
