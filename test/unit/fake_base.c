// SPDX-License-Identifier: MIT
/*
 * The base every unit test starts from: verbs, netlink and sysfs tables whose every op fails
 * (cf. rdma-core's dummy_ops.c). A fake installs only what it fakes over it, and reset comes
 * back here, never to the real tables: a test that forgets an op gets ENOSYS (or ENOENT for a
 * file), not the build machine's own RDMA devices, routes or /sys. A test that means the real
 * thing says so (rn_sys_set_ops(&rn_sys_real_ops) under a fixture root, as fixture_sysfs does).
 */
#include <errno.h>
#include <stddef.h>

#include "rn_nl.h"
#include "rn_sys.h"
#include "rn_verbs.h"

static void *null_errno(void)
{
	errno = ENOSYS;
	return NULL;
}

static struct ibv_device **v_get_device_list(int *num)
{
	if (num)
		*num = 0;
	return null_errno();
}

static void v_free_device_list(struct ibv_device **list)
{
	(void)list;
}

static const char *v_get_device_name(struct ibv_device *dev)
{
	(void)dev;
	return null_errno();
}

static struct ibv_context *v_open_device(struct ibv_device *dev)
{
	(void)dev;
	return null_errno();
}

static int v_close_device(struct ibv_context *ctx)
{
	(void)ctx;
	return ENOSYS;
}

static int v_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	(void)ctx, (void)attr;
	return ENOSYS;
}

static int v_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	(void)ctx, (void)port, (void)attr;
	return ENOSYS;
}

static int v_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			  struct ibv_gid_entry *entry)
{
	(void)ctx, (void)port, (void)index, (void)entry;
	return ENOSYS;
}

static ssize_t v_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries, size_t max)
{
	(void)ctx, (void)entries, (void)max;
	return -ENOSYS;
}

static struct ibv_pd *v_alloc_pd(struct ibv_context *ctx)
{
	(void)ctx;
	return null_errno();
}

static int v_dealloc_pd(struct ibv_pd *pd)
{
	(void)pd;
	return ENOSYS;
}

static struct ibv_mr *v_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				     unsigned int access)
{
	(void)pd, (void)addr, (void)len, (void)iova, (void)access;
	return null_errno();
}

static struct ibv_mr *v_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				      int fd, int access)
{
	(void)pd, (void)offset, (void)len, (void)iova, (void)fd, (void)access;
	return null_errno();
}

static int v_dereg_mr(struct ibv_mr *mr)
{
	(void)mr;
	return ENOSYS;
}

static struct ibv_comp_channel *v_create_comp_channel(struct ibv_context *ctx)
{
	(void)ctx;
	return null_errno();
}

static int v_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	(void)ch;
	return ENOSYS;
}

static struct ibv_cq *v_create_cq(struct ibv_context *ctx, int cqe, void *cq_ctx,
				  struct ibv_comp_channel *ch, int vector)
{
	(void)ctx, (void)cqe, (void)cq_ctx, (void)ch, (void)vector;
	return null_errno();
}

static int v_destroy_cq(struct ibv_cq *cq)
{
	(void)cq;
	return ENOSYS;
}

static struct ibv_qp *v_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	(void)pd, (void)attr;
	return null_errno();
}

static int v_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp, (void)attr, (void)mask;
	return ENOSYS;
}

static int v_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		      struct ibv_qp_init_attr *init)
{
	(void)qp, (void)attr, (void)mask, (void)init;
	return ENOSYS;
}

static int v_destroy_qp(struct ibv_qp *qp)
{
	(void)qp;
	return ENOSYS;
}

static int v_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	if (bad)
		*bad = wr;
	return ENOSYS;
}

static int v_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	if (bad)
		*bad = wr;
	return ENOSYS;
}

static int v_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq, (void)n, (void)wc;
	return -ENOSYS;
}

static int v_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	(void)ctx, (void)ev;
	errno = ENOSYS;
	return -1;
}

static void v_ack_async_event(struct ibv_async_event *ev)
{
	(void)ev;
}

static int v_fork_init(void)
{
	return ENOSYS;
}

static const struct rn_verbs_ops verbs_fail = {
	.get_device_list = v_get_device_list,
	.free_device_list = v_free_device_list,
	.get_device_name = v_get_device_name,
	.open_device = v_open_device,
	.close_device = v_close_device,
	.query_device = v_query_device,
	.query_port = v_query_port,
	.query_gid_ex = v_query_gid_ex,
	.query_gid_table = v_query_gid_table,
	.alloc_pd = v_alloc_pd,
	.dealloc_pd = v_dealloc_pd,
	.reg_mr_iova2 = v_reg_mr_iova2,
	.reg_dmabuf_mr = v_reg_dmabuf_mr,
	.dereg_mr = v_dereg_mr,
	.create_comp_channel = v_create_comp_channel,
	.destroy_comp_channel = v_destroy_comp_channel,
	.create_cq = v_create_cq,
	.destroy_cq = v_destroy_cq,
	.create_qp = v_create_qp,
	.modify_qp = v_modify_qp,
	.query_qp = v_query_qp,
	.destroy_qp = v_destroy_qp,
	.post_send = v_post_send,
	.post_recv = v_post_recv,
	.poll_cq = v_poll_cq,
	.get_async_event = v_get_async_event,
	.ack_async_event = v_ack_async_event,
	.fork_init = v_fork_init,
};

static int n_link_dump(struct rn_nl_link **out, int *n)
{
	(void)out, (void)n;
	return -ENOSYS;
}

static int n_addr_dump(int family, struct rn_nl_addr **out, int *n)
{
	(void)family, (void)out, (void)n;
	return -ENOSYS;
}

static int n_rule_dump(int family, struct rn_nl_rule **out, int *n)
{
	(void)family, (void)out, (void)n;
	return -ENOSYS;
}

static int n_route_dump(int family, struct rn_nl_route **out, int *n)
{
	(void)family, (void)out, (void)n;
	return -ENOSYS;
}

static int n_route_get(const struct rn_ip *dst, const struct rn_ip *src, int oif,
		       struct rn_nl_route *out)
{
	(void)dst, (void)src, (void)oif, (void)out;
	return -ENOSYS;
}

static int n_neigh_get(int ifindex, const struct rn_ip *ip, struct rn_nl_neigh *out)
{
	(void)ifindex, (void)ip, (void)out;
	return -ENOSYS;
}

static int n_neigh_probe(int ifindex, const struct rn_ip *src, const struct rn_ip *dst)
{
	(void)ifindex, (void)src, (void)dst;
	return -ENOSYS;
}

static int n_link_get(int ifindex, struct rn_nl_link *out)
{
	(void)ifindex, (void)out;
	return -ENOSYS;
}

static int n_arp_probe(struct rn_arp_query *q, int n, int wait_ms)
{
	(void)q, (void)n, (void)wait_ms;
	return -ENOSYS;
}

static int n_dcb_get(const char *ifname, struct rn_nl_dcb *out)
{
	(void)ifname, (void)out;
	return -ENOSYS;
}

static int n_neigh_dump(int family, struct rn_nl_neigh **out, int *n)
{
	(void)family, (void)out, (void)n;
	return -ENOSYS;
}

static const struct rn_nl_ops nl_fail = {
	.link_dump = n_link_dump,
	.addr_dump = n_addr_dump,
	.rule_dump = n_rule_dump,
	.route_dump = n_route_dump,
	.route_get = n_route_get,
	.neigh_dump = n_neigh_dump,
	.neigh_get = n_neigh_get,
	.neigh_probe = n_neigh_probe,
	.link_get = n_link_get,
	.arp_probe = n_arp_probe,
	.dcb_get = n_dcb_get,
};

static int s_read(const char *path, char *buf, size_t len)
{
	(void)path;
	if (len)
		buf[0] = '\0';
	return -ENOENT;
}

static int s_realpath(const char *path, char *out, size_t len)
{
	(void)path;
	if (len)
		out[0] = '\0';
	return -ENOENT;
}

static int s_readlink(const char *path, char *out, size_t len)
{
	return s_realpath(path, out, len);
}

static int s_list(const char *path, int (*cb)(const char *name, void *arg), void *arg)
{
	(void)path, (void)cb, (void)arg;
	return -ENOENT;
}

static const struct rn_sys_ops sys_fail = {
	.read = s_read,
	.realpath = s_realpath,
	.readlink = s_readlink,
	.list = s_list,
};

__attribute__((constructor)) static void fake_base_install(void)
{
	rn_verbs_set_base(&verbs_fail);
	rn_nl_set_base(&nl_fail);
	rn_sys_set_base(&sys_fail);
}
