/* SPDX-License-Identifier: MIT */
/*
 * `roce-doctor mesh` (doctor_mesh.c, the agent) and `roce-doctor localize`
 * (doctor_localize.c): what they share, kept free of sockets and threads so that the unit
 * tests run it alone (doctor_mesh_stats.c): the probe rate's token bucket, the rotation
 * over NIC pairs, each pair's window of outcomes (loss, RTT percentiles), the pair
 * metrics' rendering, and the verdicts over pairs (NIC, host, link between groups).
 */
#ifndef RN_DOCTOR_MESH_H
#define RN_DOCTOR_MESH_H

#include <stdint.h>
#include <stdio.h>

#define RN_MESH_NICS 8          /* a host's NICs the mesh pairs (the first 8 of the doctor's) */
#define RN_MESH_WIN 16          /* outcomes kept per NIC pair: loss and RTT over these */
#define RN_MESH_DOWN_AFTER 3    /* losses in a row that make a pair unreachable */
#define RN_MESH_LOST UINT32_MAX /* an outcome: no answer by the probe's deadline */

/* A token bucket: @rate tokens a second, at most @burst saved. Times in seconds. */
struct rn_mesh_bucket {
	double tokens, rate, burst, t;
};
void rn_mesh_bucket_init(struct rn_mesh_bucket *b, double rate, double burst, double now);
/* 1 when a token was taken at @now, 0 when none is left (nothing taken). */
int rn_mesh_bucket_take(struct rn_mesh_bucket *b, double now);

/*
 * The rotation: which of @n NIC pairs get the probes this tick. From the cursor on, round
 * the ring, the pairs @ready says may go now (their last probe a second old and answered
 * or expired), at most @max; the cursor moves past the last one taken, so every pair gets
 * its turn however small @max is. Returns how many went to @out.
 */
struct rn_mesh_sched {
	unsigned int cursor;
};
int rn_mesh_sched_pick(struct rn_mesh_sched *s, int n, int (*ready)(void *arg, int idx), void *arg,
		       int max, int *out);

/* One NIC pair's last RN_MESH_WIN outcomes (RTT in us, or RN_MESH_LOST) and its totals. */
struct rn_mesh_win {
	uint32_t us[RN_MESH_WIN];
	int n, head;
	int lost_run; /* losses in a row, the newest last */
	uint64_t sent, lost;
};
void rn_mesh_win_add(struct rn_mesh_win *w, uint32_t us);

struct rn_mesh_figs {
	int n, answered;     /* outcomes in the window, answered of them */
	double loss;         /* lost / n (0 when n is 0) */
	double p50_s, p99_s; /* of the answered ones (nearest rank), 0 when none */
};
void rn_mesh_win_figs(const struct rn_mesh_win *w, struct rn_mesh_figs *f);
/* The nearest-rank @q quantile (0 < q <= 1) of @n sorted values, 0 for none. */
uint32_t rn_mesh_pct(const uint32_t *sorted, int n, double q);

/* One NIC pair as the metrics show it. */
struct rn_mesh_view {
	const char *host, *nic, *peer_host, *peer_nic, *group, *peer_group;
	const char *kind;  /* "udp" (echo from the NIC's address) or "rc" (an RC ping) */
	int up;
	const char *cause; /* the catalogue id when !@up, else NULL */
	struct rn_mesh_figs figs;
	double base_s;     /* the RTT baseline (EWMA of answers, kept through losses) */
	uint64_t sent, lost;
};
/* The agent's own figures. */
struct rn_mesh_self {
	const char *host;
	int peers, peers_reached, pairs;
	uint64_t probes_sent, echoes_sent, echoes_dropped, bad_packets, checks_run, checks_failed;
	int rc_nics, rc_qps;                  /* NICs with an RC listener; send connections open */
	uint64_t rc_probes_sent, rc_answered; /* RC pings sent; peers' RC pings received */
	double started_s;                     /* Unix time */
};
/* Every pair's series, then the agent's, in Prometheus text exposition. */
void rn_mesh_render(FILE *f, const struct rn_mesh_view *v, int n, const struct rn_mesh_self *s);
/* A label value, escaped as the format says (doctor_prom.c). */
void rn_doctor_prom_label(FILE *f, const char *name, const char *val, int comma);

/* The plugin's journal of failed comms as roce_comm_failures_total (doctor_prom.c). */
void rn_doctor_prom_comm_failures(FILE *f);

/* The localisation (doctor_mesh_stats.c), the same arithmetic as the shipped rules. */
struct rn_mesh_obs {
	char host[64], nic[32], peer_host[64], peer_nic[32], group[64], peer_group[64];
	int up;
	char cause[48];
	double base_s; /* its RTT baseline, 0: none read */
};
enum rn_mesh_blame { RN_MESH_BLAME_NIC, RN_MESH_BLAME_HOST, RN_MESH_BLAME_LINK };
struct rn_mesh_verdict {
	enum rn_mesh_blame blame;
	char host[64], nic[32];         /* NIC: both; HOST: host */
	char group[64], peer_group[64]; /* LINK: the two groups */
	int bad, of;                    /* the pairs behind it: failing, of all */
	char cause[48];                 /* the most frequent cause among them */
};
/*
 * From @n pair observations (either end's), the verdicts into @out (room for @max): a NIC
 * that fails with more than half of its peers in its own group (all of them where groups
 * are not given), unless every NIC of its host does (then the host); two groups whose
 * pairs across fail more than half the time while pairs inside each group fail less than
 * a quarter of the time (the link or switch between them). Returns the verdicts found
 * (more than @max: only @max written), -ENOMEM.
 */
int rn_mesh_localize(const struct rn_mesh_obs *obs, int n, struct rn_mesh_verdict *out, int max);
/*
 * Groups from RTT where none were given: the hosts whose fastest NIC pair's baseline RTT is
 * on the near side of the largest gap between the host pairs' RTTs (a factor of
 * RN_MESH_RTT_GAP at least) are one group, named "near-" and its first host (by name).
 * Rewrites @obs' group and peer_group. Returns the groups found (1: no such gap, nothing
 * rewritten), -E2BIG over RN_MESH_RTT_HOSTS hosts, -ENOMEM.
 */
#define RN_MESH_RTT_GAP 3.0
#define RN_MESH_RTT_HOSTS 1024
int rn_mesh_rtt_groups(struct rn_mesh_obs *obs, int n);
/* What a parsed series is. */
enum rn_mesh_series { RN_MESH_UP, RN_MESH_CAUSE, RN_MESH_BASE };
/*
 * Parse one line of Prometheus text exposition into @o when it is a roce_mesh_pair_up,
 * roce_mesh_pair_cause or roce_mesh_pair_rtt_baseline_seconds sample (which one in *@kind).
 * 0, -ENOENT another line, -EBADMSG a malformed one.
 */
int rn_mesh_parse_line(const char *line, struct rn_mesh_obs *o, enum rn_mesh_series *kind);

/*
 * doctor_mesh_sweep.c: a sweep's JSON report (schema roce-doctor-sweep/1) as observations:
 * every NIC pair between two of its hosts, up unless its bad_pairs lists it (its first
 * cause, else its result: "no-answer" for a host pair that never answered, every NIC pair
 * of it), down with the host's status for a host the sweep has no results of ("missing",
 * "hung"; its one NIC "?"); one group ("all"). @add gets each (its 0 or -errno ends it).
 * 0, -EBADMSG (@why: not JSON, or not a sweep report), -ENOMEM, or @add's error.
 */
int rn_mesh_sweep_obs(const char *json, int (*add)(void *arg, const struct rn_mesh_obs *o),
		      void *arg, char *why, size_t len);

/*
 * doctor_mesh_rc.c: the RC probes of one thread, through its own doctor context's probe
 * engine (never shared): a listener on each NIC with an RDMA port, whose handle peers ask
 * for over UDP, and one send connection per sampled NIC pair.
 */
#define RN_MESH_RC_ACCEPT 64       /* peers' connections answered at once */
#define RN_MESH_RC_IDLE_MS 30000   /* a connection unused this long is closed */
#define RN_MESH_RC_HANDLE 128      /* RN_HANDLE_SIZE */
#define RN_MESH_RC_CONNECT_MS 5000 /* a ping that must connect first: this much more */
struct rn_doctor;
struct rn_mesh_rc;
struct rn_mesh_rc_stats {
	uint64_t accepted, answered; /* peers' connections and pings */
	int qps;                     /* our send connections open now */
};
/*
 * On @d (gathered, RDMA on), for the prober's @nnics NICs named by @netdev: listeners on
 * those with an RDMA port; at most @max_qps send connections, a ping's deadline
 * @timeout_ms. NULL with errno (ENODEV: no NIC can do RC) and @why.
 */
struct rn_mesh_rc *rn_mesh_rc_new(struct rn_doctor *d, const char (*netdev)[16], int nnics,
				  int max_qps, int timeout_ms, char *why, size_t len);
/* Our NIC @nic's listener handle (RN_MESH_RC_HANDLE bytes): 0, -ENODEV none. */
int rn_mesh_rc_handle(const struct rn_mesh_rc *rc, int nic, void *handle);
/*
 * Start a ping from our NIC @i to @peer's NIC @j (listening at @handle): on the pair's
 * connection, made when there is none. 0, -EBUSY one in flight, -ENOSPC every connection
 * busy, -ENODEV no RC on @i.
 */
int rn_mesh_rc_ping(struct rn_mesh_rc *rc, const char *peer, int i, int j, const void *handle,
		    double now);
/* A ping's outcome: RTT in us, or RN_MESH_LOST with what failed. */
typedef void rn_mesh_rc_done_fn(void *arg, const char *peer, int i, int j, uint32_t us,
				const char *why);
/* Progress everything (never blocks); 1 while a ping is in flight, else 0. */
int rn_mesh_rc_step(struct rn_mesh_rc *rc, double now, rn_mesh_rc_done_fn *done, void *arg,
		    struct rn_mesh_rc_stats *st);
void rn_mesh_rc_free(struct rn_mesh_rc *rc);

/*
 * doctor_localize.c, for the health check's confirmation: a mesh agent's metrics text from
 * @src (a file, or http://HOST:PORT[/PATH], /metrics by default), malloc'ed; NULL with
 * @why. Then the pair series in @text between this host and @node (either end; a short
 * name matches its long one): the pairs up and down (each kind of probe a series), the
 * first down one's cause into @cause. Returns up + down.
 */
char *rn_mesh_read(const char *src, char *why, size_t len);
int rn_mesh_pairs_with(const char *text, const char *node, int *up, int *down, char *cause,
		       size_t len);

/* doctor_mesh.c, doctor_localize.c: the commands (their own options, as health) */
int rn_doctor_mesh(int argc, char **argv);
int rn_doctor_localize(int argc, char **argv);

#endif /* RN_DOCTOR_MESH_H */
