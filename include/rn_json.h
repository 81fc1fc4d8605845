/* SPDX-License-Identifier: MIT */
/*
 * The one JSON writer of the tools (roce-doctor's reports, the sweep, nccl-net-bench's
 * results, every tool's error object): streaming, keys in the order written, strings
 * escaped per RFC 8259. Pretty (two-space indentation, rn_json_begin) or on one line
 * (rn_json_begin_line: "{"a": 1, "b": [2, 3]}"). Header-only: the tools that load the
 * plugin (driver, bench) never link the library.
 */
#ifndef RN_JSON_H
#define RN_JSON_H

#include <math.h>
#include <stdio.h>

struct rn_json {
	FILE *f;
	int depth;
	int line; /* one line: ", " between members, no indentation */
	int first[32];
};

/* @s as a JSON string, quotes included (NULL: null). */
static inline void rn_json_quote(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Separator, indentation and key of the next member or element. */
static inline void rn_json_member(struct rn_json *j, const char *key)
{
	int i;

	if (j->depth > 0) {
		if (!j->first[j->depth])
			fputs(j->line ? ", " : ",", j->f);
		j->first[j->depth] = 0;
		if (!j->line) {
			fputc('\n', j->f);
			for (i = 0; i < j->depth; i++)
				fputs("  ", j->f);
		}
	}
	if (key) {
		rn_json_quote(j->f, key);
		fputs(": ", j->f);
	}
}

static inline void rn_json_open(struct rn_json *j, const char *key, char c)
{
	rn_json_member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < (int)(sizeof(j->first) / sizeof(j->first[0])))
		j->depth++;
	j->first[j->depth] = 1;
}

static inline void rn_json_obj(struct rn_json *j, const char *key)
{
	rn_json_open(j, key, '{');
}

static inline void rn_json_arr(struct rn_json *j, const char *key)
{
	rn_json_open(j, key, '[');
}

/* Close the innermost object ('}') or array (']'). */
static inline void rn_json_close(struct rn_json *j, char c)
{
	int empty = j->first[j->depth], i;

	if (j->depth > 0)
		j->depth--;
	if (!empty && !j->line) {
		fputc('\n', j->f);
		for (i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(c, j->f);
}

/* A document: its outer object is open. */
static inline void rn_json_begin(struct rn_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->line = 0;
	j->first[0] = 1;
	rn_json_obj(j, NULL);
}

static inline void rn_json_begin_line(struct rn_json *j, FILE *f)
{
	rn_json_begin(j, f);
	j->line = 1;
}

/* Close what is open, a newline, flushed. */
static inline void rn_json_end(struct rn_json *j)
{
	while (j->depth > 0)
		rn_json_close(j, '}');
	fputc('\n', j->f);
	fflush(j->f);
}

static inline void rn_json_str(struct rn_json *j, const char *key, const char *val)
{
	rn_json_member(j, key);
	rn_json_quote(j->f, val);
}

static inline void rn_json_int(struct rn_json *j, const char *key, long long val)
{
	rn_json_member(j, key);
	fprintf(j->f, "%lld", val);
}

/* @prec decimals; not a number (no JSON for it) is written 0. */
static inline void rn_json_num(struct rn_json *j, const char *key, double val, int prec)
{
	rn_json_member(j, key);
	fprintf(j->f, "%.*f", prec, isfinite(val) ? val : 0);
}

static inline void rn_json_bool(struct rn_json *j, const char *key, int val)
{
	rn_json_member(j, key);
	fputs(val ? "true" : "false", j->f);
}

static inline void rn_json_null(struct rn_json *j, const char *key)
{
	rn_json_member(j, key);
	fputs("null", j->f);
}

#endif /* RN_JSON_H */
