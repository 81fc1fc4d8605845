// SPDX-License-Identifier: MIT
/*
 * ARP uniqueness (roce-routing.md 5.2 P2): ask, from each local NIC, who has each
 * remote NIC's IPv4 address and collect every answer for a short while. Under
 * ARP flux the remote host answers from several NICs; which answer the kernel
 * keeps is a race, so the neighbour check alone may pass by luck. More than one
 * MAC, or one that is not the MAC the remote advertised, is the catalogue's
 * neigh-wrong-mac (the fix is on the remote host).
 *
 * Raw ARP needs CAP_NET_RAW; without it the check is skipped. Replies also
 * refresh neighbour entries, so this runs after both sides' neighbour checks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include "doctor_pair.h"
#include "rn_arp.h"
#include "rn_conncheck.h"

#define ARP_WAIT_MS 300
#define ARP_SENDS 2
#define ARP_MAX_MACS 4

struct arp_q {
	int fd;
	int pair; /* index in the checks */
	struct in_addr src, dst;
	int ifindex;
	uint8_t mac[6];
	int nmacs;
	uint8_t macs[ARP_MAX_MACS][6];
};

static int arp_send(struct arp_q *q)
{
	return rn_arp_request(q->fd, q->ifindex, q->mac, q->src, q->dst);
}

static void arp_read(struct arp_q *q)
{
	struct rn_arp_pkt p;
	ssize_t n;
	int k;

	while ((n = recv(q->fd, &p, sizeof(p), MSG_DONTWAIT)) >= (ssize_t)sizeof(p)) {
		if (!rn_arp_is_reply(&p) || memcmp(p.spa, &q->dst, 4) || memcmp(p.tpa, &q->src, 4))
			continue;
		for (k = 0; k < q->nmacs && memcmp(q->macs[k], p.sha, 6); k++)
			;
		if (k == q->nmacs && q->nmacs < ARP_MAX_MACS)
			memcpy(q->macs[q->nmacs++], p.sha, 6);
	}
}

static int arp_open(struct arp_q *q)
{
	struct sockaddr_ll me = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ARP),
		.sll_ifindex = q->ifindex,
	};
	int ret;

	q->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ARP));
	if (q->fd < 0)
		return -errno;
	if (bind(q->fd, (struct sockaddr *)&me, sizeof(me))) {
		ret = -errno;
		close(q->fd);
		q->fd = -1;
		return ret;
	}
	return 0;
}

int rn_doctor_arp_unique(struct rn_doctor *d, const struct rn_dw_inv *remote,
			 const unsigned char *scope, struct rn_dw_checks *c)
{
	struct arp_q *q = calloc((size_t)c->npairs + 1, sizeof(*q));
	double deadline;
	int i, n = 0, ret = 0, sends, k;

	if (!q)
		return -ENOMEM;
	for (i = 0; i < c->npairs; i++) {
		struct rn_dw_pair *p = &c->pairs[i];
		const struct rn_nic *nic = &d->nics[p->local].nic;
		const struct rn_dw_nic *r = &remote->nics[p->remote];

		if (nic->ip.family != AF_INET || r->ip.family != AF_INET || !nic->link_up ||
		    !r->link_up || p->status == 2 || (scope && !scope[p->remote]))
			continue;
		q[n].pair = i;
		q[n].ifindex = nic->ifindex;
		q[n].src = nic->ip.v4;
		q[n].dst = r->ip.v4;
		memcpy(q[n].mac, nic->mac, 6);
		ret = arp_open(&q[n]);
		if (ret)
			goto out; /* no CAP_NET_RAW: the neighbour check stands alone */
		n++;
	}
	for (sends = 0; sends < ARP_SENDS && n; sends++) {
		for (i = 0; i < n; i++)
			arp_send(&q[i]);
		deadline = rn_doctor_now_ms() + ARP_WAIT_MS / ARP_SENDS;
		while (rn_doctor_now_ms() < deadline) {
			usleep(5000);
			for (i = 0; i < n; i++)
				arp_read(&q[i]);
		}
	}
	for (i = 0; i < n; i++) {
		struct rn_dw_pair *p = &c->pairs[q[i].pair];
		const struct rn_dw_nic *r = &remote->nics[p->remote];
		int has = 0;

		for (k = 0; k < p->nfindings; k++)
			has |= p->findings[k].cause == RN_CAUSE_NEIGH_WRONG_MAC;
		for (k = 0; k < q[i].nmacs && !has; k++) {
			struct rn_peer_facts pf;
			struct rn_vars v = RN_VARS_INIT;
			char b[32];

			if (!memcmp(q[i].macs[k], r->mac, 6) ||
			    p->nfindings >= (int)RN_ARRAY_SIZE(p->findings))
				continue;
			rn_dw_peer_facts(remote, p->remote, &pf);
			rn_conn_vars(&d->nics[p->local].nic, &pf, &v);
			rn_vars_set(&v, "got_mac", "%s", rn_mac_str(q[i].macs[k], b, sizeof(b)));
			rn_finding_render(&p->findings[p->nfindings++], RN_CAUSE_NEIGH_WRONG_MAC,
					  &v);
			rn_vars_free(&v);
			p->status = 1;
			has = 1;
		}
	}
	ret = n;
	rn_doctor_peer_fix(remote, c);
out:
	for (i = 0; i < n; i++)
		close(q[i].fd);
	free(q);
	return ret;
}
