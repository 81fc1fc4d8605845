// SPDX-License-Identifier: MIT
/*
 * A small JSON reader: recursive descent over the whole text, depth-bounded (a hostile
 * file cannot exhaust the stack), every allocation checked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_jsonin.h"

struct jp {
	const char *s, *p;
	char *why;
	size_t len;
	int err; /* the first: -EBADMSG or -ENOMEM */
};

static int fail(struct jp *j, int err, const char *what)
{
	if (!j->err) {
		j->err = err;
		snprintf(j->why, j->len, "offset %zu: %s", (size_t)(j->p - j->s), what);
	}
	return j->err;
}

static void ws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static int hex4(const char *p, unsigned int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < 4; i++) {
		char c = p[i];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (unsigned int)(c - 'A' + 10);
		else
			return -1;
	}
	return 0;
}

/* A string at j->p (its opening quote) into a malloc'ed, unescaped *@out. */
static int str(struct jp *j, char **out)
{
	const char *p = ++j->p;
	size_t n = 0;
	char *o;

	/* the unescaped text is never longer than the escaped one */
	while (*p && *p != '"')
		p += *p == '\\' && p[1] ? 2 : 1;
	if (*p != '"')
		return fail(j, -EBADMSG, "an unterminated string");
	o = malloc((size_t)(p - j->p) + 1);
	if (!o)
		return fail(j, -ENOMEM, "out of memory");
	while (*j->p != '"') {
		char c = *j->p++;
		unsigned int u;

		if ((unsigned char)c < 0x20) {
			free(o);
			return fail(j, -EBADMSG, "a control character in a string");
		}
		if (c != '\\') {
			o[n++] = c;
			continue;
		}
		c = *j->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			o[n++] = c;
			break;
		case 'b':
			o[n++] = '\b';
			break;
		case 'f':
			o[n++] = '\f';
			break;
		case 'n':
			o[n++] = '\n';
			break;
		case 'r':
			o[n++] = '\r';
			break;
		case 't':
			o[n++] = '\t';
			break;
		case 'u':
			if (hex4(j->p, &u)) {
				free(o);
				return fail(j, -EBADMSG, "a bad \\u escape");
			}
			j->p += 4;
			/* 6 escaped bytes give 3 at most; a surrogate half stands for itself as '?' */
			if (u < 0x80) {
				o[n++] = (char)u;
			} else if (u < 0x800) {
				o[n++] = (char)(0xc0 | (u >> 6));
				o[n++] = (char)(0x80 | (u & 0x3f));
			} else if (u >= 0xd800 && u < 0xe000) {
				o[n++] = '?';
			} else {
				o[n++] = (char)(0xe0 | (u >> 12));
				o[n++] = (char)(0x80 | ((u >> 6) & 0x3f));
				o[n++] = (char)(0x80 | (u & 0x3f));
			}
			break;
		default:
			free(o);
			return fail(j, -EBADMSG, "a bad escape");
		}
	}
	j->p++;
	o[n] = 0;
	*out = o;
	return 0;
}

static int value(struct jp *j, struct rn_jv *v, int depth);

static int add(struct jp *j, struct rn_jv *v, struct rn_jv **kid)
{
	/* room for 4, then doubled each time it is full */
	if (v->n >= 4 ? !(v->n & (v->n - 1)) : !v->kids) {
		struct rn_jv *k = realloc(v->kids, (size_t)(v->n ? 2 * v->n : 4) * sizeof(*k));

		if (!k)
			return fail(j, -ENOMEM, "out of memory");
		v->kids = k;
	}
	*kid = &v->kids[v->n++];
	memset(*kid, 0, sizeof(**kid));
	return 0;
}

static int members(struct jp *j, struct rn_jv *v, int depth, int obj)
{
	char close = obj ? '}' : ']';

	j->p++;
	ws(j);
	if (*j->p == close) {
		j->p++;
		return 0;
	}
	for (;;) {
		struct rn_jv *k = NULL;
		char *key = NULL;

		ws(j);
		if (obj) {
			if (*j->p != '"')
				return fail(j, -EBADMSG, "a member name expected");
			if (str(j, &key))
				return j->err;
			ws(j);
			if (*j->p++ != ':') {
				free(key);
				return fail(j, -EBADMSG, "':' expected");
			}
		}
		if (add(j, v, &k)) {
			free(key);
			return j->err;
		}
		k->key = key;
		if (value(j, k, depth + 1))
			return j->err;
		ws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p++ == close)
			return 0;
		return fail(j, -EBADMSG, obj ? "',' or '}' expected" : "',' or ']' expected");
	}
}

static int value(struct jp *j, struct rn_jv *v, int depth)
{
	char *end;

	if (depth > RN_JV_DEPTH)
		return fail(j, -EBADMSG, "nested too deep");
	ws(j);
	switch (*j->p) {
	case '{':
		v->t = RN_JV_OBJ;
		return members(j, v, depth, 1);
	case '[':
		v->t = RN_JV_ARR;
		return members(j, v, depth, 0);
	case '"':
		v->t = RN_JV_STR;
		return str(j, &v->str);
	}
	if (!strncmp(j->p, "null", 4) || !strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
		v->t = *j->p == 'n' ? RN_JV_NULL : RN_JV_BOOL;
		v->num = *j->p == 't';
		j->p += *j->p == 'f' ? 5 : 4;
		return 0;
	}
	v->num = strtod(j->p, &end);
	if (end == j->p || !(*j->p == '-' || (*j->p >= '0' && *j->p <= '9')))
		return fail(j, -EBADMSG, "a value expected");
	v->t = RN_JV_NUM;
	j->p = end;
	return 0;
}

static void jv_clear(struct rn_jv *v)
{
	int i;

	for (i = 0; i < v->n; i++)
		jv_clear(&v->kids[i]);
	free(v->kids);
	free(v->key);
	free(v->str);
}

void rn_jv_free(struct rn_jv *v)
{
	if (!v)
		return;
	jv_clear(v);
	free(v);
}

int rn_jv_parse(const char *text, struct rn_jv **out, char *why, size_t len)
{
	struct jp j = { .s = text, .p = text, .why = why, .len = len };
	struct rn_jv *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (!v) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	if (!value(&j, v, 0)) {
		ws(&j);
		if (*j.p)
			fail(&j, -EBADMSG, "text after the value");
	}
	if (j.err) {
		rn_jv_free(v);
		return j.err;
	}
	*out = v;
	return 0;
}

const struct rn_jv *rn_jv_get(const struct rn_jv *o, const char *key)
{
	int i;

	for (i = 0; o && o->t == RN_JV_OBJ && i < o->n; i++)
		if (!strcmp(o->kids[i].key, key))
			return &o->kids[i];
	return NULL;
}

const char *rn_jv_str(const struct rn_jv *v)
{
	return v && v->t == RN_JV_STR ? v->str : NULL;
}
