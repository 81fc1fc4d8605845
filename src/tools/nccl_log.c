// SPDX-License-Identifier: MIT
/*
 * NCCL's log filter for the tools (see nccl_log.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "nccl_log.h"

ncclDebugLogLevel nccl_log_parse_level(const char *v, ncclDebugLogLevel unset)
{
	static const struct {
		const char *name;
		ncclDebugLogLevel level;
	} names[] = {
		{ "VERSION", NCCL_LOG_VERSION }, { "WARN", NCCL_LOG_WARN },
		{ "INFO", NCCL_LOG_INFO },       { "ABORT", NCCL_LOG_ABORT },
		{ "TRACE", NCCL_LOG_TRACE },
	};
	size_t i;

	if (!v)
		return unset;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(v, names[i].name))
			return names[i].level;
	return NCCL_LOG_NONE;
}

static uint64_t subsys_bit(const char *name, size_t len)
{
	static const struct {
		const char *name;
		uint64_t bit;
	} names[] = {
		{ "INIT", 0x1 },         { "COLL", 0x2 },    { "P2P", 0x4 },
		{ "SHM", 0x8 },          { "NET", 0x10 },    { "GRAPH", 0x20 },
		{ "TUNING", 0x40 },      { "ENV", 0x80 },    { "ALLOC", 0x100 },
		{ "CALL", 0x200 },       { "PROXY", 0x400 }, { "NVLS", 0x800 },
		{ "BOOTSTRAP", 0x1000 }, { "REG", 0x2000 },  { "PROFILE", 0x4000 },
		{ "RAS", 0x8000 },       { "ALL", ~0ull },
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == len && !strncasecmp(name, names[i].name, len))
			return names[i].bit;
	return 0;
}

uint64_t nccl_log_parse_subsys(const char *v)
{
	uint64_t mask;
	int invert;

	if (!v)
		return NCCL_LOG_DEFAULT_MASK;
	invert = v[0] == '^';
	v += invert;
	mask = invert ? ~0ull : 0;
	/* NCCL splits with strtok: empty items between commas are skipped */
	while (*v) {
		size_t len = strcspn(v, ",");
		uint64_t bit = subsys_bit(v, len);

		mask = invert ? mask & ~bit : mask | bit;
		v += len;
		v += *v == ',';
	}
	return mask;
}

int nccl_log_expand_file(const char *pattern, const char *host, int pid, char *out, size_t len)
{
	size_t o = 0;
	const char *p;

	if (!len)
		return -ENAMETOOLONG;
	for (p = pattern; *p; p++) {
		char piece[64];
		const char *add = piece;

		if (*p != '%' || !p[1]) {
			piece[0] = *p;
			piece[1] = '\0';
		} else if (p[1] == 'h') {
			add = host;
			p++;
		} else if (p[1] == 'p') {
			snprintf(piece, sizeof(piece), "%d", pid);
			p++;
		} else if (p[1] == '%') {
			strcpy(piece, "%");
			p++;
		} else {
			/* what NCCL does not understand it keeps */
			piece[0] = '%';
			piece[1] = p[1];
			piece[2] = '\0';
			p++;
		}
		if (o + strlen(add) >= len)
			return -ENAMETOOLONG;
		memcpy(out + o, add, strlen(add));
		o += strlen(add);
	}
	out[o] = '\0';
	return 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t mask;

static void read_env(void)
{
	mask = nccl_log_parse_subsys(getenv("NCCL_DEBUG_SUBSYS"));
}

int nccl_log_wanted(ncclDebugLogLevel level, unsigned long flags, ncclDebugLogLevel threshold)
{
	pthread_once(&once, read_env);
	if (level == NCCL_LOG_NONE || (int)level > (int)threshold)
		return 0;
	return (flags & mask) != 0;
}

FILE *nccl_log_stream(ncclDebugLogLevel threshold)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static FILE *file;
	static int tried;
	const char *pattern = getenv("NCCL_DEBUG_FILE");
	FILE *f;

	pthread_mutex_lock(&lock);
	if (!tried && pattern && (int)threshold > (int)NCCL_LOG_VERSION) {
		char host[256] = "", name[4096];

		tried = 1;
		if (gethostname(host, sizeof(host) - 1))
			strcpy(host, "unknown");
		/* NCCL cuts the host name at the first '.' and avoids path characters */
		host[strcspn(host, ".")] = '\0';
		for (char *c = host; *c; c++)
			if (*c == '/' || *c == '%')
				*c = '-';
		if (!nccl_log_expand_file(pattern, host, (int)getpid(), name, sizeof(name)) &&
		    name[0]) {
			file = fopen(name, "w");
			if (file)
				setlinebuf(file);
		}
	}
	f = file ? file : stdout;
	pthread_mutex_unlock(&lock);
	return f;
}
