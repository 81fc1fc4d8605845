/* SPDX-License-Identifier: MIT */
/*
 * An IP address as the checks hold it, and its text forms (src/ip.c): addresses, prefixes,
 * MACs and GIDs. A header of its own so that the edges that only carry addresses (the
 * netlink edge, the wire codec) need nothing of the config or the verdict catalogue.
 */
#ifndef RN_IP_H
#define RN_IP_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>

struct rn_ip {
	int family; /* AF_INET or AF_INET6; 0 = none */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	};
};

/* "198.18.0.1" or "fd00::1" into @buf (>= INET6_ADDRSTRLEN); returns @buf. */
const char *rn_ip_str(const struct rn_ip *ip, char *buf, size_t len);
int rn_ip_parse(const char *s, struct rn_ip *ip);
int rn_ip_equal(const struct rn_ip *a, const struct rn_ip *b);
/* 1 when @ip is inside @net/@len (same family). */
int rn_ip_in_prefix(const struct rn_ip *ip, const struct rn_ip *net, int len);
/* @ip with the host bits cleared. */
void rn_ip_mask(const struct rn_ip *ip, int len, struct rn_ip *out);
/* "198.18.0.0/24" style CIDR parse (NCCL_IB_ADDR_RANGE). */
int rn_cidr_parse(const char *s, struct rn_ip *net, int *len);
const char *rn_mac_str(const uint8_t mac[6], char *buf, size_t len);
/* The RoCE GID for an address (IPv4-mapped for AF_INET). */
void rn_gid_from_ip(const struct rn_ip *ip, union ibv_gid *gid);
/* The address a RoCE GID carries (IPv4-mapped or IPv6); -EINVAL for link-local/zero. */
int rn_ip_from_gid(const union ibv_gid *gid, struct rn_ip *ip);
/* GID as "fe80:0000:..." (39 chars + NUL) into @buf (>= 40); returns @buf. */
const char *rn_gid_str(const union ibv_gid *gid, char *buf, size_t len);

#endif /* RN_IP_H */
