// SPDX-License-Identifier: MIT
/*
 * The real netlink edge over libnl-3 (the only file that speaks libnl).
 *
 * One route socket per process, shared under a lock (the engine is process-wide):
 * a fresh socket per request cost a socket, bind and close for each of the route
 * check's several requests, on both sides of every connection. A fork()ed child
 * opens its own, and a request that fails locally (timeout, send or receive
 * error) drops the socket, so that a late reply can never answer the next request.
 * NOTE: libnl's nl_syserr2nlerr() folds EHOSTUNREACH, ENETDOWN and others into
 * NLE_FAILURE, so the error callback keeps the kernel's own errno from
 * NLMSG_ERROR and libnl codes are mapped to errno only for local failures.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/dcbnl.h>
#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/ip.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/socket.h>

#include "rn_compiler.h"
#include "rn_nl.h"

#define NL_TIMEOUT_MS 2000

/* From linux/if.h, which clashes with net/if.h (rn_path.h). */
#ifndef IFF_LOWER_UP
#define IFF_LOWER_UP 0x10000
#endif
#define RN_IF_OPER_UNKNOWN 0
#define RN_IF_OPER_NOTPRESENT 1
#define RN_IF_OPER_TESTING 4
#define RN_IF_OPER_DORMANT 5

static int nle_to_errno(int nle)
{
	switch (nle < 0 ? -nle : nle) {
	case 0:
		return 0;
	case NLE_NOMEM:
		return -ENOMEM;
	case NLE_AGAIN:
		return -EAGAIN;
	case NLE_INVAL:
		return -EINVAL;
	case NLE_RANGE:
		return -ERANGE;
	case NLE_MSGSIZE:
		return -EMSGSIZE;
	case NLE_OPNOTSUPP:
		return -EOPNOTSUPP;
	case NLE_OBJ_NOTFOUND:
		return -ENOENT;
	case NLE_NOADDR:
		return -EADDRNOTAVAIL;
	case NLE_PERM:
		return -EPERM;
	case NLE_BUSY:
		return -EBUSY;
	case NLE_NODEV:
		return -ENODEV;
	case NLE_NOACCESS:
		return -EACCES;
	case NLE_INTR:
		return -EINTR;
	case NLE_BAD_SOCK:
		return -EBADF;
	case NLE_DUMP_INTR:
		return -ESTALE; /* the table changed during the dump: ask again */
	default:
		return -EIO;
	}
}

struct req {
	int (*parse)(struct nlmsghdr *h, void *arg);
	void *arg;
	int kerr; /* errno from NLMSG_ERROR (negative), 0 = none */
	int perr; /* first parse error */
	int nmsg;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct req *r = arg;
	int ret;

	r->nmsg++;
	ret = r->parse(nlmsg_hdr(msg), r->arg);
	if (ret < 0 && !r->perr)
		r->perr = ret;
	return NL_OK;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct req *r = arg;

	r->kerr = e->error < 0 ? e->error : -e->error;
	return NL_STOP;
}

static int on_finish(struct nl_msg *msg, void *arg)
{
	return NL_STOP;
}

static pthread_mutex_t sk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nl_sock *sk_shared; /* under sk_lock */
static pid_t sk_pid;
static unsigned long sk_opened;

static void sk_drop(void)
{
	if (sk_shared)
		nl_socket_free(sk_shared);
	sk_shared = NULL;
}

/* The shared socket, opened on first use (and in a fork()ed child). Under sk_lock. */
static int sk_get(struct nl_sock **out)
{
	struct timeval tv = { .tv_sec = NL_TIMEOUT_MS / 1000,
			      .tv_usec = (NL_TIMEOUT_MS % 1000) * 1000 };
	struct nl_sock *sk;
	int ret;

	if (sk_shared && sk_pid == getpid()) {
		*out = sk_shared;
		return 0;
	}
	sk_drop(); /* a child's copy: close the fd, the parent keeps its own */
	sk = nl_socket_alloc();
	if (!sk)
		return -ENOMEM;
	ret = nl_connect(sk, NETLINK_ROUTE);
	if (ret < 0) {
		nl_socket_free(sk);
		return nle_to_errno(ret);
	}
	/* A dead kernel reply must not hang the caller. */
	setsockopt(nl_socket_get_fd(sk), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	nl_socket_disable_auto_ack(sk);
	sk_shared = sk;
	sk_pid = getpid();
	sk_opened++;
	*out = sk;
	return 0;
}

void rn_nl_close(void)
{
	pthread_mutex_lock(&sk_lock);
	sk_drop();
	pthread_mutex_unlock(&sk_lock);
}

unsigned long rn_nl_sockets_opened(void)
{
	unsigned long n;

	pthread_mutex_lock(&sk_lock);
	n = sk_opened;
	pthread_mutex_unlock(&sk_lock);
	return n;
}

/* Send @msg (consumed) and feed every reply to @parse. */
static int nl_talk(struct nl_msg *msg, int (*parse)(struct nlmsghdr *, void *), void *arg)
{
	struct req r = { .parse = parse, .arg = arg };
	struct nl_sock *sk = NULL;
	struct nl_cb *cb;
	int ret, local = 1;

	pthread_mutex_lock(&sk_lock);
	ret = sk_get(&sk);
	if (ret)
		goto out;
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		ret = -ENOMEM;
		goto out;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &r);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &r);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &r);
	ret = nl_send_auto(sk, msg);
	if (ret < 0) {
		ret = nle_to_errno(ret);
		goto out_cb;
	}
	ret = nl_recvmsgs(sk, cb);
	if (r.kerr) {
		ret = r.kerr; /* the kernel answered: the socket is in step */
		local = 0;
	} else if (ret < 0) {
		ret = nle_to_errno(ret);
	} else {
		ret = r.perr;
		local = 0;
	}
out_cb:
	nl_cb_put(cb);
out:
	if (ret && local)
		sk_drop();
	pthread_mutex_unlock(&sk_lock);
	nlmsg_free(msg);
	return ret;
}

static struct nl_msg *new_msg(int type, int flags, const void *hdr, size_t len)
{
	struct nl_msg *msg = nlmsg_alloc_simple(type, flags);

	if (!msg)
		return NULL;
	if (nlmsg_append(msg, (void *)hdr, len, NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

static int put_ip(struct nl_msg *msg, int attr, const struct rn_ip *ip)
{
	if (ip->family == AF_INET)
		return nla_put(msg, attr, 4, &ip->v4) ? -EMSGSIZE : 0;
	return nla_put(msg, attr, 16, &ip->v6) ? -EMSGSIZE : 0;
}

static void get_ip(struct nlattr *a, int family, struct rn_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (!a)
		return;
	if (family == AF_INET && nla_len(a) >= 4) {
		ip->family = AF_INET;
		memcpy(&ip->v4, nla_data(a), 4);
	} else if (family == AF_INET6 && nla_len(a) >= 16) {
		ip->family = AF_INET6;
		memcpy(&ip->v6, nla_data(a), 16);
	}
}

/* A growing array for dumps. */
struct vec {
	void *v;
	int n, cap;
	size_t esz;
};

static void *vec_push(struct vec *a)
{
	void *p;

	if (a->n == a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;

		p = realloc(a->v, (size_t)cap * a->esz);
		if (!p)
			return NULL;
		a->v = p;
		a->cap = cap;
	}
	p = (char *)a->v + (size_t)a->n++ * a->esz;
	memset(p, 0, a->esz);
	return p;
}

/*
 * A dump the kernel marks interrupted (NLM_F_DUMP_INTR: the table changed between two of its
 * batches, as when a link comes up and gains addresses and routes) may be inconsistent: it is
 * asked again, as iproute2 does, before the error goes back. 32 tries: a table that changes
 * every few ms (an agent adding and removing an address) on a loaded 2-CPU host interrupted 8
 * dumps of 2,000 addresses in a row; a dump of a usual host's tables takes ~0.1 ms.
 */
#define DUMP_TRIES 32

static int dump(int type, const void *hdr, size_t len, int (*parse)(struct nlmsghdr *, void *),
		size_t esz, void **out, int *n)
{
	int ret = -ESTALE, tries;

	for (tries = 0; tries < DUMP_TRIES && ret == -ESTALE; tries++) {
		struct vec a = { .esz = esz };
		struct nl_msg *msg = new_msg(type, NLM_F_DUMP, hdr, len);

		if (!msg)
			return -ENOMEM;
		ret = nl_talk(msg, parse, &a);
		if (!ret) {
			*out = a.v;
			*n = a.n;
			return 0;
		}
		free(a.v);
	}
	return ret;
}

/* links */

/* IFLA_AF_SPEC -> AF_INET -> IFLA_INET_CONF: u32 values indexed by IPV4_DEVCONF_* - 1. */
static void parse_inet_conf(struct nlattr *spec, struct rn_nl_link *l)
{
	struct nlattr *af, *a;
	int rem, rem2;

	nla_for_each_nested(af, spec, rem)
	{
		if (nla_type(af) != AF_INET)
			continue;
		nla_for_each_nested(a, af, rem2)
		{
			const uint32_t *c = nla_data(a);

			if (nla_type(a) != IFLA_INET_CONF ||
			    nla_len(a) < (int)(IPV4_DEVCONF_ACCEPT_LOCAL * sizeof(*c)))
				continue;
			l->inet_conf.arp_ignore = (int)c[IPV4_DEVCONF_ARP_IGNORE - 1];
			l->inet_conf.arp_announce = (int)c[IPV4_DEVCONF_ARP_ANNOUNCE - 1];
			l->inet_conf.arp_filter = (int)c[IPV4_DEVCONF_ARPFILTER - 1];
			l->inet_conf.rp_filter = (int)c[IPV4_DEVCONF_RP_FILTER - 1];
			l->inet_conf.accept_local = (int)c[IPV4_DEVCONF_ACCEPT_LOCAL - 1];
			l->inet_conf.proxy_arp = (int)c[IPV4_DEVCONF_PROXY_ARP - 1];
			l->inet_conf.forwarding = (int)c[IPV4_DEVCONF_FORWARDING - 1];
			l->has_inet_conf = 1;
		}
	}
}

static int parse_link(struct nlmsghdr *h, struct rn_nl_link *l)
{
	struct ifinfomsg *ifi = nlmsg_data(h);
	struct nlattr *tb[IFLA_MAX + 1];
	int oper = RN_IF_OPER_UNKNOWN;

	if (h->nlmsg_type != RTM_NEWLINK || nlmsg_parse(h, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
		return -EIO;
	l->ifindex = ifi->ifi_index;
	l->flags = ifi->ifi_flags;
	if (tb[IFLA_IFNAME])
		nla_strlcpy(l->name, tb[IFLA_IFNAME], sizeof(l->name));
	if (tb[IFLA_ADDRESS] && nla_len(tb[IFLA_ADDRESS]) == 6)
		memcpy(l->mac, nla_data(tb[IFLA_ADDRESS]), 6);
	if (tb[IFLA_MTU])
		l->mtu = (int)nla_get_u32(tb[IFLA_MTU]);
	if (tb[IFLA_OPERSTATE])
		oper = nla_get_u8(tb[IFLA_OPERSTATE]);
	if (tb[IFLA_MASTER])
		l->master = (int)nla_get_u32(tb[IFLA_MASTER]);
	if (tb[IFLA_AF_SPEC])
		parse_inet_conf(tb[IFLA_AF_SPEC], l);
	/*
	 * The carrier as the kernel has it now: IFF_LOWER_UP follows netif_carrier_ok() at once,
	 * the operstate only once linkwatch has run (up to a second later, longer on a busy
	 * host), so just after a link comes up (or goes down) the two disagree and the operstate
	 * is the stale one: a check then would refuse a NIC whose carrier is back. Routing goes
	 * by the carrier. A dormant or testing link carries no traffic whatever its carrier.
	 */
	l->oper_up = (l->flags & IFF_UP) && (l->flags & IFF_LOWER_UP) &&
		     oper != RN_IF_OPER_NOTPRESENT && oper != RN_IF_OPER_TESTING &&
		     oper != RN_IF_OPER_DORMANT;
	return 0;
}

static int link_cb(struct nlmsghdr *h, void *arg)
{
	struct rn_nl_link *l = vec_push(arg);

	if (!l)
		return -ENOMEM;
	return parse_link(h, l);
}

static int real_link_dump(struct rn_nl_link **out, int *n)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };

	return dump(RTM_GETLINK, &ifi, sizeof(ifi), link_cb, sizeof(**out), (void **)out, n);
}

static int link_one_cb(struct nlmsghdr *h, void *arg)
{
	return parse_link(h, arg);
}

static int real_link_get(int ifindex, struct rn_nl_link *out)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct nl_msg *msg = new_msg(RTM_GETLINK, 0, &ifi, sizeof(ifi));

	if (!msg)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	return nl_talk(msg, link_one_cb, out);
}

/* addresses */

static int addr_cb(struct nlmsghdr *h, void *arg)
{
	struct ifaddrmsg *ifa = nlmsg_data(h);
	struct nlattr *tb[IFA_MAX + 1];
	struct rn_nl_addr *a;

	if (h->nlmsg_type != RTM_NEWADDR || nlmsg_parse(h, sizeof(*ifa), tb, IFA_MAX, NULL) < 0)
		return -EIO;
	/* an AF_UNSPEC dump holds every family the kernel has (MCTP, ...): ours only */
	if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6)
		return 0;
	a = vec_push(arg);
	if (!a)
		return -ENOMEM;
	a->ifindex = (int)ifa->ifa_index;
	a->prefixlen = ifa->ifa_prefixlen;
	a->scope = ifa->ifa_scope;
	a->flags = tb[IFA_FLAGS] ? nla_get_u32(tb[IFA_FLAGS]) : ifa->ifa_flags;
	/* IFA_LOCAL is our address; IFA_ADDRESS is the peer's on point-to-point links. */
	get_ip(tb[IFA_LOCAL] ? tb[IFA_LOCAL] : tb[IFA_ADDRESS], ifa->ifa_family, &a->ip);
	return 0;
}

static int real_addr_dump(int family, struct rn_nl_addr **out, int *n)
{
	struct ifaddrmsg ifa = { .ifa_family = (uint8_t)family };

	return dump(RTM_GETADDR, &ifa, sizeof(ifa), addr_cb, sizeof(**out), (void **)out, n);
}

/* rules */

/* Append " KEY A-B" for a port or uid range attribute (one value when A == B: "dport 80"). */
static void more_range(char *buf, size_t len, const char *key, uint32_t a, uint32_t b)
{
	size_t o = strlen(buf);

	if (o >= len)
		return;
	if (a == b)
		snprintf(buf + o, len - o, "%s%s %u", o ? " " : "", key, a);
	else
		snprintf(buf + o, len - o, "%s%s %u-%u", o ? " " : "", key, a, b);
}

/* The selectors beside from/to/iif/oif/fwmark, as words, so that a message can name them. */
static void rule_more(struct nlattr **tb, const struct fib_rule_hdr *frh, char *buf, size_t len)
{
	size_t o;

	buf[0] = '\0';
	if (tb[FRA_UID_RANGE] &&
	    nla_len(tb[FRA_UID_RANGE]) >= (int)sizeof(struct fib_rule_uid_range)) {
		const struct fib_rule_uid_range *u = nla_data(tb[FRA_UID_RANGE]);

		more_range(buf, len, "uidrange", u->start, u->end);
	}
	if (tb[FRA_IP_PROTO] && (o = strlen(buf)) < len)
		snprintf(buf + o, len - o, "%sipproto %u", o ? " " : "",
			 nla_get_u8(tb[FRA_IP_PROTO]));
	if (tb[FRA_SPORT_RANGE] &&
	    nla_len(tb[FRA_SPORT_RANGE]) >= (int)sizeof(struct fib_rule_port_range)) {
		const struct fib_rule_port_range *p = nla_data(tb[FRA_SPORT_RANGE]);

		more_range(buf, len, "sport", p->start, p->end);
	}
	if (tb[FRA_DPORT_RANGE] &&
	    nla_len(tb[FRA_DPORT_RANGE]) >= (int)sizeof(struct fib_rule_port_range)) {
		const struct fib_rule_port_range *p = nla_data(tb[FRA_DPORT_RANGE]);

		more_range(buf, len, "dport", p->start, p->end);
	}
	if (frh->tos && (o = strlen(buf)) < len)
		snprintf(buf + o, len - o, "%stos 0x%x", o ? " " : "", frh->tos);
	if (tb[FRA_L3MDEV] && (o = strlen(buf)) < len)
		snprintf(buf + o, len - o, "%sl3mdev", o ? " " : "");
	if (tb[FRA_TUN_ID] && (o = strlen(buf)) < len)
		snprintf(buf + o, len - o, "%stun_id", o ? " " : "");
}

static int rule_cb(struct nlmsghdr *h, void *arg)
{
	struct fib_rule_hdr *frh = nlmsg_data(h);
	struct nlattr *tb[FRA_MAX + 1];
	struct rn_nl_rule *r;

	if (h->nlmsg_type != RTM_NEWRULE || nlmsg_parse(h, sizeof(*frh), tb, FRA_MAX, NULL) < 0)
		return -EIO;
	/* AF_UNSPEC dumps the multicast routers' rules too (RTNL_FAMILY_IPMR, ...) */
	if (frh->family != AF_INET && frh->family != AF_INET6)
		return 0;
	r = vec_push(arg);
	if (!r)
		return -ENOMEM;
	r->family = frh->family;
	r->action = frh->action;
	r->table = tb[FRA_TABLE] ? nla_get_u32(tb[FRA_TABLE]) : frh->table;
	r->priority = tb[FRA_PRIORITY] ? nla_get_u32(tb[FRA_PRIORITY]) : 0;
	r->src_len = frh->src_len;
	r->dst_len = frh->dst_len;
	get_ip(tb[FRA_SRC], frh->family, &r->src);
	get_ip(tb[FRA_DST], frh->family, &r->dst);
	if (tb[FRA_IFNAME])
		nla_strlcpy(r->iif, tb[FRA_IFNAME], sizeof(r->iif));
	if (tb[FRA_OIFNAME])
		nla_strlcpy(r->oif, tb[FRA_OIFNAME], sizeof(r->oif));
	if (tb[FRA_FWMARK])
		r->fwmark = nla_get_u32(tb[FRA_FWMARK]);
	r->invert = !!(frh->flags & FIB_RULE_INVERT);
	if (tb[FRA_SUPPRESS_PREFIXLEN] && nla_get_u32(tb[FRA_SUPPRESS_PREFIXLEN]) != UINT32_MAX)
		r->suppress = (int)nla_get_u32(tb[FRA_SUPPRESS_PREFIXLEN]) + 1;
	r->opaque = frh->tos || tb[FRA_FWMASK] || tb[FRA_GOTO] || tb[FRA_TUN_ID] ||
		    tb[FRA_L3MDEV] || tb[FRA_UID_RANGE] || tb[FRA_IP_PROTO] ||
		    tb[FRA_SPORT_RANGE] || tb[FRA_DPORT_RANGE] ||
		    (frh->action != FR_ACT_TO_TBL && frh->action != FR_ACT_NOP &&
		     frh->action != FR_ACT_BLACKHOLE && frh->action != FR_ACT_UNREACHABLE &&
		     frh->action != FR_ACT_PROHIBIT) ||
		    (tb[FRA_SUPPRESS_IFGROUP] &&
		     nla_get_u32(tb[FRA_SUPPRESS_IFGROUP]) != UINT32_MAX);
	rule_more(tb, frh, r->more, sizeof(r->more));
	return 0;
}

static int real_rule_dump(int family, struct rn_nl_rule **out, int *n)
{
	struct fib_rule_hdr frh = { .family = (uint8_t)family };

	return dump(RTM_GETRULE, &frh, sizeof(frh), rule_cb, sizeof(**out), (void **)out, n);
}

/* routes */

static int parse_route(struct nlmsghdr *h, struct rn_nl_route *r)
{
	struct rtmsg *rtm = nlmsg_data(h);
	struct nlattr *tb[RTA_MAX + 1];

	if (h->nlmsg_type != RTM_NEWROUTE || nlmsg_parse(h, sizeof(*rtm), tb, RTA_MAX, NULL) < 0)
		return -EIO;
	r->table = tb[RTA_TABLE] ? nla_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
	r->type = rtm->rtm_type;
	r->scope = rtm->rtm_scope;
	r->protocol = rtm->rtm_protocol;
	r->dst_len = rtm->rtm_dst_len;
	get_ip(tb[RTA_DST], rtm->rtm_family, &r->dst);
	r->dst.family = rtm->rtm_family;
	get_ip(tb[RTA_PREFSRC], rtm->rtm_family, &r->prefsrc);
	get_ip(tb[RTA_GATEWAY], rtm->rtm_family, &r->gw);
	if (tb[RTA_OIF])
		r->oif = (int)nla_get_u32(tb[RTA_OIF]);
	if (tb[RTA_PRIORITY])
		r->metric = nla_get_u32(tb[RTA_PRIORITY]);
	r->opaque = rtm->rtm_tos || tb[RTA_NH_ID] || tb[RTA_ENCAP] ||
		    (rtm->rtm_flags & (RTNH_F_DEAD | RTNH_F_LINKDOWN));
	if (!r->oif && tb[RTA_MULTIPATH] &&
	    nla_len(tb[RTA_MULTIPATH]) >= (int)sizeof(struct rtnexthop)) {
		/* First nexthop only: enough to tell which NIC a table points at. */
		struct rtnexthop *nh = nla_data(tb[RTA_MULTIPATH]);

		r->oif = nh->rtnh_ifindex;
	}
	r->nhops = 1;
	if (tb[RTA_MULTIPATH]) {
		struct rtnexthop *nh = nla_data(tb[RTA_MULTIPATH]);
		int left = nla_len(tb[RTA_MULTIPATH]);

		for (r->nhops = 0; RTNH_OK(nh, left); nh = RTNH_NEXT(nh))
			r->nhops++;
	}
	return 0;
}

static int route_cb(struct nlmsghdr *h, void *arg)
{
	struct rtmsg *rtm = nlmsg_data(h);
	struct rn_nl_route *r;

	/* Skip the IPv6 route cache and other clones, and (AF_UNSPEC dump) the multicast
	 * routers' and MPLS tables. */
	if ((rtm->rtm_flags & RTM_F_CLONED) ||
	    (rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6))
		return 0;
	r = vec_push(arg);
	if (!r)
		return -ENOMEM;
	return parse_route(h, r);
}

static int real_route_dump(int family, struct rn_nl_route **out, int *n)
{
	struct rtmsg rtm = { .rtm_family = (uint8_t)family };

	return dump(RTM_GETROUTE, &rtm, sizeof(rtm), route_cb, sizeof(**out), (void **)out, n);
}

struct one_route {
	struct rn_nl_route *r;
	int got;
};

static int route_one_cb(struct nlmsghdr *h, void *arg)
{
	struct one_route *o = arg;

	if (o->got++)
		return 0;
	return parse_route(h, o->r);
}

static int real_route_get(const struct rn_ip *dst, const struct rn_ip *src, int oif,
			  struct rn_nl_route *out)
{
	struct rtmsg rtm = {
		.rtm_family = (uint8_t)dst->family,
		.rtm_dst_len = dst->family == AF_INET ? 32 : 128,
		.rtm_flags = RTM_F_LOOKUP_TABLE,
	};
	struct one_route o = { .r = out };
	struct nl_msg *msg;
	int ret;

	if (dst->family != AF_INET && dst->family != AF_INET6)
		return -EAFNOSUPPORT;
	if (src && src->family) {
		if (src->family != dst->family)
			return -EINVAL;
		rtm.rtm_src_len = rtm.rtm_dst_len;
	}
	msg = new_msg(RTM_GETROUTE, 0, &rtm, sizeof(rtm));
	if (!msg)
		return -ENOMEM;
	ret = put_ip(msg, RTA_DST, dst);
	if (!ret && src && src->family)
		ret = put_ip(msg, RTA_SRC, src);
	if (!ret && oif > 0)
		ret = nla_put_u32(msg, RTA_OIF, (uint32_t)oif) ? -EMSGSIZE : 0;
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	memset(out, 0, sizeof(*out));
	ret = nl_talk(msg, route_one_cb, &o);
	if (!ret && !o.got)
		ret = -ENOENT;
	return ret;
}

/* neighbours */

struct one_neigh {
	struct rn_nl_neigh *nb;
	int ifindex;
	const struct rn_ip *ip;
	int got;
};

static int neigh_cb(struct nlmsghdr *h, void *arg)
{
	struct one_neigh *o = arg;
	struct ndmsg *ndm = nlmsg_data(h);
	struct nlattr *tb[NDA_MAX + 1];
	struct rn_ip ip;

	if (h->nlmsg_type != RTM_NEWNEIGH || nlmsg_parse(h, sizeof(*ndm), tb, NDA_MAX, NULL) < 0)
		return -EIO;
	get_ip(tb[NDA_DST], ndm->ndm_family, &ip);
	/* A dump answers for every entry; keep the one asked for. */
	if (o->got || ndm->ndm_ifindex != o->ifindex || ip.family != o->ip->family ||
	    memcmp(ip.family == AF_INET ? (const void *)&ip.v4 : (const void *)&ip.v6,
		   ip.family == AF_INET ? (const void *)&o->ip->v4 : (const void *)&o->ip->v6,
		   ip.family == AF_INET ? 4 : 16))
		return 0;
	o->got = 1;
	o->nb->ifindex = ndm->ndm_ifindex;
	o->nb->ip = ip;
	o->nb->state = ndm->ndm_state;
	if (tb[NDA_LLADDR] && nla_len(tb[NDA_LLADDR]) == 6) {
		memcpy(o->nb->mac, nla_data(tb[NDA_LLADDR]), 6);
		o->nb->has_mac = 1;
	}
	return 0;
}

static int neigh_dump_cb(struct nlmsghdr *h, void *arg)
{
	struct ndmsg *ndm = nlmsg_data(h);
	struct nlattr *tb[NDA_MAX + 1];
	struct rn_nl_neigh *nb;

	if (h->nlmsg_type != RTM_NEWNEIGH || nlmsg_parse(h, sizeof(*ndm), tb, NDA_MAX, NULL) < 0)
		return -EIO;
	if (ndm->ndm_family != AF_INET && ndm->ndm_family != AF_INET6)
		return 0; /* a bridge's FDB rides the same dump with AF_BRIDGE */
	nb = vec_push(arg);
	if (!nb)
		return -ENOMEM;
	get_ip(tb[NDA_DST], ndm->ndm_family, &nb->ip);
	nb->ifindex = ndm->ndm_ifindex;
	nb->state = ndm->ndm_state;
	if (tb[NDA_LLADDR] && nla_len(tb[NDA_LLADDR]) == 6) {
		memcpy(nb->mac, nla_data(tb[NDA_LLADDR]), 6);
		nb->has_mac = 1;
	}
	return 0;
}

static int real_neigh_dump(int family, struct rn_nl_neigh **out, int *n)
{
	struct ndmsg ndm = { .ndm_family = (uint8_t)family };

	return dump(RTM_GETNEIGH, &ndm, sizeof(ndm), neigh_dump_cb, sizeof(**out), (void **)out, n);
}

static int real_neigh_get(int ifindex, const struct rn_ip *ip, struct rn_nl_neigh *out)
{
	struct ndmsg ndm = { .ndm_family = (uint8_t)ip->family, .ndm_ifindex = ifindex };
	struct one_neigh o = { .nb = out, .ifindex = ifindex, .ip = ip };
	struct nl_msg *msg;
	int ret;

	memset(out, 0, sizeof(*out));
	msg = new_msg(RTM_GETNEIGH, 0, &ndm, sizeof(ndm));
	if (!msg)
		return -ENOMEM;
	ret = put_ip(msg, NDA_DST, ip);
	if (ret) {
		nlmsg_free(msg);
		return ret;
	}
	ret = nl_talk(msg, neigh_cb, &o);
	if (ret == -EINVAL || ret == -EOPNOTSUPP) {
		/* Kernels before 4.20 have no single-entry get: dump and filter. */
		msg = new_msg(RTM_GETNEIGH, NLM_F_DUMP, &ndm, sizeof(ndm));
		if (!msg)
			return -ENOMEM;
		ret = nl_talk(msg, neigh_cb, &o);
	}
	if (!ret && !o.got)
		ret = -ENOENT;
	return ret;
}

static int real_neigh_probe(int ifindex, const struct rn_ip *src, const struct rn_ip *dst)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_storage ss;
	struct msghdr mh;
	struct iovec iov;
	struct cmsghdr *cm;
	char payload = 0;
	int fd, ret = 0;

	memset(&ss, 0, sizeof(ss));
	memset(&ctl, 0, sizeof(ctl));
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = &payload;
	iov.iov_len = 1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_name = &ss;
	mh.msg_control = ctl.buf;
	cm = (struct cmsghdr *)ctl.buf;
	/* IP_PKTINFO pins source and device like SO_BINDTODEVICE, without privilege. */
	if (dst->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		struct in_pktinfo *pi;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(9); /* discard */
		sin->sin_addr = dst->v4;
		mh.msg_namelen = sizeof(*sin);
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(*pi));
		pi = (struct in_pktinfo *)CMSG_DATA(cm);
		pi->ipi_ifindex = ifindex;
		if (src && src->family == AF_INET)
			pi->ipi_spec_dst = src->v4;
		mh.msg_controllen = CMSG_SPACE(sizeof(*pi));
	} else if (dst->family == AF_INET6) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
		struct in6_pktinfo *pi;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(9);
		sin6->sin6_addr = dst->v6;
		mh.msg_namelen = sizeof(*sin6);
		cm->cmsg_level = IPPROTO_IPV6;
		cm->cmsg_type = IPV6_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(*pi));
		pi = (struct in6_pktinfo *)CMSG_DATA(cm);
		pi->ipi6_ifindex = (unsigned int)ifindex;
		if (src && src->family == AF_INET6)
			pi->ipi6_addr = src->v6;
		mh.msg_controllen = CMSG_SPACE(sizeof(*pi));
	} else {
		return -EAFNOSUPPORT;
	}
	fd = socket(dst->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendmsg(fd, &mh, MSG_DONTWAIT) < 0) {
		/* Queued behind an unresolved neighbour or refused by it: ARP went out anyway. */
		if (errno != EAGAIN && errno != EHOSTUNREACH && errno != ECONNREFUSED)
			ret = -errno;
	}
	close(fd);
	return ret;
}

/* ---- DCB (what `dcb pfc show` and `dcb app show` read) ---- */

static int parse_dcb(struct nlmsghdr *h, struct rn_nl_dcb *out)
{
	struct nlattr *tb[DCB_ATTR_MAX + 1], *ieee[DCB_ATTR_IEEE_MAX + 1], *a;
	int rem;

	if (h->nlmsg_type != RTM_GETDCB ||
	    nlmsg_parse(h, sizeof(struct dcbmsg), tb, DCB_ATTR_MAX, NULL) < 0)
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	if (!tb[DCB_ATTR_IEEE])
		return 0;
	if (nla_parse_nested(ieee, DCB_ATTR_IEEE_MAX, tb[DCB_ATTR_IEEE], NULL) < 0)
		return -EBADMSG;
	if (ieee[DCB_ATTR_IEEE_PFC] && nla_len(ieee[DCB_ATTR_IEEE_PFC]) >= 2) {
		const struct ieee_pfc *pfc = nla_data(ieee[DCB_ATTR_IEEE_PFC]);

		out->has_pfc = 1;
		out->pfc_cap = pfc->pfc_cap;
		out->pfc_en = pfc->pfc_en;
	}
	if (!ieee[DCB_ATTR_IEEE_APP_TABLE])
		return 0;
	nla_for_each_nested(a, ieee[DCB_ATTR_IEEE_APP_TABLE], rem)
	{
		const struct dcb_app *app;

		if (nla_type(a) != DCB_ATTR_IEEE_APP || nla_len(a) < (int)sizeof(*app))
			continue;
		if (out->napp >= RN_DCB_APP_MAX)
			break;
		app = nla_data(a);
		out->app[out->napp].selector = app->selector;
		out->app[out->napp].prio = app->priority;
		out->app[out->napp].protocol = app->protocol;
		out->napp++;
	}
	return 0;
}

int rn_nl_dcb_parse(const void *msg, size_t len, struct rn_nl_dcb *out)
{
	const struct nlmsghdr *h = msg;

	if (len < sizeof(*h) || h->nlmsg_len > len || h->nlmsg_len < NLMSG_HDRLEN + 4)
		return -EBADMSG;
	return parse_dcb((struct nlmsghdr *)h, out);
}

static int dcb_cb(struct nlmsghdr *h, void *arg)
{
	return parse_dcb(h, arg);
}

static int real_dcb_get(const char *ifname, struct rn_nl_dcb *out)
{
	struct dcbmsg d = { .dcb_family = AF_UNSPEC, .cmd = DCB_CMD_IEEE_GET };
	struct nl_msg *msg = new_msg(RTM_GETDCB, 0, &d, sizeof(d));
	int ret;

	if (!msg)
		return -ENOMEM;
	if (nla_put_string(msg, DCB_ATTR_IFNAME, ifname) < 0) {
		nlmsg_free(msg);
		return -EMSGSIZE;
	}
	memset(out, 0, sizeof(*out));
	ret = nl_talk(msg, dcb_cb, out);
	/* no dcbnl_ops on the netdev: the kernel says EOPNOTSUPP (rxe, virtio, veth) */
	return ret == -EINVAL || ret == -ENODATA ? -EOPNOTSUPP : ret;
}

const struct rn_nl_ops rn_nl_real_ops = {
	.link_dump = real_link_dump,
	.addr_dump = real_addr_dump,
	.rule_dump = real_rule_dump,
	.route_dump = real_route_dump,
	.route_get = real_route_get,
	.neigh_dump = real_neigh_dump,
	.neigh_get = real_neigh_get,
	.neigh_probe = real_neigh_probe,
	.link_get = real_link_get,
	.arp_probe = rn_arp_probe_real,
	.dcb_get = real_dcb_get,
};

struct rn_nl_ops rn_nl = {
	.link_dump = real_link_dump,
	.addr_dump = real_addr_dump,
	.rule_dump = real_rule_dump,
	.route_dump = real_route_dump,
	.route_get = real_route_get,
	.neigh_dump = real_neigh_dump,
	.neigh_get = real_neigh_get,
	.neigh_probe = real_neigh_probe,
	.link_get = real_link_get,
	.arp_probe = rn_arp_probe_real,
	.dcb_get = real_dcb_get,
};

void rn_nl_set_ops(const struct rn_nl_ops *ops)
{
	if (ops->link_dump)
		rn_nl.link_dump = ops->link_dump;
	if (ops->addr_dump)
		rn_nl.addr_dump = ops->addr_dump;
	if (ops->rule_dump)
		rn_nl.rule_dump = ops->rule_dump;
	if (ops->route_dump)
		rn_nl.route_dump = ops->route_dump;
	if (ops->route_get)
		rn_nl.route_get = ops->route_get;
	if (ops->neigh_dump)
		rn_nl.neigh_dump = ops->neigh_dump;
	if (ops->neigh_get)
		rn_nl.neigh_get = ops->neigh_get;
	if (ops->neigh_probe)
		rn_nl.neigh_probe = ops->neigh_probe;
	if (ops->link_get)
		rn_nl.link_get = ops->link_get;
	if (ops->arp_probe)
		rn_nl.arp_probe = ops->arp_probe;
	if (ops->dcb_get)
		rn_nl.dcb_get = ops->dcb_get;
}

/* What reset restores: the real table, or the unit tests' all-failing one. */
static const struct rn_nl_ops *nl_base = &rn_nl_real_ops;

void rn_nl_set_base(const struct rn_nl_ops *ops)
{
	nl_base = ops ? ops : &rn_nl_real_ops;
	rn_nl = *nl_base;
}

void rn_nl_reset_ops(void)
{
	rn_nl = *nl_base;
}
