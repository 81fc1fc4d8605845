// SPDX-License-Identifier: MIT
/*
 * The engine: process-wide state behind every communicator. The first reference
 * reads the configuration, discovers the NICs, judges each one's routing and keeps
 * those the route check lets through.
 *
 * Discovery and the vNIC table then live as long as the library: NCCL reads the
 * device count once per load and makes its vNICs once (makeVDevice), so a
 * communicator made after the last one was finalized, with the library kept loaded
 * (NCCL_NET_PLUGIN_REF_COUNT >= 1, or the v10 table), still uses those indices. Only
 * per-communicator resources go when the last reference does; the devices go when
 * the library is unloaded (dlclose, exit) with no reference held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rn_clock.h"
#include "rn_compiler.h"
#include "rn_dev.h"
#include "rn_conn.h"
#include "rn_log.h"
#include "rn_rma.h"
#include "rn_mr.h"
#include "rn_nl.h"
#include "rn_path.h"
#include "rn_verbs.h"

/* Init's assessment (rn_path.h): the real one; a unit test may script the verdicts. */
struct rn_assess_ops rn_assess = {
	.snapshot = rn_host_snapshot,
	.free = rn_host_free,
	.assess = rn_nic_assess,
	.log = rn_nic_log,
	.mark_roce = rn_host_mark_roce,
};

static pthread_mutex_t engine_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_engine engine;
static int engine_refs;
static int engine_ready; /* discovery done and kept (under engine_lock) */

static void engine_free_devs(struct rn_dev **devs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		rn_dev_free(devs[i]);
}

/* The cause id of @nic's first fatal finding, for the one-line refusal summary. */
static const char *nic_refusal(const struct rn_nic *nic)
{
	int i;

	for (i = 0; i < nic->nfindings; i++)
		if (nic->findings[i].sev == RN_SEV_FATAL)
			return rn_cause_id(nic->findings[i].cause);
	return nic->nfindings ? rn_cause_id(nic->findings[0].cause) : "refused";
}

/* One INFO line naming every NIC offered, as NCCL's "NET/IB : Using ..." */
static void engine_log_using(const struct rn_engine *eng)
{
	struct rn_vars v = RN_VARS_INIT; /* a growable line: every NIC, whatever the count */
	char ip[INET6_ADDRSTRLEN];
	int i;

	rn_vars_set(&v, "using", "%s", "");
	for (i = 0; i < eng->ndevs; i++) {
		const struct rn_nic *nic = &eng->devs[i]->nic;

		rn_ip_str(&nic->ip, ip, sizeof(ip));
		rn_vars_append(&v, "using", " ", "[%d]%s:%d/RoCE %s %s gid %d", i, nic->ibdev,
			       nic->port, nic->netdev[0] ? nic->netdev : "-", ip, nic->gid_index);
	}
	rn_info(RN_SUB_INIT | RN_SUB_NET, RN_PFX "Using %s; OOB %s",
		rn_vars_get(&v, "using") ? rn_vars_get(&v, "using") : "",
		eng->cfg.socket_ifname[0] ? eng->cfg.socket_ifname : "each NIC's own IP");
	rn_vars_free(&v);
}

/* What init made of the RDMA ports it did not take. */
struct engine_tally {
	struct rn_vars refused; /* "list", and the first "fix", whole */
	int nrefused;
	int nroute;             /* refused by the route check (a GID, a refused path) */
	int nelsewhere;         /* a shared device whose netdev is in another namespace */
};

/*
 * A pod given devices of its own in rdma's shared netns mode also sees the node's, through
 * its interfaces' GIDs; the node's carries nothing from a pod (rxe) or is not the pod's
 * to use (a VF's PF). Each such one whose interface has its own device is left out.
 * @rets: each device's assessment (0: assessed).
 */
static void engine_leave_shadowed(struct rn_dev **found, int n, const int *rets)
{
	const struct rn_nic *nics[RN_MAX_DEVS];
	int i, m = 0, idx[RN_MAX_DEVS], own[RN_MAX_DEVS];

	for (i = 0; i < n; i++)
		if (found[i] && !rets[i]) {
			idx[m] = i;
			nics[m++] = &found[i]->nic;
		}
	/* all judged before any is freed: a later device may yield to the same own one */
	for (i = 0; i < m; i++)
		own[i] = rn_nic_own_device(nics, m, i);
	for (i = 0; i < m; i++) {
		if (own[i] < 0)
			continue;
		rn_info(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "not using %s:%d: %s has an RDMA device of its own, %s:%d (the "
			       "node's device, seen through %s's GID, is left to the node)",
			nics[i]->ibdev, nics[i]->port, nics[i]->netdev, nics[own[i]]->ibdev,
			nics[own[i]]->port, nics[i]->netdev);
		rn_dev_free(found[idx[i]]);
		found[idx[i]] = NULL;
	}
}

/*
 * Port @dev, assessed (@ret: rn_assess.assess's answer): the engine takes it, or it is
 * freed and counted in @t.
 */
static void engine_take(struct rn_engine *eng, struct rn_dev *dev, int ret, struct engine_tally *t)
{
	struct rn_nic *nic = &dev->nic;
	int usable;

	if (ret == -ENODEV) {
		/*
		 * A shared RDMA device seen from a pod that has no netdev on it: not
		 * this pod's NIC, nothing to fix here.
		 */
		rn_info(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "not using %s:%d: no netdev of this "
			       "network namespace has a GID on it (its netdev %s is elsewhere)",
			nic->ibdev, nic->port, nic->netdev[0] ? nic->netdev : "-");
		t->nelsewhere++;
		rn_dev_free(dev);
		return;
	}
	if (ret) {
		rn_warn(RN_SUB_INIT | RN_SUB_NET, RN_PFX "%s:%d cannot be assessed: %s", nic->ibdev,
			nic->port, strerror(-ret));
		nic->gid_index = -1;
	} else {
		rn_assess.log(nic);
	}
	if (!ret && dev->is_rxe && nic->port_netdev[0])
		/*
		 * rxe's UDP sockets and route lookups are those of the namespace its link
		 * was made in (up to 6.1 always the initial one): from a pod the
		 * connection comes up and the first work request fails.
		 */
		rn_warn(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "%s:%d is Soft-RoCE (rxe) on %s, and %s is in this pod's network "
			       "namespace: rxe sends and receives only in the namespace of its "
			       "port's netdev (6.1: every RDMA write fails with LOC_QP_OP_ERR; "
			       "7.3: RETRY_EXC_ERR(12)); run such a job with hostNetwork, with an "
			       "rxe of the pod's own (rdma link add in the pod, kernel 7.3 and "
			       "later), or on a hardware RoCE NIC",
			nic->ibdev, nic->port, nic->port_netdev, nic->netdev);
	/* Without a GID there is nothing to connect with, whatever the route check says. */
	usable = nic->gid_index >= 0 && (nic->verdict != RN_VERDICT_REFUSED ||
					 eng->cfg.route_check != RN_ROUTE_CHECK_STRICT);
	if (usable) {
		eng->devs[eng->ndevs++] = dev;
		return;
	}
	t->nrefused++;
	if (!ret && nic->gid_index >= 0)
		t->nroute++; /* a GID but a refused path: the route check's doing */
	else if (!rn_vars_get(&t->refused, "fix") && nic->nfindings)
		rn_vars_set(&t->refused, "fix", "%s", rn_finding_fix(&nic->findings[0]));
	rn_vars_append(&t->refused, "list", ", ", "%s:%d %s %s", nic->ibdev, nic->port,
		       nic->netdev[0] ? nic->netdev : "-",
		       ret                ? "unassessed" :
		       nic->gid_index < 0 ? "no-gid" :
					    nic_refusal(nic));
	rn_dev_free(dev);
}

/*
 * The ports refused, said once: -ENODEV with the reason when none of the @n was taken,
 * else 0 (the refused ones named, with the fix).
 */
static int engine_say_refused(struct rn_engine *eng, int n, const struct engine_tally *t)
{
	const char *list = rn_vars_get(&t->refused, "list");

	if (!eng->ndevs && t->nelsewhere == n) {
		rn_warn(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "no RoCE device: none of the %d RDMA port%s has a GID of a netdev "
			       "in this network namespace (a pod without its RDMA network "
			       "attached?)",
			n, n == 1 ? "" : "s");
		return -ENODEV;
	}
	if (!eng->ndevs && !t->nroute) {
		const char *fix = rn_vars_get(&t->refused, "fix");

		/* no NIC got as far as the route check: its advice would mislead */
		rn_warn(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "no RoCE device: all %d RoCE NIC%s refused: %s; fix: %s",
			t->nrefused, t->nrefused == 1 ? "" : "s", list,
			fix && fix[0] ? fix : "see the lines above");
		return -ENODEV;
	}
	if (!eng->ndevs) {
		rn_warn(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "no RoCE device: all %d RoCE NIC%s refused by the route check: %s; "
			       "apply the fixes above (roce-policy-routing fixes most at once) or "
			       "set NCCL_ROCE_ROUTE_CHECK=warn",
			t->nrefused, t->nrefused == 1 ? "" : "s", list);
		return -ENODEV;
	}
	if (t->nrefused)
		rn_warn(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "%d RoCE NIC%s refused by the route check: %s; apply the fixes "
			       "above (roce-policy-routing fixes most at once)",
			t->nrefused, t->nrefused == 1 ? "" : "s", list);
	rn_rma_bypass_check(eng, t->nrefused, list);
	return 0;
}

static int engine_init(struct rn_engine *eng)
{
	struct rn_dev *found[RN_MAX_DEVS];
	int rets[RN_MAX_DEVS];
	struct engine_tally t = { .refused = RN_VARS_INIT };
	char why[1024];
	struct rn_host *host = NULL;
	int n, i, ret;
	double t0 = rn_now_ms(), t_dev, t_snap;

	memset(eng, 0, sizeof(*eng));
	rn_config_load(&eng->cfg);
	rn_config_log(&eng->cfg);
	if (gethostname(eng->hostname, sizeof(eng->hostname) - 1))
		snprintf(eng->hostname, sizeof(eng->hostname), "?");
	if (eng->cfg.ib_disable) {
		/* as net_ib's init: the user asked for no IB/RoCE transport */
		rn_info(RN_SUB_INIT | RN_SUB_NET, RN_PFX "NCCL_IB_DISABLE=1: offering no device");
		return -ENODEV;
	}

	/*
	 * As net_ib, before any verbs object exists: registered memory then stays out of
	 * forked children (a DataLoader's fork would copy-on-write it away from the NIC).
	 */
	ret = rn_verbs_err(rn_verbs.fork_init());
	if (ret)
		rn_info(RN_SUB_INIT,
			RN_PFX "ibv_fork_init failed (%s): a fork() after registration may move "
			       "user buffers away from the NIC; the plugin's own FIFOs are kept "
			       "out of children either way",
			strerror(-ret));
	n = rn_dev_discover(&eng->cfg, found, RN_MAX_DEVS, why, sizeof(why), NULL);
	t_dev = rn_now_ms();
	if (n <= 0) {
		rn_warn(RN_SUB_INIT | RN_SUB_NET, RN_PFX "no RoCE device: %s", why);
		return -ENODEV;
	}
	ret = rn_assess.snapshot(&host);
	if (ret) {
		rn_warn(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "no RoCE device: cannot read the host's addresses and routes (%s)",
			strerror(-ret));
		engine_free_devs(found, n);
		return ret == -ENODEV ? -ENODEV : ret;
	}
	t_snap = rn_now_ms();
	/* every RoCE NIC of the host, so that each one's MTU is compared with the others' */
	for (i = 0; i < n && rn_assess.mark_roce; i++)
		rn_assess.mark_roce(host, found[i]->nic.ifindex, found[i]->nic.netdev);
	for (i = 0; i < n; i++)
		rets[i] = rn_assess.assess(host, found[i]->ctx, &found[i]->nic, &eng->cfg);
	engine_leave_shadowed(found, n, rets);
	for (i = 0; i < n; i++)
		if (found[i])
			engine_take(eng, found[i], rets[i], &t);
	rn_assess.free(host);
	ret = engine_say_refused(eng, n, &t);
	rn_vars_free(&t.refused);
	if (ret)
		return ret;
	engine_log_using(eng);
	/* where init's time goes, for the next one who wants it shorter */
	rn_info(RN_SUB_INIT,
		RN_PFX "init: %d RDMA port%s opened in %.1f ms, host snapshot %.1f ms, "
		       "verdicts %.1f ms",
		n, n == 1 ? "" : "s", t_dev - t0, t_snap - t_dev, rn_now_ms() - t_snap);
	return 0;
}

int rn_engine_get(struct rn_engine **out)
{
	int ret = 0;

	pthread_mutex_lock(&engine_lock);
	/* a failed discovery keeps nothing: the next communicator tries again */
	if (!engine_ready) {
		ret = engine_init(&engine);
		engine_ready = !ret;
	}
	if (!ret) {
		engine_refs++;
		*out = &engine;
	} else {
		*out = NULL;
	}
	pthread_mutex_unlock(&engine_lock);
	return ret;
}

/*
 * The last finalize: NCCL frees only the connections that completed and never closes
 * a listener whose connection did not come (an abort mid-connect). Everything of ours
 * still open goes now, before the devices it lives on: connects and handshakes in
 * progress, listeners, comms (their event threads are joined with the last one), and
 * the registrations nobody deregistered. Nothing of ours is open or runs afterwards.
 */
void rn_engine_close_leftovers(struct rn_engine *eng)
{
	struct rn_conn_counts n;
	int i, mrs = 0;

	rn_conn_close_all(eng, &n);
	for (i = 0; i < eng->ndevs; i++)
		mrs += rn_mr_cache_release(eng->devs[i]);
	if (n.listeners || n.connecting || n.comms || mrs)
		rn_info(RN_SUB_INIT | RN_SUB_NET,
			RN_PFX "last finalize: closed what NCCL left open (an abort during "
			       "connection setup leaves these): %d listener%s (%d handshake%s in "
			       "them), %d connect%s in progress, %d comm%s, %d memory "
			       "registration%s",
			n.listeners, n.listeners == 1 ? "" : "s", n.accepting,
			n.accepting == 1 ? "" : "s", n.connecting, n.connecting == 1 ? "" : "s",
			n.comms, n.comms == 1 ? "" : "s", mrs, mrs == 1 ? "" : "s");
}

void rn_engine_put(void)
{
	pthread_mutex_lock(&engine_lock);
	if (engine_refs > 0 && --engine_refs == 0) {
		/* what NCCL never closed goes now; the devices stay for the library's life */
		rn_engine_close_leftovers(&engine);
		rn_nl_close(); /* per-communicator: the next live route query reopens it */
	}
	pthread_mutex_unlock(&engine_lock);
}

int rn_engine_unload(void)
{
	int ret = 0;

	pthread_mutex_lock(&engine_lock);
	if (engine_refs) {
		ret = -EBUSY;
	} else if (engine_ready) {
		engine_free_devs(engine.devs, engine.ndevs);
		memset(&engine, 0, sizeof(engine));
		engine_ready = 0;
	}
	pthread_mutex_unlock(&engine_lock);
	return ret;
}

/*
 * dlclose() or exit: the devices go with the library. With a reference still held
 * (a v10 NCCL never finalizes; an exit with communicators alive) other threads may
 * still use them, and the process is ending anyway: left to the kernel.
 */
__attribute__((destructor)) static void engine_unload_at_exit(void)
{
	rn_engine_unload();
}

int rn_engine_init_with(struct rn_engine *eng, const struct rn_config *cfg, const char *hostname,
			struct rn_dev *const *devs, int n)
{
	int i;

	memset(eng, 0, sizeof(*eng));
	eng->cfg = *cfg;
	snprintf(eng->hostname, sizeof(eng->hostname), "%s", hostname ? hostname : "");
	for (i = 0; i < n && eng->ndevs < RN_MAX_DEVS; i++)
		if (devs[i] && devs[i]->nic.gid_index >= 0)
			eng->devs[eng->ndevs++] = devs[i];
	return eng->ndevs ? 0 : -ENODEV;
}

struct rn_engine *rn_engine_current(void)
{
	struct rn_engine *eng;

	pthread_mutex_lock(&engine_lock);
	eng = engine_refs ? &engine : NULL;
	pthread_mutex_unlock(&engine_lock);
	return eng;
}
