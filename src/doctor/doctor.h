/* SPDX-License-Identifier: MIT */
/*
 * roce-doctor's local prototypes (one section per file, as rxe_loc.h). Every check
 * is the library's (rn_nic_assess, rn_conn_check_*); the doctor gathers, prints
 * and exchanges. A struct rn_doctor context goes everywhere instead of globals.
 */
#ifndef RN_DOCTOR_H
#define RN_DOCTOR_H

#include <net/if.h>
#include <stdint.h>
#include <stdio.h>

#include "rn_cli.h"
#include "rn_counters.h"
#include "rn_dev.h"
#include "rn_flap.h"
#include "rn_host.h"
#include "rn_param.h"
#include "rn_route.h"

#define RN_DOCTOR_VERSION RN_VERSION
#define RN_DOCTOR_PORT 18515
#define RN_DOCTOR_MAX_NICS 32
/* peer/serve: each message's bound, and one RDMA probe's */
#define RN_DOCTOR_IO_TIMEOUT_S 10
#define RN_DOCTOR_PROBE_TIMEOUT_MS 8000
/* peer without --timeout: the whole run (a queue, the exchange, every RDMA probe) */
#define RN_DOCTOR_PEER_RUN_S 600
/* Exit codes, the tools' table (rn_cli.h): no problem found, problems found, usage or
 * system error, no RDMA device (nothing to check). */
#define RN_DOCTOR_OK RN_EXIT_OK
#define RN_DOCTOR_PROBLEMS RN_EXIT_FAIL
#define RN_DOCTOR_ERROR RN_EXIT_USAGE
#define RN_DOCTOR_NODEV RN_EXIT_NODEV

/* One NIC as the doctor shows it: the library's rn_nic plus what explains it. */
struct rn_doctor_nic {
	struct rn_nic nic;
	struct rn_dev *dev;          /* NULL: netdev-only (--netdev without an RDMA port) */
	int err;                     /* -errno when rn_nic_assess could not read the facts */
	const char *gid_why;         /* policy, primary, forced, none */
	struct rn_sysctls sys_dev;   /* conf/<netdev> */
	struct rn_sysctls sys_eff;   /* combined with conf/all */
	int rule_prio;               /* the 'from <ip>' rule in force, -1 none */
	uint32_t rule_table;
	/* The kernel's own answer for a would-be peer in the subnet, without and with oif. */
	struct rn_route_answer rt;
	/* What the metrics export: the link's history, the RDMA port's counters by name. */
	struct rn_flap_facts flap;   /* -1 each: unread */
	struct rn_ctr_named *ctr;    /* owned, NULL: none (netdev-only, or unread) */
	int nctr;
	const char *ctr_driver;      /* whose counter table applies ("unknown"), NULL: none */
	char ctr_lacks[256];         /* the roles that driver has no counter of, "" none */
};

struct rn_doctor {
	struct rn_config cfg;
	int bad_env;                 /* environment values rn_config_load rejected */
	int json;
	int verbose;
	int once;
	int no_rdma;
	int probe_streams;           /* probes stream bandwidth (--min-gbps): loss-tolerant QPs */
	int port;
	int timeout_s;               /* -1: the command's default */
	const char *listen;          /* serve --listen ADDR, NULL: every address */
	const char *netdevs;         /* --netdev list, NULL: RDMA discovery */
	char names[RN_DOCTOR_MAX_NICS][IF_NAMESIZE]; /* ... split once (rn_doctor_set_netdevs) */
	int nnames;
	int prom;                    /* --prometheus: the host check as metrics on stdout */
	const char *textfile;        /* --textfile FILE: the same, written atomically to FILE */
	int cni;                     /* --cni: the pod's fix as NetworkAttachmentDefinitions */
	const char *nfd;             /* --nfd FILE: node-feature-discovery labels, whole */
	char hostname[64];
	/* gathered */
	struct rn_host *host;
	struct rn_dev *devs[RN_MAX_DEVS];
	int ndevs;
	char skipped[1024];          /* ports discovery left out, and why */
	int skipped_problem;         /* a port left out for another reason than NCCL_IB_HCA */
	struct rn_doctor_nic nics[RN_DOCTOR_MAX_NICS];
	int nnics;
	double gather_ms;            /* snapshot + discovery + every NIC verdict */
	double snapshot_ms, discover_ms, verdict_ms;
	FILE *out;
	char err[512];               /* the first error (exit 2): --json reports it */
	const char *err_kind;        /* its kind there, NULL: "system" ("busy": try later) */
};

/* doctor_util.c (doctor_main.c is main and the command table only) */
double rn_doctor_now_ms(void);
const char *rn_doctor_sev_str(enum rn_severity s);
/* "rxe0:1" or the netdev for a netdev-only NIC. */
const char *rn_doctor_nic_name(const struct rn_nic *nic, char *buf, size_t len);
/* The library's log lines: kept (the last WARN explains a failed probe), shown with -v. */
void rn_doctor_log_init(int verbose);
const char *rn_doctor_last_warn(void);
void rn_doctor_clear_warn(void);
/*
 * An error that ends the command with exit 2: "roce-doctor: <msg>" on stderr, the message
 * kept for --json's error object (main prints it). Returns RN_DOCTOR_ERROR.
 */
int rn_doctor_err(struct rn_doctor *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "roce-doctor serve: ..." on stderr. */
void rn_doctor_slog(const char *fmt, ...) __rn_printf(1, 2);
/* Split --netdev's comma list into d->names once; -EINVAL (message kept) on a bad name. */
int rn_doctor_set_netdevs(struct rn_doctor *d, const char *list);
/*
 * A file the doctor may replace with rn_doctor_write_file: a name (ending in @suffix when
 * not NULL) in an existing directory, absent or a regular file; never a symbolic link, a
 * device or a directory (as root, a rename would replace /dev/full or /etc/passwd). 0, or
 * -errno with the reason in @why.
 */
int rn_doctor_target_ok(const char *path, const char *suffix, char *why, size_t len);
/*
 * Write @path whole or not at all (for collectors that may read it any time):
 * @fill writes into a temporary beside it, which is synced and renamed over @path.
 * 0 or -errno; the temporary never stays behind.
 */
int rn_doctor_write_file(const char *path, void (*fill)(FILE *f, const void *arg),
			 const void *arg);

/* doctor_model.c: gathered once, then rendered */
/* Discover, snapshot and judge this host's NICs. 0 or -errno (message printed). */
int rn_doctor_gather(struct rn_doctor *d);
void rn_doctor_release(struct rn_doctor *d);
/* 1 when anything on this host needs fixing; one NIC's part of it. */
int rn_doctor_host_problems(const struct rn_doctor *d);
/* A cause roce-policy-routing takes away (its fix is the script). */
int rn_doctor_script_fixes(enum rn_cause c);
int rn_doctor_nic_problem(const struct rn_doctor_nic *dn);
/* @dn's link history and its RDMA port's counters into the model (gather calls it). */
void rn_doctor_nic_counters(struct rn_doctor_nic *dn);

/* doctor_facts.c: what the hosts of a fleet must agree on (the sweep compares them) */
/* NCCL puts this before its version for `strings` (src/init.cc, VERSION_STRING). */
#define RN_NCCL_VERSION_TAG "NCCL version "
#define RN_FACT_LEN 64
struct rn_doctor_nic_facts {
	char driver[RN_FACT_LEN];    /* the netdev's device/driver; "none": a virtual netdev */
	char fw[RN_FACT_LEN];        /* /sys/class/infiniband/<ibdev>/fw_ver; "none": no RDMA */
	struct rn_sysctls dev, eff;  /* conf/<netdev>, and combined with conf/all */
};
struct rn_doctor_facts {
	char plugin[RN_FACT_LEN];    /* the version inside the plugin NCCL would load, or
				      * "not found", "unknown" (a library without our tag) */
	char plugin_path[256];       /* "" not found */
	char kernel[RN_FACT_LEN];    /* uname -r */
	char rdma_core[RN_FACT_LEN]; /* of the libibverbs this process runs, or "unknown" */
	char nccl[RN_FACT_LEN];      /* libnccl.so.2's own version string, "not found", "unknown" */
	char nccl_path[256];
	struct rn_sysctls all;       /* conf/all */
	int nnics;                   /* as the doctor's NICs, in their order */
	struct rn_doctor_nic_facts nics[RN_DOCTOR_MAX_NICS];
};
/* This host's facts (after rn_doctor_gather, or without NICs when it failed). 0. */
int rn_doctor_facts_read(const struct rn_doctor *d, struct rn_doctor_facts *f);
/* One NIC's driver and firmware (@ibdev NULL: a netdev without an RDMA port). */
void rn_doctor_facts_nic(const char *netdev, const char *ibdev, struct rn_doctor_nic_facts *n);
/* In the byte codec (rn_codec.h); get: 0 or -EBADMSG (@f zeroed). */
struct rn_wbuf;
struct rn_rbuf;
void rn_doctor_facts_put(struct rn_wbuf *b, const struct rn_doctor_facts *f);
int rn_doctor_facts_get(struct rn_rbuf *b, struct rn_doctor_facts *f);
/*
 * @name's path as the dynamic loader finds it (a name with a '/' is a path): @first_dir
 * (NULL: none), LD_LIBRARY_PATH, /etc/ld.so.cache, the system directories. 0 or -ENOENT.
 */
int rn_doctor_find_lib(const char *name, const char *first_dir, char *out, size_t len);
/* The version that follows @tag (and starts with a digit) in @path's .rodata. 0, -ENOENT. */
int rn_doctor_file_tag(const char *path, const char *tag, char *out, size_t len);
/* "2.21.5" of ".../libnccl.so.2.21.5" for @stem "libnccl.so.", NULL when it has none. */
const char *rn_doctor_lib_version(const char *file, const char *stem, char *out, size_t len);

/* doctor_host.c */
int rn_doctor_cmd_host(struct rn_doctor *d, int argc, char **argv);
/*
 * Human-readable findings, one "name cause: msg" line, then where each part of the
 * fix runs ("fix (on hostb): ...", "then fix: ...") and "what to do: ..." for advice.
 * @maker: the host that made the finding (its "" hosts), NULL for this one.
 */
void rn_doctor_print_finding(FILE *f, const char *who, const struct rn_finding *fd,
			     const char *maker);
/* The fix lines of @fd alone, each after @indent; "fix" + @label names the finding. */
void rn_doctor_print_fix(FILE *f, const char *indent, const char *label,
			 const struct rn_finding *fd, const char *maker);
struct rn_doctor_item {
	const char *who;
	const struct rn_finding *f;
	const char *host; /* the host that made @f, NULL: this one */
};
/*
 * Findings grouped by cause, each distinct fix once (one screen for 8 NICs): more
 * than four distinct fixes for one cause show two unless @all.
 */
void rn_doctor_print_grouped(FILE *f, const struct rn_doctor_item *it, int n, int all);
void rn_doctor_json_nic(struct rn_doctor *d, struct rn_json *j, const struct rn_doctor_nic *dn);

/* doctor_health.c: `roce-doctor health ...` (its own options), for Slurm's HealthCheckProgram
 * and Prolog: drains this node on a problem, resumes it when it drained it itself. */
int rn_doctor_health(int argc, char **argv);

/* doctor_prom.c: Prometheus text exposition of the host check (after gather). */
int rn_doctor_prom(struct rn_doctor *d, const char *textfile, int gather_err);
/* doctor_k8s.c: --cni and --nfd FILE (after gather). */
int rn_doctor_cni(struct rn_doctor *d, int gather_err);
int rn_doctor_nfd(struct rn_doctor *d, const char *file, int gather_err);

/* doctor_json.c: shared objects over the one JSON writer (rn_json.h) */
/*
 * A finding as an object: cause, severity, message, fix (commands, "" none), fix_host
 * (where they run: the finding's own host or @maker, the host that made it), pre_fix
 * and pre_host (commands to run first, "" none), advice (text, "" none).
 */
void rn_json_finding(struct rn_json *j, const struct rn_finding *f, const char *maker);
void rn_json_sysctls(struct rn_json *j, const char *key, const struct rn_sysctls *s);

/* doctor_wire.c: the peer protocol (see the top of that file); doctor_io.c: its TCP transport. */
#define RN_DW_MAGIC 0x524e4452u /* "RNDR" */
#define RN_DW_VERSION 3              /* 2: findings carry whole, length-prefixed texts */
					  /* 3: and where their fixes run, and advice */
#define RN_DW_VERSION_MIN 2          /* a receiver still reads version 2 */
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
};
/* INV's caps (a version-3 receiver ignores them): the sender reads WAIT and BUSY. */
#define RN_DW_CAP_WAIT 1u
#define RN_DW_WAIT_LEN 8        /* WAIT, BUSY: be16 ahead, be16 0, be32 a session's ms */
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
	int active_mtu;             /* bytes, 0 unknown */
	int nfindings;
	struct rn_finding *findings; /* owned: rn_dw_inv_clear() */
};

struct rn_dw_inv {
	char host[64];
	int nnics;
	unsigned int caps;          /* RN_DW_CAP_* */
	struct rn_dw_nic nics[RN_DOCTOR_MAX_NICS];
};

/* One pair as its sender checked it: sender's NIC @local -> the other side's @remote. */
struct rn_dw_pair {
	int local, remote;
	int status;                 /* 0 ok, 1 problem, 2 not checked */
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
	uint8_t *payload;           /* malloc'ed, freed by rn_dw_msg_free */
};

/* 0 or -ENOMEM; @inv (zeroed or filled before) is replaced. */
int rn_dw_inv_from_doctor(const struct rn_doctor *d, struct rn_dw_inv *inv);
/* Release the findings of @inv / @c; they are empty after. */
void rn_dw_inv_clear(struct rn_dw_inv *inv);
void rn_dw_checks_clear(struct rn_dw_checks *c);
void rn_dw_peer_facts(const struct rn_dw_inv *inv, int idx, struct rn_peer_facts *out);
/* The largest payload of message @type, 0 for a type this build does not know. */
size_t rn_dw_type_max(unsigned int type);
/*
 * Send one message whole by @deadline_ms (rn_doctor_now_ms): 0, -ETIMEDOUT (the peer
 * does not read), -EMSGSIZE (over its type's limit: nothing sent) or -errno. Deadline
 * 0: blocking, bounded by the socket's timeouts; RN_DW_NOW: one attempt that never
 * waits (a failure may leave part of the message sent: close the connection).
 */
#define RN_DW_NOW (-1.0)
int rn_dw_send(int fd, uint16_t type, const void *payload, size_t len, double deadline_ms);
int rn_dw_send_inv(int fd, const struct rn_dw_inv *inv, double deadline_ms);
/* The INV payload of @inv into a malloc'ed @out (for other transports: MPI). 0 or -ENOMEM. */
int rn_dw_encode_inv(const struct rn_dw_inv *inv, uint8_t **out, size_t *len);
int rn_dw_send_checks(int fd, const struct rn_dw_checks *c, double deadline_ms);
/* The CHECKS payload of @c into a malloc'ed @out (for MPI). 0 or -ENOMEM. */
int rn_dw_encode_checks(const struct rn_dw_checks *c, uint8_t **out, size_t *len);
/*
 * Receive one message: 0, -EBADMSG (not ours / bad length), -EPROTO (other version),
 * -EMSGSIZE, -ECONNRESET (EOF), -ETIMEDOUT, -errno. @why gets a one-line reason.
 */
int rn_dw_recv(int fd, struct rn_dw_msg *m, char *why, size_t why_len);
void rn_dw_msg_free(struct rn_dw_msg *m);
/* Encode a header for a payload of @len bytes: 0, or -EMSGSIZE over its type's limit. */
int rn_dw_encode_hdr(uint8_t *hdr, uint16_t type, size_t len);
/* Validate a header (RN_DW_HDR_LEN bytes) into @m's type and len: 0 or as rn_dw_recv. */
int rn_dw_decode_hdr(const uint8_t *hdr, struct rn_dw_msg *m, char *why, size_t why_len);
/* One whole message by @deadline_ms (rn_doctor_now_ms): a bound per message, not per read. */
int rn_dw_recv_by(int fd, struct rn_dw_msg *m, double deadline_ms, char *why, size_t len);
/* A message read piece by piece as its bytes arrive (the server never blocks on one client). */
struct rn_dw_reader {
	uint8_t hdr[RN_DW_HDR_LEN];
	size_t got;                 /* bytes of header + payload so far */
	struct rn_dw_msg m;
	/*
	 * Asked once a header is valid, before its payload is allocated (@hdr: type and
	 * len): 0 takes it, -errno (@why filled) refuses it. NULL: every valid header.
	 */
	int (*admit)(struct rn_dw_reader *r, const struct rn_dw_msg *hdr, char *why, size_t len);
	void *arg;                  /* the admit hook's */
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
/*
 * Read what @fd has (never blocks): 0 with the whole message in *@out (the reader starts
 * the next one), -EAGAIN for more, or an error with @why. Reads no byte past the message.
 */
int rn_dw_read_some(int fd, struct rn_dw_reader *r, struct rn_dw_msg *out, char *why,
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
/* Blocking socket helpers with a timeout in seconds. */
int rn_dw_set_timeout(int fd, int secs);
/* Connect by @deadline_ms; the socket's reads and writes then go by deadlines (above). */
int rn_dw_connect(const char *host, int port, double deadline_ms, int *fd, char *why,
		  size_t len);
/*
 * Listen on @port of @addr (an IP address of this host; NULL: every address, both
 * families where IPv6 exists). 0 or -errno.
 */
int rn_dw_listen(const char *addr, int port, int *fd);
/* 1 when @addr is the wildcard of its family (0.0.0.0, ::): every address of this host. */
int rn_dw_addr_is_any(const char *addr);
/* A WAIT or BUSY payload; its decoder: 0 or -EBADMSG. */
void rn_dw_put_wait(uint8_t *p, int ahead, double session_ms);
int rn_dw_get_wait(const struct rn_dw_msg *m, int *ahead, double *session_ms);

/* doctor_arp.c */
/*
 * ARP uniqueness for every checked IPv4 pair of @c: answers from a MAC other than
 * the one @remote advertised become neigh-wrong-mac. Returns the pairs probed, or
 * -errno (-EPERM without CAP_NET_RAW: nothing probed).
 */
int rn_doctor_arp_unique(struct rn_doctor *d, const struct rn_dw_inv *remote,
			 const unsigned char *scope, struct rn_dw_checks *c);

/* doctor_peer.c */
int rn_doctor_cmd_peer(struct rn_doctor *d, int argc, char **argv);

/* doctor_serve.c: `serve`, many clients waiting at once (see the file). */
int rn_doctor_cmd_serve(struct rn_doctor *d, int argc, char **argv);

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
	void *comm;                 /* rn_send_comm or rn_recv_comm */
	struct rn_mr *mr;
	char *buf;                  /* RN_BW_WINDOW slots of RN_BW_MSG */
	struct rn_req *reqs[RN_BW_WINDOW];
	int count, posted, done;
	size_t sizes[RN_BW_WINDOW];  /* of each posted send */
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
	int ret;                    /* 0 measured, -errno the stream failed */
	uint64_t bytes;
	double ms, gbps;
	int capped;
	char why[RN_DW_WHY_MAX];    /* when @ret */
};
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
/* doctor_ctr.c: the local NIC's port counters around a failed RDMA probe */
#define RN_PROBE_CTR_MAX 16
struct rn_probe_ctr {
	int read;                   /* 1: read before and after; 0: not taken; -errno: unread */
	char nic[80];               /* "rxe0:1" */
	const char *driver;         /* whose counter table (rn_ctr_driver) */
	double secs;                /* between the two reads */
	int n, more;                /* counters that went up: kept, and left out beyond the max */
	struct {
		char name[64];      /* the driver's own name */
		int role;           /* the library table's role (rn_ctr_role_name), -1 none */
		uint64_t d;
	} delta[RN_PROBE_CTR_MAX];
	char lacks[256];            /* the roles the driver has no counter of, "" none */
	struct rn_finding shows;    /* what rn_ctr_judge makes of them; cause 0: nothing */
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
void rn_probe_release(void);
/* The server half in two steps, for callers that carry the handle themselves (the sweep). */
struct rn_listen_comm;
struct rn_probe_srv {
	struct rn_listen_comm *lc;
};
/* Listen on NIC @nic; @handle gets RN_HANDLE_SIZE bytes. 0 or -errno (@why filled). */
int rn_probe_listen(struct rn_doctor *d, int nic, void *handle, struct rn_probe_srv *srv,
		    char *why, size_t len);
/* Accept one connection, receive the ping (and the stream, @bw), close the listener. 0 or
 * -errno. */
int rn_probe_accept_ping(struct rn_probe_srv *srv, int timeout_ms, int bw, char *why, size_t len);
void rn_probe_srv_close(struct rn_probe_srv *srv);

#endif /* RN_DOCTOR_H */
