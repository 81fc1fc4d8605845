// SPDX-License-Identifier: MIT
/*
 * Fake verbs device model (see fake_verbs.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fake_verbs.h"
#include "rn_verbs.h"

#define FAKE_MAX_DEVS 16
#define FAKE_MAX_MRS 1024

struct fake_ctx {
	struct ibv_context ctx; /* first: the library sees this */
	struct fake_dev *dev;
};

static struct fake_dev *fdevs;
static int nfdevs;
static struct ibv_device ibdevs[FAKE_MAX_DEVS];
static struct ibv_device *devlist[FAKE_MAX_DEVS + 1];
static struct ibv_mr *mrs[FAKE_MAX_MRS];
static uint32_t next_key = 0x100;
static int live;

static struct fake_dev *dev_of_ibdev(struct ibv_device *d)
{
	long i = d - ibdevs;

	return i >= 0 && i < nfdevs ? &fdevs[i] : NULL;
}

struct fake_dev *fake_verbs_dev_of(struct ibv_context *ctx)
{
	return ((struct fake_ctx *)ctx)->dev;
}

static struct ibv_device **f_get_device_list(int *num)
{
	int i;

	for (i = 0; i < nfdevs; i++)
		devlist[i] = &ibdevs[i];
	devlist[nfdevs] = NULL;
	if (num)
		*num = nfdevs;
	return devlist;
}

static void f_free_device_list(struct ibv_device **list)
{
	(void)list;
}

static const char *f_get_device_name(struct ibv_device *d)
{
	return d->name;
}

static struct ibv_context *f_open_device(struct ibv_device *d)
{
	struct fake_dev *fd = dev_of_ibdev(d);
	struct fake_ctx *c;

	if (!fd) {
		errno = ENODEV;
		return NULL;
	}
	if (fd->fail_open) {
		errno = fd->fail_open;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ctx.device = d;
	c->ctx.async_fd = -1;
	c->ctx.cmd_fd = -1;
	c->dev = fd;
	live++;
	return &c->ctx;
}

static int f_close_device(struct ibv_context *ctx)
{
	free(ctx);
	live--;
	return 0;
}

static int f_query_device(struct ibv_context *ctx, struct ibv_device_attr *a)
{
	struct fake_dev *d = fake_verbs_dev_of(ctx);

	memset(a, 0, sizeof(*a));
	strcpy(a->fw_ver, "fake-1.0");
	a->node_guid = d->guid;
	a->sys_image_guid = d->guid;
	a->max_mr_size = 1ULL << 40;
	a->max_qp = 1024;
	a->max_qp_wr = 4096;
	a->max_sge = 32;
	a->max_cq = 1024;
	a->max_cqe = 32767;
	a->max_mr = FAKE_MAX_MRS;
	a->max_pd = 64;
	a->max_qp_rd_atom = 16;
	a->max_qp_init_rd_atom = 16;
	a->atomic_cap = d->no_atomics ? IBV_ATOMIC_NONE : IBV_ATOMIC_HCA;
	a->phys_port_cnt = (uint8_t)d->nports;
	return 0;
}

static int f_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *a)
{
	struct fake_dev *d = fake_verbs_dev_of(ctx);
	struct fake_port *p;

	if (port < 1 || port > d->nports)
		return EINVAL;
	p = &d->ports[port - 1];
	memset(a, 0, sizeof(*a));
	a->state = p->state ? p->state : IBV_PORT_ACTIVE;
	a->link_layer = p->link_layer ? p->link_layer : IBV_LINK_LAYER_ETHERNET;
	a->active_mtu = p->active_mtu ? p->active_mtu : IBV_MTU_1024;
	a->max_mtu = IBV_MTU_4096;
	a->active_width = p->active_width ? p->active_width : 1;
	a->active_speed = p->active_speed ? p->active_speed : 1;
	a->gid_tbl_len = FAKE_MAX_GIDS;
	a->port_cap_flags = 0;
	a->max_msg_sz = 1U << 31;
	return 0;
}

static int parse_gid(const char *s, union ibv_gid *gid)
{
	struct in_addr v4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, s, &v4) == 1) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &v4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, s, gid->raw) == 1 ? 0 : -1;
}

struct fake_verbs_calls fake_verbs_calls;

static int f_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			  struct ibv_gid_entry *e)
{
	struct fake_dev *d = fake_verbs_dev_of(ctx);
	struct fake_gid *g;

	fake_verbs_calls.query_gid_ex++;
	if (port < 1 || port > (uint32_t)d->nports || index >= FAKE_MAX_GIDS)
		return EINVAL;
	g = &d->ports[port - 1].gids[index];
	if (!g->addr)
		return ENODATA; /* what rxe and mlx5 answer for an empty slot */
	if (d->ports[port - 1].gid_fail[index])
		return d->ports[port - 1].gid_fail[index];
	memset(e, 0, sizeof(*e));
	if (parse_gid(g->addr, &e->gid))
		return EINVAL;
	e->gid_index = index;
	e->port_num = port;
	e->gid_type = g->type;
	e->ndev_ifindex = g->ifindex;
	return 0;
}

/*
 * As the kernel's table method answers: every port's valid entries in index order; as
 * libibverbs' sysfs fallback, a failure when one valid entry's attributes cannot be read.
 */
static ssize_t f_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e, size_t max)
{
	struct fake_dev *d = fake_verbs_dev_of(ctx);
	size_t n = 0;
	int p, i;

	fake_verbs_calls.query_gid_table++;
	if (d->table_fail)
		return -d->table_fail;
	for (p = 0; p < d->nports; p++)
		for (i = 0; i < FAKE_MAX_GIDS; i++) {
			if (!d->ports[p].gids[i].addr)
				continue;
			if (d->ports[p].gid_fail[i])
				return -d->ports[p].gid_fail[i];
			if (n == max)
				return -EINVAL;
			fake_verbs_calls.query_gid_ex--; /* the entry read below is not a call */
			if (f_query_gid_ex(ctx, (uint32_t)p + 1, (uint32_t)i, &e[n]))
				return -EINVAL;
			n++;
		}
	return (ssize_t)n;
}

static struct ibv_pd *f_alloc_pd(struct ibv_context *ctx)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return NULL;
	pd->context = ctx;
	pd->handle = (uint32_t)live;
	live++;
	return pd;
}

static int f_dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
	live--;
	return 0;
}

static struct ibv_mr *new_mr(struct ibv_pd *pd, void *addr, size_t len)
{
	struct ibv_mr *mr;
	int i;

	for (i = 0; i < FAKE_MAX_MRS && mrs[i]; i++)
		;
	if (i == FAKE_MAX_MRS) {
		errno = ENOMEM;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return NULL;
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = len;
	mr->lkey = next_key++;
	mr->rkey = next_key++;
	mrs[i] = mr;
	live++;
	return mr;
}

static struct ibv_mr *f_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				     unsigned int access)
{
	(void)iova;
	(void)access;
	if (!len && !addr) {
		errno = EINVAL;
		return NULL;
	}
	return new_mr(pd, addr, len);
}

static struct ibv_mr *f_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				      int fd, int access)
{
	struct fake_dev *d = fake_verbs_dev_of(pd->context);

	(void)offset;
	(void)access;
	if (!d->dmabuf) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	return new_mr(pd, (void *)(uintptr_t)iova, len);
}

static int f_dereg_mr(struct ibv_mr *mr)
{
	int i;

	for (i = 0; i < FAKE_MAX_MRS; i++)
		if (mrs[i] == mr) {
			mrs[i] = NULL;
			free(mr);
			live--;
			return 0;
		}
	return EINVAL;
}

struct ibv_mr *fake_verbs_mr_find(uint32_t key)
{
	int i;

	for (i = 0; i < FAKE_MAX_MRS; i++)
		if (mrs[i] && (mrs[i]->rkey == key || mrs[i]->lkey == key))
			return mrs[i];
	return NULL;
}

int fake_verbs_live_objects(void)
{
	return live;
}

static const struct rn_verbs_ops fake_ops = {
	.get_device_list = f_get_device_list,
	.free_device_list = f_free_device_list,
	.get_device_name = f_get_device_name,
	.open_device = f_open_device,
	.close_device = f_close_device,
	.query_device = f_query_device,
	.query_port = f_query_port,
	.query_gid_ex = f_query_gid_ex,
	.query_gid_table = f_query_gid_table,
	.alloc_pd = f_alloc_pd,
	.dealloc_pd = f_dealloc_pd,
	.reg_mr_iova2 = f_reg_mr_iova2,
	.reg_dmabuf_mr = f_reg_dmabuf_mr,
	.dereg_mr = f_dereg_mr,
};

void fake_verbs_install(struct fake_dev *devs, int n)
{
	int i;

	fdevs = devs;
	nfdevs = n < FAKE_MAX_DEVS ? n : FAKE_MAX_DEVS;
	memset(ibdevs, 0, sizeof(ibdevs));
	for (i = 0; i < nfdevs; i++) {
		strncpy(ibdevs[i].name, devs[i].name, sizeof(ibdevs[i].name) - 1);
		strncpy(ibdevs[i].dev_name, devs[i].name, sizeof(ibdevs[i].dev_name) - 1);
		ibdevs[i].node_type = IBV_NODE_CA;
		ibdevs[i].transport_type = IBV_TRANSPORT_IB;
	}
	rn_verbs_set_ops(&fake_ops);
}

int fake_verbs_uninstall(void)
{
	rn_verbs_reset_ops();
	fdevs = NULL;
	nfdevs = 0;
	return live;
}
