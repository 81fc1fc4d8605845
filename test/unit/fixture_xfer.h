/* SPDX-License-Identifier: MIT */
/*
 * A transport test bed in one process: an engine over fake_verbs + fake_wire
 * devices, OOB over loopback TCP, and helpers that drive listen/connect/accept
 * and transfers the way NCCL does (calling again until done).
 */
#ifndef FIXTURE_XFER_H
#define FIXTURE_XFER_H

#include "fake_verbs.h"
#include "fake_wire.h"
#include "rn_conn.h"
#include "rn_mr.h"
#include "rn_net.h"

#define FX_DEVS 2

struct fx {
	struct rn_engine eng;
	struct fake_dev fdevs[FX_DEVS];
	struct rn_dev devs[FX_DEVS];
};

/* NCCL_ROCE_FAILOVER of the engines fx_setup makes (0 unless a test sets it first). */
extern int fx_failover;
/* NCCL_ROCE_RECOVERY of those engines (0 unless a test sets it first; delay 20 ms). */
extern int fx_recovery;

/* Bring up @f with FX_DEVS devices (rxe0/rxe1, 8 MiB max message, is_rxe). */
void fx_setup(struct fx *f);
/* Tear down; returns the number of leaked verbs objects (0 expected). */
int fx_teardown(struct fx *f);

/* Listen on @rdev, connect from @sdev; 0 or the first error of either side. */
/* What the fixture's netlink link_get says of every NIC's netdev: admin-up (default) or down. */
extern int fx_link_admin_up;

int fx_connect(struct fx *f, int sdev, int rdev, int tc, struct rn_send_comm **sc,
	       struct rn_recv_comm **rc);

/* Poll @req until done or an error; returns rn_test's result. */
int fx_wait(struct rn_req *req, int *sizes);

/* isend until it hands back a request (bounded); returns rn_isend's result. */
int fx_isend(struct rn_send_comm *sc, void *data, size_t size, int tag, struct rn_mr *mr,
	     struct rn_req **req);

/* A malloc'd buffer of @n bytes (1 when @n is 0) holding a pattern that @seed varies. */
void *fx_pattern(size_t n, int seed);
/*
 * Close @sc and @rc and tear @f down; returns fx_teardown's leak count, plus one when the
 * fake wire saw a CQ overflow or an RNR (0 expected).
 */
int fx_close(struct fx *f, struct rn_send_comm *sc, struct rn_recv_comm *rc);

/* Log capture: the last WARN, the number of WARNs and INFOs. */
extern char fx_last_warn[2048];
extern int fx_nwarn, fx_ninfo;
void fx_log_reset(void);
/* 1 when some INFO line since the reset contained @s. */
int fx_info_seen(const char *s);
int fx_info_count(const char *s);
/* 1 when some WARN line since the reset contained @s. */
int fx_warn_seen(const char *s);
/* 1 when a TRACE line since fx_log_reset() contains @s */
int fx_trace_seen(const char *s);
int fx_warn_count(const char *s);

#endif /* FIXTURE_XFER_H */
