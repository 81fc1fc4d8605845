/* SPDX-License-Identifier: MIT */
/*
 * ARP on packet sockets (AF_PACKET, SOCK_DGRAM, ETH_P_ARP), shared by the host's
 * shared-L2 check (src/arp.c) and the doctor's peer ARP truth (doctor_arp.c).
 * Packet sockets need CAP_NET_RAW.
 */
#ifndef RN_ARP_H
#define RN_ARP_H

#include <stdint.h>
#include <netinet/in.h>
#include <net/if_arp.h>

/* An Ethernet/IPv4 ARP packet as a SOCK_DGRAM packet socket sees it. */
struct rn_arp_pkt {
	struct arphdr h;
	uint8_t sha[6];
	uint8_t spa[4];
	uint8_t tha[6];
	uint8_t tpa[4];
} __attribute__((packed));

/*
 * Broadcast "who has @tpa" out of @ifindex from @mac with sender IP @spa
 * (0.0.0.0 for an RFC 5227 probe). 0 or -errno.
 */
int rn_arp_request(int fd, int ifindex, const uint8_t mac[6], struct in_addr spa,
		   struct in_addr tpa);

/* 1 when @p is an Ethernet/IPv4 ARP reply. */
int rn_arp_is_reply(const struct rn_arp_pkt *p);

#endif /* RN_ARP_H */
