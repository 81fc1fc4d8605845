// SPDX-License-Identifier: MIT
/*
 * GID and source-IP choice per RoCE port. Among the GIDs bound to the port's
 * netdev, of the wanted family, range and RoCE version, the one whose address
 * policy routing makes this NIC's source wins; without policy routing the
 * netdev's primary address. Never a link-local or zero GID, never a hard-coded
 * index (mlx5 puts the first IPv4 v2 GID at 3, rxe at 1). What is wrong with the
 * choice is returned (a cause and its facts); the verdict (assess.c) makes the finding.
 *
 * A GID is a netdev's only when its address is that netdev's own address as seen in the
 * caller's network namespace. A shared RDMA device (Multus macvlan pods) holds the GIDs
 * of every pod on the node, bound to netdevs whose names repeat (each pod's net1) and
 * whose ifindexes are per namespace (each pod's net1 may be 3): neither the name nor the
 * ifindex says whose a GID is, the address does (the ifindex, when known, must agree).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include "rn_gid.h"
#include "rn_host.h"
#include "rn_log.h"
#include "rn_policy.h"
#include "rn_verbs.h"

/* rxe's table has 1024 slots, mlx5's 255: a shared device fills them with pods' GIDs */
#define GID_SCAN_MAX 1024

struct cand {
	int index;       /* -1 for a netdev-only candidate */
	union ibv_gid gid;
	struct rn_ip ip; /* family 0 for link-local/zero */
	int type;        /* enum ibv_gid_type; -1 unknown */
	int ifindex;     /* as the GID's attribute says (0: unknown; other namespaces' too) */
	int link;        /* this namespace's netdev whose own address it is; 0: none */
};

static const char *fam_str(int family)
{
	return family == AF_INET6 ? "AF_INET6" : "AF_INET";
}

static const char *type_str(int type)
{
	switch (type) {
	case IBV_GID_TYPE_ROCE_V1:
		return "v1";
	case IBV_GID_TYPE_ROCE_V2:
		return "v2";
	case IBV_GID_TYPE_IB:
		return "ib";
	}
	return "?";
}

static int want_type(const struct rn_config *cfg)
{
	return cfg->roce_version == 1 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2;
}

/* The netdev of this namespace whose own address @c's is (see the head of the file). */
static int cand_link(const struct rn_host *host, const struct cand *c)
{
	const struct rn_nl_addr *a;

	if (!c->ip.family || !host)
		return 0;
	a = rn_host_addr_find(host, c->ifindex, &c->ip);
	return a ? a->ifindex : 0;
}

static int gid_table_len(struct ibv_context *ctx, int port)
{
	struct ibv_port_attr pa;

	memset(&pa, 0, sizeof(pa));
	if (!rn_verbs_err(rn_verbs.query_port(ctx, (uint8_t)port, &pa)) && pa.gid_tbl_len > 0)
		return RN_MIN(pa.gid_tbl_len, GID_SCAN_MAX);
	return GID_SCAN_MAX;
}

static void cand_fill(struct rn_host *host, struct cand *c, const struct ibv_gid_entry *e)
{
	c->index = (int)e->gid_index;
	c->gid = e->gid;
	c->type = (int)e->gid_type;
	c->ifindex = (int)e->ndev_ifindex;
	if (rn_ip_from_gid(&e->gid, &c->ip))
		c->ip.family = 0;
	c->link = cand_link(host, c);
}

static int cand_by_index(const void *a, const void *b)
{
	return ((const struct cand *)a)->index - ((const struct cand *)b)->index;
}

/*
 * The port's valid entries from one read of the device's table (one ioctl where an entry
 * at a time costs one per slot: rxe has 1024, most empty). -errno when the table cannot be
 * read whole: libibverbs' sysfs fallback fails on one unreadable attribute (a pod's view
 * of a shared device), and the entry-by-entry read skips just those.
 */
static int read_gid_table(struct rn_host *host, struct ibv_context *ctx, int port, struct cand *c,
			  int max)
{
	struct ibv_device_attr da;
	struct ibv_gid_entry *e;
	ssize_t got, i;
	size_t cap;
	int n = 0, ret;

	memset(&da, 0, sizeof(da));
	ret = rn_verbs_err(rn_verbs.query_device(ctx, &da));
	if (ret)
		return ret;
	/* every port's entries come back: room for as many as this port's table per port */
	cap = (size_t)max * (size_t)RN_MAX(da.phys_port_cnt, 1);
	e = calloc(cap, sizeof(*e));
	if (!e)
		return -ENOMEM;
	got = rn_verbs.query_gid_table(ctx, e, cap);
	if (got < 0) {
		free(e);
		return (int)got;
	}
	for (i = 0; i < got && n < max; i++)
		if ((int)e[i].port_num == port && e[i].gid_index < (uint32_t)max)
			cand_fill(host, &c[n++], &e[i]);
	free(e);
	/* the kernel answers in index order; nothing here depends on it doing so */
	qsort(c, (size_t)n, sizeof(*c), cand_by_index);
	return n;
}

static int read_gids(struct rn_host *host, struct ibv_context *ctx, int port, struct cand *c,
		     int max)
{
	struct ibv_gid_entry e;
	int i, n = 0, ret, err = 0;

	n = read_gid_table(host, ctx, port, c, max);
	if (n >= 0)
		return n;
	n = 0;
	for (i = 0; i < max; i++) {
		ret = rn_verbs_err(rn_verbs.query_gid_ex(ctx, (uint32_t)port, (uint32_t)i, &e));
		if (ret == -ENODATA)
			continue; /* empty slot */
		if (ret == -EINVAL)
			break;    /* past the end of the table */
		if (ret) {
			/*
			 * An entry whose attributes this namespace cannot read (its netdev is
			 * another pod's, or gid_attrs is not readable here): not ours to use,
			 * and no reason to stop before the entries that are.
			 */
			err = ret;
			continue;
		}
		e.gid_index = (uint32_t)i;
		cand_fill(host, &c[n++], &e);
	}
	return n ? n : err;
}

static int netdev_cands(const struct rn_host *host, int ifindex, struct cand *c, int max)
{
	int i, n = 0;

	for (i = 0; i < host->naddrs && n < max; i++) {
		const struct rn_nl_addr *a = &host->addrs[i];

		if (a->ifindex != ifindex || !rn_addr_usable(a))
			continue;
		c[n].index = -1;
		c[n].ip = a->ip;
		c[n].type = IBV_GID_TYPE_ROCE_V2;
		c[n].ifindex = ifindex;
		c[n].link = ifindex;
		rn_gid_from_ip(&a->ip, &c[n].gid);
		n++;
	}
	return n;
}

struct want {
	int family;
	int type;
	int has_range;
	struct rn_ip net;
	int len;
};

static int cand_fits(const struct cand *c, const struct want *w)
{
	return c->ip.family == w->family && c->type == w->type &&
	       (!w->has_range || rn_ip_in_prefix(&c->ip, &w->net, w->len));
}

static int cand_ok(const struct cand *c, const struct rn_nic *nic, const struct want *w)
{
	return c->link && c->link == nic->ifindex && cand_fits(c, w);
}

/*
 * A VLAN's GIDs sit in the table of the port under it, bound to the VLAN netdev (mlx5 and
 * rxe alike: rxe refuses a VLAN as its own netdev); so do a macvlan's, whose netdev is in
 * a pod. Where the port's netdev has no GID we could use (or is not in this namespace)
 * and an upper netdev here has, the NIC is that netdev: its address, routes and sysctls
 * are the ones RoCE uses, so the checks and their fixes must name it. The one whose
 * address policy routing makes a source wins, else the first in table order. Returns the
 * ifindex, or 0 when the port's own netdev has a usable GID or no upper netdev has one.
 */
static int vlan_of_port(struct rn_host *host, const struct cand *c, int n, const struct rn_nic *nic,
			const struct want *w)
{
	struct rn_ip ip;
	int i, first = 0;

	for (i = 0; i < n; i++)
		if (cand_ok(&c[i], nic, w))
			return 0;
	for (i = 0; i < n; i++) {
		if (!c[i].link || c[i].link == nic->ifindex || !cand_fits(&c[i], w))
			continue;
		if (rn_policy_source(host, c[i].link, w->family, &ip, NULL))
			return c[i].link;
		if (!first)
			first = c[i].link;
	}
	return first;
}

/* Judge @nic on netdev @ifindex from now on (a VLAN of its port). */
static void repoint(struct rn_host *host, struct rn_nic *nic, int ifindex)
{
	const struct rn_host_link *l = rn_host_link_by_index(host, ifindex);

	if (!l || ifindex == nic->ifindex)
		return;
	if (nic->ifindex)
		rn_info(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "%s:%d: judged on %s, the upper netdev (VLAN, macvlan) whose GID "
			       "it uses (its port's netdev %s has none of the wanted kind)",
			nic->ibdev, nic->port, l->link.name, nic->netdev);
	else
		rn_info(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "%s:%d: judged on %s, the netdev of this network namespace whose "
			       "GID it uses (its port's netdev %s is in another namespace)",
			nic->ibdev, nic->port, l->link.name, nic->netdev);
	/* the port's netdev out of sight: its link state cannot be ANDed in (the port is up) */
	nic->link_up = (nic->ifindex ? nic->link_up : 1) && l->link.oper_up;
	if (!nic->ifindex)
		snprintf(nic->port_netdev, sizeof(nic->port_netdev), "%s", nic->netdev);
	snprintf(nic->netdev, sizeof(nic->netdev), "%s", l->link.name);
	nic->ifindex = ifindex;
	memcpy(nic->mac, l->link.mac, 6);
	nic->mtu = l->link.mtu;
}

/* Every candidate into "have" (a growable value: a full GID table stays whole). */
static void describe(const struct rn_host *host, const struct cand *c, int n, struct rn_vars *v)
{
	int i;

	int foreign = 0;

	rn_vars_set(v, "have", "%s", n ? "" : "nothing");
	for (i = 0; i < n; i++) {
		const struct rn_host_link *l = NULL;
		char ip[INET6_ADDRSTRLEN];
		int k, at = c[i].ip.family ? c[i].link : c[i].ifindex;

		/* an address none of ours has: another namespace's GID, whatever its ifindex */
		if (c[i].ip.family && !c[i].link) {
			foreign++;
			continue;
		}
		for (k = 0; k < host->nlinks; k++)
			if (host->links[k].link.ifindex == at)
				l = &host->links[k];
		if (c[i].ip.family)
			rn_ip_str(&c[i].ip, ip, sizeof(ip));
		else
			snprintf(ip, sizeof(ip), "link-local");
		if (l)
			rn_vars_append(v, "have", ", ", "%s%d %s %s on %s",
				       c[i].index >= 0 ? "idx" : "",
				       c[i].index >= 0 ? c[i].index : 0, ip, type_str(c[i].type),
				       l->link.name);
		else
			rn_vars_append(v, "have", ", ", "%s%d %s %s on ifindex %d",
				       c[i].index >= 0 ? "idx" : "",
				       c[i].index >= 0 ? c[i].index : 0, ip, type_str(c[i].type),
				       c[i].ifindex);
	}
	if (foreign)
		rn_vars_append(v, "have", ", ",
			       "%d GID%s of netdevs in another network namespace "
			       "(other pods')",
			       foreign, foreign == 1 ? "" : "s");
}

#define SEG_PROBES 8

/*
 * The IPv4 subnet @nic's L2 segment carries, for an addressless NIC: an ARP probe out of
 * it for the address of each other up link (root; the sender address 0.0.0.0 needs none
 * of ours); the first that answers is on its segment. "198.18.0.0/24 (nic0's subnet, on
 * its L2 segment)" into @v's "seg", its prefix length into "seg_len"; 0, or -errno.
 */
static int segment_subnet(struct rn_host *host, const struct rn_nic *nic, struct rn_vars *v)
{
	struct rn_arp_query q[SEG_PROBES];
	const struct rn_nl_addr *which[SEG_PROBES];
	char b[INET6_ADDRSTRLEN];
	struct rn_ip net;
	int i, n = 0;

	if (!host || !rn_nl.arp_probe || !nic->ifindex)
		return -ENOENT;
	for (i = 0; i < host->naddrs && n < SEG_PROBES; i++) {
		const struct rn_nl_addr *a = &host->addrs[i];
		const struct rn_host_link *l = rn_host_link_by_index(host, a->ifindex);

		if (a->ip.family != AF_INET || a->ifindex == nic->ifindex || !l ||
		    !l->link.oper_up || (l->link.flags & IFF_LOOPBACK) || l->link.master)
			continue;
		memset(&q[n], 0, sizeof(q[n]));
		q[n].ifindex = nic->ifindex;
		memcpy(q[n].mac, nic->mac, 6);
		q[n].target = a->ip.v4;
		which[n++] = a;
	}
	if (!n || rn_nl.arp_probe(q, n, RN_L2_WAIT_MS))
		return -ENOENT;
	for (i = 0; i < n; i++) {
		if (!q[i].answered)
			continue;
		rn_ip_mask(&which[i]->ip, which[i]->prefixlen, &net);
		rn_vars_set(v, "seg", "%s/%d (%s's subnet, which its L2 segment carries)",
			    rn_ip_str(&net, b, sizeof(b)), which[i]->prefixlen,
			    rn_host_link_by_index(host, which[i]->ifindex)->link.name);
		rn_vars_set(v, "seg_len", "%d", which[i]->prefixlen);
		return 0;
	}
	return -ENOENT;
}

/* What to tell a user with no usable GID: the knob or the address that would help. */
static void no_gid_fix(struct rn_host *host, const struct cand *c, int n, const struct rn_nic *nic,
		       const struct want *w, struct rn_vars *v)
{
	int i, pass;

	/* Most specific first: only the range is wrong, then the family, then the version. */
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < n; i++) {
			const struct cand *k = &c[i];
			int fam = k->ip.family == w->family, ver = k->type == w->type;

			if (!k->link || k->link != nic->ifindex)
				continue;
			if (pass == 0 && fam && ver) {
				rn_vars_set(v, "fix",
					    "unset NCCL_IB_ADDR_RANGE  # or widen it to "
					    "cover the NIC's address");
				return;
			}
			if (pass == 1 && !fam && ver) {
				rn_vars_set(v, "fix", "export NCCL_IB_ADDR_FAMILY=%s",
					    fam_str(k->ip.family));
				return;
			}
			if (pass == 2 && fam && !ver) {
				rn_vars_set(v, "fix", "export NCCL_IB_ROCE_VERSION_NUM=%d",
					    k->type == IBV_GID_TYPE_ROCE_V1 ? 1 : 2);
				return;
			}
		}
	}
	/*
	 * No command fits: the address is the site's to choose (a free one of the subnet is
	 * for the site's plan to say, not a probe). Say what to do instead: the subnet its
	 * segment carries where a probe tells, or leave the NIC out of NCCL.
	 */
	rn_vars_set(v, "fix", "%s", "");
	if (w->family == AF_INET && !segment_subnet(host, nic, v))
		rn_vars_set(v, "todo",
			    "give %s an IPv4 address in %s (ip addr add <address>/%s "
			    "dev %s), then run again",
			    nic->netdev, rn_vars_get(v, "seg"), rn_vars_get(v, "seg_len"),
			    nic->netdev);
	else
		rn_vars_set(v, "todo",
			    "give %s an %s address of the RoCE fabric (ip addr add "
			    "<address>/<prefix> dev %s), then run again",
			    nic->netdev, w->family == AF_INET6 ? "IPv6" : "IPv4", nic->netdev);
	rn_vars_append(v, "todo", "", "; or leave it out of NCCL: NCCL_IB_HCA=^%s%s",
		       nic->ibdev[0] ? nic->ibdev : "<its RDMA device>",
		       nic->ibdev[0] ? "" : " (ibv_devices names it)");
}

static void set_choice(struct rn_host *host, struct rn_nic *nic, const struct cand *c)
{
	const struct rn_nl_addr *a;
	const struct rn_nl_rule *r;

	nic->gid_index = c->index;
	nic->gid = c->gid;
	nic->gid_type = c->type;
	nic->ip = c->ip;
	nic->prefixlen = 0;
	nic->table = RN_TABLE_MAIN;
	if (!c->ip.family)
		return;
	a = rn_host_addr_find(host, nic->ifindex, &c->ip);
	if (!a)
		a = rn_host_addr_find(host, 0, &c->ip);
	if (a)
		nic->prefixlen = a->prefixlen;
	r = rn_rule_for_src(host, &c->ip);
	if (r)
		nic->table = (int)r->table;
}

/* No GID chosen: the NIC is refused with no-gid (what was wanted and the fix set by the caller). */
static void no_gid(struct rn_nic *nic, enum rn_cause *cause)
{
	*cause = RN_CAUSE_NO_GID;
	nic->gid_index = -1;
	memset(&nic->ip, 0, sizeof(nic->ip));
}

/* What a GID must be (family, RoCE version, NCCL_IB_ADDR_RANGE): -EINVAL (said) on a bad range. */
static int want_init(const struct rn_config *cfg, struct ibv_context *ctx, struct rn_nic *nic,
		     struct want *w, struct rn_vars *v, enum rn_cause *cause)
{
	w->family = cfg->addr_family == AF_INET6 ? AF_INET6 : AF_INET;
	w->type = ctx ? want_type(cfg) : IBV_GID_TYPE_ROCE_V2;
	if (!cfg->addr_range[0])
		return 0;
	if (rn_cidr_parse(cfg->addr_range, &w->net, &w->len) || w->net.family != w->family) {
		rn_vars_set(v, "nic", "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev, nic->port);
		rn_vars_set(v, "dev", "%s", nic->netdev);
		rn_vars_set(v, "want", "NCCL_IB_ADDR_RANGE='%s' is not a %s CIDR", cfg->addr_range,
			    fam_str(w->family));
		rn_vars_set(v, "have", "-");
		rn_vars_set(v, "fix", "unset NCCL_IB_ADDR_RANGE  # or set a %s CIDR",
			    fam_str(w->family));
		*cause = RN_CAUSE_NO_GID;
		nic->gid_index = -1;
		return -EINVAL;
	}
	w->has_range = 1;
	return 0;
}

/*
 * The automatic choice among the @n candidates: the address policy routing sends from,
 * else the netdev's primary address, else the first usable GID. Its index in @c (-1:
 * none), and why in @why.
 */
static int auto_pick(struct rn_host *host, const struct rn_nic *nic, const struct cand *c, int n,
		     const struct want *w, enum rn_gid_why *why)
{
	struct rn_ip psrc = { 0 };
	int i, k;

	if (rn_policy_source(host, nic->ifindex, w->family, &psrc, NULL)) {
		*why = RN_GID_WHY_POLICY;
		for (i = 0; i < n; i++)
			if (cand_ok(&c[i], nic, w) && rn_ip_equal(&c[i].ip, &psrc))
				return i;
	}
	/* No policy source: the netdev's primary address. */
	*why = RN_GID_WHY_PRIMARY;
	for (i = 0; i < host->naddrs; i++) {
		const struct rn_nl_addr *a = &host->addrs[i];

		if (a->ifindex != nic->ifindex || a->ip.family != w->family ||
		    (a->flags & IFA_F_SECONDARY) || !rn_addr_usable(a))
			continue;
		for (k = 0; k < n; k++)
			if (cand_ok(&c[k], nic, w) && rn_ip_equal(&c[k].ip, &a->ip))
				return k;
	}
	*why = RN_GID_WHY_FIRST;
	for (i = 0; i < n; i++)
		if (cand_ok(&c[i], nic, w))
			return i;
	return -1;
}

/*
 * NCCL_IB_GID_INDEX named candidate @forced: it is the NIC's GID, unless link-local
 * (refused by name); one that is not the automatic choice @pick says so (gid-forced-mismatch).
 */
static void take_forced(struct rn_host *host, struct rn_nic *nic, const struct cand *c, int n,
			int forced, int pick, const struct rn_config *cfg, struct rn_vars *v,
			enum rn_cause *cause)
{
	char ip[INET6_ADDRSTRLEN], fip[INET6_ADDRSTRLEN];

	if (!c[forced].ip.family) {
		/* a link-local (fe80::) GID reaches no other host: refuse it by name now */
		describe(host, c, n, v);
		rn_vars_set(v, "want",
			    "a routable GID, not NCCL_IB_GID_INDEX=%d (link-local %s, "
			    "which RoCE cannot route to another host)",
			    cfg->gid_index,
			    inet_ntop(AF_INET6, c[forced].gid.raw, fip, sizeof(fip)) ? fip :
										       "fe80::");
		if (pick >= 0)
			rn_vars_set(v, "fix",
				    "unset NCCL_IB_GID_INDEX  # the automatic choice is "
				    "index %d; or: export NCCL_IB_GID_INDEX=%d",
				    c[pick].index, c[pick].index);
		else
			rn_vars_set(v, "fix", "unset NCCL_IB_GID_INDEX");
		no_gid(nic, cause);
		return;
	}
	set_choice(host, nic, &c[forced]);
	nic->gid_why = RN_GID_WHY_FORCED;
	if (pick == forced)
		return;
	rn_vars_set(v, "forced", "%d", cfg->gid_index);
	if (c[forced].link)
		rn_vars_set(v, "forced_what", "%s %s on ifindex %d",
			    rn_ip_str(&c[forced].ip, fip, sizeof(fip)), type_str(c[forced].type),
			    c[forced].ifindex);
	else
		rn_vars_set(v, "forced_what",
			    "%s %s, not an address of this network namespace: "
			    "another pod's GID",
			    c[forced].ip.family ? rn_ip_str(&c[forced].ip, fip, sizeof(fip)) :
						  "link-local",
			    type_str(c[forced].type));
	if (pick >= 0) {
		rn_vars_set(v, "ip", "%s", rn_ip_str(&c[pick].ip, ip, sizeof(ip)));
		rn_vars_set(v, "auto", "%d", c[pick].index);
	} else {
		rn_vars_set(v, "ip", "no address");
		rn_vars_set(v, "auto", "none");
	}
	*cause = RN_CAUSE_GID_FORCED_MISMATCH;
}

static int gid_choose(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		      const struct rn_config *cfg, struct rn_vars *v, enum rn_cause *cause)
{
	struct cand *c = NULL;
	struct want w = { 0 };
	enum rn_gid_why why = RN_GID_WHY_NONE;
	int n, i, pick, forced = -1, max;

	if (want_init(cfg, ctx, nic, &w, v, cause))
		return 0;
	max = ctx ? gid_table_len(ctx, nic->port) : RN_MAX(host->naddrs, 1);
	c = calloc((size_t)max, sizeof(*c));
	if (!c)
		return -ENOMEM;
	n = ctx ? read_gids(host, ctx, nic->port, c, max) :
		  netdev_cands(host, nic->ifindex, c, max);
	if (n < 0) {
		free(c);
		return n;
	}
	if (ctx && cfg->gid_index >= 0) {
		for (i = 0; i < n; i++)
			if (c[i].index == cfg->gid_index)
				forced = i;
	}
	/* a VLAN's (a pod's macvlan's) GID, forced or the only usable one: that is the NIC */
	if (forced >= 0 && c[forced].link)
		repoint(host, nic, c[forced].link);
	else if (ctx)
		repoint(host, nic, vlan_of_port(host, c, n, nic, &w));
	if (!rn_host_link_by_index(host, nic->ifindex)) {
		/* the port's netdev is in another namespace and no GID of it is a netdev's here */
		free(c);
		return -ENODEV;
	}
	pick = auto_pick(host, nic, c, n, &w, &why);
	rn_vars_set(v, "nic", "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev, nic->port);
	rn_vars_set(v, "dev", "%s", nic->netdev);
	if (ctx && cfg->gid_index >= 0 && forced < 0) {
		/* a bad value is replaced by its default (auto), never a refused NIC */
		describe(host, c, n, v);
		rn_warn(RN_SUB_INIT | RN_SUB_ENV,
			RN_PFX "NCCL_IB_GID_INDEX=%d is not valid on %s:%d: it takes the index of "
			       "a GID in the port's table (%s); using the default (automatic "
			       "choice)",
			cfg->gid_index, nic->ibdev, nic->port, rn_vars_get(v, "have"));
	}
	if (forced >= 0) {
		take_forced(host, nic, c, n, forced, pick, cfg, v, cause);
	} else if (pick < 0) {
		describe(host, c, n, v);
		rn_vars_set(v, "want", "%s%s%s, RoCE v%d, on %s", fam_str(w.family),
			    w.has_range ? " in " : "", w.has_range ? cfg->addr_range : "",
			    w.type == IBV_GID_TYPE_ROCE_V1 ? 1 : 2, nic->netdev);
		no_gid_fix(host, c, n, nic, &w, v);
		no_gid(nic, cause);
	} else {
		set_choice(host, nic, &c[pick]);
		nic->gid_why = why;
	}
	free(c);
	return 0;
}

int rn_gid_choose(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		  const struct rn_config *cfg, struct rn_gid_result *res)
{
	int ret;

	memset(res, 0, sizeof(*res));
	rn_vars_set(&res->vars, "todo", "%s", ""); /* what to do where no command can fix it */
	ret = gid_choose(host, ctx, nic, cfg, &res->vars, &res->cause);
	if (ret < 0)
		rn_gid_result_free(res);
	return ret;
}

void rn_gid_result_free(struct rn_gid_result *res)
{
	rn_vars_free(&res->vars);
	res->cause = RN_CAUSE_NONE;
}

const char *rn_gid_why_str(enum rn_gid_why why)
{
	switch (why) {
	case RN_GID_WHY_NONE:
		return "none";
	case RN_GID_WHY_POLICY:
		return "policy";
	case RN_GID_WHY_PRIMARY:
		return "primary";
	case RN_GID_WHY_FIRST:
		return "first";
	case RN_GID_WHY_FORCED:
		return "forced";
	}
	return "none";
}

/*
 * The index NCCL's net_ib would take on @port (ncclIbGetGidIndex, NCCL 2.28 to 2.30): with
 * NCCL_IB_GID_INDEX unset, the lowest entry of the wanted family, range and RoCE version,
 * whichever netdev (a VLAN's too) it belongs to. NCCL's own RMA and GIN use it. -errno
 * when the table cannot be read, -ENOENT when no entry fits.
 */
int rn_gid_netib_index(struct ibv_context *ctx, int port, const struct rn_config *cfg)
{
	struct want w = { .family = cfg->addr_family == AF_INET6 ? AF_INET6 : AF_INET };
	struct cand *c;
	int n, i, max, pick = -ENOENT;

	if (cfg->gid_index >= 0)
		return cfg->gid_index;
	w.type = want_type(cfg);
	if (cfg->addr_range[0] && !rn_cidr_parse(cfg->addr_range, &w.net, &w.len))
		w.has_range = w.net.family == w.family;
	max = gid_table_len(ctx, port);
	c = calloc((size_t)max, sizeof(*c));
	if (!c)
		return -ENOMEM;
	n = read_gids(NULL, ctx, port, c, max);
	for (i = 0; i < n && pick < 0; i++)
		if (cand_fits(&c[i], &w))
			pick = c[i].index;
	free(c);
	return n < 0 ? n : pick;
}

/* "198.18.0.99 v2 on eth0" for a table entry, into @buf. */
static const char *entry_str(const struct cand *c, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN], ifn[IF_NAMESIZE];

	if (c->ip.family)
		rn_ip_str(&c->ip, ip, sizeof(ip));
	else
		snprintf(ip, sizeof(ip), "link-local");
	if (!if_indextoname((unsigned int)c->ifindex, ifn))
		snprintf(ifn, sizeof(ifn), "ifindex %d", c->ifindex);
	snprintf(buf, len, "%s %s on %s", ip, type_str(c->type), ifn);
	return buf;
}

int rn_gid_refresh(struct ibv_context *ctx, struct rn_nic *nic, int *old, struct rn_vars *v)
{
	struct cand *c;
	struct ibv_gid_entry e;
	int type = nic->gid_type, n, i, now = -1, ret, max;
	char b[128], ip[INET6_ADDRSTRLEN];

	*old = nic->gid_index;
	if (!ctx || nic->gid_index < 0 || !nic->ip.family)
		return 0;
	/* the usual case, one query: the index still holds our address */
	ret = rn_verbs_err(rn_verbs.query_gid_ex(ctx, (uint32_t)nic->port, (uint32_t)nic->gid_index,
						 &e));
	if (!ret && !memcmp(e.gid.raw, nic->gid.raw, sizeof(e.gid.raw)) &&
	    (int)e.ndev_ifindex == nic->ifindex && (int)e.gid_type == type)
		return 0;
	if (ret && ret != -ENODATA && ret != -EINVAL)
		return ret;
	max = gid_table_len(ctx, nic->port);
	c = calloc((size_t)max, sizeof(*c));
	if (!c)
		return -ENOMEM;
	/* no host snapshot here: the GID's own address and netdev decide, as at the choice */
	n = read_gids(NULL, ctx, nic->port, c, max);
	if (n < 0) {
		free(c);
		return n;
	}
	for (i = 0; i < n; i++) {
		if (c[i].index == nic->gid_index)
			now = i;
		if (!memcmp(c[i].gid.raw, nic->gid.raw, sizeof(c[i].gid.raw)) &&
		    c[i].ifindex == nic->ifindex && c[i].type == type) {
			nic->gid_index = c[i].index;
			free(c);
			return 1;
		}
	}
	/* gone: what gid-gone names */
	rn_vars_set(v, "nic", "%s:%d", nic->ibdev, nic->port);
	rn_vars_set(v, "dev", "%s", nic->netdev);
	rn_vars_set(v, "ip", "%s", rn_ip_str(&nic->ip, ip, sizeof(ip)));
	rn_vars_set(v, "old_index", "%d", nic->gid_index);
	/* no prefix known: the address alone (a host route) still brings its GID back */
	rn_vars_set(v, "prefixlen", "%d",
		    nic->prefixlen > 0         ? nic->prefixlen :
		    nic->ip.family == AF_INET6 ? 128 :
						 32);
	rn_vars_set(v, "now", "%s", now >= 0 ? entry_str(&c[now], b, sizeof(b)) : "nothing");
	rn_vars_set(v, "have", "%s", n ? "" : "nothing");
	for (i = 0; i < n; i++)
		rn_vars_append(v, "have", ", ", "idx%d %s", c[i].index,
			       entry_str(&c[i], b, sizeof(b)));
	free(c);
	return -ENOENT;
}
