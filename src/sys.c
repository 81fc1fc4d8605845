// SPDX-License-Identifier: MIT
/*
 * Real sysfs/procfs reads, under an optional root prefix.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_sys.h"

static char sys_root[PATH_MAX];

void rn_sys_set_root(const char *root)
{
	snprintf(sys_root, sizeof(sys_root), "%s", root ? root : "");
}

static int rooted(const char *path, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", sys_root, path);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int real_read(const char *path, char *buf, size_t len)
{
	char full[PATH_MAX];
	ssize_t n;
	int fd, ret;

	if (!len)
		return -EINVAL;
	ret = rooted(path, full, sizeof(full));
	if (ret)
		return ret;
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	ret = n < 0 ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

static int real_realpath(const char *path, char *out, size_t len)
{
	char full[PATH_MAX], res[PATH_MAX];
	size_t rl = strlen(sys_root);
	int ret = rooted(path, full, sizeof(full));

	if (ret)
		return ret;
	if (!realpath(full, res))
		return -errno;
	/* Answer in the fixture's own terms: strip the root prefix again. */
	if (rl && !strncmp(res, sys_root, rl))
		memmove(res, res + rl, strlen(res + rl) + 1);
	if (strlen(res) >= len)
		return -ENAMETOOLONG;
	strcpy(out, res);
	return 0;
}

static int real_readlink(const char *path, char *out, size_t len)
{
	char full[PATH_MAX];
	ssize_t n;
	int ret = rooted(path, full, sizeof(full));

	if (ret)
		return ret;
	if (!len)
		return -EINVAL;
	n = readlink(full, out, len);
	if (n < 0)
		return -errno;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	out[n] = '\0';
	return 0;
}

static int real_list(const char *path, int (*cb)(const char *name, void *arg), void *arg)
{
	char full[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ret = rooted(path, full, sizeof(full));

	if (ret)
		return ret;
	d = opendir(full);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (cb(de->d_name, arg))
			break;
	}
	closedir(d);
	return 0;
}

const struct rn_sys_ops rn_sys_real_ops = {
	.read = real_read,
	.realpath = real_realpath,
	.readlink = real_readlink,
	.list = real_list,
};

struct rn_sys_ops rn_sys = {
	.read = real_read,
	.realpath = real_realpath,
	.readlink = real_readlink,
	.list = real_list,
};

void rn_sys_set_ops(const struct rn_sys_ops *ops)
{
	if (ops->read)
		rn_sys.read = ops->read;
	if (ops->realpath)
		rn_sys.realpath = ops->realpath;
	if (ops->readlink)
		rn_sys.readlink = ops->readlink;
	if (ops->list)
		rn_sys.list = ops->list;
}

/* What reset restores: the real table, or the unit tests' all-failing one. */
static const struct rn_sys_ops *sys_base = &rn_sys_real_ops;

void rn_sys_set_base(const struct rn_sys_ops *ops)
{
	sys_base = ops ? ops : &rn_sys_real_ops;
	rn_sys = *sys_base;
}

void rn_sys_reset_ops(void)
{
	rn_sys = *sys_base;
}

int rn_sys_readf(char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	return rn_sys.read(path, buf, len);
}

int rn_sys_read_long(long *out, const char *fmt, ...)
{
	char path[PATH_MAX], buf[64], *end;
	va_list ap;
	long v;
	int n, ret;

	va_start(ap, fmt);
	n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	ret = rn_sys.read(path, buf, sizeof(buf));
	if (ret)
		return ret;
	errno = 0;
	v = strtol(buf, &end, 0);
	if (errno || end == buf)
		return -EINVAL;
	*out = v;
	return 0;
}
