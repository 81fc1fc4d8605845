// SPDX-License-Identifier: MIT
/*
 * TEMPORARY: deleted when the route and transport branches merge.
 *
 * The route core (include/rn_path.h, rn_verdict.h) and the transport
 * (include/rn_net.h) are implemented on other branches. Until they merge, these
 * stand-ins let the plugin link: every call fails with -ENOSYS, so init reports
 * "cannot read the host's addresses and routes" and never offers a NIC.
 */
#include <errno.h>
#include <stdio.h>

#include "rn_net.h"
#include "rn_path.h"
#include "rn_verdict.h"

const char *rn_ip_str(const struct rn_ip *ip, char *buf, size_t len)
{
	snprintf(buf, len, "-");
	return buf;
}

int rn_ip_from_gid(const union ibv_gid *gid, struct rn_ip *ip)
{
	return -ENOSYS;
}

int rn_host_snapshot(struct rn_host **out)
{
	*out = NULL;
	return -ENOSYS;
}

void rn_host_free(struct rn_host *host)
{
}

int rn_nic_assess(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		  const struct rn_config *cfg)
{
	return -ENOSYS;
}

void rn_nic_log(const struct rn_nic *nic)
{
}

const char *rn_cause_id(enum rn_cause cause)
{
	return "unknown";
}

int rn_listen(struct rn_engine *eng, int dev, void *handle, struct rn_listen_comm **out)
{
	return -ENOSYS;
}

int rn_connect(struct rn_engine *eng, int dev, void *handle, int traffic_class,
	       struct rn_send_comm **out)
{
	return -ENOSYS;
}

int rn_accept(struct rn_listen_comm *lc, struct rn_recv_comm **out)
{
	return -ENOSYS;
}

int rn_reg_mr(void *comm, void *data, size_t size, int type, struct rn_mr **out)
{
	return -ENOSYS;
}

int rn_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
		     struct rn_mr **out)
{
	return -ENOSYS;
}

int rn_dereg_mr(void *comm, struct rn_mr *mr)
{
	return -ENOSYS;
}

int rn_isend(struct rn_send_comm *sc, void *data, size_t size, int tag, struct rn_mr *mr,
	     struct rn_req **out)
{
	return -ENOSYS;
}

int rn_irecv(struct rn_recv_comm *rc, int n, void **data, size_t *sizes, int *tags,
	     struct rn_mr **mrs, struct rn_req **out)
{
	return -ENOSYS;
}

int rn_iflush(struct rn_recv_comm *rc, int n, void **data, int *sizes, struct rn_mr **mrs,
	      struct rn_req **out)
{
	return -ENOSYS;
}

int rn_test(struct rn_req *req, int *done, int *sizes)
{
	return -ENOSYS;
}

int rn_close_send(struct rn_send_comm *sc)
{
	return -ENOSYS;
}

int rn_close_recv(struct rn_recv_comm *rc)
{
	return -ENOSYS;
}

int rn_close_listen(struct rn_listen_comm *lc)
{
	return -ENOSYS;
}
