/* SPDX-License-Identifier: MIT */
/*
 * The fleet sweep (roce-doctor-mpi): every pair of hosts checked in a round-robin
 * tournament, the results gathered on rank 0 and reported. This half is MPI-free
 * (schedule, model, text/JSON/SVG output); doctor_mpi.c moves the bytes.
 */
#ifndef RN_DOCTOR_SWEEP_H
#define RN_DOCTOR_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include "doctor.h"

/* Rounds of disjoint pairs that meet every pair once (odd @n: one host sits out each). */
int rn_sweep_rounds(int n);
/* @rank's partner in @round, or -1 (a bye). */
int rn_sweep_partner(int n, int round, int rank);

enum rn_sweep_rdma {
	RN_SW_RDMA_SKIPPED = 0,
	RN_SW_RDMA_OK,
	RN_SW_RDMA_TIMEOUT,
	RN_SW_RDMA_ERROR,
};

/* One NIC pair (host a's NIC i, host b's NIC j; a < b): the worst finding of each side. */
struct rn_sweep_cell {
	uint8_t a_cause, a_sev;     /* found by a (checking toward b), 0: none */
	uint8_t b_cause, b_sev;     /* found by b */
	uint8_t a_checked, b_checked;
	uint8_t rdma;               /* enum rn_sweep_rdma */
	uint8_t diag;               /* rn_diagnose_peer's cause after a failed probe */
	uint32_t rdma_us;
};

enum { RN_SW_BY_A = 0, RN_SW_BY_B = 1, RN_SW_BY_RDMA = 2 };

/* A finding of a NIC pair, kept for its message and fix. */
struct rn_sweep_find {
	int16_t i, j;
	int16_t by;                 /* RN_SW_BY_* */
	int16_t pad;
	struct rn_finding f;        /* RDMA: cause = diagnosis (or none), msg = the probe's error */
};

struct rn_sweep_pair {
	int a, b;                   /* ranks, a < b */
	int status;                 /* 0 checked, -ETIMEDOUT: b did not answer in time */
	char err[160];
	int na, nb;
	double ms;
	struct rn_sweep_cell *cells;    /* na * nb, row = a's NIC */
	int nfind;
	struct rn_sweep_find *finds;
};

struct rn_sweep_host {
	char name[64];
	int facts;                  /* its facts arrived */
	int results;                /* its pair results arrived */
	int gather_err;             /* -errno: it could not read its own facts */
	double gather_ms;
	struct rn_dw_inv *inv;
	struct rn_finding *drops;   /* per NIC: firewall inferred over the fleet (cause 0: none) */
};

struct rn_sweep {
	int n;
	struct rn_sweep_host *hosts;
	struct rn_sweep_pair **pairs;   /* rn_sweep_pair_index(); NULL: no result */
	int rounds;
	int pair_timeout_s;
	int no_rdma;
	double startup_ms;          /* MPI_Init to every rank up (the launcher's skew) */
	double facts_ms, rounds_ms, round_max_ms, total_ms;
	int aborted;                /* a rank never answered: the report is partial */
};

long rn_sweep_pair_index(int n, int a, int b);
int rn_sweep_init(struct rn_sweep *s, int n);
void rn_sweep_free(struct rn_sweep *s);
void rn_sweep_pair_free(struct rn_sweep_pair *p);
/* The worst cause of a cell as text: a cause id, rdma-timeout, rdma-error, ok or "-". */
const char *rn_sweep_cell_str(const struct rn_sweep_cell *c, char *buf, size_t len);
int rn_sweep_cell_bad(const struct rn_sweep_cell *c);
/* A NIC that times out with every peer while its siblings get through: a firewall. */
void rn_sweep_infer(struct rn_sweep *s);
/* RN_DOCTOR_OK, _PROBLEMS, or _ERROR when a host is missing. */
int rn_sweep_exit(const struct rn_sweep *s);
void rn_sweep_print(FILE *f, const struct rn_sweep *s, int verbose);
void rn_sweep_json(FILE *f, const struct rn_sweep *s, int rc);
int rn_sweep_svg(const char *path, const struct rn_sweep *s);

#endif /* RN_DOCTOR_SWEEP_H */
