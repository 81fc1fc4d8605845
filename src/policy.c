// SPDX-License-Identifier: MIT
/*
 * The policy-rule model: which 'from' rule decides a source address's table, which
 * address policy routing makes a NIC's source, which rules shadow ours, and the table
 * and priority to propose for a NIC. Read-only over the host snapshot; shared by the
 * GID choice, the route checks, the doctor and scripts/roce-policy-routing's agreement
 * test (test_table), so that all of them name the same numbers.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include "rn_host.h"
#include "rn_policy.h"

const struct rn_nl_rule *rn_rule_for_src(const struct rn_host *host, const struct rn_ip *ip)
{
	int i;

	for (i = 0; i < host->nrules; i++) {
		const struct rn_nl_rule *r = &host->rules[i];

		/*
		 * Only plain 'from <prefix> lookup <table>' rules decide a source's table: one that
		 * also asks for a uid, a protocol, ports or a tos selects nothing of RoCE's.
		 */
		if (r->family != ip->family || r->action != FR_ACT_TO_TBL || r->src_len == 0 ||
		    r->dst_len || r->iif[0] || r->oif[0] || r->fwmark || r->invert || r->more[0])
			continue;
		if (rn_ip_in_prefix(ip, &r->src, r->src_len))
			return r;
	}
	return NULL;
}

/* Does @table route @ip's subnet (@len) out of @ifindex (with src @ip where named)? */
static int table_routes_out(const struct rn_host *host, uint32_t table, const struct rn_ip *ip,
			    int len, int ifindex)
{
	int i;

	for (i = 0; i < host->nroutes; i++) {
		const struct rn_nl_route *r = &host->routes[i];

		if (r->table != table || r->type != RTN_UNICAST || r->dst.family != ip->family ||
		    r->dst_len > len || !rn_ip_in_prefix(ip, &r->dst, r->dst_len))
			continue;
		if (r->oif == ifindex && (!r->prefsrc.family || rn_ip_equal(&r->prefsrc, ip)))
			return 1;
	}
	return 0;
}

int rn_policy_source(const struct rn_host *host, int ifindex, int family, struct rn_ip *ip,
		     uint32_t *prio)
{
	uint32_t best_prio = UINT32_MAX, best_table = 0;
	int i;

	for (i = 0; i < host->naddrs; i++) {
		const struct rn_nl_addr *a = &host->addrs[i];
		const struct rn_nl_rule *r;

		if (a->ifindex != ifindex || a->ip.family != family || !rn_addr_usable(a))
			continue;
		r = rn_rule_for_src(host, &a->ip);
		if (!r || r->table == RN_TABLE_MAIN || r->table == RN_TABLE_LOCAL)
			continue;
		if (!table_routes_out(host, r->table, &a->ip, a->prefixlen, ifindex))
			continue;
		if (r->priority < best_prio) {
			best_prio = r->priority;
			best_table = r->table;
			*ip = a->ip;
		}
	}
	if (prio)
		*prio = best_prio;
	return (int)best_table;
}

/*
 * One definition of a NIC's table, rule priority and of the management NIC, shared with
 * scripts/roce-policy-routing (its --help and man page say the same), so the doctor's
 * fix and the script name the same numbers:
 *   table    100 + ifindex; when taken (a rule looks it up or has it as priority, a route
 *            of either family lives in it, it is 0 or 253-255, or it is 100 + the ifindex
 *            of another link; rules from the link's own addresses and routes out of it do
 *            not count) the next number that is not, links with a lower ifindex whose
 *            own number is taken claiming theirs first.
 *   priority the table number when free and ahead of the first shadowing rule, else the
 *            highest free priority ahead of it (rn_rule_prio_for).
 *   shadow   a rule of either family, priority > 0, 'from all' without 'to', that matches
 *            unmarked locally generated traffic (no fwmark, iif empty or lo, no oif; 'not'
 *            inverts that) and ends the lookup (looks up a table other than local, or
 *            blackhole/unreachable/prohibit): main at 32766, wg-quick's rules, Tailscale's
 *            'lookup 52' at 5270. A per-NIC rule behind one is moved ahead of it.
 *   mgmt     the device of main's best (lowest metric) default route of a family.
 */
static int table_reserved(uint32_t t)
{
	return t == 0 || t == 253 || t == RN_TABLE_MAIN || t == RN_TABLE_LOCAL;
}

/* A 'from <address of @ifindex>' rule: the link's own, which never blocks its numbers. */
static int rule_is_own(const struct rn_host *host, const struct rn_nl_rule *r, int ifindex)
{
	int full = r->src.family == AF_INET ? 32 : 128;

	return ifindex > 0 && r->src.family && r->src_len == full &&
	       rn_host_addr_find(host, ifindex, &r->src);
}

static int prio_used(const struct rn_host *host, int ifindex, uint32_t p)
{
	int i;

	for (i = 0; i < host->nrules; i++)
		if (host->rules[i].priority == p && !rule_is_own(host, &host->rules[i], ifindex))
			return 1;
	return 0;
}

/*
 * Is number @t taken for @ifindex? Rules from the link's own addresses and routes out of
 * the link do not take it: the other family's half of its policy routing, or a leftover
 * of its own, keeps the same table.
 */
static int table_used(const struct rn_host *host, int ifindex, uint32_t t)
{
	int i;

	if (table_reserved(t) || prio_used(host, ifindex, t))
		return 1;
	for (i = 0; i < host->nrules; i++)
		if (host->rules[i].action == FR_ACT_TO_TBL && host->rules[i].table == t &&
		    !rule_is_own(host, &host->rules[i], ifindex))
			return 1;
	for (i = 0; i < host->nroutes; i++)
		if (host->routes[i].table == t && host->routes[i].oif != ifindex)
			return 1;
	/* 100 + ifindex belongs to that link: never hand it to another NIC */
	for (i = 0; i < host->nlinks; i++)
		if (host->links[i].link.ifindex != ifindex &&
		    100 + (uint32_t)host->links[i].link.ifindex == t)
			return 1;
	return 0;
}

int rn_rule_shadows(const struct rn_nl_rule *r)
{
	int match;

	if (r->priority == 0 || r->src_len || r->dst_len)
		return 0;
	switch (r->action) {
	case FR_ACT_TO_TBL:
		if (r->table == 0 || r->table == RN_TABLE_LOCAL)
			return 0;
		break;
	case FR_ACT_BLACKHOLE:
	case FR_ACT_UNREACHABLE:
	case FR_ACT_PROHIBIT:
		break;
	default:
		return 0;
	}
	match = !r->fwmark && (!r->iif[0] || !strcmp(r->iif, "lo")) && !r->oif[0];
	return r->invert ? !match : match;
}

uint32_t rn_rule_first_shadow(const struct rn_host *host)
{
	uint32_t first = 32766;
	int i, any = 0;

	for (i = 0; i < host->nrules; i++)
		if (rn_rule_shadows(&host->rules[i]) && (!any || host->rules[i].priority < first)) {
			first = host->rules[i].priority;
			any = 1;
		}
	return first;
}

uint32_t rn_rule_prio_for(const struct rn_host *host, int ifindex, uint32_t table)
{
	uint32_t s = rn_rule_first_shadow(host), p;

	if (table < s && !prio_used(host, ifindex, table))
		return table;
	for (p = s - 1; p >= 1; p--)
		if (!prio_used(host, ifindex, p))
			return p;
	return 0;
}

int rn_host_mgmt_ifindex(const struct rn_host *host, int family)
{
	const struct rn_nl_route *best = NULL;
	int i;

	for (i = 0; i < host->nroutes; i++) {
		const struct rn_nl_route *r = &host->routes[i];

		if (r->table != RN_TABLE_MAIN || r->dst_len || r->type != RTN_UNICAST ||
		    r->dst.family != family)
			continue;
		if (!best || r->metric < best->metric)
			best = r;
	}
	return best ? best->oif : 0;
}

#define MAX_CLAIMS 256

static int claimed(const uint32_t *c, int n, uint32_t t)
{
	int i;

	for (i = 0; i < n; i++)
		if (c[i] == t)
			return 1;
	return 0;
}

/* @ifindex's number: 100 + ifindex, else the next free one nobody claimed before it. */
static uint32_t table_of(const struct rn_host *host, int ifindex, const uint32_t *c, int n)
{
	uint32_t t = 100 + (uint32_t)ifindex;

	while (table_used(host, ifindex, t) || claimed(c, n, t))
		t++;
	return t;
}

void rn_propose_table(const struct rn_host *host, int ifindex, uint32_t *table, uint32_t *prio)
{
	uint32_t claims[MAX_CLAIMS];
	int n = 0, prev = 0;

	if (ifindex < 0)
		ifindex = 0;
	/* Without a snapshot (connection time) the first guess is as good as any. */
	if (!host) {
		*table = *prio = 100 + (uint32_t)ifindex;
		return;
	}
	/*
	 * Links with a lower ifindex whose own number is taken claim the next free numbers
	 * first, in ifindex order: so every NIC's number is the same whether it is
	 * proposed alone (doctor) or with the others (the script), and no two collide.
	 */
	for (;;) {
		int i, next = 0;

		for (i = 0; i < host->nlinks; i++) {
			int x = host->links[i].link.ifindex;

			if (x > prev && x < ifindex && (!next || x < next))
				next = x;
		}
		if (!next || n == MAX_CLAIMS)
			break;
		if (table_used(host, next, 100 + (uint32_t)next)) {
			uint32_t t = table_of(host, next, claims, n);

			claims[n++] = t;
		}
		prev = next;
	}
	*table = table_of(host, ifindex, claims, n);
	*prio = rn_rule_prio_for(host, ifindex, *table);
}
