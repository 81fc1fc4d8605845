/* SPDX-License-Identifier: MIT */
/*
 * The command-line convention of every tool (roce-doctor, nccl-net-driver, nccl-net-bench),
 * in one place so that the three cannot drift:
 *  - options anywhere, before or after the command and its arguments (getopt_long permutes);
 *  - an unknown option, a missing value or a stray argument is a usage error: one line on
 *    stderr ending in "try '<tool> --help'", exit 2;
 *  - every value is checked before any work starts (no device opened, no socket);
 *  - --help (stdout, exit 0) and --version ("<tool> <version>", exit 0) on each;
 *  - one exit-code table (below), the same for the same condition in every tool;
 *  - with --json, a failure prints {"error": {"code": N, "kind": "...", "message": "..."}}
 *    on stdout, so that a caller parsing stdout always gets valid JSON; kind is usage,
 *    system (the doctor's exit 2 that is no usage error), failure or no-device.
 * Header-only: the doctor links the core library, the driver and the bench never do.
 */
#ifndef RN_CLI_H
#define RN_CLI_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_json.h"
#include "rn_version.h"

/* Exit codes of every tool (documented in each man page and the README). */
#define RN_EXIT_OK 0    /* done; the doctor: no problem found */
#define RN_EXIT_FAIL 1  /* the doctor: problems found; driver, bench: plugin or transfer failed */
#define RN_EXIT_USAGE 2 /* bad command line; the doctor: also a system error (cannot read) */
#define RN_EXIT_NODEV 3 /* no usable RDMA/RoCE device: nothing could be tried */

static inline const char *rn_exit_kind(int code)
{
	switch (code) {
	case RN_EXIT_OK:
		return "ok";
	case RN_EXIT_FAIL:
		return "failure";
	case RN_EXIT_USAGE:
		return "usage";
	case RN_EXIT_NODEV:
		return "no-device";
	}
	return "error";
}

/*
 * The "error" member {code, kind, message} into @j (rn_json.h), for a caller that
 * embeds it in its own document. @kind NULL: the code's (rn_exit_kind); the doctor's
 * exit 2 may also be "system".
 */
static inline void rn_cli_json_error_obj(struct rn_json *j, int code, const char *kind,
					 const char *msg)
{
	rn_json_obj(j, "error");
	rn_json_int(j, "code", code);
	rn_json_str(j, "kind", kind ? kind : rn_exit_kind(code));
	rn_json_str(j, "message", msg ? msg : "");
	rn_json_close(j, '}');
}

/* {"error": {"code": 2, "kind": "usage", "message": "..."}} and a newline. */
static inline void rn_cli_json_error_kind(FILE *f, int code, const char *kind, const char *msg)
{
	struct rn_json j;

	rn_json_begin_line(&j, f);
	rn_cli_json_error_obj(&j, code, kind, msg);
	rn_json_end(&j);
}

static inline void rn_cli_json_error(FILE *f, int code, const char *msg)
{
	rn_cli_json_error_kind(f, code, NULL, msg);
}

/*
 * Whether --json (or, with @short_j, -j) is among the arguments, before getopt has seen
 * them all: a usage error found early still owes a JSON caller its error object.
 */
static inline int rn_cli_wants_json(int argc, char **argv, int short_j)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--json") || (short_j && !strcmp(argv[i], "-j")))
			return 1;
	return 0;
}

/*
 * One line "<prog>: <message>" on stderr (usage errors add "; try '<prog> --help'"), the
 * JSON error object on @json_out when not NULL. Returns @code.
 */
static inline int rn_cli_verror(const char *prog, FILE *json_out, int code, const char *fmt,
				va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	fprintf(stderr, "%s: %s%s%s%s\n", prog, msg, code == RN_EXIT_USAGE ? "; try '" : "",
		code == RN_EXIT_USAGE ? prog : "", code == RN_EXIT_USAGE ? " --help'" : "");
	if (json_out)
		rn_cli_json_error(json_out, code, msg);
	return code;
}

static inline int rn_cli_error(const char *prog, FILE *json_out, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static inline int rn_cli_error(const char *prog, FILE *json_out, int code, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = rn_cli_verror(prog, json_out, code, fmt, ap);
	va_end(ap);
	return ret;
}

/*
 * getopt_long's '?' (unknown option) or ':' (value missing; the optstring starts with ':'
 * and opterr is 0) as one usage line. @optind_now and @optopt_now are getopt's.
 */
static inline int rn_cli_bad_option(const char *prog, FILE *json_out, int c, char **argv,
				    int optind_now, int optopt_now)
{
	const char *arg = argv[optind_now - 1];

	if (c == ':')
		return rn_cli_error(prog, json_out, RN_EXIT_USAGE, "option '%s' needs a value",
				    arg);
	if (optopt_now && strncmp(arg, "--", 2))
		return rn_cli_error(prog, json_out, RN_EXIT_USAGE, "unknown option '-%c'",
				    optopt_now);
	return rn_cli_error(prog, json_out, RN_EXIT_USAGE, "unknown option '%s'", arg);
}

/* A decimal integer in [lo, hi], nothing else: 0 or -EINVAL ("7x", "", " 7", "1e3" fail). */
static inline int rn_cli_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static inline int rn_cli_int(const char *s, int lo, int hi, int *out)
{
	long v;

	if (rn_cli_long(s, lo, hi, &v))
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* "4096", "64K", "1M", "2G" (also lower case) up to @max bytes: 0 or -EINVAL. */
static inline int rn_cli_size(const char *s, unsigned long long max, size_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	}
	if (*end || v > (max >> shift))
		return -EINVAL;
	*out = (size_t)(v << shift);
	return 0;
}

static inline int rn_cli_version(const char *prog)
{
	printf("%s %s\n", prog, RN_VERSION);
	return RN_EXIT_OK;
}

/* The exit-code table as --help prints it, the same words in every tool. */
#define RN_CLI_EXIT_HELP \
	"Exit status: 0 ok (doctor: no problem found), 1 failure (doctor: problems found;\n" \
	"driver, bench: the plugin or a transfer failed), 2 usage error (doctor: also a\n" \
	"system error), 3 no usable RDMA/RoCE device.\n"

#endif /* RN_CLI_H */
