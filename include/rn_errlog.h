/* SPDX-License-Identifier: MIT */
/*
 * The host's journal of failed comms (src/errlog.c): when the plugin fails a comm with a
 * diagnosis, it appends one JSON line to <dir>/errors.jsonl, so that the cause outlives
 * the job's log and reaches whoever looks at the node (roce-doctor, the scheduler's
 * health check). <dir> is NCCL_ROCE_STATE_DIR (rn_fostate_dir(): /run/nccl-net-roce).
 * Every rank of every job on the host appends there with O_APPEND, one write() per
 * record (whole lines: the file's lock keeps writes apart). Bounded: a journal past
 * RN_ERRLOG_MAX bytes is renamed to errors.jsonl.1 (the one before is dropped), so the
 * two files hold at most twice that.
 *
 * A record: {"time": <unix s>, "host": …, "pid": …, "cause": <verdict catalogue id>,
 * "status": <ibv_wc_status name or what failed>, "nic": "rxe0:1", "netdev", "ip",
 * "peer_host", "peer_netdev", "peer_ip", "counters": <the figures the WARN gave>}.
 */
#ifndef RN_ERRLOG_H
#define RN_ERRLOG_H

#include <stdint.h>

#define RN_ERRLOG_FILE "errors.jsonl"
#define RN_ERRLOG_MAX (1024 * 1024)
#define RN_ERRLOG_LINE 4000 /* a record longer than this is cut in its counters */

struct rn_errlog_rec {
	const char *cause;  /* the verdict catalogue's id (rn_cause_id), "unknown" when none */
	const char *status; /* e.g. RETRY_EXC_ERR, port-down, peer-closed */
	const char *ibdev;
	int port;
	const char *netdev;
	const char *ip;
	const char *peer_host;
	const char *peer_netdev;
	const char *peer_ip;
	const char *counters; /* NULL: none */
};

/* Append @r to @dir's journal (rotating it first when full). 0 or -errno. */
int rn_errlog_add(const char *dir, const struct rn_errlog_rec *r);

#endif /* RN_ERRLOG_H */
