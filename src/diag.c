// SPDX-License-Identifier: MIT
/*
 * Diagnosis after a completion error: re-read the live route, link and
 * neighbour for the peer (netlink only, no ARP sent: this runs on NCCL's progress
 * path) and name the most likely cause. Order follows what makes error 12 most
 * often: a dead link, a neighbour holding the wrong MAC, an unresolved one, then
 * routing, the peer's own refusal, MTU.
 */
#include <errno.h>
#include <string.h>
#include <net/if.h>
#include <linux/neighbour.h>

#include "rn_conncheck.h"
#include "rn_host.h"
#include "rn_route.h"

static int diagnose(const struct rn_nic *nic, const struct rn_peer_facts *peer,
		    struct rn_finding *out, struct rn_vars *v)
{
	struct rn_nl_link l;
	struct rn_nl_neigh nb;
	struct rn_ip nh;
	int nh_is_peer = 1, ret;

	rn_conn_vars(nic, peer, v);
	ret = rn_nl.link_get(nic->ifindex, &l);
	if (ret < 0)
		return ret;
	if (!l.oper_up) {
		/* admin-up without carrier: no command helps, the cable or the switch does */
		rn_vars_set(v, "since", "%s", "");
		rn_finding_render(out, l.flags & IFF_UP ? RN_CAUSE_NO_CARRIER : RN_CAUSE_LINK_DOWN,
				  v);
		return 0;
	}
	ret = rn_conn_route(nic, peer, v, &nh, &nh_is_peer, out);
	if (ret == 2)
		return -ENOENT;
	if (ret == 1) {
		/* Routing is wrong, but a wrong MAC would explain error 12 more directly. */
		ret = rn_nl.neigh_get(nic->ifindex, &peer->ip, &nb);
		if (!ret && rn_neigh_valid(nb.state) && nb.has_mac &&
		    memcmp(nb.mac, peer->mac, 6)) {
			char b[32];

			rn_vars_set(v, "got_mac", "%s", rn_mac_str(nb.mac, b, sizeof(b)));
			if (nb.state & (NUD_PERMANENT | NUD_NOARP))
				rn_neigh_static_vars(nic->netdev, rn_vars_get(v, "peer_ip"),
						     nb.state, "peer", v);
			rn_finding_render(out, RN_CAUSE_NEIGH_WRONG_MAC, v);
		}
		return 0;
	}
	ret = rn_nl.neigh_get(nic->ifindex, &nh, &nb);
	if (ret && ret != -ENOENT)
		return ret;
	if (!ret && rn_neigh_valid(nb.state) && nb.has_mac) {
		if (nh_is_peer && memcmp(nb.mac, peer->mac, 6)) {
			char b[32];

			rn_vars_set(v, "got_mac", "%s", rn_mac_str(nb.mac, b, sizeof(b)));
			if (nb.state & (NUD_PERMANENT | NUD_NOARP))
				rn_neigh_static_vars(nic->netdev, rn_vars_get(v, "peer_ip"),
						     nb.state, "peer", v);
			rn_finding_render(out, RN_CAUSE_NEIGH_WRONG_MAC, v);
			return 0;
		}
	} else {
		rn_vars_set(v, "timeout_ms", "0");
		rn_finding_render(out, RN_CAUSE_NEIGH_UNRESOLVED, v);
		return 0;
	}
	if (peer->verdict_cause != RN_CAUSE_NONE) {
		char lb[32];

		rn_vars_set(v, "peer_cause", "%s",
			    rn_cause_label((enum rn_cause)peer->verdict_cause, lb, sizeof(lb)));
		rn_finding_render(out, RN_CAUSE_PEER_REFUSED, v);
		return 0;
	}
	if (rn_mtu_vars(nic, peer, v)) {
		rn_finding_render(out, RN_CAUSE_MTU_MISMATCH, v);
		return 0;
	}
	return -ENOENT;
}

int rn_diagnose_peer(const struct rn_nic *nic, const struct rn_peer_facts *peer,
		     struct rn_finding *out)
{
	struct rn_vars v = RN_VARS_INIT;
	int ret;

	if (!nic || !peer || !out)
		return -EINVAL;
	rn_finding_clear(out);
	if (!nic->ip.family || peer->ip.family != nic->ip.family)
		return -EAFNOSUPPORT;
	ret = diagnose(nic, peer, out, &v);
	rn_vars_free(&v);
	if (ret)
		rn_finding_clear(out);
	return ret;
}

/*
 * The transport's path checks (rn_path.h), here with the diagnosis because this file already
 * builds on the connection check (conncheck.c cannot name the diagnosis: that would be a
 * cycle). A unit test may script them.
 */
struct rn_path_check_ops rn_path_check = {
	.facts_from_nic = rn_peer_facts_from_nic,
	.start = rn_conn_check_start,
	.poll = rn_conn_check_poll,
	.free = rn_conn_check_free,
	.diagnose = rn_diagnose_peer,
};
