/* SPDX-License-Identifier: MIT */
/*
 * The fleet sweep (roce-doctor-mpi): every pair of hosts checked in a round-robin
 * tournament, the results gathered on rank 0 and reported. This half is MPI-free
 * (schedule, model: doctor_sweep.c; the bandwidth gate: doctor_sweep_bw.c; text and
 * JSON: doctor_sweep_report.c; SVG: doctor_sweep_svg.c); doctor_mpi.c moves the bytes.
 */
#ifndef RN_DOCTOR_SWEEP_H
#define RN_DOCTOR_SWEEP_H

#include <stdint.h>
#include <stdio.h>

#include "doctor_result.h"

/* Rounds of disjoint pairs that meet every pair once (odd @n: one host sits out each). */
int rn_sweep_rounds(int n);
/* @rank's partner in @round, or -1 (a bye). */
int rn_sweep_partner(int n, int round, int rank);

/* Which end of a slow NIC pair is the bad one (rn_sweep_bw_blame). */
enum rn_sweep_blame {
	RN_SW_BLAME_NONE = 0, /* not slow */
	RN_SW_BLAME_A,        /* a's NIC: slow with the other peers too */
	RN_SW_BLAME_B,
	RN_SW_BLAME_BOTH,
	RN_SW_BLAME_PATH,    /* both ends fast with other peers: the path between them */
	RN_SW_BLAME_UNKNOWN, /* no third NIC measured against an end that is not fast */
};

struct rn_sweep_host {
	char name[64];
	int facts;      /* its facts arrived */
	int results;    /* its pair results arrived */
	int gather_err; /* -errno: it could not read its own facts */
	double gather_ms;
	struct rn_dw_inv *inv;
	struct rn_doctor_facts *hf; /* versions, drivers, sysctls (NULL: not received) */
	struct rn_finding *drops;   /* per NIC: firewall inferred over the fleet (cause 0: none) */
	struct rn_finding *slow;    /* per NIC: slow-nic, the bad end of slow pairs (0: none) */
};

/*
 * Fleet consistency: what each host or NIC has, against what most have. Host facts are
 * compared over the hosts, NIC facts over every NIC of the fleet (firmware among the NICs
 * of one driver).
 */
enum rn_sweep_field {
	RN_SW_F_PLUGIN = 0,
	RN_SW_F_KERNEL,
	RN_SW_F_RDMA_CORE,
	RN_SW_F_NCCL,
	RN_SW_F_DRIVER, /* the first NIC field */
	RN_SW_F_FW,
	RN_SW_F_MTU,
	RN_SW_F_ARP_IGNORE,
	RN_SW_F_ARP_ANNOUNCE,
	RN_SW_F_ARP_FILTER,
	RN_SW_F_RP_FILTER,
	RN_SW_F_ACCEPT_LOCAL,
	RN_SW_F__MAX
};
#define RN_SW_F_NIC RN_SW_F_DRIVER

struct rn_sweep_diff {
	int field;           /* enum rn_sweep_field */
	int h, i;            /* host, NIC (-1: a host's fact) */
	char value[RN_FACT_LEN], majority[RN_FACT_LEN];
	int count, of;       /* how many have @majority, of how many compared */
	int tie;             /* no value is held by more than the others */
	struct rn_finding f; /* fleet-differs, with its fix where a command makes it */
};

/* The second bandwidth pass: an end of a slow pair against a NIC that is fast with others
 * (at most RN_SW_MAX_RECHECKS; the rest are judged by the rounds' figures alone). */
#define RN_SW_MAX_RECHECKS 256
struct rn_sweep_recheck {
	int h, i;  /* the end checked again */
	int w, k;  /* the witness: host, NIC */
	int round; /* of the second pass: disjoint host pairs per round */
	int bw;    /* enum rn_sweep_bw; NONE: it did not run */
	uint32_t mbps;
};

struct rn_sweep {
	int n;
	struct rn_sweep_host *hosts;
	struct rn_pair_result **pairs; /* rn_sweep_pair_index(); NULL: no result */
	int rounds;
	int pair_timeout_s;
	int no_rdma;
	double startup_ms; /* MPI_Init to every rank up (the launcher's skew) */
	double facts_ms, rounds_ms, round_max_ms, total_ms;
	int aborted;       /* a rank never answered: the report is partial */
	/* fleet consistency (rn_sweep_consistency) */
	int ndiffs;
	struct rn_sweep_diff *diffs;
	char fleet[RN_SW_F__MAX][RN_FACT_LEN]; /* each field's majority ("" none compared) */
	/* --min-gbps */
	double min_gbps; /* 0: no bandwidth measured */
	int nrechecks, recheck_rounds;
	struct rn_sweep_recheck *rechecks;
	double recheck_ms;
	char recheck_skipped[128]; /* why the second pass did not run ("" it ran, or none due) */
};

long rn_sweep_pair_index(int n, int a, int b);
/* The model as the gate, the report and the SVG read it (doctor_sweep.c): host @h's NICs
 * (0 without an inventory), NIC @i's netdev, the cell of (h1, i1) x (h2, i2) in either
 * order (NULL: that pair has no result). */
int rn_sweep_nnics(const struct rn_sweep *s, int h);
const char *rn_sweep_nic_name(const struct rn_sweep *s, int h, int i);
const struct rn_pair_cell *rn_sweep_cell_of(const struct rn_sweep *s, int h1, int i1, int h2,
					    int i2);
/* A NIC with a verdict other than ok or a finding of WARN and above. */
int rn_sweep_nic_problem(const struct rn_dw_nic *n);
/* Bad NIC pairs that involve host @h (every host when @h < 0). */
int rn_sweep_bad_pairs(const struct rn_sweep *s, int h);
/* Its facts or its results never came. */
int rn_sweep_host_missing(const struct rn_sweep *s, int h);
/* missing, hung, error, problem or ok. */
const char *rn_sweep_host_status(const struct rn_sweep *s, int h);
/* Release the @n findings of *@fs and the array; *@fs is NULL after. */
void rn_sweep_findings_free(struct rn_finding **fs, int n);
int rn_sweep_init(struct rn_sweep *s, int n);
void rn_sweep_free(struct rn_sweep *s);
/* A cell's judgment (rn_pair_judge) as text: a cause id, rdma-timeout, rdma-error,
 * bandwidth-low, ok or "-". */
const char *rn_sweep_cell_str(const struct rn_pair_cell *c, char *buf, size_t len);
/* A NIC that times out with every peer while its siblings get through: a firewall. */
void rn_sweep_infer(struct rn_sweep *s);
/* RN_DOCTOR_OK, _PROBLEMS, or _ERROR when a host is missing. */
int rn_sweep_exit(const struct rn_sweep *s);
/* The name of @field ("plugin", "mtu", ...) and its value on host @h (NIC @i) into @buf. */
const char *rn_sweep_field_name(int field);
const char *rn_sweep_fact(const struct rn_sweep *s, int h, int i, int field, char *buf, size_t len);
/* Hosts and NICs that differ from the majority, each with its finding. 0 or -ENOMEM. */
int rn_sweep_consistency(struct rn_sweep *s);
/* Mark the measured pairs under s->min_gbps slow (a failed stream is slow). */
void rn_sweep_bw_judge(struct rn_sweep *s);
/*
 * Plan the second pass: each end of a slow pair that is not fast elsewhere, against a
 * witness (a NIC with a fast pair and no slow one; on a third host when there is one),
 * in rounds of disjoint host pairs. 0 or -ENOMEM; s->rechecks filled (bw NONE).
 */
int rn_sweep_bw_plan(struct rn_sweep *s);
/* With the second pass's results in: every slow pair's blame, the slow-nic and
 * bandwidth-low findings. */
void rn_sweep_bw_blame(struct rn_sweep *s);
const char *rn_sweep_blame_str(int blame);
/* A second-pass figure under the bar (a failed stream is slow). */
int rn_sweep_recheck_slow(const struct rn_sweep *s, const struct rn_sweep_recheck *r);
void rn_sweep_print(FILE *f, const struct rn_sweep *s, int verbose);
void rn_sweep_json(FILE *f, const struct rn_sweep *s, int rc);
int rn_sweep_svg(const char *path, const struct rn_sweep *s);

#endif /* RN_DOCTOR_SWEEP_H */
