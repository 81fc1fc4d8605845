// SPDX-License-Identifier: MIT
/*
 * rn_log: one formatted line per event, to NCCL's logger or to stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rn_log.h"

static rn_log_sink_fn log_sink;
static int log_level = -1; /* -1: not read from NCCL_DEBUG yet */

enum rn_log_level rn_log_level_from_env(void)
{
	const char *v = getenv("NCCL_DEBUG");

	/* NCCL's own names; anything else keeps NCCL's default, which shows WARNs. */
	if (!v)
		return RN_LOG_WARN;
	if (!strcasecmp(v, "VERSION"))
		return RN_LOG_VERSION;
	if (!strcasecmp(v, "WARN"))
		return RN_LOG_WARN;
	if (!strcasecmp(v, "INFO"))
		return RN_LOG_INFO;
	if (!strcasecmp(v, "ABORT"))
		return RN_LOG_ABORT;
	if (!strcasecmp(v, "TRACE"))
		return RN_LOG_TRACE;
	if (!strcasecmp(v, "NONE"))
		return RN_LOG_NONE;
	return RN_LOG_WARN;
}

void rn_log_set_sink(rn_log_sink_fn sink)
{
	log_sink = sink;
}

void rn_log_set_level(enum rn_log_level level)
{
	log_level = (int)level;
}

int rn_log_enabled(enum rn_log_level level)
{
	/* NCCL's logger filters by itself; it must see every line it may want. */
	if (log_sink)
		return 1;
	if (log_level < 0)
		log_level = (int)rn_log_level_from_env();
	return level != RN_LOG_NONE && (int)level <= log_level;
}

void rn_log(enum rn_log_level level, unsigned long sub, const char *file, int line, const char *fmt,
	    ...)
{
	int saved = errno;
	char msg[1024];
	va_list ap;

	if (!rn_log_enabled(level))
		goto out;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_sink) {
		log_sink(level, sub, file, line, msg);
	} else {
		const char *tag = level == RN_LOG_WARN  ? "WARN " :
				  level == RN_LOG_INFO  ? "INFO " :
				  level == RN_LOG_TRACE ? "TRACE " :
							  "";
		fprintf(stderr, "%s%s\n", tag, msg);
	}
out:
	errno = saved;
}
