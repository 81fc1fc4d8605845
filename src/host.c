// SPDX-License-Identifier: MIT
/*
 * Host facts: one snapshot of links, addresses, rules and routes (netlink edge)
 * plus the ARP/reverse-path sysctls (sys edge), and the small IP helpers the
 * path files share.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <net/if.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "rn_clock.h"
#include "rn_host.h"
#include "rn_sys.h"

/* sysctls */

int rn_arp_ignore_protects(int v)
{
	return v == 1 || v == 2;
}

int rn_arp_ignore_quiet(int v)
{
	return v == 1 || v == 2 || v == 8;
}

const char *rn_sysctl_key(char *buf, size_t len, const char *dev, const char *key)
{
	if (strchr(dev, '.'))
		snprintf(buf, len, "net/ipv4/conf/%s/%s", dev, key);
	else
		snprintf(buf, len, "net.ipv4.conf.%s.%s", dev, key);
	return buf;
}

static int maxv(int a, int b)
{
	return RN_MAX(a < 0 ? 0 : a, b < 0 ? 0 : b);
}

static int orv(int a, int b)
{
	return (a > 0) || (b > 0);
}

void rn_sysctls_effective(const struct rn_sysctls *all, const struct rn_sysctls *dev,
			  struct rn_sysctls *eff)
{
	eff->arp_ignore = maxv(all->arp_ignore, dev->arp_ignore);
	eff->arp_announce = maxv(all->arp_announce, dev->arp_announce);
	eff->rp_filter = maxv(all->rp_filter, dev->rp_filter);
	eff->arp_filter = orv(all->arp_filter, dev->arp_filter);
	eff->accept_local = orv(all->accept_local, dev->accept_local);
	eff->proxy_arp = orv(all->proxy_arp, dev->proxy_arp);
	/* IN_DEV_FORWARD reads the device's alone (writing all's sets every device's) */
	eff->forwarding = dev->forwarding < 0 ? maxv(all->forwarding, 0) : dev->forwarding;
}

static int read_one(const char *name, const char *key, int *out)
{
	long v;
	int ret = rn_sys_read_long(&v, "/proc/sys/net/ipv4/conf/%s/%s", name, key);

	*out = ret ? -1 : (int)v;
	return ret;
}

int rn_sysctls_read(const char *name, struct rn_sysctls *out)
{
	int ret = read_one(name, "arp_ignore", &out->arp_ignore);

	read_one(name, "arp_announce", &out->arp_announce);
	read_one(name, "arp_filter", &out->arp_filter);
	read_one(name, "rp_filter", &out->rp_filter);
	read_one(name, "accept_local", &out->accept_local);
	read_one(name, "proxy_arp", &out->proxy_arp);
	read_one(name, "forwarding", &out->forwarding);
	return ret;
}

/* snapshot */

struct rn_host_link *rn_host_link_by_index(struct rn_host *host, int ifindex)
{
	int i;

	for (i = 0; i < host->nlinks; i++)
		if (host->links[i].link.ifindex == ifindex)
			return &host->links[i];
	return NULL;
}

void rn_host_mark_roce(struct rn_host *host, int ifindex, const char *name)
{
	struct rn_host_link *l;
	int i;

	if (!host || !ifindex || !(l = rn_host_link_by_index(host, ifindex)) ||
	    (name && name[0] && strcmp(l->link.name, name)))
		return;
	for (i = 0; i < host->nroce_links; i++)
		if (host->roce_links[i] == ifindex)
			return;
	if (host->nroce_links < RN_HOST_ROCE_MAX)
		host->roce_links[host->nroce_links++] = ifindex;
}

struct rn_host_link *rn_host_link_by_name(struct rn_host *host, const char *name)
{
	int i;

	for (i = 0; i < host->nlinks; i++)
		if (!strcmp(host->links[i].link.name, name))
			return &host->links[i];
	return NULL;
}

const struct rn_sysctls *rn_host_sysctls(struct rn_host *host, struct rn_host_link *l)
{
	if (!host->all_read) {
		rn_sysctls_read("all", &host->all);
		host->all_read = 1;
	}
	if (!l->sysctl_read) {
		if (l->link.has_inet_conf)
			l->dev = l->link.inet_conf;
		else
			rn_sysctls_read(l->link.name, &l->dev);
		rn_sysctls_effective(&host->all, &l->dev, &l->eff);
		l->sysctl_read = 1;
	}
	return &l->eff;
}

const struct rn_nl_addr *rn_host_addr_find(const struct rn_host *host, int ifindex,
					   const struct rn_ip *ip)
{
	int i;

	for (i = 0; i < host->naddrs; i++)
		if ((!ifindex || host->addrs[i].ifindex == ifindex) &&
		    rn_ip_equal(&host->addrs[i].ip, ip))
			return &host->addrs[i];
	return NULL;
}

static void sort_rules(struct rn_nl_rule *r, int n)
{
	int i, j;

	/* Insertion sort: stable, so equal priorities keep the kernel's order. */
	for (i = 1; i < n; i++) {
		struct rn_nl_rule t = r[i];

		for (j = i; j > 0 && r[j - 1].priority > t.priority; j--)
			r[j] = r[j - 1];
		r[j] = t;
	}
}

int rn_host_snapshot(struct rn_host **out)
{
	struct rn_nl_link *links = NULL;
	struct rn_host *h;
	double t0 = rn_now_ms();
	int i, n = 0, ret;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	/*
	 * One dump per kind, both families at once (AF_UNSPEC): the checks of every NIC read
	 * this, and answer their route questions from it too (rn_host_route_get), so init
	 * costs the same few round trips whatever the number of NICs.
	 */
	RN_CHECK_GOTO(rn_nl.link_dump(&links, &n), ret, err);
	h->links = calloc((size_t)n + 1, sizeof(*h->links));
	if (!h->links) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < n; i++)
		h->links[i].link = links[i];
	h->nlinks = n;
	free(links);
	links = NULL;
	RN_CHECK_GOTO(rn_nl.addr_dump(AF_UNSPEC, &h->addrs, &h->naddrs), ret, err);
	RN_CHECK_GOTO(rn_nl.rule_dump(AF_UNSPEC, &h->rules, &h->nrules), ret, err);
	sort_rules(h->rules, h->nrules);
	RN_CHECK_GOTO(rn_nl.route_dump(AF_UNSPEC, &h->routes, &h->nroutes), ret, err);
	h->snapshot_ms = rn_now_ms() - t0;
	*out = h;
	return 0;
err:
	free(links);
	rn_host_free(h);
	return ret;
}

/*
 * Route lookup over the snapshot: the kernel's IPv4 policy routing (fib_rules_lookup,
 * fib_table_lookup, ip_route_output_key_hash_rcu) for the case the checks ask about, a
 * unicast peer from one of our addresses. Whatever it does not model makes it give up
 * (UNSURE) and the caller asks the kernel: IPv6, a rule or route marked opaque, multipath,
 * several default routes (the kernel picks one), an on-link guess, a down oif, ...
 */
#define UNSURE 1

static int v4_special(const struct rn_ip *ip)
{
	uint32_t a = ntohl(ip->v4.s_addr);

	return !a || a == 0xffffffffu || (a >> 28) == 0xe; /* 0, broadcast, multicast */
}

static int rule_match(const struct rn_host *host, const struct rn_nl_rule *r,
		      const struct rn_ip *dst, const struct rn_ip *src, int oif)
{
	int m = 1;

	if (r->src_len && !rn_ip_in_prefix(src, &r->src, r->src_len))
		m = 0;
	else if (r->dst_len && !rn_ip_in_prefix(dst, &r->dst, r->dst_len))
		m = 0;
	else if (r->iif[0] && strcmp(r->iif, "lo")) /* a local flow's iif is the loopback */
		m = 0;
	else if (r->oif[0]) {
		const struct rn_host_link *l = oif ? rn_host_link_by_index((struct rn_host *)host,
									   oif) :
						     NULL;

		m = l && !strcmp(l->link.name, r->oif);
	} else if (r->fwmark) {
		m = 0; /* our lookups carry mark 0; a mask would make the rule opaque */
	}
	return r->invert ? !m : m;
}

/* One table: 0 found (@out), -EAGAIN nothing (next rule), another -errno, or UNSURE. */
static int table_lookup(const struct rn_host *host, uint32_t table, const struct rn_ip *dst,
			int oif, const struct rn_nl_route **out)
{
	int i, len = 33;

	/*
	 * The trie's order: longest prefix first; within a prefix by metric, equal metrics in
	 * the kernel's list order (the dump's); a route whose next hop is not @oif is passed
	 * over, and past every route of a prefix the next shorter prefix is tried.
	 */
	for (;;) {
		const struct rn_nl_route *r = NULL;
		int next = -1, ndefault = 0;
		uint32_t above = 0; /* metrics already tried at this prefix: those below ... */
		int tried = 0;

		for (i = 0; i < host->nroutes; i++) {
			const struct rn_nl_route *c = &host->routes[i];

			if (c->table == table && c->dst.family == AF_INET && c->dst_len < len &&
			    c->dst_len > next && rn_ip_in_prefix(dst, &c->dst, c->dst_len))
				next = c->dst_len;
		}
		if (next < 0)
			return -EAGAIN;
		len = next;
		for (i = 0; i < host->nroutes; i++) {
			const struct rn_nl_route *c = &host->routes[i];

			if (c->table != table || c->dst.family != AF_INET || c->dst_len != len ||
			    !rn_ip_in_prefix(dst, &c->dst, len))
				continue;
			if (c->opaque || c->nhops > 1)
				return UNSURE;
			ndefault += !len && c->type == RTN_UNICAST;
		}
		if (ndefault > 1)
			return UNSURE; /* fib_select_default picks among them */
		/* by metric, then list order: each round takes the lowest metric above the last */
		for (;;) {
			uint32_t m = UINT32_MAX;
			int found = 0;

			for (i = 0; i < host->nroutes; i++) {
				const struct rn_nl_route *c = &host->routes[i];

				if (c->table != table || c->dst.family != AF_INET ||
				    c->dst_len != len || !rn_ip_in_prefix(dst, &c->dst, len) ||
				    (tried && c->metric <= above))
					continue;
				if (!found || c->metric < m)
					m = c->metric;
				found = 1;
			}
			if (!found)
				break;
			for (i = 0; i < host->nroutes; i++) {
				r = &host->routes[i];
				if (r->table != table || r->dst.family != AF_INET ||
				    r->dst_len != len || !rn_ip_in_prefix(dst, &r->dst, len) ||
				    r->metric != m)
					continue;
				switch (r->type) {
				case RTN_BLACKHOLE:
					return -EINVAL;
				case RTN_UNREACHABLE:
					return -EHOSTUNREACH;
				case RTN_PROHIBIT:
					return -EACCES;
				case RTN_THROW:
					return -EAGAIN;
				case RTN_UNICAST:
				case RTN_LOCAL:
					break;
				default:
					return UNSURE;
				}
				if (oif && r->oif != oif)
					continue;
				*out = r;
				return 0;
			}
			above = m;
			tried = 1;
			if (m == UINT32_MAX)
				break;
		}
	}
}

/* Only the kernel's three IPv4 rules (local, main, default) and nothing else. */
static int default_rules(const struct rn_host *host)
{
	static const uint32_t prio[] = { 0, 32766, 32767 }, table[] = { 255, 254, 253 };
	int i, n = 0;

	for (i = 0; i < host->nrules; i++) {
		const struct rn_nl_rule *r = &host->rules[i];

		if (r->family != AF_INET)
			continue;
		if (n >= 3 || r->priority != prio[n] || r->table != table[n] ||
		    r->action != FR_ACT_TO_TBL || r->src_len || r->dst_len || r->iif[0] ||
		    r->oif[0] || r->fwmark || r->invert || r->suppress || r->opaque)
			return 0;
		n++;
	}
	return n == 3;
}

static int snapshot_route(struct rn_host *host, const struct rn_ip *dst, const struct rn_ip *src,
			  int oif, struct rn_nl_route *out)
{
	const struct rn_host_link *lo = NULL;
	int i, ret;

	if (dst->family != AF_INET || !src || src->family != AF_INET || v4_special(dst) ||
	    !rn_host_addr_find(host, 0, src))
		return UNSURE;
	if (oif) {
		const struct rn_host_link *l = rn_host_link_by_index(host, oif);

		if (!l || !(l->link.flags & IFF_UP) || l->link.master)
			return UNSURE;
	}
	for (i = 0; i < host->nrules; i++) {
		const struct rn_nl_rule *r = &host->rules[i];
		const struct rn_nl_route *rt = NULL;

		if (r->family != AF_INET)
			continue;
		if (r->opaque)
			return UNSURE;
		if (!rule_match(host, r, dst, src, oif))
			continue;
		switch (r->action) {
		case FR_ACT_NOP:
			continue;
		case FR_ACT_UNREACHABLE:
			ret = -ENETUNREACH;
			break;
		case FR_ACT_PROHIBIT:
			ret = -EACCES;
			break;
		case FR_ACT_TO_TBL:
			ret = table_lookup(host, r->table, dst, oif, &rt);
			break;
		default:
			ret = -EINVAL;
			break;
		}
		if (ret == UNSURE)
			return UNSURE;
		if (!ret && r->suppress && rt->dst_len <= r->suppress - 1)
			continue;
		if (ret == -EAGAIN)
			continue;
		if (ret < 0)
			/* with an oif the kernel then guesses the peer is on link: not ours to
			 * guess */
			return oif ? UNSURE : ret;
		memset(out, 0, sizeof(*out));
		out->table = r->table;
		out->type = rt->type;
		out->scope = rt->scope;
		out->protocol = rt->protocol;
		out->dst = *dst;
		out->dst_len = 32;
		out->prefsrc = *src;
		out->gw = rt->gw;
		out->oif = rt->oif;
		out->nhops = 1;
		if (rt->type == RTN_LOCAL) {
			/*
			 * Without custom rules the kernel merges local into main and names main;
			 * once a rule was ever added it names local, even after the rule went:
			 * the snapshot cannot tell which (rare: a question about our own IP).
			 */
			if (default_rules(host))
				return UNSURE;
			for (i = 0; i < host->nlinks && !lo; i++)
				if (host->links[i].link.flags & IFF_LOOPBACK)
					lo = &host->links[i];
			if (!lo)
				return UNSURE;
			out->oif = lo->link.ifindex;
			out->gw.family = 0;
		}
		return 0;
	}
	return oif ? UNSURE : -ENETUNREACH;
}

int rn_host_route_get(struct rn_host *host, const struct rn_ip *dst, const struct rn_ip *src,
		      int oif, struct rn_nl_route *out)
{
	int ret = snapshot_route(host, dst, src, oif, out);

	if (ret != UNSURE) {
		host->routes_answered++;
		return ret;
	}
	host->routes_asked++;
	return rn_nl.route_get(dst, src, oif, out);
}

static int l2_candidate(const struct rn_host *host, const struct rn_host_link *l,
			const struct rn_nl_addr **addr)
{
	static const uint8_t zero[6];
	int i;

	/* Enslaved links (bond members, bridge ports) speak through their master. */
	if (!l->link.oper_up || (l->link.flags & IFF_LOOPBACK) || l->link.master ||
	    !memcmp(l->link.mac, zero, 6))
		return 0;
	for (i = 0; i < host->naddrs; i++) {
		const struct rn_nl_addr *a = &host->addrs[i];

		if (a->ifindex == l->link.ifindex && a->ip.family == AF_INET &&
		    a->scope < RT_SCOPE_HOST && !(a->flags & IFA_F_SECONDARY)) {
			*addr = a;
			return 1;
		}
	}
	return 0;
}

static int l2_probe(struct rn_host *host)
{
	int n = host->nlinks, i, k, nq = 0, ret;
	const struct rn_nl_addr **addr;
	struct rn_arp_query *q;
	double t0 = rn_now_ms();

	host->l2 = calloc((size_t)n * (size_t)n + 1, 1);
	addr = calloc((size_t)n + 1, sizeof(*addr));
	q = calloc((size_t)n * (size_t)n + 1, sizeof(*q));
	if (!host->l2 || !addr || !q) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (!l2_candidate(host, &host->links[i], &addr[i]))
			addr[i] = NULL;
	/* From every candidate, who answers for every other candidate's address. */
	for (i = 0; i < n; i++)
		for (k = 0; k < n && addr[i]; k++) {
			if (k == i || !addr[k])
				continue;
			q[nq].ifindex = host->links[i].link.ifindex;
			memcpy(q[nq].mac, host->links[i].link.mac, 6);
			q[nq].target = addr[k]->ip.v4;
			nq++;
		}
	ret = nq ? rn_nl.arp_probe(q, nq, RN_L2_WAIT_MS) : 0;
	for (i = 0; !ret && i < nq; i++) {
		int from = -1, to = -1;

		if (!q[i].answered)
			continue;
		/* Any local link answering proves it hears the asker, whoever's address it was. */
		for (k = 0; k < n; k++) {
			if (host->links[k].link.ifindex == q[i].ifindex)
				from = k;
			if (!memcmp(host->links[k].link.mac, q[i].answer, 6) && addr[k])
				to = k;
		}
		if (from >= 0 && to >= 0 && from != to)
			host->l2[from * n + to] = host->l2[to * n + from] = 1;
	}
out:
	free(addr);
	free(q);
	host->l2_ms = rn_now_ms() - t0;
	return ret;
}

int rn_host_same_l2(struct rn_host *host, int a, int b)
{
	int ia = -1, ib = -1, i;

	if (!host->l2_state) {
		int ret = l2_probe(host);

		host->l2_state = ret ? ret : 1;
	}
	if (host->l2_state < 0)
		return host->l2_state;
	for (i = 0; i < host->nlinks; i++) {
		if (host->links[i].link.ifindex == a)
			ia = i;
		if (host->links[i].link.ifindex == b)
			ib = i;
	}
	if (ia < 0 || ib < 0)
		return 0;
	return host->l2[ia * host->nlinks + ib];
}

int rn_host_neighs(struct rn_host *host, const struct rn_nl_neigh **out)
{
	if (!host->neigh_state) {
		int ret = rn_nl.neigh_dump ?
				  rn_nl.neigh_dump(AF_INET, &host->neighs, &host->nneighs) :
				  -EOPNOTSUPP;

		host->neigh_state = ret ? ret : 1;
	}
	if (host->neigh_state < 0)
		return host->neigh_state;
	*out = host->neighs;
	return host->nneighs;
}

void rn_host_free(struct rn_host *host)
{
	if (!host)
		return;
	free(host->neighs);
	free(host->l2);
	free(host->links);
	free(host->addrs);
	free(host->rules);
	free(host->routes);
	free(host);
}

int rn_addr_usable(const struct rn_nl_addr *a)
{
	/* Link-scoped IPv6 (fe80::) never carries RoCE v2 between subnets. */
	return a->scope < RT_SCOPE_LINK && !(a->flags & IFA_F_TENTATIVE);
}
