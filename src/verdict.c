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

#include "rn_log.h"
#include "rn_verdict.h"

/*
 * A fix is what an operator pastes into a shell on one host: commands joined by
 * "; ", and an alternative only as a trailing "# or ..." comment, so that the paste
 * runs as printed. @on names that host ("" or absent: the host that makes the
 * finding); @pre is a first part for another host (@pre_on), run before @fix;
 * @advice is what no command can say, plain text. @keys documents every {key} the
 * templates name (test_verdict checks that each row renders from exactly these).
 */
struct cause_row {
	const char *id;
	enum rn_severity sev;
	const char *msg;
	const char *fix;
	const char *keys;
	const char *on;
	const char *pre;
	const char *pre_on;
	const char *advice;
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
		"a table for it{qualified}",
		"{route_fix}{alt}",
		"nic dev ip subnet others route_fix alt qualified",
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
		"{who} {peer_ip} is reached at the wrong {wrong} (MAC {got_mac} instead of "
		"{peer_mac}) from {dev}: {why}",
		/*
		 * A learned entry: 'ip neigh flush dev D to IP nud all' (a static one too, which
		 * a plain flush keeps). A PERMANENT or NOARP entry that an ARP probe proves wrong:
		 * 'ip neigh del IP dev D' (rn_neigh_static_vars).
		 */
		"{neigh_fix}",
		"who peer_ip wrong got_mac peer_mac dev why neigh_fix peer_host peer_fix",
		/* the peer first: flushed before it stops answering for other NICs, the
		 * entry would learn the wrong MAC again */
		.pre = "{peer_fix}", .pre_on = "{peer_host}",
	},
	[RN_CAUSE_NEIGH_UNRESOLVED] = {
		"neigh-unresolved", RN_SEV_FATAL,
		"{dev} ({ip}) got no ARP answer for peer {peer_ip} ({peer_host} {peer_dev}) "
		"within {timeout_ms} ms",
		"",
		"dev ip peer_ip peer_host peer_dev timeout_ms",
		.advice = "check that {peer_host} {peer_dev} is up with {peer_ip} and that its "
		"arp_filter/rp_filter allow the answer (roce-doctor on {peer_host} names the "
		"commands); on a fabric where each rail is its own subnet, set NCCL_CROSS_NIC=0",
	},
	[RN_CAUSE_MTU_MISMATCH] = {
		"mtu-mismatch", RN_SEV_WARN,
		"{nic} ({dev}): {what}",
		"{mtu_fix}",
		"nic dev what mtu_fix fix_host",
		.on = "{fix_host}",
		.advice = "use the same MTU on every RoCE netdev of every host (a port's active "
		"MTU follows its netdev's, up to what the NIC supports)",
	},
	[RN_CAUSE_LINK_DOWN] = {
		"link-down", RN_SEV_FATAL,
		"{nic}: netdev {dev} is down",
		"ip link set dev {dev} up",
		"nic dev",
	},
	[RN_CAUSE_NO_GID] = {
		"no-gid", RN_SEV_FATAL,
		"{nic} ({dev}): no usable GID: wanted {want}; found {have}",
		"{fix}",
		"nic dev want have todo fix",
		/* the address is the site's to choose: no command can, only what to do */
		.advice = "{todo}",
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
		"",
		"peer_host peer_dev peer_ip peer_cause",
		.advice = "run roce-doctor on {peer_host} and apply there the fix it names for "
		"{peer_dev} (the peer's own log has it too)",
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
		"",
		"peer_host peer_ip",
		.advice = "look at the log of the process on {peer_host}: its first error is the "
		"cause",
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
		"nic dev ip dst subnet gw gw_hint gw_fix gw_todo",
		/* "" where the gateway is known (the fix is the command) */
		.advice = "{gw_todo}",
	},
	[RN_CAUSE_STALE_RULE] = {
		"stale-rule", RN_SEV_WARN,
		"{nic} ({dev} {ip}): rule 'from {stale_ip} lookup {stale_table}' (priority "
		"{stale_prio}) is left from an address no interface has any more (renumbered?): "
		"{dev}'s table {stale_table} would carry whatever gets {stale_ip} next",
		"{ipf} rule del from {stale_ip} lookup {stale_table} pref {stale_prio}",
		"nic dev ip stale_ip stale_table stale_prio ipf",
	},
	[RN_CAUSE_GID_GONE] = {
		"gid-gone", RN_SEV_FATAL,
		"{nic} ({dev}): address {ip} is no longer in the port's GID table (it was at index "
		"{old_index}, which now holds {now}; the table holds {have}): the address was "
		"removed from {dev}",
		"ip addr add {ip}/{prefixlen} dev {dev}",
		"nic dev ip old_index now have prefixlen",
		.advice = "if the address was moved on purpose (renumbered), restart the job: NCCL "
		"chooses each NIC's address when it starts",
	},
	[RN_CAUSE_GID_MOVED] = {
		"gid-moved", RN_SEV_WARN,
		"{nic} ({dev}): this comm's QPs send from GID index {old_index}, but address {ip} "
		"is at index {new_index} now (removed and re-added, or another address took its "
		"slot): a hardware NIC sends this comm's packets from whatever index {old_index} "
		"holds",
		"",
		"nic dev ip old_index new_index",
		.advice = "new comms use index {new_index}; a live QP cannot change its source GID, "
		"so restart the job if this comm's traffic fails",
	},
	[RN_CAUSE_NO_CARRIER] = {
		"no-carrier", RN_SEV_FATAL,
		"{nic}: netdev {dev} is administratively up but has no carrier{since}",
		"",
		"nic dev since",
		.advice = "check the cable or transceiver of {dev} and its switch port (its link "
		"light, the switch's port state and error log); no command on this host brings a "
		"carrier back",
	},
	[RN_CAUSE_LINK_FLAP] = {
		"link-flap", RN_SEV_FATAL,
		"{nic} ({dev}): the port went down at {down_at} for {down_ms} ms{still}, longer than "
		"the QP retry budget of {budget_ms} ms (NCCL_IB_TIMEOUT={timeout}, "
		"NCCL_IB_RETRY_CNT={retry_cnt}); {dev} {admin}; {flaps}",
		"",
		"nic dev down_at down_ms still budget_ms timeout retry_cnt admin flaps",
		.advice = "check the cable or transceiver of {dev} and its switch port (link light, "
		"the switch's port log); a link that flaps now and then is survived with a larger "
		"NCCL_IB_TIMEOUT (each step doubles the budget)",
	},
	[RN_CAUSE_LINK_FLAPPING] = {
		"link-flapping", RN_SEV_WARN,
		"{nic} ({dev}): the link is flapping: {count} lost carriers {window} (a healthy link "
		"has at most 5 in 24 h){extra}",
		"",
		"nic dev count window extra",
		.advice = "replace or reseat the cable or transceiver of {dev} and check its switch "
		"port's error counters; each flap longer than the QP retry budget fails every comm "
		"on the NIC",
	},
	[RN_CAUSE_REPLIES_ELSEWHERE] = {
		"replies-elsewhere", RN_SEV_FATAL,
		"{nic} ({dev}): the peer's packets land on another NIC of this host: {figures}; "
		"host {peer_host} resolves {ip} to the wrong MAC (ARP flux there, or a stale entry)",
		/* the peer's sysctls first, or its entry learns the wrong MAC again */
		"{peer_fix}; ip neigh flush dev {peer_dev} to {ip} nud all",
		"nic dev figures peer_host ip peer_dev peer_fix",
		.on = "{peer_host}",
	},
	[RN_CAUSE_NO_REPLY] = {
		"no-reply", RN_SEV_FATAL,
		"{nic} ({dev}): nothing came back from peer {peer_ip} ({peer_host}): {figures}; "
		"RoCE v2 (UDP 4791) is dropped on the way or at the peer (a firewall, the switch, an "
		"MTU black hole) or the peer's NIC is down",
		"",
		"nic dev peer_ip peer_host figures",
		.advice = "run roce-doctor peer {peer_ip} from here (its RDMA probe tells a firewall "
		"from a dead link) and check {peer_host}'s nftables/iptables rules for UDP 4791",
	},
	[RN_CAUSE_FABRIC_LOSS] = {
		"fabric-loss", RN_SEV_WARN,
		"{nic} ({dev}): packets to and from peer {peer_ip} were lost or reordered: {figures}",
		"",
		"nic dev peer_ip figures peer_host",
		.advice = "look at the switch ports between this host and {peer_host} for drops and "
		"errors, and at PFC: RoCE needs a lossless class (roce-doctor names the NIC's)",
	},
	[RN_CAUSE_CONGESTION] = {
		"congestion", RN_SEV_WARN,
		"{nic} ({dev}): the fabric signalled congestion: {figures}",
		"",
		"nic dev figures",
		.advice = "congestion marks slow a flow but lose nothing by themselves: check that "
		"the class NCCL uses is lossless (PFC) and that ECN/DCQCN is set alike on every NIC "
		"and switch",
	},
	[RN_CAUSE_RNR] = {
		"rnr", RN_SEV_WARN,
		"{nic} ({dev}): receiver-not-ready NAKs: {figures}",
		"",
		"nic dev figures peer_host",
		.advice = "the receiver had no receive posted: a peer that stopped posting (hung or "
		"overloaded process on {peer_host})",
	},
	[RN_CAUSE_QOS_LOSSY] = {
		"qos-lossy", RN_SEV_WARN,
		"{nic} ({dev}): NCCL's {what} traffic class {tc} (DSCP {dscp}) maps to priority "
		"{prio} ({how}), which has no PFC, while priority {lossless} is lossless: RoCE drops "
		"there under load (completion error 12 or a hang)",
		"{qos_fix}",
		"nic dev what tc dscp prio how lossless qos_fix",
	},
	[RN_CAUSE_PROXY_ARP] = {
		"proxy-arp", RN_SEV_WARN,
		"{nic} ({dev} {ip}): proxy_arp is on ({where}) and the host forwards on {dev}: it "
		"answers ARP requests for other hosts of {subnet} routed out of another link with "
		"{dev}'s MAC, so peers can send their frames here",
		"sysctl -w {sysctls}",
		"nic dev ip where subnet sysctls",
	},
	/* The fleet sweep's (roce-doctor-mpi): what only a comparison of hosts shows. */
	[RN_CAUSE_FLEET_DIFFERS] = {
		"fleet-differs", RN_SEV_WARN,
		"{who}: {field} is {value}, where {count} of {of} {what} have {majority}",
		"{fleet_fix}",
		"who field value count of what majority fleet_fix host",
		.advice = "make {field} on {host} what the other hosts have ({majority}), or change "
		"them if {value} is the one wanted: hosts that differ give NCCL jobs that differ",
	},
	/* NOTE: fatal, unlike a plugin of another version: NCCL there silently runs its own IB
	 * transport, with none of the route and ARP checks, while the others run the plugin */
	[RN_CAUSE_PLUGIN_MISSING] = {
		"plugin-missing", RN_SEV_FATAL,
		"no NCCL net plugin: NCCL_NET_PLUGIN finds no library on {host}, so NCCL there "
		"runs its own transport without the plugin's route and ARP checks ({count} of "
		"{of} hosts run the plugin {majority})",
		"",
		"host count of majority",
		.advice = "install nccl-net-roce {majority} on {host}, or set NCCL_NET_PLUGIN there "
		"to the library's path",
	},
	[RN_CAUSE_BANDWIDTH_LOW] = {
		"bandwidth-low", RN_SEV_WARN,
		"{a} -> {b}: {gbps} Gbit/s through the plugin's transport ({mib} MiB), under "
		"--min-gbps {min}: {blame}",
		"",
		"a b gbps mib min blame",
		.advice = "where an end is named, see its slow-nic finding; where both ends are fast "
		"with other peers, look at the path between them: the switch ports and links it "
		"takes (their error and pause counters) and the ECMP hash of the flow",
	},
	[RN_CAUSE_SLOW_NIC] = {
		"slow-nic", RN_SEV_WARN,
		"{nic}: slow with every peer measured ({slow} of {tried} NIC pairs under {min} "
		"Gbit/s, the best {best} Gbit/s) while {witness} is fast with others{recheck}",
		"",
		"nic slow tried min best witness recheck host dev",
		.advice = "on {host}: the link's speed and errors (ethtool {dev}; ethtool -S {dev}), "
		"the PCIe link of its device (lspci -vv: LnkSta against LnkCap), its firmware, and "
		"the cable or transceiver",
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

const char *rn_cause_template(enum rn_cause cause, enum rn_tpl which)
{
	const struct cause_row *r;
	const char *t = NULL;

	if (!known(cause))
		return which == RN_TPL_MSG ? "unknown cause" : "";
	r = &catalogue[cause];
	switch (which) {
	case RN_TPL_MSG:
		t = r->msg;
		break;
	case RN_TPL_FIX:
		t = r->fix;
		break;
	case RN_TPL_FIX_ON:
		t = r->on;
		break;
	case RN_TPL_PRE:
		t = r->pre;
		break;
	case RN_TPL_PRE_ON:
		t = r->pre_on;
		break;
	case RN_TPL_ADVICE:
		t = r->advice;
		break;
	case RN_TPL__MAX:
		break;
	}
	return t ? t : "";
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
	case RN_VERDICT_OK:
		return "ok";
	case RN_VERDICT_WARN:
		return "warn";
	case RN_VERDICT_REFUSED:
		return "refused";
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

static void sb_adds(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
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
				rn_warn(RN_SUB_INIT | RN_SUB_NET,
					RN_PFX "BUG: cause %s: no value for "
					       "{%.*s}",
					rn_cause_id(cause), (int)(k < 64 ? k : 64), end + 1);
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
	char **out[RN_TPL__MAX];
	int t, r, ret = 0;

	rn_finding_clear(f);
	f->cause = cause;
	f->sev = rn_cause_severity(cause);
	if (v && v->err)
		return v->err;
	out[RN_TPL_MSG] = &f->msg;
	out[RN_TPL_FIX] = &f->fix;
	out[RN_TPL_FIX_ON] = &f->fix_host;
	out[RN_TPL_PRE] = &f->pre_fix;
	out[RN_TPL_PRE_ON] = &f->pre_host;
	out[RN_TPL_ADVICE] = &f->advice;
	for (t = 0; t < RN_TPL__MAX; t++) {
		r = render(out[t], cause, rn_cause_template(cause, (enum rn_tpl)t), v);
		if (r == -ENOMEM)
			return -ENOMEM;
		if (!ret)
			ret = r;
	}
	/* no command to run first: nowhere to run it either */
	if (f->pre_fix && !f->pre_fix[0] && f->pre_host)
		f->pre_host[0] = '\0';
	return ret;
}

int rn_finding_set(struct rn_finding *f, enum rn_cause cause, enum rn_severity sev, const char *msg,
		   const char *fix)
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

static int set_text(char **dst, const char *src)
{
	char *s;

	if (!src)
		return 0;
	s = strdup(src);
	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

int rn_finding_set_where(struct rn_finding *f, const char *fix_host, const char *pre_fix,
			 const char *pre_host, const char *advice)
{
	if (set_text(&f->fix_host, fix_host) || set_text(&f->pre_fix, pre_fix) ||
	    set_text(&f->pre_host, pre_host) || set_text(&f->advice, advice))
		return -ENOMEM;
	return 0;
}

int rn_finding_copy(struct rn_finding *dst, const struct rn_finding *src)
{
	if (dst == src)
		return 0;
	if (rn_finding_set(dst, src->cause, src->sev, src->msg, src->fix) ||
	    rn_finding_set_where(dst, src->fix_host, src->pre_fix, src->pre_host, src->advice)) {
		rn_finding_clear(dst);
		return -ENOMEM;
	}
	return 0;
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
	free(f->fix_host);
	free(f->pre_fix);
	free(f->pre_host);
	free(f->advice);
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

const char *rn_finding_fix_host(const struct rn_finding *f)
{
	return f && f->fix_host ? f->fix_host : "";
}

const char *rn_finding_pre_fix(const struct rn_finding *f)
{
	return f && f->pre_fix ? f->pre_fix : "";
}

const char *rn_finding_pre_host(const struct rn_finding *f)
{
	return f && f->pre_host ? f->pre_host : "";
}

const char *rn_finding_advice(const struct rn_finding *f)
{
	return f && f->advice ? f->advice : "";
}

const char *rn_finding_where(const struct rn_finding *f, int pre, const char *maker)
{
	const char *h = pre ? rn_finding_pre_host(f) : rn_finding_fix_host(f);

	return h[0] ? h : maker ? maker : "";
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

/* " Fix (on gpu7): cmds" (@then: "; then Fix ..."): one part of a fix, in running text. */
static void sb_fix(struct sbuf *b, const char *then, const char *host, const char *cmds)
{
	if (!cmds[0])
		return;
	sb_adds(b, then);
	if (host[0]) {
		sb_adds(b, " (on ");
		sb_adds(b, host);
		sb_adds(b, ")");
	}
	sb_adds(b, ": ");
	sb_adds(b, cmds);
}

void rn_finding_append(struct rn_vars *v, const char *key, const char *sep,
		       const struct rn_finding *f, const char *maker)
{
	const char *pre = rn_finding_pre_fix(f);
	struct sbuf b = { 0 };
	char lb[32];

	sb_adds(&b, "[");
	sb_adds(&b, rn_cause_label(f->cause, lb, sizeof(lb)));
	sb_adds(&b, "]: ");
	sb_adds(&b, rn_finding_msg(f));
	sb_fix(&b, " Fix", rn_finding_where(f, 1, maker), pre);
	sb_fix(&b, pre[0] ? "; then Fix" : " Fix", rn_finding_where(f, 0, maker),
	       rn_finding_fix(f));
	if (rn_finding_advice(f)[0]) {
		sb_adds(&b, " What to do: ");
		sb_adds(&b, rn_finding_advice(f));
	}
	if (b.err)
		v->err = b.err;
	else
		rn_vars_append(v, key, sep, "%s", b.s);
	free(b.s);
}

/* "fix", "fix (on gpu7)", "then fix (on gpu7)": where a part of the fix runs. */
static void fix_label(char *buf, size_t len, const char *then, const char *host)
{
	if (host && host[0])
		snprintf(buf, len, "%sfix (on %s)", then, host);
	else
		snprintf(buf, len, "%sfix", then);
}

void rn_finding_log(int level, unsigned long sub, const char *prefix, const char *fix_host,
		    const struct rn_finding *f)
{
	char lb[32], labels[2][112], *head = NULL;
	const char *cmds[2], *advice = rn_finding_advice(f), *p, *label;
	struct sbuf b = { 0 };
	int k, nparts = 0;

	if (!rn_log_enabled((enum rn_log_level)level))
		return;
	label = rn_cause_label(f->cause, lb, sizeof(lb));
	/* the peer's share first (neigh-wrong-mac), then the rest: each on its own host */
	if (rn_finding_pre_fix(f)[0]) {
		fix_label(labels[nparts], sizeof(labels[0]), "", rn_finding_where(f, 1, fix_host));
		cmds[nparts++] = rn_finding_pre_fix(f);
	}
	if (rn_finding_fix(f)[0]) {
		fix_label(labels[nparts], sizeof(labels[0]), nparts ? "then " : "",
			  rn_finding_where(f, 0, fix_host));
		cmds[nparts++] = rn_finding_fix(f);
	}
	/* The usual case: one line, each fix after its "fix: " ready to paste. */
	sb_adds(&b, prefix);
	sb_adds(&b, " [");
	sb_adds(&b, label);
	sb_adds(&b, "]: ");
	sb_adds(&b, rn_finding_msg(f));
	for (k = 0; k < nparts; k++) {
		sb_adds(&b, "; ");
		sb_adds(&b, labels[k]);
		sb_adds(&b, ": ");
		sb_adds(&b, cmds[k]);
	}
	if (advice[0]) {
		sb_adds(&b, "; what to do: ");
		sb_adds(&b, advice);
	}
	if (!b.err && b.len <= LOG_CHUNK) {
		rn_log((enum rn_log_level)level, sub, __FILE__, __LINE__, "%s", b.s);
		free(b.s);
		return;
	}
	free(b.s);
	/* Too long for one: the message, then one command a line, each whole. */
	if (asprintf(&head, "%s [%s]: ", prefix, label) < 0)
		head = NULL;
	log_long(level, sub, head ? head : "", rn_finding_msg(f));
	free(head);
	for (k = 0; k < nparts; k++) {
		if (asprintf(&head, "%s [%s] %s: ", prefix, label, labels[k]) < 0)
			head = NULL;
		for (p = cmds[k]; *p;) {
			const char *end = strstr(p, "; ");
			size_t len = end ? (size_t)(end - p) : strlen(p);
			char *cmd = strndup(p, len);

			if (cmd) {
				log_long(level, sub, head ? head : "", cmd);
				free(cmd);
			}
			p += len;
			if (end)
				p += 2;
		}
		free(head);
	}
	if (advice[0]) {
		if (asprintf(&head, "%s [%s] what to do: ", prefix, label) < 0)
			head = NULL;
		log_long(level, sub, head ? head : "", advice);
		free(head);
	}
}
