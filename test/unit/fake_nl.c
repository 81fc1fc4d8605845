// SPDX-License-Identifier: MIT
/*
 * Fake netlink + sysctl host (see fake_nl.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "fake_nl.h"
#include "rn_sys.h"

static struct fake_nl_host *cur;

static void must_cidr(const char *s, struct rn_ip *ip, int *len)
{
	if (!strcmp(s, "default")) {
		memset(ip, 0, sizeof(*ip));
		ip->family = AF_INET;
		*len = 0;
		return;
	}
	if (rn_cidr_parse(s, ip, len)) {
		fprintf(stderr, "fake_nl: bad cidr %s\n", s);
		abort();
	}
}

void fake_nl_init(struct fake_nl_host *h)
{
	memset(h, 0, sizeof(*h));
	h->arp_ret = -EPERM;
	fake_link(h, 1, "lo", 0, 1);
	h->links[0].flags |= 0x8; /* IFF_LOOPBACK */
	fake_rule(h, 0, NULL, RN_TABLE_LOCAL);
	fake_rule(h, 32766, NULL, RN_TABLE_MAIN);
	fake_rule(h, 32767, NULL, 253);
	fake_rule(h, 0, "::/0", RN_TABLE_LOCAL);
	fake_rule(h, 32766, "::/0", RN_TABLE_MAIN);
}

void fake_link(struct fake_nl_host *h, int ifindex, const char *name, int mac_last, int up)
{
	struct rn_nl_link *l = &h->links[h->nlinks++];

	memset(l, 0, sizeof(*l));
	l->ifindex = ifindex;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->mac[0] = 0x02;
	l->mac[5] = (uint8_t)mac_last;
	l->mtu = 1500;
	l->flags = up ? 0x1 : 0;
	l->oper_up = up;
}

void fake_route(struct fake_nl_host *h, uint32_t table, const char *dst, int ifindex,
		const char *src, const char *gw)
{
	struct rn_nl_route *r = &h->routes[h->nroutes++];

	memset(r, 0, sizeof(*r));
	r->table = table;
	r->type = RTN_UNICAST;
	r->scope = gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
	must_cidr(dst, &r->dst, &r->dst_len);
	rn_ip_mask(&r->dst, r->dst_len, &r->dst);
	r->oif = ifindex;
	if (src)
		rn_ip_parse(src, &r->prefsrc);
	if (gw)
		rn_ip_parse(gw, &r->gw);
}

void fake_addr(struct fake_nl_host *h, int ifindex, const char *cidr, int secondary)
{
	struct rn_nl_addr *a = &h->addrs[h->naddrs++];
	struct rn_nl_route *r;
	char ip[64];
	int i;

	memset(a, 0, sizeof(*a));
	a->ifindex = ifindex;
	must_cidr(cidr, &a->ip, &a->prefixlen);
	a->flags = secondary ? IFA_F_SECONDARY : 0;
	if (a->ip.family == AF_INET6 && a->ip.v6.s6_addr[0] == 0xfe)
		a->scope = RT_SCOPE_LINK;
	rn_ip_str(&a->ip, ip, sizeof(ip));
	/* The kernel's connected route (once per subnet and device) and local route. */
	for (i = 0; i < h->nroutes; i++) {
		r = &h->routes[i];
		if (r->table == RN_TABLE_MAIN && r->oif == ifindex && r->dst_len == a->prefixlen &&
		    rn_ip_in_prefix(&a->ip, &r->dst, r->dst_len))
			break;
	}
	if (i == h->nroutes && !secondary && a->scope != RT_SCOPE_LINK)
		fake_route(h, RN_TABLE_MAIN, cidr, ifindex, ip, NULL);
	r = &h->routes[h->nroutes++];
	memset(r, 0, sizeof(*r));
	r->table = RN_TABLE_LOCAL;
	r->type = RTN_LOCAL;
	r->dst = a->ip;
	r->dst_len = a->ip.family == AF_INET ? 32 : 128;
	r->oif = ifindex;
}

void fake_rule(struct fake_nl_host *h, uint32_t prio, const char *from, uint32_t table)
{
	struct rn_nl_rule *r;
	int at = h->nrules;

	/* Keep the kernel's order: by priority, then insertion. */
	while (at > 0 && h->rules[at - 1].priority > prio)
		at--;
	memmove(&h->rules[at + 1], &h->rules[at], (size_t)(h->nrules - at) * sizeof(*r));
	h->nrules++;
	r = &h->rules[at];

	memset(r, 0, sizeof(*r));
	r->family = AF_INET;
	r->priority = prio;
	r->table = table;
	r->action = FR_ACT_TO_TBL;
	if (from) {
		must_cidr(from, &r->src, &r->src_len);
		r->family = r->src.family;
		if (!r->src_len)
			memset(&r->src, 0, sizeof(r->src));
	}
}

static struct rn_nl_neigh *mk_neigh(struct rn_nl_neigh *n, int ifindex, const char *ip,
				    int mac_last, uint16_t state)
{
	memset(n, 0, sizeof(*n));
	n->ifindex = ifindex;
	rn_ip_parse(ip, &n->ip);
	n->state = state;
	if (mac_last >= 0) {
		n->mac[0] = 0x02;
		n->mac[5] = (uint8_t)mac_last;
		n->has_mac = 1;
	}
	return n;
}

void fake_neigh(struct fake_nl_host *h, int ifindex, const char *ip, int mac_last, uint16_t state)
{
	mk_neigh(&h->neighs[h->nneighs++], ifindex, ip, mac_last, state);
}

void fake_neigh_on_probe(struct fake_nl_host *h, int ifindex, const char *ip, int mac_last)
{
	mk_neigh(&h->on_probe[h->non_probe++], ifindex, ip, mac_last, NUD_REACHABLE);
}

static struct fake_sysctl *sys_entry(struct fake_nl_host *h, const char *name, int create)
{
	int i;

	for (i = 0; i < h->nsys; i++)
		if (!strcmp(h->sys[i].name, name))
			return &h->sys[i];
	if (!create)
		return NULL;
	memset(&h->sys[h->nsys], 0, sizeof(h->sys[0]));
	snprintf(h->sys[h->nsys].name, sizeof(h->sys[0].name), "%s", name);
	return &h->sys[h->nsys++];
}

void fake_arp_peer(struct fake_nl_host *h, const char *ip, int mac_last)
{
	if (h->narp_peers == (int)(sizeof(h->arp_peers) / sizeof(h->arp_peers[0])) ||
	    rn_ip_parse(ip, &h->arp_peers[h->narp_peers].ip))
		abort();
	memset(h->arp_peers[h->narp_peers].mac, 0, 6);
	h->arp_peers[h->narp_peers].mac[0] = 0x02;
	h->arp_peers[h->narp_peers].mac[5] = (uint8_t)mac_last;
	h->narp_peers++;
}

void fake_sysctl(struct fake_nl_host *h, const char *name, const char *key, int value)
{
	struct fake_sysctl *s = sys_entry(h, name, 1);

	if (!strcmp(key, "arp_ignore"))
		s->v.arp_ignore = value;
	else if (!strcmp(key, "arp_announce"))
		s->v.arp_announce = value;
	else if (!strcmp(key, "arp_filter"))
		s->v.arp_filter = value;
	else if (!strcmp(key, "rp_filter"))
		s->v.rp_filter = value;
	else if (!strcmp(key, "accept_local"))
		s->v.accept_local = value;
	else if (!strcmp(key, "proxy_arp"))
		s->v.proxy_arp = value;
	else if (!strcmp(key, "forwarding"))
		s->v.forwarding = value;
	else
		abort();
}

void fake_policy_routing(struct fake_nl_host *h, int first, int n, const char *subnet)
{
	char ip[64];
	int k, i;

	for (k = 0; k < n; k++) {
		int ifindex = first + k;

		for (i = 0; i < h->naddrs; i++)
			if (h->addrs[i].ifindex == ifindex &&
			    !(h->addrs[i].flags & IFA_F_SECONDARY))
				break;
		if (i == h->naddrs)
			abort();
		rn_ip_str(&h->addrs[i].ip, ip, sizeof(ip));
		fake_rule(h, 101 + (uint32_t)k, ip, 101 + (uint32_t)k);
		fake_route(h, 101 + (uint32_t)k, subnet, ifindex, ip, NULL);
	}
	fake_sysctl(h, "all", "arp_ignore", 1);
	fake_sysctl(h, "all", "arp_announce", 2);
}

/* ops */

#define DUP_ARRAY(arr, cnt, fam, famfield, out, n) \
	do { \
		int i_, k_ = 0; \
		*(out) = calloc((size_t)(cnt) + 1, sizeof(**(out))); \
		if (!*(out)) \
			return -ENOMEM; \
		for (i_ = 0; i_ < (cnt); i_++) \
			if (!(fam) || (arr)[i_].famfield == (fam)) \
				(*(out))[k_++] = (arr)[i_]; \
		*(n) = k_; \
	} while (0)

static int f_link_dump(struct rn_nl_link **out, int *n)
{
	cur->dumps++;
	DUP_ARRAY(cur->links, cur->nlinks, 0, ifindex, out, n);
	return 0;
}

static int f_addr_dump(int family, struct rn_nl_addr **out, int *n)
{
	cur->dumps++;
	DUP_ARRAY(cur->addrs, cur->naddrs, family, ip.family, out, n);
	return 0;
}

static int f_rule_dump(int family, struct rn_nl_rule **out, int *n)
{
	cur->dumps++;
	DUP_ARRAY(cur->rules, cur->nrules, family, family, out, n);
	return 0;
}

static int f_route_dump(int family, struct rn_nl_route **out, int *n)
{
	cur->dumps++;
	DUP_ARRAY(cur->routes, cur->nroutes, family, dst.family, out, n);
	return 0;
}

static const struct rn_nl_addr *local_addr(const struct rn_ip *ip)
{
	int i;

	for (i = 0; i < cur->naddrs; i++)
		if (rn_ip_equal(&cur->addrs[i].ip, ip))
			return &cur->addrs[i];
	return NULL;
}

static const char *name_of(int ifindex)
{
	int i;

	for (i = 0; i < cur->nlinks; i++)
		if (cur->links[i].ifindex == ifindex)
			return cur->links[i].name;
	return "";
}

/* Longest prefix match in @table, pinned to @oif when given. */
static const struct rn_nl_route *table_lookup(uint32_t table, const struct rn_ip *dst, int oif)
{
	const struct rn_nl_route *best = NULL;
	int i;

	for (i = 0; i < cur->nroutes; i++) {
		const struct rn_nl_route *r = &cur->routes[i];

		if (r->table != table || r->type != RTN_UNICAST || r->dst.family != dst->family ||
		    !rn_ip_in_prefix(dst, &r->dst, r->dst_len) || (oif && r->oif != oif))
			continue;
		if (!best || r->dst_len > best->dst_len)
			best = r;
	}
	return best;
}

static int f_route_get(const struct rn_ip *dst, const struct rn_ip *src, int oif,
		       struct rn_nl_route *out)
{
	const struct rn_nl_addr *la;
	int i;

	cur->route_gets++;
	memset(out, 0, sizeof(*out));
	if (src && src->family && !local_addr(src))
		return -EINVAL;
	la = local_addr(dst);
	if (la) {
		out->type = RTN_LOCAL;
		out->table = RN_TABLE_LOCAL;
		out->oif = 1;
		out->dst = *dst;
		return 0;
	}
	for (i = 0; i < cur->nrules; i++) {
		const struct rn_nl_rule *r = &cur->rules[i];
		const struct rn_nl_route *rt;

		if (r->family != dst->family || r->action != FR_ACT_TO_TBL ||
		    r->table == RN_TABLE_LOCAL)
			continue;
		if (r->src_len &&
		    !(src && src->family && rn_ip_in_prefix(src, &r->src, r->src_len)))
			continue;
		if (r->oif[0] && (!oif || strcmp(r->oif, name_of(oif))))
			continue;
		rt = table_lookup(r->table, dst, oif);
		if (!rt)
			continue;
		*out = *rt;
		out->dst = *dst;
		out->dst_len = dst->family == AF_INET ? 32 : 128;
		out->table = r->table;
		return 0;
	}
	if (oif) {
		/* The kernel assumes the destination is on link (roce-routing.md 1.4). */
		out->type = RTN_UNICAST;
		out->oif = oif;
		out->table = RN_TABLE_MAIN;
		out->dst = *dst;
		return 0;
	}
	return -ENETUNREACH;
}

static int f_neigh_dump(int family, struct rn_nl_neigh **out, int *n)
{
	/* not in cur->dumps: asked on first use, as the L2 probe, not by the snapshot */
	DUP_ARRAY(cur->neighs, cur->nneighs, family, ip.family, out, n);
	return 0;
}

static int f_neigh_get(int ifindex, const struct rn_ip *ip, struct rn_nl_neigh *out)
{
	int i;

	for (i = 0; i < cur->nneighs; i++)
		if (cur->neighs[i].ifindex == ifindex && rn_ip_equal(&cur->neighs[i].ip, ip)) {
			*out = cur->neighs[i];
			return 0;
		}
	return -ENOENT;
}

static int f_neigh_probe(int ifindex, const struct rn_ip *src, const struct rn_ip *dst)
{
	int i;

	cur->probes++;
	for (i = 0; i < cur->non_probe; i++)
		if (cur->on_probe[i].ifindex == ifindex && rn_ip_equal(&cur->on_probe[i].ip, dst))
			cur->neighs[cur->nneighs++] = cur->on_probe[i];
	return 0;
}

static int f_link_get(int ifindex, struct rn_nl_link *out)
{
	int i;

	for (i = 0; i < cur->nlinks; i++)
		if (cur->links[i].ifindex == ifindex) {
			*out = cur->links[i];
			return 0;
		}
	return -ENODEV;
}

static int f_arp_probe(struct rn_arp_query *q, int n, int wait_ms)
{
	int i, k, a;

	cur->arp_probes++;
	if (cur->arp_ret)
		return cur->arp_ret;
	for (i = 0; i < n; i++) {
		q[i].answered = 0;
		for (a = 0; a < cur->naddrs; a++) {
			const struct rn_nl_addr *ad = &cur->addrs[a];

			if (ad->ip.family != AF_INET || memcmp(&ad->ip.v4, &q[i].target, 4) ||
			    ad->ifindex >= FAKE_NL_MAX || q[i].ifindex >= FAKE_NL_MAX ||
			    !cur->l2[q[i].ifindex][ad->ifindex])
				continue;
			for (k = 0; k < cur->nlinks; k++)
				if (cur->links[k].ifindex == ad->ifindex)
					memcpy(q[i].answer, cur->links[k].mac, 6);
			q[i].answered = 1;
		}
		for (a = 0; a < cur->narp_peers && !q[i].answered; a++)
			if (!memcmp(&cur->arp_peers[a].ip.v4, &q[i].target, 4)) {
				memcpy(q[i].answer, cur->arp_peers[a].mac, 6);
				q[i].answered = 1;
			}
	}
	return 0;
}

static int f_dcb_get(const char *ifname, struct rn_nl_dcb *out)
{
	int i;

	for (i = 0; i < cur->ndcb; i++)
		if (!strcmp(cur->dcb[i].name, ifname)) {
			*out = cur->dcb[i].dcb;
			return 0;
		}
	return -EOPNOTSUPP; /* as the kernel for a netdev without dcbnl_ops */
}

static const struct rn_nl_ops fake_ops = {
	.link_dump = f_link_dump,
	.addr_dump = f_addr_dump,
	.rule_dump = f_rule_dump,
	.route_dump = f_route_dump,
	.route_get = f_route_get,
	.neigh_dump = f_neigh_dump,
	.neigh_get = f_neigh_get,
	.neigh_probe = f_neigh_probe,
	.link_get = f_link_get,
	.arp_probe = f_arp_probe,
	.dcb_get = f_dcb_get,
};

/* the file ops as they were before install (a sysfs fixture's, or the failing base) */
static struct rn_sys_ops saved_sys;

static int f_sys_read(const char *path, char *buf, size_t len)
{
	static const char pfx[] = "/proc/sys/net/ipv4/conf/";
	const struct fake_sysctl *s;
	char name[IF_NAMESIZE + 1];
	const char *key;
	size_t nl;
	int v, i;

	/* anything but a sysctl: the ops before install (a sysfs fixture's files) */
	if (strncmp(path, pfx, sizeof(pfx) - 1))
		return saved_sys.read ? saved_sys.read(path, buf, len) : -ENOENT;
	path += sizeof(pfx) - 1;
	key = strchr(path, '/');
	if (!key || (nl = (size_t)(key - path)) >= sizeof(name))
		return -ENOENT;
	memcpy(name, path, nl);
	name[nl] = '\0';
	key++;
	for (i = 0; i < cur->nlinks && strcmp(cur->links[i].name, name); i++)
		;
	if (i == cur->nlinks && strcmp(name, "all") && strcmp(name, "default"))
		return -ENOENT;
	s = sys_entry(cur, name, 0);
	if (!strcmp(key, "arp_ignore"))
		v = s ? s->v.arp_ignore : 0;
	else if (!strcmp(key, "arp_announce"))
		v = s ? s->v.arp_announce : 0;
	else if (!strcmp(key, "arp_filter"))
		v = s ? s->v.arp_filter : 0;
	else if (!strcmp(key, "rp_filter"))
		v = s ? s->v.rp_filter : 0;
	else if (!strcmp(key, "accept_local"))
		v = s ? s->v.accept_local : 0;
	else if (!strcmp(key, "proxy_arp"))
		v = s ? s->v.proxy_arp : 0;
	else if (!strcmp(key, "forwarding"))
		v = s ? s->v.forwarding : 0;
	else
		return -ENOENT;
	snprintf(buf, len, "%d", v);
	return 0;
}

void fake_nl_install(struct fake_nl_host *h)
{
	static const struct rn_sys_ops sys = { .read = f_sys_read };

	cur = h;
	saved_sys = rn_sys;
	rn_nl_set_ops(&fake_ops);
	rn_sys_set_ops(&sys);
}

void fake_nl_uninstall(void)
{
	rn_nl_reset_ops();
	rn_sys = saved_sys;
	cur = NULL;
	/*
	 * A finding rendered with a template key nobody set is a bug in the code that
	 * made it: every test on a fake host fails on it, whatever it asserts.
	 */
	if (rn_finding_bugs()) {
		fprintf(stderr,
			"BUG: %u finding template(s) rendered with a key that has no "
			"value (see the WARN above)\n",
			rn_finding_bugs());
		abort();
	}
}
