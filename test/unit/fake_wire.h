/* SPDX-License-Identifier: MIT */
/*
 * A QP/CQ "wire" on top of fake_verbs: RC QPs that really execute RDMA WRITE,
 * WRITE_WITH_IMM and READ by memcpy between MRs found by key (fake_verbs_mr_find),
 * at post time, and put completions on the CQs. Connected QPs find each other by
 * QP number (dest_qp_num from RTR), so a QP can be connected to itself.
 *
 * Error injection: fake_wire_fail_qp() makes the next send WR of a QP complete
 * with a status (and the QP go to error: later WRs and its receives flush);
 * writes to a QP that is not in RTR/RTS fail with RETRY_EXC_ERR, as a real
 * RC requester would after its retries. Async events are queued by the test.
 * A send queue holds cap.max_send_wr WRs, each until its completion or a later signalled
 * WR's on the QP is polled; a post into a full one is refused with ENOMEM, as providers do.
 */
#ifndef FAKE_WIRE_H
#define FAKE_WIRE_H

#include <infiniband/verbs.h>
#include <stdint.h>

struct fake_wire_stats {
	int writes, writes_imm, reads, atomics, recvs_posted;
	int writes_signaled, writes_inline; /* plain RDMA WRITEs posted with those flags */
	int max_wr_len;                     /* longest WR seen */
	int cq_overflows, rnr;              /* must stay 0 */
	int sq_full;                        /* posts refused: the send queue was full */
};

/* Install over fake_verbs (call after fake_verbs_install). Resets stats and limits. */
void fake_wire_install(void);
/* QPs + CQs still alive. */
int fake_wire_live(void);

/* Largest WR the "device" accepts (LOC_LEN_ERR beyond); default 2 GiB. */
void fake_wire_set_max_msg(uint32_t bytes);

/* Next send WR on @qp completes with @status, vendor_err @vendor_err; the QP goes to error. */
void fake_wire_fail_qp(struct ibv_qp *qp, enum ibv_wc_status status, uint32_t vendor_err);

/* While set, post_send accepts WRs but executes nothing (a silent stall). */
void fake_wire_set_stall(int on);
/* Posts on @qp alone stay in flight for good (a QP that silently stopped), while on. */
void fake_wire_set_stall_qp(struct ibv_qp *qp, int on);

/* Queue an async event for get_async_event() on @ctx. */
void fake_wire_push_async(struct ibv_context *ctx, struct ibv_async_event *ev);

/* Attributes a QP was last moved to RTR/RTS with, its INIT access flags, its queues. */
struct fake_wire_qp_attrs {
	int state;
	struct ibv_qp_attr rtr, rts;
	unsigned int access;
	struct ibv_qp_cap cap; /* as create_qp was asked */
};
int fake_wire_qp_attrs(struct ibv_qp *qp, struct fake_wire_qp_attrs *out);

/* Counters since install; per QP when @qp is not NULL. */
void fake_wire_stats(struct ibv_qp *qp, struct fake_wire_stats *out);

#endif /* FAKE_WIRE_H */
