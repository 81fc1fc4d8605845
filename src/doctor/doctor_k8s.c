// SPDX-License-Identifier: MIT
/*
 * The host check for Kubernetes (after gather):
 *
 * `roce-doctor --cni` run in a pod: the fix for a pod is the CNI configuration that makes
 * its network right when the pod is created, so print, per RoCE NIC of the pod, a
 * NetworkAttachmentDefinition (Multus) whose CNI chain is the pod's interface (macvlan on
 * the node's netdev under the RDMA port, or sriov for a VF) followed by `tuning` (ARP
 * sysctls of the interface, rp_filter loose where it is strict) and `sbr` (the
 * interface's addresses in a table of their own with a `from <ip>` rule): the flux and
 * asymmetric routes of several NICs in one subnet, fixed per pod. stdout is a kind: List
 * of them (`kubectl apply -f -`); stderr says how to attach them and, for a pod with
 * NET_ADMIN, the commands that fix it now.
 *
 * `roce-doctor --nfd FILE`: node-feature-discovery's local feature file (features.d):
 * the node's verdict, its NIC counts and one label per cause found, written whole.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor.h"
#include "rn_sys.h"

#define NFD_NS "roce.feature.node.kubernetes.io/"

static int has_cause(const struct rn_nic *nic, const char *id)
{
	int i;

	for (i = 0; i < nic->nfindings; i++)
		if (!strcmp(rn_cause_id(nic->findings[i].cause), id))
			return 1;
	return 0;
}

/*
 * The netdev of the node under the pod's interface: the port's own netdev, whose default
 * GID is index 0 (mlx5 and rxe), else rxe's parent. Empty when neither can be read.
 */
static void node_netdev(const struct rn_nic *nic, char *out, size_t len)
{
	out[0] = '\0';
	if (!rn_sys_readf(out, len, "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/0",
			  nic->ibdev, nic->port) &&
	    out[0])
		return;
	if (rn_sys_readf(out, len, "/sys/class/infiniband/%s/parent", nic->ibdev))
		out[0] = '\0';
}

/* A VF (or any netdev with a device behind it) moved into the pod: SR-IOV, not macvlan. */
static int is_vf(const struct rn_nic *nic)
{
	char buf[PATH_MAX];
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/class/net/%s/device", nic->netdev);
	return !rn_sys.realpath(path, buf, sizeof(buf));
}

static int has_lower(const char *name, void *arg)
{
	if (strncmp(name, "lower_", 6))
		return 0;
	*(int *)arg = 1;
	return 1;
}

/*
 * The ifindex of the link under @netdev where that link is in another network namespace
 * (a macvlan or VF of the node given to this pod), else 0. iflink names the lower link
 * of a stacked device; sysfs shows it as lower_<name> only when both are in one
 * namespace (a VLAN of the node's own NIC).
 */
static long foreign_lower(const char *netdev)
{
	long ifindex, iflink;
	char path[PATH_MAX];
	int lower = 0;

	if (rn_sys_read_long(&ifindex, "/sys/class/net/%s/ifindex", netdev) ||
	    rn_sys_read_long(&iflink, "/sys/class/net/%s/iflink", netdev) || iflink == ifindex ||
	    iflink <= 0)
		return 0;
	snprintf(path, sizeof(path), "/sys/class/net/%s", netdev);
	/* unreadable: taken as foreign, so no pod's own link is ever named its own master */
	rn_sys.list(path, has_lower, &lower);
	return lower ? 0 : iflink;
}

/* The CNI chain (a conflist) for @dn, as one line of JSON: it goes into spec.config. */
static char *cni_config(const struct rn_doctor_nic *dn, const char *name)
{
	const struct rn_nic *nic = &dn->nic;
	char master[64], ip[INET6_ADDRSTRLEN], net[INET6_ADDRSTRLEN];
	struct rn_ip n = nic->ip;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int in_node, b;

	if (!f)
		return NULL;
	if (nic->port_netdev[0])
		snprintf(master, sizeof(master), "%s", nic->port_netdev);
	else
		node_netdev(nic, master, sizeof(master));
	/*
	 * A pod's own RDMA device (rdma link add in the pod, a VF's) sits on the pod's own
	 * interface, whose master is the node's link under it: not nameable from here.
	 */
	if (master[0] && !strcmp(master, nic->netdev) && foreign_lower(nic->netdev))
		master[0] = '\0';
	/* run in the node's namespace (the NIC is the port's netdev): pods get other addresses */
	in_node = master[0] && !strcmp(master, nic->netdev);
	rn_ip_str(&nic->ip, ip, sizeof(ip));
	for (b = nic->prefixlen; b < 32 && n.family == AF_INET; b++)
		n.v4.s_addr &= htonl(~(1u << (31 - b)));
	rn_ip_str(&n, net, sizeof(net));
	fprintf(f, "{\"cniVersion\":\"1.0.0\",\"name\":\"%s\",\"plugins\":[", name);
	if (is_vf(nic))
		/* the VF comes from the SR-IOV device plugin's resource (NAD annotation) */
		fprintf(f, "{\"type\":\"sriov\",");
	else
		fprintf(f, "{\"type\":\"macvlan\",\"master\":\"%s\",\"mode\":\"bridge\",",
			master[0] ? master : "MASTER");
	if (in_node)
		fprintf(f, "\"ipam\":{\"type\":\"host-local\",\"subnet\":\"%s/%d\"}}", net,
			nic->prefixlen);
	else
		fprintf(f,
			"\"ipam\":{\"type\":\"static\",\"addresses\":[{\"address\":\"%s/%d\"}]}}",
			ip, nic->prefixlen);
	/* IFNAME: tuning puts the interface's name in (Multus' "interface", net1...) */
	fprintf(f,
		",{\"type\":\"tuning\",\"sysctl\":{\"net.ipv4.conf.IFNAME.arp_ignore\":\"1\","
		"\"net.ipv4.conf.IFNAME.arp_announce\":\"2\"%s}}",
		has_cause(nic, "rp-filter") ? ",\"net.ipv4.conf.IFNAME.rp_filter\":\"2\"" : "");
	fprintf(f, ",{\"type\":\"sbr\"}]}");
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A DNS-1123 name: net1.100 -> roce-net1-100 */
static void nad_name(const char *netdev, char *name, size_t len)
{
	int k;

	snprintf(name, len, "roce-%s", netdev);
	for (k = 0; name[k]; k++)
		if (name[k] == '.' || name[k] == '_')
			name[k] = '-';
}

static int cni_usable(const struct rn_doctor_nic *dn)
{
	return dn->dev && !dn->err && dn->nic.ip.family == AF_INET;
}

/*
 * One NAD an interface: in rdma's shared netns mode a pod with a device of its own on
 * net1 also sees the node's device through net1's GID. The pod's own (its port's netdev
 * is net1, here) is the one a pod is given; else the first.
 */
static int cni_nic(const struct rn_doctor *d, int i)
{
	const struct rn_doctor_nic *dn = &d->nics[i];
	int k;

	if (!cni_usable(dn))
		return 0;
	for (k = 0; k < d->nnics; k++) {
		const struct rn_doctor_nic *o = &d->nics[k];

		if (k == i || !cni_usable(o) || strcmp(o->nic.netdev, dn->nic.netdev))
			continue;
		if (!o->nic.port_netdev[0] && dn->nic.port_netdev[0])
			return 0; /* the other is this interface's own device */
		if (k < i && !o->nic.port_netdev[0] == !dn->nic.port_netdev[0])
			return 0; /* alike: the first */
	}
	return 1;
}

/* The fixes' commands, each once, without their "# or ..." tails: a pod with NET_ADMIN. */
static void net_admin(const struct rn_doctor *d)
{
	struct rn_vars v = RN_VARS_INIT;
	char key[16];
	int i, k, n = 0, m;

	fprintf(stderr, "# or now, in a pod with NET_ADMIN:\n");
	for (i = 0; i < d->nnics; i++)
		for (k = 0; k < d->nics[i].nic.nfindings; k++) {
			const char *fix = rn_finding_fix(&d->nics[i].nic.findings[k]);
			const char *tail = strstr(fix, "  # ");
			int len = tail ? (int)(tail - fix) : (int)strlen(fix), seen = 0;

			for (m = 0; m < n && !seen; m++) {
				const char *c;

				snprintf(key, sizeof(key), "c%d", m);
				c = rn_vars_get(&v, key);
				seen = c && (int)strlen(c) == len && !strncmp(c, fix, (size_t)len);
			}
			if (!len || seen)
				continue;
			snprintf(key, sizeof(key), "c%d", n++);
			rn_vars_set(&v, key, "%.*s", len, fix);
			fprintf(stderr, "%.*s\n", len, fix);
		}
	fprintf(stderr, "# or all at once, where the image has it: roce-policy-routing");
	for (i = 0; i < d->nnics; i++)
		if (cni_nic(d, i))
			fprintf(stderr, " %s", d->nics[i].nic.netdev);
	fprintf(stderr, "\n");
	rn_vars_free(&v);
}

/*
 * No NIC a NetworkAttachmentDefinition can be made for: why, per NIC, on stderr, and
 * nothing on stdout. NOTE: an empty List would apply cleanly and attach nothing, so a pod
 * spec built from it would run without its RoCE NICs; a problem (exit 1), not success.
 */
static int cni_none(const struct rn_doctor *d)
{
	int i;

	if (!d->nnics)
		fprintf(stderr,
			"roce-doctor: --cni: no RDMA device in this network namespace "
			"(rdma link show lists none): no NetworkAttachmentDefinition to print\n");
	for (i = 0; i < d->nnics; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];

		fprintf(stderr, "roce-doctor: --cni: %s: %s\n", dn->nic.netdev,
			dn->err  ? "its facts could not be read" :
			!dn->dev ? "no RDMA device behind it (no RoCE GID holds its address)" :
				   "no IPv4 address (the NAD's static IPAM and sbr need one)");
	}
	if (d->nnics)
		fprintf(stderr,
			"roce-doctor: --cni: none of the %d NIC%s is a RoCE NIC a pod can "
			"be given: no NetworkAttachmentDefinition to print\n",
			d->nnics, d->nnics == 1 ? "" : "s");
	return RN_DOCTOR_PROBLEMS;
}

int rn_doctor_cni(struct rn_doctor *d, int gather_err)
{
	struct rn_json j;
	char name[64];
	int i, k, n = 0, problems;

	if (gather_err)
		return RN_DOCTOR_ERROR;
	for (i = 0; i < d->nnics; i++)
		n += cni_nic(d, i);
	if (!n)
		return cni_none(d);
	n = 0;
	problems = rn_doctor_host_problems(d);
	rn_json_begin(&j, d->out);
	rn_json_str(&j, "apiVersion", "v1");
	rn_json_str(&j, "kind", "List");
	rn_json_arr(&j, "items");
	for (i = 0; i < d->nnics; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];
		char *conf;

		if (!cni_nic(d, i))
			continue;
		nad_name(dn->nic.netdev, name, sizeof(name));
		conf = cni_config(dn, name);
		if (!conf)
			return rn_doctor_err(d, "--cni: out of memory");
		rn_json_obj(&j, NULL);
		rn_json_str(&j, "apiVersion", "k8s.cni.cncf.io/v1");
		rn_json_str(&j, "kind", "NetworkAttachmentDefinition");
		rn_json_obj(&j, "metadata");
		rn_json_str(&j, "name", name);
		rn_json_obj(&j, "annotations");
		rn_json_str(&j, "roce-doctor/interface", dn->nic.netdev);
		rn_json_str(&j, "roce-doctor/rdma-device", dn->nic.ibdev);
		rn_json_close(&j, '}');
		rn_json_close(&j, '}');
		rn_json_obj(&j, "spec");
		rn_json_str(&j, "config", conf);
		rn_json_close(&j, '}');
		rn_json_close(&j, '}');
		free(conf);
		n++;
	}
	rn_json_close(&j, ']');
	rn_json_end(&j);

	fprintf(stderr, "# roce-doctor --cni on %s: %d RoCE NIC%s, %s\n", d->hostname, n,
		n == 1 ? "" : "s", problems ? "needs fixing" : "all good already");
	fprintf(stderr, "# kubectl apply -f <stdout>; then the pod's annotation:\n"
			"#   k8s.v1.cni.cncf.io/networks: '[");
	for (i = 0, k = 0; i < d->nnics; i++)
		if (cni_nic(d, i)) {
			nad_name(d->nics[i].nic.netdev, name, sizeof(name));
			fprintf(stderr, "%s{\"name\":\"%s\",\"interface\":\"%s\"}", k++ ? "," : "",
				name, d->nics[i].nic.netdev);
		}
	fprintf(stderr, "]'\n# IPAM: each NIC's address now (static); a NAD that many pods "
			"share keeps its own IPAM (whereabouts, per-node host-local ranges)\n");
	for (i = 0; i < d->nnics; i++) {
		const struct rn_nic *nic = &d->nics[i].nic;
		long lower;

		if (!cni_nic(d, i) || nic->port_netdev[0] || is_vf(nic) ||
		    !(lower = foreign_lower(nic->netdev)))
			continue;
		nad_name(nic->netdev, name, sizeof(name));
		fprintf(stderr,
			"# %s: %s is this pod's own interface (%s is on it) over the "
			"node's link %ld, in another network namespace: put that link's name as "
			"the macvlan's \"master\" (on the node: ip -o link show | grep '^%ld:')\n",
			name, nic->netdev, nic->ibdev, lower, lower);
	}
	if (problems)
		net_admin(d);
	return problems ? RN_DOCTOR_PROBLEMS : RN_DOCTOR_OK;
}

/* ---- node-feature-discovery ---- */

struct nfd_args {
	const struct rn_doctor *d;
	int gather_err;
};

static const char *node_verdict(const struct rn_doctor *d, int gather_err, int *nok)
{
	enum rn_verdict_kind worst = RN_VERDICT_OK;
	int i;

	*nok = 0;
	if (gather_err)
		return "error";
	if (!d->nnics)
		return "none";
	for (i = 0; i < d->nnics; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];

		if (dn->err)
			return "error";
		worst = RN_MAX(worst, dn->nic.verdict);
		*nok += dn->nic.verdict == RN_VERDICT_OK;
	}
	return rn_verdict_str(worst);
}

static void nfd_fill(FILE *f, const void *arg)
{
	const struct nfd_args *a = arg;
	const struct rn_doctor *d = a->d;
	int seen[RN_CAUSE__MAX] = { 0 }, i, k, nok;
	const char *v = node_verdict(d, a->gather_err, &nok);

	fprintf(f, "# roce-doctor %s on %s: node-feature-discovery local features (whole file)\n",
		RN_DOCTOR_VERSION, d->hostname);
	fprintf(f, NFD_NS "verdict=%s\n", v);
	fprintf(f, NFD_NS "nics=%d\n", a->gather_err ? 0 : d->nnics);
	fprintf(f, NFD_NS "nics-ok=%d\n", nok);
	for (i = 0; !a->gather_err && i < d->nnics; i++)
		for (k = 0; k < d->nics[i].nic.nfindings; k++) {
			enum rn_cause c = d->nics[i].nic.findings[k].cause;

			if (!seen[c]++)
				fprintf(f, NFD_NS "cause-%s=true\n", rn_cause_id(c));
		}
}

int rn_doctor_nfd(struct rn_doctor *d, const char *file, int gather_err)
{
	struct nfd_args a = { d, gather_err };
	int ret = rn_doctor_write_file(file, nfd_fill, &a);

	if (ret)
		return rn_doctor_err(d, "--nfd %s: %s", file, strerror(-ret));
	if (gather_err)
		return RN_DOCTOR_ERROR;
	if (!d->nnics)
		return RN_DOCTOR_NODEV;
	return rn_doctor_host_problems(d) ? RN_DOCTOR_PROBLEMS : RN_DOCTOR_OK;
}
