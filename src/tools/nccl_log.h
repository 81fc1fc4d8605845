/* SPDX-License-Identifier: MIT */
/*
 * NCCL's log filter, for the tools that stand in for NCCL (driver, bench): what a
 * user would see from NCCL is what they see from us. NCCL shows a line only when
 * its level is within NCCL_DEBUG and its subsystem flags meet NCCL_DEBUG_SUBSYS,
 * WARNs included, and writes to NCCL_DEBUG_FILE when set. The one difference: with
 * NCCL_DEBUG unset NCCL prints nothing, the tools show WARNs (they exist to say why).
 */
#ifndef RN_NCCL_LOG_H
#define RN_NCCL_LOG_H

#include <stdint.h>
#include <stdio.h>

#include "nccl/net_abi.h"

/* NCCL_DEBUG_SUBSYS when unset: INIT,BOOTSTRAP,ENV. */
#define NCCL_LOG_DEFAULT_MASK (0x1ull | 0x80ull | 0x1000ull)

/*
 * NCCL_DEBUG's value -> level: VERSION, WARN, INFO, ABORT, TRACE in any case. NULL
 * gives @unset; any other word is NCCL_LOG_NONE, as NCCL shows nothing then.
 */
ncclDebugLogLevel nccl_log_parse_level(const char *v, ncclDebugLogLevel unset);

/*
 * NCCL_DEBUG_SUBSYS's value -> mask: a comma list of INIT COLL P2P SHM NET GRAPH
 * TUNING ENV ALLOC CALL PROXY NVLS BOOTSTRAP REG PROFILE RAS ALL (any case); a
 * leading '^' starts from all and removes the named ones. Unknown names count for
 * nothing, as in NCCL. NULL gives the default mask.
 */
uint64_t nccl_log_parse_subsys(const char *v);

/*
 * NCCL_DEBUG_FILE's pattern -> file name: %h the host name, %p the pid, %% a '%',
 * any other %x kept as is. 0, or -ENAMETOOLONG when @len is too small.
 */
int nccl_log_expand_file(const char *pattern, const char *host, int pid, char *out, size_t len);

/*
 * Whether a line of @level and @flags is shown, given the threshold @threshold
 * (NCCL_DEBUG, or a tool's -v) and NCCL_DEBUG_SUBSYS, read once.
 */
int nccl_log_wanted(ncclDebugLogLevel level, unsigned long flags, ncclDebugLogLevel threshold);

/* Where shown lines go: NCCL_DEBUG_FILE (opened once, when the threshold is above
 * VERSION, as NCCL does), else stdout. */
FILE *nccl_log_stream(ncclDebugLogLevel threshold);

#endif /* RN_NCCL_LOG_H */
