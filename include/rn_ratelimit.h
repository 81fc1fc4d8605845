/* SPDX-License-Identifier: MIT */
/*
 * Once-per-peer-per-period logging (src/ratelimit.c): a flood of connections from
 * one address must not flood the log, yet the first drop from each address must be
 * seen under NCCL's defaults (WARN). Keyed by the peer's IP (ports change with
 * every connection); a small process-wide table, the least recently warned-about
 * entry reused when full.
 */
#ifndef RN_RATELIMIT_H
#define RN_RATELIMIT_H

#include <stdint.h>
#include <sys/socket.h>

#define RN_RATELIMIT_PEERS 64

/*
 * 1 when a message about @peer may be logged now (and then *@suppressed says how
 * many were held back since the last one), 0 when one was logged within
 * @period_ns (counted in *@suppressed for next time). Thread-safe.
 */
int rn_ratelimit_peer(const struct sockaddr_storage *peer, uint64_t now_ns, uint64_t period_ns,
		      unsigned int *suppressed);
/* The same, one period for each @kind of message about a peer (a drop and a rejection are
 * different news). */
int rn_ratelimit_peer_kind(const struct sockaddr_storage *peer, int kind, uint64_t now_ns,
			   uint64_t period_ns, unsigned int *suppressed);
/* Forget every peer (tests). */
void rn_ratelimit_reset(void);

#endif /* RN_RATELIMIT_H */
