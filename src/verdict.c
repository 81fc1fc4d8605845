// SPDX-License-Identifier: MIT
/*
 * The verdict catalogue: one row per cause with its stable id, severity, message
 * and fix. Templates name facts as {key}; the code that finds a problem supplies
 * the values (rn_vars), so wording lives here only and tests assert on ids.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rn_host.h"
#include "rn_verdict.h"

struct cause_row {
	const char *id;
	enum rn_severity sev;
	const char *msg;
	const char *fix;
};

static const struct cause_row catalogue[RN_CAUSE__MAX] = {
	[RN_CAUSE_NONE] = { "none", RN_SEV_INFO, "path is symmetric", "" },
	[RN_CAUSE_ARP_FLUX] = {
		"arp-flux", RN_SEV_FATAL,
		"{nic} ({dev} {ip}) shares {subnet} with {others}: {why}, so peers can learn "
		"another NIC's MAC for {ip} (ARP flux, completion error 12)",
		"sysctl -w {sysctls}  # or, for all NICs at once: roce-policy-routing {devs}",
	},
	[RN_CAUSE_NO_RULE] = {
		"no-rule", RN_SEV_WARN,
		"{nic} ({dev} {ip}) shares {subnet} with {others} but no 'from {ip}' rule selects "
		"a table for it",
		"{route_fix}  # or, for all NICs at once: roce-policy-routing {devs}",
	},
	[RN_CAUSE_RULE_WRONG_NIC] = {
		"rule-wrong-nic", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): rule 'from {ip} lookup {table}' leads to a table that routes "
		"{routed} out of {other_dev}",
		"{rule_fix}",
	},
	[RN_CAUSE_ROUTE_WRONG_NIC] = {
		"route-wrong-nic", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): the route to {dst} from {ip} leaves through {other_dev} "
		"(table {used_table}), not {dev}",
		"{route_fix}  # or, for all NICs at once: roce-policy-routing {devs}",
	},
	[RN_CAUSE_RP_FILTER] = {
		"rp-filter", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): strict rp_filter (effective {value}) drops replies from "
		"{subnet} because the reverse route leaves through {other_dev}",
		"sysctl -w {rp_keys}  # or, for all NICs at once: roce-policy-routing {devs}",
	},
	[RN_CAUSE_NEIGH_WRONG_MAC] = {
		"neigh-wrong-mac", RN_SEV_FATAL,
		"peer {peer_ip} is reached at the wrong NIC (MAC {got_mac} instead of "
		"{peer_mac}): ARP flux on host {peer_host} (its arp_ignore/arp_announce) "
		"or a stale or static neighbour entry here",
		"on {peer_host}: sysctl -w net.ipv4.conf.all.arp_ignore=1 "
		"net.ipv4.conf.all.arp_announce=2; then here: ip neigh flush dev {dev} to {peer_ip}",
	},
	[RN_CAUSE_NEIGH_UNRESOLVED] = {
		"neigh-unresolved", RN_SEV_FATAL,
		"{dev} ({ip}) got no ARP answer for peer {peer_ip} ({peer_host} {peer_dev}) "
		"within {timeout_ms} ms",
		"check that {peer_host} {peer_dev} is up with {peer_ip} and that its arp_filter/"
		"rp_filter allow the answer (roce-doctor on {peer_host}); "
		"cross-rail fabrics: NCCL_CROSS_NIC=0",
	},
	[RN_CAUSE_MTU_MISMATCH] = {
		"mtu-mismatch", RN_SEV_WARN,
		"{nic} ({dev}): {what}",
		"ip link set dev {fix_dev} mtu {fix_mtu}  # the same on every RoCE netdev of every host",
	},
	[RN_CAUSE_LINK_DOWN] = {
		"link-down", RN_SEV_FATAL,
		"{nic}: netdev {dev} is down",
		"ip link set dev {dev} up",
	},
	[RN_CAUSE_NO_GID] = {
		"no-gid", RN_SEV_FATAL,
		"{nic} ({dev}): no usable GID: wanted {want}; found {have}",
		"{fix}",
	},
	[RN_CAUSE_GID_FORCED_MISMATCH] = {
		"gid-forced-mismatch", RN_SEV_WARN,
		"{nic} ({dev}): NCCL_IB_GID_INDEX={forced} ({forced_what}) disagrees with the "
		"routing, which makes {ip} (GID index {auto}) the source",
		"unset NCCL_IB_GID_INDEX  # auto-select follows the policy routing",
	},
	[RN_CAUSE_PEER_REFUSED] = {
		"peer-refused", RN_SEV_FATAL,
		"peer {peer_host} ({peer_dev} {peer_ip}) refused its own path: {peer_cause}",
		"run roce-doctor on {peer_host} and apply the fix it names for {peer_dev}",
	},
	[RN_CAUSE_NO_ROUTE] = {
		"no-route", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): no route to {dst} from {ip}: {err}",
		"{route_fix}",
	},
	[RN_CAUSE_FIREWALL] = {
		"firewall", RN_SEV_WARN,
		"{dev}: RoCE v2 traffic (UDP 4791) is filtered",
		"nft insert rule inet filter input iifname {dev} udp dport 4791 accept",
	},
	[RN_CAUSE_SHARED_L2] = {
		"shared-l2", RN_SEV_FATAL,
		"{nic} ({dev} {ip}) is on one L2 segment with {l2_others} (they answer ARP probes "
		"sent from {dev}) although their subnets differ: {why}, so peers can learn another "
		"NIC's MAC for {ip} (ARP flux, completion error 12)",
		"sysctl -w {sysctls}",
	},
	[RN_CAUSE_L2_UNCHECKED] = {
		"l2-unchecked", RN_SEV_WARN,
		"{nic} ({dev} {ip}): cannot tell whether {l2_others} share its L2 segment (the ARP "
		"probe needs CAP_NET_RAW: {err}; roce-doctor as root tells); if they do, {why} "
		"lets peers learn another NIC's MAC for {ip}",
		"sysctl -w {sysctls}",
	},
	[RN_CAUSE_ARP_SILENT] = {
		"arp-silent", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): effective arp_ignore=8 ({where}): the host answers no ARP "
		"request on {dev}, so no peer can resolve {ip}",
		"sysctl -w {sysctls}",
	},
	[RN_CAUSE_RULE_SHADOWED] = {
		"rule-shadowed", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): rule 'from {ip} lookup {table}' (priority {rule_prio}) never "
		"decides: rule {shadow_prio} '{shadow_what}' comes first and sends {dst} out of "
		"{other_dev} (table {used_table})",
		"{move_fix}",
	},
	[RN_CAUSE_TABLE_NO_ROUTE] = {
		"table-no-route", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): rule 'from {ip} lookup {table}' leads to a table with no route "
		"to {dst} out of {dev} (a link going down deletes them), so the lookup falls "
		"through to table {used_table} and leaves through {other_dev}",
		"{route_fix}",
	},
	[RN_CAUSE_NO_GATEWAY] = {
		"no-gateway", RN_SEV_FATAL,
		"{nic} ({dev} {ip}): from {ip} out of {dev} no route reaches {dst} outside "
		"{subnet}: the kernel assumes it is on-link, so ARP for remote GPU hosts never "
		"resolves (an L3 fabric needs a default route via {gw} in {dev}'s own table{gw_hint})",
		"{gw_fix}",
	},
};

const char *rn_cause_id(enum rn_cause cause)
{
	if ((unsigned int)cause >= RN_CAUSE__MAX || !catalogue[cause].id)
		return "unknown";
	return catalogue[cause].id;
}

enum rn_severity rn_cause_severity(enum rn_cause cause)
{
	if ((unsigned int)cause >= RN_CAUSE__MAX)
		return RN_SEV_FATAL;
	return catalogue[cause].sev;
}

const char *rn_cause_msg_template(enum rn_cause cause)
{
	if ((unsigned int)cause >= RN_CAUSE__MAX || !catalogue[cause].msg)
		return "unknown cause";
	return catalogue[cause].msg;
}

const char *rn_cause_fix_template(enum rn_cause cause)
{
	if ((unsigned int)cause >= RN_CAUSE__MAX || !catalogue[cause].fix)
		return "";
	return catalogue[cause].fix;
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

void rn_vars_set(struct rn_vars *v, const char *key, const char *fmt, ...)
{
	va_list ap;
	int i;

	for (i = 0; i < v->n; i++)
		if (!strcmp(v->key[i], key))
			break;
	if (i == v->n) {
		if (v->n == RN_VARS_MAX)
			return;
		v->key[v->n++] = key;
	}
	va_start(ap, fmt);
	vsnprintf(v->val[i], sizeof(v->val[i]), fmt, ap);
	va_end(ap);
}

const char *rn_vars_get(const struct rn_vars *v, const char *key)
{
	int i;

	for (i = 0; v && i < v->n; i++)
		if (!strcmp(v->key[i], key))
			return v->val[i];
	return NULL;
}

static void render(char *out, size_t len, const char *tpl, const struct rn_vars *v)
{
	size_t o = 0;
	const char *p = tpl;

	while (*p && o + 1 < len) {
		const char *end, *val;
		char key[32];
		size_t k;

		if (*p != '{' || !(end = strchr(p, '}')) || (size_t)(end - p - 1) >= sizeof(key)) {
			out[o++] = *p++;
			continue;
		}
		k = (size_t)(end - p - 1);
		memcpy(key, p + 1, k);
		key[k] = '\0';
		val = rn_vars_get(v, key);
		if (!val)
			val = "?";
		while (*val && o + 1 < len)
			out[o++] = *val++;
		p = end + 1;
	}
	out[o] = '\0';
}

void rn_finding_render(struct rn_finding *f, enum rn_cause cause, const struct rn_vars *v)
{
	f->cause = cause;
	f->sev = rn_cause_severity(cause);
	render(f->msg, sizeof(f->msg), rn_cause_msg_template(cause), v);
	render(f->fix, sizeof(f->fix), rn_cause_fix_template(cause), v);
}
