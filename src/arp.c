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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include "rn_clock.h"
#include "rn_nl.h"

struct arp_pkt {
	struct arphdr h;
	uint8_t sha[6];
	uint8_t spa[4];
	uint8_t tha[6];
	uint8_t tpa[4];
} __attribute__((packed));

static int open_link(int ifindex)
{
	struct sockaddr_ll me = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ARP),
		.sll_ifindex = ifindex,
	};
	int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ARP));

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&me, sizeof(me))) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

static int send_probe(int fd, const struct rn_arp_query *q)
{
	struct sockaddr_ll to = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ARP),
		.sll_ifindex = q->ifindex,
		.sll_halen = 6,
		.sll_addr = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
	};
	struct arp_pkt p = { 0 };

	p.h.ar_hrd = htons(ARPHRD_ETHER);
	p.h.ar_pro = htons(ETH_P_IP);
	p.h.ar_hln = 6;
	p.h.ar_pln = 4;
	p.h.ar_op = htons(ARPOP_REQUEST);
	memcpy(p.sha, q->mac, 6);
	memcpy(p.tpa, &q->target, 4);
	if (sendto(fd, &p, sizeof(p), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}

/* Match every reply read on @ifindex's socket to the open queries of that link. */
static int drain(int fd, int ifindex, struct rn_arp_query *q, int n)
{
	struct arp_pkt p;
	int i, open = 0;

	while (recv(fd, &p, sizeof(p), MSG_DONTWAIT) >= (ssize_t)sizeof(p)) {
		if (ntohs(p.h.ar_op) != ARPOP_REPLY || p.h.ar_hln != 6 || p.h.ar_pln != 4)
			continue;
		for (i = 0; i < n; i++)
			if (q[i].ifindex == ifindex && !q[i].answered &&
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
	struct pollfd *pf;
	int *link_of, nl = 0, i, k, ret = 0, open = n;
	double end;

	if (n <= 0)
		return 0;
	pf = calloc((size_t)n, sizeof(*pf));
	link_of = calloc((size_t)n, sizeof(*link_of));
	if (!pf || !link_of) {
		ret = -ENOMEM;
		goto out;
	}
	/* One socket per sending link: a reply is unicast back to the link that asked. */
	for (i = 0; i < n; i++) {
		q[i].answered = 0;
		for (k = 0; k < nl && link_of[k] != q[i].ifindex; k++)
			;
		if (k == nl) {
			int fd = open_link(q[i].ifindex);

			if (fd < 0) {
				ret = fd;
				goto out;
			}
			link_of[nl] = q[i].ifindex;
			pf[nl].fd = fd;
			pf[nl].events = POLLIN;
			nl++;
		}
		send_probe(pf[k].fd, &q[i]);
	}
	end = rn_now_ms() + wait_ms;
	while (open) {
		int left = (int)(end - rn_now_ms());

		if (left <= 0 || poll(pf, (nfds_t)nl, left) <= 0)
			break;
		for (k = 0; k < nl; k++)
			if (pf[k].revents & POLLIN)
				open = drain(pf[k].fd, link_of[k], q, n);
	}
out:
	for (k = 0; k < nl; k++)
		close(pf[k].fd);
	free(pf);
	free(link_of);
	return ret;
}
