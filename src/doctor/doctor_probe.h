/* SPDX-License-Identifier: MIT */
/*
 * The RDMA probe of a NIC pair through the library's transport (doctor_rdma.c): an RC
 * ping, the bandwidth stream after it, and the local NIC's counters around a failure
 * (doctor_ctr.c).
 */
#ifndef RN_DOCTOR_PROBE_H
#define RN_DOCTOR_PROBE_H

#include "doctor_wire.h"

/*
 * doctor_rdma.c: the bandwidth stream after a ping (the sweep's --min-gbps): RN_BW_BYTES one
 * way in RN_BW_MSG messages, RN_BW_WINDOW in flight (NCCL's pattern), timed at the sender from
 * its first isend to its last completion (an RC send completes when the receiver's NIC
 * has acknowledged it). Past @cap_ms the sender sends the rest as empty messages, so
 * both sides still finish the same count and a slow link costs seconds, not minutes.
 */
#define RN_BW_BYTES ((uint64_t)32 << 20)
#define RN_BW_MSG ((size_t)256 << 10)
#define RN_BW_WINDOW 8
#define RN_BW_CAP_MS 2000
struct rn_mr;
struct rn_req;
struct rn_bw_side {
	int sender;
	void *comm; /* rn_send_comm or rn_recv_comm */
	struct rn_mr *mr;
	char *buf;  /* RN_BW_WINDOW slots of RN_BW_MSG */
	struct rn_req *reqs[RN_BW_WINDOW];
	int count, posted, done;
	size_t sizes[RN_BW_WINDOW]; /* of each posted send */
	uint64_t bytes;             /* payload completed */
	double t0, t1, cap_ms;
	int capped;                 /* the sender cut the stream at @cap_ms */
};
/* Register the buffer on @comm. 0 or -errno. */
int rn_bw_start(struct rn_bw_side *x, int sender, void *comm, double cap_ms);
/* Post what the window allows, test what is posted (never blocks): 0 done, -EAGAIN, -errno. */
int rn_bw_step(struct rn_bw_side *x);
void rn_bw_end(struct rn_bw_side *x);
/* Gbit/s of what completed (0 before the first completion). */
double rn_bw_gbps(const struct rn_bw_side *x);
/* A probe's bandwidth part: asked for with @want, the sender's figures after. */
struct rn_probe_bw {
	int want;
	int ret; /* 0 measured, -errno the stream failed */
	uint64_t bytes;
	double ms, gbps;
	int capped;
	char why[RN_DW_WHY_MAX]; /* when @ret */
};

/* doctor_ctr.c: the local NIC's port counters around a failed RDMA probe */
#define RN_PROBE_CTR_MAX 16
struct rn_probe_ctr {
	int read;              /* 1: read before and after; 0: not taken; -errno: unread */
	char nic[80];          /* "rxe0:1" */
	const char *driver;    /* whose counter table (rn_ctr_driver) */
	double secs;           /* between the two reads */
	int n, more;           /* counters that went up: kept, and left out beyond the max */
	struct {
		char name[64]; /* the driver's own name */
		int role;      /* the library table's role (rn_ctr_role_name), -1 none */
		uint64_t d;
	} delta[RN_PROBE_CTR_MAX];
	char lacks[256];         /* the roles the driver has no counter of, "" none */
	struct rn_finding shows; /* what rn_ctr_judge makes of them; cause 0: nothing */
};
struct rn_probe_ctr_snap;
/* Before the probe from @nic: its counters by name and every local NIC's (NULL: none). */
struct rn_probe_ctr_snap *rn_probe_ctr_begin(const struct rn_nic *nic);
/*
 * After it failed: read again, the deltas and the judge's cause for the peer @peer into
 * @out (owned: rn_probe_ctr_clear). Frees @before; with @out NULL (the probe worked) only
 * that.
 */
void rn_probe_ctr_end(struct rn_probe_ctr_snap *before, const struct rn_nic *nic,
		      const struct rn_peer_facts *peer, struct rn_probe_ctr *out);
void rn_probe_ctr_clear(struct rn_probe_ctr *c);
/* Lines after @indent (nothing when not taken); the finding's fix as @maker's. */
void rn_probe_ctr_print(FILE *f, const char *indent, const struct rn_probe_ctr *c,
			const char *maker);
/* The object @key: {nic, driver, window_s, deltas: [{counter, delta, role}], more, lacks,
 * shows: [finding]} or {nic, error}; nothing when not taken. */
void rn_probe_ctr_json(struct rn_json *j, const char *key, const struct rn_probe_ctr *c,
		       const char *maker);

/* doctor_rdma.c: the RC QP probe through the library's transport. */
int rn_probe_available(const struct rn_doctor *d, int nic);
/* Client half: connect NIC @nic to @handle, send one ping, then stream when @bw->want
 * (@bw NULL: ping only). */
int rn_probe_client(struct rn_doctor *d, int nic, const void *handle, int timeout_ms,
		    struct rn_probe_bw *bw, char *why, size_t len);
/* Close what d->probe's engine holds and free it (NULL after; nothing when none). */
void rn_probe_release(struct rn_doctor *d);
/*
 * The engine's device index of doctor NIC @nic, the engine made on first use into *@eng
 * (its own contexts on the doctor's devices). The index or -errno (@why filled).
 */
struct rn_engine;
int rn_probe_eng_dev(struct rn_doctor *d, int nic, struct rn_engine **eng, char *why, size_t len);
/* The server half in two steps, for callers that carry the handle themselves (the sweep). */
struct rn_listen_comm;
struct rn_probe_srv {
	struct rn_listen_comm *lc;
};
/* Listen on NIC @nic; @handle gets RN_HANDLE_SIZE bytes. 0 or -errno (@why filled). */
int rn_probe_listen(struct rn_doctor *d, int nic, void *handle, struct rn_probe_srv *srv, char *why,
		    size_t len);
/* Accept one connection, receive the ping (and the stream, @bw), close the listener. 0 or
 * -errno. */
int rn_probe_accept_ping(struct rn_probe_srv *srv, int timeout_ms, int bw, char *why, size_t len);
void rn_probe_srv_close(struct rn_probe_srv *srv);

#endif /* RN_DOCTOR_PROBE_H */
