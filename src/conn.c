// SPDX-License-Identifier: MIT
/*
 * Connection setup: rn_listen / rn_connect / rn_accept as non-blocking state
 * machines over the OOB socket, and the QPs of both comms (INIT -> RTR -> RTS).
 *
 *   connect (send side)                      accept (recv side)
 *   TCP connect ..........................>  accept4 (one state per socket)
 *   HELLO (facts, QPNs, FIFO) ------------>  check nonce, build the recv comm,
 *                                  <-------  HELLO (facts, QPNs, sizes array)
 *   connection verdict (rn_conn_check_*)     connection verdict
 *   VERDICT ------------------------------>  <------ VERDICT
 *   either refused: -EHOSTUNREACH on both sides, no QP ever left RESET
 *   INIT/RTR/RTS, READY ------------------>  INIT/RTR/RTS, receives, done on READY
 *
 * The recv side is at RTS with its receives posted before it sends its first CTS
 * (only after READY), and the sender writes only into a CTS, so no RDMA arrives
 * at a QP that is not ready for it. A QP state change that times out is retried
 * as net_ib does (NCCL_IB_MQP_RETRY_*), without blocking (hs_modify_qp).
 *
 * rn_connect keeps its state on the heap, in a process-wide registry: NCCL passes
 * the same handle memory on every call until the comm comes back, so the state is
 * found by the handle's address plus a random key rn_connect writes into the
 * handle's private half (bytes 64..127, see rn_wire.h). The handle's bytes come
 * from another rank: they are only ever compared, never followed as a pointer, so
 * forged or stale bytes find nothing and a fresh connect starts.
 *
 * No deadline NCCL does not have: NCCL calls connect and accept until they return
 * a comm and has no connection timeout of its own, and a rank may start its accept
 * minutes after its peer's connect (it waits for a third rank first). So the wait
 * for the peer to start its side is unbounded, as net_ib's; what ends it is the
 * peer's death, told by its kernel (refused, reset) or, for a host that vanished,
 * by TCP (rn_oob.h: SYN retries, keepalive, user timeout). The handshake deadline,
 * NCCL_ROCE_CONNECT_TIMEOUT_MS, counts on both sides from the peer's first byte until
 * its HELLO is whole and valid (a peer that trickles or sends garbage); after that the
 * peer is real and nothing but its death ends the wait.
 * NCCL polls connect with no pause (~17k calls/s): a call with nothing to do is a
 * lookup and one recv().
 *
 * A listener serves up to RN_MAX_PENDING handshakes at once. Before a valid HELLO
 * a connection is a stranger (a port scanner, a stuck or hostile peer, or a real
 * peer whose proxy thread has not sent its HELLO yet). A silent stranger keeps its
 * slot until another connection needs it; one that speaks gets RN_HS_HELLO_MS from
 * its first byte to complete its HELLO (a real peer sends it in one write). Each
 * accepted socket is read at once, before the next accept, so a real peer whose
 * HELLO is queued is never a stranger that newer sockets evict; when the table is
 * full the oldest silent stranger (else the oldest stranger) makes room, once it has
 * held its slot RN_HS_GRACE_MS (a real peer's HELLO may follow its accept by a while;
 * until then new sockets wait in the kernel's queue). At most
 * RN_MAX_PENDING accepts per call: a flood cannot keep the caller in accept. Each
 * drop is logged with the peer's address, at WARN once per address per minute
 * (src/ratelimit.c) and at INFO otherwise. After a valid HELLO the handshake's
 * errors belong to that connection: rn_accept returns them.
 *
 * That eviction can take a real peer: its HELLO lost once on a loaded host comes back with
 * TCP's retransmit, maybe after the grace. So a connect reset before the listener sent a
 * byte connects again (hs_redial, at most RN_HS_REDIALS times) with the same HELLO; a
 * peer that died has no listener left, and the new connection is refused at once.
 *
 * The engine owns all it made: listeners, connects in progress and the comms handed
 * to NCCL are on lists here, and rn_conn_close_all() frees what NCCL never closed
 * (an abort frees only connected comms and no listener) at the last finalize.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "rn_clock.h"
#include "rn_comm.h"
#include "rn_compiler.h"
#include "rn_conn.h"
#include "rn_counters.h"
#include "rn_gid.h"
#include "rn_log.h"
#include "rn_mr.h"
#include "rn_ratelimit.h"
#include "rn_verbs.h"

#define RN_MAX_PENDING 64   /* handshakes in progress per listener */
#define RN_HS_HELLO_MS 2000 /* first byte -> a complete HELLO (~200 bytes) */
#define RN_HS_GRACE_MS 1000 /* accept -> the earliest a stranger may be evicted */
#define RN_HS_REDIALS 8     /* connect: new connections after a reset before any byte */
#define RN_DROP_WARN_NS (60ull * 1000000000ull) /* one WARN per peer address per minute */
#define RN_CONN_COOKIE 0x524e4353434f4e4eull    /* "RNCSCONN" */

enum hs_state {
	HS_CONNECTING,
	HS_SEND_HELLO,
	HS_RECV_HELLO,
	HS_CHECK,
	HS_SEND_VERDICT,
	HS_RECV_VERDICT,
	HS_CONNECT_QPS,
	HS_SEND_READY,
	HS_RECV_READY,
	HS_DONE,
};

struct rn_hs {
	int role;
	enum hs_state state;
	int fd;
	uint64_t nonce;
	uint64_t deadline_ns;   /* 0: none yet (the peer has sent nothing) */
	uint64_t check_deadline_ns;
	uint64_t accept_ns;     /* listener: when accepted (eviction order) */
	uint64_t first_byte_ns; /* when the peer's first byte came (0: none) */
	int hello_ok;           /* a valid HELLO came: errors are no longer "stray" */
	int redials;            /* connect: reset before the peer's first byte, connected again */
	int timed_out;          /* our deadline fired (said already) */
	struct rn_engine *eng;
	int devidx;
	int traffic_class;
	unsigned int flags; /* RN_CONN_* (rn_conn.h) */
	struct rn_oob_buf out, in;
	struct rn_comm *comm;
	struct rn_hello peer;
	struct rn_conn_check *chk;
	struct rn_verdict_msg mine, theirs;
	struct sockaddr_storage peer_addr;
	struct sockaddr_storage local_addr;
	char peer_str[80];
	/* the path checks (hs_check): the next QP whose member pair is to be checked */
	int chk_q;
	int refused_q; /* the QP whose pair we refused (its members name it) */
	/* QP state changes (hs_connect_qps): how many are done, and the retry of the next */
	int qp_step;
	int mqp_tries;
	uint64_t mqp_next_ns;
};

struct rn_listen_comm {
	struct rn_engine *eng;
	int devidx;
	struct rn_dev *dev; /* the device's (first) NIC, for the logs */
	int fd;
	struct sockaddr_storage addr;
	uint64_t nonce;
	unsigned int flags; /* RN_CONN_*: what its accepted comms are */
	struct rn_hs *pend[RN_MAX_PENDING];
	struct rn_own own;
};

static uint64_t ms_ns(int ms)
{
	return (uint64_t)ms * 1000000ull;
}

static uint64_t rn_nonce(void)
{
	uint64_t v = 0;

	/* one syscall, no fd (an open of /dev/urandom per connection showed in set-up) */
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = 0;
	return v ^ rn_now_ns() ^ ((uint64_t)getpid() << 32);
}

/* The device's first NIC (a vNIC's member 0), NULL for no device. */
static struct rn_dev *dev_of(struct rn_engine *eng, int devidx)
{
	struct rn_dev *m[RN_VNIC_MAX];

	return rn_engine_members(eng, devidx, m) > 0 ? m[0] : NULL;
}

/* ---- what the engine owns --------------------------------------------------- */

/*
 * Every listener and every comm NCCL holds, in a set hashed by address: a close finds
 * its object by comparing addresses only, so a pointer NCCL closes twice, or after
 * the last finalize freed it, gets -EINVAL and is never followed.
 */
#define OWN_BUCKETS 1024
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_own *own_set[OWN_BUCKETS];

static unsigned int own_bucket(const void *p)
{
	uintptr_t v = (uintptr_t)p;

	return (unsigned int)((v >> 6) ^ (v >> 16)) % OWN_BUCKETS;
}

static void own_add(struct rn_own *o, struct rn_engine *eng, int kind)
{
	unsigned int b = own_bucket(o);

	o->eng = eng;
	o->kind = kind;
	pthread_mutex_lock(&own_lock);
	o->next = own_set[b];
	own_set[b] = o;
	pthread_mutex_unlock(&own_lock);
}

/* 0 when @o was in the set (now out of it), -EINVAL when it is no object of ours. */
static int own_del(struct rn_own *o, int kind)
{
	struct rn_own **pp;
	int ret = -EINVAL;

	pthread_mutex_lock(&own_lock);
	for (pp = &own_set[own_bucket(o)]; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			if (o->kind == kind) {
				*pp = o->next;
				ret = 0;
			}
			break;
		}
	pthread_mutex_unlock(&own_lock);
	return ret;
}

static void own_add_comm(struct rn_comm *c)
{
	own_add(&c->own, c->eng, RN_OWN_COMM);
}

/* ---- handshake -------------------------------------------------------------- */

static void hs_free(struct rn_hs *hs)
{
	if (!hs)
		return;
	if (hs->chk)
		rn_path_check.free(hs->chk);
	rn_verdict_msg_clear(&hs->mine);
	rn_verdict_msg_clear(&hs->theirs);
	if (hs->comm)
		rn_comm_free(hs->comm); /* closes hs->fd too once it was handed over */
	else if (hs->fd >= 0)
		close(hs->fd);
	free(hs);
}

static void local_facts(struct rn_hs *hs, const struct rn_dev *dev, struct rn_peer_facts *f)
{
	memset(f, 0, sizeof(*f));
	rn_path_check.facts_from_nic(&dev->nic, f);
	if (!f->host[0])
		snprintf(f->host, sizeof(f->host), "%s", hs->eng->hostname);
}

static void hs_hello(struct rn_hs *hs, int tc, int sl)
{
	struct rn_comm *c = hs->comm;
	struct rn_hello m;
	int i;

	memset(&m, 0, sizeof(m));
	m.role = hs->role;
	m.nqps = c->nqps;
	m.tc = tc;
	m.sl = sl;
	m.members = c->nmem;
	local_facts(hs, c->mem[0].dev, &m.facts);
	for (i = 1; i < c->nmem; i++)
		local_facts(hs, c->mem[i].dev, &m.more[i - 1].facts);
	if (hs->role == RN_ROLE_SEND) {
		struct rn_send_comm *sc = (struct rn_send_comm *)c;

		m.fifo_addr = (uintptr_t)sc->fifo;
		m.fifo_rkey = c->mem[0].ctrl_mr->rkey;
		for (i = 1; i < c->nmem; i++)
			m.more[i - 1].fifo_rkey = c->mem[i].ctrl_mr->rkey;
	} else {
		struct rn_recv_comm *rc = (struct rn_recv_comm *)c;

		m.sizes_addr = (uintptr_t)rc->sizes;
		m.sizes_rkey = c->mem[0].ctrl_mr->rkey;
		for (i = 1; i < c->nmem; i++)
			m.more[i - 1].sizes_rkey = c->mem[i].ctrl_mr->rkey;
	}
	for (i = 0; i < c->nqps; i++)
		m.qpn[i] = c->qps[i]->qp_num;
	for (i = 1; c->fo && i < c->fo->npaths; i++) {
		const struct rn_path *p = &c->fo->path[i];
		int q;

		local_facts(hs, p->mem.dev, &m.spare[i - 1].facts);
		m.spare[i - 1].ctrl_rkey = p->mem.ctrl_mr->rkey;
		for (q = 0; q < c->nqps; q++)
			m.spare[i - 1].qpn[q] = p->qps[q]->qp_num;
		m.spares = i;
	}
	hs->out.len = rn_msg_encode_hello(hs->out.data, hs->nonce, &m);
	hs->out.off = 0;
}

static int tc_of(const struct rn_config *cfg, int traffic_class)
{
	if (cfg->tc >= 0)
		return cfg->tc;
	return traffic_class >= 0 && traffic_class <= 255 ? traffic_class : 0;
}

/*
 * As net_ib: NCCL_IB_SL, else the communicator's trafficClass (v11+ config), else 0.
 * NOTE: an SL has 4 bits; net_ib would pass a RoCE-style class such as 106 on as an
 * invalid SL, we use 0 then (the class still goes into the GRH as TC).
 */
static int sl_of(const struct rn_config *cfg, int traffic_class)
{
	if (cfg->sl >= 0)
		return cfg->sl;
	return traffic_class >= 0 && traffic_class <= 15 ? traffic_class : 0;
}

static int hs_check_pair(struct rn_hs *hs, int q);
static int hs_check_spare(struct rn_hs *hs, struct rn_path *p);

/* 1 when QP @q joins the same pair of members as an earlier QP (checked already). */
static int pair_seen(const struct rn_comm *c, int q)
{
	int i;

	for (i = 0; i < q; i++)
		if (c->qp_mem[i] == c->qp_mem[q] && c->qp_rmem[i] == c->qp_rmem[q])
			return 1;
	return 0;
}

/*
 * Run our side of the verdict; fills hs->mine. -EAGAIN while undecided. A vNIC's
 * every pair of members that shares a QP is checked, one after the other; the first
 * refused pair refuses the connection with its own diagnosis.
 */
static int hs_check(struct rn_hs *hs)
{
	int ret;

	while (hs->chk_q < hs->comm->nqps) {
		if (!pair_seen(hs->comm, hs->chk_q)) {
			ret = hs_check_pair(hs, hs->chk_q);
			if (ret)
				return ret;
			if (hs->mine.refused) {
				hs->refused_q = hs->chk_q;
				return 0;
			}
		}
		hs->chk_q++;
	}
	/* then each spare pair: one that fails is not used, the comm is not refused */
	while (hs->comm->fo && hs->chk_q < hs->comm->nqps + hs->comm->fo->npaths - 1) {
		ret = hs_check_spare(hs, &hs->comm->fo->path[hs->chk_q - hs->comm->nqps + 1]);
		if (ret)
			return ret;
		hs->chk_q++;
	}
	return 0;
}

/*
 * One path check of the handshake, resumable: started on the first call, polled after
 * (-EAGAIN until it decides or its deadline passes: -ETIMEDOUT). @started is 0 when it
 * could not be started (its error returned), 1 when the check ran (its result returned).
 */
static int hs_check_run(struct rn_hs *hs, const struct rn_nic *nic,
			const struct rn_peer_facts *peer, struct rn_finding *f, int *started)
{
	const struct rn_config *cfg = &hs->eng->cfg;
	int ret;

	*started = 1;
	if (!hs->chk) {
		ret = rn_path_check.start(nic, peer, cfg->neigh_timeout_ms, &hs->chk);
		if (ret) {
			*started = 0;
			return ret == -EAGAIN ? -EIO : ret;
		}
		hs->check_deadline_ns = rn_now_ns() +
					((uint64_t)cfg->neigh_timeout_ms + 1000) * 1000000ull;
	}
	ret = rn_path_check.poll(hs->chk, f);
	if (ret == -EAGAIN) {
		if (rn_now_ns() < hs->check_deadline_ns)
			return -EAGAIN;
		ret = -ETIMEDOUT;
	}
	rn_path_check.free(hs->chk);
	hs->chk = NULL;
	return ret;
}

/*
 * The path check on spare pair @p, as on the comm's own: ok_here when it passes (or the
 * check is off or only warns); a pair the check refuses is said at INFO and never used.
 */
static int hs_check_spare(struct rn_hs *hs, struct rn_path *p)
{
	const struct rn_config *cfg = &hs->eng->cfg;
	const struct rn_nic *nic = &p->mem.dev->nic;
	struct rn_finding f = { 0 };
	int ret, started;

	p->ok_here = 1;
	if (cfg->route_check == RN_ROUTE_CHECK_OFF)
		return 0;
	ret = hs_check_run(hs, nic, &p->rpeer, &f, &started);
	if (ret == -EAGAIN)
		return ret;
	if (!started)
		return 0; /* unchecked, as the comm's own pair would be */
	if (ret == -EHOSTUNREACH && cfg->route_check == RN_ROUTE_CHECK_STRICT) {
		p->ok_here = 0;
		rn_info(RN_SUB_NET, RN_PFX "%s:%d -> %s (%s): spare pair not used: [%s] %s",
			nic->ibdev, nic->port, p->rpeer.netdev, p->rpeer.host, rn_cause_id(f.cause),
			f.msg ? f.msg : "");
	}
	rn_finding_clear(&f);
	return 0;
}

/* The verdict on QP @q's pair of members (the only pair of a physical device). */
static int hs_check_pair(struct rn_hs *hs, int q)
{
	struct rn_comm *c = hs->comm;
	const struct rn_nic *nic = &c->mem[c->qp_mem[q]].dev->nic;
	const struct rn_peer_facts *peer = &c->rpeer[c->qp_rmem[q]];
	const struct rn_config *cfg = &hs->eng->cfg;
	struct rn_finding f = { 0 };
	char pfx[512];
	int ret, started;

	if (cfg->route_check == RN_ROUTE_CHECK_OFF)
		return 0;
	ret = hs_check_run(hs, nic, peer, &f, &started);
	if (ret == -EAGAIN)
		return ret;
	if (!started) {
		rn_warn(RN_SUB_NET,
			RN_PFX "could not check the path to %s (%s): %s; "
			       "connecting unchecked",
			hs->peer_str, peer->host, strerror(-ret));
		return 0;
	}
	if (ret == -EHOSTUNREACH) {
		rn_finding_move(&hs->mine.finding, &f);
		hs->mine.refused = cfg->route_check == RN_ROUTE_CHECK_STRICT;
		if (!hs->mine.refused) {
			snprintf(pfx, sizeof(pfx),
				 RN_PFX "path to %s (%s) is asymmetric "
					"(NCCL_ROCE_ROUTE_CHECK=warn: connecting anyway)",
				 hs->peer_str, peer->host);
			rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &hs->mine.finding);
		}
	} else if (ret) {
		rn_warn(RN_SUB_NET,
			RN_PFX "could not check the path to %s (%s): %s; "
			       "connecting unchecked",
			hs->peer_str, peer->host, strerror(-ret));
	} else if (f.cause != RN_CAUSE_NONE) {
		/* a symmetric path with a warning (MTU): say it once, and go on */
		snprintf(pfx, sizeof(pfx), RN_PFX "path to %s (%s)", hs->peer_str, peer->host);
		rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, NULL, &f);
	}
	rn_finding_clear(&f);
	return 0;
}

/* Both verdicts are in: -EHOSTUNREACH with one WARN if either side refuses. */
static int hs_decide(struct rn_hs *hs)
{
	struct rn_comm *c = hs->comm;
	const struct rn_dev *dev = c->mem[c->qp_mem[hs->refused_q]].dev;
	const struct rn_peer_facts *peer = &c->rpeer[c->qp_rmem[hs->refused_q]];
	const struct rn_finding *f;
	const char *who;
	char pfx[512];

	if (hs->mine.refused) {
		f = &hs->mine.finding;
		who = "refused here";
	} else if (hs->theirs.refused) {
		f = &hs->theirs.finding;
		who = "refused by the peer";
	} else {
		return 0;
	}
	/* the finding speaks from the refusing side: say where its fix is to be run */
	snprintf(pfx, sizeof(pfx), RN_PFX "%s:%d -> %s (%s, %s): connection %s", dev->nic.ibdev,
		 dev->nic.port, hs->peer_str, peer->host, peer->netdev, who);
	rn_finding_log(RN_LOG_WARN, RN_SUB_NET, pfx, hs->mine.refused ? NULL : peer->host, f);
	return -EHOSTUNREACH;
}

/*
 * One QP state change with net_ib's retry: a modify_qp that fails with ETIMEDOUT
 * (any error with NCCL_IB_MQP_RETRY_ALL=1) is tried again up to NCCL_IB_MQP_RETRY_CNT
 * times, the n-th retry NCCL_IB_MQP_RETRY_SLEEP_MSEC x n later. Large jobs meet this
 * when thousands of QPs change state at once. net_ib sleeps; we never block: -EAGAIN
 * until the retry is due (the handshake's deadline still bounds it all).
 */
static int hs_modify_qp(struct rn_hs *hs, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	const struct rn_config *cfg = &hs->eng->cfg;
	uint64_t now = rn_now_ns();
	int ret;

	if (hs->mqp_next_ns && now < hs->mqp_next_ns)
		return -EAGAIN;
	ret = rn_verbs_err(rn_verbs.modify_qp(qp, a, mask));
	if (!ret) {
		hs->mqp_tries = 0;
		hs->mqp_next_ns = 0;
		return 0;
	}
	if ((ret == -ETIMEDOUT || cfg->mqp_retry_all) && hs->mqp_tries < cfg->mqp_retry_cnt) {
		hs->mqp_tries++;
		hs->mqp_next_ns = now + (uint64_t)cfg->mqp_retry_sleep_ms * 1000000ull *
						(uint64_t)hs->mqp_tries;
		if (!hs->mqp_next_ns)
			hs->mqp_next_ns = 1;
		rn_info(RN_SUB_NET,
			RN_PFX "%s:%d -> %s: moving QP 0x%x to state %d failed (%s); "
			       "retry %d of %d (NCCL_IB_MQP_RETRY_CNT) in %d ms",
			hs->comm->mem[0].dev->nic.ibdev, hs->comm->mem[0].dev->nic.port,
			hs->peer_str, qp->qp_num, a->qp_state, strerror(-ret), hs->mqp_tries,
			cfg->mqp_retry_cnt, cfg->mqp_retry_sleep_ms * hs->mqp_tries);
		return -EAGAIN;
	}
	return ret == -EAGAIN ? -EIO : ret; /* -EAGAIN means "call again" to our callers */
}

/*
 * Every QP state change of the handshake, resumable (hs->qp_step counts those done):
 * INIT, RTR, RTS of each data QP, then of the receiver's flush QP (connected to
 * itself), then the receiver pre-posts its receives. -EAGAIN while a retry is due.
 */
/*
 * The comm's own QPs (data QPs, then the receiver's flush QPs) through INIT, RTR and RTS,
 * one state per step (hs->qp_step) out of @nsteps. 0, -EAGAIN (again later) or -errno.
 */
static int hs_own_qps(struct rn_hs *hs, int nsteps, int tc, int sl)
{
	struct rn_comm *c = hs->comm;
	struct rn_recv_comm *rc = hs->role == RN_ROLE_RECV ? (struct rn_recv_comm *)c : NULL;
	struct ibv_qp_attr a;
	int ret;

	while (hs->qp_step < nsteps) {
		int q = hs->qp_step / 3, flush = q >= c->nqps, mask;
		/* data QP q: its member and the peer's; flush QP: its member, to itself */
		const struct rn_member *mem = &c->mem[flush ? q - c->nqps : c->qp_mem[q]];
		const struct rn_dev *dev = mem->dev;
		const struct rn_peer_facts *peer = &c->rpeer[flush ? 0 : c->qp_rmem[q]];
		struct ibv_qp *qp = flush ? rc->flush_qp[q - c->nqps] : c->qps[q];

		switch (hs->qp_step % 3) {
		case 0:
			mask = rn_qp_attr_init(dev,
					       flush ? IBV_ACCESS_LOCAL_WRITE |
							       IBV_ACCESS_REMOTE_READ :
					       c->flags & RN_CONN_RMA ? RN_RMA_QP_ACCESS :
									IBV_ACCESS_REMOTE_WRITE,
					       &a);
			break;
		case 1:
			mask = flush ? rn_qp_attr_rtr(dev, mem->gid_index, qp->qp_num,
						      &dev->nic.gid, dev->nic.active_mtu, tc, sl, 1,
						      &a) :
				       rn_qp_attr_rtr(dev, mem->gid_index, hs->peer.qpn[q],
						      &peer->gid,
						      RN_MIN(dev->nic.active_mtu, peer->active_mtu),
						      tc, sl, rn_qp_rd_atom(c, dev, 1), &a);
			break;
		default:
			mask = rn_qp_attr_rts(c, dev, &a);
			break;
		}
		ret = hs_modify_qp(hs, qp, &a, mask);
		if (ret)
			return ret;
		hs->qp_step++;
	}
	return 0;
}

/*
 * The spare pairs' QPs, the same way (their own NICs and GID indices), in the steps after
 * the comm's own @nsteps. 0, -EAGAIN or -errno.
 */
static int hs_spare_qps(struct rn_hs *hs, int nsteps, int tc, int sl)
{
	struct rn_comm *c = hs->comm;
	int rflush = hs->role == RN_ROLE_RECV && c->flush_enabled;
	struct ibv_qp_attr a;
	int ret;

	while (c->fo) {
		int per = 3 * (c->nqps + rflush);
		int st = hs->qp_step - nsteps, j = 1 + st / per, q = (st % per) / 3;
		int flush = q >= c->nqps, mask;
		struct rn_path *p;
		struct ibv_qp *qp;
		const struct rn_dev *dev;

		if (j >= c->fo->npaths)
			break;
		p = &c->fo->path[j];
		dev = p->mem.dev;
		qp = flush ? p->flush_qp : p->qps[q];
		switch (st % 3) {
		case 0:
			mask = rn_qp_attr_init(dev,
					       flush ? IBV_ACCESS_LOCAL_WRITE |
							       IBV_ACCESS_REMOTE_READ :
						       IBV_ACCESS_REMOTE_WRITE,
					       &a);
			break;
		case 1:
			mask = flush ? rn_qp_attr_rtr(dev, p->mem.gid_index, qp->qp_num,
						      &dev->nic.gid, dev->nic.active_mtu, tc, sl, 1,
						      &a) :
				       rn_qp_attr_rtr(dev, p->mem.gid_index,
						      hs->peer.spare[j - 1].qpn[q], &p->rpeer.gid,
						      RN_MIN(dev->nic.active_mtu,
							     p->rpeer.active_mtu),
						      tc, sl, 1, &a);
			break;
		default:
			mask = rn_qp_attr_rts(c, dev, &a);
			break;
		}
		ret = hs_modify_qp(hs, qp, &a, mask);
		if (ret)
			return ret;
		hs->qp_step++;
	}
	return 0;
}

/*
 * What a failover comm needs once its QPs are up: what re-arming a pair after a failure
 * takes (comm_rearm_path), and the receives of every pair: the receiver's take data after
 * a move, the sender's the receiver's RESUMEs and, on the comm's own pair too, its
 * recovery requests (REARM). 0 or -errno.
 */
static int hs_failover_arm(struct rn_hs *hs, int tc, int sl)
{
	struct rn_comm *c = hs->comm;
	int rc = hs->role == RN_ROLE_RECV, k, q, ret;

	if (!c->fo)
		return 0;
	c->fo->tc = tc;
	c->fo->sl = sl;
	c->fo->rearm = -1;
	for (q = 0; q < c->nqps; q++) {
		c->fo->path[0].rqpn[q] = hs->peer.qpn[q];
		for (k = 1; k < c->fo->npaths; k++)
			c->fo->path[k].rqpn[q] = hs->peer.spare[k - 1].qpn[q];
	}
	for (k = rc ? 1 : 0; k < c->fo->npaths; k++) {
		ret = rn_post_recvs(k ? c->fo->path[k].qps : c->qps, c->nqps,
				    rc ? RN_RECV_WRS : RN_FO_RECV_WRS);
		if (ret)
			return ret;
	}
	return 0;
}

/* Where the peer's control block is (its CTS FIFO, or its sizes), per member. 0 or -errno. */
static int hs_peer_ctrl(struct rn_hs *hs)
{
	struct rn_comm *c = hs->comm;
	struct rn_send_comm *sc = (struct rn_send_comm *)c;
	int k;

	if (hs->role == RN_ROLE_RECV) {
		struct rn_recv_comm *rc = (struct rn_recv_comm *)c;

		c->rctrl_addr = hs->peer.fifo_addr;
		rc->rfifo_addr = hs->peer.fifo_addr;
		for (k = 0; k < c->rmem; k++)
			rc->rfifo_rkey[k] = k ? hs->peer.more[k - 1].fifo_rkey : hs->peer.fifo_rkey;
		/* no WRITE_WITH_IMM comes before our first CTS, which needs READY first */
		return rn_xfer_recv_init(rc);
	}
	sc->rsizes_addr = hs->peer.sizes_addr;
	c->rctrl_addr = hs->peer.sizes_addr - RN_CTRL_SIZES_OFF(c->cts_len);
	for (k = 0; k < c->rmem; k++)
		sc->rsizes_rkey[k] = k ? hs->peer.more[k - 1].sizes_rkey : hs->peer.sizes_rkey;
	return 0;
}

static int hs_connect_qps(struct rn_hs *hs)
{
	struct rn_comm *c = hs->comm;
	struct rn_recv_comm *rc = hs->role == RN_ROLE_RECV ? (struct rn_recv_comm *)c : NULL;
	const struct rn_config *cfg = &hs->eng->cfg;
	int nsteps = 3 * c->nqps + (rc && rc->flush_qp[0] ? 3 * c->nmem : 0);
	int tc, sl, ret;

	if (hs->role == RN_ROLE_SEND) {
		tc = tc_of(cfg, hs->traffic_class);
		sl = sl_of(cfg, hs->traffic_class);
	} else {
		/* the receiver's QPs only carry CTS writes: NCCL_IB_FIFO_TC applies to them */
		tc = cfg->fifo_tc >= 0 ? cfg->fifo_tc : hs->peer.tc;
		sl = hs->peer.sl;
	}
	ret = hs_own_qps(hs, nsteps, tc, sl);
	if (!ret)
		ret = hs_spare_qps(hs, nsteps, tc, sl);
	if (ret == -EAGAIN)
		return ret;
	if (!ret)
		ret = hs_failover_arm(hs, tc, sl);
	/* a vNIC's member pair that fails is left out (src/vfail.c): the net traffic's only */
	if (!ret && c->eng->cfg.failover && (c->nmem > 1 || c->rmem > 1) &&
	    !(c->flags & RN_CONN_RMA))
		ret = rn_vfail_attach(c, &rn_xfer_fo_hooks);
	if (!ret)
		ret = hs_peer_ctrl(hs);
	if (ret)
		rn_warn(RN_SUB_NET, RN_PFX "%s:%d -> %s: moving QPs to INIT/RTR/RTS failed: %s",
			c->mem[0].dev->nic.ibdev, c->mem[0].dev->nic.port, hs->peer_str,
			strerror(-ret));
	return ret;
}

/* Validate the peer's HELLO and adopt its facts. */
static int hs_take_hello(struct rn_hs *hs)
{
	struct rn_oob_buf *b = &hs->in;
	int ret;

	if (b->hdr.type != RN_MSG_HELLO || b->hdr.nonce != hs->nonce)
		return -EBADMSG;
	ret = rn_msg_decode_hello(b->data + RN_WIRE_HDR_LEN, b->hdr.len, &hs->peer);
	if (ret)
		return ret;
	if (hs->peer.role == hs->role)
		return -EBADMSG;
	/* the sender sized its QPs by the member count our handle gave */
	if (hs->comm && (hs->peer.nqps != hs->comm->nqps || hs->peer.members != hs->comm->rmem))
		return -EBADMSG;
	/* the receiver offers at most the spares the sender did */
	if (hs->comm && hs->peer.spares > (hs->comm->fo ? hs->comm->fo->npaths - 1 : 0))
		return -EBADMSG;
	return 0;
}

/* The peer's members, as its HELLO describes them. */
static void comm_take_peer(struct rn_comm *c, const struct rn_hello *h)
{
	int k;

	c->rpeer[0] = h->facts;
	for (k = 1; k < h->members; k++)
		c->rpeer[k] = h->more[k - 1].facts;
}

static int hs_build_recv_comm(struct rn_hs *hs)
{
	struct rn_comm *c;
	int ret = rn_comm_members_follow(hs->eng, hs->devidx);

	if (ret)
		return ret;
	c = rn_comm_create(hs->eng, hs->devidx, RN_ROLE_RECV, hs->peer.nqps, hs->peer.members,
			   hs->flags);
	if (!c) /* EPROTO: fewer QPs than our members (a peer that ignored our handle) */
		return errno == EPROTO ? -EBADMSG : errno ? -errno : -EIO;
	hs->comm = c;
	c->fd = hs->fd;
	c->peer_addr = hs->peer_addr;
	snprintf(c->peer_str, sizeof(c->peer_str), "%s", hs->peer_str);
	comm_take_peer(c, &hs->peer);
	ret = rn_comm_spares_create(c, RN_MIN(hs->peer.spares,
					      rn_comm_spares_wanted(hs->eng, c->nmem, c->rmem,
								    c->flags)));
	if (ret)
		return ret;
	rn_comm_spares_take_peer(c, &hs->peer);
	hs_hello(hs, 0, 0);
	return 0;
}

/*
 * One step of either side. 0 = done, -EAGAIN = call again, else the error.
 * Failures before a valid HELLO are the peer's garbage (the caller may ignore them).
 */
/*
 * HELLO in: from its first byte the handshake is bounded (a stranger on the listener gets
 * a short while to finish it, a connector the whole timeout); once whole and valid the
 * peer is real, with no deadline, and its facts are taken (the receiver builds its comm).
 */
static int hs_recv_hello(struct rn_hs *hs)
{
	int ret = rn_oob_recv(hs->fd, &hs->in);

	if (!hs->first_byte_ns && hs->in.off) {
		hs->first_byte_ns = rn_now_ns();
		hs->deadline_ns = hs->first_byte_ns +
				  ms_ns(hs->role == RN_ROLE_SEND ?
						hs->eng->cfg.connect_timeout_ms :
						RN_MIN(hs->eng->cfg.connect_timeout_ms,
						       RN_HS_HELLO_MS));
	}
	if (ret)
		return ret;
	ret = hs_take_hello(hs);
	if (ret)
		return ret;
	hs->hello_ok = 1;
	/*
	 * A real peer: no deadline from here on, as net_ib. Its next message comes when
	 * NCCL next calls its connect or accept, and its proxy thread may be held elsewhere
	 * for minutes (real NCCL: a 45 s first accept failed a 30 s deadline counted from the
	 * first byte). A dead peer is told by its kernel or by TCP (keepalive, user timeout).
	 */
	hs->deadline_ns = 0;
	if (hs->role == RN_ROLE_RECV) {
		ret = hs_build_recv_comm(hs);
		if (ret)
			return ret;
		hs->state = HS_SEND_HELLO;
	} else {
		comm_take_peer(hs->comm, &hs->peer);
		rn_comm_spares_take_peer(hs->comm, &hs->peer);
		hs->state = HS_CHECK;
	}
	return 0;
}

/* The peer's VERDICT in: both verdicts decide (either refusing ends it on both sides). */
static int hs_recv_verdict(struct rn_hs *hs)
{
	int ret = rn_oob_recv(hs->fd, &hs->in);

	if (ret)
		return ret;
	if (hs->in.hdr.type != RN_MSG_VERDICT || hs->in.hdr.nonce != hs->nonce)
		return -EBADMSG;
	ret = rn_msg_decode_verdict(hs->in.data + RN_WIRE_HDR_LEN, hs->in.hdr.len, &hs->theirs);
	if (ret)
		return ret;
	ret = hs_decide(hs);
	if (ret)
		return ret;
	hs->state = HS_CONNECT_QPS;
	return 0;
}

/* The QPs are at RTS: the sender tells its verdicts on the spares (READY), the receiver waits. */
static void hs_after_qps(struct rn_hs *hs)
{
	if (hs->role == RN_ROLE_SEND) {
		hs->out.len = rn_msg_encode_ready_mask(hs->out.data, hs->nonce,
						       rn_comm_spares_ok(hs->comm));
		hs->out.off = 0;
		hs->state = HS_SEND_READY;
	} else {
		rn_oob_recv_reset(&hs->in);
		hs->state = HS_RECV_READY;
	}
}

/*
 * A connect's connection reset (@why) before the listener sent a byte: it may have been
 * dropped as a silent stranger to make room (see the top of this file), which says nothing
 * of the peer. Connect again with the same HELLO: 0. @why itself for any other error, or
 * once RN_HS_REDIALS new connections were reset too (hs_finish says so).
 */
static int hs_redial(struct rn_hs *hs, int why)
{
	int ret;

	if (hs->role != RN_ROLE_SEND || hs->first_byte_ns ||
	    (why != -ECONNRESET && why != -EPIPE) || hs->redials >= RN_HS_REDIALS)
		return why;
	hs->redials++;
	close(hs->fd);
	hs->fd = -1;
	ret = rn_oob_connect(&hs->peer_addr, &hs->local_addr, &hs->fd);
	if (ret)
		return ret;
	rn_info(RN_SUB_NET,
		RN_PFX "connect to %s: %s before the peer's HELLO (a listener full of "
		       "connections drops the oldest silent one); connecting again (%d of %d)",
		hs->peer_str, strerror(-why), hs->redials, RN_HS_REDIALS);
	hs->out.off = 0;
	hs->state = HS_CONNECTING;
	return 0;
}

static int hs_progress(struct rn_hs *hs)
{
	int ret;

	for (;;) {
		if (hs->deadline_ns && rn_now_ns() > hs->deadline_ns && hs->state != HS_DONE) {
			/* a stray on the listener goes quietly; a real peer's silence is news */
			if (hs->hello_ok || hs->role == RN_ROLE_SEND)
				rn_warn(RN_SUB_NET,
					RN_PFX "handshake with %s timed out after %d ms from its "
					       "first byte (NCCL_ROCE_CONNECT_TIMEOUT_MS)",
					hs->peer_str, hs->eng->cfg.connect_timeout_ms);
			hs->timed_out = 1;
			return -ETIMEDOUT;
		}
		switch (hs->state) {
		case HS_CONNECTING:
			ret = rn_oob_connect_poll(hs->fd);
			if (ret)
				return ret;
			hs->state = HS_SEND_HELLO;
			break;
		case HS_SEND_HELLO:
			ret = rn_oob_send(hs->fd, &hs->out);
			if (ret) {
				ret = hs_redial(hs, ret);
				if (ret)
					return ret;
				break; /* connecting again */
			}
			if (hs->role == RN_ROLE_SEND) {
				rn_oob_recv_reset(&hs->in);
				hs->state = HS_RECV_HELLO;
			} else {
				hs->state = HS_CHECK;
			}
			break;
		case HS_RECV_HELLO:
			ret = hs_recv_hello(hs);
			if (ret)
				ret = hs_redial(hs, ret);
			if (ret)
				return ret;
			break;
		case HS_CHECK:
			ret = hs_check(hs);
			if (ret)
				return ret;
			hs->out.len = rn_msg_encode_verdict(hs->out.data, hs->nonce, &hs->mine);
			hs->out.off = 0;
			hs->state = HS_SEND_VERDICT;
			break;
		case HS_SEND_VERDICT:
			ret = rn_oob_send(hs->fd, &hs->out);
			if (ret)
				return ret;
			rn_oob_recv_reset(&hs->in);
			hs->state = HS_RECV_VERDICT;
			break;
		case HS_RECV_VERDICT:
			ret = hs_recv_verdict(hs);
			if (ret)
				return ret;
			break;
		case HS_CONNECT_QPS:
			ret = hs_connect_qps(hs);
			if (ret)
				return ret;
			hs_after_qps(hs);
			break;
		case HS_SEND_READY:
			ret = rn_oob_send(hs->fd, &hs->out);
			if (ret)
				return ret;
			hs->state = HS_DONE;
			return 0;
		case HS_RECV_READY:
			ret = rn_oob_recv(hs->fd, &hs->in);
			if (ret)
				return ret;
			if (hs->in.hdr.type != RN_MSG_READY || hs->in.hdr.nonce != hs->nonce)
				return -EBADMSG;
			ret = rn_comm_ready_take(hs->comm, hs->in.data + RN_WIRE_HDR_LEN,
						 hs->in.hdr.len);
			if (ret)
				return ret;
			hs->state = HS_DONE;
			return 0;
		case HS_DONE:
			return 0;
		}
	}
}

/*
 * One INFO line per comm that comes up. It names the source GID index each member's QPs
 * were made with: the index moves under a running job (an address re-added, a VLAN's
 * address taking the old slot), and a log is the one place a user can see which
 * address a real HCA sends from.
 */
static void comm_ready_log(struct rn_comm *c)
{
	char more[16] = "", gids[64] = "", mems[RN_VNIC_MAX * 24] = "";
	int k, n = 0, m = 0;

	if (c->nmem > 1 || c->rmem > 1)
		snprintf(more, sizeof(more), " (vNIC %d:%d)", c->nmem, c->rmem);
	/* every member after the first ("rxe0:1+rxe1+rxe2"), and each one's GID index */
	for (k = 0; k < c->nmem && n < (int)sizeof(gids) && m < (int)sizeof(mems); k++) {
		n += snprintf(gids + n, sizeof(gids) - (size_t)n, "%s%d", k ? "," : "",
			      c->mem[k].gid_index);
		if (k)
			m += snprintf(mems + m, sizeof(mems) - (size_t)m, "+%s",
				      c->mem[k].dev->nic.ibdev);
	}
	char spares[160] = "";

	for (k = 1, n = 0; c->fo && k < c->fo->npaths && n < (int)sizeof(spares); k++)
		n += snprintf(spares + n, sizeof(spares) - (size_t)n, "%s%s:%d->%s%s",
			      k > 1 ? "," : "; spare pairs ", c->fo->path[k].mem.dev->nic.ibdev,
			      c->fo->path[k].mem.dev->nic.port, c->fo->path[k].rpeer.netdev,
			      c->fo->path[k].ok_here && c->fo->path[k].ok_there ?
				      "" :
				      " (path check failed: unused)");
	rn_info(RN_SUB_NET, RN_PFX "%s comm %s:%d%s <-> %s (%s) up: %d QP%s, %s%s, GID index %s%s",
		c->role == RN_ROLE_SEND ? "send" : "recv", c->mem[0].dev->nic.ibdev,
		c->mem[0].dev->nic.port, mems, c->peer_str, c->rpeer[0].host, c->nqps,
		c->nqps > 1 ? "s" : "", c->split ? "split" : "round-robin", more, gids, spares);
	c->last_progress_ns = rn_now_ns();
	c->last_check_ns = c->last_progress_ns;
}

/*
 * A handshake has ended with @ret: hand the comm out (0) or free everything and say why
 * once (a refusal and a timeout have said so already). A peer that broke the protocol
 * is -EPROTO whichever step noticed.
 */
static int hs_finish(struct rn_hs *hs, int ret, const char *what, struct rn_comm **out)
{
	if (ret) {
		if (ret == -ETIMEDOUT && !hs->timed_out)
			/* TCP's own bound (rn_oob.h): the peer's host stopped answering */
			rn_warn(RN_SUB_NET,
				RN_PFX "%s %s failed: %s (its host stopped "
				       "answering: no reply to TCP keepalive or SYN; host down or "
				       "unreachable)",
				what, hs->peer_str, strerror(-ret));
		else if (hs->redials && ret == -ECONNREFUSED) {
			rn_warn(RN_SUB_NET,
				RN_PFX "%s %s failed: %s before the peer's HELLO, and a new "
				       "connection was refused: its listener is gone (the peer's "
				       "process died or closed it)",
				what, hs->peer_str, strerror(ECONNRESET));
			ret = -ECONNRESET; /* the cause: the reset; the refusal only confirmed it */
		} else if (hs->redials && !hs->first_byte_ns &&
			   (ret == -ECONNRESET || ret == -EPIPE))
			rn_warn(RN_SUB_NET,
				RN_PFX
				"%s %s failed: %s before the peer's HELLO, %d times "
				"(connected again after each: a listener full of connections "
				"drops the oldest silent one, but not %d times running)",
				what, hs->peer_str, strerror(-ret), hs->redials + 1,
				hs->redials + 1);
		else if (ret != -EHOSTUNREACH && ret != -ETIMEDOUT)
			rn_warn(RN_SUB_NET, RN_PFX "%s %s failed: %s", what, hs->peer_str,
				strerror(-ret));
		if (ret == -EBADMSG)
			ret = -EPROTO;
		hs_free(hs);
		return ret;
	}
	comm_ready_log(hs->comm);
	own_add_comm(hs->comm);
	*out = hs->comm;
	hs->comm = NULL;
	hs->fd = -1;
	hs_free(hs);
	return 0;
}

/* ---- the API ---------------------------------------------------------------- */

int rn_listen(struct rn_engine *eng, int devidx, void *handle, struct rn_listen_comm **out)
{
	return rn_listen_flags(eng, devidx, handle, 0, out);
}

int rn_listen_flags(struct rn_engine *eng, int devidx, void *handle, unsigned int flags,
		    struct rn_listen_comm **out)
{
	struct rn_dev *m[RN_VNIC_MAX];
	struct rn_dev *dev = dev_of(eng, devidx);
	struct rn_listen_comm *lc;
	struct rn_handle_info hi;
	int ret;

	*out = NULL;
	if (!dev || !handle)
		return -EINVAL;
	lc = calloc(1, sizeof(*lc));
	if (!lc)
		return -ENOMEM;
	lc->eng = eng;
	lc->devidx = devidx;
	lc->flags = flags;
	lc->dev = dev;
	lc->fd = -1;
	ret = rn_oob_local_addr(dev, &eng->cfg, &lc->addr);
	if (ret)
		goto err;
	ret = rn_oob_listen(&lc->addr, &lc->fd);
	if (ret) {
		char a[80];

		rn_warn(RN_SUB_NET, RN_PFX "%s:%d: cannot listen on %s: %s", dev->nic.ibdev,
			dev->nic.port, rn_sockaddr_str(&lc->addr, a, sizeof(a)), strerror(-ret));
		goto err;
	}
	lc->nonce = rn_nonce();
	memset(&hi, 0, sizeof(hi));
	hi.addr = lc->addr;
	hi.nonce = lc->nonce;
	hi.members = rn_engine_members(eng, devidx, m); /* the connector sizes its QPs by it */
	ret = rn_handle_encode(&hi, handle, RN_HANDLE_SIZE);
	if (ret)
		goto err;
	own_add(&lc->own, eng, RN_OWN_LISTEN);
	*out = lc;
	return 0;
err:
	if (lc->fd >= 0)
		close(lc->fd);
	free(lc);
	return ret;
}

/*
 * Connect states in progress (see the top of the file). An entry is found by the
 * handle's address, the random key in its private area and the listener's nonce in
 * its public part; the address is compared as a number, never dereferenced. NCCL
 * keeps one handle's memory for one connect until it returns a comm, so another
 * entry at the same address is a connect NCCL gave up (an abort, or the memory
 * reused for a new handle): it is freed there and then.
 */
struct hs_reg {
	uintptr_t handle;
	uint64_t key;
	uint64_t listener_nonce;
	struct rn_hs *hs;
	struct hs_reg *next;
};

#define REG_BUCKETS 256
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hs_reg *reg_set[REG_BUCKETS];

struct hs_slot { /* the handle's private area, read and written with memcpy */
	uint64_t cookie;
	uint64_t key;
};

static unsigned int reg_bucket(uintptr_t h)
{
	return (unsigned int)((h >> 7) ^ (h >> 17)) % REG_BUCKETS;
}

/*
 * The connect in progress for @handle (NULL: none, start one). @slot is NULL when the
 * private area is not ours. Entries at the same address that do not match are moved
 * to *@stale for the caller to free.
 */
static struct rn_hs *reg_find(const void *handle, const struct hs_slot *slot, uint64_t nonce,
			      struct hs_reg **stale)
{
	struct rn_hs *hs = NULL;
	struct hs_reg **pp, *r;

	*stale = NULL;
	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_set[reg_bucket((uintptr_t)handle)]; (r = *pp);) {
		if (r->handle != (uintptr_t)handle) {
			pp = &r->next;
			continue;
		}
		if (slot && r->key == slot->key && r->listener_nonce == nonce) {
			hs = r->hs;
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		r->next = *stale;
		*stale = r;
	}
	pthread_mutex_unlock(&reg_lock);
	return hs;
}

static int reg_add(const void *handle, uint64_t key, struct rn_hs *hs)
{
	struct hs_reg *r = calloc(1, sizeof(*r));
	unsigned int b = reg_bucket((uintptr_t)handle);

	if (!r)
		return -ENOMEM;
	r->handle = (uintptr_t)handle;
	r->key = key;
	r->listener_nonce = hs->nonce;
	r->hs = hs;
	pthread_mutex_lock(&reg_lock);
	r->next = reg_set[b];
	reg_set[b] = r;
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

static void reg_del(const void *handle, struct rn_hs *hs)
{
	struct hs_reg **pp, *r;

	pthread_mutex_lock(&reg_lock);
	for (pp = &reg_set[reg_bucket((uintptr_t)handle)]; (r = *pp); pp = &r->next)
		if (r->hs == hs) {
			*pp = r->next;
			free(r);
			break;
		}
	pthread_mutex_unlock(&reg_lock);
}

/* Free connects NCCL gave up (reg_find's stale list), saying so at INFO. */
static void reg_free_list(struct hs_reg *r, const char *why)
{
	struct hs_reg *n;

	for (; r; r = n) {
		n = r->next;
		if (why)
			rn_info(RN_SUB_NET, RN_PFX "connect to %s abandoned (%s): freed",
				r->hs->peer_str, why);
		hs_free(r->hs);
		free(r);
	}
}

static int connect_start(struct rn_engine *eng, int devidx, void *handle, int traffic_class,
			 unsigned int flags, struct rn_hs **out)
{
	struct rn_dev *m[RN_VNIC_MAX];
	int nmem = rn_engine_members(eng, devidx, m);
	struct rn_dev *dev = nmem > 0 ? m[0] : NULL;
	struct rn_handle_info hi;
	struct rn_hs *hs;
	int k, nqps, ret;

	if (!dev)
		return -EINVAL;
	ret = rn_handle_decode(handle, RN_HANDLE_SIZE, &hi);
	if (ret) {
		if (ret == -EPROTO) /* every rank must load the same plugin version */
			rn_warn(RN_SUB_NET,
				RN_PFX "connect: the listener runs another version of "
				       "nccl-net-roce (handshake version %u expected): load the "
				       "same plugin on every host",
				RN_WIRE_VERSION);
		else
			rn_warn(RN_SUB_NET, RN_PFX "connect: the handle is not ours (%s)",
				strerror(-ret));
		return ret == -EPROTO ? -EPROTO : -EINVAL;
	}
	for (k = 0; k < nmem; k++)
		if (m[k]->nic.gid_index < 0) {
			rn_warn(RN_SUB_NET, RN_PFX "%s:%d has no usable GID", m[k]->nic.ibdev,
				m[k]->nic.port);
			return -ENODEV;
		}
	hs = calloc(1, sizeof(*hs));
	if (!hs)
		return -ENOMEM;
	hs->role = RN_ROLE_SEND;
	hs->fd = -1;
	hs->eng = eng;
	hs->devidx = devidx;
	hs->traffic_class = traffic_class;
	hs->flags = flags;
	hs->nonce = hi.nonce;
	hs->peer_addr = hi.addr;
	rn_sockaddr_str(&hi.addr, hs->peer_str, sizeof(hs->peer_str));
	/* no deadline until the peer's first byte: its accept may come any time later */
	/* as net_ib: QPs per connection for each member of the larger end */
	nqps = RN_MAX(eng->cfg.qps_per_conn, 1) * RN_MAX(nmem, hi.members);
	if (nqps > RN_MAX_QPS) {
		static atomic_int warned; /* once per process: the same for every connection */
		int per = RN_MAX_QPS / RN_MAX(nmem, hi.members);

		if (!atomic_exchange(&warned, 1))
			rn_warn(RN_SUB_NET,
				RN_PFX "NCCL_IB_QPS_PER_CONNECTION=%d over %d NIC%s: "
				       "using %d (at most %d QPs a connection)",
				eng->cfg.qps_per_conn, RN_MAX(nmem, hi.members),
				RN_MAX(nmem, hi.members) > 1 ? "s" : "", per, RN_MAX_QPS);
		nqps = per * RN_MAX(nmem, hi.members);
	}
	/*
	 * The SYN goes out first and the QPs are made while it travels: the listener
	 * accepts our socket when its kernel has the handshake, and a socket that stays
	 * silent there is a stranger, so the HELLO should follow at once. Made in this
	 * order, the HELLO goes out in this very call when the peer answers within the
	 * QPs' creation (a LAN round trip always does), not on NCCL's next call.
	 */
	ret = rn_comm_members_follow(eng,
				     devidx); /* before the SYN: a refused comm sends nothing */
	if (ret)
		goto err;
	if (rn_oob_local_addr(dev, &eng->cfg, &hs->local_addr))
		memset(&hs->local_addr, 0, sizeof(hs->local_addr));
	ret = rn_oob_connect(&hi.addr, &hs->local_addr, &hs->fd);
	if (ret) {
		rn_warn(RN_SUB_NET, RN_PFX "connect to %s failed: %s", hs->peer_str,
			strerror(-ret));
		goto err;
	}
	errno = 0; /* the connect's EINPROGRESS is no reason of rn_comm_create's */
	hs->comm = rn_comm_create(eng, devidx, RN_ROLE_SEND, nqps, hi.members, flags);
	if (!hs->comm) {
		ret = errno ? -errno : -EIO;
		goto err;
	}
	ret = rn_comm_spares_create(hs->comm, rn_comm_spares_wanted(eng, nmem, hi.members, flags));
	if (ret)
		goto err;
	hs->comm->fd = hs->fd;
	hs->comm->peer_addr = hi.addr;
	snprintf(hs->comm->peer_str, sizeof(hs->comm->peer_str), "%s", hs->peer_str);
	hs_hello(hs, flags & RN_CONN_TC_FORCED ? traffic_class : tc_of(&eng->cfg, traffic_class),
		 sl_of(&eng->cfg, traffic_class));
	hs->state = HS_CONNECTING;
	*out = hs;
	return 0;
err:
	hs_free(hs);
	return ret;
}

static int connect_flags(struct rn_engine *eng, int devidx, void *handle, int traffic_class,
			 unsigned int flags, struct rn_send_comm **out)
{
	struct rn_handle_info hi;
	struct hs_slot slot;
	struct hs_reg *stale;
	struct rn_hs *hs = NULL;
	int ret;

	*out = NULL;
	if (!eng || !handle)
		return -EINVAL;
	memcpy(&slot, (char *)handle + RN_HANDLE_PUBLIC, sizeof(slot));
	if (slot.cookie == RN_CONN_COOKIE && !rn_handle_decode(handle, RN_HANDLE_SIZE, &hi))
		hs = reg_find(handle, &slot, hi.nonce, &stale);
	else
		hs = reg_find(handle, NULL, 0, &stale);
	if (stale)
		reg_free_list(stale, "its handle memory now holds another handle");
	if (!hs) {
		/* a fresh handle, or private bytes that are not ours: start afresh */
		ret = connect_start(eng, devidx, handle, traffic_class, flags, &hs);
		if (ret)
			return ret;
		slot.cookie = RN_CONN_COOKIE;
		slot.key = rn_nonce();
		ret = reg_add(handle, slot.key, hs);
		if (ret) {
			hs_free(hs);
			return ret;
		}
		memcpy((char *)handle + RN_HANDLE_PUBLIC, &slot, sizeof(slot));
	}
	ret = hs_progress(hs);
	if (ret == -EAGAIN)
		return 0;
	reg_del(handle, hs);
	memset((char *)handle + RN_HANDLE_PUBLIC, 0, sizeof(slot));
	return hs_finish(hs, ret, "connect to", (struct rn_comm **)out);
}

int rn_connect(struct rn_engine *eng, int devidx, void *handle, int traffic_class,
	       struct rn_send_comm **out)
{
	return connect_flags(eng, devidx, handle, traffic_class, 0, out);
}

int rn_connect_flags(struct rn_engine *eng, int devidx, void *handle, int traffic_class,
		     unsigned int flags, struct rn_send_comm **out)
{
	return connect_flags(eng, devidx, handle, traffic_class, flags, out);
}

/* Drop the stranger @hs: @ret says why (0: evicted to make room). */
static void hs_drop(struct rn_listen_comm *lc, struct rn_hs *hs, int ret)
{
	int tmo = lc->eng->cfg.connect_timeout_ms;
	unsigned int held = 0;
	char why[128], me[80];

	if (!ret)
		snprintf(why, sizeof(why),
			 "%d handshakes in progress; the oldest without a "
			 "valid HELLO makes room",
			 RN_MAX_PENDING);
	else if (ret == -ETIMEDOUT)
		snprintf(why, sizeof(why), "no complete HELLO within %d ms of its first byte",
			 RN_MIN(tmo, RN_HS_HELLO_MS));
	else
		snprintf(why, sizeof(why), "%s", strerror(-ret));
	rn_sockaddr_str(&lc->addr, me, sizeof(me));
	if (rn_ratelimit_peer(&hs->peer_addr, rn_now_ns(), RN_DROP_WARN_NS, &held))
		rn_warn(RN_SUB_NET,
			RN_PFX "listener %s %s: dropped a connection from %s before a valid "
			       "handshake: %s (%u more from this address in the last minute; "
			       "those within a minute go to INFO)",
			lc->dev->nic.ibdev, me, hs->peer_str, why, held);
	else
		rn_info(RN_SUB_NET,
			RN_PFX "listener %s %s: dropped a connection from %s before "
			       "a valid handshake: %s",
			lc->dev->nic.ibdev, me, hs->peer_str, why);
	hs_free(hs);
}

static void pend_drop(struct rn_listen_comm *lc, int i, int ret)
{
	hs_drop(lc, lc->pend[i], ret);
	lc->pend[i] = NULL;
}

/*
 * A free slot, or the one whose stranger is to make room: the oldest silent one, else
 * the oldest that spoke (dropped when @evict); -1 when every slot is a real peer's or
 * a stranger's accepted less than RN_HS_GRACE_MS ago. A real peer's HELLO may come a
 * while after its socket is accepted (the QPs are made while its SYN travels, and NCCL
 * calls its connect again only when its proxy thread comes round), and a burst of real
 * connects must not evict its own first ones before they have spoken: while only young
 * strangers hold the slots, new sockets wait in the kernel's queue, where the HELLO of a
 * real one arrives, to be read when it is accepted.
 */
static int pend_slot(struct rn_listen_comm *lc, int evict)
{
	uint64_t now = rn_now_ns(), grace = ms_ns(RN_HS_GRACE_MS);
	uint64_t young = now > grace ? now - grace : 0;
	int i, old = -1;

	for (i = 0; i < RN_MAX_PENDING; i++) {
		struct rn_hs *hs = lc->pend[i], *o = old >= 0 ? lc->pend[old] : NULL;

		if (!hs)
			return i;
		if (hs->hello_ok || hs->accept_ns > young)
			continue;
		/* silent before talkative, then by age */
		if (!o || (!hs->first_byte_ns && o->first_byte_ns) ||
		    (!hs->first_byte_ns == !o->first_byte_ns && hs->accept_ns < o->accept_ns))
			old = i;
	}
	if (old >= 0 && evict)
		pend_drop(lc, old, 0);
	return old;
}

static struct rn_hs *pend_new(struct rn_listen_comm *lc, int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct rn_hs *hs = calloc(1, sizeof(*hs));

	if (!hs)
		return NULL;
	hs->role = RN_ROLE_RECV;
	hs->fd = fd;
	hs->eng = lc->eng;
	hs->devidx = lc->devidx;
	hs->flags = lc->flags;
	hs->nonce = lc->nonce;
	hs->state = HS_RECV_HELLO;
	hs->accept_ns = rn_now_ns();
	/* no deadline while it is silent: it keeps its slot until another needs it */
	memset(&ss, 0, sizeof(ss));
	if (!getpeername(fd, (struct sockaddr *)&ss, &len))
		hs->peer_addr = ss;
	rn_sockaddr_str(&hs->peer_addr, hs->peer_str, sizeof(hs->peer_str));
	rn_oob_recv_reset(&hs->in);
	return hs;
}

int rn_accept(struct rn_listen_comm *lc, struct rn_recv_comm **out)
{
	int i, n, fd, ret;

	*out = NULL;
	if (!lc)
		return -EINVAL;
	/*
	 * The handshakes in progress first: a HELLO that came since the last call makes
	 * its socket a real peer's before any new socket could want its slot.
	 */
	for (i = 0; i < RN_MAX_PENDING; i++) {
		struct rn_hs *hs = lc->pend[i];

		if (!hs)
			continue;
		ret = hs_progress(hs);
		if (ret == -EAGAIN)
			continue;
		if (ret && !hs->hello_ok) {
			pend_drop(lc, i, ret);
			continue;
		}
		lc->pend[i] = NULL;
		return hs_finish(hs, ret, "accept from", (struct rn_comm **)out);
	}
	/*
	 * Then waiting sockets, at most RN_MAX_PENDING a call, each read before the next
	 * accept: a real peer's queued HELLO makes it a real handshake before any newer
	 * socket could take its slot, and a flood of connect+close is dropped at once.
	 * While every slot holds a real peer's handshake or a young stranger (pend_slot),
	 * new sockets wait in the kernel's queue instead.
	 */
	for (n = 0; n < RN_MAX_PENDING && pend_slot(lc, 0) >= 0; n++) {
		struct rn_hs *hs;

		if (rn_oob_accept(lc->fd, &fd))
			break;
		hs = pend_new(lc, fd);
		if (!hs) {
			close(fd); /* as if the peer had gone: a real one fails its connect */
			break;
		}
		ret = hs_progress(hs);
		if (ret == -EAGAIN) {
			i = pend_slot(lc, 1);
			lc->pend[i] = hs;
			continue;
		}
		if (ret && !hs->hello_ok) {
			hs_drop(lc, hs, ret);
			continue;
		}
		return hs_finish(hs, ret, "accept from", (struct rn_comm **)out);
	}
	return 0;
}

static int listen_free(struct rn_listen_comm *lc)
{
	int i, n = 0;

	for (i = 0; i < RN_MAX_PENDING; i++) {
		n += !!lc->pend[i];
		hs_free(lc->pend[i]);
	}
	if (lc->fd >= 0)
		close(lc->fd);
	free(lc);
	return n;
}

int rn_close_listen(struct rn_listen_comm *lc)
{
	if (!lc)
		return 0;
	if (own_del(&lc->own, RN_OWN_LISTEN)) {
		rn_warn(RN_SUB_NET,
			RN_PFX "closeListen: %p is no open listener of ours (closed "
			       "twice, or after the last finalize closed it)",
			(void *)lc);
		return -EINVAL;
	}
	listen_free(lc);
	return 0;
}

static int close_comm(struct rn_comm *c, const char *what)
{
	if (!c)
		return 0;
	if (own_del(&c->own, RN_OWN_COMM)) {
		rn_warn(RN_SUB_NET,
			RN_PFX "%s: %p is no open comm of ours (closed twice, or "
			       "after the last finalize closed it)",
			what, (void *)c);
		return -EINVAL;
	}
	rn_comm_free(c);
	return 0;
}

int rn_close_send(struct rn_send_comm *sc)
{
	return close_comm(sc ? &sc->c : NULL, "closeSend");
}

int rn_close_recv(struct rn_recv_comm *rc)
{
	return close_comm(rc ? &rc->c : NULL, "closeRecv");
}

/* Count (and with @take, unlink into @out) what @eng owns. */
static void own_collect(struct rn_engine *eng, int take, struct rn_own **out,
			struct hs_reg **hs_out, struct rn_conn_counts *n)
{
	struct rn_own **pp, *o;
	struct hs_reg **rp, *r;
	int b, i;

	memset(n, 0, sizeof(*n));
	pthread_mutex_lock(&own_lock);
	for (b = 0; b < OWN_BUCKETS; b++)
		for (pp = &own_set[b]; (o = *pp);) {
			if (o->eng != eng) {
				pp = &o->next;
				continue;
			}
			if (o->kind == RN_OWN_LISTEN) {
				struct rn_listen_comm *lc = rn_container_of(o,
									    struct rn_listen_comm,
									    own);

				n->listeners++;
				for (i = 0; i < RN_MAX_PENDING; i++)
					n->accepting += !!lc->pend[i];
			} else {
				n->comms++;
			}
			if (!take) {
				pp = &o->next;
				continue;
			}
			*pp = o->next;
			o->next = *out;
			*out = o;
		}
	pthread_mutex_unlock(&own_lock);
	pthread_mutex_lock(&reg_lock);
	for (b = 0; b < REG_BUCKETS; b++)
		for (rp = &reg_set[b]; (r = *rp);) {
			if (r->hs->eng != eng) {
				rp = &r->next;
				continue;
			}
			n->connecting++;
			if (!take) {
				rp = &r->next;
				continue;
			}
			*rp = r->next;
			r->next = *hs_out;
			*hs_out = r;
		}
	pthread_mutex_unlock(&reg_lock);
}

void rn_conn_count(struct rn_engine *eng, struct rn_conn_counts *n)
{
	own_collect(eng, 0, NULL, NULL, n);
}

void rn_conn_close_all(struct rn_engine *eng, struct rn_conn_counts *n)
{
	struct rn_own *list = NULL, *o, *next;
	struct hs_reg *hs = NULL;

	own_collect(eng, 1, &list, &hs, n);
	/* connects first: their comms hold event references, as the handed-out ones do */
	reg_free_list(hs, NULL);
	for (o = list; o; o = next) {
		next = o->next;
		if (o->kind == RN_OWN_LISTEN)
			listen_free(rn_container_of(o, struct rn_listen_comm, own));
		else
			rn_comm_free(rn_container_of(o, struct rn_comm, own));
	}
}
