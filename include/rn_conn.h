/* SPDX-License-Identifier: MIT */
/*
 * Comms and their queue pairs: what src/conn.c builds (handshake, QPs INIT ->
 * RTR -> RTS) and src/xfer.c drives (FIFO, requests, completions).
 *
 * One connection = one send comm (rn_connect's side) + one recv comm (rn_accept's
 * side), nqps RC QPs each, one CQ per member NIC. Control memory (the FIFO the
 * receiver writes its clear-to-send entries into, the sizes array of multi-receives,
 * the flush target) is one page-aligned block per comm, registered on every member.
 *
 * A comm on a vNIC (NIC fusion) has several member NICs; a physical device is a
 * vNIC of one. QP q belongs to local member q % nmem and is connected to the peer's
 * member q % rmem; nqps = max(nmem, rmem) x NCCL_IB_QPS_PER_CONNECTION, so every
 * member on both sides carries data (with 2 members against 1, both of ours talk to
 * the peer's one). net_ib sizes it the same way (nqps = max of both ends' device
 * counts x QPs per connection, striped over the devices).
 *
 * wr_id carries what a completion belongs to in its low 3 bits (a completion in
 * error has no valid opcode, so the type must come from wr_id): a send slot, a
 * receive request (its CTS write), a flush request, or a posted receive (QP index
 * in the upper bits).
 */
#ifndef RN_CONN_H
#define RN_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rn_dev.h"
#include "rn_net.h"
#include "rn_oob.h"
#include "rn_verbs.h"
#include "rn_wire.h"

#define RN_SLOTS RN_MAX_REQUESTS /* FIFO slots = receives in flight */
/*
 * Receives pre-posted per receiver QP (>= RN_SLOTS: each slot's data ends in one
 * WRITE_WITH_IMM a QP, re-posted as polled). 44, with RN_CTS_SQ_DEPTH's 31 and the flush
 * reads' RN_SLOTS + 2, is a receive CQ of 109 entries, under the providers' rounding to
 * 128 (rxe's RQ is 64 WQEs).
 */
#define RN_RECV_WRS 44
/*
 * Send WRs per data QP (capped by the device), a sender's spare pairs' as its own pair's.
 * What NCCL keeps in flight on a connection is NCCL_STEPS (8) slots: single receives take
 * one WR a slot, so all 32 FIFO slots fit; slots of 8 receives (PXN's shared comms) take 9
 * with their sizes write, so 6 fit, which is still far more bytes than a link holds in
 * flight (NCCL's default step is 512 KiB). Beyond that a caller meets back-pressure (rn_isend
 * hands out no request until completions free the queue), and a move's resend that does
 * not fit goes as they do (resend_pass). 55 because the providers round a queue up to a
 * power of two after adding one (rxe its SQ and CQ, mlx5 its CQ): 55 + RN_FO_RECV_WRS is a
 * CQ of 64 entries, and rxe's SQ 64 WQEs of 256 bytes. Each queue is mapped into the
 * process, so resident, and 1,024 connections pay it 1,024 times: at 119 WRs (CQ 128, SQ
 * 128) a connection held 24 KiB more under rxe, 8 KiB more under mlx5.
 */
#define RN_SQ_DEPTH 55
/*
 * Send WRs of an RMA comm's QP (src/rma.c): NCCL may keep RN_RMA_INFLIGHT (32) requests in
 * flight to a rank, each a put and its signal (64 WRs), and a request beyond the queue is
 * refused as NCCL's misuse, not waited for. 119 + RN_FO_RECV_WRS is a CQ of 127, under the
 * providers' rounding.
 */
#define RN_RMA_SQ_DEPTH 119
/*
 * Send WRs per receiver QP: its CTS writes. They go unsignaled but one in 15 (src/xfer.c,
 * cts_every: at most half the queue), which retires those before it, so the queue holds
 * at most the 15 of a signalled write whose completion is on its way and the 14 after it,
 * however many receives are posted (receives posted while one before them is outstanding
 * share a write besides: cts_flush). A full queue is back-pressure: rn_irecv hands out no
 * request until a completion frees it. A move's rewind writes the receives not complete
 * in runs of contiguous slots, a WRITE a run, and a RESUME: at most 18 WRs on a new pair.
 * 31 because the providers round a queue up to a power of two after adding one: rxe's SQ
 * is 32 WQEs (256 bytes each with a 32-byte CTS entry inline, 512 with a 64-byte one), 8
 * KiB, against 16 at 48; mlx5's 4 KiB against 8. A receiver's spare keeps this depth, but
 * posts its CTS entries from the control block, not inline: an inline CTS entry doubles
 * mlx5's WQE (2 basic blocks, not 1) and a 64-byte one rxe's, and after a move one DMA
 * read per CTS is a small price.
 */
#define RN_CTS_SQ_DEPTH 31
#define RN_IMM_ERR 0xffffffffu /* "your receive was too small": no data follows */
#define RN_SPLIT_ALIGN 128     /* chunk alignment when a message spans QPs */

enum rn_wr_kind {
	RN_WR_SEND = 1,  /* wr_id = struct rn_send_slot * | 1 */
	RN_WR_CTS = 2,   /* wr_id = WRs this completion retires << 3 | 2 (0: unsignaled) */
	RN_WR_FLUSH = 3, /* wr_id = struct rn_req * | 3 */
	RN_WR_RECV = 4,  /* wr_id = qp index << 3 | 4 */
	RN_WR_CTRL = 5,  /* wr_id = path << 3 | 5: a failover message (src/failover.c) */
	RN_WR_RMA = 6,   /* wr_id = struct rn_rma_req * | 6: an RMA op's last WR (src/rma.c) */
};
#define RN_WR_KIND(id) ((int)((id) & 7))

/*
 * @n receives on each of @qps[0..@nqps), without a buffer (WRITE_WITH_IMM consumes one and
 * the immediate is all it carries), wr_id the QP's index. 0 or -errno.
 */
static inline int rn_post_recvs(struct ibv_qp *const *qps, int nqps, int n)
{
	int q, i, ret;

	for (q = 0; q < nqps; q++)
		for (i = 0; i < n; i++) {
			struct ibv_recv_wr wr = { 0 }, *bad;

			wr.wr_id = (uint64_t)q << 3 | RN_WR_RECV;
			ret = rn_verbs_err(rn_verbs.post_recv(qps[q], &wr, &bad));
			if (ret)
				return ret;
		}
	return 0;
}
#define RN_WR_PTR(id) ((void *)(uintptr_t)((id) & ~(uint64_t)7))

/*
 * A clear-to-send entry, written by the receiver into the sender's FIFO: a buffer, its size
 * (one beyond 4 GiB says 4 GiB - 1: a send is at most 2 GiB), its tag, the receive's buffer
 * count, the buffer's rkey on each of the receiver's NICs (as net_ib's rkeys[]), and last
 * the slot's sequence: the sender trusts the other fields once seq shows it. Two sizes
 * (wire version 8, the connection's cts_len): 32 bytes for a receiver of one or two NICs
 * (a move to a spare NIC writes the entries again with that NIC's key), 64 for a larger
 * vNIC. The fields before rkey sit at the same offsets in both, and seq is an entry's last
 * 4 bytes (rn_cts_seq). The FIFO and its staging are each RN_SLOTS * RN_MAX_RECVS entries:
 * 8 KiB of 32-byte ones, so the control block each end registers (on each of its NICs) is
 * 3 pages, not 6 (net_ib's FIFO alone is 32 KiB).
 */
struct rn_cts {
	uint64_t addr;
	uint32_t size;
	int32_t tag;
	uint16_t nreqs;
	uint16_t rsvd;
	uint32_t rkey[]; /* one per receiver NIC; then seq, in the entry's last 4 bytes */
};
#define RN_CTS_LEN(nrkeys) ((nrkeys) <= 2 ? 32 : 64)
_Static_assert(offsetof(struct rn_cts, rkey) + (2 + 1) * sizeof(uint32_t) == RN_CTS_LEN(2),
	       "two keys and seq fill a 32-byte CTS entry");
_Static_assert(offsetof(struct rn_cts, rkey) + (RN_VNIC_MAX + 1) * sizeof(uint32_t) <=
		       RN_CTS_LEN(3),
	       "a vNIC's keys and seq fit a 64-byte CTS entry");

/* Entry @i of slot @k's row in a FIFO or staging of @len-byte entries. */
static inline struct rn_cts *rn_cts_at(void *fifo, int len, uint32_t k, int i)
{
	return (struct rn_cts *)((char *)fifo +
				 ((size_t)(k % RN_SLOTS) * RN_MAX_RECVS + (size_t)i) * (size_t)len);
}

/* The sequence of @len-byte entry @e: its last 4 bytes. */
static inline uint32_t *rn_cts_seq(struct rn_cts *e, int len)
{
	return (uint32_t *)((char *)e + len - sizeof(uint32_t));
}

enum rn_req_type { RN_REQ_FREE = 0, RN_REQ_SEND, RN_REQ_RECV, RN_REQ_FLUSH };

struct rn_comm;
struct rn_send_slot;

struct rn_req {
	enum rn_req_type type;
	struct rn_comm *comm;
	int done;
	int pending; /* completions still expected */
	int n;
	int sizes[RN_MAX_RECVS];
	uint32_t seq; /* recv: absolute slot index */
	/* send */
	const void *data;
	size_t size;
	uint32_t lkey;                   /* member 0's */
	struct rn_mr *mr;                /* the other members' keys (vNIC); a flush's buffer */
	struct rn_mr *mrs[RN_MAX_RECVS]; /* recv: each buffer's (a failover finds its keys again) */
	struct rn_send_slot *slot;
	struct rn_req *next_free;
};

struct rn_send_slot {
	uint32_t seq;   /* the FIFO sequence this record serves (0: none) */
	int n, matched, posted;
	int pending;    /* signalled WRs not completed */
	uint64_t bytes; /* payload posted for this slot (watchdog) */
	struct rn_req *reqs[RN_MAX_RECVS];
};

struct rn_evdev;    /* src/events.c */
struct rn_ctr_snap; /* src/counters.c */

/* What the engine owns (src/conn.c): a listener or a comm handed out to NCCL. */
enum rn_own_kind { RN_OWN_LISTEN = 1, RN_OWN_COMM };
struct rn_own {
	struct rn_own *next; /* its bucket in the owner set */
	struct rn_engine *eng;
	int kind;
};

/* One NIC of a comm's device (the only one of a physical device). */
struct rn_member {
	struct rn_dev *dev;
	struct rn_evdev *ev;
	struct ibv_cq *cq;      /* its QPs' completions */
	struct ibv_mr *ctrl_mr; /* the control block on its PD */
	/* the source GID index its QPs were made with: resolved by address when the comm was
	 * made (the device's own index moves under a running job, GID_CHANGE) */
	int gid_index;
	int gid_moved_said; /* gid-moved logged for this member (once a comm) */
};

/*
 * What a comm is for (rn_connect_flags / rn_listen_flags; 0 = NCCL's net traffic):
 * RN_CONN_RMA: one-sided traffic of the RMA backend (src/rma.c): its QPs take the peer's
 * RDMA READs and atomics as well as its WRITEs, with as many READs/atomics in flight as
 * the device allows; RN_CONN_TC_FORCED: the traffic class given is used as it is
 * (NCCL_GIN_IB_TC over NCCL_IB_TC).
 */
#define RN_CONN_RMA 0x1u
#define RN_CONN_TC_FORCED 0x2u
#define RN_RMA_QP_ACCESS \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/*
 * Failover (src/failover.c): a comm on one NIC keeps spare NIC pairs connected beside
 * its own, each a sibling NIC here and one at the peer (spare j of one end pairs with
 * spare j of the other), with as many QPs as the comm. Path 0 is the pair the comm was
 * made on. The comm's own fields (mem[0], rpeer[0], qps[], the peer's control rkey,
 * the flush QP) always hold the pair in use; a move swaps them with the chosen path's.
 */
enum rn_path_state { RN_PATH_SPARE = 1, RN_PATH_DEAD, RN_PATH_ARMING };

struct rn_recv_comm;
struct rn_send_comm;

struct rn_path {
	int state;                  /* the active path's slot keeps its last state */
	struct rn_member mem;       /* our NIC of the pair */
	struct rn_peer_facts rpeer; /* the peer's */
	uint32_t rctrl_rkey;        /* the peer's control block on its NIC of the pair */
	struct ibv_qp *qps[RN_MAX_QPS];
	int sq_cap;                 /* send WRs each of them holds (the comm's sq_cap in use) */
	int cts_inline;             /* receiver: bytes a CTS write may carry inline on them */
	struct ibv_qp *flush_qp;    /* receiver, when it flushes GPU receives */
	int ok_here, ok_there;      /* the path check passed here / at the peer */
	char why[160];              /* why it died */
	/* recovery (src/failover.c): what re-arming its QPs needs, and when to try */
	uint32_t rqpn[RN_MAX_QPS]; /* the peer's QP numbers on this pair */
	int planned;               /* left for a recovered pair, not failed */
	int gid_was;               /* the GID index before its last re-arm */
	uint64_t up_since_ns;      /* our NIC of it seen up since (0: down, or not looked) */
	uint64_t next_try_ns;      /* no re-arm before this */
	uint64_t backoff_ms;       /* the wait after a refused re-arm, doubling */
};

/*
 * The data path's steps a move takes (src/xfer.c: rn_xfer_fo_hooks), reached through
 * the comm so that src/failover.c, which src/xfer.c calls, calls nothing back by name.
 */
struct rn_fo_hooks {
	void (*handle_wc)(struct rn_comm *c, int k, const struct ibv_wc *wc);
	int (*recv_rewind)(struct rn_recv_comm *rc, uint32_t *seqs, int *n);
	int (*send_resume)(struct rn_send_comm *sc, const uint32_t *seqs, int n, uint32_t tail,
			   int *nresent, uint64_t *resent);
};

/*
 * The QP factory's step a recovery takes (src/comm.c: pair @j's QPs, not the pair in use,
 * through RESET to RTS again, with the GID index of its NIC's address now (the one before
 * in @old_gid), its CQ drained and its receives posted as at connect. 0 or -errno
 * (-EADDRNOTAVAIL: the address is gone). Reached through the comm, as the hooks above.
 */
typedef int (*rn_rearm_fn)(struct rn_comm *c, int j, int *old_gid);

struct rn_failover {
	const struct rn_fo_hooks *hooks;
	rn_rearm_fn rearm_path;
	int npaths;           /* path[0] (the comm's own pair) and the spares */
	int active;           /* the path in the comm's fields */
	struct rn_path path[1 + RN_SPARES_MAX];
	uint32_t epoch;       /* moves agreed (the receiver counts, the sender follows) */
	uint32_t seen;        /* sender: the newest RESUME applied */
	uint64_t since_ns;    /* the current move's detection */
	uint64_t deadline_ns; /* sender: the RESUME is due by then */
	int quiesced;         /* sender: the old pair is in ERR and drained */
	int moves;            /* moves made */
	int exhausted;        /* no pair was left (said): the comm is judged as without spares */
	uint64_t resent;      /* bytes sent again, all moves */
	/* recovery: one pair re-armed at a time (the receiver asks, the sender answers) */
	int tc, sl; /* the QPs' traffic class and service level */
	int rearm;  /* the pair being re-armed, -1 none */
	/* receiver: 0 its path check, 1 asked (the sender re-arms first), 2 its own end
	 * re-armed and the probe sent */
	int rearm_step;
	uint32_t rearm_gen;         /* its request's number (a late answer is dropped) */
	uint32_t rearm_epoch;       /* sender: the receiver's moves when it asked */
	uint64_t rearm_since_ns;    /* receiver: the re-arm began (the WARN's time) */
	uint64_t rearm_deadline_ns; /* receiver: the answer is due by then */
	struct rn_conn_check *chk;  /* the path check of that pair, while it runs */
	int back;                   /* sender: the receiver asked to move back to path 0 */
	uint64_t back_next_ns;      /* receiver: when to ask for it (again) */
	unsigned int back_asks;     /* receiver: asked since the last move (each waits longer) */
	int recoveries;             /* moves back made */
};

/*
 * The control block's failover mailboxes, 176 bytes each (a message is at most 172, and
 * 176 keeps a receiver of one or two NICs in 3 pages: wire version 9; 256 before took 4):
 * per path an inbox and an outbox for the moves (MOVE_REQ, RESUME; imm RN_IMM_CTRL), and
 * another pair for recovery's messages (imm RN_IMM_REC), so that a recovery message sent
 * on the pair a RESUME just went over cannot overwrite it before the peer reads it.
 */
/* where the sizes start: after the FIFO or staging of @len-byte CTS entries */
#define RN_CTRL_SIZES_OFF(len) ((size_t)RN_SLOTS * RN_MAX_RECVS * (size_t)(len))
/* after the sizes and the 64-byte flush target; both ends lay it out with the same cts_len */
#define RN_CTRL_FO_OFF(len) \
	(RN_CTRL_SIZES_OFF(len) + (size_t)RN_SLOTS * RN_MAX_RECVS * sizeof(int32_t) + 64)
#define RN_FO_BOX 176
#define RN_CTRL_INBOX(len, p) (RN_CTRL_FO_OFF(len) + (size_t)(p) * RN_FO_BOX)
#define RN_CTRL_OUTBOX(len, p) (RN_CTRL_FO_OFF(len) + (size_t)(1 + RN_SPARES_MAX + (p)) * RN_FO_BOX)
#define RN_CTRL_RINBOX(len, p) \
	(RN_CTRL_FO_OFF(len) + (size_t)(2 * (1 + RN_SPARES_MAX) + (p)) * RN_FO_BOX)
#define RN_CTRL_ROUTBOX(len, p) \
	(RN_CTRL_FO_OFF(len) + (size_t)(3 * (1 + RN_SPARES_MAX) + (p)) * RN_FO_BOX)
#define RN_CTRL_FO_LEN ((size_t)4 * (1 + RN_SPARES_MAX) * RN_FO_BOX)
_Static_assert(RN_FO_BOX % 16 == 0, "each mailbox 16-byte aligned, as the block");
_Static_assert(RN_CTRL_FO_OFF(32) + RN_CTRL_FO_LEN <= 3 * 4096,
	       "the control block of 32-byte CTS entries fits 3 pages (each NIC registers it)");
#define RN_IMM_CTRL 0xfffffffeu /* a failover message landed in the inbox */
/*
 * The checksum of a control record's first @len bytes (whole 32-bit words), FNV-1a style
 * from @seed: a record the peer overwrites while we read it fails it (src/failover.c,
 * src/vfail.c; each with a seed of its own, so that one's record is never the other's).
 */
static inline uint32_t rn_ctrl_sum(const void *rec, size_t len, uint32_t seed)
{
	const uint32_t *w = (const uint32_t *)rec;
	size_t i;

	for (i = 0; i < len / 4; i++)
		seed = (seed ^ w[i]) * 16777619u;
	return seed;
}
#define RN_IMM_REC 0xfffffffdu /* a recovery message landed in the recovery inbox */
#define RN_FO_RECV_WRS 8       /* receives on a sender's spare QP (RESUMEs) */
/* a sender's CQ of 64 entries once the provider adds one and rounds (see RN_SQ_DEPTH) */
_Static_assert(RN_SQ_DEPTH + RN_FO_RECV_WRS < 64, "a sender's CQ stays under 64 entries");

struct rn_comm {
	struct rn_own own;  /* set while NCCL holds it (between hand-out and close) */
	int role;           /* enum rn_role */
	unsigned int flags; /* RN_CONN_* */
	struct rn_engine *eng;
	int nmem;           /* our member NICs */
	struct rn_member mem[RN_VNIC_MAX];
	int rmem;           /* the peer's */
	struct rn_peer_facts rpeer[RN_VNIC_MAX]; /* the peer's members (0: the one it names) */
	uint8_t qp_mem[RN_MAX_QPS];              /* QP q's member here (q % nmem) */
	uint8_t qp_rmem[RN_MAX_QPS];             /* and at the peer (q % rmem) */
	int nqps;
	struct ibv_qp *qps[RN_MAX_QPS];
	int sq_used[RN_MAX_QPS];
	int sq_cap;
	int split;        /* NCCL_IB_SPLIT_DATA_ON_QPS */
	uint64_t max_msg; /* largest single WR */
	int flush_enabled;
	/* control block */
	void *ctrl;
	size_t ctrl_len;
	int cts_len; /* bytes of a CTS entry: RN_CTS_LEN of the receiver's NICs (rn_cts) */
	/* the peer */
	int fd; /* OOB socket, kept to notice a dead peer */
	struct sockaddr_storage peer_addr;
	char peer_str[80];
	/* health */
	int err;                     /* sticky -errno: every later call fails with it */
	int wc_status;               /* the first failed completion's ibv_wc_status, 0 none */
	int async_err;               /* set by the event thread (atomic) */
	int outstanding;             /* signalled WRs in flight (watchdog) */
	uint16_t qp_out[RN_MAX_QPS]; /* and per data QP */
	uint64_t qp_wait_ns
		[RN_MAX_QPS]; /* since when QP q waits for its next completion (0: not seen) */
	uint64_t outstanding_bytes; /* payload of the send slots in flight (watchdog) */
	uint64_t last_progress_ns;
	uint64_t last_check_ns;
	uint64_t stall_ns;       /* watchdog bound */
	uint64_t port_grace_ns;  /* a port down longer than this fails the comm */
	unsigned int idle;
	uint64_t idle_since_ns;  /* the back-off's clock: this wait's first yield, 0 none */
	unsigned long idle_seen; /* the thread's progress count at the last look */
	int want_cts;            /* send: isend waits for the receiver */
	/* what a failure is judged against (src/counters.c, src/events.c) */
	uint64_t created_ns;
	uint64_t gid_check_ns;    /* the last look at the GID table (slow checks) */
	struct rn_ctr_snap *ctr0; /* every local RoCE NIC's counters at creation */
	/* failover (src/failover.c): NULL without spare pairs */
	struct rn_failover *fo;
	struct rn_vfail *vf;    /* a vNIC comm's member pairs out (src/vfail.c): NULL without */
	int qp_any;             /* QP q is not on member q % nmem (a vNIC that lost a pair) */
	int moving;             /* send side: waiting for the receiver's RESUME */
	int draining;           /* a move takes the old pair's last completions */
	struct rn_dev *reg_dev; /* the NIC NCCL's registrations are made on (mem[0] at creation) */
	uint64_t rctrl_addr;    /* the peer's control block (its mailboxes) */
};

struct rn_send_comm {
	struct rn_comm c;
	void *fifo; /* RN_SLOTS rows of RN_MAX_RECVS CTS entries (rn_cts_at); remote-writable */
	int32_t (*sizes)[RN_MAX_RECVS];    /* [RN_SLOTS]; staged multi-recv sizes */
	uint64_t rsizes_addr;
	uint32_t rsizes_rkey[RN_VNIC_MAX]; /* per peer member */
	uint32_t head;                     /* next FIFO sequence to serve, minus 1 */
	struct rn_send_slot slots[RN_SLOTS];
	struct rn_req reqs[RN_SLOTS * RN_MAX_RECVS];
	struct rn_req *free_reqs;
	int fresh_reqs;  /* reqs[] never handed out from here on */
	int resend_left; /* a move's resend stopped at a full send queue (src/xfer.c) */
	/*
	 * WRs slot s posted on QP q, released at its completion: slot_wrs[q][s], by QP first,
	 * so that a comm of one QP touches 64 bytes of it, not a 256-byte row in each slot
	 * (the comm is a mapping whose untouched pages cost nothing: src/comm.c).
	 */
	uint16_t slot_wrs[RN_MAX_QPS][RN_SLOTS];
};

struct rn_recv_comm {
	struct rn_comm c;
	void *stage;                    /* as the sender's FIFO: the CTS entries before the write */
	int32_t (*sizes)[RN_MAX_RECVS]; /* [RN_SLOTS]; the sender writes here */
	uint8_t *flush_buf;
	uint64_t rfifo_addr;
	uint32_t rfifo_rkey[RN_VNIC_MAX]; /* per peer member */
	uint32_t tail;                    /* next slot sequence to post, minus 1 */
	uint32_t qp_next[RN_MAX_QPS];     /* slot expected next on each QP */
	struct rn_req reqs[RN_SLOTS];
	/* CTS writes posted unsignaled since the last signaled one, per QP (src/xfer.c) */
	uint16_t cts_unsig[RN_MAX_QPS];
	int cts_inline; /* bytes a CTS write may carry inline, 0 none */
	/* receives posted whose CTS entries are not written yet (src/xfer.c: cts_flush) */
	uint32_t cts_first;                   /* the first one's slot (sequence - 1) */
	int cts_npend;                        /* how many, in slots cts_first on; 0 none */
	struct ibv_qp *flush_qp[RN_VNIC_MAX]; /* per member, connected to itself */
	int flush_used;
	/*
	 * Last: host receives never flush, and the comm is a mapping whose untouched pages
	 * cost nothing (src/comm.c), so these 5.5 KiB stay out of memory unless GPU receives
	 * are flushed; in the middle they kept the CTS fields a page of their own.
	 */
	struct rn_req flush_reqs[RN_SLOTS];
};

/* src/xfer.c */
void rn_xfer_send_init(struct rn_send_comm *sc);
/* A completion of @c's pair in use (member @k), as the data path takes it. */
void rn_xfer_handle_wc(struct rn_comm *c, int k, const struct ibv_wc *wc);
/*
 * Failover's data-path steps (src/failover.c calls them; the pair in use is the new one):
 * rn_xfer_recv_rewind() takes every receive posted and not complete as not delivered,
 * finds its buffers' keys on the new NIC, writes their CTS entries again on QP 0, and
 * lists their slot sequences in @seqs (@n of them); rn_xfer_send_resume() completes the
 * slots the receiver has (those not in @seqs, up to its @tail: the last sequence it had
 * posted at the move) and posts the others again (those it has matched), counting them in
 * @nresent and their bytes in @resent; what a full send queue leaves goes from the comm's
 * progress, in order, before any new send. 0 or -errno.
 */
int rn_xfer_recv_rewind(struct rn_recv_comm *rc, uint32_t *seqs, int *n);
int rn_xfer_send_resume(struct rn_send_comm *sc, const uint32_t *seqs, int n, uint32_t tail,
			int *nresent, uint64_t *resent);

extern const struct rn_fo_hooks rn_xfer_fo_hooks;

/* src/failover.c */
/*
 * @c's pair failed (@err, said in @why): move to a spare pair. 1 when the comm goes on
 * (moved, or a move is under way), 0 when no pair is left (said, with every NIC's cause:
 * the caller fails the comm).
 */
int rn_failover_begin(struct rn_comm *c, int err, const char *why);
/* A failover message (@imm RN_IMM_CTRL or RN_IMM_REC) on the pair in use: as from a spare. */
void rn_failover_ctrl(struct rn_comm *c, int q, uint32_t imm);
/* Poll the spare pairs (their messages) and drive a move under way. Returns c->err. */
int rn_failover_poll(struct rn_comm *c);
/*
 * A move off @from's NIC (to @to's) in the host's record, its cause one word read off @why
 * (port-down, device-fatal, gid-gone, peer-moved, completion); said once when unwritable.
 */
void rn_failover_record(const struct rn_dev *from, const struct rn_dev *to, const char *why);
/* 1 when @status is a path's failure a move can cure (not the peer's protocol). */
int rn_failover_status(int status);
/*
 * Recovery's idle step (src/failover.c): the receiver brings a failed pair back once its
 * NIC is up again (the GID found again by address, the path checked), the sender answers,
 * and the comm moves back to its own pair. Never blocks.
 */
void rn_failover_recover(struct rn_comm *c, uint64_t now);

/*
 * src/vfail.c: a vNIC comm (either end fused) whose member pair fails goes on over its
 * other members' QPs; see the file. NULL c->vf: the comm fails as before.
 */
struct rn_vfail;
/*
 * After the handshake: take the comm's QPs as made, post the sender's receives; @hooks are
 * the data path's steps (rn_xfer_fo_hooks, as failover's). 0 or -errno.
 */
int rn_vfail_attach(struct rn_comm *c, const struct rn_fo_hooks *hooks);
/* Before the comm's QPs are destroyed: every QP made is in c->qps again. */
void rn_vfail_free(struct rn_comm *c);
/*
 * A failed completion of member @k's QP: 1 when it is handled (the echo of a pair already
 * out, or that pair is left out now and the comm goes on), 0 when the comm fails (no pair
 * left: said, with every pair's cause).
 */
int rn_vfail_wc(struct rn_comm *c, int k, const struct ibv_wc *wc);
/* Our member @k failed (port down, fatal, GID gone: @why): as above. */
int rn_vfail_member(struct rn_comm *c, int k, const char *why);
/* 1 when every pair of our member @k is out (its checks are over), 0 once none is left. */
int rn_vfail_member_out(const struct rn_comm *c, int k);
/* 1 when @c (a vNIC comm) has left a pair out: its side channel may be on a NIC that is down. */
int rn_vfail_moved(const struct rn_comm *c);
/* A message (imm RN_IMM_CTRL) on QP @q: its receive posted again, the record taken. */
void rn_vfail_ctrl(struct rn_comm *c, int q, uint32_t imm);
/* Polls every member while the sender waits, and takes the step a message asked for. */
int rn_vfail_poll(struct rn_comm *c);
/* The member a GPU flush reads through: the first one with a pair left. */
int rn_vfail_flush_member(const struct rn_comm *c);
/* 1 when member @k here still has a pair in use. */
int rn_vfail_member_live(const struct rn_comm *c, int k);
/* Idle tick: a peer that does not answer within the bound fails the comm. */
void rn_vfail_tick(struct rn_comm *c, uint64_t now);
/* 1 when a step is due (a message taken): rn_comm_progress runs it after its batch. */
int rn_vfail_due(const struct rn_comm *c);
void rn_vfail_step(struct rn_comm *c);
/* QP @q, or the first QP left when @q's pair is out (a CTS written before the move). */
int rn_vfail_live_qp(const struct rn_comm *c, int q);

/* Pre-post the receives that WRITE_WITH_IMM consumes. */
int rn_xfer_recv_init(struct rn_recv_comm *rc);
/* Poll the comm's CQ once (a batch) and run the slow checks when idle. Returns c->err. */
int rn_comm_progress(struct rn_comm *c);

/* src/events.c: a watcher thread per device with comms (see the file). */
struct rn_evdev *rn_events_get(struct rn_dev *dev); /* NULL: not watched (logged) */
void rn_events_put(struct rn_evdev *ev);
/* Drain @ev's pending async events now (the thread does this by itself). */
void rn_events_poll(struct rn_evdev *ev);
/* -ENETDOWN (port down now), -EIO (device fatal) or 0. */
int rn_events_dev_err(const struct rn_evdev *ev, int port);
/* PORT_ERRs of @port seen at or after @since_ns (the last RN_FLAP_HIST of them at most). */
unsigned int rn_events_port_errs(struct rn_evdev *ev, int port, uint64_t since_ns);
/* -EIO after a DEVICE_FATAL event, else 0. */
int rn_events_dev_fatal(const struct rn_evdev *ev);
/* How long @port has been down at @now (0: up). A flap within the retry budget is no error. */
uint64_t rn_events_port_down_ns(const struct rn_evdev *ev, int port, uint64_t now);
/*
 * A failed completion of @c's member @k that is not the net protocol's (the RMA
 * backend's): fails @c (c->err) and logs the diagnosis, as the data path does.
 */
void rn_xfer_wc_error(struct rn_comm *c, int k, const struct ibv_wc *wc);

/* 1 when the NIC's address left @port's GID table (gid-gone, copied into @out if not NULL). */
int rn_events_gid_gone(struct rn_evdev *ev, int port, struct rn_finding *out);
/*
 * A PORT_ERR on @nic's port at or after @since_ns (a comm's creation): @out is link-flap
 * (when, for how long, admin-up: cable/switch advice) or link-down for a netdev set down.
 * 0, -ENOENT (no flap since), -ENOMEM.
 */
int rn_events_flap_finding(struct rn_evdev *ev, const struct rn_nic *nic, uint64_t since_ns,
			   uint64_t budget_ns, int timeout, int retry_cnt, struct rn_finding *out);

/*
 * What NCCL never closed on @eng: listeners (with the handshakes they hold), connects
 * in progress, and send/recv comms. rn_conn_close_all() frees them all, verbs objects,
 * sockets and memory; for the last finalize, when no call of NCCL's can still come.
 */
struct rn_conn_counts {
	int listeners, accepting, connecting, comms;
};
void rn_conn_close_all(struct rn_engine *eng, struct rn_conn_counts *n);
/* Counts only, nothing freed. */
void rn_conn_count(struct rn_engine *eng, struct rn_conn_counts *n);

/* The watchdog's bound for @c now: retry time plus the payload in flight at ~1 MB/s. */
uint64_t rn_comm_stall_bound(const struct rn_comm *c);

#endif /* RN_CONN_H */
