/* SPDX-License-Identifier: MIT */
/*
 * The transport (src/oob.c, conn.c, mr.c, xfer.c): NCCL's net semantics in our
 * own error convention. plugin/ translates each call's -errno once:
 *   -EREMOTEIO, -ECONNRESET, -EPIPE  the peer failed      -> ncclRemoteError
 *   -EHOSTUNREACH                    path refused (route) -> ncclSystemError
 *   -EINVAL, -EBADMSG from misuse    NCCL broke the rules -> ncclInternalError
 *   -EMSGSIZE                        send > posted receive -> ncclInvalidUsage
 *   anything else                                          -> ncclSystemError
 * None of these calls blocks: connect/accept return 0 with *out NULL until done,
 * isend returns 0 with *req NULL until the receiver has posted.
 *
 * What the transport returns besides (each with a WARN):
 *   -EMSGSIZE     a send larger than the receive posted for it; both sides fail,
 *                 nothing is written (NCCL calls this a user collective mismatch)
 *   -ETIMEDOUT    handshake past NCCL_ROCE_CONNECT_TIMEOUT_MS from the peer's first
 *                 byte, the peer's host silent to TCP (SYN, keepalive), or a posted WR with
 *                 no completion for twice the QP's retry time (stalled QP)
 *   -ENETDOWN     the port went down and stayed down past the QPs' retry budget (a
 *                 shorter flap fails nothing); -EIO: QP/CQ/device fatal event
 *   -EPROTO       the peer broke the handshake or FIFO protocol
 *   -ECONNRESET   the peer closed its OOB socket while we waited for it (peer-died)
 * After any error the comm is dead: every later call on it returns the same code.
 */
#ifndef RN_NET_H
#define RN_NET_H

#include <stddef.h>
#include <stdint.h>

#include "rn_dev.h"

#define RN_HANDLE_SIZE 128 /* NCCL_NET_HANDLE_MAXSIZE */
#define RN_MAX_RECVS 8     /* maxRecvs we advertise */
#define RN_MAX_REQUESTS 32 /* NCCL_NET_MAX_REQUESTS */

struct rn_listen_comm;
struct rn_send_comm;
struct rn_recv_comm;
struct rn_req;
struct rn_mr;

int rn_listen(struct rn_engine *eng, int dev, void *handle, struct rn_listen_comm **out);
/* @handle is NCCL's copy of the listener's handle; the same pointer on every call. */
int rn_connect(struct rn_engine *eng, int dev, void *handle, int traffic_class,
	       struct rn_send_comm **out);
/* The same for other traffic than NCCL's net (RN_CONN_* in rn_conn.h: the RMA backend's). */
int rn_listen_flags(struct rn_engine *eng, int dev, void *handle, unsigned int flags,
		    struct rn_listen_comm **out);
int rn_connect_flags(struct rn_engine *eng, int dev, void *handle, int traffic_class,
		     unsigned int flags, struct rn_send_comm **out);
int rn_accept(struct rn_listen_comm *lc, struct rn_recv_comm **out);

/* @comm is a send or a recv comm. */
int rn_reg_mr(void *comm, void *data, size_t size, int type, struct rn_mr **out);
int rn_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
		     struct rn_mr **out);
int rn_dereg_mr(void *comm, struct rn_mr *mr);

int rn_isend(struct rn_send_comm *sc, void *data, size_t size, int tag, struct rn_mr *mr,
	     struct rn_req **out);
int rn_irecv(struct rn_recv_comm *rc, int n, void **data, size_t *sizes, int *tags,
	     struct rn_mr **mrs, struct rn_req **out);
int rn_iflush(struct rn_recv_comm *rc, int n, void **data, int *sizes, struct rn_mr **mrs,
	      struct rn_req **out);
int rn_test(struct rn_req *req, int *done, int *sizes);

/*
 * The status of the first failed completion on the connection (IBV_WC_SUCCESS when
 * none): tells a retry-exceeded path (nothing answered) from other failures.
 */
int rn_send_wc_status(const struct rn_send_comm *sc);
int rn_recv_wc_status(const struct rn_recv_comm *rc);

int rn_close_send(struct rn_send_comm *sc);
int rn_close_recv(struct rn_recv_comm *rc);
int rn_close_listen(struct rn_listen_comm *lc);

/*
 * The calls above as plugin/ makes them: the transport's own, unless a unit test of the
 * ABI layer records them instead (it installs its table before main: test/unit/double_net.c).
 */
struct rn_net_ops {
	int (*listen)(struct rn_engine *eng, int dev, void *handle, struct rn_listen_comm **out);
	int (*connect)(struct rn_engine *eng, int dev, void *handle, int traffic_class,
		       struct rn_send_comm **out);
	int (*accept)(struct rn_listen_comm *lc, struct rn_recv_comm **out);
	int (*reg_mr)(void *comm, void *data, size_t size, int type, struct rn_mr **out);
	int (*reg_mr_dmabuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			     struct rn_mr **out);
	int (*dereg_mr)(void *comm, struct rn_mr *mr);
	int (*isend)(struct rn_send_comm *sc, void *data, size_t size, int tag, struct rn_mr *mr,
		     struct rn_req **out);
	int (*irecv)(struct rn_recv_comm *rc, int n, void **data, size_t *sizes, int *tags,
		     struct rn_mr **mrs, struct rn_req **out);
	int (*iflush)(struct rn_recv_comm *rc, int n, void **data, int *sizes, struct rn_mr **mrs,
		      struct rn_req **out);
	int (*test)(struct rn_req *req, int *done, int *sizes);
	int (*close_send)(struct rn_send_comm *sc);
	int (*close_recv)(struct rn_recv_comm *rc);
	int (*close_listen)(struct rn_listen_comm *lc);
};
extern struct rn_net_ops rn_net;

#endif /* RN_NET_H */
