/* SPDX-License-Identifier: MIT */
/*
 * The verbs edge. Every libibverbs call of the project goes through this table so
 * that unit tests can run the transport over a fake device: ibv_post_send(),
 * ibv_post_recv() and ibv_poll_cq() are static inline calls through
 * qp->context->ops and ibv_query_port() is a macro, so the linker's --wrap cannot
 * catch them.
 *
 * Convention (as rdma-core): pointer-returning ops return NULL and set errno;
 * int-returning ops return 0 or a positive errno (what libibverbs returns);
 * rn_verbs_err() normalises either into -errno for the rest of the library.
 * Only src/verbs.c includes the real libibverbs function names.
 */
#ifndef RN_VERBS_H
#define RN_VERBS_H

#include <errno.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

struct rn_verbs_ops {
	struct ibv_device **(*get_device_list)(int *num);
	void (*free_device_list)(struct ibv_device **list);
	const char *(*get_device_name)(struct ibv_device *dev);
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
	int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
	/* Returns 0 or errno; ENODATA for an empty slot (rxe), as libibverbs does. */
	int (*query_gid_ex)(struct ibv_context *ctx, uint32_t port, uint32_t index,
			    struct ibv_gid_entry *entry);
	/*
	 * Every valid entry of every port in one call: the count, or -errno (-EINVAL when
	 * @max is too few; libibverbs' sysfs fallback fails on an unreadable attribute).
	 */
	ssize_t (*query_gid_table)(struct ibv_context *ctx, struct ibv_gid_entry *entries,
				   size_t max);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr_iova2)(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				       unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len,
					uint64_t iova, int fd, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx,
				    struct ibv_comp_channel *ch, int vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct ibv_qp_init_attr *init);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
	int (*get_async_event)(struct ibv_context *ctx, struct ibv_async_event *ev);
	void (*ack_async_event)(struct ibv_async_event *ev);
	/* ibv_fork_init(): libibverbs keeps registered memory out of forked children */
	int (*fork_init)(void);
};

/* The table in use: the real one unless a test installed a fake. */
extern struct rn_verbs_ops rn_verbs;

/* The real libibverbs table (src/verbs.c). */
extern const struct rn_verbs_ops rn_verbs_real_ops;

/*
 * Copy the non-NULL pointers of @ops over the table in use (cf. verbs_set_ops()),
 * so a test overrides only what it fakes. rn_verbs_reset_ops() restores the real one.
 */
void rn_verbs_set_ops(const struct rn_verbs_ops *ops);
void rn_verbs_reset_ops(void);
/*
 * The table reset restores and a fake's unset ops fall back to (NULL: the real one). Unit
 * tests install one whose every op fails (test/unit/fake_base.c, cf. rdma-core's
 * dummy_ops.c), so a test never reaches the machine's own devices by omission.
 */
void rn_verbs_set_base(const struct rn_verbs_ops *ops);

/* Normalise a libibverbs int return (0, errno, or -1 with errno) to 0/-errno. */
static inline int rn_verbs_err(int rc)
{
	if (rc == 0)
		return 0;
	if (rc == -1)
		return errno ? -errno : -EIO;
	return rc > 0 ? -rc : rc;
}

/* Printable name of a completion status (never NULL). */
const char *rn_wc_status_str(enum ibv_wc_status status);

#endif /* RN_VERBS_H */
