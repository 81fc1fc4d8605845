// SPDX-License-Identifier: MIT
/*
 * The NIC verdict: does a kernel route lookup from the NIC's source IP (without
 * oif: with oif the kernel always egresses the GID's netdev, roce-routing.md 1.4)
 * leave through this NIC; can the host's ARP answers for the NIC's IP come from
 * another NIC (arp_ignore/arp_announce, or arp_filter with complete rules); would
 * strict rp_filter drop replies. Each problem becomes a finding from the catalogue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include "rn_host.h"
#include "rn_log.h"

#define MAX_SHARE 32

int rn_ibv_mtu_bytes(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	}
	return 0;
}

/* iboe_get_mtu(): the netdev MTU less 96 bytes of RoCE headers, rounded down. */
int rn_roce_mtu_of(int netdev_mtu)
{
	int m = netdev_mtu - 96, b;

	for (b = 4096; b >= 256; b /= 2)
		if (m >= b)
			return b;
	return 0;
}

int rn_nic_add_finding(struct rn_nic *nic, enum rn_cause cause, const struct rn_vars *v)
{
	int ret;

	if (nic->nfindings == nic->findings_cap) {
		int cap = nic->findings_cap ? 2 * nic->findings_cap : 8;
		struct rn_finding *f = realloc(nic->findings, (size_t)cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		memset(f + nic->findings_cap, 0, (size_t)(cap - nic->findings_cap) * sizeof(*f));
		nic->findings = f;
		nic->findings_cap = cap;
	}
	ret = rn_finding_render(&nic->findings[nic->nfindings], cause, v);
	/* A finding with a template bug still names its cause; only ENOMEM loses it. */
	if (ret != -ENOMEM)
		nic->nfindings++;
	return ret;
}

static void nic_findings_clear(struct rn_nic *nic)
{
	int i;

	for (i = 0; i < nic->nfindings; i++)
		rn_finding_clear(&nic->findings[i]);
	nic->nfindings = 0;
}

void rn_nic_cleanup(struct rn_nic *nic)
{
	if (!nic)
		return;
	nic_findings_clear(nic);
	free(nic->findings);
	nic->findings = NULL;
	nic->findings_cap = 0;
}

int rn_nic_copy(struct rn_nic *dst, const struct rn_nic *src)
{
	int i, n = src->nfindings;

	if (dst == src)
		return 0;
	rn_nic_cleanup(dst);
	*dst = *src;
	dst->findings = NULL;
	dst->findings_cap = 0;
	dst->nfindings = 0;
	if (!n)
		return 0;
	dst->findings = calloc((size_t)n, sizeof(*dst->findings));
	if (!dst->findings)
		return -ENOMEM;
	dst->findings_cap = n;
	for (i = 0; i < n; i++, dst->nfindings++)
		if (rn_finding_copy(&dst->findings[i], &src->findings[i]))
			return -ENOMEM;
	return 0;
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

static const char *link_name(struct rn_host *host, int ifindex)
{
	struct rn_host_link *l = rn_host_link_by_index(host, ifindex);

	return l ? l->link.name : "another interface";
}

/* A destination inside our subnet that is not a local address: what a peer would be. */
int rn_route_probe_dst(const struct rn_host *host, const struct rn_nic *nic, struct rn_ip *dst)
{
	int bits = nic->ip.family == AF_INET ? 32 : 128, k;
	struct rn_ip net;

	if (nic->prefixlen >= bits)
		return -ENOENT;
	rn_ip_mask(&nic->ip, nic->prefixlen, &net);
	for (k = 1; k < 16; k++) {
		*dst = net;
		if (nic->ip.family == AF_INET) {
			uint32_t h = ntohl(net.v4.s_addr) + (uint32_t)k;

			if (nic->prefixlen < 31 && bits - nic->prefixlen < 32 &&
			    (uint32_t)k >= (1U << (bits - nic->prefixlen)) - 1)
				break; /* ran into the broadcast address */
			if (nic->prefixlen == 31)
				h = ntohl(net.v4.s_addr) + (uint32_t)(k - 1);
			dst->v4.s_addr = htonl(h);
		} else {
			dst->v6.s6_addr[15] = (uint8_t)(dst->v6.s6_addr[15] + k);
		}
		if (!rn_ip_in_prefix(dst, &net, nic->prefixlen))
			break;
		if (!rn_host_addr_find(host, 0, dst))
			return 0;
	}
	return -ENOENT;
}

struct share {
	struct rn_host_link *l[MAX_SHARE];
	int n; /* l[0] is this NIC */
};

/* Up links other than ours with an address in our subnet. */
static void find_sharing(struct rn_host *host, const struct rn_nic *nic, struct share *s)
{
	int i, k;

	s->n = 0;
	s->l[s->n] = rn_host_link_by_index(host, nic->ifindex);
	if (!s->l[s->n])
		return;
	s->n++;
	for (i = 0; i < host->naddrs && s->n < MAX_SHARE; i++) {
		const struct rn_nl_addr *a = &host->addrs[i];
		struct rn_host_link *l;

		if (a->ifindex == nic->ifindex || a->ip.family != nic->ip.family ||
		    !rn_ip_in_prefix(&a->ip, &nic->ip, RN_MIN(a->prefixlen, nic->prefixlen)))
			continue;
		l = rn_host_link_by_index(host, a->ifindex);
		if (!l || !l->link.oper_up || (l->link.flags & IFF_LOOPBACK))
			continue;
		for (k = 0; k < s->n && s->l[k] != l; k++)
			;
		if (k == s->n)
			s->l[s->n++] = l;
	}
}

static void check_arp(struct rn_host *host, struct rn_nic *nic, const struct share *s,
		      struct rn_vars *v)
{
	struct rn_vars bad = RN_VARS_INIT; /* growable lists: eight long names fit */
	int ignore_ok = 1, announce_ok = 1, filter_ok = 1, rules_ok = 1, i;

	rn_vars_set(v, "why", "%s", "");
	rn_vars_set(v, "sysctls", "%s", "");
	for (i = 0; i < s->n; i++) {
		const struct rn_sysctls *e = rn_host_sysctls(host, s->l[i]);
		struct rn_ip src;

		if (!rn_arp_ignore_protects(e->arp_ignore)) {
			ignore_ok = 0;
			rn_vars_append(&bad, "ignore", ",", "%s", s->l[i]->link.name);
		}
		if (e->arp_announce < 2) {
			announce_ok = 0;
			rn_vars_append(&bad, "announce", ",", "%s", s->l[i]->link.name);
		}
		if (!e->arp_filter)
			filter_ok = 0;
		if (!rn_policy_source(host, s->l[i]->link.ifindex, nic->ip.family, &src, NULL))
			rules_ok = 0;
	}
	/*
	 * Answers: arp_ignore >= 1 everywhere, or arp_filter=1 where every NIC has its
	 * table. Requests: arp_announce=2, or complete rules (a packet from NIC i's IP
	 * then always leaves NIC i, so its ARP carries the right pair).
	 */
	if ((ignore_ok || (filter_ok && rules_ok)) && (announce_ok || rules_ok))
		goto out;
	if (nic->ip.family != AF_INET)
		goto out; /* IPv6 ND has no flux: answers come from the owning interface */
	if (!(ignore_ok || (filter_ok && rules_ok))) {
		rn_vars_append(v, "why", ", ", "effective arp_ignore=0 on %s",
			       rn_vars_get(&bad, "ignore"));
		rn_vars_append(v, "sysctls", " ", "net.ipv4.conf.all.arp_ignore=1");
	}
	if (!(announce_ok || rules_ok)) {
		rn_vars_append(v, "why", ", ", "%sarp_announce<2 on %s",
			       rn_vars_get(v, "why")[0] ? "" : "effective ",
			       rn_vars_get(&bad, "announce"));
		/* The kernel uses max(all, dev): one key on all fixes every NIC at once. */
		rn_vars_append(v, "sysctls", " ", "net.ipv4.conf.all.arp_announce=2");
	}
	rn_nic_add_finding(nic, RN_CAUSE_ARP_FLUX, v);
out:
	rn_vars_free(&bad);
}

/*
 * The fix for a rule whose table routes our subnet out of another NIC. When another
 * local address's rule uses the same table (a copy-paste of the seed's commands), the
 * table is that NIC's: give ours a table of its own instead of rewriting theirs.
 */
static void rule_fix(const struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v)
{
	char ip[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN];
	struct rn_ip subnet;
	uint32_t t, prio;
	int i, shared = 0;

	for (i = 0; i < host->nrules; i++) {
		const struct rn_nl_rule *r = &host->rules[i];

		if (r->table == (uint32_t)nic->table && r->src.family &&
		    !rn_ip_equal(&r->src, &nic->ip) && rn_host_addr_find(host, 0, &r->src))
			shared = 1;
	}
	rn_ip_str(&nic->ip, ip, sizeof(ip));
	rn_ip_mask(&nic->ip, nic->prefixlen, &subnet);
	rn_ip_str(&subnet, net, sizeof(net));
	if (!shared) {
		rn_vars_set(v, "rule_fix", "ip route replace %s/%d dev %s src %s table %d", net,
			    nic->prefixlen, nic->netdev, ip, nic->table);
		return;
	}
	rn_propose_table(host, nic->ifindex, &t, &prio);
	rn_vars_set(v, "rule_fix",
		    "ip rule del from %s lookup %d; ip rule add from %s lookup %u priority %u; "
		    "ip route replace %s/%d dev %s src %s table %u", ip, nic->table, ip, t, prio,
		    net, nic->prefixlen, nic->netdev, ip, t);
}

int rn_route_assess(struct rn_host *host, struct rn_nic *nic, const struct rn_config *cfg)
{
	struct rn_vars v = RN_VARS_INIT;
	struct share s;
	struct rn_host_link *self = rn_host_link_by_index(host, nic->ifindex);
	char ip[INET6_ADDRSTRLEN], net_s[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN];
	struct rn_nl_route r;
	struct rn_ip net, dst;
	uint32_t table, prio;
	int i, ret, wrong_egress = 0, wrong_dev = 0, mgmt;

	rn_vars_set(&v, "nic", "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev, nic->port);
	rn_vars_set(&v, "dev", "%s", nic->netdev);
	if (!nic->link_up || (self && !self->link.oper_up)) {
		rn_nic_add_finding(nic, RN_CAUSE_LINK_DOWN, &v);
		goto out;
	}
	if (nic->active_mtu && rn_ibv_mtu_bytes(nic->active_mtu) > rn_roce_mtu_of(nic->mtu)) {
		rn_vars_set(&v, "what",
			    "port active_mtu %d exceeds what netdev MTU %d carries (%d): large messages are dropped",
			    rn_ibv_mtu_bytes(nic->active_mtu), nic->mtu, rn_roce_mtu_of(nic->mtu));
		rn_vars_set(&v, "fix_dev", "%s", nic->netdev);
		rn_vars_set(&v, "fix_mtu", "%d", rn_ibv_mtu_bytes(nic->active_mtu) + 96);
		rn_nic_add_finding(nic, RN_CAUSE_MTU_MISMATCH, &v);
	}
	if (!nic->ip.family)
		goto out;

	rn_ip_mask(&nic->ip, nic->prefixlen, &net);
	rn_vars_set(&v, "ip", "%s", rn_ip_str(&nic->ip, ip, sizeof(ip)));
	rn_vars_set(&v, "subnet", "%s/%d", rn_ip_str(&net, net_s, sizeof(net_s)), nic->prefixlen);
	find_sharing(host, nic, &s);
	mgmt = rn_host_mgmt_ifindex(host, nic->ip.family);
	rn_vars_set(&v, "devs", "%s", nic->ip.family == AF_INET6 ? "--family 6" : "");
	rn_vars_set(&v, "others", "%s", "");
	for (i = 0; i < s.n; i++) {
		/*
		 * The script never configures the management NIC unless told to: leave it
		 * out of the command (the 'all' ARP sysctls still cover it), or name
		 * --force when it is the NIC being judged.
		 */
		if (!i && s.l[i]->link.ifindex == mgmt)
			rn_vars_append(&v, "devs", " ", "--force %s", s.l[i]->link.name);
		else if (s.l[i]->link.ifindex != mgmt)
			rn_vars_append(&v, "devs", " ", "%s", s.l[i]->link.name);
	}
	if (!rn_vars_get(&v, "devs")[0])
		rn_vars_set(&v, "devs", "%s", nic->netdev);
	/* "7 other NICs: a, b, ...": a long list says how long it is, and stays whole */
	if (s.n > 2)
		rn_vars_set(&v, "others", "%d other NICs: ", s.n - 1);
	for (i = 1; i < s.n; i++)
		rn_vars_append(&v, "others", i > 1 ? ", " : "", "%s", s.l[i]->link.name);
	if (nic->table != RN_TABLE_MAIN) {
		const struct rn_nl_rule *rule = rn_rule_for_src(host, &nic->ip);

		table = (uint32_t)nic->table;
		prio = rule ? rule->priority : table;
	} else {
		rn_propose_table(host, nic->ifindex, &table, &prio);
	}
	rn_vars_set(&v, "table", "%u", table);
	rn_vars_set(&v, "prio", "%u", prio);

	/* The kernel's own answer for a peer in our subnet. */
	if (!rn_route_probe_dst(host, nic, &dst)) {
		rn_vars_set(&v, "dst", "%s", rn_ip_str(&dst, buf, sizeof(buf)));
		ret = rn_nl.route_get(&dst, &nic->ip, 0, &r);
		if (ret < 0) {
			rn_vars_set(&v, "err", "%s", strerror(-ret));
			rn_nic_add_finding(nic, RN_CAUSE_NO_ROUTE, &v);
		} else if (r.type != RTN_LOCAL && r.oif != nic->ifindex) {
			wrong_egress = 1;
			wrong_dev = r.oif;
			rn_vars_set(&v, "other_dev", "%s", link_name(host, r.oif));
			rn_vars_set(&v, "used_table", "%u", r.table);
			if (nic->table != RN_TABLE_MAIN && r.table == (uint32_t)nic->table) {
				rule_fix(host, nic, &v);
				rn_nic_add_finding(nic, RN_CAUSE_RULE_WRONG_NIC, &v);
			}
			else
				rn_nic_add_finding(nic, RN_CAUSE_ROUTE_WRONG_NIC, &v);
		}
	}
	/* Gateways of our table must be reached through our NIC too. */
	for (i = 0; i < host->nroutes && !wrong_egress; i++) {
		const struct rn_nl_route *g = &host->routes[i];

		if (g->table != (uint32_t)nic->table || !g->gw.family ||
		    g->gw.family != nic->ip.family || g->type != RTN_UNICAST)
			continue;
		if (nic->table == RN_TABLE_MAIN && g->oif != nic->ifindex)
			continue; /* main's default route belongs to the management NIC */
		ret = rn_nl.route_get(&g->gw, &nic->ip, 0, &r);
		if (ret < 0 || r.oif == nic->ifindex)
			continue;
		wrong_egress = 1;
		wrong_dev = r.oif;
		rn_vars_set(&v, "dst", "gateway %s", rn_ip_str(&g->gw, buf, sizeof(buf)));
		rn_vars_set(&v, "other_dev", "%s", link_name(host, r.oif));
		rn_vars_set(&v, "used_table", "%u", r.table);
		rn_nic_add_finding(nic, RN_CAUSE_ROUTE_WRONG_NIC, &v);
	}

	if (s.n > 1) {
		check_arp(host, nic, &s, &v);
		if (nic->table == RN_TABLE_MAIN)
			rn_nic_add_finding(nic, RN_CAUSE_NO_RULE, &v);
	}
	if (self && wrong_egress && nic->ip.family == AF_INET) {
		const struct rn_sysctls *e = rn_host_sysctls(host, self);

		if (e->rp_filter == 1) {
			rn_vars_set(&v, "value", "%d", e->rp_filter);
			rn_vars_set(&v, "other_dev", "%s", link_name(host, wrong_dev));
			rn_nic_add_finding(nic, RN_CAUSE_RP_FILTER, &v);
		}
	}
out:
	rn_vars_free(&v);
	return 0;
}

static enum rn_verdict_kind judge(const struct rn_nic *nic, const struct rn_config *cfg)
{
	enum rn_verdict_kind k = RN_VERDICT_OK;
	int i;

	for (i = 0; i < nic->nfindings; i++) {
		if (nic->findings[i].cause == RN_CAUSE_NO_GID)
			return RN_VERDICT_REFUSED; /* nothing to run RoCE on, whatever the mode */
		if (nic->findings[i].sev == RN_SEV_FATAL)
			k = cfg->route_check == RN_ROUTE_CHECK_STRICT ? RN_VERDICT_REFUSED
								       : RN_MAX(k, RN_VERDICT_WARN);
		else if (nic->findings[i].sev == RN_SEV_WARN)
			k = RN_MAX(k, RN_VERDICT_WARN);
	}
	return k;
}

int rn_nic_assess(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		  const struct rn_config *cfg)
{
	int ret, i, no_gid = 0;

	if (!host || !nic || !cfg)
		return -EINVAL;
	nic->gid_index = -1;
	nic->gid_why = RN_GID_WHY_NONE;
	memset(&nic->gid, 0, sizeof(nic->gid));
	memset(&nic->ip, 0, sizeof(nic->ip));
	nic->prefixlen = 0;
	nic->table = RN_TABLE_MAIN;
	nic_findings_clear(nic);
	nic->verdict = RN_VERDICT_OK;
	if (!rn_host_link_by_index(host, nic->ifindex)) {
		struct rn_host_link *l = nic->netdev[0] ? rn_host_link_by_name(host, nic->netdev)
							: NULL;

		if (!l)
			return -ENODEV;
		nic->ifindex = l->link.ifindex;
	}
	ret = rn_gid_choose(host, ctx, nic, cfg);
	if (ret < 0)
		return ret;
	for (i = 0; i < nic->nfindings; i++)
		if (nic->findings[i].cause == RN_CAUSE_NO_GID)
			no_gid = 1;
	if (cfg->route_check != RN_ROUTE_CHECK_OFF && !no_gid)
		rn_route_assess(host, nic, cfg);
	nic->verdict = judge(nic, cfg);
	return 0;
}

void rn_nic_log(const struct rn_nic *nic)
{
	char ip[INET6_ADDRSTRLEN], name[96], label[32];
	struct rn_vars v = RN_VARS_INIT;
	int i;

	snprintf(name, sizeof(name), "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev, nic->port);
	rn_vars_set(&v, "causes", "%s", "");
	for (i = 0; i < nic->nfindings; i++)
		rn_vars_append(&v, "causes", ",", "%s",
			       rn_cause_label(nic->findings[i].cause, label, sizeof(label)));
	rn_info(RN_SUB_INIT | RN_SUB_NET,
		RN_PFX "NIC %s netdev %s GID %d IP %s/%d table %d verdict %s%s%s", name, nic->netdev,
		nic->gid_index, rn_ip_str(&nic->ip, ip, sizeof(ip)), nic->prefixlen, nic->table,
		rn_verdict_str(nic->verdict), nic->nfindings ? " causes " : "",
		rn_vars_get(&v, "causes") ? rn_vars_get(&v, "causes") : "");
	rn_vars_free(&v);
	snprintf(name, sizeof(name), RN_PFX "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev,
		 nic->port);
	for (i = 0; i < nic->nfindings; i++)
		rn_finding_log(RN_LOG_WARN, RN_SUB_INIT | RN_SUB_NET, name, NULL, &nic->findings[i]);
}
