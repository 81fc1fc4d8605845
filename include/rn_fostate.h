/* SPDX-License-Identifier: MIT */
/*
 * The host's record of failovers (src/fostate.c): the plugin appends one line per move
 * to <dir>/failovers, the doctor counts them per NIC for --prometheus
 * (roce_nic_failovers_total). <dir> is NCCL_ROCE_STATE_DIR, /run/nccl-net-roce by default:
 * every rank of every job on the host writes there, with O_APPEND, one write() per line
 * (whole lines, never interleaved). A record past RN_FOSTATE_MAX bytes takes no more lines.
 *
 * Line: "<unix seconds> <ibdev> <port> <netdev> <to ibdev> <pid> <cause>\n" (cause: one
 * word: port-down, completion, gid-gone, device-fatal, peer-moved).
 */
#ifndef RN_FOSTATE_H
#define RN_FOSTATE_H

#include <stdint.h>

#define RN_FOSTATE_DIR "/run/nccl-net-roce"
#define RN_FOSTATE_FILE "failovers"
#define RN_FOSTATE_MAX (1024 * 1024)

/* The directory: $NCCL_ROCE_STATE_DIR when set (not empty), else RN_FOSTATE_DIR. */
const char *rn_fostate_dir(void);

/* Append one move from @ibdev:@port (@netdev) to @to. 0 or -errno (the caller says it once). */
int rn_fostate_add(const char *dir, const char *ibdev, int port, const char *netdev, const char *to,
		   const char *cause);

/*
 * The moves away from @ibdev:@port in @dir's record: their count in @n and the newest's
 * time in @last (0 none). 0 (a missing record is 0 moves), or -errno when it cannot be read.
 */
int rn_fostate_count(const char *dir, const char *ibdev, int port, uint64_t *n, uint64_t *last);

/* Each NIC the record names, in the order first seen: moves off it and the newest's time. */
struct rn_fostate_nic {
	char ibdev[64], netdev[64];
	int port;
	uint64_t n, last;
};

/*
 * Fill @out (room for @max) with every NIC @dir's record names; the count, or -errno when
 * the record cannot be read (a missing record names none: 0). NICs past @max are dropped.
 */
int rn_fostate_nics(const char *dir, struct rn_fostate_nic *out, int max);

#endif /* RN_FOSTATE_H */
