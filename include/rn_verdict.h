/* SPDX-License-Identifier: MIT */
/*
 * The verdict catalogue (src/verdict.c): every cause the plugin and the doctor can
 * name, each with an id, a severity, a one-line message and the commands that fix
 * it. Tests assert on ids; the wording lives in one place.
 */
#ifndef RN_VERDICT_H
#define RN_VERDICT_H

#include <stddef.h>
#include <stdint.h>

enum rn_cause {
	RN_CAUSE_NONE = 0,
	RN_CAUSE_ARP_FLUX,         /* shared subnet, effective arp_ignore 0 or arp_announce < 2 */
	RN_CAUSE_NO_RULE,          /* no 'from <ip>' rule while NICs share a subnet */
	RN_CAUSE_RULE_WRONG_NIC,   /* the rule's table egresses another NIC */
	RN_CAUSE_ROUTE_WRONG_NIC,  /* route lookup from our IP egresses another NIC */
	RN_CAUSE_RP_FILTER,        /* strict rp_filter would drop replies */
	RN_CAUSE_NEIGH_WRONG_MAC,  /* neighbour holds another MAC than the peer's */
	RN_CAUSE_NEIGH_UNRESOLVED, /* neighbour did not resolve in time */
	RN_CAUSE_MTU_MISMATCH,     /* netdev vs port, or between peers */
	RN_CAUSE_LINK_DOWN,        /* netdev or port not up */
	RN_CAUSE_NO_GID,           /* no GID of the wanted family/range/version */
	RN_CAUSE_GID_FORCED_MISMATCH, /* NCCL_IB_GID_INDEX disagrees with the routing */
	RN_CAUSE_PEER_REFUSED,        /* the peer's own check refused the path */
	RN_CAUSE_NO_ROUTE,            /* no route to the peer from our source IP */
	RN_CAUSE_FIREWALL,            /* RoCE v2 UDP 4791 dropped (doctor, rxe) */
	RN_CAUSE_PEER_DIED,           /* the peer closed its side channel: its process is gone */
	RN_CAUSE_SHARED_L2,           /* other subnets' NICs on our L2 segment answer ARP for us */
	RN_CAUSE_L2_UNCHECKED,   /* that could not be probed (no CAP_NET_RAW), sysctls unsafe */
	RN_CAUSE_ARP_SILENT,     /* effective arp_ignore=8: the NIC answers no ARP */
	RN_CAUSE_RULE_SHADOWED,  /* our rule exists but a rule ahead of it decides */
	RN_CAUSE_TABLE_NO_ROUTE, /* our rule's table lacks our subnet (link bounced) */
	RN_CAUSE_NO_GATEWAY,     /* L3 NIC: off-subnet peers assumed on-link (no default) */
	RN_CAUSE_STALE_RULE,     /* a 'from <old address>' rule into our table (renumbered) */
	RN_CAUSE_GID_GONE,       /* the NIC's address left its GID table (src/gid.c) */
	RN_CAUSE_NO_CARRIER,     /* netdev admin-up without carrier: cable, transceiver, switch */
	RN_CAUSE_LINK_FLAP,      /* the port went down during the comm, past the retry budget */
	RN_CAUSE_LINK_FLAPPING,  /* more lost carriers than a healthy link has in a day */
	RN_CAUSE_REPLIES_ELSEWHERE, /* counters: the peer's packets land on another local NIC */
	RN_CAUSE_NO_REPLY,          /* counters: packets sent, retransmitted, nothing came back */
	RN_CAUSE_FABRIC_LOSS,       /* counters: retransmits, out-of-sequence, duplicates */
	RN_CAUSE_CONGESTION,        /* counters: CNPs / ECN marks */
	RN_CAUSE_RNR,               /* counters: receiver-not-ready NAKs */
	RN_CAUSE_QOS_LOSSY,         /* NCCL's class rides a priority without PFC beside one with */
	RN_CAUSE_FLEET_DIFFERS,     /* sweep: a version, driver, MTU, sysctl not the fleet's */
	RN_CAUSE_BANDWIDTH_LOW,     /* sweep: a NIC pair under --min-gbps */
	RN_CAUSE_SLOW_NIC,          /* sweep: the end of slow pairs slow with every peer */
	RN_CAUSE_GID_MOVED,         /* a live comm's source GID index now holds another entry */
	RN_CAUSE_PLUGIN_MISSING,    /* sweep: NCCL_NET_PLUGIN finds no plugin on a host */
	RN_CAUSE_PROXY_ARP,         /* proxy_arp on a RoCE NIC of a forwarding host */
	RN_CAUSE__MAX
};

enum rn_severity {
	RN_SEV_INFO = 0,
	RN_SEV_WARN = 1,
	RN_SEV_FATAL = 2, /* refuses the NIC or the connection under strict */
};

/* A NIC's verdict, from its findings' severities. */
enum rn_verdict_kind {
	RN_VERDICT_OK = 0,      /* symmetric: offered to NCCL */
	RN_VERDICT_WARN = 1,    /* usable, with warnings */
	RN_VERDICT_REFUSED = 2, /* would fail with error 12 (or never resolve) */
};
/* "ok", "warn", "refused". */
const char *rn_verdict_str(enum rn_verdict_kind v);

/*
 * One problem found. The message and fix are rendered when the finding is made,
 * from the catalogue's templates and the facts at hand (NIC, IPs, table, MACs).
 * A finding owns its text (heap, no length cap): release it with rn_finding_clear(),
 * copy it with rn_finding_copy(), never with '=' (two owners, one free too many).
 * A zeroed finding is empty and valid (texts NULL: print rn_finding_msg() etc.).
 * @cause may be beyond RN_CAUSE__MAX when a newer peer sent it (rn_cause_label()).
 *
 * A fix is only shell commands that run as printed when pasted on ONE host: @fix on
 * @fix_host. A cause that needs commands on two hosts (neigh-wrong-mac: the peer's
 * sysctls, then our stale entry) has a second part, @pre_fix on @pre_host, to be run
 * first. A host "" (or NULL) is the host that made the finding. What no command can
 * say (look at a log, check a cable) is @advice, plain text, never pasted; a cause
 * with no command has @fix "" and its advice.
 */
struct rn_finding {
	enum rn_cause cause;
	enum rn_severity sev;
	char *msg;
	char *fix;      /* "" when no command fixes it */
	char *fix_host; /* where @fix runs: "" = the host that made the finding */
	char *pre_fix;  /* commands to run before @fix, on @pre_host; "" none */
	char *pre_host;
	char *advice;   /* what to do, as text; "" none */
};

/*
 * The facts a template names as {key}. Start from RN_VARS_INIT (or zero), set
 * values with rn_vars_set() (no cap on keys or value length) and release them with
 * rn_vars_free(). An allocation failure is remembered and reported by the render.
 */
struct rn_var {
	char *key;
	char *val;
};
struct rn_vars {
	int n, cap;
	struct rn_var *kv;
	int err; /* -ENOMEM when a set failed */
};
#define RN_VARS_INIT { 0 }

void rn_vars_set(struct rn_vars *v, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Append @sep (only when the value is not empty) and the formatted text to @key. */
void rn_vars_append(struct rn_vars *v, const char *key, const char *sep, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* NULL when @key has no value. */
const char *rn_vars_get(const struct rn_vars *v, const char *key);
void rn_vars_free(struct rn_vars *v);

/*
 * Replace @f (empty or holding a finding, which is released) by @cause rendered
 * from the catalogue with @v. 0; -EINVAL when a template names a key @v lacks: a
 * bug, logged as a WARN, the {key} left in the text (never a guess); -ENOMEM.
 */
int rn_finding_render(struct rn_finding *f, enum rn_cause cause, const struct rn_vars *v);
/* Replace @f by a finding with the given text (a peer's, already rendered). 0 or -ENOMEM. */
int rn_finding_set(struct rn_finding *f, enum rn_cause cause, enum rn_severity sev, const char *msg,
		   const char *fix);
/*
 * Set where @f's fix runs and its other parts (each NULL: left as it is, "": none).
 * 0 or -ENOMEM (@f keeps its message and fix).
 */
int rn_finding_set_where(struct rn_finding *f, const char *fix_host, const char *pre_fix,
			 const char *pre_host, const char *advice);
/* Deep copy into @dst (released first). 0 or -ENOMEM. */
int rn_finding_copy(struct rn_finding *dst, const struct rn_finding *src);
/* Hand @src's text to @dst (released first); @src is left empty. */
void rn_finding_move(struct rn_finding *dst, struct rn_finding *src);
void rn_finding_clear(struct rn_finding *f);
/* The text, "" for an empty finding; never NULL. */
const char *rn_finding_msg(const struct rn_finding *f);
const char *rn_finding_fix(const struct rn_finding *f);
const char *rn_finding_fix_host(const struct rn_finding *f);
const char *rn_finding_pre_fix(const struct rn_finding *f);
const char *rn_finding_pre_host(const struct rn_finding *f);
const char *rn_finding_advice(const struct rn_finding *f);
/*
 * The host @f's fix (@pre: its first part) runs on, by name: its own when the finding
 * names one, else @maker (the host that made the finding; NULL: "" for this host).
 */
const char *rn_finding_where(const struct rn_finding *f, int pre, const char *maker);
/* How many templates were rendered with a missing key since start (tests assert 0). */
unsigned int rn_finding_bugs(void);

/*
 * Log @f completely, as @level: "<prefix> [id]: message; fix: commands" on one line
 * when it fits, else the message and then one "<prefix> [id] fix: command" line per
 * command, long text split on spaces into "(cont.)" lines: NCCL's logger cuts a
 * line at about 1 KiB, we never do. @fix_host names the host that made @f, NULL for
 * here: a fix that runs elsewhere is shown as "fix (on gpu7): ..."; a first part on
 * another host comes before ("fix first (on gpu7): ...; then fix: ..."), advice as
 * "; what to do: ...".
 */
void rn_finding_log(int level, unsigned long sub, const char *prefix, const char *fix_host,
		    const struct rn_finding *f);

/*
 * Append @f to @v's @key after @sep as one text: "[id]: message Fix (on gpu7): ...; then
 * Fix: ... What to do: ..." (@maker as for rn_finding_log).
 */
void rn_finding_append(struct rn_vars *v, const char *key, const char *sep,
		       const struct rn_finding *f, const char *maker);

/* The catalogue's stable id for @cause ("arp-flux", "no-rule", ...); "unknown" beyond it. */
const char *rn_cause_id(enum rn_cause cause);
/* The id, or "unknown cause N" for a cause this build does not know (a newer peer's). */
const char *rn_cause_label(enum rn_cause cause, char *buf, size_t len);
/*
 * The keys the templates of @cause name, space separated (the catalogue's
 * documentation of what a finder must set); "" for an unknown cause.
 */
const char *rn_cause_keys(enum rn_cause cause);
enum rn_severity rn_cause_severity(enum rn_cause cause);
/* RN_CAUSE_NONE when @id names no cause. */
enum rn_cause rn_cause_from_id(const char *id);

/* The templates behind rn_finding_render (never NULL). */
const char *rn_cause_msg_template(enum rn_cause cause);
const char *rn_cause_fix_template(enum rn_cause cause);
enum rn_tpl {
	RN_TPL_MSG,
	RN_TPL_FIX,
	RN_TPL_FIX_ON, /* the host the fix runs on ("": the finding's own) */
	RN_TPL_PRE,    /* commands to run first, elsewhere */
	RN_TPL_PRE_ON,
	RN_TPL_ADVICE,
	RN_TPL__MAX
};
/* Any template of @cause, "" when it has none. */
const char *rn_cause_template(enum rn_cause cause, enum rn_tpl which);

#endif /* RN_VERDICT_H */
