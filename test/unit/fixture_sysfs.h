/* SPDX-License-Identifier: MIT */
/*
 * A throw-away sysfs tree under a temp dir, made the root of rn_sys (rn_sys_set_root),
 * so the real sysfs reads run against files a test wrote.
 */
#ifndef FIXTURE_SYSFS_H
#define FIXTURE_SYSFS_H

/* Create the tree and point rn_sys at it. Returns its directory. */
const char *fixture_sysfs_create(void);
/* Remove it and restore the live root. */
void fixture_sysfs_destroy(void);

/* Write @content into @path (absolute, e.g. "/sys/class/net/eth0/mtu"), parents made. */
void fixture_sysfs_write(const char *path, const char *content);
/* Write the number @v into the path printf(@fmt, ...) makes (a counter, a setting). */
void fixture_sysfs_num(unsigned long long v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Make @path a symlink to @target (as given: relative targets resolve inside the tree). */
void fixture_sysfs_symlink(const char *path, const char *target);

/* /sys/class/net/<name>/{ifindex,address,mtu,operstate} */
void fixture_sysfs_netdev(const char *name, int ifindex, const char *mac, int mtu,
			  const char *operstate);
/* The RoCE port's GID @index belongs to netdev @name (gid_attrs/ndevs/<index>). */
void fixture_sysfs_gid_ndev(const char *ibdev, int port, int index, const char *name);
/* /sys/class/infiniband/<ibdev>/device -> /sys/devices/pci0000:00/<bdf> */
void fixture_sysfs_pci(const char *ibdev, const char *bdf);

/*
 * A virtio-net netdev, as sysfs shows one in a guest: /sys/class/net/<name>/device ->
 * the virtio<N> node under the PCI function <bdf>, each with its subsystem link.
 */
void fixture_sysfs_virtio_netdev(const char *name, const char *bdf, int virtio);
/* /sys/class/net/<upper>/lower_<lower>, as a VLAN or bond shows its lower netdev. */
void fixture_sysfs_lower(const char *upper, const char *lower);

#endif /* FIXTURE_SYSFS_H */
