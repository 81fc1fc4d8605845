/* SPDX-License-Identifier: MIT */
/*
 * What the tools share besides the plugin loader and rn_cli.h: NCCL-style logging
 * filtered by NCCL_DEBUG, and the TCP side channel that carries a listen handle from
 * one process to the other (as NCCL's bootstrap does).
 */
#ifndef RN_TOOL_COMMON_H
#define RN_TOOL_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl/net_abi.h"

/* An ncclDebugLogger_t printing "host:pid:tid [0] NCCL INFO ..." lines to stdout. */
void tool_logger(ncclDebugLogLevel level, unsigned long flags, const char *file, int line,
		 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/*
 * vsnprintf for formats that come from a plugin (the logger's): a %s whose pointer is not
 * readable memory prints "(bad pointer)" instead of faulting (a plugin's format with more
 * conversions than arguments reads whatever the registers held), NULL prints "(null)", %n
 * writes nothing, an unknown conversion is copied as text. The rest as vsnprintf. Returns
 * the length written (always NUL-terminated when @len > 0).
 */
int tool_vformat(char *buf, size_t len, const char *fmt, va_list ap);
/* Threshold of tool_logger: NCCL_DEBUG, default WARN; set outright (tests: NONE). */
void tool_log_set_level(ncclDebugLogLevel level);
ncclDebugLogLevel tool_log_level(void);
/* The threshold raised to @level (-v: INFO); a higher one (NCCL_DEBUG=TRACE) stays. */
void tool_log_at_least(ncclDebugLogLevel level);
/* The text of the last WARN the plugin logged (even below the threshold), "" if none:
 * the reason a tool gives when the plugin refuses something. */
const char *tool_last_warn(void);

/* Sleep @us microseconds (nothing for <= 0): the nap after an idle poll round. */
void tool_nap(int us);

/* Monotonic seconds. */
double tool_now(void);

/*
 * Side channel over TCP, IPv4 or IPv6 "addr:port" / "[addr]:port", or a local
 * "unix:/path" socket (tests).
 * side_listen() binds and listens; side_accept() waits up to @timeout_ms for the
 * peer; side_connect() retries until @timeout_ms. Return an fd or -errno.
 */
int side_listen(const char *addr);
/* 0 when @addr is a numeric address and port (or unix:PATH) side_* accept, else -EINVAL:
 * a command line is checked before any work. */
int side_addr_check(const char *addr);
int side_accept(int lfd, int timeout_ms);
/*
 * Wait up to @timeout_ms for the peer: the first connection whose first bytes are the @len
 * bytes of @greeting (the peer's hello). Any other connection (a port scanner's connect and
 * close, garbage, an idle one) is closed and the wait goes on; at most SIDE_MAX_PENDING wait
 * for their greeting at once, the oldest making room. Returns the peer's fd or -errno
 * (-ETIMEDOUT when no peer came).
 */
#define SIDE_MAX_PENDING 8
int side_accept_greeted(int lfd, const void *greeting, size_t len, int timeout_ms);
int side_connect(const char *addr, int timeout_ms);
/* Exactly @len bytes within @timeout_ms. 0 or -errno (-ETIMEDOUT, -ECONNRESET). */
int side_send(int fd, const void *buf, size_t len, int timeout_ms);
int side_recv(int fd, void *buf, size_t len, int timeout_ms);

/* Test data: message @id is a pattern of 64-bit words mixing @id and the word's index. */
void tool_fill(unsigned char *buf, size_t size, uint64_t id);
/* -1 when @buf holds message @id, else the offset of the first wrong byte. */
long tool_check(const unsigned char *buf, size_t size, uint64_t id);
/* A checksum of what really moved, compared by both ends at the end of a run. */
uint64_t tool_checksum(const unsigned char *buf, size_t size, uint64_t id);

#endif /* RN_TOOL_COMMON_H */
