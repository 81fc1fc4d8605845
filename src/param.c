// SPDX-License-Identifier: MIT
/*
 * The table of environment knobs. One row per variable: its type, its default
 * (NCCL's, for the NCCL_* ones), the range it accepts and a line of help.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "rn_compiler.h"
#include "rn_host.h"
#include "rn_log.h"
#include "rn_param.h"

enum kind { K_INT, K_STR, K_ENUM };

struct enum_name {
	const char *name;
	int value;
};

static const struct enum_name family_names[] = {
	{ "AF_INET", AF_INET },
	{ "AF_INET6", AF_INET6 },
	{ NULL, 0 },
};

static const struct enum_name route_check_names[] = {
	{ "strict", RN_ROUTE_CHECK_STRICT },
	{ "warn", RN_ROUTE_CHECK_WARN },
	{ "off", RN_ROUTE_CHECK_OFF },
	{ NULL, 0 },
};

/* A string's syntax check: 0 when @v is good, else -EINVAL. */
typedef int (*str_check_fn)(const char *v);

struct param {
	struct rn_param_desc d;
	enum kind kind;
	size_t off;
	int def;                       /* K_INT, K_ENUM */
	int min, max;                  /* K_INT */
	const struct enum_name *names; /* K_ENUM */
	size_t size;                   /* K_STR: the field's size */
	str_check_fn check;            /* K_STR: NULL = anything */
	const char *accepts;           /* K_STR: what the WARN says it takes */
};

#define FIELD_SIZE(f) sizeof(((struct rn_config *)0)->f)
#define P_INT(n, f, dv, lo, hi, h) \
	{ { n, #dv, h }, K_INT, offsetof(struct rn_config, f), dv, lo, hi, NULL, 0, NULL, NULL }
#define P_STR(n, f, h, chk, acc) \
	{ \
		{ n, "", h }, K_STR, offsetof(struct rn_config, f), 0, 0, 0, NULL, FIELD_SIZE(f), \
		chk,          acc \
	}
#define P_ENUM(n, f, dv, dn, tbl, h) \
	{ { n, dn, h }, K_ENUM, offsetof(struct rn_config, f), dv, 0, 0, tbl, 0, NULL, NULL }

static int all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0 && n < 6;
}

/*
 * One NCCL_IB_HCA entry, name[:port[:rail[:plane]]] (@len bytes at @v, no ','): the name
 * given and under 64 characters, at most three fields, each empty or a number.
 */
static int hca_entry_ok(const char *v, size_t len)
{
	size_t nl = RN_MIN(strcspn(v, ":"), len);
	const char *f = v + nl;
	int nfield = 0;

	if (!nl || nl >= 64)
		return 0; /* fields without a name, or an impossible device name */
	/* the list's own prefixes: only at its head (formatted first, they would change the
	 * meaning of the whole list) */
	if (*v == '^' || *v == '=')
		return 0;
	while (f < v + len) { /* at ':' */
		size_t fl = RN_MIN(strcspn(f + 1, ":"), (size_t)(v + len - f - 1));

		if (++nfield > 3 || (fl && !all_digits(f + 1, fl)))
			return 0;
		f += 1 + fl;
	}
	return 1;
}

/* The filter that matches no device: what a list that cannot be read stands for. */
#define HCA_NONE "(none)"

/* Up to this many bad entries are named in the WARN, each cut at 64 characters. */
#define HCA_BAD_NAMED 4

/*
 * NCCL_IB_HCA, read entry by entry as NCCL does: an entry that does not parse is left
 * out alone (one WARN naming it) and the others apply. Where that could select a NIC
 * the user did not ask for, nothing is selected instead: an exclusion list with an
 * entry that cannot be read (it might have named a NIC to keep out), one longer than
 * the field (its tail would be lost), or an inclusion list with no good entry left.
 * Never every NIC by accident. 0, or -EINVAL after the WARN (the entries kept in @out).
 */
static int load_hca(char *out, size_t size, const char *v)
{
	const char *list = v, *e;
	char bad[HCA_BAD_NAMED * 72] = "";
	size_t used, total = strlen(v);
	int exclude = 0, nbad = 0, ngood = 0, cut = 0;

	if (*list == '^')
		exclude = 1, list++;
	if (*list == '=')
		list++;
	used = (size_t)(list - v);
	if (total < size)
		memcpy(out, v, used);
	for (e = list; total < size && *e;) {
		size_t len = strcspn(e, ",");

		if (!len) {
			/* an empty entry (",,", a trailing ','): nothing to match, as NCCL */
		} else if (hca_entry_ok(e, len)) {
			memcpy(out + used, e, len);
			used += len;
			out[used++] = ',';
			ngood++;
		} else if (nbad++ < HCA_BAD_NAMED) {
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s'%.*s%s'",
				 nbad > 1 ? ", " : "", (int)RN_MIN(len, (size_t)64), e,
				 len > 64 ? "..." : "");
		}
		e += len;
		if (*e == ',')
			e++;
	}
	if (total >= size) {
		/* too long to hold: an inclusion list keeps the whole entries that fit */
		cut = 1;
		if (!exclude) {
			memcpy(out, v, used);
			for (e = list; *e;) {
				size_t len = strcspn(e, ",");

				if (used + len + 1 >= size)
					break;
				if (len && hca_entry_ok(e, len)) {
					memcpy(out + used, e, len);
					used += len;
					out[used++] = ',';
					ngood++;
				}
				e += len;
				if (*e == ',')
					e++;
			}
		}
	}
	if (!nbad && !cut) {
		strcpy(out, v); /* as given, every entry good */
		return 0;
	}
	if (used && out[used - 1] == ',')
		used--;
	out[used] = '\0';
	if (exclude || !ngood) {
		snprintf(out, size, "%s", HCA_NONE);
		if (cut)
			rn_warn(RN_SUB_ENV | RN_SUB_INIT,
				RN_PFX "NCCL_IB_HCA is longer than %zu characters%s: it cannot be "
				       "read whole, so no NIC is selected (set a shorter list: a "
				       "prefix such as %smlx5_1 covers mlx5_1, mlx5_10...)",
				size - 1, exclude ? " (an exclusion list)" : "",
				exclude ? "^" : "");
		else
			rn_warn(RN_SUB_ENV | RN_SUB_INIT,
				RN_PFX "NCCL_IB_HCA: %s %s%s %s not valid (it takes "
				       "[^][=]name[:port[:rail[:plane]]],... with numeric port, "
				       "rail and plane); %s, so no NIC is selected",
				nbad == 1 ? "entry" : "entries", bad,
				nbad > HCA_BAD_NAMED ? " and more" : "", nbad == 1 ? "is" : "are",
				exclude ?
					"an exclusion list that cannot be read might let an excluded "
					"NIC in" :
					"no valid entry is left");
		return -EINVAL;
	}
	if (cut)
		rn_warn(RN_SUB_ENV | RN_SUB_INIT,
			RN_PFX "NCCL_IB_HCA is longer than %zu characters: "
			       "using the %d entries that fit, ignoring the rest",
			size - 1, ngood);
	else
		rn_warn(RN_SUB_ENV | RN_SUB_INIT,
			RN_PFX "NCCL_IB_HCA: ignoring %s %s%s (not name[:port[:rail[:plane]]] "
			       "with numeric port, rail and plane); using the other %d",
			nbad == 1 ? "entry" : "entries", bad,
			nbad > HCA_BAD_NAMED ? " and more" : "", ngood);
	return -EINVAL;
}

static int check_cidr(const char *v)
{
	struct rn_ip net;
	int len;

	return rn_cidr_parse(v, &net, &len);
}

/* The @i-th comma-separated entry of @list into @buf. 0, -ENOENT, -EINVAL (too long). */
static int entry_at(const char *list, int i, char *buf, size_t size)
{
	const char *e = list;
	size_t n;

	for (; i > 0 && e; i--) {
		e = strchr(e, ',');
		if (e)
			e++;
	}
	if (!e || !*e)
		return -ENOENT;
	n = strcspn(e, ",");
	if (n >= size)
		return -EINVAL;
	memcpy(buf, e, n);
	buf[n] = '\0';
	return 0;
}

int rn_cfg_cidr_at(const char *list, int i, struct rn_ip *net, int *len)
{
	char b[INET6_ADDRSTRLEN + 8];
	int ret = entry_at(list, i, b, sizeof(b));

	return ret ? ret : rn_cidr_parse(b, net, len);
}

int rn_cfg_gateway_at(const char *list, int i, char *dev, size_t len, struct rn_ip *gw)
{
	char b[IF_NAMESIZE + INET6_ADDRSTRLEN + 2], *eq;
	int ret = entry_at(list, i, b, sizeof(b));

	if (ret)
		return ret;
	eq = strchr(b, '=');
	if (eq && (eq == b || eq - b >= IF_NAMESIZE || (size_t)(eq - b) >= len))
		return -EINVAL;
	if (rn_ip_parse(eq ? eq + 1 : b, gw))
		return -EINVAL;
	if (eq)
		*eq = '\0';
	snprintf(dev, len, "%s", eq ? b : "");
	return 0;
}

int rn_cfg_gateway(const char *list, const char *netdev, int family, struct rn_ip *gw)
{
	char dev[IF_NAMESIZE];
	struct rn_ip any = { 0 }, ip;
	int i, ret;

	for (i = 0; (ret = rn_cfg_gateway_at(list, i, dev, sizeof(dev), &ip)) != -ENOENT; i++) {
		if (ret || ip.family != family)
			continue;
		if (!dev[0] && !any.family)
			any = ip;
		else if (dev[0] && !strcmp(dev, netdev)) {
			*gw = ip;
			return 0;
		}
	}
	if (!any.family)
		return -ENOENT;
	*gw = any;
	return 0;
}

static int check_cidrs(const char *v)
{
	struct rn_ip net;
	int i, len, ret;

	for (i = 0; (ret = rn_cfg_cidr_at(v, i, &net, &len)) != -ENOENT; i++)
		if (ret)
			return ret;
	return 0;
}

static int check_gateways(const char *v)
{
	char dev[IF_NAMESIZE];
	struct rn_ip ip;
	int i, ret;

	for (i = 0; (ret = rn_cfg_gateway_at(v, i, dev, sizeof(dev), &ip)) != -ENOENT; i++)
		if (ret)
			return ret;
	return 0;
}

static const struct param params[] = {
	/* read entry by entry: load_hca */
	P_STR("NCCL_IB_HCA", ib_hca,
	      "devices to use: [^][=]name[:port[:rail[:plane]]],... (prefix match unless '=', "
	      "'^' excludes)",
	      NULL, NULL),
	P_INT("NCCL_IB_GID_INDEX", gid_index, -1, -1, 65535,
	      "force a GID index (-1: choose from the policy routing)"),
	P_ENUM("NCCL_IB_ADDR_FAMILY", addr_family, AF_INET, "AF_INET", family_names,
	       "address family of the GID: AF_INET or AF_INET6"),
	P_STR("NCCL_IB_ADDR_RANGE", addr_range, "only GIDs whose address is in this CIDR",
	      check_cidr, "an address/prefix such as 198.18.0.0/15 or fd00::/64"),
	P_INT("NCCL_IB_ROCE_VERSION_NUM", roce_version, 2, 1, 2, "RoCE version of the GID"),
	P_INT("NCCL_IB_TC", tc, -1, -1, 255, "traffic class (-1: the communicator's, else 0)"),
	P_INT("NCCL_IB_FIFO_TC", fifo_tc, -1, -1, 255, "traffic class of CTS writes (-1: TC)"),
	P_INT("NCCL_GIN_IB_TC", gin_tc, -1, -1, 255,
	      "traffic class of the RMA backend's QPs (-1: NCCL_IB_TC, else the communicator's)"),
	/* NCCL's own: read to say when its device-API traffic would not come through us */
	P_STR("NCCL_RMA_PLUGIN", rma_plugin,
	      "NCCL's RMA backend list; one that is not this plugin takes NCCL 2.30's one-sided "
	      "traffic (warned at init)",
	      NULL, NULL),
	P_INT("NCCL_GIN_TYPE", gin_type, -1, -1, 3,
	      "NCCL's GIN backend: 2 proxy (over this plugin's RMA), 3 GDAKI (mlx5, NCCL's own)"),
	P_INT("NCCL_GIN_ENABLE", gin_enable, 1, 0, 1, "NCCL's device-API networking on or off"),
	P_INT("NCCL_IB_SL", sl, -1, -1, 15,
	      "service level (-1: the communicator's traffic class, else 0)"),
	P_INT("NCCL_IB_TIMEOUT", timeout, 20, 1, 31, "QP ack timeout, 4.096 us * 2^t"),
	P_INT("NCCL_IB_RETRY_CNT", retry_cnt, 7, 0, 7, "QP retry count"),
	P_INT("NCCL_IB_QPS_PER_CONNECTION", qps_per_conn, 1, 1, 128, "data QPs per connection"),
	P_INT("NCCL_IB_SPLIT_DATA_ON_QPS", split_data_on_qps, 0, 0, 1,
	      "1: split every message over the QPs; 0: one QP per message, round robin"),
	P_INT("NCCL_IB_PCI_RELAXED_ORDERING", pci_relaxed_ordering, 2, 0, 2,
	      "relaxed ordering on MRs: 0 off, 1 on, 2 when supported"),
	P_INT("NCCL_GDR_FLUSH_DISABLE", gdr_flush_disable, 0, 0, 1, "1: never flush GPU receives"),
	P_INT("NCCL_NET_FORCE_FLUSH", force_flush, 0, 0, 1, "1: report forceFlush"),
	P_STR("NCCL_SOCKET_IFNAME", socket_ifname,
	      "interface for the TCP handshake (default: the RoCE NIC's own IP)", NULL, NULL),
	P_ENUM("NCCL_ROCE_ROUTE_CHECK", route_check, RN_ROUTE_CHECK_STRICT, "strict",
	       route_check_names, "strict: refuse asymmetric paths; warn: log and go on; off"),
	P_INT("NCCL_ROCE_NEIGH_TIMEOUT_MS", neigh_timeout_ms, 1000, 10, 60000,
	      "how long a connection waits for ARP to resolve the peer"),
	P_INT("NCCL_ROCE_CONNECT_TIMEOUT_MS", connect_timeout_ms, 30000, 100, 3600000,
	      "how long the peer's HELLO may take from its first byte"),
	P_INT("NCCL_IB_DISABLE", ib_disable, 0, 0, 1, "1: offer no device, as NCCL's IB transport"),
	P_INT("NCCL_IB_MQP_RETRY_ALL", mqp_retry_all, 0, 0, 1,
	      "1: retry a failed QP state change on any error, not only ETIMEDOUT"),
	P_INT("NCCL_IB_MQP_RETRY_CNT", mqp_retry_cnt, 34, 0, 1000,
	      "retries of a QP state change that timed out"),
	P_INT("NCCL_IB_MQP_RETRY_SLEEP_MSEC", mqp_retry_sleep_ms, 100, 0, 60000,
	      "backoff step between those retries (the n-th waits n times this)"),
	P_INT("NCCL_IB_MERGE_VFS", merge_vfs, 1, 0, 1,
	      "1: report a virtual function at its NIC's PCI device, as another port"),
	P_INT("NCCL_IB_MERGE_NICS", merge_nics, 1, 0, 1,
	      "1: NIC fusion (makeVDevice) allowed; 0: makeVDevice refuses (ncclInvalidUsage)"),
	P_INT("NCCL_ROCE_FAILOVER", failover, 1, 0, 1,
	      "1: a comm whose NIC fails moves to a sibling NIC pair; 0: it fails"),
	P_INT("NCCL_ROCE_FAILOVER_SPARES", failover_spares, 2, 0, RN_SPARES_MAX,
	      "sibling NIC pairs each comm keeps connected for a move (0: none)"),
	/* NCCL's own (2.29.7+): read where it means the same, an explicit 0 turns ours off */
	P_INT("NCCL_IB_RESILIENCY_PORT_FAILOVER", ib_port_failover, -1, -1, 1,
	      "NCCL's port failover; 0 turns NCCL_ROCE_FAILOVER off unless that is set"),
	P_INT("NCCL_ROCE_RECOVERY", recovery, 1, 0, 1,
	      "1: a failed NIC pair comes back into service (its GID found again, the path "
	      "checked) and comms move back to their own NIC; 0: it stays out"),
	P_INT("NCCL_ROCE_RECOVERY_DELAY_MS", recovery_delay_ms, 1000, 0, 3600000,
	      "how long a failed NIC must stay up before its pairs are brought back"),
	P_INT("NCCL_ROCE_FLAP_MAX", flap_max, 3, 0, 15,
	      "a NIC whose link went down more often than this within NCCL_ROCE_FLAP_WINDOW_S "
	      "is not brought back by recovery (0: no limit)"),
	P_INT("NCCL_ROCE_FLAP_WINDOW_S", flap_window_s, 600, 1, 86400,
	      "the window of NCCL_ROCE_FLAP_MAX, in seconds"),
	P_INT("NCCL_IB_RESILIENCY_PORT_RECOVERY", ib_port_recovery, -1, -1, 1,
	      "NCCL's port recovery; 0 turns NCCL_ROCE_RECOVERY off unless that is set"),
	/* an L3 fabric: what the host alone cannot tell (roce-doctor --peer-subnet, --gateway) */
	P_STR("NCCL_ROCE_PEER_SUBNETS", peer_subnets,
	      "subnets (or addresses) of peers behind a router: each NIC's route to them is "
	      "judged",
	      check_cidrs, "a comma list of address/prefix such as 198.19.0.0/24"),
	P_STR("NCCL_ROCE_GATEWAYS", gateways,
	      "a NIC's gateway where no route names one: GW for every NIC, NETDEV=GW for one",
	      check_gateways, "a comma list of GW or NETDEV=GW such as ens1f0np0=198.18.0.1"),
};

const struct rn_param_desc *rn_param_table(size_t *n)
{
	static struct rn_param_desc descs[RN_ARRAY_SIZE(params)];
	size_t i;

	for (i = 0; i < RN_ARRAY_SIZE(params); i++)
		descs[i] = params[i].d;
	*n = RN_ARRAY_SIZE(params);
	return descs;
}

static int *int_field(struct rn_config *cfg, const struct param *p)
{
	return (int *)((char *)cfg + p->off);
}

static char *str_field(struct rn_config *cfg, const struct param *p)
{
	return (char *)cfg + p->off;
}

void rn_config_defaults(struct rn_config *cfg)
{
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < RN_ARRAY_SIZE(params); i++)
		if (params[i].kind != K_STR)
			*int_field(cfg, &params[i]) = params[i].def;
}

static int parse_int(const char *v, int *out)
{
	char *end;
	long l;

	errno = 0;
	l = strtol(v, &end, 0);
	while (*end == ' ' || *end == '\t')
		end++;
	if (errno || end == v || *end || l < INT_MIN || l > INT_MAX)
		return -EINVAL;
	*out = (int)l;
	return 0;
}

static int load_one(struct rn_config *cfg, const struct param *p, const char *v)
{
	const struct enum_name *e;
	int x;

	switch (p->kind) {
	case K_STR:
		if (p->off == offsetof(struct rn_config, ib_hca))
			return load_hca(str_field(cfg, p), p->size, v);
		if (strlen(v) >= p->size) {
			rn_warn(RN_SUB_ENV,
				RN_PFX "%s is longer than %zu characters: it takes %s; "
				       "using the default (unset)",
				p->d.name, p->size - 1,
				p->accepts ? p->accepts : "a shorter value");
			return -EINVAL;
		}
		if (p->check && p->check(v)) {
			rn_warn(RN_SUB_ENV,
				RN_PFX "%s='%s' is not valid: it takes %s; using the "
				       "default (unset)",
				p->d.name, v, p->accepts);
			return -EINVAL;
		}
		strcpy(str_field(cfg, p), v);
		return 0;
	case K_INT:
		if (parse_int(v, &x) || x < p->min || x > p->max) {
			rn_warn(RN_SUB_ENV,
				RN_PFX "%s='%s' is not valid: it takes an integer from %d to %d; "
				       "using the default %d",
				p->d.name, v, p->min, p->max, p->def);
			return -EINVAL;
		}
		*int_field(cfg, p) = x;
		return 0;
	case K_ENUM:
		for (e = p->names; e->name; e++)
			if (!strcasecmp(v, e->name)) {
				*int_field(cfg, p) = e->value;
				return 0;
			}
		{
			char accepted[128] = "";

			for (e = p->names; e->name; e++) {
				strncat(accepted, e->name, sizeof(accepted) - strlen(accepted) - 1);
				if (e[1].name)
					strncat(accepted, ", ",
						sizeof(accepted) - strlen(accepted) - 1);
			}
			rn_warn(RN_SUB_ENV,
				RN_PFX "%s='%s' is not valid: it takes one of %s; using the "
				       "default %s",
				p->d.name, v, accepted, p->d.def);
		}
		return -EINVAL;
	}
	return -EINVAL;
}

int rn_config_load(struct rn_config *cfg)
{
	int bad = 0;
	size_t i;

	rn_config_defaults(cfg);
	for (i = 0; i < RN_ARRAY_SIZE(params); i++) {
		const char *v = getenv(params[i].d.name);

		/* An empty value means unset, as in NCCL's own parameter code. */
		if (v && *v && load_one(cfg, &params[i], v))
			bad++;
	}
	/* NCCL's knob says the same only when the user said nothing of ours */
	if (cfg->ib_port_failover == 0 &&
	    !(getenv("NCCL_ROCE_FAILOVER") && *getenv("NCCL_ROCE_FAILOVER")))
		cfg->failover = 0;
	if (cfg->ib_port_recovery == 0 &&
	    !(getenv("NCCL_ROCE_RECOVERY") && *getenv("NCCL_ROCE_RECOVERY")))
		cfg->recovery = 0;
	if (cfg->addr_range[0]) {
		struct rn_ip net;
		int len;

		/* a range of the other family would refuse every GID: the pair is the bad value */
		if (!rn_cidr_parse(cfg->addr_range, &net, &len) && net.family != cfg->addr_family) {
			rn_warn(RN_SUB_ENV,
				RN_PFX "NCCL_IB_ADDR_RANGE='%s' is not valid with "
				       "NCCL_IB_ADDR_FAMILY=%s: it takes a range of that family; "
				       "using the default (unset)",
				cfg->addr_range,
				cfg->addr_family == AF_INET6 ? "AF_INET6" : "AF_INET");
			cfg->addr_range[0] = '\0';
			bad++;
		}
	}
	return bad;
}

int rn_config_format(const struct rn_config *cfg, char *buf, size_t len)
{
	size_t used = 0, i;

	buf[0] = '\0';
	for (i = 0; i < RN_ARRAY_SIZE(params); i++) {
		const struct param *p = &params[i];
		const struct enum_name *e;
		char val[RN_HCA_STR_MAX + 16];
		int x;

		switch (p->kind) {
		case K_STR:
			snprintf(val, sizeof(val), "%s", (const char *)cfg + p->off);
			if (!val[0])
				continue; /* unset strings say nothing */
			break;
		case K_INT:
			snprintf(val, sizeof(val), "%d",
				 *(const int *)((const char *)cfg + p->off));
			break;
		case K_ENUM:
			x = *(const int *)((const char *)cfg + p->off);
			snprintf(val, sizeof(val), "%d", x);
			for (e = p->names; e->name; e++)
				if (e->value == x)
					snprintf(val, sizeof(val), "%s", e->name);
			break;
		}
		used += (size_t)snprintf(buf + RN_MIN(used, len - 1), len - RN_MIN(used, len - 1),
					 "%s%s=%s", used ? " " : "", p->d.name + 5, val);
	}
	return used >= len ? -ENOSPC : 0;
}

void rn_config_log(const struct rn_config *cfg)
{
	char buf[RN_HCA_STR_MAX + 2048];

	rn_config_format(cfg, buf, sizeof(buf));
	rn_info(RN_SUB_INIT | RN_SUB_ENV, RN_PFX "config %s", buf);
}
