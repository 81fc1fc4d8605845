/* SPDX-License-Identifier: MIT */
/*
 * The sysfs/procfs edge: GID tables, sysctls, netdev attributes, PCI paths.
 * Reads go through a table so tests can fake them, and paths are resolved under a
 * root prefix (rn_sys_set_root) so tests can also point the real ops at a fixture
 * tree. Values come back NUL-terminated with the trailing newline stripped.
 */
#ifndef RN_SYS_H
#define RN_SYS_H

#include <stddef.h>

#include "rn_compiler.h"

struct rn_sys_ops {
	/* 0 or -errno. @path is absolute ("/sys/...", "/proc/..."), before the root prefix. */
	int (*read)(const char *path, char *buf, size_t len);
	int (*realpath)(const char *path, char *out, size_t len);
	/* The target of the link @path as written (relative or not): one syscall where a
	 * realpath costs one per component, which is what discovery pays per NIC. */
	int (*readlink)(const char *path, char *out, size_t len);
	/* Calls @cb for each entry but "." and ".."; stops when @cb returns non-zero. */
	int (*list)(const char *path, int (*cb)(const char *name, void *arg), void *arg);
};

extern struct rn_sys_ops rn_sys;
extern const struct rn_sys_ops rn_sys_real_ops;
void rn_sys_set_ops(const struct rn_sys_ops *ops);
void rn_sys_reset_ops(void);
/* The table reset restores (NULL: the real one); see rn_verbs_set_base(). */
void rn_sys_set_base(const struct rn_sys_ops *ops);

/* Prefix for every path the real ops open ("" = the live system). */
void rn_sys_set_root(const char *root);

/* Format a path and read it. 0 or -errno. */
int rn_sys_readf(char *buf, size_t len, const char *fmt, ...) __rn_printf(3, 4);
/* Format a path and read a decimal integer from it. 0 or -errno (-EINVAL if not a number). */
int rn_sys_read_long(long *out, const char *fmt, ...) __rn_printf(2, 3);

#endif /* RN_SYS_H */
