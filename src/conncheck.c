// SPDX-License-Identifier: MIT
/*
 * The per-connection verdict: our route to the peer's IP from our source IP
 * leaves through our NIC, and our neighbour entry for the peer (on our NIC)
 * holds the MAC the peer advertised. The kernel copies that entry into the QP at
 * RTR (mlx5), so a wrong MAC here is a completion error 12 thirty seconds later.
 *
 * A state machine, never blocking: the start does the netlink queries (no
 * network wait), an absent neighbour is asked of the kernel with one datagram
 * (neigh_probe) and rn_conn_check_poll() looks again until the deadline.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "rn_clock.h"
#include "rn_conncheck.h"
#include "rn_host.h"
#include "rn_nic.h"
#include "rn_policy.h"
#include "rn_route.h"

#define MAX_CONN_FINDINGS 4
/* Re-ask the kernel this often while the entry stays absent or FAILED. */
#define REPROBE_MS 200

enum conn_state { CS_NEIGH, CS_DONE };

struct rn_conn_check {
	struct rn_nic nic;
	struct rn_peer_facts peer;
	struct rn_ip nexthop;
	int nh_is_peer;
	int timeout_ms;
	double t0, t_probe;
	enum conn_state state;
	int result;
	int nfindings;
	struct rn_finding findings[MAX_CONN_FINDINGS];
	int npolls;
	int nprobes;
};

void rn_peer_facts_from_nic(const struct rn_nic *nic, struct rn_peer_facts *out)
{
	memset(out, 0, sizeof(*out));
	if (gethostname(out->host, sizeof(out->host) - 1))
		snprintf(out->host, sizeof(out->host), "?");
	snprintf(out->netdev, sizeof(out->netdev), "%s", nic->netdev);
	memcpy(out->mac, nic->mac, 6);
	out->gid = nic->gid;
	out->ip = nic->ip;
	out->mtu = nic->mtu;
	out->active_mtu = nic->active_mtu;
	out->verdict_cause = RN_CAUSE_NONE;
	if (nic->verdict == RN_VERDICT_REFUSED) {
		int i;

		/* The cause that refused it, not a warning that came first. */
		for (i = 0; i < nic->nfindings; i++)
			if (nic->findings[i].sev == RN_SEV_FATAL) {
				out->verdict_cause = (uint16_t)nic->findings[i].cause;
				break;
			}
	}
}

void rn_conn_vars(const struct rn_nic *nic, const struct rn_peer_facts *peer, struct rn_vars *v)
{
	char b[INET6_ADDRSTRLEN];

	rn_vars_set(v, "nic", "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev, nic->port);
	rn_vars_set(v, "dev", "%s", nic->netdev);
	rn_vars_set(v, "ip", "%s", rn_ip_str(&nic->ip, b, sizeof(b)));
	rn_vars_set(v, "peer_ip", "%s", rn_ip_str(&peer->ip, b, sizeof(b)));
	rn_vars_set(v, "peer_host", "%s", peer->host[0] ? peer->host : "the peer");
	rn_vars_set(v, "peer_dev", "%s", peer->netdev[0] ? peer->netdev : "its RoCE netdev");
	rn_vars_set(v, "peer_mac", "%s", rn_mac_str(peer->mac, b, sizeof(b)));
	/*
	 * What stops ARP flux on the peer, run there. From here only the peer's name is
	 * known, not its other NICs' own values: 'all' covers every NIC whose own
	 * arp_ignore is not above 2 (max(all, dev)); the doctor, which has the peer's
	 * inventory, names the peer's own keys instead (rn_doctor_peer_sysctls).
	 */
	rn_vars_set(v, "peer_fix",
		    "sysctl -w net.ipv4.conf.all.arp_ignore=1 "
		    "net.ipv4.conf.all.arp_announce=2");
	/* neigh-wrong-mac's words for an entry the kernel learned (a static one: below) */
	rn_vars_set(v, "who", "peer");
	rn_vars_set(v, "wrong", "NIC");
	rn_vars_set(v, "why",
		    "ARP flux on host %s (its arp_ignore/arp_announce) or a stale or "
		    "static neighbour entry here",
		    rn_vars_get(v, "peer_host"));
	rn_vars_set(v, "neigh_fix", "ip neigh flush dev %s to %s nud all", nic->netdev,
		    rn_vars_get(v, "peer_ip"));
	if (nic->table == RN_TABLE_MAIN) {
		uint32_t t, prio;

		/* No rule yet: a fix must name a table of its own, never main. */
		rn_propose_table(NULL, nic->ifindex, &t, &prio);
		rn_vars_set(v, "table", "%u", t);
	} else {
		rn_vars_set(v, "table", "%d", nic->table);
	}
	if (nic->ip.family) {
		struct rn_ip net;

		rn_ip_mask(&nic->ip, nic->prefixlen, &net);
		rn_vars_set(v, "subnet", "%s/%d", rn_ip_str(&net, b, sizeof(b)), nic->prefixlen);
	}
}

int rn_neigh_valid(uint16_t state)
{
	return (state & (NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_STALE | NUD_DELAY |
			 NUD_PROBE)) != 0;
}

/*
 * A peer behind a router (outside our subnet; IPv4: IPv6 judged the QP's lookup above).
 * The QP's lookup (oif = our netdev) must find a gateway, or the kernel assumes the peer
 * on-link and its ARP never resolves; TCP's (no oif, @r) must leave our NIC, and its fix
 * is a default route via that gateway in our table, never the subnet's route. 1 with the
 * finding in @f, 0 when the subnet's judgment applies.
 */
static int conn_routed(const struct rn_nic *nic, const struct rn_peer_facts *peer,
		       const struct rn_nl_route *r, struct rn_vars *v, struct rn_finding *f)
{
	struct rn_nl_route q;
	struct rn_nl_link l;

	if (rn_nl.route_get(&peer->ip, &nic->ip, nic->ifindex, &q) < 0)
		q.type = 0;
	/* on-link out of our NIC without oif too: meant so (a proxy-ARP router) */
	if (q.type == RTN_UNICAST && q.oif == nic->ifindex && !q.gw.family &&
	    r->oif != nic->ifindex) {
		/* the gateway the NIC's assessment knew (a route's, NCCL_ROCE_GATEWAYS) */
		rn_route_gw_vars(NULL, nic, nic->gw.family == nic->ip.family ? &nic->gw : NULL, v);
		if (rn_nl.link_get && !rn_nl.link_get(r->oif, &l))
			rn_vars_append(v, "gw_hint", "",
				       "; without oif the route from %s leaves "
				       "through %s (table %u)",
				       rn_vars_get(v, "ip"), l.name, r->table);
		rn_finding_render(f, RN_CAUSE_NO_GATEWAY, v);
		return 1;
	}
	if (r->oif == nic->ifindex || !q.gw.family || q.oif != nic->ifindex)
		return 0;
	if (rn_nl.link_get && !rn_nl.link_get(r->oif, &l))
		rn_vars_set(v, "other_dev", "%s", l.name);
	else
		rn_vars_set(v, "other_dev", "ifindex %d", r->oif);
	rn_vars_set(v, "used_table", "%u", r->table);
	rn_route_gw_vars(NULL, nic, &q.gw, v);
	rn_vars_set(v, "route_fix", "%s", rn_vars_get(v, "gw_fix"));
	rn_vars_set(v, "alt", "%s", "");
	rn_finding_render(f, RN_CAUSE_ROUTE_WRONG_NIC, v);
	return 1;
}

int rn_conn_route(const struct rn_nic *nic, const struct rn_peer_facts *peer, struct rn_vars *v,
		  struct rn_ip *nexthop, int *nh_is_peer, struct rn_finding *f)
{
	struct rn_nl_route r;
	char b[INET6_ADDRSTRLEN];
	int ret;

	rn_vars_set(v, "dst", "%s", rn_ip_str(&peer->ip, b, sizeof(b)));
	/*
	 * IPv4 as TCP and ARP requests see it (no oif). IPv6 as the QP's own lookup does
	 * (oif = the GID's netdev, a preference there): ND needs no symmetry, and without
	 * oif NICs sharing a /64 would all be refused for the first NIC's route.
	 */
	ret = rn_nl.route_get(&peer->ip, &nic->ip, nic->ip.family == AF_INET6 ? nic->ifindex : 0,
			      &r);
	if (ret < 0) {
		rn_vars_set(v, "err", "%s", strerror(-ret));
		rn_route_fix_vars(NULL, nic, v);
		rn_finding_render(f, RN_CAUSE_NO_ROUTE, v);
		return 1;
	}
	if (r.type == RTN_LOCAL)
		return 2; /* both ends on this host: the kernel loops it back, no ARP */
	if (nic->ip.family == AF_INET && !rn_ip_in_prefix(&peer->ip, &nic->ip, nic->prefixlen)) {
		ret = conn_routed(nic, peer, &r, v, f);
		if (ret)
			return ret;
	}
	if (r.oif != nic->ifindex) {
		struct rn_nl_link l;

		if (rn_nl.link_get && !rn_nl.link_get(r.oif, &l))
			rn_vars_set(v, "other_dev", "%s", l.name);
		else
			rn_vars_set(v, "other_dev", "ifindex %d", r.oif);
		rn_vars_set(v, "used_table", "%u", r.table);
		rn_vars_set(v, "prio", "%s", rn_vars_get(v, "table"));
		rn_vars_set(v, "devs", "%s", nic->netdev);
		rn_route_fix_vars(NULL, nic, v);
		rn_finding_render(f, RN_CAUSE_ROUTE_WRONG_NIC, v);
		return 1;
	}
	if (r.gw.family) {
		*nexthop = r.gw;
		*nh_is_peer = 0;
	} else {
		*nexthop = peer->ip;
		*nh_is_peer = 1;
	}
	return 0;
}

/* At most one finding per step (peer, MTU, route, neighbour): MAX_CONN_FINDINGS holds all. */
static void add(struct rn_conn_check *c, enum rn_cause cause, const struct rn_vars *v)
{
	if (c->nfindings < MAX_CONN_FINDINGS &&
	    rn_finding_render(&c->findings[c->nfindings], cause, v) != -ENOMEM)
		c->nfindings++;
}

static void add_finding(struct rn_conn_check *c, struct rn_finding *f)
{
	if (c->nfindings < MAX_CONN_FINDINGS)
		rn_finding_move(&c->findings[c->nfindings++], f);
	rn_finding_clear(f);
}

static void decide(struct rn_conn_check *c, int result)
{
	c->state = CS_DONE;
	c->result = result;
}

int rn_mtu_vars(const struct rn_nic *nic, const struct rn_peer_facts *peer, struct rn_vars *v)
{
	if (peer->mtu > 0 && nic->mtu > 0 && peer->mtu != nic->mtu) {
		rn_vars_set(v, "what", "netdev MTU %d here but %d on %s %s", nic->mtu, peer->mtu,
			    rn_vars_get(v, "peer_host"), rn_vars_get(v, "peer_dev"));
		/* the smaller MTU is raised: ours here, or the peer's on the peer */
		rn_vars_set(v, "mtu_fix", "ip link set dev %s mtu %d",
			    nic->mtu < peer->mtu ? nic->netdev : peer->netdev,
			    RN_MAX(nic->mtu, peer->mtu));
		rn_vars_set(v, "fix_host", "%s",
			    nic->mtu < peer->mtu ? "" : rn_vars_get(v, "peer_host"));
		return 1;
	}
	if (peer->active_mtu && nic->active_mtu && peer->active_mtu != nic->active_mtu) {
		rn_vars_set(v, "what", "port active_mtu %d here but %d on %s %s",
			    rn_ibv_mtu_bytes(nic->active_mtu), rn_ibv_mtu_bytes(peer->active_mtu),
			    rn_vars_get(v, "peer_host"), rn_vars_get(v, "peer_dev"));
		/* the netdevs agree (else the branch above): one NIC supports less, no
		 * command here changes that */
		rn_vars_set(v, "mtu_fix", "%s", "");
		rn_vars_set(v, "fix_host", "%s", "");
		return 1;
	}
	return 0;
}

/* Judge a neighbour entry: 1 decided (finding in @f if wrong), 0 not resolved yet. */
static int judge_neigh(struct rn_conn_check *c, const struct rn_nl_neigh *nb)
{
	struct rn_vars v = RN_VARS_INIT;
	char b[32];

	if (!rn_neigh_valid(nb->state) || !nb->has_mac)
		return 0;
	if (c->nh_is_peer && memcmp(nb->mac, c->peer.mac, 6)) {
		rn_conn_vars(&c->nic, &c->peer, &v);
		rn_vars_set(&v, "got_mac", "%s", rn_mac_str(nb->mac, b, sizeof(b)));
		if (nb->state & (NUD_PERMANENT | NUD_NOARP))
			rn_neigh_static_vars(c->nic.netdev, rn_vars_get(&v, "peer_ip"), nb->state,
					     "peer", &v);
		add(c, RN_CAUSE_NEIGH_WRONG_MAC, &v);
		rn_vars_free(&v);
		decide(c, -EHOSTUNREACH);
	} else {
		decide(c, 0);
	}
	return 1;
}

int rn_conn_check_start(const struct rn_nic *nic, const struct rn_peer_facts *peer, int timeout_ms,
			struct rn_conn_check **out)
{
	struct rn_conn_check *c;
	struct rn_vars v = RN_VARS_INIT;
	struct rn_finding f = { 0 };
	int ret;

	if (!nic || !peer || !out)
		return -EINVAL;
	if (!nic->ip.family || peer->ip.family != nic->ip.family)
		return -EAFNOSUPPORT;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->nic = *nic;
	/* the identity is all the check reads: the NIC's findings stay with their owner */
	c->nic.findings = NULL;
	c->nic.nfindings = 0;
	c->nic.findings_cap = 0;
	c->peer = *peer;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 1000;
	c->t0 = rn_now_ms();
	c->state = CS_NEIGH;
	rn_conn_vars(nic, peer, &v);

	if (peer->verdict_cause != RN_CAUSE_NONE) {
		char lb[32];

		rn_vars_set(&v, "peer_cause", "%s",
			    rn_cause_label((enum rn_cause)peer->verdict_cause, lb, sizeof(lb)));
		add(c, RN_CAUSE_PEER_REFUSED, &v);
		decide(c, -EHOSTUNREACH);
		goto out;
	}
	if (rn_mtu_vars(nic, peer, &v))
		add(c, RN_CAUSE_MTU_MISMATCH, &v);
	ret = rn_conn_route(nic, peer, &v, &c->nexthop, &c->nh_is_peer, &f);
	if (ret == 1) {
		add_finding(c, &f);
		decide(c, -EHOSTUNREACH);
		goto out;
	}
	if (ret == 2) {
		decide(c, 0);
		goto out;
	}
	/* First look: an entry may already be there (possibly wrong). */
	{
		struct rn_nl_neigh nb;

		ret = rn_nl.neigh_get(nic->ifindex, &c->nexthop, &nb);
		if (ret && ret != -ENOENT)
			goto err;
		if (!ret && judge_neigh(c, &nb))
			goto out;
	}
	ret = rn_nl.neigh_probe(nic->ifindex, &nic->ip, &c->nexthop);
	if (ret)
		goto err;
	c->nprobes++;
	c->t_probe = rn_now_ms();
out:
	rn_vars_free(&v);
	*out = c;
	return 0;
err:
	rn_vars_free(&v);
	rn_conn_check_free(c);
	return ret;
}

static int result_of(struct rn_conn_check *c, struct rn_finding *out)
{
	int i;

	if (out) {
		const struct rn_finding *pick = NULL;

		/* The refusing cause first; on success a warning (MTU) if any. */
		for (i = 0; i < c->nfindings; i++) {
			if (c->findings[i].sev == RN_SEV_FATAL || !pick)
				pick = &c->findings[i];
			if (c->findings[i].sev == RN_SEV_FATAL)
				break;
		}
		rn_finding_clear(out);
		if (pick && rn_finding_copy(out, pick))
			return -ENOMEM;
	}
	return c->result;
}

int rn_conn_check_poll(struct rn_conn_check *chk, struct rn_finding *out)
{
	struct rn_nl_neigh nb;
	double t;
	int ret;

	if (!chk)
		return -EINVAL;
	if (chk->state == CS_DONE)
		return result_of(chk, out);
	chk->npolls++;
	ret = rn_nl.neigh_get(chk->nic.ifindex, &chk->nexthop, &nb);
	if (ret && ret != -ENOENT)
		return ret;
	if (!ret && judge_neigh(chk, &nb))
		return result_of(chk, out);
	t = rn_now_ms();
	if (t - chk->t0 >= chk->timeout_ms) {
		struct rn_vars v = RN_VARS_INIT;

		rn_conn_vars(&chk->nic, &chk->peer, &v);
		rn_vars_set(&v, "timeout_ms", "%d", chk->timeout_ms);
		add(chk, RN_CAUSE_NEIGH_UNRESOLVED, &v);
		rn_vars_free(&v);
		decide(chk, -EHOSTUNREACH);
		return result_of(chk, out);
	}
	/* Gone (garbage-collected) or FAILED from an earlier try: ask again. */
	if ((ret == -ENOENT || (nb.state & NUD_FAILED)) && t - chk->t_probe >= REPROBE_MS) {
		ret = rn_nl.neigh_probe(chk->nic.ifindex, &chk->nic.ip, &chk->nexthop);
		if (ret)
			return ret;
		chk->nprobes++;
		chk->t_probe = t;
	}
	return -EAGAIN;
}

int rn_conn_check_findings(const struct rn_conn_check *chk, const struct rn_finding **out)
{
	*out = chk ? chk->findings : NULL;
	return chk ? chk->nfindings : 0;
}

void rn_conn_check_free(struct rn_conn_check *chk)
{
	int i;

	if (!chk)
		return;
	for (i = 0; i < chk->nfindings; i++)
		rn_finding_clear(&chk->findings[i]);
	free(chk);
}
