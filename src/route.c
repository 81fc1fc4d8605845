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
#include <arpa/inet.h>
#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "rn_host.h"
#include "rn_log.h"
#include "rn_nic.h"
#include "rn_policy.h"
#include "rn_route.h"

#define MAX_SHARE 32

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

/*
 * The lookups the verdict judges, kept in @nic: for a would-be peer from our IP, as TCP
 * and ARP see it (IPv4: no oif; IPv6 pins oif as the QP does), and with oif our netdev.
 */
static void route_answer(struct rn_host *host, struct rn_nic *nic)
{
	struct rn_route_answer *a = &nic->route;

	memset(a, 0, sizeof(*a));
	if (!nic->ip.family || rn_route_probe_dst(host, nic, &a->dst)) {
		memset(&a->dst, 0, sizeof(a->dst));
		return;
	}
	a->err = rn_host_route_get(host, &a->dst, &nic->ip,
				   nic->ip.family == AF_INET6 ? nic->ifindex : 0, &a->route);
	a->oif_err = rn_host_route_get(host, &a->dst, &nic->ip, nic->ifindex, &a->route_oif);
}

struct share {
	struct rn_host_link *l[MAX_SHARE];
	int n;       /* l[0] is this NIC */
	int nsubnet; /* l[0..nsubnet-1] share our subnet; the rest only our L2 segment */
	int l2err;   /* -errno when the L2 probe could not run (CAP_NET_RAW) */
	int nunk;    /* links whose L2 could not be told */
	struct rn_host_link *unk[MAX_SHARE];
};

/* Up links other than ours with an address in our subnet. */
static void find_sharing(struct rn_host *host, const struct rn_nic *nic, struct share *s)
{
	int i, k;

	memset(s, 0, sizeof(*s));
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
	s->nsubnet = s->n;
}

static int arp_safe(struct rn_host *host, struct rn_host_link *l)
{
	const struct rn_sysctls *e = rn_host_sysctls(host, l);

	return rn_arp_ignore_quiet(e->arp_ignore) && e->arp_announce >= 2;
}

/*
 * Links in other subnets that hear our ARP broadcasts (one L2 segment: their
 * subnets differ, ARP does not care). Only asked when it matters: when one of the
 * two would answer for the other's address or announce it.
 */
static void find_l2_sharing(struct rn_host *host, const struct rn_nic *nic, struct share *s)
{
	int i, k, self_safe;

	if (nic->ip.family != AF_INET || !s->n)
		return;
	self_safe = arp_safe(host, s->l[0]);
	for (i = 0; i < host->nlinks && s->n < MAX_SHARE; i++) {
		struct rn_host_link *l = &host->links[i];
		const struct rn_nl_addr *a = NULL;
		int k2, ret;

		for (k = 0; k < s->n && s->l[k] != l; k++)
			;
		if (k < s->n || !l->link.oper_up || (l->link.flags & IFF_LOOPBACK) ||
		    l->link.master)
			continue;
		for (k2 = 0; k2 < host->naddrs && !a; k2++)
			if (host->addrs[k2].ifindex == l->link.ifindex &&
			    host->addrs[k2].ip.family == AF_INET)
				a = &host->addrs[k2];
		if (!a || (self_safe && arp_safe(host, l)))
			continue;
		ret = rn_host_same_l2(host, nic->ifindex, l->link.ifindex);
		if (ret == 1)
			s->l[s->n++] = l;
		else if (ret < 0) {
			s->l2err = ret;
			s->unk[s->nunk++] = l;
		}
	}
}

/* Append "KEY=VAL" (sysctl's slash form for dotted names) to @v's @var, once. */
static void add_key(struct rn_vars *v, const char *var, const char *dev, const char *key, int val)
{
	char k[IF_NAMESIZE + 40];
	const char *cur = rn_vars_get(v, var);

	rn_sysctl_key(k, sizeof(k), dev, key);
	if (cur && strstr(cur, k))
		return;
	rn_vars_append(v, var, " ", "%s=%d", k, val);
}

/*
 * ARP flux among @l[0..n-1] (a subnet or an L2 segment shared with our NIC): sets "why"
 * and the "sysctls" that end it (max(all, dev): 'all' fixes every link unless a link's
 * own value is worse than the fix). 1 when there is flux.
 */
static int flux_why(struct rn_host *host, struct rn_nic *nic, struct rn_host_link **l, int n,
		    struct rn_vars *v)
{
	struct rn_vars bad = RN_VARS_INIT; /* growable lists: eight long names fit */
	int ignore_ok = 1, announce_ok = 1, filter_ok = 1, rules_ok = 1, i, flux = 0;

	rn_vars_set(v, "why", "%s", "");
	rn_vars_set(v, "sysctls", "%s", "");
	for (i = 0; i < n; i++) {
		const struct rn_sysctls *e = rn_host_sysctls(host, l[i]);
		struct rn_ip src;

		if (!rn_arp_ignore_quiet(e->arp_ignore)) {
			ignore_ok = 0;
			rn_vars_append(&bad, "ignore", ",", "%s=%d", l[i]->link.name,
				       e->arp_ignore);
		}
		if (e->arp_announce < 2) {
			announce_ok = 0;
			rn_vars_append(&bad, "announce", ",", "%s=%d", l[i]->link.name,
				       e->arp_announce);
		}
		if (!e->arp_filter)
			filter_ok = 0;
		if (!rn_policy_source(host, l[i]->link.ifindex, nic->ip.family, &src, NULL))
			rules_ok = 0;
	}
	/*
	 * Answers: arp_ignore 1/2 everywhere (8 answers nothing), or arp_filter=1 where
	 * every NIC has its table. Requests: arp_announce=2, or complete rules (a packet
	 * from NIC i's IP then always leaves NIC i, so its ARP carries the right pair).
	 */
	if (!(ignore_ok || (filter_ok && rules_ok))) {
		rn_vars_append(v, "why", ", ",
			       "effective arp_ignore %s (answers for any local address)",
			       rn_vars_get(&bad, "ignore"));
		add_key(v, "sysctls", "all", "arp_ignore", 1);
		for (i = 0; i < n; i++)
			if (l[i]->dev.arp_ignore > 2 && l[i]->dev.arp_ignore != 8)
				add_key(v, "sysctls", l[i]->link.name, "arp_ignore", 1);
		flux = 1;
	}
	if (!(announce_ok || rules_ok)) {
		rn_vars_append(v, "why", ", ", "effective arp_announce %s",
			       rn_vars_get(&bad, "announce"));
		/* The kernel uses max(all, dev): one key on all fixes every NIC at once. */
		add_key(v, "sysctls", "all", "arp_announce", 2);
		flux = 1;
	}
	rn_vars_free(&bad);
	return flux;
}

/* "a, b, c" of @l[0..n-1] into @v's @var. */
static void link_list(struct rn_vars *v, const char *var, struct rn_host_link **l, int n)
{
	int i;

	rn_vars_set(v, var, "%s", "");
	for (i = 0; i < n; i++)
		rn_vars_append(v, var, ", ", "%s", l[i]->link.name);
}

static void check_arp(struct rn_host *host, struct rn_nic *nic, const struct share *s,
		      struct rn_vars *v)
{
	struct rn_host_link *g[MAX_SHARE + 1];
	int i, n;

	if (nic->ip.family != AF_INET)
		return; /* IPv6 ND has no flux: answers come from the owning interface */
	if (s->nsubnet > 1 && flux_why(host, nic, (struct rn_host_link **)s->l, s->nsubnet, v))
		rn_nic_add_finding(nic, RN_CAUSE_ARP_FLUX, v);
	if (s->n > s->nsubnet) {
		n = 0;
		g[n++] = s->l[0];
		for (i = s->nsubnet; i < s->n; i++)
			g[n++] = s->l[i];
		if (flux_why(host, nic, g, n, v)) {
			link_list(v, "l2_others", g + 1, n - 1);
			rn_nic_add_finding(nic, RN_CAUSE_SHARED_L2, v);
		}
	}
	if (s->nunk) {
		n = 0;
		g[n++] = s->l[0];
		for (i = 0; i < s->nunk; i++)
			g[n++] = s->unk[i];
		if (flux_why(host, nic, g, n, v)) {
			link_list(v, "l2_others", g + 1, n - 1);
			rn_vars_set(v, "err", "%s", strerror(-s->l2err));
			rn_nic_add_finding(nic, RN_CAUSE_L2_UNCHECKED, v);
		}
	}
}

/* Effective arp_ignore=8: the host answers no ARP request on this NIC at all. */
static void check_arp_silent(struct rn_host *host, struct rn_nic *nic, struct rn_host_link *self,
			     struct rn_vars *v)
{
	const struct rn_sysctls *e;

	if (nic->ip.family != AF_INET || !self)
		return;
	e = rn_host_sysctls(host, self);
	if (e->arp_ignore != 8)
		return;
	rn_vars_set(v, "sysctls", "%s", "");
	rn_vars_set(v, "where", "%s", "");
	if (host->all.arp_ignore == 8) {
		add_key(v, "sysctls", "all", "arp_ignore", 1);
		rn_vars_append(v, "where", ", ", "all=8");
	}
	if (self->dev.arp_ignore == 8) {
		add_key(v, "sysctls", self->link.name, "arp_ignore", 1);
		rn_vars_append(v, "where", ", ", "%s=8", self->link.name);
	}
	rn_nic_add_finding(nic, RN_CAUSE_ARP_SILENT, v);
}

/*
 * proxy_arp (all OR dev) on a NIC that forwards: arp_process answers a request that came
 * in on it for any address whose route leaves another link (arp_fwd_proxy), with this
 * NIC's MAC. On a host whose NICs share a subnet the route to the others' peers leaves
 * the first NIC: every other NIC answers for the whole subnet.
 */
static void check_proxy_arp(struct rn_host *host, struct rn_nic *nic, struct rn_host_link *self,
			    struct rn_vars *v)
{
	const struct rn_sysctls *e;

	if (nic->ip.family != AF_INET || !self)
		return;
	e = rn_host_sysctls(host, self);
	if (!e->proxy_arp || e->forwarding <= 0)
		return;
	rn_vars_set(v, "sysctls", "%s", "");
	rn_vars_set(v, "where", "%s", "");
	if (host->all.proxy_arp > 0) {
		add_key(v, "sysctls", "all", "proxy_arp", 0);
		rn_vars_append(v, "where", ", ", "all=%d", host->all.proxy_arp);
	}
	if (self->dev.proxy_arp > 0) {
		add_key(v, "sysctls", self->link.name, "proxy_arp", 0);
		rn_vars_append(v, "where", ", ", "%s=%d", self->link.name, self->dev.proxy_arp);
	}
	rn_nic_add_finding(nic, RN_CAUSE_PROXY_ARP, v);
}

/*
 * The host's RoCE NICs (those the caller marked, rn_host_mark_roce, whatever their subnet:
 * rails) and the links that share our subnet or L2 segment should carry one MTU: jumbo
 * frames from a 9000 NIC to a 1500 one are lost (RoCE itself takes the smaller active
 * MTU; kernel traffic and throughput do not). The odd one out is named, against the MTU
 * most of them have (a tie: the larger), with the command that sets it.
 */
static void check_host_mtu(struct rn_host *host, struct rn_nic *nic, const struct share *s,
			   struct rn_vars *v)
{
	struct rn_host_link *set[MAX_SHARE + RN_HOST_ROCE_MAX];
	int i, k, best = 0, best_n = 0, n, nset = 0;

	for (i = 0; i < s->n; i++)
		set[nset++] = s->l[i];
	for (i = 0; i < host->nroce_links; i++) {
		struct rn_host_link *l = rn_host_link_by_index(host, host->roce_links[i]);

		for (k = 0; l && k < nset && set[k] != l; k++)
			;
		if (l && k == nset && l->link.oper_up)
			set[nset++] = l;
	}
	if (nset < 2 || nic->mtu <= 0)
		return;
	for (i = 0; i < nset; i++) {
		for (n = 0, k = 0; k < nset; k++)
			n += set[k]->link.mtu == set[i]->link.mtu;
		if (n > best_n || (n == best_n && set[i]->link.mtu > best)) {
			best = set[i]->link.mtu;
			best_n = n;
		}
	}
	if (best <= 0 || nic->mtu == best)
		return;
	rn_vars_set(v, "what", "netdev MTU %d here but %d on ", nic->mtu, best);
	for (n = 0, i = 0; i < nset; i++)
		if (set[i]->link.ifindex != nic->ifindex && set[i]->link.mtu == best)
			rn_vars_append(v, "what", n++ ? ", " : "", "%s", set[i]->link.name);
	rn_vars_append(v, "what", "",
		       " (this host's other RoCE NICs or NICs of its subnet): "
		       "frames larger than %d are lost between them",
		       RN_MIN(nic->mtu, best));
	rn_vars_set(v, "mtu_fix", "ip link set dev %s mtu %d", nic->netdev, best);
	rn_vars_set(v, "fix_host", "%s", "");
	rn_nic_add_finding(nic, RN_CAUSE_MTU_MISMATCH, v);
}

static const char *ipf(const struct rn_nic *nic)
{
	return nic->ip.family == AF_INET6 ? "ip -6" : "ip";
}

static const char *subnet_str(const struct rn_nic *nic, char *buf, size_t len)
{
	char n[INET6_ADDRSTRLEN];
	struct rn_ip net;

	rn_ip_mask(&nic->ip, nic->prefixlen, &net);
	snprintf(buf, len, "%s/%d", rn_ip_str(&net, n, sizeof(n)), nic->prefixlen);
	return buf;
}

/*
 * The fix for a rule whose table routes our subnet out of another NIC. When another
 * local address's rule uses the same table (a copy-paste of the seed's commands), the
 * table is that NIC's: give ours a table of its own instead of rewriting theirs.
 */
static void rule_fix(const struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v)
{
	char ip[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN + 8];
	uint32_t t, prio;
	int i, shared = 0;

	for (i = 0; i < host->nrules; i++) {
		const struct rn_nl_rule *r = &host->rules[i];

		if (r->table == (uint32_t)nic->table && r->src.family &&
		    !rn_ip_equal(&r->src, &nic->ip) && rn_host_addr_find(host, 0, &r->src))
			shared = 1;
	}
	rn_ip_str(&nic->ip, ip, sizeof(ip));
	subnet_str(nic, net, sizeof(net));
	if (!shared) {
		rn_vars_set(v, "rule_fix", "%s route replace %s dev %s src %s table %d", ipf(nic),
			    net, nic->netdev, ip, nic->table);
		return;
	}
	rn_propose_table(host, nic->ifindex, &t, &prio);
	rn_vars_set(v, "rule_fix",
		    "%s rule del from %s lookup %d; %s rule add from %s lookup %u priority %u; "
		    "%s route replace %s dev %s src %s table %u",
		    ipf(nic), ip, nic->table, ipf(nic), ip, t, prio, ipf(nic), net, nic->netdev, ip,
		    t);
}

/* "alt": the script as a trailing comment, only where it fixes this NIC (IPv4 only). */
static void alt_vars(const struct rn_nic *nic, struct rn_vars *v, int offer)
{
	const char *devs = rn_vars_get(v, "devs");

	if (offer && nic->ip.family == AF_INET)
		rn_vars_set(v, "alt", "  # or, for all NICs at once: roce-policy-routing %s",
			    devs ? devs : nic->netdev);
	else
		rn_vars_set(v, "alt", "%s", "");
}

void rn_route_fix_vars(const struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v)
{
	char ip[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN + 8];
	uint32_t t, prio;

	rn_ip_str(&nic->ip, ip, sizeof(ip));
	subnet_str(nic, net, sizeof(net));
	alt_vars(nic, v, 1);
	if (nic->table != RN_TABLE_MAIN) {
		/* The rule is there: its table lacks the route (a bounced link empties it). */
		rn_vars_set(v, "route_fix", "%s route replace %s dev %s src %s table %d", ipf(nic),
			    net, nic->netdev, ip, nic->table);
		return;
	}
	rn_propose_table(host, nic->ifindex, &t, &prio);
	rn_vars_set(v, "route_fix",
		    "%s route replace %s dev %s src %s table %u; "
		    "%s rule add from %s lookup %u priority %u",
		    ipf(nic), net, nic->netdev, ip, t, ipf(nic), ip, t, prio);
}

/* Does @table hold a route for @dst out of @ifindex? */
static int table_has(const struct rn_host *host, uint32_t table, const struct rn_ip *dst,
		     int ifindex)
{
	const struct rn_nl_route *best = NULL;
	int i;

	for (i = 0; i < host->nroutes; i++) {
		const struct rn_nl_route *r = &host->routes[i];

		if (r->table != table || r->type != RTN_UNICAST || r->dst.family != dst->family ||
		    !rn_ip_in_prefix(dst, &r->dst, r->dst_len))
			continue;
		if (!best || r->dst_len > best->dst_len)
			best = r;
	}
	return best && best->oif == ifindex;
}

/* The rule that decides for @ip (ours) and the first rule ahead of it into @table. */
static const struct rn_nl_rule *shadowing_rule(const struct rn_host *host,
					       const struct rn_nl_rule *ours, uint32_t table)
{
	int i;

	for (i = 0; i < host->nrules && &host->rules[i] != ours; i++) {
		const struct rn_nl_rule *r = &host->rules[i];

		if (r->family == ours->family && r->action == FR_ACT_TO_TBL && r->table == table &&
		    r->table != RN_TABLE_LOCAL && !r->fwmark)
			return r;
	}
	return NULL;
}

static void rule_str(const struct rn_nl_rule *r, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	size_t o;

	snprintf(buf, len, "%sfrom %s", r->invert ? "not " : "",
		 r->src_len ? rn_ip_str(&r->src, ip, sizeof(ip)) : "all");
	o = strlen(buf);
	if (r->fwmark)
		o += (size_t)snprintf(buf + o, len - o, " fwmark 0x%x", r->fwmark);
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, " lookup %u", r->table);
	if (o < len && r->suppress)
		snprintf(buf + o, len - o, " suppress_prefixlength %d", r->suppress - 1);
}

static int prio_taken(const struct rn_host *host, int family, uint32_t p)
{
	int i;

	for (i = 0; i < host->nrules; i++)
		if (host->rules[i].family == family && host->rules[i].priority == p)
			return 1;
	return 0;
}

/*
 * Our rule exists but the kernel decided with a rule ahead of it (wg-quick's
 * suppress_prefixlength rule, Tailscale's table 52, 'main' when ours sits after
 * 32766): the fix moves ours ahead of that one; re-adding it changes nothing.
 * Returns 1 with "move_fix" set, 0 when no rule ahead explains it.
 */
static int shadow_vars(const struct rn_host *host, const struct rn_nic *nic, uint32_t used,
		       struct rn_vars *v)
{
	const struct rn_nl_rule *ours = rn_rule_for_src(host, &nic->ip);
	const struct rn_nl_rule *sh;
	char ip[INET6_ADDRSTRLEN], what[160], from[INET6_ADDRSTRLEN + 8];
	uint32_t p;

	if (!ours || !(sh = shadowing_rule(host, ours, used)))
		return 0;
	rule_str(sh, what, sizeof(what));
	rn_vars_set(v, "rule_prio", "%u", ours->priority);
	rn_vars_set(v, "shadow_prio", "%u", sh->priority);
	rn_vars_set(v, "shadow_what", "%s", what);
	rn_ip_str(&ours->src, ip, sizeof(ip));
	if (ours->src_len != (ours->family == AF_INET ? 32 : 128))
		snprintf(from, sizeof(from), "%s/%d", ip, ours->src_len);
	else
		snprintf(from, sizeof(from), "%s", ip);
	/* Where the script puts it (one definition), unless that is still behind @sh. */
	p = rn_rule_prio_for(host, nic->ifindex, ours->table);
	if (!p || p >= sh->priority) {
		for (p = sh->priority; p > 1 && prio_taken(host, ours->family, p - 1); p--)
			;
		p--;
	}
	if (p < 1) {
		rn_vars_set(v, "move_fix", "%s", "");
		return 1;
	}
	rn_vars_set(v, "move_fix",
		    "%s rule del from %s lookup %u priority %u; "
		    "%s rule add from %s lookup %u priority %u",
		    ipf(nic), from, ours->table, ours->priority, ipf(nic), from, ours->table, p);
	return 1;
}

/* A finding whose catalogue severity is lowered: the egress is right, by luck. */
static void add_lowered(struct rn_nic *nic, enum rn_cause cause, const struct rn_vars *v, int low)
{
	int n = nic->nfindings;

	rn_nic_add_finding(nic, cause, v);
	if (low && nic->nfindings > n)
		nic->findings[n].sev = RN_SEV_WARN;
}

/*
 * A peer outside our subnet (an L3 fabric: a /31 or /30 to the ToR, or a NIC with a
 * gateway of its own): the first address of a neighbouring block that no local
 * address covers.
 */
static int offsubnet_dst(const struct rn_host *host, const struct rn_nic *nic, struct rn_ip *dst)
{
	struct rn_ip net;
	int k, i;

	if (nic->prefixlen < 8)
		return -ENOENT;
	rn_ip_mask(&nic->ip, nic->prefixlen, &net);
	for (k = 1; k < 64; k++) {
		int covered = 0;

		*dst = net;
		if (nic->ip.family == AF_INET) {
			uint32_t block = nic->prefixlen >= 32 ? 1 : 1U << (32 - nic->prefixlen);

			dst->v4.s_addr = htonl(ntohl(net.v4.s_addr) + block * (uint32_t)k + 1);
		} else {
			int byte = (nic->prefixlen - 1) / 8, bit = 7 - (nic->prefixlen - 1) % 8;

			dst->v6.s6_addr[byte] = (uint8_t)(dst->v6.s6_addr[byte] + (k << bit));
			dst->v6.s6_addr[15] |= 1;
		}
		for (i = 0; i < host->naddrs && !covered; i++)
			covered = rn_ip_in_prefix(dst, &host->addrs[i].ip,
						  host->addrs[i].prefixlen);
		if (!covered)
			return 0;
	}
	return -ENOENT;
}

/*
 * This NIC's gateway: the one NCCL_ROCE_GATEWAYS (roce-doctor --gateway) gives it, else a
 * route with a gateway out of it (its table first, then any), else a route of any table
 * whose gateway is in our subnet (main's default via the ToR out of another NIC of the
 * subnet), else the other end of a /31 (/127) or /30. 0 or -ENOENT.
 */
static int nic_gateway(const struct rn_host *host, const struct rn_nic *nic,
		       const struct rn_config *cfg, struct rn_ip *gw)
{
	int pass, i;

	if (cfg && !rn_cfg_gateway(cfg->gateways, nic->netdev, nic->ip.family, gw))
		return 0;
	for (pass = 0; pass < 3; pass++)
		for (i = 0; i < host->nroutes; i++) {
			const struct rn_nl_route *r = &host->routes[i];

			if (r->gw.family != nic->ip.family || r->nhops > 1 ||
			    (pass < 2 && r->oif != nic->ifindex) ||
			    (!pass && r->table != (uint32_t)nic->table) ||
			    (pass == 2 && (!rn_ip_in_prefix(&r->gw, &nic->ip, nic->prefixlen) ||
					   r->table == RN_TABLE_LOCAL)))
				continue;
			*gw = r->gw;
			return 0;
		}
	*gw = nic->ip;
	if (nic->ip.family == AF_INET && nic->prefixlen == 31) {
		gw->v4.s_addr ^= htonl(1);
		return 0;
	}
	if (nic->ip.family == AF_INET && nic->prefixlen == 30) {
		uint32_t h = ntohl(nic->ip.v4.s_addr) & 3;

		gw->v4.s_addr = htonl((ntohl(nic->ip.v4.s_addr) & ~3U) | (h == 1 ? 2 : 1));
		return 0;
	}
	if (nic->ip.family == AF_INET6 && nic->prefixlen == 127) {
		gw->v6.s6_addr[15] ^= 1;
		return 0;
	}
	return -ENOENT;
}

static int nic_is_l3(const struct rn_host *host, const struct rn_nic *nic)
{
	struct rn_ip gw;
	int i;

	if ((nic->ip.family == AF_INET && nic->prefixlen >= 30) ||
	    (nic->ip.family == AF_INET6 && nic->prefixlen >= 126))
		return 1;
	for (i = 0; i < host->nroutes; i++) {
		const struct rn_nl_route *r = &host->routes[i];

		if (r->gw.family == nic->ip.family && r->oif == nic->ifindex &&
		    (r->table == (uint32_t)nic->table || r->table == RN_TABLE_MAIN))
			return !nic_gateway(host, nic, NULL, &gw);
	}
	return 0;
}

void rn_route_gw_vars(const struct rn_host *host, const struct rn_nic *nic, const struct rn_ip *gw,
		      struct rn_vars *v)
{
	char ip[INET6_ADDRSTRLEN], g[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN + 8];
	uint32_t t, prio;

	rn_ip_str(&nic->ip, ip, sizeof(ip));
	subnet_str(nic, net, sizeof(net));
	if (nic->table != RN_TABLE_MAIN) {
		t = (uint32_t)nic->table;
		prio = 0;
	} else {
		rn_propose_table(host, nic->ifindex, &t, &prio);
	}
	if (!gw) {
		rn_vars_set(v, "gw",
			    "its gateway (not known here: NCCL_ROCE_GATEWAYS or "
			    "roce-doctor --gateway names it)");
		rn_vars_set(v, "gw_fix", "%s", "");
		rn_vars_set(v, "gw_hint", "%s", "");
		/* the gateway is the fabric's to say: what to do with it, as text */
		rn_vars_set(
			v, "gw_todo",
			"find %s's gateway (the router's address in %s), then "
			"add %s's default route via it in table %u: %s route replace default via "
			"<gateway> dev %s table %u",
			nic->netdev, net, nic->netdev, t, ipf(nic), nic->netdev, t);
		if (prio)
			rn_vars_append(v, "gw_todo", "",
				       "; %s route replace %s dev %s src %s table %u; "
				       "%s rule add from %s lookup %u priority %u",
				       ipf(nic), net, nic->netdev, ip, t, ipf(nic), ip, t, prio);
		rn_vars_append(v, "gw_todo", "",
			       " (or roce-policy-routing --gateway=%s=<gateway> "
			       "%s, or roce-doctor --gateway %s=<gateway> to print the commands)",
			       nic->netdev, nic->netdev, nic->netdev);
		return;
	}
	rn_vars_set(v, "gw_todo", "%s", "");
	rn_ip_str(gw, g, sizeof(g));
	rn_vars_set(v, "gw", "%s", g);
	rn_vars_set(v, "gw_hint", "%s", "");
	if (prio)
		rn_vars_set(v, "gw_fix",
			    "%s route replace %s dev %s src %s table %u; "
			    "%s route replace default via %s dev %s table %u; "
			    "%s rule add from %s lookup %u priority %u",
			    ipf(nic), net, nic->netdev, ip, t, ipf(nic), g, nic->netdev, t,
			    ipf(nic), ip, t, prio);
	else
		rn_vars_set(v, "gw_fix", "%s route replace default via %s dev %s table %u",
			    ipf(nic), g, nic->netdev, t);
}

/* "gw_fix": a default route via our gateway in a table of our own (+ the rule when none). */
static void gw_vars(const struct rn_host *host, const struct rn_nic *nic,
		    const struct rn_config *cfg, struct rn_vars *v)
{
	struct rn_ip gw;

	rn_route_gw_vars(host, nic, nic_gateway(host, nic, cfg, &gw) ? NULL : &gw, v);
}

/* The table's default or gateway routes must name our NIC (not only reach the gateway). */
static int check_table_devs(struct rn_host *host, struct rn_nic *nic, const struct rn_config *cfg,
			    struct rn_vars *v)
{
	char b[INET6_ADDRSTRLEN], g[INET6_ADDRSTRLEN];
	int i;

	if (nic->table == RN_TABLE_MAIN || nic->table == RN_TABLE_LOCAL)
		return 0;
	for (i = 0; i < host->nroutes; i++) {
		const struct rn_nl_route *r = &host->routes[i];

		if (r->table != (uint32_t)nic->table || r->type != RTN_UNICAST ||
		    r->dst.family != nic->ip.family || !r->gw.family || r->nhops > 1 || !r->oif ||
		    r->oif == nic->ifindex)
			continue;
		rn_vars_set(v, "other_dev", "%s", link_name(host, r->oif));
		if (r->dst_len)
			rn_vars_set(v, "routed", "%s/%d via %s", rn_ip_str(&r->dst, b, sizeof(b)),
				    r->dst_len, rn_ip_str(&r->gw, g, sizeof(g)));
		else
			rn_vars_set(v, "routed", "the default route (via %s)",
				    rn_ip_str(&r->gw, g, sizeof(g)));
		gw_vars(host, nic, cfg, v);
		/*
		 * Through our NIC's own gateway; when no route names one, through this route's
		 * gateway where it is on our subnet (a copy of the other NIC's line, "default
		 * via GW dev nic0" in nic1's table, with the device left unchanged). The same
		 * metric, or 'replace' would add a second route and leave this one in place.
		 */
		if (rn_vars_get(v, "gw_fix")[0])
			snprintf(g, sizeof(g), "%s", rn_vars_get(v, "gw"));
		else if (rn_ip_in_prefix(&r->gw, &nic->ip, nic->prefixlen))
			rn_ip_str(&r->gw, g, sizeof(g));
		else
			g[0] = '\0';
		if (!g[0])
			rn_vars_set(v, "rule_fix", "%s", "");
		else if (r->dst_len)
			rn_vars_set(v, "rule_fix", "%s route replace %s/%d via %s dev %s table %d",
				    ipf(nic), b, r->dst_len, g, nic->netdev, nic->table);
		else
			rn_vars_set(v, "rule_fix",
				    "%s route replace default via %s dev %s table %d", ipf(nic), g,
				    nic->netdev, nic->table);
		if (g[0] && r->metric)
			rn_vars_append(v, "rule_fix", "", " metric %u", r->metric);
		rn_nic_add_finding(nic, RN_CAUSE_RULE_WRONG_NIC, v);
		return 1;
	}
	return 0;
}

/*
 * The kernel's answer @r (or @err) for @dst from our IP, as TCP (the handshake) and ARP
 * requests see it (no oif): does it leave our NIC, and if not, why. 1 when a finding was
 * made.
 */
static int judge_egress(struct rn_host *host, struct rn_nic *nic, const struct rn_ip *dst, int err,
			const struct rn_nl_route *r, struct rn_vars *v, int *wrong_dev)
{
	char buf[INET6_ADDRSTRLEN];
	int egress_ok;

	rn_vars_set(v, "dst", "%s", rn_ip_str(dst, buf, sizeof(buf)));
	if (err < 0) {
		rn_vars_set(v, "err", "%s", strerror(-err));
		rn_route_fix_vars(host, nic, v);
		rn_nic_add_finding(nic, RN_CAUSE_NO_ROUTE, v);
		return 1;
	}
	egress_ok = r->type == RTN_LOCAL || r->oif == nic->ifindex;
	rn_vars_set(v, "other_dev", "%s", egress_ok ? nic->netdev : link_name(host, r->oif));
	rn_vars_set(v, "used_table", "%u", r->table);
	if (!egress_ok)
		*wrong_dev = r->oif;
	if (nic->table == RN_TABLE_MAIN) {
		if (egress_ok)
			return 0;
		rn_route_fix_vars(host, nic, v);
		rn_nic_add_finding(nic, RN_CAUSE_ROUTE_WRONG_NIC, v);
		return 1;
	}
	if (r->table == (uint32_t)nic->table) {
		if (egress_ok)
			return 0;
		rule_fix(host, nic, v);
		rn_vars_set(v, "routed", "%s", rn_vars_get(v, "subnet"));
		rn_nic_add_finding(nic, RN_CAUSE_RULE_WRONG_NIC, v);
		return 1;
	}
	/* Our rule exists, yet another table decided. */
	if (table_has(host, (uint32_t)nic->table, dst, nic->ifindex)) {
		if (shadow_vars(host, nic, r->table, v)) {
			add_lowered(nic, RN_CAUSE_RULE_SHADOWED, v, egress_ok);
			return 1;
		}
		return 0;
	}
	rn_route_fix_vars(host, nic, v);
	if (shadow_vars(host, nic, r->table, v) && rn_vars_get(v, "move_fix")[0])
		rn_vars_append(v, "route_fix", "; ", "%s", rn_vars_get(v, "move_fix"));
	add_lowered(nic, RN_CAUSE_TABLE_NO_ROUTE, v, egress_ok);
	return 1;
}

/* "mgmt0 (the management NIC: main's default route)" for a link that holds main's default. */
static void other_dev_var(struct rn_host *host, const struct rn_nic *nic, int oif,
			  struct rn_vars *v)
{
	if (oif && oif == rn_host_mgmt_ifindex(host, nic->ip.family))
		rn_vars_set(v, "other_dev", "%s (the management NIC: main's default route)",
			    link_name(host, oif));
	else
		rn_vars_set(v, "other_dev", "%s", link_name(host, oif));
}

/*
 * A routed destination @dst: a RoCE QP's lookup pins oif to the GID's netdev; with no
 * route out of it the kernel assumes the peer is on-link and ARP for it never resolves.
 * TCP from our IP (no oif) must leave our NIC too, unless it is a multipath route that
 * includes it (ECMP over the NICs: each QP's lookup takes its own NIC's next hop).
 * 1 when a finding was made.
 */
static int judge_routed(struct rn_host *host, struct rn_nic *nic, const struct rn_config *cfg,
			const struct rn_ip *dst, struct rn_vars *v, int *wrong_dev)
{
	struct rn_nl_route q, w;
	char buf[INET6_ADDRSTRLEN];
	int ret, i, wret;

	rn_vars_set(v, "dst", "%s", rn_ip_str(dst, buf, sizeof(buf)));
	ret = rn_host_route_get(host, dst, &nic->ip, nic->ifindex, &q);
	if (ret < 0) {
		rn_vars_set(v, "err", "%s", strerror(-ret));
		gw_vars(host, nic, cfg, v);
		rn_vars_set(v, "route_fix", "%s", rn_vars_get(v, "gw_fix"));
		alt_vars(nic, v, 0);
		rn_nic_add_finding(nic, RN_CAUSE_NO_ROUTE, v);
		return 1;
	}
	if (q.oif && q.oif != nic->ifindex) {
		/*
		 * IPv6 treats oif as a preference (no bound socket: not RT6_LOOKUP_F_IFACE), so
		 * the QP's next hop can be another NIC's gateway, whose MAC is then sent out of
		 * ours. IPv4 pins oif and never gets here.
		 */
		*wrong_dev = q.oif;
		other_dev_var(host, nic, q.oif, v);
		rn_vars_set(v, "used_table", "%u", q.table);
		gw_vars(host, nic, cfg, v);
		rn_vars_set(v, "route_fix", "%s", rn_vars_get(v, "gw_fix"));
		alt_vars(nic, v, 0);
		rn_nic_add_finding(nic, RN_CAUSE_ROUTE_WRONG_NIC, v);
		return 1;
	}
	/* TCP's and ARP's lookup (no oif), to name where it goes instead */
	wret = nic->ip.family == AF_INET ? rn_host_route_get(host, dst, &nic->ip, 0, &w) : -ENOENT;
	if (q.type == RTN_UNICAST && !q.gw.family) {
		gw_vars(host, nic, cfg, v);
		if (!wret && w.oif && w.oif != nic->ifindex) {
			/* the replies' reverse route is that one too: rp_filter judges it */
			*wrong_dev = w.oif;
			other_dev_var(host, nic, w.oif, v);
			rn_vars_append(v, "gw_hint", "",
				       "; without oif the route from %s leaves "
				       "through %s",
				       rn_vars_get(v, "ip"), rn_vars_get(v, "other_dev"));
		}
		rn_nic_add_finding(nic, RN_CAUSE_NO_GATEWAY, v);
		return 1;
	}
	if (wret || w.oif == nic->ifindex)
		return 0; /* IPv6 sends ND from the egress link's own address: no asymmetry harm */
	for (i = 0; i < host->nroutes; i++) {
		const struct rn_nl_route *r = &host->routes[i];

		if (r->table == w.table && r->table == q.table && r->nhops > 1 &&
		    r->dst.family == dst->family && rn_ip_in_prefix(dst, &r->dst, r->dst_len))
			return 0; /* ECMP including our NIC */
	}
	*wrong_dev = w.oif;
	other_dev_var(host, nic, w.oif, v);
	rn_vars_set(v, "used_table", "%u", w.table);
	if (nic->table != RN_TABLE_MAIN && w.table != (uint32_t)nic->table &&
	    shadow_vars(host, nic, w.table, v)) {
		rn_nic_add_finding(nic, RN_CAUSE_RULE_SHADOWED, v);
		return 1;
	}
	gw_vars(host, nic, cfg, v);
	rn_vars_set(v, "route_fix", "%s", rn_vars_get(v, "gw_fix"));
	alt_vars(nic, v, 0);
	rn_nic_add_finding(nic, RN_CAUSE_ROUTE_WRONG_NIC, v);
	return 1;
}

/* The first address of @net/@len that is a host's (network + 1; the address of a /32). */
static void first_host(const struct rn_ip *net, int len, struct rn_ip *out)
{
	rn_ip_mask(net, len, out);
	if (out->family == AF_INET && len < 31)
		out->v4.s_addr = htonl(ntohl(out->v4.s_addr) + 1);
	else if (out->family == AF_INET6 && len < 127)
		out->v6.s6_addr[15] |= 1;
}

/*
 * Peers behind a router: those of NCCL_ROCE_PEER_SUBNETS (roce-doctor --peer-subnet),
 * else, on an L3 NIC (a /31 or /30 to the ToR, a gateway route out of it) or one whose
 * gateway is configured, a neighbouring block. First the route to the gateway itself
 * (from our IP it must leave our NIC), then to each routed destination.
 */
static void check_routed(struct rn_host *host, struct rn_nic *nic, const struct rn_config *cfg,
			 struct rn_vars *v, int *wrong_dev)
{
	struct rn_ip dst, net, gw;
	int i, len, ret, n = 0, have_gw;

	have_gw = !rn_cfg_gateway(cfg->gateways, nic->netdev, nic->ip.family, &gw);
	if (have_gw && rn_ip_in_prefix(&gw, &nic->ip, nic->prefixlen) &&
	    nic->ip.family == AF_INET && !rn_ip_equal(&gw, &nic->ip)) {
		struct rn_nl_route r;

		ret = rn_host_route_get(host, &gw, &nic->ip, 0, &r);
		if (judge_egress(host, nic, &gw, ret, &r, v, wrong_dev))
			return;
	}
	for (i = 0; (ret = rn_cfg_cidr_at(cfg->peer_subnets, i, &net, &len)) != -ENOENT; i++) {
		if (ret || net.family != nic->ip.family)
			continue;
		first_host(&net, len, &dst);
		/* a peer in our own subnet is judged by the subnet's check */
		if (rn_ip_in_prefix(&dst, &nic->ip, nic->prefixlen) ||
		    rn_host_addr_find(host, 0, &dst))
			continue;
		n++;
		if (judge_routed(host, nic, cfg, &dst, v, wrong_dev))
			return;
	}
	if (n || offsubnet_dst(host, nic, &dst))
		return;
	if (!have_gw && !nic_is_l3(host, nic)) {
		struct rn_nl_route w;

		/* flat or routed, the host cannot tell: not judged, and said so */
		nic->offnet_unjudged = 1;
		if (!rn_host_route_get(host, &dst, &nic->ip, 0, &w))
			nic->offnet_oif = w.oif;
		return;
	}
	judge_routed(host, nic, cfg, &dst, v, wrong_dev);
}

void rn_neigh_static_vars(const char *dev, const char *ip, uint16_t state, const char *who,
			  struct rn_vars *v)
{
	char b[INET6_ADDRSTRLEN];

	/* @ip may be @v's own value, replaced below */
	snprintf(b, sizeof(b), "%s", ip);
	ip = b;
	rn_vars_set(v, "who", "%s", who);
	rn_vars_set(v, "peer_ip", "%s", ip);
	rn_vars_set(v, "wrong", "MAC");
	rn_vars_set(v, "why",
		    "a %s neighbour entry (ip neigh replace ... nud %s, a static-ARP "
		    "workaround's leftover that 'ip neigh flush' keeps) holds a MAC that does not "
		    "answer for %s, so every frame from %s to it is lost",
		    state & NUD_NOARP ? "NOARP" : "PERMANENT",
		    state & NUD_NOARP ? "noarp" : "permanent", ip, dev);
	rn_vars_set(v, "neigh_fix", "ip neigh del %s dev %s", ip, dev);
	/* nothing on the peer caused it: no first part there */
	rn_vars_set(v, "peer_fix", "%s", "");
	rn_vars_set(v, "peer_host", "%s", "");
}

#define MAX_STATIC 16
/* How long the probe of static entries waits for answers (less when all came). */
#define STATIC_WAIT_MS 50

/*
 * PERMANENT and NOARP neighbour entries on our NIC for hosts of our subnet and for our
 * gateway: the kernel never checks them (a static-ARP workaround's leftover, which 'ip
 * neigh flush' keeps), so an ARP probe asks who answers for each (root: CAP_NET_RAW;
 * without it nothing can be told and nothing is said). One that answers with another MAC
 * than the entry's is neigh-wrong-mac, fixed by deleting the entry.
 */
static void check_static_neigh(struct rn_host *host, struct rn_nic *nic,
			       const struct rn_config *cfg, struct rn_vars *v)
{
	const struct rn_nl_neigh *nb, *which[MAX_STATIC];
	struct rn_arp_query q[MAX_STATIC];
	char ip[INET6_ADDRSTRLEN], b[32];
	struct rn_ip gw;
	int i, n = 0, nn, has_gw;

	if (nic->ip.family != AF_INET || !rn_nl.arp_probe)
		return;
	nn = rn_host_neighs(host, &nb);
	if (nn <= 0)
		return;
	has_gw = !nic_gateway(host, nic, cfg, &gw);
	for (i = 0; i < nn && n < MAX_STATIC; i++) {
		const struct rn_nl_neigh *e = &nb[i];

		if (e->ifindex != nic->ifindex || !e->has_mac || e->ip.family != AF_INET ||
		    !(e->state & (NUD_PERMANENT | NUD_NOARP)) ||
		    (!rn_ip_in_prefix(&e->ip, &nic->ip, nic->prefixlen) &&
		     !(has_gw && rn_ip_equal(&e->ip, &gw))))
			continue;
		memset(&q[n], 0, sizeof(q[n]));
		q[n].ifindex = nic->ifindex;
		memcpy(q[n].mac, nic->mac, 6);
		q[n].target = e->ip.v4;
		which[n++] = e;
	}
	if (!n || rn_nl.arp_probe(q, n, STATIC_WAIT_MS))
		return;
	for (i = 0; i < n; i++) {
		if (!q[i].answered || !memcmp(q[i].answer, which[i]->mac, 6))
			continue;
		rn_vars_set(v, "got_mac", "%s", rn_mac_str(which[i]->mac, b, sizeof(b)));
		rn_vars_set(v, "peer_mac", "%s", rn_mac_str(q[i].answer, b, sizeof(b)));
		rn_neigh_static_vars(nic->netdev, rn_ip_str(&which[i]->ip, ip, sizeof(ip)),
				     which[i]->state,
				     has_gw && rn_ip_equal(&which[i]->ip, &gw) ? "gateway" : "peer",
				     v);
		rn_nic_add_finding(nic, RN_CAUSE_NEIGH_WRONG_MAC, v);
	}
}

/* 1 when @nic is the only link with an address in its subnet that no rule routes. */
static int only_unruled(const struct rn_host *host, const struct rn_nic *nic,
			const struct rn_ip *net)
{
	int i;

	for (i = 0; i < host->naddrs; i++) {
		const struct rn_nl_addr *a = &host->addrs[i];
		const struct rn_nl_rule *r;

		if (a->ifindex == nic->ifindex || a->ip.family != nic->ip.family ||
		    !rn_addr_usable(a) || !rn_ip_in_prefix(&a->ip, net, nic->prefixlen))
			continue;
		r = rn_rule_for_src(host, &a->ip);
		if (!r || r->table == RN_TABLE_MAIN || r->table == RN_TABLE_LOCAL)
			return 0;
	}
	return 1;
}

/*
 * A plain 'from A lookup T' host rule whose A no interface has any more (the NIC was
 * renumbered from A), T being this NIC's: T's route for our address leaves through us;
 * or T is empty (the kernel deletes the routes whose src was A) while our address has no
 * rule and A was in our subnet, and T bears our number (100 + ifindex, as our tools
 * number it) or no other link in the subnet lacks a rule of its own. One finding per
 * such rule, each with the command that deletes exactly it.
 */
static void check_stale_rules(const struct rn_host *host, struct rn_nic *nic, struct rn_vars *v)
{
	char b[INET6_ADDRSTRLEN];
	struct rn_ip net;
	int i, k;

	rn_ip_mask(&nic->ip, nic->prefixlen, &net);
	for (i = 0; i < host->nrules; i++) {
		const struct rn_nl_rule *r = &host->rules[i];
		int full = r->family == AF_INET6 ? 128 : 32, empty = 1;

		if (r->family != nic->ip.family || r->action != FR_ACT_TO_TBL ||
		    r->src_len != full || r->dst_len || r->iif[0] || r->oif[0] || r->fwmark ||
		    r->invert || r->table == RN_TABLE_MAIN || r->table == RN_TABLE_LOCAL ||
		    rn_host_addr_find(host, 0, &r->src))
			continue;
		for (k = 0; k < host->nroutes && empty; k++)
			empty = host->routes[k].table != r->table;
		if (!table_has(host, r->table, &nic->ip, nic->ifindex) &&
		    !(empty && nic->table == RN_TABLE_MAIN &&
		      rn_ip_in_prefix(&r->src, &net, nic->prefixlen) &&
		      (r->table == 100 + (uint32_t)nic->ifindex || only_unruled(host, nic, &net))))
			continue;
		rn_vars_set(v, "stale_ip", "%s", rn_ip_str(&r->src, b, sizeof(b)));
		rn_vars_set(v, "stale_table", "%u", r->table);
		rn_vars_set(v, "stale_prio", "%u", r->priority);
		rn_nic_add_finding(nic, RN_CAUSE_STALE_RULE, v);
	}
}

/*
 * A 'from <ip>' rule that also matches on a mark, an input or output interface, or a
 * selector the snapshot does not model (uidrange, ipproto, ports...) selects nothing for
 * RoCE's traffic, which is unmarked, locally made and of no user: said in no-rule's
 * message (var "qualified", "" when there is none), which otherwise reads as if the user
 * had no rule at all.
 */
static void qualified_rules(const struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v)
{
	int i, full = nic->ip.family == AF_INET6 ? 128 : 32, n = 0;
	char b[160];

	rn_vars_set(v, "qualified", "%s", "");
	for (i = 0; i < host->nrules; i++) {
		const struct rn_nl_rule *r = &host->rules[i];
		size_t o;

		if (r->family != nic->ip.family || r->src_len != full ||
		    !rn_ip_equal(&r->src, &nic->ip) || r->invert ||
		    (!r->fwmark && (!r->iif[0] || !strcmp(r->iif, "lo")) && !r->oif[0] &&
		     !r->opaque))
			continue;
		rule_str(r, b, sizeof(b));
		o = strlen(b);
		if (r->iif[0] && o < sizeof(b))
			o += (size_t)snprintf(b + o, sizeof(b) - o, " iif %s", r->iif);
		if (r->oif[0] && o < sizeof(b))
			o += (size_t)snprintf(b + o, sizeof(b) - o, " oif %s", r->oif);
		if (r->more[0] && o < sizeof(b))
			o += (size_t)snprintf(b + o, sizeof(b) - o, " %s", r->more);
		else if (r->opaque && !r->fwmark &&
			 o < sizeof(b)) /* a fwmark's mask is opaque too */
			snprintf(b + o, sizeof(b) - o, " and more selectors");
		rn_vars_append(v, "qualified", "", "%s'%s' (pref %u)", n++ ? ", " : "; ", b,
			       r->priority);
	}
	if (n)
		rn_vars_append(
			v, "qualified", "",
			" match%s only marked, forwarded or selected "
			"traffic (fwmark, iif/oif, uidrange, ipproto, ports), and RoCE's is none "
			"of those",
			n == 1 ? "es" : "");
}

static int has_route_fix(const struct rn_nic *nic)
{
	int i;

	for (i = 0; i < nic->nfindings; i++)
		if (nic->findings[i].cause == RN_CAUSE_ROUTE_WRONG_NIC ||
		    nic->findings[i].cause == RN_CAUSE_NO_ROUTE)
			return 1;
	return 0;
}

/* A link that is down or without carrier says it all (1); an MTU the netdev cannot carry warns. */
static int check_link(struct rn_nic *nic, const struct rn_host_link *self, struct rn_vars *v)
{
	if (!nic->link_up || (self && !self->link.oper_up)) {
		/* admin-up without carrier: the cable or the switch, not a command here */
		rn_vars_set(v, "since", "%s", "");
		rn_nic_add_finding(nic,
				   self && (self->link.flags & IFF_UP) ? RN_CAUSE_NO_CARRIER :
									 RN_CAUSE_LINK_DOWN,
				   v);
		return 1;
	}
	if (nic->active_mtu && rn_ibv_mtu_bytes(nic->active_mtu) > rn_roce_mtu_of(nic->mtu)) {
		rn_vars_set(
			v, "what",
			"port active_mtu %d exceeds what netdev MTU %d carries (%d): large messages are dropped",
			rn_ibv_mtu_bytes(nic->active_mtu), nic->mtu, rn_roce_mtu_of(nic->mtu));
		rn_vars_set(v, "mtu_fix", "ip link set dev %s mtu %d", nic->netdev,
			    rn_ibv_mtu_bytes(nic->active_mtu) + 96);
		rn_vars_set(v, "fix_host", "%s", "");
		rn_nic_add_finding(nic, RN_CAUSE_MTU_MISMATCH, v);
	}
	return 0;
}

/* The NICs that share the subnet, as the fix names them ("devs") and the message ("others"). */
static void share_vars(struct rn_host *host, const struct rn_nic *nic, const struct share *s,
		       struct rn_vars *v)
{
	int i, mgmt = rn_host_mgmt_ifindex(host, nic->ip.family);

	/* the script's default family is 4 */
	rn_vars_set(v, "devs", "%s", nic->ip.family == AF_INET6 ? "--family 6" : "");
	for (i = 0; i < s->n; i++) {
		/*
		 * The script never configures the management NIC unless told to: leave it
		 * out of the command (the 'all' ARP sysctls still cover it), or name
		 * --force when it is the NIC being judged.
		 */
		if (!i && s->l[i]->link.ifindex == mgmt)
			rn_vars_append(v, "devs", " ", "--force %s", s->l[i]->link.name);
		else if (s->l[i]->link.ifindex != mgmt)
			rn_vars_append(v, "devs", " ", "%s", s->l[i]->link.name);
	}
	if (!rn_vars_get(v, "devs")[0])
		rn_vars_set(v, "devs", "%s", nic->netdev);
	rn_vars_set(v, "others", "%s", "");
	/* "7 other NICs: a, b, ...": a long list says how long it is, and stays whole */
	if (s->n > 2)
		rn_vars_set(v, "others", "%d other NICs: ", s->n - 1);
	for (i = 1; i < s->n; i++)
		rn_vars_append(v, "others", i > 1 ? ", " : "", "%s", s->l[i]->link.name);
}

/* The NIC's table and rule priority, or the ones the fix would give it. */
static void table_vars(struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v)
{
	uint32_t table, prio;

	if (nic->table != RN_TABLE_MAIN) {
		const struct rn_nl_rule *rule = rn_rule_for_src(host, &nic->ip);

		table = (uint32_t)nic->table;
		prio = rule ? rule->priority : table;
	} else {
		rn_propose_table(host, nic->ifindex, &table, &prio);
	}
	rn_vars_set(v, "table", "%u", table);
	rn_vars_set(v, "prio", "%u", prio);
}

/* route-wrong-nic: the route @r found leaves by another NIC (its table named) than @nic's. */
static void wrong_nic(struct rn_host *host, struct rn_nic *nic, const struct rn_nl_route *r,
		      struct rn_vars *v)
{
	rn_vars_set(v, "other_dev", "%s", link_name(host, r->oif));
	rn_vars_set(v, "used_table", "%u", r->table);
	rn_route_fix_vars(host, nic, v);
	rn_nic_add_finding(nic, RN_CAUSE_ROUTE_WRONG_NIC, v);
}

/*
 * IPv6: the route to a would-be peer judged as the QP's lookup sees it (oif = the GID's
 * netdev; @nic->route). 1: found.
 */
static int judge_egress6(struct rn_host *host, struct rn_nic *nic, struct rn_vars *v)
{
	const struct rn_nl_route *r = &nic->route.route;
	char buf[INET6_ADDRSTRLEN];

	rn_vars_set(v, "dst", "%s", rn_ip_str(&nic->route.dst, buf, sizeof(buf)));
	if (nic->route.err < 0) {
		rn_vars_set(v, "err", "%s", strerror(-nic->route.err));
		rn_route_fix_vars(host, nic, v);
		rn_nic_add_finding(nic, RN_CAUSE_NO_ROUTE, v);
		return 1;
	}
	if (r->type != RTN_LOCAL && r->oif != nic->ifindex) {
		/* oif is only a preference for IPv6: a more specific route wins */
		wrong_nic(host, nic, r, v);
		return 1;
	}
	return 0;
}

/* Main's gateways on our NIC must be reached through it (IPv4). 1: found, the NIC in @wrong_dev. */
static int check_main_gateways(struct rn_host *host, struct rn_nic *nic, struct rn_vars *v,
			       int *wrong_dev)
{
	char buf[INET6_ADDRSTRLEN];
	struct rn_nl_route r;
	int i;

	for (i = 0; i < host->nroutes; i++) {
		const struct rn_nl_route *g = &host->routes[i];

		if (g->table != RN_TABLE_MAIN || nic->table != RN_TABLE_MAIN || !g->gw.family ||
		    g->gw.family != nic->ip.family || g->type != RTN_UNICAST ||
		    g->oif != nic->ifindex)
			continue;
		if (rn_host_route_get(host, &g->gw, &nic->ip, 0, &r) < 0 || r.oif == nic->ifindex)
			continue;
		*wrong_dev = r.oif;
		rn_vars_set(v, "dst", "gateway %s", rn_ip_str(&g->gw, buf, sizeof(buf)));
		wrong_nic(host, nic, &r, v);
		return 1;
	}
	return 0;
}

/* IPv4's segment: ARP, proxy ARP, MTU across the host's NICs, a subnet shared without rules. */
static void check_segment(struct rn_host *host, struct rn_nic *nic, struct rn_host_link *self,
			  struct share *s, struct rn_vars *v)
{
	find_l2_sharing(host, nic, s);
	check_arp(host, nic, s, v);
	check_proxy_arp(host, nic, self, v);
	check_host_mtu(host, nic, s, v);
	/* Said once: route-wrong-nic and no-route already carry the same fix. */
	if (s->nsubnet > 1 && nic->table == RN_TABLE_MAIN && !has_route_fix(nic)) {
		rn_route_fix_vars(host, nic, v);
		qualified_rules(host, nic, v);
		rn_nic_add_finding(nic, RN_CAUSE_NO_RULE, v);
	}
}

/* Strict rp_filter drops what comes back on the NIC when the route left by @wrong_dev. */
static void check_rp_filter(struct rn_host *host, struct rn_nic *nic, struct rn_host_link *self,
			    int wrong_dev, struct rn_vars *v)
{
	const struct rn_sysctls *e = rn_host_sysctls(host, self);
	char key[IF_NAMESIZE + 40];

	if (e->rp_filter != 1)
		return;
	rn_vars_set(v, "value", "%d", e->rp_filter);
	rn_vars_set(v, "other_dev", "%s", link_name(host, wrong_dev));
	rn_vars_set(v, "rp_keys", "net.ipv4.conf.all.rp_filter=2 %s=2",
		    rn_sysctl_key(key, sizeof(key), nic->netdev, "rp_filter"));
	rn_nic_add_finding(nic, RN_CAUSE_RP_FILTER, v);
}

int rn_route_assess(struct rn_host *host, struct rn_nic *nic, const struct rn_config *cfg)
{
	struct rn_vars v = RN_VARS_INIT;
	struct share s;
	struct rn_host_link *self = rn_host_link_by_index(host, nic->ifindex);
	char ip[INET6_ADDRSTRLEN], net_s[INET6_ADDRSTRLEN + 8];
	int wrong_dev = 0, v4 = nic->ip.family == AF_INET, found;

	rn_vars_set(&v, "nic", "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev, nic->port);
	rn_vars_set(&v, "dev", "%s", nic->netdev);
	rn_vars_set(&v, "ipf", "%s", ipf(nic));
	nic->offnet_unjudged = 0;
	nic->offnet_oif = 0;
	/* asked first, whatever the checks before it find: a tool shows it (the ROUTE column) */
	route_answer(host, nic);
	if (check_link(nic, self, &v) || !nic->ip.family)
		goto out;
	rn_vars_set(&v, "ip", "%s", rn_ip_str(&nic->ip, ip, sizeof(ip)));
	rn_vars_set(&v, "subnet", "%s", subnet_str(nic, net_s, sizeof(net_s)));
	find_sharing(host, nic, &s);
	share_vars(host, nic, &s, &v);
	table_vars(host, nic, &v);
	if (nic_gateway(host, nic, cfg, &nic->gw))
		memset(&nic->gw, 0, sizeof(nic->gw));
	rn_vars_set(&v, "routed", "%s", net_s);

	check_arp_silent(host, nic, self, &v);
	/* The table's own routes must name our NIC (its default route above all). */
	found = check_table_devs(host, nic, cfg, &v);
	/* The kernel's own answer for a peer in our subnet. */
	if (!found && nic->route.dst.family)
		found = v4 ? judge_egress(host, nic, &nic->route.dst, nic->route.err,
					  &nic->route.route, &v, &wrong_dev) :
			     judge_egress6(host, nic, &v);
	if (!found && v4)
		found = check_main_gateways(host, nic, &v, &wrong_dev);
	if (!found)
		check_routed(host, nic, cfg, &v, &wrong_dev);
	if (v4)
		check_segment(host, nic, self, &s, &v);
	if (self && wrong_dev && v4)
		check_rp_filter(host, nic, self, wrong_dev, &v);
	check_stale_rules(host, nic, &v);
	check_static_neigh(host, nic, cfg, &v);
out:
	rn_vars_free(&v);
	return 0;
}
