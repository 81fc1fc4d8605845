/* SPDX-License-Identifier: MIT */
/*
 * Logging. Every message of the library goes through rn_log(); the sink is NCCL's
 * logger inside the plugin and stderr (filtered by NCCL_DEBUG) everywhere else.
 * The macros save and restore errno so that logging never changes an error path.
 */
#ifndef RN_LOG_H
#define RN_LOG_H

#include <stdarg.h>
#include "rn_compiler.h"

/* Same numbers as NCCL's ncclDebugLogLevel, so the plugin passes them through. */
enum rn_log_level {
	RN_LOG_NONE = 0,
	RN_LOG_VERSION = 1,
	RN_LOG_WARN = 2,
	RN_LOG_INFO = 3,
	RN_LOG_ABORT = 4,
	RN_LOG_TRACE = 5,
};

/* Same bits as NCCL's ncclDebugLogSubSys (the ones we use). */
enum rn_log_sub {
	RN_SUB_INIT = 0x1,
	RN_SUB_NET = 0x10,
	RN_SUB_ENV = 0x80,
};

/*
 * A sink receives one fully formatted line without the trailing newline.
 * The plugin installs one that forwards to NCCL's logger.
 */
typedef void (*rn_log_sink_fn)(enum rn_log_level level, unsigned long sub, const char *file,
			       int line, const char *msg);

/* Install @sink (NULL restores the stderr sink). Not thread-safe: call at init. */
void rn_log_set_sink(rn_log_sink_fn sink);

/* Level the stderr sink lets through, read from NCCL_DEBUG (default WARN). */
enum rn_log_level rn_log_level_from_env(void);

/* Raise or lower the threshold of the stderr sink (tools use this for -v / -q). */
void rn_log_set_level(enum rn_log_level level);

/* True when a message at @level would be shown (to skip expensive formatting). */
int rn_log_enabled(enum rn_log_level level);

void rn_log(enum rn_log_level level, unsigned long sub, const char *file, int line, const char *fmt,
	    ...) __rn_printf(5, 6);

#define rn_warn(sub, ...) rn_log(RN_LOG_WARN, (sub), __FILE__, __LINE__, __VA_ARGS__)
#define rn_info(sub, ...) rn_log(RN_LOG_INFO, (sub), __FILE__, __LINE__, __VA_ARGS__)
#define rn_trace(sub, ...) rn_log(RN_LOG_TRACE, (sub), __FILE__, __LINE__, __VA_ARGS__)

/* NCCL prefixes every line of a net transport with its name; we do the same. */
#define RN_PFX "NET/RoCE : "

#endif /* RN_LOG_H */
