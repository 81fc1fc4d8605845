// SPDX-License-Identifier: MIT
/*
 * The verdict catalogue: one row per cause with its stable id, severity, message
 * and fix, and the findings API that renders them. Templates name facts as {key};
 * the code that finds a problem supplies the values (rn_vars), so wording lives here
 * only and tests assert on ids. A finding owns its text: nothing here has a cap.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_host.h"
#include "rn_log.h"
#include "rn_verdict.h"

/*
 * A fix is what an operator pastes into a shell: commands joined by "; ", and an
 * alternative only as a trailing "# or ..." comment, so that the paste runs as
 * printed. @keys documents every {key} the two templates name (test_verdict checks
 * that each row renders from exactly these).
 */
struct cause_row {
	const char *id;
	enum rn_severity sev;
	const char *msg;
	const char *fix;
	const char *keys;
};

static const struct cause_row catalogue[RN_CAUSE__MAX] = {
	[RN_CAUSE_NONE] = { "none", RN_SEV_INFO, "path is symmetric", "", "" },
	[RN_CAUSE_ARP_FLUX] = {
		"arp-flux", RN_SEV_FATAL,
		"{nic} ({dev} {ip}) shares {subnet} with {others}: {why}, so peers can learn "
		"another NIC's MAC for {ip} (ARP flux, completion error 12)",
		"sysctl -w {sysctls}  # or, for all NICs at once: roce-policy-routing {devs}",
		"nic dev ip subnet others why sysctls devs",
	},
	[RN_CAUSE_NO_RULE] = {
		"no-rule", RN_SEV_WARN,
		"{nic} ({dev} {ip}) shares {subnet} with {others} but no 'from {ip}' rule selects "
		"a table for it",
		"{route_fix}{alt}",
		"nic dev ip subnet others route_fix alt",
	},
	[RN_CAUSE_RULE_WRONG_NIC] = {
		"rule-wrong-nic", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): rule 'from {ip} lookup {table}' leads to a table that routes "
		"{routed} out of {other_dev}",
		"{rule_fix}",
		"nic dev ip table routed other_dev rule_fix",
	},
	[RN_CAUSE_ROUTE_WRONG_NIC] = {
		"route-wrong-nic", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): the route to {dst} from {ip} leaves through {other_dev} "
		"(table {used_table}), not {dev}",
		"{route_fix}{alt}",
		"nic dev ip dst other_dev used_table route_fix alt",
	},
	[RN_CAUSE_RP_FILTER] = {
		"rp-filter", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): strict rp_filter (effective {value}) drops replies from "
		"{subnet} because the reverse route leaves through {other_dev}",
		"sysctl -w {rp_keys}  # or, for all NICs at once: roce-policy-routing {devs}",
		"nic dev ip value subnet other_dev rp_keys devs",
	},
	[RN_CAUSE_NEIGH_WRONG_MAC] = {
		"neigh-wrong-mac", RN_SEV_FATAL,
		"peer {peer_ip} is reached at the wrong NIC (MAC {got_mac} instead of "
		"{peer_mac}): ARP flux on host {peer_host} (its arp_ignore/arp_announce) "
		"or a stale or static neighbour entry here",
		"on {peer_host}: sysctl -w net.ipv4.conf.all.arp_ignore=1 "
		"net.ipv4.conf.all.arp_announce=2; then here: ip neigh flush dev {dev} to {peer_ip}",
		"peer_ip got_mac peer_mac peer_host dev",
	},
	[RN_CAUSE_NEIGH_UNRESOLVED] = {
		"neigh-unresolved", RN_SEV_FATAL,
		"{dev} ({ip}) got no ARP answer for peer {peer_ip} ({peer_host} {peer_dev}) "
		"within {timeout_ms} ms",
		"check that {peer_host} {peer_dev} is up with {peer_ip} and that its arp_filter/"
		"rp_filter allow the answer (roce-doctor on {peer_host}); "
		"cross-rail fabrics: NCCL_CROSS_NIC=0",
		"dev ip peer_ip peer_host peer_dev timeout_ms",
	},
	[RN_CAUSE_MTU_MISMATCH] = {
		"mtu-mismatch", RN_SEV_WARN,
		"{nic} ({dev}): {what}",
		"ip link set dev {fix_dev} mtu {fix_mtu}  # the same on every RoCE netdev of every host",
		"nic dev what fix_dev fix_mtu",
	},
	[RN_CAUSE_LINK_DOWN] = {
		"link-down", RN_SEV_FATAL,
		"{nic}: netdev {dev} is down",
		"ip link set dev {dev} up",
		"nic dev",
	},
	[RN_CAUSE_NO_GID] = {
		"no-gid", RN_SEV_FATAL,
		"{nic} ({dev}): no usable GID: wanted {want}; found {have}{todo}",
		"{fix}",
		"nic dev want have todo fix",
	},
	[RN_CAUSE_GID_FORCED_MISMATCH] = {
		"gid-forced-mismatch", RN_SEV_WARN,
		"{nic} ({dev}): NCCL_IB_GID_INDEX={forced} ({forced_what}) disagrees with the "
		"routing, which makes {ip} (GID index {auto}) the source",
		"unset NCCL_IB_GID_INDEX  # auto-select follows the policy routing",
		"nic dev forced forced_what ip auto",
	},
	[RN_CAUSE_PEER_REFUSED] = {
		"peer-refused", RN_SEV_FATAL,
		"peer {peer_host} ({peer_dev} {peer_ip}) refused its own path: {peer_cause}",
		"run roce-doctor on {peer_host} and apply the fix it names for {peer_dev}",
		"peer_host peer_dev peer_ip peer_cause",
	},
	[RN_CAUSE_NO_ROUTE] = {
		"no-route", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): no route to {dst} from {ip}: {err}",
		"{route_fix}",
		"nic dev ip dst err route_fix",
	},
	[RN_CAUSE_FIREWALL] = {
		"firewall", RN_SEV_WARN,
		"{dev}: RoCE v2 traffic (UDP 4791) is filtered",
		"nft insert rule inet filter input iifname {dev} udp dport 4791 accept",
		"dev",
	},
	[RN_CAUSE_PEER_DIED] = {
		"peer-died", RN_SEV_FATAL,
		"peer {peer_host} ({peer_ip}) closed its connection: the peer process exited or "
		"crashed",
		"look at the log of the process on {peer_host}; its first error is the cause",
		"peer_host peer_ip",
	},
	[RN_CAUSE_SHARED_L2] = {
		"shared-l2", RN_SEV_FATAL,
		"{nic} ({dev} {ip}) is on one L2 segment with {l2_others} (they answer ARP probes "
		"sent from {dev}) although their subnets differ: {why}, so peers can learn another "
		"NIC's MAC for {ip} (ARP flux, completion error 12)",
		"sysctl -w {sysctls}",
		"nic dev ip l2_others why sysctls",
	},
	[RN_CAUSE_L2_UNCHECKED] = {
		"l2-unchecked", RN_SEV_WARN,
		"{nic} ({dev} {ip}): cannot tell whether {l2_others} share its L2 segment (the ARP "
		"probe needs CAP_NET_RAW: {err}; roce-doctor as root tells); if they do, {why} "
		"lets peers learn another NIC's MAC for {ip}",
		"sysctl -w {sysctls}",
		"nic dev ip l2_others err why sysctls",
	},
	[RN_CAUSE_ARP_SILENT] = {
		"arp-silent", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): effective arp_ignore=8 ({where}): the host answers no ARP "
		"request on {dev}, so no peer can resolve {ip}",
		"sysctl -w {sysctls}",
		"nic dev ip where sysctls",
	},
	[RN_CAUSE_RULE_SHADOWED] = {
		"rule-shadowed", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): rule 'from {ip} lookup {table}' (priority {rule_prio}) never "
		"decides: rule {shadow_prio} '{shadow_what}' comes first and sends {dst} out of "
		"{other_dev} (table {used_table})",
		"{move_fix}",
		"nic dev ip table rule_prio shadow_prio shadow_what dst other_dev used_table move_fix",
	},
	[RN_CAUSE_TABLE_NO_ROUTE] = {
		"table-no-route", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): rule 'from {ip} lookup {table}' leads to a table with no route "
		"to {dst} out of {dev} (a link going down deletes them), so the lookup falls "
		"through to table {used_table} and leaves through {other_dev}",
		"{route_fix}",
		"nic dev ip table dst used_table other_dev route_fix",
	},
	[RN_CAUSE_NO_GATEWAY] = {
		"no-gateway", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): from {ip} out of {dev} no route reaches {dst} outside "
		"{subnet}: the kernel assumes it is on-link, so ARP for remote GPU hosts never "
		"resolves (an L3 fabric needs a default route via {gw} in {dev}'s own table{gw_hint})",
		"{gw_fix}",
		"nic dev ip dst subnet gw gw_hint gw_fix",
	},
};

static int known(enum rn_cause cause)
{
	return (unsigned int)cause < RN_CAUSE__MAX && catalogue[cause].id;
}

const char *rn_cause_id(enum rn_cause cause)
{
	return known(cause) ? catalogue[cause].id : "unknown";
}

const char *rn_cause_label(enum rn_cause cause, char *buf, size_t len)
{
	if (known(cause))
		return catalogue[cause].id;
	snprintf(buf, len, "unknown cause %u", (unsigned int)cause);
	return buf;
}

const char *rn_cause_keys(enum rn_cause cause)
{
	return known(cause) ? catalogue[cause].keys : "";
}

enum rn_severity rn_cause_severity(enum rn_cause cause)
{
	return known(cause) ? catalogue[cause].sev : RN_SEV_FATAL;
}

const char *rn_cause_msg_template(enum rn_cause cause)
{
	return known(cause) ? catalogue[cause].msg : "unknown cause";
}

const char *rn_cause_fix_template(enum rn_cause cause)
{
	return known(cause) ? catalogue[cause].fix : "";
}

enum rn_cause rn_cause_from_id(const char *id)
{
	int c;

	for (c = 1; c < RN_CAUSE__MAX; c++)
		if (catalogue[c].id && !strcmp(catalogue[c].id, id))
			return (enum rn_cause)c;
	return RN_CAUSE_NONE;
}

const char *rn_verdict_str(enum rn_verdict_kind v)
{
	switch (v) {
	case RN_VERDICT_OK: return "ok";
	case RN_VERDICT_WARN: return "warn";
	case RN_VERDICT_REFUSED: return "refused";
	}
	return "unknown";
}

/* rn_vars */

static struct rn_var *var_slot(struct rn_vars *v, const char *key)
{
	struct rn_var *kv;
	int i;

	for (i = 0; i < v->n; i++)
		if (!strcmp(v->kv[i].key, key))
			return &v->kv[i];
	if (v->n == v->cap) {
		int cap = v->cap ? 2 * v->cap : 16;

		kv = realloc(v->kv, (size_t)cap * sizeof(*kv));
		if (!kv)
			return NULL;
		v->kv = kv;
		v->cap = cap;
	}
	kv = &v->kv[v->n];
	kv->key = strdup(key);
	kv->val = NULL;
	if (!kv->key)
		return NULL;
	v->n++;
	return kv;
}

static void vars_put(struct rn_vars *v, const char *key, const char *sep, const char *fmt,
		     va_list ap)
{
	struct rn_var *kv;
	char *add = NULL, *val;
	size_t old;

	if (vasprintf(&add, fmt, ap) < 0)
		goto nomem;
	kv = var_slot(v, key);
	if (!kv)
		goto nomem;
	if (!sep || !kv->val || !kv->val[0]) {
		free(kv->val);
		kv->val = add;
		return;
	}
	old = strlen(kv->val);
	val = realloc(kv->val, old + strlen(sep) + strlen(add) + 1);
	if (!val)
		goto nomem;
	strcpy(val + old, sep);
	strcat(val + old, add);
	kv->val = val;
	free(add);
	return;
nomem:
	free(add);
	v->err = -ENOMEM;
}

void rn_vars_set(struct rn_vars *v, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vars_put(v, key, NULL, fmt, ap);
	va_end(ap);
}

void rn_vars_append(struct rn_vars *v, const char *key, const char *sep, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vars_put(v, key, sep ? sep : "", fmt, ap);
	va_end(ap);
}

const char *rn_vars_get(const struct rn_vars *v, const char *key)
{
	int i;

	for (i = 0; v && i < v->n; i++)
		if (!strcmp(v->kv[i].key, key))
			return v->kv[i].val;
	return NULL;
}

void rn_vars_free(struct rn_vars *v)
{
	int i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		free(v->kv[i].key);
		free(v->kv[i].val);
	}
	free(v->kv);
	memset(v, 0, sizeof(*v));
}

/* findings */

static atomic_uint render_bugs;

unsigned int rn_finding_bugs(void)
{
	return atomic_load(&render_bugs);
}

/* A growable string; @err sticks at -ENOMEM. */
struct sbuf {
	char *s;
	size_t len, cap;
	int err;
};

static void sb_add(struct sbuf *b, const char *p, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *s;

		while (b->len + n + 1 > cap)
			cap *= 2;
		s = realloc(b->s, cap);
		if (!s) {
			b->err = -ENOMEM;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/*
 * {key} -> value. A key without a value is a bug in the code that made the
 * finding: say so loudly and leave {key} in the text rather than guess.
 */
static int render(char **out, enum rn_cause cause, const char *tpl, const struct rn_vars *v)
{
	struct sbuf b = { 0 };
	const char *p = tpl;
	int ret = 0;

	sb_add(&b, "", 0);
	while (*p) {
		const char *end = strchr(p, '{'), *close, *val;

		if (!end) {
			sb_add(&b, p, strlen(p));
			break;
		}
		sb_add(&b, p, (size_t)(end - p));
		close = strchr(end, '}');
		if (!close) {
			sb_add(&b, end, strlen(end));
			break;
		}
		{
			char key[64];
			size_t k = (size_t)(close - end - 1);

			val = NULL;
			if (k < sizeof(key)) {
				memcpy(key, end + 1, k);
				key[k] = '\0';
				val = rn_vars_get(v, key);
			}
			if (!val) {
				atomic_fetch_add(&render_bugs, 1);
				rn_warn(RN_SUB_INIT | RN_SUB_NET, RN_PFX "BUG: cause %s: no value for "
					"{%.*s}", rn_cause_id(cause), (int)(k < 64 ? k : 64), end + 1);
				ret = -EINVAL;
				sb_add(&b, end, (size_t)(close - end + 1));
			} else {
				sb_add(&b, val, strlen(val));
			}
		}
		p = close + 1;
	}
	if (b.err) {
		free(b.s);
		*out = NULL;
		return b.err;
	}
	*out = b.s;
	return ret;
}

int rn_finding_render(struct rn_finding *f, enum rn_cause cause, const struct rn_vars *v)
{
	int r1, r2;

	rn_finding_clear(f);
	f->cause = cause;
	f->sev = rn_cause_severity(cause);
	if (v && v->err)
		return v->err;
	r1 = render(&f->msg, cause, rn_cause_msg_template(cause), v);
	r2 = render(&f->fix, cause, rn_cause_fix_template(cause), v);
	if (r1 == -ENOMEM || r2 == -ENOMEM)
		return -ENOMEM;
	return r1 ? r1 : r2;
}

int rn_finding_set(struct rn_finding *f, enum rn_cause cause, enum rn_severity sev,
		   const char *msg, const char *fix)
{
	rn_finding_clear(f);
	f->cause = cause;
	f->sev = sev;
	f->msg = strdup(msg ? msg : "");
	f->fix = strdup(fix ? fix : "");
	if (!f->msg || !f->fix) {
		rn_finding_clear(f);
		f->cause = cause;
		f->sev = sev;
		return -ENOMEM;
	}
	return 0;
}

int rn_finding_copy(struct rn_finding *dst, const struct rn_finding *src)
{
	if (dst == src)
		return 0;
	return rn_finding_set(dst, src->cause, src->sev, src->msg, src->fix);
}

void rn_finding_move(struct rn_finding *dst, struct rn_finding *src)
{
	if (dst == src)
		return;
	rn_finding_clear(dst);
	*dst = *src;
	memset(src, 0, sizeof(*src));
}

void rn_finding_clear(struct rn_finding *f)
{
	if (!f)
		return;
	free(f->msg);
	free(f->fix);
	memset(f, 0, sizeof(*f));
}

const char *rn_finding_msg(const struct rn_finding *f)
{
	return f && f->msg ? f->msg : "";
}

const char *rn_finding_fix(const struct rn_finding *f)
{
	return f && f->fix ? f->fix : "";
}

/* NCCL's logger formats into about 1 KiB; stay well inside it, prefix included. */
#define LOG_CHUNK 768

/* One logical line in as many log lines as it takes, split on spaces, never cut. */
static void log_long(int level, unsigned long sub, const char *head, const char *text)
{
	size_t len = strlen(text), off = 0;
	int part = 0;

	do {
		size_t n = len - off;

		if (n > LOG_CHUNK) {
			n = LOG_CHUNK;
			while (n > LOG_CHUNK / 2 && text[off + n] != ' ')
				n--;
			if (text[off + n] != ' ')
				n = LOG_CHUNK; /* one very long word: split it, still losing nothing */
		}
		rn_log((enum rn_log_level)level, sub, __FILE__, __LINE__, "%s%s%.*s", head,
		       part ? "(cont.) " : "", (int)n, text + off);
		off += n;
		while (off < len && text[off] == ' ')
			off++;
		part++;
	} while (off < len);
}

void rn_finding_log(int level, unsigned long sub, const char *prefix, const char *fix_host,
		    const struct rn_finding *f)
{
	char lb[32], fixw[96], *head = NULL, *line = NULL;
	const char *fix = rn_finding_fix(f), *p, *label;
	int n;

	if (!rn_log_enabled((enum rn_log_level)level))
		return;
	label = rn_cause_label(f->cause, lb, sizeof(lb));
	if (fix_host)
		snprintf(fixw, sizeof(fixw), "fix (on %s)", fix_host);
	else
		snprintf(fixw, sizeof(fixw), "fix");
	/* The usual case: one line, the fix after "fix: " ready to paste. */
	n = fix[0] ? asprintf(&line, "%s [%s]: %s; %s: %s", prefix, label, rn_finding_msg(f), fixw,
			      fix)
		   : asprintf(&line, "%s [%s]: %s", prefix, label, rn_finding_msg(f));
	if (n >= 0 && n <= LOG_CHUNK) {
		rn_log((enum rn_log_level)level, sub, __FILE__, __LINE__, "%s", line);
		free(line);
		return;
	}
	if (n >= 0)
		free(line);
	/* Too long for one: the message, then one command a line, each whole. */
	if (asprintf(&head, "%s [%s]: ", prefix, label) < 0)
		head = NULL;
	log_long(level, sub, head ? head : "", rn_finding_msg(f));
	free(head);
	if (asprintf(&head, "%s [%s] %s: ", prefix, label, fixw) < 0)
		head = NULL;
	for (p = fix; *p;) {
		const char *end = strstr(p, "; ");
		size_t k = end ? (size_t)(end - p) : strlen(p);
		char *cmd = strndup(p, k);

		if (cmd) {
			log_long(level, sub, head ? head : "", cmd);
			free(cmd);
		}
		p += k;
		if (end)
			p += 2;
	}
	free(head);
}
