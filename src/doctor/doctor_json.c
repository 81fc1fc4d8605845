// SPDX-License-Identifier: MIT
/*
 * A streaming JSON writer for --json: two-space indentation, keys in the order
 * the caller writes them (the schema in README's roce-doctor section), strings
 * escaped per RFC 8259.
 */
#include <stdio.h>

#include "doctor.h"

static void indent(struct rn_json *j)
{
	int i;

	fputc('\n', j->f);
	for (i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

static void put_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* Separator, indentation and key of the next member or element. */
static void member(struct rn_json *j, const char *key)
{
	if (j->depth > 0) {
		if (!j->first[j->depth])
			fputc(',', j->f);
		j->first[j->depth] = 0;
		indent(j);
	}
	if (key) {
		put_string(j->f, key);
		fputs(": ", j->f);
	}
}

void rn_json_begin(struct rn_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = 1;
	rn_json_obj(j, NULL);
}

void rn_json_end(struct rn_json *j)
{
	while (j->depth > 0)
		rn_json_close(j, '}');
	fputc('\n', j->f);
	fflush(j->f);
}

static void open_c(struct rn_json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < (int)(sizeof(j->first) / sizeof(j->first[0])))
		j->depth++;
	j->first[j->depth] = 1;
}

void rn_json_obj(struct rn_json *j, const char *key)
{
	open_c(j, key, '{');
}

void rn_json_arr(struct rn_json *j, const char *key)
{
	open_c(j, key, '[');
}

void rn_json_close(struct rn_json *j, char c)
{
	int empty = j->first[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->f);
}

void rn_json_str(struct rn_json *j, const char *key, const char *val)
{
	member(j, key);
	if (val)
		put_string(j->f, val);
	else
		fputs("null", j->f);
}

void rn_json_int(struct rn_json *j, const char *key, long long val)
{
	member(j, key);
	fprintf(j->f, "%lld", val);
}

void rn_json_bool(struct rn_json *j, const char *key, int val)
{
	member(j, key);
	fputs(val ? "true" : "false", j->f);
}

void rn_json_null(struct rn_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

void rn_json_finding(struct rn_json *j, const struct rn_finding *f, const char *maker)
{
	char lb[32];
	int pre = rn_finding_pre_fix(f)[0] != '\0';

	rn_json_obj(j, NULL);
	rn_json_str(j, "cause", rn_cause_label(f->cause, lb, sizeof(lb)));
	rn_json_str(j, "severity", rn_doctor_sev_str(f->sev));
	rn_json_str(j, "message", rn_finding_msg(f));
	rn_json_str(j, "fix", rn_finding_fix(f));
	rn_json_str(j, "fix_host", rn_finding_fix(f)[0] ? rn_finding_where(f, 0, maker) : "");
	rn_json_str(j, "pre_fix", rn_finding_pre_fix(f));
	rn_json_str(j, "pre_host", pre ? rn_finding_where(f, 1, maker) : "");
	rn_json_str(j, "advice", rn_finding_advice(f));
	rn_json_close(j, '}');
}

void rn_json_sysctls(struct rn_json *j, const char *key, const struct rn_sysctls *s)
{
	rn_json_obj(j, key);
	rn_json_int(j, "arp_ignore", s->arp_ignore);
	rn_json_int(j, "arp_announce", s->arp_announce);
	rn_json_int(j, "arp_filter", s->arp_filter);
	rn_json_int(j, "rp_filter", s->rp_filter);
	rn_json_int(j, "accept_local", s->accept_local);
	rn_json_close(j, '}');
}
