/* SPDX-License-Identifier: MIT */
/*
 * Route awareness: the one implementation shared by the plugin and roce-doctor.
 *
 *   host facts   one snapshot per init (links, addresses, rules, routes, sysctls)
 *   NIC verdict  GID + source IP chosen from the policy tables; ARP/route symmetry
 *   conn verdict route to the peer egresses our NIC; neighbour holds the peer's MAC
 *   diagnosis    re-run the checks for a peer after a completion error
 *
 * Every problem is an rn_finding whose cause id comes from the verdict catalogue
 * (rn_verdict.h): tests assert on ids, never on wording.
 */
#ifndef RN_PATH_H
#define RN_PATH_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "rn_ip.h"
#include "rn_nl.h"
#include "rn_param.h"
#include "rn_verdict.h"

/* Why a NIC's GID (its source IP) was chosen. */
enum rn_gid_why {
	RN_GID_WHY_NONE = 0, /* no usable GID */
	RN_GID_WHY_POLICY,   /* the address a 'from' rule gives a table routing out of the NIC */
	RN_GID_WHY_PRIMARY,  /* the netdev's primary address (no policy source) */
	RN_GID_WHY_FIRST,    /* the first usable GID (no primary address matched) */
	RN_GID_WHY_FORCED,   /* NCCL_IB_GID_INDEX */
};
/* "none", "policy", "primary", "first", "forced". */
const char *rn_gid_why_str(enum rn_gid_why why);

/*
 * One RoCE NIC (an RDMA device port bound to a netdev). dev.c fills the identity
 * part; rn_nic_assess() fills the choice and the verdict.
 */
/*
 * The route lookups a NIC's verdict judged: for rn_route_probe_dst (a would-be peer in the
 * subnet) from the NIC's IP, as rn_host_route_get answered them. Kept so that a tool shows
 * the answer judged (the doctor's ROUTE column), not one asked again later.
 */
struct rn_route_answer {
	struct rn_ip dst;             /* family 0: not asked (no IP or no room in the subnet) */
	int err, oif_err;             /* 0 or -errno of each lookup */
	struct rn_nl_route route;     /* IPv4 without oif (as TCP and ARP), IPv6 with (the QP's) */
	struct rn_nl_route route_oif; /* with oif = the NIC's netdev */
};

struct rn_nic {
	/* identity */
	char ibdev[64];
	int port;
	char netdev[IF_NAMESIZE]; /* the port's, or the VLAN on it whose GID it uses */
	/* the port's own netdev where it is in another network namespace (seen from a pod) */
	char port_netdev[IF_NAMESIZE];
	int ifindex;
	uint8_t mac[6];
	int link_up;
	int mtu;                 /* netdev MTU */
	enum ibv_mtu active_mtu; /* port's active MTU */
	/* choice */
	int gid_index;           /* -1 when none usable */
	enum rn_gid_why gid_why; /* how gid_index was chosen */
	union ibv_gid gid;
	int gid_type;            /* enum ibv_gid_type of gid_index (rn_gid_refresh follows it) */
	struct rn_ip ip;         /* the GID's address = our source IP */
	int prefixlen;
	int table;               /* policy table that routes @ip; 254 (main) when none */
	/* its gateway (a route's, NCCL_ROCE_GATEWAYS, a /31's other end); family 0: none known.
	 * The connection check's fix for a routed peer names it. */
	struct rn_ip gw;
	/*
	 * Peers outside the subnet left unjudged: nothing on the host says the fabric is routed
	 * (no gateway route out of the NIC, no /31 or /30, no NCCL_ROCE_GATEWAYS or
	 * NCCL_ROCE_PEER_SUBNETS), and a flat fabric looks the same. A tool says so rather than
	 * "all good" alone. @offnet_oif: where TCP from @ip to such a peer would leave (0: no
	 * route reaches it). The connection check judges a real peer's address whatever it is.
	 */
	int offnet_unjudged;
	int offnet_oif;
	/* verdict */
	struct rn_route_answer route; /* the route lookups judged (rn_route_assess) */
	enum rn_verdict_kind verdict;
	int nfindings;
	int findings_cap;
	struct rn_finding *findings; /* owned: rn_nic_cleanup() releases them */
};

/*
 * Release @nic's findings (an rn_nic is zeroed or filled by dev.c/rn_nic_from_netdev
 * before use). The identity stays; the NIC can be assessed again.
 */
void rn_nic_cleanup(struct rn_nic *nic);
/* Deep copy of @src into @dst (whose findings are released first). 0 or -ENOMEM. */
int rn_nic_copy(struct rn_nic *dst, const struct rn_nic *src);
/*
 * In rdma's shared netns mode a pod that has RDMA devices of its own (rdma link add in
 * the pod, a VF's) also sees the node's devices, reached through its own interfaces'
 * GIDs (@nics[i]->port_netdev set). Returns the index of the device of @nics[i]'s
 * interface's own (same ifindex, no port_netdev), or -1: none, or @nics[i] is one.
 */
int rn_nic_own_device(const struct rn_nic *const *nics, int n, int i);

struct rn_host; /* opaque snapshot of host facts */

/*
 * Read links, addresses, rules, routes and sysctls once (through the netlink and
 * sys ops tables). @out is freed with rn_host_free().
 */
int rn_host_snapshot(struct rn_host **out);
void rn_host_free(struct rn_host *host);
/*
 * Say that link @ifindex (named @name: an ifindex read in another namespace's /sys is
 * ignored) is one of the RoCE NICs about to be assessed: the checks that compare the
 * host's RoCE NICs (MTU) take it in, whatever its subnet (rails).
 */
void rn_host_mark_roce(struct rn_host *host, int ifindex, const char *name);

/*
 * Choose the GID and source IP of @nic (identity filled in) from its GID table
 * (read through rn_verbs with @ctx; @ctx may be NULL for a netdev-only check as the
 * doctor's --netdev does) and judge it. Fills choice + verdict. Returns 0 (the
 * verdict says how it went) or -errno when the facts could not be read.
 */
int rn_nic_assess(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		  const struct rn_config *cfg);

/*
 * Log @nic: one INFO line (GID index, IP, table, verdict) and, per finding, a WARN
 * with the message and one per fix command (rn_finding_log: never cut).
 */
void rn_nic_log(const struct rn_nic *nic);

/*
 * The host snapshot and the NIC assessment as the engine's init calls them (engine.c): the
 * real ones above, unless a unit test of the engine or the plugin scripts each NIC's
 * verdict instead (it installs its own table before main: test/unit/double_path.c).
 */
struct rn_assess_ops {
	int (*snapshot)(struct rn_host **out);
	void (*free)(struct rn_host *host);
	int (*assess)(struct rn_host *host, struct ibv_context *ctx, struct rn_nic *nic,
		      const struct rn_config *cfg);
	void (*log)(const struct rn_nic *nic);
	void (*mark_roce)(struct rn_host *host, int ifindex, const char *name); /* NULL: none */
};
extern struct rn_assess_ops rn_assess;

/*
 * What each side of a connection tells the other (the handshake carries it; the
 * wire encoding belongs to the handshake, not here).
 */
struct rn_peer_facts {
	char host[64];
	char netdev[IF_NAMESIZE];
	uint8_t mac[6];
	union ibv_gid gid;
	struct rn_ip ip;
	int mtu;                /* netdev MTU */
	enum ibv_mtu active_mtu;
	uint16_t verdict_cause; /* RN_CAUSE_NONE when the sender's own check passed */
};

/* Fill what we advertise for @nic. */
void rn_peer_facts_from_nic(const struct rn_nic *nic, struct rn_peer_facts *out);

/*
 * Per-connection verdict as a non-blocking state machine: never blocks NCCL's
 * progress thread (neighbour resolution is asked of the kernel and polled).
 *   rn_conn_check_start()  0 or -errno
 *   rn_conn_check_poll()   0 = symmetric, -EAGAIN = not decided yet,
 *                          -EHOSTUNREACH = refused (@out holds the cause and fix),
 *                          other -errno = could not check.
 *                          On 0, @out->cause is RN_CAUSE_NONE or a warning to log
 *                          (an MTU mismatch between the peers); @out may be NULL.
 *                          @out (empty or holding a finding) is replaced by a copy
 *                          the caller owns (rn_finding_clear()).
 * Each call costs a netlink query or two (tens of microseconds); the neighbour is
 * resolved by the kernel meanwhile (one datagram to the peer's discard port from our
 * IP out of our NIC at start, repeated every 200 ms while unresolved).
 */
struct rn_conn_check;
int rn_conn_check_start(const struct rn_nic *nic, const struct rn_peer_facts *peer, int timeout_ms,
			struct rn_conn_check **out);
int rn_conn_check_poll(struct rn_conn_check *chk, struct rn_finding *out);
void rn_conn_check_free(struct rn_conn_check *chk);
/*
 * Every finding of @chk so far (warnings such as an MTU mismatch included, which
 * do not refuse the connection): points @out at them (owned by @chk, valid until
 * rn_conn_check_free()) and returns the count.
 */
int rn_conn_check_findings(const struct rn_conn_check *chk, const struct rn_finding **out);

/*
 * After a completion error (status 12 above all): re-run the checks for @peer
 * through live route/neighbour queries (non-blocking: no ARP is sent) and return
 * the most likely cause in @out (empty or holding a finding; replaced, the caller
 * owns it). 0 when a cause was found, -ENOENT when the path
 * looks healthy, other -errno when it could not be checked.
 */
int rn_diagnose_peer(const struct rn_nic *nic, const struct rn_peer_facts *peer,
		     struct rn_finding *out);

/*
 * The per-connection checks above as the transport calls them (conn.c, xfer.c): the real
 * ones, unless a unit test of the transport scripts the verdicts instead (it installs its
 * own table before main: test/unit/double_conncheck.c).
 */
struct rn_path_check_ops {
	void (*facts_from_nic)(const struct rn_nic *nic, struct rn_peer_facts *out);
	int (*start)(const struct rn_nic *nic, const struct rn_peer_facts *peer, int timeout_ms,
		     struct rn_conn_check **out);
	int (*poll)(struct rn_conn_check *chk, struct rn_finding *out);
	void (*free)(struct rn_conn_check *chk);
	int (*diagnose)(const struct rn_nic *nic, const struct rn_peer_facts *peer,
			struct rn_finding *out);
};
extern struct rn_path_check_ops rn_path_check;

#endif /* RN_PATH_H */
