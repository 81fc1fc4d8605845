/* SPDX-License-Identifier: MIT */
/*
 * roce-doctor's local prototypes (one section per file, as rxe_loc.h). Every check
 * is the library's (rn_nic_assess, rn_conn_check_*); the doctor gathers, prints
 * and exchanges. A struct rn_doctor context goes everywhere instead of globals.
 * The pair protocol has headers of its own: doctor_wire.h (the messages), doctor_io.h
 * (their transports), doctor_probe.h (the RDMA probe), doctor_pair.h (the pair checks
 * and the runner).
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
	struct rn_dev *dev;        /* NULL: netdev-only (--netdev without an RDMA port) */
	int err;                   /* -errno when rn_nic_assess could not read the facts */
	const char *gid_why;       /* policy, primary, forced, none */
	struct rn_sysctls sys_dev; /* conf/<netdev> */
	struct rn_sysctls sys_eff; /* combined with conf/all */
	int rule_prio;             /* the 'from <ip>' rule in force, -1 none */
	uint32_t rule_table;
	/* What the metrics export: the link's history, the RDMA port's counters by name. */
	struct rn_flap_facts flap; /* -1 each: unread */
	struct rn_ctr_named *ctr;  /* owned, NULL: none (netdev-only, or unread) */
	int nctr;
	const char *ctr_driver;    /* whose counter table applies ("unknown"), NULL: none */
	char ctr_lacks[256];       /* the roles that driver has no counter of, "" none */
};

struct rn_doctor {
	struct rn_config cfg;
	int bad_env; /* environment values rn_config_load rejected */
	int json;
	int verbose;
	int once;
	int no_rdma;
	int probe_streams;   /* probes stream bandwidth (--min-gbps): loss-tolerant QPs */
	int port;
	int timeout_s;       /* -1: the command's default */
	const char *listen;  /* serve --listen ADDR, NULL: every address */
	const char *netdevs; /* --netdev list, NULL: RDMA discovery */
	char names[RN_DOCTOR_MAX_NICS][IF_NAMESIZE]; /* ... split once (rn_doctor_set_netdevs) */
	int nnames;
	int prom;             /* --prometheus: the host check as metrics on stdout */
	const char *textfile; /* --textfile FILE: the same, written atomically to FILE */
	int cni;              /* --cni: the pod's fix as NetworkAttachmentDefinitions */
	const char *nfd;      /* --nfd FILE: node-feature-discovery labels, whole */
	char hostname[64];
	/* gathered */
	struct rn_host *host;
	struct rn_dev *devs[RN_MAX_DEVS];
	int ndevs;
	char skipped[1024];  /* ports discovery left out, and why */
	int skipped_problem; /* a port left out for another reason than NCCL_IB_HCA */
	struct rn_doctor_nic nics[RN_DOCTOR_MAX_NICS];
	int nnics;
	double gather_ms;           /* snapshot + discovery + every NIC verdict */
	double snapshot_ms, discover_ms, verdict_ms;
	struct rn_probe_eng *probe; /* its RDMA probe's engine (doctor_rdma.c), NULL: none */
	FILE *out;
	char err[512];              /* the first error (exit 2): --json reports it */
	const char *err_kind;       /* its kind there, NULL: "system" ("busy": try later) */
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
/*
 * The same IP address (the port aside): serve's clients of one host, the mesh's answers
 * from the NIC they must come from.
 */
struct sockaddr_storage;
int rn_doctor_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
/* The same host: names equal up to their first dot (a short name matches its long one). */
int rn_doctor_same_host(const char *a, const char *b);
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
int rn_doctor_write_file(const char *path, void (*fill)(FILE *f, const void *arg), const void *arg);

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
	char driver[RN_FACT_LEN];   /* the netdev's device/driver; "none": a virtual netdev */
	char fw[RN_FACT_LEN];       /* /sys/class/infiniband/<ibdev>/fw_ver; "none": no RDMA */
	struct rn_sysctls dev, eff; /* conf/<netdev>, and combined with conf/all */
};
struct rn_doctor_facts {
	/* the version inside the plugin NCCL would load, or "not found", "unknown" (a library
	 * without our tag) */
	char plugin[RN_FACT_LEN];
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

/* doctor_peer.c */
int rn_doctor_cmd_peer(struct rn_doctor *d, int argc, char **argv);

/* doctor_serve.c: `serve`, many clients waiting at once (see the file). */
int rn_doctor_cmd_serve(struct rn_doctor *d, int argc, char **argv);

#endif /* RN_DOCTOR_H */
