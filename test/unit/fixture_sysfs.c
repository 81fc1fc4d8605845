// SPDX-License-Identifier: MIT
/*
 * Temp sysfs trees for unit tests (see fixture_sysfs.h).
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_sysfs.h"
#include "rn_sys.h"

static char root[PATH_MAX];

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fixture_sysfs: %s %s: %s\n", what, path, strerror(errno));
	abort();
}

static void mkdirs(const char *full)
{
	char buf[PATH_MAX], *p;

	snprintf(buf, sizeof(buf), "%s", full);
	for (p = buf + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			die("mkdir", buf);
		*p = '/';
	}
}

const char *fixture_sysfs_create(void)
{
	snprintf(root, sizeof(root), "/tmp/rn-sysfs-XXXXXX");
	if (!mkdtemp(root))
		die("mkdtemp", root);
	/* the real file ops, under the fixture's root (the unit tests' base fails every read) */
	rn_sys_set_ops(&rn_sys_real_ops);
	rn_sys_set_root(root);
	return root;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

void fixture_sysfs_destroy(void)
{
	if (root[0])
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	root[0] = '\0';
	rn_sys_set_root("");
	rn_sys_reset_ops();
}

void fixture_sysfs_write(const char *path, const char *content)
{
	char full[PATH_MAX];
	FILE *f;

	snprintf(full, sizeof(full), "%s%s", root, path);
	mkdirs(full);
	f = fopen(full, "w");
	if (!f)
		die("open", full);
	fprintf(f, "%s\n", content);
	fclose(f);
}

void fixture_sysfs_num(unsigned long long v, const char *fmt, ...)
{
	char path[PATH_MAX], b[32];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	snprintf(b, sizeof(b), "%llu", v);
	fixture_sysfs_write(path, b);
}

void fixture_sysfs_symlink(const char *path, const char *target)
{
	char full[PATH_MAX];

	snprintf(full, sizeof(full), "%s%s", root, path);
	mkdirs(full);
	if (symlink(target, full))
		die("symlink", full);
}

void fixture_sysfs_netdev(const char *name, int ifindex, const char *mac, int mtu,
			  const char *operstate)
{
	char path[256], val[32];

	snprintf(path, sizeof(path), "/sys/class/net/%s/ifindex", name);
	snprintf(val, sizeof(val), "%d", ifindex);
	fixture_sysfs_write(path, val);
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", name);
	fixture_sysfs_write(path, mac);
	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", name);
	snprintf(val, sizeof(val), "%d", mtu);
	fixture_sysfs_write(path, val);
	snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", name);
	fixture_sysfs_write(path, operstate);
}

void fixture_sysfs_gid_ndev(const char *ibdev, int port, int index, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d", ibdev,
		 port, index);
	fixture_sysfs_write(path, name);
}

void fixture_sysfs_pci(const char *ibdev, const char *bdf)
{
	char path[256], target[256];

	snprintf(path, sizeof(path), "/sys/devices/pci0000:00/%s/vendor", bdf);
	fixture_sysfs_write(path, "0x15b3");
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", ibdev);
	snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s", bdf);
	fixture_sysfs_symlink(path, target);
}

void fixture_sysfs_virtio_netdev(const char *name, const char *bdf, int virtio)
{
	char path[256], target[256];

	fixture_sysfs_write("/sys/bus/pci/drivers_probe", "");
	fixture_sysfs_write("/sys/bus/virtio/drivers_probe", "");
	snprintf(path, sizeof(path), "/sys/devices/pci0000:00/%s/vendor", bdf);
	fixture_sysfs_write(path, "0x1af4");
	snprintf(path, sizeof(path), "/sys/devices/pci0000:00/%s/subsystem", bdf);
	fixture_sysfs_symlink(path, "../../../bus/pci");
	snprintf(path, sizeof(path), "/sys/devices/pci0000:00/%s/virtio%d/subsystem", bdf, virtio);
	fixture_sysfs_symlink(path, "../../../../bus/virtio");
	snprintf(path, sizeof(path), "/sys/class/net/%s/device", name);
	snprintf(target, sizeof(target), "../../../devices/pci0000:00/%s/virtio%d", bdf, virtio);
	fixture_sysfs_symlink(path, target);
}

void fixture_sysfs_lower(const char *upper, const char *lower)
{
	char path[256], target[64];

	snprintf(path, sizeof(path), "/sys/class/net/%s/lower_%s", upper, lower);
	snprintf(target, sizeof(target), "../%s", lower);
	fixture_sysfs_symlink(path, target);
}
