// SPDX-License-Identifier: MIT
/*
 * The environment knobs (src/param.c) with any values: rn_config_load must take each
 * bad value back to its default with exactly one WARN (and say so in its count), and
 * whatever configuration comes out must be one the loader itself accepts: formatted
 * and fed back in as the environment, it loads again without a WARN, to the same format.
 *
 * Input: records "index byte, value bytes, NUL"; the index picks a knob of the table
 * (rn_param_table), the value is set as its environment variable.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_log.h"
#include "rn_param.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int nwarn;

static void count(enum rn_log_level level, unsigned long sub, const char *file, int line,
		  const char *msg)
{
	(void)sub, (void)file, (void)line, (void)msg;
	nwarn += level == RN_LOG_WARN;
}

static void clear_env(const struct rn_param_desc *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		unsetenv(t[i].name);
}

/* "IB_HCA=x IB_TC=3 ..." back into the environment; 0 when a value cannot round-trip. */
static int set_from_format(const char *buf)
{
	char *copy = strdup(buf), *tok, *save = NULL;
	int ok = 1;

	if (!copy)
		abort();
	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '='), name[300];

		if (!eq)
			abort();
		*eq = 0;
		snprintf(name, sizeof(name), "NCCL_%s", tok);
		setenv(name, eq + 1, 1);
	}
	free(copy);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rn_config cfg, cfg2;
	static char buf[8192], buf2[8192];
	size_t n, p = 0, nset = 0;
	const struct rn_param_desc *t = rn_param_table(&n);
	int bad, spaces = 0;

	rn_log_set_sink(count);
	clear_env(t, n);
	while (p < size) {
		size_t idx = data[p++] % n;
		const uint8_t *end = memchr(data + p, 0, size - p);
		size_t len = end ? (size_t)(end - (data + p)) : size - p;
		char *v = malloc(len + 1);

		if (!v)
			abort();
		memcpy(v, data + p, len);
		v[len] = 0;
		spaces |= strchr(v, ' ') != NULL || strchr(v, '\t') != NULL;
		setenv(t[idx].name, v, 1);
		nset++;
		free(v);
		p += len + 1;
	}
	nwarn = 0;
	bad = rn_config_load(&cfg);
	/* one WARN per bad value, and never more bad values than variables set */
	if (bad < 0 || (size_t)bad > nset || nwarn != bad)
		abort();
	if (rn_config_format(&cfg, buf, sizeof(buf)))
		abort();
	/* the result is a configuration the loader accepts as it is */
	clear_env(t, n);
	if (!spaces && set_from_format(buf)) {
		nwarn = 0;
		/* compared as formatted: a cleared string may keep bytes after its NUL */
		if (rn_config_load(&cfg2) || nwarn || rn_config_format(&cfg2, buf2, sizeof(buf2)) ||
		    strcmp(buf, buf2))
			abort();
	}
	clear_env(t, n);
	rn_log_set_sink(NULL);
	return 0;
}
