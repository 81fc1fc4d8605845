// SPDX-License-Identifier: MIT
/*
 * A recording stand-in for the transport as plugin/ calls it (rn_net.h's rn_net),
 * #included by the plugin's tests and installed before main (not named fake_*.c, see
 * double_path.c). Every call is counted and its
 * arguments kept; it answers double_net_ret and hands out dummy objects.
 */
#include <errno.h>
#include <string.h>

#include "rn_net.h"

static int double_net_ret; /* what every call answers */
static int double_net_calls;
static struct {
	struct rn_engine *eng;
	int dev, traffic_class, n, tag, type;
	size_t size, sizes[RN_MAX_RECVS];
	void *comm;
} double_net_last;
static char double_net_obj[4]; /* addresses handed out as comms, MRs and requests */

static void double_net_reset(void)
{
	double_net_ret = 0;
	double_net_calls = 0;
	memset(&double_net_last, 0, sizeof(double_net_last));
}

#define DN_OUT(out, i) (*(out) = double_net_ret ? NULL : (void *)&double_net_obj[i])

static int dbl_listen(struct rn_engine *eng, int dev, void *handle, struct rn_listen_comm **out)
{
	double_net_calls++;
	double_net_last.eng = eng;
	double_net_last.dev = dev;
	DN_OUT(out, 0);
	return double_net_ret;
}

static int dbl_connect(struct rn_engine *eng, int dev, void *handle, int traffic_class,
		       struct rn_send_comm **out)
{
	double_net_calls++;
	double_net_last.eng = eng;
	double_net_last.dev = dev;
	double_net_last.traffic_class = traffic_class;
	DN_OUT(out, 1);
	return double_net_ret;
}

static int dbl_accept(struct rn_listen_comm *lc, struct rn_recv_comm **out)
{
	double_net_calls++;
	double_net_last.comm = lc;
	DN_OUT(out, 2);
	return double_net_ret;
}

static int dbl_reg_mr(void *comm, void *data, size_t size, int type, struct rn_mr **out)
{
	double_net_calls++;
	double_net_last.comm = comm;
	double_net_last.size = size;
	double_net_last.type = type;
	DN_OUT(out, 3);
	return double_net_ret;
}

static int dbl_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			     struct rn_mr **out)
{
	double_net_calls++;
	double_net_last.comm = comm;
	double_net_last.size = size;
	DN_OUT(out, 3);
	return double_net_ret;
}

static int dbl_dereg_mr(void *comm, struct rn_mr *mr)
{
	double_net_calls++;
	double_net_last.comm = comm;
	return double_net_ret;
}

static int dbl_isend(struct rn_send_comm *sc, void *data, size_t size, int tag, struct rn_mr *mr,
		     struct rn_req **out)
{
	double_net_calls++;
	double_net_last.comm = sc;
	double_net_last.size = size;
	double_net_last.tag = tag;
	DN_OUT(out, 0);
	return double_net_ret;
}

static int dbl_irecv(struct rn_recv_comm *rc, int n, void **data, size_t *sizes, int *tags,
		     struct rn_mr **mrs, struct rn_req **out)
{
	int i;

	double_net_calls++;
	double_net_last.comm = rc;
	double_net_last.n = n;
	for (i = 0; i < n && i < RN_MAX_RECVS; i++)
		double_net_last.sizes[i] = sizes[i];
	DN_OUT(out, 1);
	return double_net_ret;
}

static int dbl_iflush(struct rn_recv_comm *rc, int n, void **data, int *sizes, struct rn_mr **mrs,
		      struct rn_req **out)
{
	double_net_calls++;
	double_net_last.comm = rc;
	double_net_last.n = n;
	*out = NULL; /* nothing to flush */
	return double_net_ret;
}

static int dbl_test(struct rn_req *req, int *done, int *sizes)
{
	double_net_calls++;
	*done = !double_net_ret;
	if (sizes)
		sizes[0] = (int)double_net_last.size;
	return double_net_ret;
}

static int dbl_close_send(struct rn_send_comm *sc)
{
	double_net_calls++;
	return double_net_ret;
}

static int dbl_close_recv(struct rn_recv_comm *rc)
{
	double_net_calls++;
	return double_net_ret;
}

static int dbl_close_listen(struct rn_listen_comm *lc)
{
	double_net_calls++;
	return double_net_ret;
}

__attribute__((constructor)) static void double_net_install(void)
{
	rn_net = (struct rn_net_ops){
		.listen = dbl_listen,
		.connect = dbl_connect,
		.accept = dbl_accept,
		.reg_mr = dbl_reg_mr,
		.reg_mr_dmabuf = dbl_reg_mr_dmabuf,
		.dereg_mr = dbl_dereg_mr,
		.isend = dbl_isend,
		.irecv = dbl_irecv,
		.iflush = dbl_iflush,
		.test = dbl_test,
		.close_send = dbl_close_send,
		.close_recv = dbl_close_recv,
		.close_listen = dbl_close_listen,
	};
}
