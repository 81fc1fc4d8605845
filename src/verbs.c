// SPDX-License-Identifier: MIT
/*
 * The real verbs edge: thin trampolines onto libibverbs, the only file that names
 * its functions. Trampolines exist because several verbs are inline or macros.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "rn_compiler.h"
#include "rn_provider.h"
#include "rn_verbs.h"

/*
 * The first list of a process loads only the providers its devices need (rn_provider.h);
 * they live in libibverbs' own directory, "libibverbs/" beside the library.
 */
static void preload_providers(void)
{
	char dir[PATH_MAX];
	Dl_info info;

	if (dladdr((void *)ibv_get_device_list, &info) && info.dli_fname &&
	    strrchr(info.dli_fname, '/')) {
		snprintf(dir, sizeof(dir), "%.*s/libibverbs",
			 (int)(strrchr(info.dli_fname, '/') - info.dli_fname), info.dli_fname);
		rn_provider_preload(dir);
	}
}

static struct ibv_device **real_get_device_list(int *num)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, preload_providers);
	return ibv_get_device_list(num);
}

static int real_close_device(struct ibv_context *ctx)
{
	return ibv_close_device(ctx);
}

static int real_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

static int real_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
			     struct ibv_gid_entry *entry)
{
	int rc = ibv_query_gid_ex(ctx, port, index, entry, 0);

	/* libibverbs answers -errno here, other verbs answer errno: normalise to errno. */
	return rc < 0 ? -rc : rc;
}

static ssize_t real_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
				    size_t max)
{
	return ibv_query_gid_table(ctx, entries, max, 0);
}

static struct ibv_mr *real_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
					unsigned int access)
{
	return ibv_reg_mr_iova2(pd, addr, len, iova, access);
}

static int real_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return ibv_post_send(qp, wr, bad);
}

static int real_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}

static int real_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

/* Spelled once, used twice: C (and clang) want a constant initializer for rn_verbs. */
#define REAL_OPS \
	{ \
		.get_device_list = real_get_device_list, \
		.free_device_list = ibv_free_device_list, \
		.get_device_name = ibv_get_device_name, \
		.open_device = ibv_open_device, \
		.close_device = real_close_device, \
		.query_device = ibv_query_device, \
		.query_port = real_query_port, \
		.query_gid_ex = real_query_gid_ex, \
		.query_gid_table = real_query_gid_table, \
		.alloc_pd = ibv_alloc_pd, \
		.dealloc_pd = ibv_dealloc_pd, \
		.reg_mr_iova2 = real_reg_mr_iova2, \
		.reg_dmabuf_mr = ibv_reg_dmabuf_mr, \
		.dereg_mr = ibv_dereg_mr, \
		.create_comp_channel = ibv_create_comp_channel, \
		.destroy_comp_channel = ibv_destroy_comp_channel, \
		.create_cq = ibv_create_cq, \
		.destroy_cq = ibv_destroy_cq, \
		.create_qp = ibv_create_qp, \
		.modify_qp = ibv_modify_qp, \
		.query_qp = ibv_query_qp, \
		.destroy_qp = ibv_destroy_qp, \
		.post_send = real_post_send, \
		.post_recv = real_post_recv, \
		.poll_cq = real_poll_cq, \
		.get_async_event = ibv_get_async_event, \
		.ack_async_event = ibv_ack_async_event, \
		.fork_init = ibv_fork_init, \
	}

const struct rn_verbs_ops rn_verbs_real_ops = REAL_OPS;

struct rn_verbs_ops rn_verbs = REAL_OPS;

void rn_verbs_set_ops(const struct rn_verbs_ops *ops)
{
	const void *const *src = (const void *const *)ops;
	void **dst = (void **)&rn_verbs;
	size_t i;

	/* NOTE: the table holds only function pointers; walk it as an array of them. */
	for (i = 0; i < sizeof(rn_verbs) / sizeof(void *); i++)
		if (src[i])
			dst[i] = (void *)src[i];
}

/* What reset restores: the real table, or the unit tests' all-failing one. */
static const struct rn_verbs_ops *verbs_base = &rn_verbs_real_ops;

void rn_verbs_set_base(const struct rn_verbs_ops *ops)
{
	verbs_base = ops ? ops : &rn_verbs_real_ops;
	rn_verbs = *verbs_base;
}

void rn_verbs_reset_ops(void)
{
	rn_verbs = *verbs_base;
}

static const char *const wc_status_names[] = {
	[IBV_WC_SUCCESS] = "SUCCESS",
	[IBV_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
	[IBV_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
	[IBV_WC_LOC_EEC_OP_ERR] = "LOC_EEC_OP_ERR",
	[IBV_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
	[IBV_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
	[IBV_WC_MW_BIND_ERR] = "MW_BIND_ERR",
	[IBV_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
	[IBV_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",
	[IBV_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
	[IBV_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
	[IBV_WC_REM_OP_ERR] = "REM_OP_ERR",
	[IBV_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
	[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
	[IBV_WC_LOC_RDD_VIOL_ERR] = "LOC_RDD_VIOL_ERR",
	[IBV_WC_REM_INV_RD_REQ_ERR] = "REM_INV_RD_REQ_ERR",
	[IBV_WC_REM_ABORT_ERR] = "REM_ABORT_ERR",
	[IBV_WC_INV_EECN_ERR] = "INV_EECN_ERR",
	[IBV_WC_INV_EEC_STATE_ERR] = "INV_EEC_STATE_ERR",
	[IBV_WC_FATAL_ERR] = "FATAL_ERR",
	[IBV_WC_RESP_TIMEOUT_ERR] = "RESP_TIMEOUT_ERR",
	[IBV_WC_GENERAL_ERR] = "GENERAL_ERR",
	[IBV_WC_TM_ERR] = "TM_ERR",
	[IBV_WC_TM_RNDV_INCOMPLETE] = "TM_RNDV_INCOMPLETE",
};

const char *rn_wc_status_str(enum ibv_wc_status status)
{
	if ((unsigned)status < RN_ARRAY_SIZE(wc_status_names) && wc_status_names[status])
		return wc_status_names[status];
	return "UNKNOWN";
}
