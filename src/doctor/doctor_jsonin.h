/* SPDX-License-Identifier: MIT */
/*
 * A small JSON reader (doctor_jsonin.c) for what the doctor reads back of its own output
 * (`localize` over `sweep --json`): the whole text into a tree, bounded in depth, no
 * library. Numbers are doubles; strings are unescaped (\uXXXX as UTF-8).
 */
#ifndef RN_DOCTOR_JSONIN_H
#define RN_DOCTOR_JSONIN_H

#include <stddef.h>

#define RN_JV_DEPTH 64

enum rn_jv_type { RN_JV_NULL, RN_JV_BOOL, RN_JV_NUM, RN_JV_STR, RN_JV_ARR, RN_JV_OBJ };
struct rn_jv {
	enum rn_jv_type t;
	char *key;          /* in an object, its member's name; else NULL */
	char *str;          /* RN_JV_STR */
	double num;         /* RN_JV_NUM, RN_JV_BOOL (0/1) */
	struct rn_jv *kids; /* RN_JV_ARR, RN_JV_OBJ: @n of them */
	int n;
};
/*
 * Parse @text whole (trailing white space only). 0 with *@out (rn_jv_free), -EBADMSG with
 * @why (the offset and what was expected), -ENOMEM.
 */
int rn_jv_parse(const char *text, struct rn_jv **out, char *why, size_t len);
void rn_jv_free(struct rn_jv *v);
/* Object @o's member @key (NULL: none, or @o is no object). */
const struct rn_jv *rn_jv_get(const struct rn_jv *o, const char *key);
/* Its string, NULL when it is none (or @v is NULL). */
const char *rn_jv_str(const struct rn_jv *v);

#endif /* RN_DOCTOR_JSONIN_H */
