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
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "rn_clock.h"
#include "rn_host.h"
#include "rn_sys.h"

/* IP helpers */

const char *rn_ip_str(const struct rn_ip *ip, char *buf, size_t len)
{
	if (!ip || !ip->family || !inet_ntop(ip->family, &ip->v6, buf, (socklen_t)len))
		snprintf(buf, len, "-");
	return buf;
}

int rn_ip_parse(const char *s, struct rn_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (inet_pton(AF_INET, s, &ip->v4) == 1) {
		ip->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &ip->v6) == 1) {
		ip->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

static size_t ip_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

int rn_ip_equal(const struct rn_ip *a, const struct rn_ip *b)
{
	return a->family && a->family == b->family && !memcmp(&a->v6, &b->v6, ip_len(a->family));
}

void rn_ip_mask(const struct rn_ip *ip, int len, struct rn_ip *out)
{
	size_t n = ip_len(ip->family), i;
	uint8_t *b;

	*out = *ip;
	b = (uint8_t *)&out->v6;
	for (i = 0; i < n; i++) {
		int bits = len - (int)i * 8;

		if (bits >= 8)
			continue;
		b[i] &= bits <= 0 ? 0 : (uint8_t)(0xff << (8 - bits));
	}
}

int rn_ip_in_prefix(const struct rn_ip *ip, const struct rn_ip *net, int len)
{
	struct rn_ip a, b;

	if (!ip->family || ip->family != net->family)
		return 0;
	rn_ip_mask(ip, len, &a);
	rn_ip_mask(net, len, &b);
	return !memcmp(&a.v6, &b.v6, ip_len(ip->family));
}

int rn_cidr_parse(const char *s, struct rn_ip *net, int *len)
{
	char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
	long l;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (rn_ip_parse(buf, net))
		return -EINVAL;
	l = net->family == AF_INET ? 32 : 128;
	if (slash) {
		long max = l;

		l = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end || l < 0 || l > max)
			return -EINVAL;
	}
	*len = (int)l;
	return 0;
}

const char *rn_mac_str(const uint8_t mac[6], char *buf, size_t len)
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
		 mac[4], mac[5]);
	return buf;
}

void rn_gid_from_ip(const struct rn_ip *ip, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (ip->family == AF_INET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &ip->v4, 4);
	} else if (ip->family == AF_INET6) {
		memcpy(gid->raw, &ip->v6, 16);
	}
}

int rn_ip_from_gid(const union ibv_gid *gid, struct rn_ip *ip)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t zero[16];

	memset(ip, 0, sizeof(*ip));
	if (!memcmp(gid->raw, zero, 16))
		return -EINVAL;
	if (!memcmp(gid->raw, mapped, 12)) {
		if (!memcmp(&gid->raw[12], zero, 4))
			return -EINVAL;
		ip->family = AF_INET;
		memcpy(&ip->v4, &gid->raw[12], 4);
		return 0;
	}
	/* fe80::/10 link-local: the default GIDs derived from the MAC. */
	if (gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80)
		return -EINVAL;
	ip->family = AF_INET6;
	memcpy(&ip->v6, gid->raw, 16);
	return 0;
}

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

/* Concatenate the IPv4 and IPv6 dumps of one kind. */
static int dump2(int (*fn)(int, void **, int *), size_t esz, void **out, int *n)
{
	void *a = NULL, *b = NULL, *c;
	int na = 0, nb = 0, ret;

	ret = fn(AF_INET, &a, &na);
	if (ret)
		return ret;
	if (fn(AF_INET6, &b, &nb)) {
		/* No IPv6 in this kernel or netns: the IPv4 facts still stand. */
		b = NULL;
		nb = 0;
	}
	c = realloc(a, (size_t)(na + nb) * esz + 1);
	if (!c) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	if (nb)
		memcpy((char *)c + (size_t)na * esz, b, (size_t)nb * esz);
	free(b);
	*out = c;
	*n = na + nb;
	return 0;
}

static int addr_dump(int fam, void **out, int *n)
{
	return rn_nl.addr_dump(fam, (struct rn_nl_addr **)out, n);
}

static int rule_dump(int fam, void **out, int *n)
{
	return rn_nl.rule_dump(fam, (struct rn_nl_rule **)out, n);
}

static int route_dump(int fam, void **out, int *n)
{
	return rn_nl.route_dump(fam, (struct rn_nl_route **)out, n);
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
	RN_CHECK_GOTO(dump2(addr_dump, sizeof(*h->addrs), (void **)&h->addrs, &h->naddrs), ret,
		      err);
	RN_CHECK_GOTO(dump2(rule_dump, sizeof(*h->rules), (void **)&h->rules, &h->nrules), ret,
		      err);
	sort_rules(h->rules, h->nrules);
	RN_CHECK_GOTO(dump2(route_dump, sizeof(*h->routes), (void **)&h->routes, &h->nroutes),
		      ret, err);
	h->snapshot_ms = rn_now_ms() - t0;
	*out = h;
	return 0;
err:
	free(links);
	rn_host_free(h);
	return ret;
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

void rn_host_free(struct rn_host *host)
{
	if (!host)
		return;
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
