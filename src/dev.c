// SPDX-License-Identifier: MIT
/*
 * Device discovery: RDMA device ports -> RoCE NICs (netdev, MAC, MTU, PCI path,
 * speed, PD, DMA-BUF and GPUDirect probes), filtered by NCCL_IB_HCA exactly as NCCL.
 */
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_compiler.h"
#include "rn_dev.h"
#include "rn_mr.h"
#include "rn_log.h"
#include "rn_sys.h"
#include "rn_verbs.h"

/* ---- NCCL_IB_HCA ---- */

struct hca_tok {
	char name[64];
	int port, rail, plane; /* -1 = absent or empty */
};

static int hca_num(const char *s, size_t n)
{
	return n ? atoi(s) : -1;
}

/*
 * Parse the entry at @s, "name[:port[:rail[:plane]]]" up to ',' or the end, into @t.
 * Returns where the next entry starts, or NULL after the last one. No limit on the
 * number of entries: a long exclusion list is honoured to its end.
 */
static const char *hca_next(const char *s, struct hca_tok *t)
{
	size_t len = strcspn(s, ","), nl = strcspn(s, ":,");
	const char *f = s + nl;
	int *fields[3] = { &t->port, &t->rail, &t->plane }, k = 0;

	snprintf(t->name, sizeof(t->name), "%.*s", (int)RN_MIN(nl, sizeof(t->name) - 1), s);
	if (nl >= sizeof(t->name))
		t->name[0] = '\0'; /* longer than any device name: matches nothing */
	t->port = t->rail = t->plane = -1;
	while (f < s + len && k < 3) {
		size_t fl = strcspn(f + 1, ":,");

		*fields[k++] = hca_num(f + 1, fl);
		f += 1 + fl;
	}
	return s[len] ? s + len + 1 : NULL;
}

int rn_hca_lookup(const char *spec, const char *ibdev, int port, int *rail, int *plane)
{
	struct hca_tok t;
	int exclude = 0, exact = 0, hit = 0;
	const char *s;

	if (rail)
		*rail = -1;
	if (plane)
		*plane = -1;
	if (!spec || !*spec)
		return 1;
	if (*spec == '^') {
		exclude = 1;
		spec++;
	}
	if (*spec == '=') {
		exact = 1;
		spec++;
	}
	for (s = spec; s && *s && !hit;) {
		s = hca_next(s, &t);
		if (!t.name[0])
			continue;
		hit = (exact ? !strcmp(t.name, ibdev) : !strncmp(t.name, ibdev, strlen(t.name))) &&
		      (t.port < 0 || t.port == port);
		if (hit && !exclude) {
			if (rail)
				*rail = t.rail;
			if (plane)
				*plane = t.plane;
		}
	}
	return exclude ? !hit : hit;
}

int rn_hca_match(const char *spec, const char *ibdev, int port)
{
	return rn_hca_lookup(spec, ibdev, port, NULL, NULL);
}

/* ---- port properties ---- */

int rn_speed_code_mbps(uint32_t code, int width)
{
	/*
	 * IB speed codes (bit i): SDR DDR QDR FDR10 FDR EDR HDR NDR, and XDR (bit 8), which
	 * only active_speed_ex can hold. Widths as ibv_port_attr encodes them.
	 */
	static const int lane[] = { 2500, 5000, 10000, 10000, 14000, 25000, 50000, 100000, 200000 };
	int w, i;

	for (i = 0; i < (int)RN_ARRAY_SIZE(lane) - 1 && !(code & (1u << i)); i++)
		;
	switch (width) {
	case 2:
		w = 4;
		break;
	case 4:
		w = 8;
		break;
	case 8:
		w = 12;
		break;
	case 16:
		w = 2;
		break;
	default:
		w = 1;
	}
	return code ? lane[i] * w : lane[0] * w;
}

int rn_port_speed_mbps(const struct ibv_port_attr *pa)
{
	return rn_speed_code_mbps(pa->active_speed, pa->active_width);
}

int rn_dev_port_speed(const char *ibdev, int port, const struct ibv_port_attr *pa)
{
	char path[PATH_MAX], rate[64];
	long gbps;

	if (pa->active_speed)
		return rn_port_speed_mbps(pa);
	/*
	 * 0: a speed the 8-bit field cannot hold (XDR and later, reported in
	 * active_speed_ex, which this libibverbs may predate): the kernel's rate file
	 * says it, e.g. "800 Gb/sec (4X XDR)".
	 */
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/rate", ibdev, port);
	if (!rn_sys.read(path, rate, sizeof(rate))) {
		gbps = strtol(rate, NULL, 10);
		if (gbps > 0 && gbps < 100000)
			return (int)gbps * 1000;
	}
	return rn_port_speed_mbps(pa);
}

/* ---- netdev identity ---- */

struct ifindex_find {
	int ifindex;
	char name[IF_NAMESIZE];
};

static int match_ifindex(const char *name, void *arg)
{
	struct ifindex_find *f = arg;
	long idx;

	if (rn_sys_read_long(&idx, "/sys/class/net/%s/ifindex", name) || idx != f->ifindex)
		return 0;
	snprintf(f->name, sizeof(f->name), "%s", name);
	return 1;
}

/*
 * The netdev behind a RoCE port: the first GID entry's ndevs attribute, else its
 * ifindex looked up in /sys/class/net, else rxe's "parent".
 */
static int find_netdev(struct ibv_context *ctx, const char *ibdev, int port, int gid_tbl_len,
		       char *out, size_t len)
{
	struct ifindex_find f = { 0 };
	int i;

	for (i = 0; i < gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		char buf[64];

		if (rn_verbs.query_gid_ex(ctx, (uint32_t)port, (uint32_t)i, &e))
			continue;
		if (!rn_sys_readf(buf, sizeof(buf),
				  "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d", ibdev,
				  port, i) &&
		    buf[0] && strlen(buf) < len) {
			memcpy(out, buf, strlen(buf) + 1);
			return 0;
		}
		if (e.ndev_ifindex && !f.ifindex)
			f.ifindex = (int)e.ndev_ifindex;
	}
	if (f.ifindex) {
		rn_sys.list("/sys/class/net", match_ifindex, &f);
		if (f.name[0]) {
			snprintf(out, len, "%s", f.name);
			return 0;
		}
	}
	if (!rn_sys_readf(out, len, "/sys/class/infiniband/%s/parent", ibdev) && out[0])
		return 0;
	return -ENODEV;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

static void fill_netdev(struct rn_nic *nic)
{
	char buf[64];
	long v;

	if (!rn_sys_read_long(&v, "/sys/class/net/%s/ifindex", nic->netdev))
		nic->ifindex = (int)v;
	if (!rn_sys_read_long(&v, "/sys/class/net/%s/mtu", nic->netdev))
		nic->mtu = (int)v;
	if (!rn_sys_readf(buf, sizeof(buf), "/sys/class/net/%s/address", nic->netdev))
		parse_mac(buf, nic->mac);
	/* "unknown" is what virtual links without carrier reporting say when they work */
	if (!rn_sys_readf(buf, sizeof(buf), "/sys/class/net/%s/operstate", nic->netdev))
		nic->link_up = !strcmp(buf, "up") || !strcmp(buf, "unknown");
}

/* ---- probes ---- */

static int peermem_loaded(void)
{
	static const char *const paths[] = {
		"/sys/kernel/mm/memory_peers/nv_mem/version",
		"/sys/kernel/mm/memory_peers/nv_mem_nc/version",
		"/sys/module/nvidia_peermem/version",
	};
	char buf[64];
	size_t i;

	for (i = 0; i < RN_ARRAY_SIZE(paths); i++)
		if (!rn_sys.read(paths[i], buf, sizeof(buf)))
			return 1;
	return 0;
}

/* As NCCL: a registration with fd -1 fails with EBADF only where DMA-BUF is implemented. */
static int dmabuf_supported(struct ibv_pd *pd)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = rn_verbs.reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
	if (mr) {
		rn_verbs.dereg_mr(mr);
		return 1;
	}
	return errno == EBADF;
}

static int is_rxe(const char *ibdev, const char *pci_path)
{
	char buf[64];

	if (!strncmp(ibdev, "rxe", 3))
		return 1;
	/* renamed rxe devices: no PCI parent, but the "parent" netdev attribute */
	return !pci_path[0] &&
	       !rn_sys_readf(buf, sizeof(buf), "/sys/class/infiniband/%s/parent", ibdev);
}

struct lower_scan {
	char *name; /* IFNAMSIZ + 8 bytes */
	int n;
};

/* "lower_eth1" entries of a stacked netdev: the count, and the name of the first. */
static int lower_entry(const char *name, void *arg)
{
	struct lower_scan *ls = arg;

	if (strncmp(name, "lower_", 6))
		return 0;
	if (!ls->n++)
		snprintf(ls->name, IFNAMSIZ + 8, "%s", name + 6);
	return 0;
}

/* The last component of a sysfs path, "" for none. */
static const char *path_base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * The PCI function under @netdev, for an RDMA device that has none of its own (rxe,
 * siw): NCCL places a NIC by its pciPath, and with NULL every such NIC lands in one
 * <nic> under the first CPU, where NCCL fuses them into a vNIC it then cannot place
 * ("Could not find any local path from gpu 0 to net"). Walk up from the netdev's
 * device to the first node whose subsystem is pci: for virtio-net the netdev's device
 * is a virtio node under the PCI function. A VLAN or other stacked netdev with a single
 * lower one takes that one's. 0, or -ENOENT when there is no PCI device (veth, lo).
 */
static int netdev_pci_path(const char *netdev, char *out, size_t len, int depth)
{
	char path[PATH_MAX], sub[PATH_MAX + 16], node[PATH_MAX], lower[IFNAMSIZ + 8] = "";
	struct lower_scan ls = { lower, 0 };
	int i;

	if (!netdev[0] || strchr(netdev, '/') || depth > 4)
		return -ENOENT;
	snprintf(path, sizeof(path), "/sys/class/net/%s/device", netdev);
	if (!rn_sys.realpath(path, node, sizeof(node))) {
		/* bounded: a sysfs device path is a few levels deep */
		for (i = 0; i < 16 && !strncmp(node, "/sys/devices/", 13); i++) {
			char *slash;

			/* the link's last component names the bus ("../../../bus/pci"):
			 * one readlink, not a realpath of every component */
			snprintf(sub, sizeof(sub), "%s/subsystem", node);
			if (!rn_sys.readlink(sub, path, sizeof(path)) &&
			    !strcmp(path_base(path), "pci")) {
				if (strlen(node) >= len)
					return -ENAMETOOLONG;
				strcpy(out, node);
				return 0;
			}
			slash = strrchr(node, '/');
			if (!slash)
				break;
			*slash = '\0';
		}
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "/sys/class/net/%s", netdev);
	if (rn_sys.list(path, lower_entry, &ls) || ls.n != 1)
		return -ENOENT;
	return netdev_pci_path(lower, out, len, depth + 1);
}

/* ---- discovery ---- */

void rn_dev_free(struct rn_dev *dev)
{
	if (!dev)
		return;
	/* MRs NCCL never released still pin the PD: drop them first. */
	rn_mr_cache_destroy(dev);
	if (dev->pd)
		rn_verbs.dealloc_pd(dev->pd);
	if (dev->ctx)
		rn_verbs.close_device(dev->ctx);
	pthread_mutex_destroy(&dev->lock);
	rn_nic_cleanup(&dev->nic);
	free(dev);
}

struct why {
	char *buf;
	size_t len;
	int nports;
	int nproblems; /* left out for another reason than the user's choice or the link type */
	int omitted;   /* items that did not fit @buf whole (each is in the INFO log) */
};

/* Room kept in @buf for the count of items that did not fit and the summary's head. */
#define WHY_TAIL 120

static void why_add(struct why *w, int problem, const char *fmt, ...) __rn_printf(3, 4);

/*
 * A port not used: one INFO line now, and a part of the reason if none is left.
 * @problem: something to fix (down, cannot open...), not NCCL_IB_HCA or InfiniBand.
 */
static void why_add(struct why *w, int problem, const char *fmt, ...)
{
	size_t used = strlen(w->buf);
	char *item = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&item, fmt, ap) < 0)
		item = NULL;
	va_end(ap);
	w->nproblems += problem != 0;
	rn_info(RN_SUB_INIT | RN_SUB_NET, RN_PFX "not using %s", item ? item : "a port");
	/* whole items only: the ones that do not fit are counted, never cut */
	if (item && used + 2 + strlen(item) + WHY_TAIL < w->len)
		snprintf(w->buf + used, w->len - used, "%s%s", used ? ", " : "", item);
	else
		w->omitted++;
	free(item);
}

static void why_finish(struct why *w)
{
	size_t used = strlen(w->buf);

	if (w->omitted && used + WHY_TAIL <= w->len)
		snprintf(w->buf + used, w->len - used, "%s%d more (INFO log)", used ? ", and " : "",
			 w->omitted);
}

static struct rn_dev *dev_new(struct ibv_context *ctx, const char *name, int port,
			      const struct ibv_device_attr *attr, const struct ibv_port_attr *pa,
			      const struct rn_config *cfg, int peermem)
{
	struct rn_dev *d = calloc(1, sizeof(*d));
	char path[PATH_MAX];

	if (!d)
		return NULL;
	pthread_mutex_init(&d->lock, NULL);
	d->ctx = ctx;
	d->attr = *attr;
	snprintf(d->nic.ibdev, sizeof(d->nic.ibdev), "%s", name);
	d->nic.port = port;
	d->nic.active_mtu = pa->active_mtu;
	d->nic.gid_index = -1;
	d->guid = attr->sys_image_guid;
	d->speed_mbps = rn_dev_port_speed(name, port, pa);
	d->max_msg_size = pa->max_msg_sz;
	/* rxe and siw have no device link: one readlink says so, where realpath pays one a
	 * path component */
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", name);
	if (rn_sys.readlink(path, d->pci_path, sizeof(d->pci_path)) ||
	    rn_sys.realpath(path, d->pci_path, sizeof(d->pci_path)))
		d->pci_path[0] = '\0';
	d->is_rxe = is_rxe(name, d->pci_path);
	if (!find_netdev(ctx, name, port, pa->gid_tbl_len, d->nic.netdev, sizeof(d->nic.netdev)))
		fill_netdev(&d->nic);
	if (!d->pci_path[0] && !netdev_pci_path(d->nic.netdev, d->pci_path, sizeof(d->pci_path), 0))
		d->pci_from_netdev = 1;
	d->pd = rn_verbs.alloc_pd(ctx);
	if (!d->pd) {
		int err = errno ? errno : ENOMEM;

		d->ctx = NULL; /* the caller still owns it */
		rn_dev_free(d);
		errno = err;
		return NULL;
	}
	d->ptr_support = RN_PTR_HOST;
	if (peermem)
		d->ptr_support |= RN_PTR_CUDA;
	if (dmabuf_supported(d->pd))
		d->ptr_support |= RN_PTR_DMABUF;
	/* auto (2): rdma-core only grants it where the device supports it */
	d->relaxed_ordering = cfg->pci_relaxed_ordering != 0;
	return d;
}

static void dev_log(const struct rn_dev *d)
{
	const struct rn_nic *nic = &d->nic;

	rn_info(RN_SUB_INIT | RN_SUB_NET,
		RN_PFX "found %s:%d netdev %s (ifindex %d, mtu %d, %s) %s%s speed %d Mbps "
		       "ptrSupport %s%s%s",
		nic->ibdev, nic->port, nic->netdev[0] ? nic->netdev : "?", nic->ifindex, nic->mtu,
		nic->link_up ? "up" : "down",
		d->pci_from_netdev ? "pci (the netdev's) " :
		d->is_rxe          ? "Soft-RoCE" :
				     "pci ",
		d->is_rxe && !d->pci_from_netdev ? "" :
		d->pci_path[0]                   ? d->pci_path :
						   "-",
		d->speed_mbps, d->ptr_support & RN_PTR_HOST ? "HOST" : "",
		d->ptr_support & RN_PTR_CUDA ? "|CUDA" : "",
		d->ptr_support & RN_PTR_DMABUF ? "|DMABUF" : "");
}

static const char *port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN:
		return "DOWN";
	case IBV_PORT_INIT:
		return "INIT";
	case IBV_PORT_ARMED:
		return "ARMED";
	case IBV_PORT_ACTIVE:
		return "ACTIVE";
	default:
		return "not active";
	}
}

/* Scan one device's ports into @out (at most @room); returns how many were added. */
static int dev_scan(struct ibv_device *ibd, const struct rn_config *cfg, struct rn_dev **out,
		    int room, struct why *why, int peermem)
{
	const char *name = rn_verbs.get_device_name(ibd);
	struct ibv_port_attr pas[RN_MAX_DEVS];
	int ports[RN_MAX_DEVS];
	struct ibv_device_attr attr;
	struct ibv_context *probe;
	int nsel = 0, n = 0, probe_used = 0, p, i, ret;

	if (ibd->transport_type == IBV_TRANSPORT_IWARP) {
		why_add(why, 0, "%s is iWARP", name);
		return 0;
	}
	probe = rn_verbs.open_device(ibd);
	if (!probe) {
		why_add(why, 1, "%s cannot be opened (%s)", name, strerror(errno));
		return 0;
	}
	ret = rn_verbs_err(rn_verbs.query_device(probe, &attr));
	if (ret) {
		why_add(why, 1, "%s cannot be queried (%s)", name, strerror(-ret));
		rn_verbs.close_device(probe);
		return 0;
	}
	for (p = 1; p <= attr.phys_port_cnt && nsel < RN_MIN(room, RN_MAX_DEVS); p++) {
		struct ibv_port_attr *pa = &pas[nsel];

		why->nports++;
		ret = rn_verbs_err(rn_verbs.query_port(probe, (uint8_t)p, pa));
		if (ret) {
			why_add(why, 1, "%s:%d cannot be queried (%s)", name, p, strerror(-ret));
			continue;
		}
		if (pa->link_layer != IBV_LINK_LAYER_ETHERNET) {
			why_add(why, 0, "%s:%d is InfiniBand", name, p);
			continue;
		}
		if (pa->state != IBV_PORT_ACTIVE) {
			why_add(why, 1, "%s:%d is %s", name, p, port_state_str(pa->state));
			continue;
		}
		if (!rn_hca_match(cfg->ib_hca, name, p)) {
			why_add(why, 0, "%s:%d not selected by NCCL_IB_HCA=%s", name, p,
				cfg->ib_hca);
			continue;
		}
		ports[nsel++] = p;
	}
	/* Every NIC gets its own context; the probe's goes to the first one. */
	for (i = 0; i < nsel; i++) {
		struct ibv_context *ctx = i == 0 ? probe : rn_verbs.open_device(ibd);
		struct rn_dev *d = ctx ? dev_new(ctx, name, ports[i], &attr, &pas[i], cfg,
						 peermem) :
					 NULL;

		if (!d) {
			why_add(why, 1, "%s:%d cannot be set up (%s)", name, ports[i],
				strerror(errno));
			if (ctx && ctx != probe)
				rn_verbs.close_device(ctx);
			continue;
		}
		probe_used |= ctx == probe;
		out[n++] = d;
		dev_log(d);
	}
	if (!probe_used)
		rn_verbs.close_device(probe);
	return n;
}

/* The identity NCCL gets (see struct rn_dev), and the rail/plane NCCL_IB_HCA gives. */
static void nccl_numbering(const struct rn_config *cfg, struct rn_dev **d, int n)
{
	size_t len;
	int i, j;

	for (i = 0; i < n; i++) {
		snprintf(d[i]->nccl_pci_path, sizeof(d[i]->nccl_pci_path), "%s", d[i]->pci_path);
		len = strlen(d[i]->nccl_pci_path);
		if (len)
			d[i]->nccl_pci_path[len - 1] = '0'; /* "...:3b:00.1" -> "...:3b:00.0" */
		/* NCCL_IB_MERGE_VFS: a virtual function counts as a port of its NIC too */
		if (cfg->merge_vfs && len >= 4 && d[i]->nccl_pci_path[len - 2] == '.')
			d[i]->nccl_pci_path[len - 3] = d[i]->nccl_pci_path[len - 4] = '0';
		d[i]->nccl_port = d[i]->nic.port;
		for (j = 0; j < i && len; j++)
			if (!strcmp(d[j]->nccl_pci_path, d[i]->nccl_pci_path))
				d[i]->nccl_port++;
		rn_hca_lookup(cfg->ib_hca, d[i]->nic.ibdev, d[i]->nic.port, &d[i]->rail,
			      &d[i]->plane);
	}
}

int rn_dev_discover(const struct rn_config *cfg, struct rn_dev **out, int max, char *why_buf,
		    size_t why_len, int *nproblems)
{
	struct why why = { why_buf, why_len, 0, 0, 0 };
	struct ibv_device **list;
	int num = 0, n = 0, i, peermem;

	why_buf[0] = '\0';
	errno = 0;
	list = rn_verbs.get_device_list(&num);
	if (!list || !num) {
		int err = errno;

		if (list)
			rn_verbs.free_device_list(list);
		if (err && err != ENOSYS && err != ENOENT)
			snprintf(why_buf, why_len, "no RDMA devices found (%s)", strerror(err));
		else
			snprintf(why_buf, why_len,
				 "no RDMA devices found (is the driver loaded? rdma link show)");
		return 0;
	}
	peermem = peermem_loaded(); /* the host's, not a device's: read once */
	for (i = 0; i < num && n < max; i++)
		n += dev_scan(list[i], cfg, out + n, max - n, &why, peermem);
	rn_verbs.free_device_list(list);
	why_finish(&why);
	if (nproblems)
		*nproblems = why.nproblems;
	nccl_numbering(cfg, out, n);
	if (!n) {
		char *detail = strdup(why_buf);

		/* WHY_TAIL kept room for this head: the list stays whole */
		snprintf(why_buf, why_len,
			 "%d RDMA device%s, %d port%s, none an ACTIVE Ethernet port selected: %s",
			 num, num == 1 ? "" : "s", why.nports, why.nports == 1 ? "" : "s",
			 detail ? detail : "see the INFO log");
		free(detail);
	}
	return n;
}
