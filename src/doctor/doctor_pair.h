/* SPDX-License-Identifier: MIT */
/*
 * The pair protocol of peer, serve and the MPI sweep: one runner per end of a host pair
 * (doctor_pair_run.c), over a transport the caller gives (TCP: rn_dw_io, doctor_io.c;
 * MPI: doctor_mpi.c). The runner owns the order of the steps; a transport owns how a
 * message travels and by when; a caller owns what it makes of the result.
 *
 *   A (leads: peer, the sweep's lower rank)     B (answers: serve, the higher rank)
 *   INV ---------------------------------->    (RN_PAIR_INV only: TCP)
 *       <----------------------------------    INV
 *   pair checks (ours)
 *   CHECKS ------------------------------->    pair checks (ours), ARP uniqueness
 *       <----------------------------------    CHECKS
 *   ARP uniqueness (ours)
 *   per NIC pair: PROBE_REQ -------------->    listen
 *       <----------------------------------    PROBE_HANDLE
 *   connect + ping (+ stream: RN_PAIR_BW)      accept + receive
 *       <----------------------------------    PROBE_RESULT
 *   DONE --------------------------------->
 *
 * One side checks at a time: the other's ARP requests would rewrite the very neighbour
 * entries being checked (a request carries its sender's MAC), and the raw ARP probes
 * come after both sides' neighbour checks for the same reason.
 */
#ifndef RN_DOCTOR_PAIR_H
#define RN_DOCTOR_PAIR_H

#include "doctor_io.h"
#include "doctor_probe.h"

/* doctor_pair.c: the pair checks of peer, serve and the sweep */
/*
 * neigh-wrong-mac's first part, run on the remote, as the doctor there names it: the
 * ARP sysctls of the remote's own arp-flux findings (its inventory), none when it
 * reports no flux (the stale entry is ours alone).
 */
void rn_doctor_peer_fix(const struct rn_dw_inv *remote, struct rn_dw_checks *c);
/*
 * Which of @remote's NICs get neighbour and ARP work here (@in[j] = 1, RN_DOCTOR_MAX_NICS
 * entries): those whose address is inside one of this host's NICs' subnets, the first
 * @max distinct addresses of them. Returns how many of @remote's NICs were left out.
 */
int rn_doctor_pair_scope(const struct rn_doctor *d, const struct rn_dw_inv *remote, int max,
			 unsigned char *in);
/*
 * Every local NIC against every @remote NIC, all checks in flight at once. @scope (NULL:
 * every NIC) from rn_doctor_pair_scope: a NIC outside it gets the route check alone,
 * and the neighbour check too only where that route goes through a gateway (ours).
 */
void rn_doctor_pair_checks(struct rn_doctor *d, const struct rn_dw_inv *remote,
			   const unsigned char *scope, struct rn_dw_checks *out, double *ms);
/* 1 when @p's checks found something to fix. */
int rn_doctor_pair_problem(const struct rn_dw_pair *p);

/* doctor_arp.c */
/*
 * ARP uniqueness for every checked IPv4 pair of @c: answers from a MAC other than
 * the one @remote advertised become neigh-wrong-mac. Returns the pairs probed, or
 * -errno (-EPERM without CAP_NET_RAW: nothing probed).
 */
int rn_doctor_arp_unique(struct rn_doctor *d, const struct rn_dw_inv *remote,
			 const unsigned char *scope, struct rn_dw_checks *c);

/* doctor_pair_run.c: the runner */

/* One RDMA probe's outcome, as the client saw it. */
struct rn_pair_probe {
	int tried;
	int ret;      /* ours */
	int peer_ret; /* the server's side */
	char why[RN_DW_WHY_MAX], peer_why[RN_DW_WHY_MAX];
	double ms;
	int timeout;             /* no answer: our deadline, or the QP's retries exhausted */
	struct rn_finding diag;  /* rn_diagnose_peer after a failure (cause 0: none) */
	struct rn_probe_ctr ctr; /* our NIC's counters around a failure (rn_probe_ctr_clear) */
	struct rn_probe_bw bw;   /* in: .want; out: the stream's figures after a good ping */
};

/* The steps of a run, in order: where one stopped (RN_PAIR_STEP_END: it went through). */
enum rn_pair_step {
	RN_PAIR_STEP_INV,      /* the inventories */
	RN_PAIR_STEP_A_CHECKS, /* A's pair checks, A to B */
	RN_PAIR_STEP_B_CHECKS, /* B's pair checks, B to A */
	RN_PAIR_STEP_PROBES,   /* the RDMA probes, then DONE */
	RN_PAIR_STEP_END,
};

/* Why a run stopped before its end. */
enum rn_pair_stop {
	RN_PAIR_WHOLE, /* it did not */
	RN_PAIR_SEND,  /* a send failed (ret; why "cannot send: ...") */
	RN_PAIR_RECV,  /* a receive failed (ret, why), an A probe's transport too */
	RN_PAIR_BAD,   /* a message that does not decode or does not belong (why) */
	RN_PAIR_TWICE, /* B: a NIC pair asked for a second probe (at_i, at_j) */
};

/* What a run takes (RN_PAIR_*) */
#define RN_PAIR_INV 0x1    /* the inventories first (TCP; MPI has them already) */
#define RN_PAIR_CHECKS 0x2 /* the pair checks (MPI's second pass probes alone) */
#define RN_PAIR_BW 0x4     /* A: stream for bandwidth after each good ping */

/* One end's run with one other host. Zero it, fill the "in" part, run, rn_pair_run_clear. */
struct rn_pair_run {
	/* in */
	struct rn_doctor *d;
	struct rn_pair_io *io;
	unsigned int flags;
	const struct rn_dw_inv *local; /* ours: sent with RN_PAIR_INV, else the other's already */
	struct rn_dw_inv *remote;   /* A with RN_PAIR_INV: received here; else known (B: decoded) */
	const unsigned char *scope; /* B: rn_doctor_pair_scope's choice, NULL: every remote NIC */
	/* A: probe only the pairs whose only[i * RN_DOCTOR_MAX_NICS + j] is set (NULL: all) */
	const unsigned char *only;
	/* A: each NIC pair's probe, [local][remote] (the caller's, zeroed; NULL: no probes) */
	struct rn_pair_probe (*probes)[RN_DOCTOR_MAX_NICS];

	/* out */
	struct rn_dw_checks ours, theirs;
	double check_ms; /* our pair checks */
	int arp_probed;  /* pairs probed for ARP uniqueness, -errno: skipped */
	/*
	 * A: pairs of one address family (none with --no-rdma), probed, cut for want of
	 * time; any of them with an RDMA port here; any RDMA port on the remote's NICs.
	 */
	int pairs, probed, cut, local_rdma, remote_rdma;
	int answered, failed; /* B: probes answered, and of them those that failed */
	unsigned char asked[RN_DOCTOR_MAX_NICS][RN_DOCTOR_MAX_NICS]; /* B: [ours][theirs] */
	enum rn_pair_step step; /* where it stopped, RN_PAIR_STEP_END: went through */
	enum rn_pair_stop stop;
	int ret;                /* the stop's -errno */
	int at_i, at_j;         /* A: the probe the transport failed in; B: the pair asked twice */
	char why[RN_DW_WHY_MAX];
};

/* A's end of the protocol. 0, or the stop's -errno (@r says where and why). */
int rn_pair_run_a(struct rn_pair_run *r);
/* B's end: answers until A's DONE. 0, or the stop's -errno. */
int rn_pair_run_b(struct rn_pair_run *r);
/* Release what a run's checks and probes own (the probes' storage stays the caller's). */
void rn_pair_run_clear(struct rn_pair_run *r);

#endif
