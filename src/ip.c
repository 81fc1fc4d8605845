// SPDX-License-Identifier: MIT
/* Addresses, prefixes, MACs and GIDs as values and as text (include/rn_ip.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_ip.h"

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
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4],
		 mac[5]);
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

const char *rn_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	const uint8_t *r = gid->raw;

	snprintf(buf, len,
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x", r[0],
		 r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
		 r[14], r[15]);
	return buf;
}
