// SPDX-License-Identifier: MIT
/*
 * rn_log -> NCCL's logger. NCCL filters by NCCL_DEBUG and NCCL_DEBUG_SUBSYS itself,
 * so every line goes through with its subsystem flags.
 */
#include <stdatomic.h>

#include "plugin.h"
#include "rn_log.h"

static _Atomic(ncclDebugLogger_t) nccl_logger;

static void nccl_sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		      const char *msg)
{
	ncclDebugLogger_t logger = atomic_load(&nccl_logger);
	/* Our own lines are net-transport lines even when the caller named only INIT/ENV. */
	unsigned long flags = (sub & (RN_SUB_INIT | RN_SUB_NET | RN_SUB_ENV)) | NCCL_NET;

	if (logger)
		logger((ncclDebugLogLevel)level, flags, file, line, "%s", msg);
}

void rn_plugin_log_attach(ncclDebugLogger_t logger)
{
	atomic_store(&nccl_logger, logger);
	rn_log_set_sink(logger ? nccl_sink : NULL);
}
