/* SPDX-License-Identifier: MIT */
/*
 * How the peer protocol's messages travel: the pair runner's transport (struct
 * rn_pair_io: TCP below, MPI in doctor_mpi.c), and TCP itself (doctor_io.c): sockets,
 * and each message whole by a deadline.
 */
#ifndef RN_DOCTOR_IO_H
#define RN_DOCTOR_IO_H

#include "doctor_wire.h"

/*
 * The transport of one host pair: send a message, receive the next one (which the
 * runner expects to be @type: MPI keeps a tag per step, TCP reads what comes), and the
 * clock of the probes. 0 or -errno, @why filled on a receive error.
 */
struct rn_pair_io {
	int (*send)(struct rn_pair_io *io, uint16_t type, const void *buf, size_t len);
	int (*recv)(struct rn_pair_io *io, uint16_t type, struct rn_dw_msg *m, char *why,
		    size_t len);
	/*
	 * How long the next probe may wait for its ping, ms: asked by A before each probe
	 * and by B before each answer. Below 0 (A): no time is left for it, the pair is cut.
	 */
	int (*probe_ms)(struct rn_pair_io *io);
};

/* doctor_io.c: TCP */
/*
 * Send one message whole by @deadline_ms (rn_doctor_now_ms): 0, -ETIMEDOUT (the peer
 * does not read), -EMSGSIZE (over its type's limit: nothing sent) or -errno. Deadline
 * 0: blocking, bounded by the socket's timeouts; RN_DW_NOW: one attempt that never
 * waits (a failure may leave part of the message sent: close the connection).
 */
#define RN_DW_NOW (-1.0)
int rn_dw_send(int fd, uint16_t type, const void *payload, size_t len, double deadline_ms);
int rn_dw_send_inv(int fd, const struct rn_dw_inv *inv, double deadline_ms);
int rn_dw_send_checks(int fd, const struct rn_dw_checks *c, double deadline_ms);
/*
 * Receive one message: 0, -EBADMSG (not ours / bad length), -EPROTO (other version),
 * -EMSGSIZE, -ECONNRESET (EOF), -ETIMEDOUT, -errno. @why gets a one-line reason.
 */
int rn_dw_recv(int fd, struct rn_dw_msg *m, char *why, size_t why_len);
/* One whole message by @deadline_ms (rn_doctor_now_ms): a bound per message, not per read. */
int rn_dw_recv_by(int fd, struct rn_dw_msg *m, double deadline_ms, char *why, size_t len);
/*
 * Read what @fd has (never blocks): 0 with the whole message in *@out (the reader starts
 * the next one), -EAGAIN for more, or an error with @why. Reads no byte past the message.
 */
int rn_dw_read_some(int fd, struct rn_dw_reader *r, struct rn_dw_msg *out, char *why, size_t len);
/* Blocking socket helpers with a timeout in seconds. */
int rn_dw_set_timeout(int fd, int secs);
/* Connect by @deadline_ms; the socket's reads and writes then go by deadlines (above). */
int rn_dw_connect(const char *host, int port, double deadline_ms, int *fd, char *why, size_t len);
/*
 * Listen on @port of @addr (an IP address of this host; NULL: every address, both
 * families where IPv6 exists). 0 or -errno.
 */
int rn_dw_listen(const char *addr, int port, int *fd);
/* 1 when @addr is the wildcard of its family (0.0.0.0, ::): every address of this host. */
int rn_dw_addr_is_any(const char *addr);

/* doctor_io.c: the pair transport over a connected socket; each message whole within
 * @budget_ms and by @end_ms, the session's deadline (0: none). */
struct rn_dw_io {
	struct rn_pair_io io; /* first: the runner's view */
	int fd;
	double budget_ms;
	double end_ms;
};
void rn_dw_io_init(struct rn_dw_io *t, int fd, double budget_ms, double end_ms);
/* The deadline of @t's next message: now + budget, at most the session's end. */
double rn_dw_io_deadline(const struct rn_dw_io *t);

#endif /* RN_DOCTOR_IO_H */
