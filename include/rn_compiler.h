/* SPDX-License-Identifier: MIT */
/*
 * Small compiler helpers shared by every file. Nothing here knows about RDMA.
 */
#ifndef RN_COMPILER_H
#define RN_COMPILER_H

#include <stddef.h>

#define __rn_export __attribute__((visibility("default")))
#define __rn_printf(a, b) __attribute__((format(printf, a, b)))

#define RN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define RN_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RN_MAX(a, b) ((a) > (b) ? (a) : (b))

#define rn_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

#define rn_unlikely(x) __builtin_expect(!!(x), 0)

/*
 * Inside the library every int-returning call answers 0 or -errno. This jumps to
 * an unwind label on failure, keeping the -errno in @ret (cf. NCCLCHECKGOTO).
 */
#define RN_CHECK_GOTO(expr, ret, label) \
	do { \
		(ret) = (expr); \
		if (rn_unlikely((ret) < 0)) \
			goto label; \
	} while (0)

#endif /* RN_COMPILER_H */
