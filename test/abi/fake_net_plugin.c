// SPDX-License-Identifier: MIT
/*
 * A minimal NCCL net plugin (ncclNetPlugin_v12 only) over local Unix sockets, for
 * testing nccl-net-driver's server/client modes without RDMA and without touching
 * any network. It keeps NCCL's rules where the driver depends on them: connect and
 * accept return a NULL comm before they are done, isend sometimes answers "retry",
 * receives complete in posting order and report the bytes received.
 *
 * FAKE_NET_BAD_LOG=1 makes init log malformed formats (a %s with no argument, a bad
 * pointer, %n): the tools' logger must survive them.
 * FAKE_NET_CORRUPT=1 flips one byte of the 3rd message on the way: the driver's
 * data check must catch it.
 * FAKE_NET_TRACE=FILE appends one letter a receive-side call to FILE: R an irecv, T a
 * test of a receive (how a tool drives the receiving plugin, in order).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "nccl/net_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define QMAX 64

struct req {
	int send, done;
	char *data;
	size_t cap, got;
	uint64_t want; /* header: bytes the sender sent */
	int hdr_got;
	struct comm *c;
};

struct comm {
	int fd;
	int connect_calls;
	long nsend;
	struct req *q[QMAX]; /* receives in posting order */
	int qh, qt;
};

static int sun_of(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "%s", path);
	return 0;
}

static ncclResult_t f_init(void **ctx, uint64_t id, ncclNetCommConfig_v12_t *cfg,
			   ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
	if (getenv("FAKE_NET_BAD_LOG")) {
		/* what a plugin's typo hands the tool's logger: the logger must survive it */
		log(NCCL_LOG_WARN, NCCL_INIT, __FILE__, __LINE__,
		    "fake: missing args %s %s %s %s %s %s %s %s %d %n");
		log(NCCL_LOG_WARN, NCCL_INIT, __FILE__, __LINE__, "fake: bad pointer %s",
		    (const char *)8);
	}
	if (getenv("FAKE_NET_LEVELS")) {
		/* one line a level: what the tool's -v and NCCL_DEBUG let through */
		log(NCCL_LOG_INFO, NCCL_INIT, __FILE__, __LINE__, "fake: an INFO line");
		log(NCCL_LOG_TRACE, NCCL_INIT, __FILE__, __LINE__, "fake: a TRACE line");
	}
	*ctx = malloc(1);
	return *ctx ? ncclSuccess : ncclSystemError;
}

static ncclResult_t f_finalize(void *ctx)
{
	free(ctx);
	return ncclSuccess;
}

static ncclResult_t f_devices(int *n)
{
	*n = 1;
	return ncclSuccess;
}

static ncclResult_t f_props(int dev, ncclNetProperties_v12_t *p)
{
	memset(p, 0, sizeof(*p));
	p->name = (char *)"fake0";
	p->ptrSupport = NCCL_PTR_HOST;
	p->speed = 1000;
	p->maxComms = 64;
	p->maxRecvs = 1;
	p->vProps.ndevs = 1;
	p->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
	p->maxCollBytes = NCCL_MAX_COLLNET_SIZE;
	p->railId = p->planeId = -1;
	return ncclSuccess;
}

static ncclResult_t f_listen(void *ctx, int dev, void *handle, void **lcomm)
{
	static int seq;
	struct sockaddr_un sun;
	struct comm *c = calloc(1, sizeof(*c));
	char path[100];

	snprintf(path, sizeof(path), "%s/fake-net.%d.%d", getenv("FAKE_NET_DIR") ?: "/tmp",
		 getpid(), seq++);
	sun_of(path, &sun);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&sun, sizeof(sun)) || listen(c->fd, 4))
		return ncclSystemError;
	snprintf(handle, NCCL_NET_HANDLE_MAXSIZE, "%s", path);
	*lcomm = c;
	return ncclSuccess;
}

static ncclResult_t f_connect(void *ctx, int dev, void *handle, void **scomm,
			      ncclNetDeviceHandle_v12_t **dc)
{
	static struct comm *pending;
	struct sockaddr_un sun;
	struct comm *c;

	*scomm = NULL;
	if (!pending) { /* the first call only starts: NCCL must call again */
		pending = calloc(1, sizeof(*pending));
		return pending ? ncclSuccess : ncclSystemError;
	}
	c = pending;
	sun_of(handle, &sun);
	c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)))
		return ncclSystemError;
	pending = NULL;
	*scomm = c;
	return ncclSuccess;
}

static ncclResult_t f_accept(void *lcomm, void **rcomm, ncclNetDeviceHandle_v12_t **dc)
{
	struct comm *l = lcomm, *c;
	int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK);

	*rcomm = NULL;
	if (fd < 0)
		return errno == EAGAIN ? ncclSuccess : ncclSystemError;
	c = calloc(1, sizeof(*c));
	c->fd = fd;
	*rcomm = c;
	return ncclSuccess;
}

static ncclResult_t f_regmr(void *comm, void *data, size_t size, int type, void **mh)
{
	*mh = comm;
	return ncclSuccess;
}

static ncclResult_t f_regmr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t off,
				   int fd, void **mh)
{
	return ncclInternalError;
}

static ncclResult_t f_deregmr(void *comm, void *mh)
{
	return mh == comm ? ncclSuccess : ncclInternalError;
}

static int write_all(int fd, const void *p, size_t n)
{
	while (n) {
		/* a peer that hung up is an error, not a SIGPIPE that kills the process */
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0)
			return -1;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	return 0;
}

static ncclResult_t f_isend(void *scomm, void *data, size_t size, int tag, void *mh,
			    void *ph, void **request)
{
	struct comm *c = scomm;
	uint64_t hdr = size;
	struct req *r;
	char *copy = data;

	*request = NULL;
	if (++c->nsend % 3 == 0)
		return ncclSuccess; /* "try again later", as when the receiver has not posted */
	r = calloc(1, sizeof(*r));
	if (getenv("FAKE_NET_CORRUPT") && c->nsend == 4 && size) {
		copy = malloc(size);
		memcpy(copy, data, size);
		copy[size / 2] ^= 0x40;
	}
	if (write_all(c->fd, &hdr, sizeof(hdr)) || write_all(c->fd, copy, size))
		return ncclRemoteError;
	if (copy != data)
		free(copy);
	r->send = 1;
	r->done = 1;
	r->got = size;
	*request = r;
	return ncclSuccess;
}

static void trace(char what)
{
	static int fd = -2;

	if (fd == -2)
		fd = getenv("FAKE_NET_TRACE") ?
			     open(getenv("FAKE_NET_TRACE"), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
				  0600) :
			     -1;
	if (fd >= 0 && write(fd, &what, 1) != 1)
		fd = -1;
}

static ncclResult_t f_irecv(void *rcomm, int n, void **data, size_t *sizes, int *tags,
			    void **mhs, void **phs, void **request)
{
	struct comm *c = rcomm;
	struct req *r;

	trace('R');
	if (n != 1 || c->qt - c->qh >= QMAX)
		return ncclInternalError;
	r = calloc(1, sizeof(*r));
	r->data = data[0];
	r->cap = sizes[0];
	r->c = c;
	c->q[c->qt++ % QMAX] = r;
	*request = r;
	return ncclSuccess;
}

/* Progress the oldest receive: bytes arrive in posting order. */
static int progress(struct comm *c)
{
	struct req *r;
	ssize_t n;

	while (c->qh < c->qt) {
		r = c->q[c->qh % QMAX];
		if (r->hdr_got < (int)sizeof(r->want)) {
			n = read(c->fd, (char *)&r->want + r->hdr_got, sizeof(r->want) - r->hdr_got);
			if (n <= 0)
				return n == 0 || errno != EAGAIN ? -1 : 0;
			r->hdr_got += (int)n;
			if (r->hdr_got < (int)sizeof(r->want))
				return 0;
			if (r->want > r->cap)
				return -1; /* a send larger than the receive is an error */
		}
		if (r->got < r->want) {
			n = read(c->fd, r->data + r->got, r->want - r->got);
			if (n <= 0)
				return n == 0 || errno != EAGAIN ? -1 : 0;
			r->got += (size_t)n;
			if (r->got < r->want)
				return 0;
		}
		r->done = 1;
		c->qh++;
	}
	return 0;
}

static ncclResult_t f_test(void *request, int *done, int *sizes)
{
	struct req *r = request;

	if (!r->send)
		trace('T');
	if (!r->send && !r->done && progress(r->c))
		return ncclRemoteError;
	*done = r->done;
	if (r->done) {
		if (sizes)
			sizes[0] = (int)r->got;
		free(r);
	}
	return ncclSuccess;
}

static ncclResult_t f_iflush(void *rcomm, int n, void **data, int *sizes, void **mhs,
			     void **request)
{
	*request = NULL;
	return ncclSuccess;
}

static ncclResult_t f_close(void *comm)
{
	struct comm *c = comm;

	close(c->fd);
	free(c);
	return ncclSuccess;
}

EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
	.name = "Fake",
	.init = f_init,
	.devices = f_devices,
	.getProperties = f_props,
	.listen = f_listen,
	.connect = f_connect,
	.accept = f_accept,
	.regMr = f_regmr,
	.regMrDmaBuf = f_regmr_dmabuf,
	.deregMr = f_deregmr,
	.isend = f_isend,
	.irecv = f_irecv,
	.iflush = f_iflush,
	.test = f_test,
	.closeSend = f_close,
	.closeRecv = f_close,
	.closeListen = f_close,
	.finalize = f_finalize,
};
