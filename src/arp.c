// SPDX-License-Identifier: MIT
/*
 * The ARP edge of rn_nl_ops: RFC 5227 probes (sender IP 0.0.0.0) out of chosen
 * links, answers collected on packet sockets. It tells from the host alone which
 * of its links share one L2 segment: a probe out of NIC A for NIC B's address is
 * answered by NIC B only when B hears A's broadcasts. A zero sender IP matters:
 * with a local sender address the answering side would drop the request as a
 * martian (rp_filter/accept_local) and arp_ignore=2 would judge its subnet.
 *
 * A packet socket needs CAP_NET_RAW; without it every probe fails with -EPERM and
 * the caller says the check was skipped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <net/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include "rn_arp.h"
#include "rn_clock.h"
#include "rn_nl.h"

int rn_arp_request(int fd, int ifindex, const uint8_t mac[6], struct in_addr spa,
		   struct in_addr tpa)
{
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ARP),
		.sll_ifindex = ifindex,
		.sll_halen = 6,
		.sll_addr = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
	};
	struct rn_arp_pkt p = { 0 };

	p.h.ar_hrd = htons(ARPHRD_ETHER);
	p.h.ar_pro = htons(ETH_P_IP);
	p.h.ar_hln = 6;
	p.h.ar_pln = 4;
	p.h.ar_op = htons(ARPOP_REQUEST);
	memcpy(p.sha, mac, 6);
	memcpy(p.spa, &spa, 4);
	memcpy(p.tpa, &tpa, 4);
	if (sendto(fd, &p, sizeof(p), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}

int rn_arp_is_reply(const struct rn_arp_pkt *p)
{
	return ntohs(p->h.ar_op) == ARPOP_REPLY && p->h.ar_hln == 6 && p->h.ar_pln == 4;
}

/* Match every reply read to the open query of the link it arrived on. */
static int drain(int fd, struct rn_arp_query *q, int n)
{
	struct sockaddr_ll from;
	socklen_t fl = sizeof(from);
	struct rn_arp_pkt p;
	int i, open = 0;

	while (recvfrom(fd, &p, sizeof(p), MSG_DONTWAIT, (struct sockaddr *)&from, &fl) >=
	       (ssize_t)sizeof(p)) {
		fl = sizeof(from);
		if (from.sll_pkttype == PACKET_OUTGOING || !rn_arp_is_reply(&p))
			continue;
		for (i = 0; i < n; i++)
			if (q[i].ifindex == from.sll_ifindex && !q[i].answered &&
			    !memcmp(p.spa, &q[i].target, 4) && memcmp(p.sha, q[i].mac, 6)) {
				memcpy(q[i].answer, p.sha, 6);
				q[i].answered = 1;
			}
	}
	for (i = 0; i < n; i++)
		open += !q[i].answered;
	return open;
}

int rn_arp_probe_real(struct rn_arp_query *q, int n, int wait_ms)
{
	struct pollfd pf = { .events = POLLIN };
	int i, open = n;
	double end;

	if (n <= 0)
		return 0;
	/*
	 * One socket for every link (sendto names the link, recvfrom says where a reply
	 * came in): each packet socket's close waits for an RCU grace period.
	 */
	pf.fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ARP));
	if (pf.fd < 0)
		return -errno;
	for (i = 0; i < n; i++) {
		q[i].answered = 0;
		rn_arp_request(pf.fd, q[i].ifindex, q[i].mac, (struct in_addr){ 0 }, q[i].target);
	}
	end = rn_now_ms() + wait_ms;
	while (open) {
		int left = (int)(end - rn_now_ms());

		if (left <= 0 || poll(&pf, 1, left) <= 0)
			break;
		open = drain(pf.fd, q, n);
	}
	close(pf.fd);
	return 0;
}
