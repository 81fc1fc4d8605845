// SPDX-License-Identifier: MIT
/*
 * rn_log -> NCCL's logger. NCCL filters by NCCL_DEBUG and NCCL_DEBUG_SUBSYS itself:
 * a line is dropped unless its flags meet the subsystem mask, WARNs included, and the
 * default mask is INIT,BOOTSTRAP,ENV. NCCL's own WARNs carry NCCL_ALL so that they
 * show whatever the mask; ours must too, or NCCL_DEBUG=WARN shows nothing of why a
 * NIC or a connection was refused. INFO and TRACE keep their subsystems, as NCCL's.
 */
#include <stdatomic.h>

#include "plugin.h"
#include "rn_log.h"

static _Atomic(ncclDebugLogger_t) nccl_logger;

unsigned long rn_plugin_log_flags(enum rn_log_level level, unsigned long sub)
{
	unsigned long flags = sub & (RN_SUB_INIT | RN_SUB_NET | RN_SUB_ENV);

	if (level == RN_LOG_WARN)
		return (unsigned long)NCCL_ALL;
	/* a line that names no subsystem is a net-transport line */
	return flags ? flags : (unsigned long)NCCL_NET;
}

static void nccl_sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		      const char *msg)
{
	ncclDebugLogger_t logger = atomic_load(&nccl_logger);
	unsigned long flags = rn_plugin_log_flags(level, sub);

	if (logger)
		logger((ncclDebugLogLevel)level, flags, file, line, "%s", msg);
}

void rn_plugin_log_attach(ncclDebugLogger_t logger)
{
	atomic_store(&nccl_logger, logger);
	rn_log_set_sink(logger ? nccl_sink : NULL);
}
