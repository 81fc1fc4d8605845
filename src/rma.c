// SPDX-License-Identifier: MIT
/*
 * The RMA backend (rn_rma.h): NCCL 2.30's one-sided traffic (the host API's
 * ncclPutSignal, the GIN proxy) on our engine instead of NCCL's internal RMA over IB,
 * which uses net_ib's GID choice and checks no route and no ARP.
 *
 * The group: every rank listens on its device's source IP (rn_rma_listen) and NCCL hands
 * every rank all the handles. rn_rma_connect makes a TCP mesh: one socket to each other
 * rank (ours: we send on it) and one from each (we read on it), each opened with a
 * greeting that names the rank and the listener's nonce, so a stranger is refused. The
 * mesh is the group's allgather: registration keys, the contexts' handles, barriers.
 *
 * A context: one RMA comm pair per rank in the stride, our own rank included (NCCL flushes
 * through a put to itself). The pairs are made by the net transport's own handshake with
 * RN_CONN_RMA (src/conn.c), so each one resolves its GID by address, is judged by the
 * route and ARP check on both sides, and is refused by name. We post on the send comm's
 * QP; the peer's recv comm's QP is the responder that takes our WRITEs, READs and
 * FETCH_AND_ADDs. A failed completion goes through the data path's diagnosis
 * (rn_xfer_wc_error) and fails that comm; every later call on it says so.
 *
 * Contexts: NCCL names a context per call; all of a context set's contexts share one QP
 * per rank, and NCCL 2.30.7's RMA proxy uses context 0 alone.
 * Signals: the signal is a FETCH_AND_ADD posted on the same QP right after the data's
 * WRITE. An RC responder executes a QP's requests in order, so the add lands after the
 * data is placed: strong signals (isStrongSignal) are met as weak ones are, with no fence.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rn_clock.h"
#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_gid.h"
#include "rn_log.h"
#include "rn_mr.h"
#include "rn_net.h"
#include "rn_oob.h"
#include "rn_rma.h"
#include "rn_verbs.h"
#include "rn_wire.h"

#define RMA_MAGIC 0x524e524d41763031ull /* "RNRMAv01": handle and greeting */
#define RMA_MSG_MAGIC 0x524d4147u       /* "RMAG": one allgather message */
#define RMA_POLL_MS 100

/* The listen handle, in network order inside NCCL's 128 bytes. */
struct rma_handle {
	uint64_t magic;
	uint64_t nonce;
	uint16_t family;
	uint16_t port;
	uint8_t addr[16];
};

/* The first bytes on a mesh socket: who connects, for which listener. */
struct rma_greet {
	uint64_t magic;
	uint64_t nonce; /* the listener's, from its handle */
	uint32_t rank;
	uint32_t nranks;
};

struct rma_msg {
	uint32_t magic;
	uint32_t seq; /* the group's collective call count: ranks that disagree are caught */
	uint32_t len;
	uint32_t rank;
};

struct rn_rma_listen {
	struct rn_engine *eng;
	int devidx;
	int fd;
	uint64_t nonce;
	struct sockaddr_storage addr;
};

struct rn_rma_coll {
	struct rn_engine *eng;
	int devidx;
	struct rn_dev *dev;
	int rank, nranks;
	int *out; /* [nranks]: socket to rank r, we write (-1 for us) */
	int *in;  /* [nranks]: socket from rank r, we read */
	uint32_t seq;
	int timeout_ms;
};

struct rn_rma_mr {
	struct rn_mr *mr;
	int nranks;
	uint64_t *addr; /* [nranks]: each rank's buffer */
	uint64_t *size;
	uint32_t *rkey;
};

struct rn_rma_req {
	struct rn_rma_ctx *x;
	int rank;
	int nwr; /* send WRs it holds on the QP until it completes */
	int done;
	int err;
	struct rn_rma_req *next_free;
};
_Static_assert(_Alignof(struct rn_rma_req) >= 8,
	       "an RMA request's address leaves 3 bits for its kind");

struct rn_rma_ctx {
	struct rn_rma_coll *g;
	int ncontexts, stride;
	struct rn_send_comm **sc; /* [nranks]: ours to rank r (NULL outside the stride) */
	struct rn_recv_comm **rc; /* [nranks]: responders for the ranks that connected to us */
	int nrc;
	int *sq_used;             /* [nranks]: WRs posted and not yet retired */
	struct rn_rma_req *reqs, *free_reqs;
	int nreqs;
	void *scratch; /* the local target of FETCH_AND_ADDs and flush READs */
	struct rn_mr *scratch_mr;
};

static uint64_t deadline_of(const struct rn_rma_coll *g)
{
	return rn_now_ns() + (uint64_t)g->timeout_ms * 1000000ull;
}

static int ms_left(uint64_t deadline)
{
	uint64_t now = rn_now_ns();

	return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* Write all of @buf to the non-blocking @fd by @deadline. */
static int write_all(int fd, const void *buf, size_t len, uint64_t deadline)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		struct pollfd pf = { .fd = fd, .events = POLLOUT };

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (!ms_left(deadline))
			return -ETIMEDOUT;
		poll(&pf, 1, RN_MIN(ms_left(deadline), RMA_POLL_MS));
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len, uint64_t deadline)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (!ms_left(deadline))
			return -ETIMEDOUT;
		poll(&pf, 1, RN_MIN(ms_left(deadline), RMA_POLL_MS));
	}
	return 0;
}

/* ---- the handle ---------------------------------------------------------------- */

static void handle_encode(const struct rn_rma_listen *l, void *handle)
{
	struct rma_handle h;

	memset(&h, 0, sizeof(h));
	h.magic = htobe64(RMA_MAGIC);
	h.nonce = l->nonce; /* opaque: compared as bytes */
	h.family = htons((uint16_t)l->addr.ss_family);
	if (l->addr.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)&l->addr;

		h.port = a->sin_port;
		memcpy(h.addr, &a->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *a = (const void *)&l->addr;

		h.port = a->sin6_port;
		memcpy(h.addr, &a->sin6_addr, 16);
	}
	memset(handle, 0, RN_RMA_HANDLE_SIZE);
	memcpy(handle, &h, sizeof(h));
}

static int handle_decode(const void *handle, struct sockaddr_storage *ss, uint64_t *nonce)
{
	struct rma_handle h;

	memcpy(&h, handle, sizeof(h));
	if (be64toh(h.magic) != RMA_MAGIC)
		return -EPROTO;
	memset(ss, 0, sizeof(*ss));
	*nonce = h.nonce;
	switch (ntohs(h.family)) {
	case AF_INET: {
		struct sockaddr_in *a = (void *)ss;

		a->sin_family = AF_INET;
		a->sin_port = h.port;
		memcpy(&a->sin_addr, h.addr, 4);
		return 0;
	}
	case AF_INET6: {
		struct sockaddr_in6 *a = (void *)ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = h.port;
		memcpy(&a->sin6_addr, h.addr, 16);
		return 0;
	}
	default:
		return -EPROTO;
	}
}

int rn_rma_listen(struct rn_engine *eng, int devidx, void *handle, struct rn_rma_listen **out)
{
	struct rn_rma_listen *l;
	int ret;

	*out = NULL;
	if (!eng || !handle || devidx < 0 || devidx >= eng->ndevs)
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->eng = eng;
	l->devidx = devidx;
	l->fd = -1;
	if (getrandom(&l->nonce, sizeof(l->nonce), 0) != sizeof(l->nonce))
		l->nonce = rn_now_ns() ^ (uint64_t)(uintptr_t)l;
	ret = rn_oob_local_addr(eng->devs[devidx], &eng->cfg, &l->addr);
	if (!ret)
		ret = rn_oob_listen(&l->addr, &l->fd);
	if (ret) {
		rn_warn(RN_SUB_NET, RN_PFX "RMA listen on %s:%d: %s", eng->devs[devidx]->nic.ibdev,
			eng->devs[devidx]->nic.port, strerror(-ret));
		free(l);
		return ret;
	}
	handle_encode(l, handle);
	*out = l;
	return 0;
}

int rn_rma_close_listen(struct rn_rma_listen *l)
{
	if (!l)
		return 0;
	if (l->fd >= 0)
		close(l->fd);
	free(l);
	return 0;
}

/* ---- the group's mesh --------------------------------------------------------- */

static void coll_free(struct rn_rma_coll *g)
{
	int r;

	if (!g)
		return;
	for (r = 0; r < g->nranks; r++) {
		if (g->out && g->out[r] >= 0)
			close(g->out[r]);
		if (g->in && g->in[r] >= 0)
			close(g->in[r]);
	}
	free(g->out);
	free(g->in);
	free(g);
}

/* An accepted socket whose greeting is still coming. */
struct pend {
	int fd;
	size_t off;
	uint64_t since_ns;
	struct rma_greet gr;
};

#define RMA_GREET_NS (5ull * 1000000000ull) /* a rank greets with its connect */

/*
 * Move @p on without blocking: 1 when it is rank r's (g->in[r] takes it), 0 while its
 * greeting is on its way, -errno when it is no rank of ours (the caller drops it).
 */
static int pend_step(struct rn_rma_coll *g, const struct rn_rma_listen *l, struct pend *p)
{
	ssize_t n = recv(p->fd, (char *)&p->gr + p->off, sizeof(p->gr) - p->off, MSG_DONTWAIT);
	uint32_t r;

	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ?
			       (rn_now_ns() - p->since_ns > RMA_GREET_NS ? -ETIMEDOUT : 0) :
			       -errno;
	p->off += (size_t)n;
	if (p->off < sizeof(p->gr))
		return 0;
	r = be32toh(p->gr.rank);
	if (be64toh(p->gr.magic) != RMA_MAGIC || p->gr.nonce != l->nonce ||
	    be32toh(p->gr.nranks) != (uint32_t)g->nranks || r >= (uint32_t)g->nranks ||
	    r == (uint32_t)g->rank || g->in[r] >= 0)
		return -EPROTO;
	g->in[r] = p->fd;
	return 1;
}

/* A group of @nranks for rank @rank on @l's device, no socket yet; NULL when out of memory. */
static struct rn_rma_coll *coll_new(struct rn_engine *eng, const struct rn_rma_listen *l,
				    int nranks, int rank)
{
	struct rn_rma_coll *g = calloc(1, sizeof(*g));
	int r;

	if (!g)
		return NULL;
	g->eng = eng;
	g->devidx = l->devidx;
	g->dev = eng->devs[l->devidx];
	g->rank = rank;
	g->timeout_ms = RN_MAX(eng->cfg.connect_timeout_ms, 1000);
	g->out = malloc(sizeof(int) * (size_t)nranks);
	g->in = malloc(sizeof(int) * (size_t)nranks);
	if (!g->out || !g->in) {
		coll_free(g); /* nranks 0 yet: no socket to close */
		return NULL;
	}
	g->nranks = nranks;
	for (r = 0; r < nranks; r++)
		g->out[r] = g->in[r] = -1;
	return g;
}

/* rn_rma_connect's way there: every rank's handle, decoded once, and who is heard from. */
struct rma_join {
	struct rma_peer {
		struct sockaddr_storage addr;
		uint64_t nonce;
		int greeted; /* our greeting is out on g->out[r] */
	} *peers;
	struct pend *pend;   /* accepted, greeting still coming */
	int npend, maxpend;
	int nin, nout;       /* ranks heard from, ranks greeted */
};

static void join_free(struct rma_join *j)
{
	int k;

	for (k = 0; k < j->npend; k++)
		close(j->pend[k].fd);
	free(j->pend);
	free(j->peers);
}

/* Every rank's handle, ours this rank's listener's. 0 or -errno (said). */
static int join_decode(struct rma_join *j, const struct rn_rma_coll *g, void *const *handles,
		       const struct rn_rma_listen *l)
{
	int r;

	for (r = 0; r < g->nranks; r++) {
		if (r != g->rank &&
		    handle_decode(handles[r], &j->peers[r].addr, &j->peers[r].nonce)) {
			rn_warn(RN_SUB_NET,
				RN_PFX "RMA connect: rank %d's handle is not ours (another "
				       "plugin or version on that rank?)",
				r);
			return -EPROTO;
		}
	}
	if (handle_decode(handles[g->rank], &j->peers[g->rank].addr, &j->peers[g->rank].nonce) ||
	    j->peers[g->rank].nonce != l->nonce) {
		rn_warn(RN_SUB_NET,
			RN_PFX "RMA connect: rank %d's handle is not this rank's "
			       "listener",
			g->rank);
		return -EINVAL;
	}
	return 0;
}

/* A connect to every other rank, from our NIC's address; the greeting follows (join_greet). */
static int join_dial(struct rn_rma_coll *g, struct rma_join *j)
{
	struct sockaddr_storage src;
	char a[80];
	int r, ret;

	if (rn_oob_local_addr(g->dev, &g->eng->cfg, &src))
		memset(&src, 0, sizeof(src));
	for (r = 0; r < g->nranks; r++) {
		if (r == g->rank)
			continue;
		ret = rn_oob_connect(&j->peers[r].addr, &src, &g->out[r]);
		if (ret && ret != -EAGAIN && ret != -EINPROGRESS) {
			rn_warn(RN_SUB_NET, RN_PFX "RMA connect to rank %d (%s): %s", r,
				rn_sockaddr_str(&j->peers[r].addr, a, sizeof(a)), strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* Our greeting on each connect that went through; *@progress set by one. 0 or -errno. */
static int join_greet(struct rn_rma_coll *g, struct rma_join *j, uint64_t deadline, int *progress)
{
	char a[80];
	int r, ret;

	for (r = 0; r < g->nranks; r++) {
		struct rma_greet gr = { .magic = htobe64(RMA_MAGIC),
					.nonce = j->peers[r].nonce,
					.rank = htobe32((uint32_t)g->rank),
					.nranks = htobe32((uint32_t)g->nranks) };

		if (r == g->rank || j->peers[r].greeted)
			continue;
		ret = rn_oob_connect_poll(g->out[r]);
		if (ret == -EAGAIN)
			continue;
		if (!ret) /* 24 bytes into an empty socket buffer: never waits */
			ret = write_all(g->out[r], &gr, sizeof(gr), deadline);
		if (ret) {
			rn_warn(RN_SUB_NET, RN_PFX "RMA connect to rank %d (%s): %s", r,
				rn_sockaddr_str(&j->peers[r].addr, a, sizeof(a)), strerror(-ret));
			return ret;
		}
		j->peers[r].greeted = 1;
		j->nout++;
		*progress = 1;
	}
	return 0;
}

/*
 * The connections the listener has, each moved on until its greeting says which rank it
 * is (a stranger's is dropped); *@progress set by one.
 */
static void join_hear(struct rn_rma_coll *g, struct rn_rma_listen *l, struct rma_join *j,
		      int *progress)
{
	int fd, k, ret;

	while (j->npend < j->maxpend && !rn_oob_accept(l->fd, &fd)) {
		j->pend[j->npend].fd = fd;
		j->pend[j->npend].off = 0;
		j->pend[j->npend].since_ns = rn_now_ns();
		j->npend++;
	}
	for (k = 0; k < j->npend; k++) {
		ret = pend_step(g, l, &j->pend[k]);
		if (!ret)
			continue;
		if (ret < 0) {
			rn_info(RN_SUB_NET,
				RN_PFX "RMA connect: dropped a connection that is "
				       "no rank of this group (%s)",
				strerror(-ret));
			close(j->pend[k].fd);
		} else {
			j->nin++;
		}
		j->pend[k--] = j->pend[--j->npend];
		*progress = 1;
	}
}

int rn_rma_connect(struct rn_engine *eng, void *const *handles, int nranks, int rank,
		   struct rn_rma_listen *l, struct rn_rma_coll **out)
{
	struct rma_join j = { 0 };
	struct rn_rma_coll *g;
	uint64_t deadline;
	int ret;

	*out = NULL;
	if (!eng || !handles || !l || nranks < 1 || nranks > RN_RMA_MAX_RANKS || rank < 0 ||
	    rank >= nranks)
		return -EINVAL;
	g = coll_new(eng, l, nranks, rank);
	if (!g)
		return -ENOMEM;
	j.peers = calloc((size_t)nranks, sizeof(*j.peers));
	j.maxpend = nranks + 16; /* every rank, and room for a few strangers */
	j.pend = calloc((size_t)j.maxpend, sizeof(*j.pend));
	ret = j.peers && j.pend ? 0 : -ENOMEM;
	if (!ret)
		ret = join_decode(&j, g, handles, l);
	if (!ret)
		ret = join_dial(g, &j);
	if (ret)
		goto fail;
	deadline = deadline_of(g);
	while (j.nin < nranks - 1 || j.nout < nranks - 1) {
		int progress = 0;

		ret = join_greet(g, &j, deadline, &progress);
		if (ret)
			goto fail;
		join_hear(g, l, &j, &progress);
		if (j.nin == nranks - 1 && j.nout == nranks - 1)
			break;
		if (!ms_left(deadline)) {
			rn_warn(RN_SUB_NET,
				RN_PFX "RMA connect: %d of %d ranks reached and %d of %d heard "
				       "from within %d ms (NCCL_ROCE_CONNECT_TIMEOUT_MS): a rank "
				       "is gone or cannot reach %s",
				j.nout, nranks - 1, j.nin, nranks - 1, g->timeout_ms,
				g->dev->nic.ibdev);
			ret = -ETIMEDOUT;
			goto fail;
		}
		if (!progress) {
			struct pollfd pf = { .fd = l->fd, .events = POLLIN };

			poll(&pf, 1, 1);
		}
	}
	join_free(&j);
	rn_info(RN_SUB_NET, RN_PFX "RMA group of %d ranks on %s:%d (rank %d) connected", nranks,
		g->dev->nic.ibdev, g->dev->nic.port, rank);
	*out = g;
	return 0;
fail:
	join_free(&j);
	coll_free(g);
	return ret;
}

int rn_rma_close(struct rn_rma_coll *g)
{
	coll_free(g);
	return 0;
}

/*
 * The group's allgather: @mine (@len bytes) to every rank, every rank's into @all
 * (@len each, ours at our rank). Every rank calls it in the same order with the same
 * length; one that does not, or that is gone, is named.
 */
static int allgather(struct rn_rma_coll *g, const void *mine, size_t len, void *all)
{
	struct rma_msg m = { .magic = htobe32(RMA_MSG_MAGIC),
			     .seq = htobe32(++g->seq),
			     .len = htobe32((uint32_t)len),
			     .rank = htobe32((uint32_t)g->rank) };
	uint64_t deadline = deadline_of(g);
	int r, ret = 0;

	memcpy((char *)all + (size_t)g->rank * len, mine, len);
	for (r = 0; r < g->nranks && !ret; r++)
		if (r != g->rank) {
			ret = write_all(g->out[r], &m, sizeof(m), deadline);
			if (!ret)
				ret = write_all(g->out[r], mine, len, deadline);
			if (ret)
				break;
		}
	for (r = 0; r < g->nranks && !ret; r++) {
		struct rma_msg h;

		if (r == g->rank)
			continue;
		ret = read_all(g->in[r], &h, sizeof(h), deadline);
		if (!ret && (be32toh(h.magic) != RMA_MSG_MAGIC || be32toh(h.seq) != g->seq ||
			     be32toh(h.len) != len || be32toh(h.rank) != (uint32_t)r))
			ret = -EPROTO;
		if (!ret)
			ret = read_all(g->in[r], (char *)all + (size_t)r * len, len, deadline);
		if (ret)
			break;
	}
	if (ret)
		rn_warn(RN_SUB_NET,
			RN_PFX "RMA group (rank %d of %d): exchange %u with rank %d "
			       "failed: %s",
			g->rank, g->nranks, g->seq, r,
			ret == -ECONNRESET ? "the rank closed the group's connection (its process "
					     "is gone)" :
			ret == -EPROTO     ? "the ranks disagree on the collective call "
					     "(another plugin version, or calls in another order)" :
					     strerror(-ret));
	return ret;
}

static int barrier(struct rn_rma_coll *g)
{
	uint8_t one = 1, *all = malloc((size_t)g->nranks);
	int ret;

	if (!all)
		return -ENOMEM;
	ret = allgather(g, &one, 1, all);
	free(all);
	return ret;
}

/* ---- registration ------------------------------------------------------------- */

struct rma_key {
	uint64_t addr;
	uint64_t size;
	uint32_t rkey;
	uint32_t pad;
};

static void rmr_free(struct rn_rma_mr *m)
{
	free(m->addr);
	free(m->size);
	free(m->rkey);
	free(m);
}

int rn_rma_reg(struct rn_rma_coll *g, void *data, size_t size, int type, int dmabuf_fd,
	       uint64_t offset, struct rn_rma_mr **out)
{
	struct rma_key mine, *all = NULL;
	struct rn_rma_mr *m;
	int r, ret;

	*out = NULL;
	if (!g || !data || !size)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->nranks = g->nranks;
	m->addr = calloc((size_t)g->nranks, sizeof(*m->addr));
	m->size = calloc((size_t)g->nranks, sizeof(*m->size));
	m->rkey = calloc((size_t)g->nranks, sizeof(*m->rkey));
	all = calloc((size_t)g->nranks, sizeof(*all));
	if (!m->addr || !m->size || !m->rkey || !all) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = rn_mr_get(g->dev, data, size, type, dmabuf_fd, offset, &m->mr);
	if (ret) {
		rn_warn(RN_SUB_NET, RN_PFX "RMA registration of %zu bytes at %p on %s: %s", size,
			data, g->dev->nic.ibdev, strerror(-ret));
		/* the other ranks wait for our key: tell them there is none */
		memset(&mine, 0, sizeof(mine));
	} else {
		mine.addr = htobe64((uint64_t)(uintptr_t)data);
		mine.size = htobe64((uint64_t)size);
		mine.rkey = htobe32(m->mr->ibmr->rkey);
		mine.pad = 0;
	}
	r = allgather(g, &mine, sizeof(mine), all);
	if (!ret)
		ret = r;
	for (r = 0; r < g->nranks && !ret; r++) {
		m->addr[r] = be64toh(all[r].addr);
		m->size[r] = be64toh(all[r].size);
		m->rkey[r] = be32toh(all[r].rkey);
		if (!m->size[r]) {
			rn_warn(RN_SUB_NET,
				RN_PFX "RMA registration: rank %d could not register "
				       "its buffer (its log says why)",
				r);
			ret = -EREMOTEIO;
		}
	}
	free(all);
	if (ret)
		goto fail;
	*out = m;
	return 0;
fail:
	free(all);
	if (m->mr)
		rn_mr_put(g->dev, m->mr);
	rmr_free(m);
	return ret;
}

int rn_rma_dereg(struct rn_rma_coll *g, struct rn_rma_mr *m)
{
	int ret;

	if (!g || !m)
		return -EINVAL;
	ret = rn_mr_put(g->dev, m->mr);
	rmr_free(m);
	return ret;
}

/* ---- contexts ------------------------------------------------------------------ */

static void ctx_free(struct rn_rma_ctx *x)
{
	int r;

	if (!x)
		return;
	for (r = 0; x->sc && r < x->g->nranks; r++)
		if (x->sc[r])
			rn_close_send(x->sc[r]);
	for (r = 0; x->rc && r < x->nrc; r++)
		rn_close_recv(x->rc[r]);
	if (x->scratch_mr)
		rn_mr_put(x->g->dev, x->scratch_mr);
	free(x->scratch);
	free(x->sc);
	free(x->rc);
	free(x->sq_used);
	free(x->reqs);
	free(x);
}

int rn_rma_ctx_create(struct rn_rma_coll *g, int ncontexts, int tc, int tc_forced, int stride,
		      struct rn_rma_ctx **out)
{
	unsigned int flags = RN_CONN_RMA | (tc_forced ? RN_CONN_TC_FORCED : 0);
	struct rn_listen_comm *lc = NULL;
	unsigned char mine[RN_HANDLE_SIZE], *hs = NULL;
	struct rn_rma_ctx *x;
	int r, k, want, nsc = 0, ret;
	uint64_t deadline;

	*out = NULL;
	if (!g || ncontexts < 1 || stride < 1 || g->nranks % stride) {
		rn_warn(RN_SUB_NET,
			RN_PFX "RMA context: %d contexts, rank stride %d over %d ranks: "
			       "need at least 1 context and a stride that divides the ranks",
			ncontexts, stride, g ? g->nranks : 0);
		return -EINVAL;
	}
	if (g->dev->attr.atomic_cap == IBV_ATOMIC_NONE) {
		/* a signal is a FETCH_AND_ADD: without atomics NCCL's waits would never end */
		rn_warn(RN_SUB_NET,
			RN_PFX "RMA context: %s has no RDMA atomics, so it cannot carry NCCL's "
			       "signals; set NCCL_RMA_DISABLE=1 or use another NIC (NCCL_IB_HCA)",
			g->dev->nic.ibdev);
		return -EOPNOTSUPP;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->g = g;
	x->ncontexts = ncontexts;
	x->stride = stride;
	want = g->nranks / stride;
	x->sc = calloc((size_t)g->nranks, sizeof(*x->sc));
	x->rc = calloc((size_t)want, sizeof(*x->rc));
	x->sq_used = calloc((size_t)g->nranks, sizeof(*x->sq_used));
	x->nreqs = want * (RN_RMA_INFLIGHT + 8);
	x->reqs = calloc((size_t)x->nreqs, sizeof(*x->reqs));
	x->scratch = aligned_alloc(4096, 4096);
	hs = malloc((size_t)g->nranks * RN_HANDLE_SIZE);
	if (!x->sc || !x->rc || !x->sq_used || !x->reqs || !x->scratch || !hs) {
		ret = -ENOMEM;
		goto fail;
	}
	memset(x->scratch, 0, 4096);
	for (k = x->nreqs - 1; k >= 0; k--) {
		x->reqs[k].next_free = x->free_reqs;
		x->free_reqs = &x->reqs[k];
	}
	ret = rn_mr_get(g->dev, x->scratch, 4096, RN_PTR_HOST, -1, 0, &x->scratch_mr);
	if (ret)
		goto fail;
	ret = rn_listen_flags(g->eng, g->devidx, mine, RN_CONN_RMA, &lc);
	if (!ret)
		ret = allgather(g, mine, RN_HANDLE_SIZE, hs);
	if (ret)
		goto fail;
	/*
	 * Ours to rank + i * stride, and theirs from rank - i * stride, all at once: each
	 * call of connect and accept only moves the handshakes on (src/conn.c).
	 */
	deadline = deadline_of(g) + (uint64_t)g->timeout_ms * 1000000ull;
	while (nsc < want || x->nrc < want) {
		struct rn_recv_comm *rc = NULL;

		for (k = 0; k < want; k++) {
			r = (g->rank + k * stride) % g->nranks;
			if (x->sc[r])
				continue;
			ret = rn_connect_flags(g->eng, g->devidx, hs + (size_t)r * RN_HANDLE_SIZE,
					       tc, flags, &x->sc[r]);
			if (ret) {
				rn_warn(RN_SUB_NET,
					RN_PFX "RMA context: the comm to rank %d failed: %s", r,
					strerror(-ret));
				goto fail;
			}
			nsc += !!x->sc[r];
		}
		if (x->nrc < want) {
			ret = rn_accept(lc, &rc);
			if (ret) {
				rn_warn(RN_SUB_NET,
					RN_PFX "RMA context: a comm from another rank "
					       "failed: %s",
					strerror(-ret));
				goto fail;
			}
			if (rc)
				x->rc[x->nrc++] = rc;
		}
		if (nsc == want && x->nrc == want)
			break;
		if (!ms_left(deadline)) {
			rn_warn(RN_SUB_NET,
				RN_PFX "RMA context: %d of %d comms out and %d of %d in within %d "
				       "ms: a rank is gone or refused the path (its log names "
				       "why)",
				nsc, want, x->nrc, want, 2 * g->timeout_ms);
			ret = -ETIMEDOUT;
			goto fail;
		}
		usleep(200);
	}
	/* every rank's responders are up before anyone posts */
	ret = barrier(g);
	if (ret)
		goto fail;
	rn_close_listen(lc);
	free(hs);
	rn_info(RN_SUB_NET,
		RN_PFX "RMA context on %s:%d: %d comm pair%s, %d context%s, traffic "
		       "class %d%s",
		g->dev->nic.ibdev, g->dev->nic.port, want, want == 1 ? "" : "s", ncontexts,
		ncontexts == 1 ? "" : "s", tc, tc_forced ? " (NCCL_GIN_IB_TC)" : "");
	*out = x;
	return 0;
fail:
	if (lc)
		rn_close_listen(lc);
	free(hs);
	ctx_free(x);
	return ret;
}

int rn_rma_ctx_destroy(struct rn_rma_ctx *x)
{
	ctx_free(x);
	return 0;
}

/* ---- the data path --------------------------------------------------------------- */

static struct rn_rma_req *req_get(struct rn_rma_ctx *x, int rank, int nwr)
{
	struct rn_rma_req *q = x->free_reqs;

	if (!q)
		return NULL;
	x->free_reqs = q->next_free;
	memset(q, 0, sizeof(*q));
	q->x = x;
	q->rank = rank;
	q->nwr = nwr;
	return q;
}

static void req_put(struct rn_rma_req *q)
{
	struct rn_rma_ctx *x = q->x;

	q->x = NULL;
	q->next_free = x->free_reqs;
	x->free_reqs = q;
}

/* The comm to @rank, checked: NULL (with the reason logged once per call) if none. */
static struct rn_send_comm *target(struct rn_rma_ctx *x, int context, int rank, int *err)
{
	struct rn_send_comm *sc;

	*err = -EINVAL;
	if (context < 0 || context >= x->ncontexts || rank < 0 || rank >= x->g->nranks) {
		rn_warn(RN_SUB_NET,
			RN_PFX "RMA: context %d, rank %d: out of range (%d contexts, "
			       "%d ranks)",
			context, rank, x->ncontexts, x->g->nranks);
		return NULL;
	}
	sc = x->sc[rank];
	if (!sc) {
		rn_warn(RN_SUB_NET, RN_PFX "RMA: rank %d is not in this context's stride %d", rank,
			x->stride);
		return NULL;
	}
	if (sc->c.err) {
		*err = sc->c.err; /* said when it failed */
		return NULL;
	}
	*err = 0;
	return sc;
}

static int in_range(const struct rn_rma_mr *m, int rank, uint64_t off, size_t size)
{
	return m && rank < m->nranks && off <= m->size[rank] && size <= m->size[rank] - off;
}

/* Post @n WRs (chained) to @rank for @q; the last one is signalled and carries @q. */
static int post(struct rn_rma_ctx *x, struct rn_send_comm *sc, int rank, struct ibv_send_wr *wr,
		int n, struct rn_rma_req *q)
{
	struct ibv_send_wr *bad = NULL;
	int i, ret;

	if (x->sq_used[rank] + n > sc->c.sq_cap) {
		rn_warn(RN_SUB_NET,
			RN_PFX "RMA: %d work requests in flight to rank %d, the QP holds "
			       "%d: NCCL posted more than the %d requests a rank it was told",
			x->sq_used[rank], rank, sc->c.sq_cap, RN_RMA_INFLIGHT);
		return -ENOBUFS;
	}
	for (i = 0; i < n; i++) {
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wr[i].send_flags |= i + 1 < n ? 0 : IBV_SEND_SIGNALED;
	}
	wr[n - 1].wr_id = (uintptr_t)q | RN_WR_RMA; /* its kind, for an error's WARN */
	ret = rn_verbs_err(rn_verbs.post_send(sc->c.qps[0], wr, &bad));
	if (ret) {
		rn_warn(RN_SUB_NET, RN_PFX "RMA: post to rank %d (%s) failed: %s", rank,
			sc->c.peer_str, strerror(-ret));
		return ret;
	}
	x->sq_used[rank] += n;
	return 0;
}

/* A request for the @n WRs, posted: 0 with it in *@out, or -errno (nothing posted). */
static int submit(struct rn_rma_ctx *x, struct rn_send_comm *sc, int rank, struct ibv_send_wr *wr,
		  int n, struct rn_rma_req **out)
{
	struct rn_rma_req *q = req_get(x, rank, n);
	int ret;

	if (!q) {
		rn_warn(RN_SUB_NET, RN_PFX "RMA: all %d requests in flight (NCCL tests none?)",
			x->nreqs);
		return -ENOBUFS;
	}
	ret = post(x, sc, rank, wr, n, q);
	if (ret) {
		req_put(q);
		return ret;
	}
	*out = q;
	return 0;
}

#define RMA_MAX_WR 8 /* chunks of one put or get, plus its signal */
/* the window NCCL is told of, a put and its signal each, fits the QP (rn_conn.h) */
_Static_assert(RN_RMA_SQ_DEPTH >= 2 * RN_RMA_INFLIGHT, "an RMA QP holds the window");

/* @size bytes as WRs of @op of at most the comm's largest message each. */
static int chunks(struct rn_send_comm *sc, enum ibv_wr_opcode op, uint64_t laddr, uint32_t lkey,
		  uint64_t raddr, uint32_t rkey, size_t size, struct ibv_send_wr *wr,
		  struct ibv_sge *sge, int max)
{
	uint64_t step = sc->c.max_msg ? sc->c.max_msg : (1u << 30);
	int n = 0;

	do {
		size_t len = size > step ? step : size;

		if (n == max)
			return -EMSGSIZE;
		memset(&wr[n], 0, sizeof(wr[n]));
		sge[n].addr = laddr;
		sge[n].length = (uint32_t)len;
		sge[n].lkey = lkey;
		wr[n].opcode = op;
		wr[n].sg_list = &sge[n];
		wr[n].num_sge = len ? 1 : 0;
		wr[n].wr.rdma.remote_addr = raddr;
		wr[n].wr.rdma.rkey = rkey;
		laddr += len;
		raddr += len;
		size -= len;
		n++;
	} while (size);
	return n;
}

int rn_rma_put(struct rn_rma_ctx *x, int context, uint64_t src_off, struct rn_rma_mr *src,
	       size_t size, uint64_t dst_off, struct rn_rma_mr *dst, int rank,
	       const struct rn_rma_signal *sig, struct rn_rma_req **out)
{
	struct ibv_send_wr wr[RMA_MAX_WR];
	struct ibv_sge sge[RMA_MAX_WR];
	struct rn_send_comm *sc;
	int n = 0, ret;

	*out = NULL;
	if (!x)
		return -EINVAL;
	sc = target(x, context, rank, &ret);
	if (!sc)
		return ret;
	if (size || !sig) {
		if (!in_range(src, x->g->rank, src_off, size) ||
		    !in_range(dst, rank, dst_off, size)) {
			rn_warn(RN_SUB_NET,
				RN_PFX "RMA put of %zu bytes to rank %d: outside the registered "
				       "buffers (source offset %llu, destination offset %llu)",
				size, rank, (unsigned long long)src_off,
				(unsigned long long)dst_off);
			return -EINVAL;
		}
		n = chunks(sc, IBV_WR_RDMA_WRITE, src->addr[x->g->rank] + src_off,
			   src->mr->ibmr->lkey, dst->addr[rank] + dst_off, dst->rkey[rank], size,
			   wr, sge, RMA_MAX_WR - 1);
		if (n < 0)
			return n;
	}
	if (sig) {
		uint64_t raddr;

		if (!in_range(sig->mr, rank, sig->off, 8) ||
		    (raddr = sig->mr->addr[rank] + sig->off) % 8) {
			rn_warn(RN_SUB_NET,
				RN_PFX "RMA signal to rank %d at offset %llu: not an aligned "
				       "8-byte word of the registered signal buffer",
				rank, (unsigned long long)sig->off);
			return -EINVAL;
		}
		memset(&wr[n], 0, sizeof(wr[n]));
		sge[n].addr = (uintptr_t)x->scratch;
		sge[n].length = 8;
		sge[n].lkey = x->scratch_mr->ibmr->lkey;
		wr[n].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr[n].sg_list = &sge[n];
		wr[n].num_sge = 1;
		wr[n].wr.atomic.remote_addr = raddr;
		wr[n].wr.atomic.rkey = sig->mr->rkey[rank];
		wr[n].wr.atomic.compare_add = sig->value;
		n++;
	}
	return submit(x, sc, rank, wr, n, out);
}

int rn_rma_get(struct rn_rma_ctx *x, int context, uint64_t remote_off, struct rn_rma_mr *remote,
	       size_t size, uint64_t local_off, struct rn_rma_mr *local, int rank,
	       struct rn_rma_req **out)
{
	struct ibv_send_wr wr[RMA_MAX_WR];
	struct ibv_sge sge[RMA_MAX_WR];
	struct rn_send_comm *sc;
	int n, ret;

	*out = NULL;
	if (!x)
		return -EINVAL;
	sc = target(x, context, rank, &ret);
	if (!sc)
		return ret;
	if (!in_range(remote, rank, remote_off, size) ||
	    !in_range(local, x->g->rank, local_off, size)) {
		rn_warn(RN_SUB_NET,
			RN_PFX "RMA get of %zu bytes from rank %d: outside the registered "
			       "buffers (remote offset %llu, local offset %llu)",
			size, rank, (unsigned long long)remote_off, (unsigned long long)local_off);
		return -EINVAL;
	}
	n = chunks(sc, IBV_WR_RDMA_READ, local->addr[x->g->rank] + local_off, local->mr->ibmr->lkey,
		   remote->addr[rank] + remote_off, remote->rkey[rank], size, wr, sge, RMA_MAX_WR);
	if (n < 0)
		return n;
	return submit(x, sc, rank, wr, n, out);
}

int rn_rma_flush(struct rn_rma_ctx *x, int context, struct rn_rma_mr *mr, int rank,
		 struct rn_rma_req **out)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct rn_send_comm *sc;
	int ret;

	*out = NULL;
	if (!x)
		return -EINVAL;
	sc = target(x, context, rank, &ret);
	if (!sc)
		return ret;
	if (!in_range(mr, rank, 0, 1))
		return -EINVAL;
	/* a READ completes after every WRITE posted before it on the QP has landed */
	chunks(sc, IBV_WR_RDMA_READ, (uintptr_t)x->scratch, x->scratch_mr->ibmr->lkey,
	       mr->addr[rank], mr->rkey[rank], RN_MIN(mr->size[rank], 8), &wr, &sge, 1);
	return submit(x, sc, rank, &wr, 1, out);
}

/* Reap @rank's completions. */
static void poll_rank(struct rn_rma_ctx *x, int rank)
{
	struct rn_send_comm *sc = x->sc[rank];
	struct ibv_wc wc[16];
	int n, i;

	if (!sc)
		return;
	do {
		n = rn_verbs.poll_cq(sc->c.mem[0].cq, 16, wc);
		for (i = 0; i < n; i++) {
			struct rn_rma_req *q = RN_WR_PTR(wc[i].wr_id);

			if (wc[i].status != IBV_WC_SUCCESS)
				rn_xfer_wc_error(&sc->c, 0, &wc[i]); /* the first one explains */
			if (!q)
				continue;
			q->done = 1;
			q->err = wc[i].status == IBV_WC_SUCCESS ? 0 : -EREMOTEIO;
			x->sq_used[rank] -= q->nwr;
		}
	} while (n == 16);
	if (n < 0 && !sc->c.err)
		sc->c.err = -EIO;
}

int rn_rma_test(struct rn_rma_req *q, int *done)
{
	int ret;

	*done = 0;
	if (!q || !q->x)
		return -EINVAL;
	if (!q->done)
		poll_rank(q->x, q->rank);
	if (!q->done) {
		struct rn_send_comm *sc = q->x->sc[q->rank];

		/* a failed comm's QP flushes what it holds: the error comes as a completion */
		return sc && sc->c.err && sc->c.err != -EREMOTEIO ? sc->c.err : 0;
	}
	ret = q->err;
	*done = 1;
	req_put(q);
	return ret;
}

int rn_rma_progress(struct rn_rma_ctx *x)
{
	int r;

	if (!x)
		return -EINVAL;
	for (r = 0; r < x->g->nranks; r++)
		poll_rank(x, r);
	return 0;
}

int rn_rma_last_error(const struct rn_rma_ctx *x)
{
	int r;

	for (r = 0; x && r < x->g->nranks; r++)
		if (x->sc[r] && x->sc[r]->c.err)
			return x->sc[r]->c.err;
	return 0;
}

struct ibv_qp *rn_rma_qp(const struct rn_rma_ctx *x, int rank)
{
	if (!x || rank < 0 || rank >= x->g->nranks || !x->sc[rank])
		return NULL;
	return x->sc[rank]->c.qps[0];
}

/* NCCL_RMA_PLUGIN names another backend than ours ("none" and our own name do not). */
static int rma_plugin_foreign(const char *list)
{
	return list[0] && strcasecmp(list, "none") && !strstr(list, "roce");
}

void rn_rma_bypass_check(const struct rn_engine *eng, int nrefused, const char *refused)
{
	const struct rn_config *cfg = &eng->cfg;
	int i, n = 0, mlx5 = 0, foreign = rma_plugin_foreign(cfg->rma_plugin), gdaki;
	char why[768] = "";

	for (i = 0; i < eng->ndevs; i++)
		mlx5 |= !strncmp(eng->devs[i]->nic.ibdev, "mlx5", 4);
	/* GDAKI: NCCL's GPU-initiated backend, on mlx5 alone, taken unless the proxy is asked for */
	gdaki = mlx5 && cfg->gin_enable && cfg->gin_type != 2;
	if (!foreign && !gdaki)
		return; /* the traffic comes through us: no GID table is read again at init */
	if (nrefused)
		n += snprintf(why + n, sizeof(why) - (size_t)n,
			      "this plugin refused %s, which NCCL's "
			      "own backend would use",
			      refused ? refused : "a NIC");
	for (i = 0; i < eng->ndevs && n < (int)sizeof(why); i++) {
		const struct rn_dev *d = eng->devs[i];
		int theirs = rn_gid_netib_index(d->ctx, d->nic.port, cfg);

		if (theirs < 0 || theirs == d->nic.gid_index)
			continue;
		n += snprintf(why + n, sizeof(why) - (size_t)n,
			      "%s%s:%d: NCCL's would send from GID "
			      "index %d where this plugin sends from %d (%s)",
			      n ? "; " : "", d->nic.ibdev, d->nic.port, theirs, d->nic.gid_index,
			      d->nic.netdev);
	}
	if (!why[0])
		return; /* the same NICs and GIDs either way: nothing is bypassed that we check */
	if (foreign)
		rn_warn(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "NCCL_RMA_PLUGIN=%s: NCCL 2.30 runs its one-sided traffic "
			       "(ncclPutSignal, the device API's GIN proxy) on that backend, not "
			       "on this plugin, with none of its route and ARP checks, and here "
			       "that matters: %s; unset NCCL_RMA_PLUGIN to run it over "
			       "nccl-net-roce",
			cfg->rma_plugin, why);
	if (gdaki)
		rn_warn(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "NCCL 2.30 runs device-API (GIN) kernels on mlx5 through its own "
			       "GDAKI backend, with net_ib's GID choice and no route or ARP "
			       "check, and here that matters: %s; set NCCL_GIN_TYPE=2 to run GIN "
			       "through the proxy over this plugin, or NCCL_GIN_ENABLE=0",
			why);
}
