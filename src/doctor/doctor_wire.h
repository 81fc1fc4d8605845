/* SPDX-License-Identifier: MIT */
/*
 * The peer protocol's messages as bytes (doctor_wire.c; the layout is at the top of that
 * file): peer and serve over TCP, the sweep's ranks over MPI. Moving them is doctor_io.h's.
 */
#ifndef RN_DOCTOR_WIRE_H
#define RN_DOCTOR_WIRE_H

#include "doctor.h"

#define RN_DW_MAGIC 0x524e4452u /* "RNDR" */
/* 2: findings carry whole, length-prefixed texts; 3: and where their fixes run, and advice */
#define RN_DW_VERSION 3
#define RN_DW_VERSION_MIN 2 /* a receiver still reads version 2 */
/* RESULTS came with 4, and only 4 reads it: a rank of another build is refused, by name. */
#define RN_DW_RESULTS_VERSION 4
#define RN_DW_HDR_LEN 16
#define RN_DW_MAX_PAYLOAD (1u << 24)
/*
 * Each type's largest payload (rn_dw_type_max), checked at the header before a byte of it
 * is allocated, by every receiver and every sender. A real inventory is 1 KB per NIC
 * (3.8 KB for 4 NICs at kernel defaults) and real pair checks 300 B per pair (4.8 KB for
 * 4 x 4): 1 MiB is 30 times 32 NICs' inventory, 4 MiB 13 times 32 x 32 pairs' checks.
 */
#define RN_DW_INV_MAX (1u << 20)
#define RN_DW_CHECKS_MAX (4u << 20)
/* A rank's pairs: 64 MiB is 2,500 pairs of 32 x 32 NICs, a rank's share of a 5,000 hosts sweep. */
#define RN_DW_RESULTS_MAX (64u << 20)
/* Bounds a receiver enforces: a NIC has at most one finding or two per cause. */
#define RN_DW_MAX_FINDINGS 64
#define RN_DW_PAIR_FINDINGS 8
#define RN_DW_TEXT_MAX 8192
/* A probe's reason: the failing step, its error and the library's last WARN (whole). */
#define RN_DW_WHY_MAX 1280

enum rn_dw_type {
	RN_DW_INV = 1,          /* inventory: host, NICs, their own verdicts */
	RN_DW_CHECKS = 2,       /* the sender's pair checks */
	RN_DW_PROBE_REQ = 3,    /* client: listen on your NIC j (+ flags: RN_DW_PROBE_BW) */
	RN_DW_PROBE_HANDLE = 4, /* server: the listen handle (or an error) */
	RN_DW_PROBE_RESULT = 5, /* server: what its side of the probe saw */
	RN_DW_DONE = 6,
	RN_DW_WAIT = 7,         /* server: your inventory is queued, N sessions ahead */
	RN_DW_BUSY = 8,         /* server: cannot take you now, N ahead (then it closes) */
	RN_DW_RESULTS = 9,      /* the sweep: a rank's host pairs' results (doctor_result.h) */
};
/* INV's caps (a version-3 receiver ignores them): the sender reads WAIT and BUSY. */
#define RN_DW_CAP_WAIT 1u
#define RN_DW_WAIT_LEN 8 /* WAIT, BUSY: be16 ahead, be16 0, be32 a session's ms */
/* PROBE_REQ's third byte: after the ping, receive the bandwidth stream (rn_bw_*). */
#define RN_DW_PROBE_BW 0x01

struct rn_dw_nic {
	char netdev[16];
	char ibdev[64];
	int port;
	struct rn_ip ip;
	int prefixlen;
	uint8_t mac[6];
	int link_up;
	int verdict;
	union ibv_gid gid;
	int gid_index;
	int mtu;
	int active_mtu;              /* bytes, 0 unknown */
	int nfindings;
	struct rn_finding *findings; /* owned: rn_dw_inv_clear() */
};

struct rn_dw_inv {
	char host[64];
	int nnics;
	unsigned int caps; /* RN_DW_CAP_* */
	struct rn_dw_nic nics[RN_DOCTOR_MAX_NICS];
};

/* One pair as its sender checked it: sender's NIC @local -> the other side's @remote. */
struct rn_dw_pair {
	int local, remote;
	int status;                                      /* 0 ok, 1 problem, 2 not checked */
	int nfindings;
	struct rn_finding findings[RN_DW_PAIR_FINDINGS]; /* owned: rn_dw_checks_clear() */
};

struct rn_dw_checks {
	int npairs;
	struct rn_dw_pair pairs[RN_DOCTOR_MAX_NICS * RN_DOCTOR_MAX_NICS];
};

struct rn_dw_msg {
	uint16_t type;
	uint32_t len;
	uint8_t *payload; /* malloc'ed, freed by rn_dw_msg_free */
};

/* 0 or -ENOMEM; @inv (zeroed or filled before) is replaced. */
int rn_dw_inv_from_doctor(const struct rn_doctor *d, struct rn_dw_inv *inv);
/* Release the findings of @inv / @c; they are empty after. */
void rn_dw_inv_clear(struct rn_dw_inv *inv);
void rn_dw_checks_clear(struct rn_dw_checks *c);
void rn_dw_peer_facts(const struct rn_dw_inv *inv, int idx, struct rn_peer_facts *out);
/* The largest payload of message @type, 0 for a type this build does not know. */
size_t rn_dw_type_max(unsigned int type);
/* The INV payload of @inv into a malloc'ed @out (for other transports: MPI). 0 or -ENOMEM. */
int rn_dw_encode_inv(const struct rn_dw_inv *inv, uint8_t **out, size_t *len);
/* The CHECKS payload of @c into a malloc'ed @out (for MPI). 0 or -ENOMEM. */
int rn_dw_encode_checks(const struct rn_dw_checks *c, uint8_t **out, size_t *len);
void rn_dw_msg_free(struct rn_dw_msg *m);
/* Encode a header for a payload of @len bytes: 0, or -EMSGSIZE over its type's limit. */
int rn_dw_encode_hdr(uint8_t *hdr, uint16_t type, size_t len);
/*
 * Validate a header (RN_DW_HDR_LEN bytes) into @m's type and len: 0, -EBADMSG (not ours,
 * bad length), -EPROTO (another version) or -EMSGSIZE, @why filled.
 */
int rn_dw_decode_hdr(const uint8_t *hdr, struct rn_dw_msg *m, char *why, size_t why_len);
/*
 * RESULTS' header at the front of @n bytes: 0 with its payload's length (the rest of
 * them), -EBADMSG (not ours, not RESULTS, a length that does not match), -EPROTO (another
 * version: a rank of another build), @why filled.
 */
int rn_dw_decode_results_hdr(const uint8_t *buf, size_t n, uint32_t *len, char *why,
			     size_t why_len);
/* A message read piece by piece as its bytes arrive (the server never blocks on one client). */
struct rn_dw_reader {
	uint8_t hdr[RN_DW_HDR_LEN];
	size_t got; /* bytes of header + payload so far */
	struct rn_dw_msg m;
	/*
	 * Asked once a header is valid, before its payload is allocated (@hdr: type and
	 * len): 0 takes it, -errno (@why filled) refuses it. NULL: every valid header.
	 */
	int (*admit)(struct rn_dw_reader *r, const struct rn_dw_msg *hdr, char *why, size_t len);
	void *arg; /* the admit hook's */
};
/* An empty reader without an admit hook (set one after). */
void rn_dw_reader_init(struct rn_dw_reader *r);
void rn_dw_reader_free(struct rn_dw_reader *r);
/*
 * For a transport's reads: where the next bytes of the message go (*@n: how many it still
 * needs), then how many were put there: 0 with the whole message in *@out, -EAGAIN for
 * more, or an error with @why.
 */
uint8_t *rn_dw_reader_room(struct rn_dw_reader *r, size_t *n);
int rn_dw_reader_took(struct rn_dw_reader *r, size_t n, struct rn_dw_msg *out, char *why,
		      size_t len);
/* The same over @n bytes in memory: *@used says how many it took (fuzzing, tests). */
int rn_dw_reader_feed(struct rn_dw_reader *r, const uint8_t *p, size_t n, size_t *used,
		      struct rn_dw_msg *out, char *why, size_t len);
/*
 * Payload decoders: 0 or -EBADMSG with @why filled; they replace @inv / @c (zeroed
 * or filled before). A cause this build does not know is kept ("unknown cause N").
 */
int rn_dw_decode_inv(const struct rn_dw_msg *m, struct rn_dw_inv *inv, char *why, size_t len);
int rn_dw_decode_checks(const struct rn_dw_msg *m, const struct rn_dw_inv *sender,
			const struct rn_dw_inv *receiver, struct rn_dw_checks *c, char *why,
			size_t len);
/* One FINDING (above) at a cursor of the byte codec (rn_codec.h): every finding on any
 * wire of the doctor (TCP, MPI) goes through these. */
struct rn_wbuf;
struct rn_rbuf;
void rn_dw_put_finding(struct rn_wbuf *b, const struct rn_finding *f);
void rn_dw_get_finding(struct rn_rbuf *b, struct rn_finding *f);
/* A WAIT or BUSY payload; its decoder: 0 or -EBADMSG. */
void rn_dw_put_wait(uint8_t *p, int ahead, double session_ms);
int rn_dw_get_wait(const struct rn_dw_msg *m, int *ahead, double *session_ms);

#endif /* RN_DOCTOR_WIRE_H */
