/* SPDX-License-Identifier: MIT */
/*
 * One NIC pair's result and its one judgment (doctor_result.c), for every report of a
 * pair: peer renders one host pair's cells, the sweep N(N-1)/2 of them. A cell is filled
 * from both sides' checks and the probe (the runner's output) and judged here alone: its
 * word, whether it is bad, and which NICs drop RDMA (a firewall) over a grid of cells.
 */
#ifndef RN_DOCTOR_RESULT_H
#define RN_DOCTOR_RESULT_H

#include "doctor_pair.h"

enum rn_pair_rdma {
	RN_PAIR_RDMA_SKIPPED = 0,
	RN_PAIR_RDMA_OK,
	RN_PAIR_RDMA_TIMEOUT,
	RN_PAIR_RDMA_ERROR,
};

/* --min-gbps: the stream after a good ping (rn_bw_*, doctor_rdma.c). */
enum rn_pair_bw {
	RN_PAIR_BW_NONE = 0, /* not measured */
	RN_PAIR_BW_OK,       /* measured: bw_mbps */
	RN_PAIR_BW_FAILED,   /* the stream failed after a good ping (counts as slow) */
};

/* One NIC pair (a's NIC i, b's NIC j; a leads the run): the worst finding of each side. */
struct rn_pair_cell {
	/* the worst found by a (checking toward b), by b; 0: none (a cause this build does not
	 * know is kept as its number) */
	uint16_t a_cause, b_cause;
	uint8_t a_sev, b_sev;
	uint8_t a_checked, b_checked;
	uint8_t rdma;     /* enum rn_pair_rdma */
	uint16_t diag;    /* rn_diagnose_peer's cause after a failed probe */
	uint32_t rdma_us;
	uint8_t bw;       /* enum rn_pair_bw */
	uint8_t slow;     /* under --min-gbps (the sweep's rank 0, rn_sweep_bw_judge) */
	uint8_t blame;    /* enum rn_sweep_blame (rank 0) */
	uint8_t pad;
	uint32_t bw_mbps; /* a -> b through the plugin's transport, Mbit/s */
};

/* What a cell comes to, worst first: every report words it from this. */
enum rn_pair_judged {
	RN_PAIR_BY_A,      /* a's checks found @cause (the worse of the two sides) */
	RN_PAIR_BY_B,      /* b's checks did */
	RN_PAIR_TIMEOUT,   /* the checks are clean, the probe timed out */
	RN_PAIR_ERROR,     /* ... or failed otherwise */
	RN_PAIR_SLOW,      /* ... or its stream is under --min-gbps */
	RN_PAIR_UNCHECKED, /* nothing was checked or probed */
	RN_PAIR_OK,
};

/* One side's checks of the pair into @c (@by_b: b's; a NULL @q is not checked). */
void rn_pair_cell_checks(struct rn_pair_cell *c, const struct rn_dw_pair *q, int by_b);
/* A tried probe's outcome into @c: the ping, its diagnosis, the stream's figures. */
void rn_pair_cell_probe(struct rn_pair_cell *c, const struct rn_pair_probe *pr);
/* The judgment of @c; @cause gets the finding's cause for RN_PAIR_BY_A/B (NULL: unwanted). */
enum rn_pair_judged rn_pair_judge(const struct rn_pair_cell *c, int *cause);
/* 1 when @c is a problem: anything but ok and unchecked. */
int rn_pair_cell_bad(const struct rn_pair_cell *c);

/* Where a finding of a NIC pair came from. */
enum { RN_PAIR_FROM_A = 0, RN_PAIR_FROM_B = 1, RN_PAIR_FROM_RDMA = 2, RN_PAIR_FROM_BW = 3 };

/* A finding of a NIC pair, kept for its message and fix. */
struct rn_pair_find {
	int16_t i, j;
	int16_t by;          /* RN_PAIR_FROM_* */
	int16_t pad;
	struct rn_finding f; /* RDMA: cause = diagnosis (or none), msg = the probe's error */
};

/* One host pair's result: a's NICs x b's, each a cell, and the findings behind the cells. */
struct rn_pair_result {
	int a, b;   /* the sweep's ranks, a < b */
	int status; /* 0 checked, -ETIMEDOUT: b did not answer in time */
	char err[160];
	int na, nb;
	double ms;
	struct rn_pair_cell *cells; /* na * nb, row = a's NIC */
	int nfind;
	struct rn_pair_find *finds;
};

/* Append a copy of @f to @p's findings (NIC @i of a, @j of b, found by @by). 0 or -ENOMEM. */
int rn_pair_result_add_find(struct rn_pair_result *p, int i, int j, int by,
			    const struct rn_finding *f);
/* Release what @p owns (its cells, its findings); free: and @p itself. */
void rn_pair_result_clear(struct rn_pair_result *p);
void rn_pair_result_free(struct rn_pair_result *p);
/*
 * A run of the pair runner (A's end) into @p (na x nb zeroed cells, no findings yet): both
 * sides' checks (only ours when B's never came whole), then each tried probe; the probe the
 * other end, @peer, stopped answering in times out and makes @p's status -ETIMEDOUT.
 */
void rn_pair_result_run(struct rn_pair_result *p, const struct rn_pair_run *r, const char *peer);
/* How many of @p's NIC pairs are bad (rn_pair_cell_bad); 0 when @p has no result. */
int rn_pair_result_bad(const struct rn_pair_result *p);

/*
 * RESULTS, host pairs' results as one message of the peer protocol (the sweep's ranks send
 * theirs to rank 0 over MPI): the protocol's header, at RN_DW_RESULTS_VERSION, then per
 * pair be32 a, b, status, na, nb, nfind, be64 ms (IEEE 754 bits), err[160]; na * nb cells
 * (be16 a_cause, u8 a_sev, be16 b_cause, u8 b_sev, u8 a_checked, b_checked, rdma, be16
 * diag, be32 rdma_us, u8 bw, be32 bw_mbps); nfind x (be16 i, j, by, then a FINDING).
 * Whether a pair is slow and which end is to blame, rank 0 decides.
 */
int rn_pair_results_encode(struct rn_pair_result *const *p, int n, uint8_t **out, size_t *len);
/*
 * Decode what rank @from sent (of @nhosts): each pair (a == @from < b < @nhosts) to
 * @take, which owns it after. 0, or -EBADMSG / -EPROTO (another build: @why says so)
 * / -ENOMEM; the pairs taken before an error stay taken.
 */
int rn_pair_results_decode(const uint8_t *buf, size_t len, int from, int nhosts,
			   void (*take)(void *arg, struct rn_pair_result *p), void *arg, char *why,
			   size_t why_len);

/* Cells over hosts: peer's two, the sweep's fleet. @cell: NULL where a pair has no result. */
struct rn_pair_grid {
	int nhosts;
	int (*nnics)(const void *arg, int h);
	const struct rn_pair_cell *(*cell)(const void *arg, int h1, int i1, int h2, int i2);
	const void *arg;
};
/*
 * Host @h's NIC @x timed out (without a diagnosis) with every NIC it was probed with, while
 * a sibling NIC got through to those: RDMA dies at @x, most often a firewall dropping
 * RoCE v2 (UDP 4791). 1 when so, with the finding (firewall, "dev" @netdev) in @f; 0 when
 * not; -errno when the finding could not be made.
 */
int rn_pair_drops(const struct rn_pair_grid *g, int h, int x, const char *netdev,
		  struct rn_finding *f);

#endif /* RN_DOCTOR_RESULT_H */
