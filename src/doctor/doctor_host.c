// SPDX-License-Identifier: MIT
/*
 * "host" (the default command): every RoCE NIC of this host judged by the
 * library's own NIC verdict (rn_nic_assess, the plugin's init check), shown with
 * the facts behind it: netdev, link, MTU vs active MTU, the GID and why, the
 * ARP/rp_filter sysctls (all, per-netdev, effective), the policy rules and
 * tables, and the kernel's own route answer from each source IP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include "doctor.h"
#include "rn_nic.h"
#include "rn_policy.h"
#include "rn_route.h"
#include "rn_wire.h"

/* ---- human output ------------------------------------------------------------------ */

static const char *link_name(struct rn_doctor *d, int ifindex, char *buf, size_t len)
{
	struct rn_host_link *l = rn_host_link_by_index(d->host, ifindex);

	if (l)
		snprintf(buf, len, "%s", l->link.name);
	else
		snprintf(buf, len, "if%d", ifindex);
	return buf;
}

static const char *table_str(uint32_t t, char *buf, size_t len)
{
	if (t == RN_TABLE_MAIN)
		snprintf(buf, len, "main");
	else if (t == RN_TABLE_LOCAL)
		snprintf(buf, len, "local");
	else
		snprintf(buf, len, "%u", t);
	return buf;
}

/* "nic0 t101", "-> nic1 t254" (another NIC: the problem), "unreach" */
static const char *route_str(struct rn_doctor *d, const struct rn_doctor_nic *dn, char *buf,
			     size_t len)
{
	char dev[IF_NAMESIZE + 8], t[16];

	if (!dn->nic.route.dst.family)
		snprintf(buf, len, "-");
	else if (dn->nic.route.err)
		snprintf(buf, len, "%s", strerror(-dn->nic.route.err));
	else
		snprintf(buf, len, "%s%s (%s)",
			 dn->nic.route.route.oif == dn->nic.ifindex ? "" : "-> ",
			 link_name(d, dn->nic.route.route.oif, dev, sizeof(dev)),
			 table_str(dn->nic.route.route.table, t, sizeof(t)));
	return buf;
}

/* " (on gpu7)" when @host names one: where a part of a fix runs. */
static void print_fix_line(FILE *f, const char *indent, const char *then, const char *label,
			   const char *host, const char *cmds)
{
	fprintf(f, "%s%sfix%s%s%s%s: %s\n", indent, then, label, host[0] ? " (on " : "", host,
		host[0] ? ")" : "", cmds);
}

void rn_doctor_print_fix(FILE *f, const char *indent, const char *label,
			 const struct rn_finding *fd, const char *maker)
{
	int pre = rn_finding_pre_fix(fd)[0] != '\0';

	if (pre)
		print_fix_line(f, indent, "", label, rn_finding_where(fd, 1, maker),
			       rn_finding_pre_fix(fd));
	if (rn_finding_fix(fd)[0])
		print_fix_line(f, indent, pre ? "then " : "", label, rn_finding_where(fd, 0, maker),
			       rn_finding_fix(fd));
	if (rn_finding_advice(fd)[0])
		fprintf(f, "%swhat to do%s: %s\n", indent, label, rn_finding_advice(fd));
}

void rn_doctor_print_finding(FILE *f, const char *who, const struct rn_finding *fd,
			     const char *maker)
{
	char lb[32];

	fprintf(f, "  %s %s [%s]: %s\n", who, rn_cause_label(fd->cause, lb, sizeof(lb)),
		rn_doctor_sev_str(fd->sev), rn_finding_msg(fd));
	rn_doctor_print_fix(f, "      ", "", fd, maker);
}

static void print_sysctls(struct rn_doctor *d, FILE *f)
{
	static const char *const names[] = { "arp_ignore", "arp_announce", "arp_filter",
					     "rp_filter", "accept_local" };
	int i, k;

	fprintf(f, "\n%-13s %4s", "sysctl", "all");
	for (k = 0; k < d->nnics; k++)
		fprintf(f, " %-*s", RN_MAX((int)strlen(d->nics[k].nic.netdev), 4),
			d->nics[k].nic.netdev);
	fprintf(f, "  (per netdev: dev->effective)\n");
	for (i = 0; i < 5; i++) {
		const int *all = &d->host->all.arp_ignore;

		fprintf(f, "%-13s %4d", names[i], all[i]);
		for (k = 0; k < d->nnics; k++) {
			const int *dv = &d->nics[k].sys_dev.arp_ignore;
			const int *ev = &d->nics[k].sys_eff.arp_ignore;
			char cell[24];

			snprintf(cell, sizeof(cell), "%d->%d", dv[i], ev[i]);
			fprintf(f, " %-*s", RN_MAX((int)strlen(d->nics[k].nic.netdev), 4), cell);
		}
		fputc('\n', f);
	}
}

/* Rules and per-NIC tables: only what is not the kernel's default set. */
static void print_rules(struct rn_doctor *d, FILE *f)
{
	char ip[INET6_ADDRSTRLEN], t[16], dev[IF_NAMESIZE + 8], src[INET6_ADDRSTRLEN + 8];
	uint32_t shown[RN_DOCTOR_MAX_NICS];
	int i, k, nshown = 0, nrules = 0;

	fputc('\n', f);
	for (i = 0; i < d->host->nrules; i++) {
		const struct rn_nl_rule *r = &d->host->rules[i];

		if (r->family != AF_INET || (r->priority == 0 && r->table == RN_TABLE_LOCAL) ||
		    (r->priority == 32766 && r->table == RN_TABLE_MAIN) ||
		    (r->priority == 32767 && r->table == 253))
			continue;
		if (!nrules++)
			fprintf(f, "rules:\n");
		fprintf(f, "  %u: %sfrom %s", r->priority, r->invert ? "not " : "",
			r->src_len ? rn_ip_str(&r->src, ip, sizeof(ip)) : "all");
		if (r->src_len && r->src_len != 32)
			fprintf(f, "/%d", r->src_len);
		if (r->dst_len)
			fprintf(f, " to %s/%d", rn_ip_str(&r->dst, ip, sizeof(ip)), r->dst_len);
		if (r->iif[0])
			fprintf(f, " iif %s", r->iif);
		if (r->oif[0])
			fprintf(f, " oif %s", r->oif);
		if (r->fwmark)
			fprintf(f, " fwmark 0x%x", r->fwmark);
		if (r->action == FR_ACT_TO_TBL)
			fprintf(f, " lookup %s\n", table_str(r->table, t, sizeof(t)));
		else
			fprintf(f, " action %d\n", r->action);
	}
	if (!nrules)
		fprintf(f, "rules: only the defaults (local, main, default)\n");
	for (k = 0; k < d->nnics; k++) {
		uint32_t tb = (uint32_t)d->nics[k].nic.table;
		int seen = 0;

		if (d->nics[k].rule_prio < 0 || tb == RN_TABLE_MAIN || tb == RN_TABLE_LOCAL)
			continue;
		for (i = 0; i < nshown; i++)
			seen |= shown[i] == tb;
		if (seen)
			continue;
		shown[nshown++] = tb;
		fprintf(f, "table %u:", tb);
		seen = 0;
		for (i = 0; i < d->host->nroutes; i++) {
			const struct rn_nl_route *r = &d->host->routes[i];

			if (r->table != tb || r->dst.family != AF_INET)
				continue;
			src[0] = '\0';
			if (r->prefsrc.family)
				snprintf(src, sizeof(src), " src %s",
					 rn_ip_str(&r->prefsrc, ip, sizeof(ip)));
			fprintf(f, "%s %s/%d", seen++ ? ";" : "",
				r->dst_len ? rn_ip_str(&r->dst, ip, sizeof(ip)) : "default",
				r->dst_len);
			if (r->gw.family)
				fprintf(f, " via %s", rn_ip_str(&r->gw, ip, sizeof(ip)));
			fprintf(f, " dev %s%s",
				r->oif ? link_name(d, r->oif, dev, sizeof(dev)) : "-", src);
		}
		fprintf(f, "%s\n", seen ? "" : " empty (lookups fall through to main)");
	}
}

/* The words of @s, split in place (each cut at ';' or ','); a malloc'ed array. */
static char **words(char *s, int *n)
{
	char **w = NULL, **nw, *save = NULL, *t;
	int cap = 0;

	*n = 0;
	for (t = strtok_r(s, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (*n == cap) {
			cap = cap ? 2 * cap : 32;
			nw = realloc(w, (size_t)cap * sizeof(*w));
			if (!nw) {
				free(w);
				*n = -1;
				return NULL;
			}
			w = nw;
		}
		t[strcspn(t, ";,")] = '\0';
		w[(*n)++] = t;
	}
	return w;
}

/* Same fix up to the order of its words (the NIC lists are ordered from each NIC's side). */
static int same_fix(const char *a, const char *b)
{
	char *x = strdup(a), *y = strdup(b), **tx = NULL, **ty = NULL;
	int nx = 0, ny = 0, i, k, same = 0;

	if (!x || !y)
		goto out;
	tx = words(x, &nx);
	ty = words(y, &ny);
	if (nx < 0 || ny < 0 || nx != ny)
		goto out;
	for (i = 0; i < nx; i++) {
		for (k = 0; k < ny && (!ty[k] || strcmp(tx[i], ty[k])); k++)
			;
		if (k == ny)
			goto out;
		ty[k] = NULL;
	}
	same = 1;
out:
	free(tx);
	free(ty);
	free(x);
	free(y);
	return same;
}

/*
 * Findings grouped by cause so that eight NICs fit a screen: who it hits, the
 * first one's message (the others read the same with their own names), and each
 * distinct fix once.
 */
/* The same commands on the same hosts (and the same advice): printed once. */
static int same_fixes(const struct rn_doctor_item *a, const struct rn_doctor_item *b)
{
	return same_fix(rn_finding_fix(a->f), rn_finding_fix(b->f)) &&
	       same_fix(rn_finding_pre_fix(a->f), rn_finding_pre_fix(b->f)) &&
	       !strcmp(rn_finding_where(a->f, 0, a->host), rn_finding_where(b->f, 0, b->host)) &&
	       !strcmp(rn_finding_where(a->f, 1, a->host), rn_finding_where(b->f, 1, b->host)) &&
	       !strcmp(rn_finding_advice(a->f), rn_finding_advice(b->f));
}

void rn_doctor_print_grouped(FILE *f, const struct rn_doctor_item *it, int n, int all)
{
	const char **fix_who;
	const struct rn_doctor_item **fixes;
	int c, i, m, k, nprinted = 0;

	if (!n)
		return;
	/* every distinct fix printed so far, across causes */
	fixes = calloc((size_t)n, sizeof(*fixes));
	fix_who = calloc((size_t)n, sizeof(*fix_who));
	if (!fixes || !fix_who) {
		for (i = 0; i < n; i++)
			rn_doctor_print_finding(f, it[i].who, it[i].f, it[i].host);
		goto out;
	}
	fprintf(f, "findings (%d):\n", n);
	for (c = 1; c < RN_CAUSE__MAX; c++) {
		const struct rn_doctor_item *first = NULL;
		int start = nprinted, nsame = 0, shown;

		for (i = 0; i < n; i++) {
			if (it[i].f->cause != (enum rn_cause)c)
				continue;
			if (!first) {
				first = &it[i];
				fprintf(f, "  %s [%s] on", rn_cause_id(it[i].f->cause),
					rn_doctor_sev_str(it[i].f->sev));
			}
			fprintf(f, " %s", it[i].who);
			for (m = 0; m < nprinted && !same_fixes(fixes[m], &it[i]); m++)
				;
			if (m < start)
				nsame++;
			else if (m == nprinted) {
				fix_who[nprinted] = it[i].who;
				fixes[nprinted++] = &it[i];
			}
		}
		if (!first)
			continue;
		fprintf(f, "\n    %s: %s\n", first->who, rn_finding_msg(first->f));
		shown = nprinted - start;
		/* Eight NICs' worth of commands would push the rest off the screen. */
		if (!all && shown > 4)
			shown = 2;
		for (k = start; k < start + shown; k++) {
			char label[200] = "";

			if (nprinted - start > 1)
				snprintf(label, sizeof(label), " %s", fix_who[k]);
			rn_doctor_print_fix(f, "    ", label, fixes[k]->f, fixes[k]->host);
		}
		if (shown < nprinted - start)
			fprintf(f, "    ... and %d more fixes like these (-v lists each)\n",
				nprinted - start - shown);
		if (nsame)
			fprintf(f, "    fix%s: as above\n",
				nsame < nprinted - start + nsame ? " for the others" : "");
	}
	/* A newer peer's causes have no row here: each is shown whole, as it came. */
	for (i = 0; i < n; i++) {
		char lb[32];

		if ((unsigned int)it[i].f->cause < RN_CAUSE__MAX)
			continue;
		fprintf(f, "  %s [%s] on %s\n    %s: %s\n",
			rn_cause_label(it[i].f->cause, lb, sizeof(lb)),
			rn_doctor_sev_str(it[i].f->sev), it[i].who, it[i].who,
			rn_finding_msg(it[i].f));
		rn_doctor_print_fix(f, "    ", "", it[i].f, it[i].host);
	}
out:
	free(fixes);
	free(fix_who);
}

static void print_findings(struct rn_doctor *d, FILE *f, int nfind)
{
	struct rn_doctor_item *it = calloc((size_t)nfind + 1, sizeof(*it));
	int i, k, n = 0;

	if (!it) {
		fprintf(f, "findings: out of memory\n");
		return;
	}
	for (i = 0; i < d->nnics; i++)
		for (k = 0; k < d->nics[i].nic.nfindings && n < nfind; k++) {
			it[n].who = d->nics[i].nic.netdev;
			it[n++].f = &d->nics[i].nic.findings[k];
		}
	rn_doctor_print_grouped(f, it, n, d->verbose);
	free(it);
}

static int script_fixes_all(const struct rn_doctor *d)
{
	int i, k;

	for (i = 0; i < d->nnics; i++) {
		const struct rn_nic *nic = &d->nics[i].nic;

		if (d->nics[i].err || (nic->nfindings && nic->ip.family != AF_INET))
			return 0;
		for (k = 0; k < nic->nfindings; k++)
			if (nic->findings[k].sev >= RN_SEV_WARN &&
			    !rn_doctor_script_fixes(nic->findings[k].cause))
				return 0;
	}
	return 1;
}

/*
 * Peers outside the NICs' subnets, where nothing said the fabric is routed: a flat fabric and
 * an L3 one whose per-NIC tables lack their default look the same from here, so the report
 * names what it did not judge, where such a peer's traffic would leave, and how to have it
 * judged. One line for each egress.
 */
static void print_offnet(struct rn_doctor *d, FILE *f)
{
	char dev[IF_NAMESIZE + 8];
	int i, k, first = 1, mgmt;

	for (i = 0; i < d->nnics; i++) {
		const struct rn_nic *nic = &d->nics[i].nic;
		int seen = 0;

		if (!nic->offnet_unjudged)
			continue;
		for (k = 0; k < i && !seen; k++)
			seen = d->nics[k].nic.offnet_unjudged &&
			       d->nics[k].nic.offnet_oif == nic->offnet_oif;
		if (seen)
			continue;
		if (first)
			fprintf(f,
				"not judged: peers outside the NICs' subnets (nothing here says the "
				"fabric is routed: no gateway route out of a RoCE NIC, no /31 or /30, "
				"no --gateway or --peer-subnet)\n");
		first = 0;
		fprintf(f, "  from");
		for (k = i; k < d->nnics; k++)
			if (d->nics[k].nic.offnet_unjudged &&
			    d->nics[k].nic.offnet_oif == nic->offnet_oif)
				fprintf(f, " %s", d->nics[k].nic.netdev);
		mgmt = rn_host_mgmt_ifindex(d->host, nic->ip.family);
		if (!nic->offnet_oif)
			fprintf(f, ": no route reaches them\n");
		else
			fprintf(f, ": they would be reached through %s%s\n",
				link_name(d, nic->offnet_oif, dev, sizeof(dev)),
				nic->offnet_oif == mgmt ? " (main's default route)" : "");
	}
	if (!first)
		fprintf(f,
			"  on an L3 fabric (GPU hosts behind a router): roce-doctor --peer-subnet "
			"CIDR --gateway NETDEV=GW judges them and prints each NIC's default\n");
}

static void print_host(struct rn_doctor *d)
{
	FILE *f = d->out;
	char name[96], ip[INET6_ADDRSTRLEN + 16], mtu[24], gid[32], tb[24], rt[48], lb[32];
	int i, k, nprob = 0, nfind = 0, wn = 6, wd = 6;

	fprintf(f, "roce-doctor %s on %s: %d RoCE NIC%s%s\n", RN_DOCTOR_VERSION, d->hostname,
		d->nnics, d->nnics == 1 ? "" : "s", d->netdevs ? " (named with --netdev)" : "");
	if (d->skipped[0] && (d->ndevs || !d->netdevs))
		fprintf(f, "%s: %s\n", d->ndevs ? "ports left out" : "no RDMA port", d->skipped);
	if (!d->nnics) {
		fprintf(f,
			"nothing to check: name netdevs with --netdev to check them without RDMA\n");
		return;
	}
	for (i = 0; i < d->nnics; i++) {
		wn = RN_MAX(wn, (int)strlen(d->nics[i].nic.ibdev) + 3);
		wd = RN_MAX(wd, (int)strlen(d->nics[i].nic.netdev));
	}
	fprintf(f, "\n%-*s %-*s %-4s %-9s %-18s %-10s %-5s %-16s %s\n", wn, "NIC", wd, "NETDEV",
		"LINK", "MTU/ACT", "IP", "GID", "TABLE", "ROUTE", "VERDICT");
	for (i = 0; i < d->nnics; i++) {
		struct rn_doctor_nic *dn = &d->nics[i];
		const struct rn_nic *nic = &dn->nic;

		if (dn->dev)
			rn_doctor_nic_name(nic, name, sizeof(name));
		else
			snprintf(name, sizeof(name), "-");
		if (nic->active_mtu)
			snprintf(mtu, sizeof(mtu), "%d/%d", nic->mtu,
				 rn_ibv_mtu_bytes(nic->active_mtu));
		else
			snprintf(mtu, sizeof(mtu), "%d/-", nic->mtu);
		if (nic->ip.family) {
			char a[INET6_ADDRSTRLEN];

			int more = -1;

			for (k = 0; k < d->host->naddrs; k++)
				more += d->host->addrs[k].ifindex == nic->ifindex &&
					d->host->addrs[k].ip.family == nic->ip.family;
			/* "+N": more addresses of the family on the netdev (--json lists them) */
			snprintf(ip, sizeof(ip), more > 0 ? "%s/%d+%d" : "%s/%d",
				 rn_ip_str(&nic->ip, a, sizeof(a)), nic->prefixlen, more);
		} else {
			snprintf(ip, sizeof(ip), "-");
		}
		if (nic->gid_index >= 0)
			snprintf(gid, sizeof(gid), "%d %s", nic->gid_index, dn->gid_why);
		else
			snprintf(gid, sizeof(gid), "- %s", dn->gid_why);
		if (dn->rule_prio >= 0)
			table_str(dn->rule_table, tb, sizeof(tb));
		else
			snprintf(tb, sizeof(tb), "main");
		route_str(d, dn, rt, sizeof(rt));
		fprintf(f, "%-*s %-*s %-4s %-9s %-18s %-10s %-5s %-16s %s", wn, name, wd,
			nic->netdev, nic->link_up ? "up" : "down", mtu, ip, gid, tb, rt,
			dn->err ? "error" : rn_verdict_str(nic->verdict));
		for (k = 0; k < nic->nfindings; k++)
			fprintf(f, "%s%s", k ? "," : " ",
				rn_cause_label(nic->findings[k].cause, lb, sizeof(lb)));
		fprintf(f, "%s\n", dn->err ? strerror(-dn->err) : "");
		nprob += rn_doctor_nic_problem(dn);
		nfind += nic->nfindings;
	}
	print_sysctls(d, f);
	print_rules(d, f);
	for (i = 0; i < d->nnics && d->verbose; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];
		char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

		if (!dn->nic.route.dst.family)
			continue;
		if (!i)
			fprintf(f, "route get (the kernel's answer for a peer in the subnet):\n");
		fprintf(f, "  %s from %s:", rn_ip_str(&dn->nic.route.dst, a, sizeof(a)),
			rn_ip_str(&dn->nic.ip, b, sizeof(b)));
		fprintf(f, " %s", route_str(d, dn, rt, sizeof(rt)));
		if (dn->nic.route.oif_err)
			fprintf(f, "; oif %s: %s\n", dn->nic.netdev,
				strerror(-dn->nic.route.oif_err));
		else
			fprintf(f, "; oif %s: table %s\n", dn->nic.netdev,
				table_str(dn->nic.route.route_oif.table, tb, sizeof(tb)));
	}

	fprintf(f, "\n");
	if (nfind)
		print_findings(d, f, nfind);
	if (d->skipped_problem)
		fprintf(f,
			"  ports left out (see above): ip link set dev <netdev> up; rdma link show\n");
	print_offnet(d, f);
	if (!rn_doctor_host_problems(d)) {
		fprintf(f, "verdict: all good (%d NIC%s checked in %.1f ms)\n", d->nnics,
			d->nnics == 1 ? "" : "s", d->gather_ms);
		goto timing;
	}
	fprintf(f, "verdict: %d of %d NIC%s need%s fixing (checked in %.1f ms)", nprob, d->nnics,
		d->nnics == 1 ? "" : "s", nprob == 1 ? "s" : "", d->gather_ms);
	/* The script only where it fixes every problem: it refuses a NIC without IPv4. */
	if (nprob && script_fixes_all(d)) {
		fprintf(f, "; all at once: roce-policy-routing");
		for (i = 0; i < d->nnics; i++)
			fprintf(f, " %s", d->nics[i].nic.netdev);
	}
	fprintf(f, "\n");
timing:
	if (d->verbose)
		fprintf(f,
			"timing: netlink snapshot %.2f ms, RDMA discovery %.2f ms, verdicts %.2f ms\n",
			d->snapshot_ms, d->discover_ms, d->verdict_ms);
}

/* ---- JSON ------------------------------------------------------------------------- */

static void json_route(struct rn_doctor *d, struct rn_json *j, const char *key, int err,
		       const struct rn_nl_route *r)
{
	char b[INET6_ADDRSTRLEN], dev[IF_NAMESIZE + 8];

	rn_json_obj(j, key);
	if (err) {
		rn_json_str(j, "error", strerror(-err));
	} else {
		rn_json_str(j, "dev", link_name(d, r->oif, dev, sizeof(dev)));
		rn_json_int(j, "table", r->table);
		rn_json_str(j, "via", r->gw.family ? rn_ip_str(&r->gw, b, sizeof(b)) : NULL);
		rn_json_str(j, "src",
			    r->prefsrc.family ? rn_ip_str(&r->prefsrc, b, sizeof(b)) : NULL);
	}
	rn_json_close(j, '}');
}

void rn_doctor_json_nic(struct rn_doctor *d, struct rn_json *j, const struct rn_doctor_nic *dn)
{
	const struct rn_nic *nic = &dn->nic;
	char b[INET6_ADDRSTRLEN], g[48], dev[IF_NAMESIZE + 8];
	int k;

	rn_json_obj(j, NULL);
	rn_json_str(j, "netdev", nic->netdev);
	rn_json_str(j, "ibdev", dn->dev ? nic->ibdev : NULL);
	if (dn->dev)
		rn_json_int(j, "port", nic->port);
	else
		rn_json_null(j, "port");
	rn_json_int(j, "ifindex", nic->ifindex);
	rn_json_str(j, "mac", rn_mac_str(nic->mac, b, sizeof(b)));
	rn_json_bool(j, "link_up", nic->link_up);
	rn_json_int(j, "mtu", nic->mtu);
	if (nic->active_mtu)
		rn_json_int(j, "active_mtu", rn_ibv_mtu_bytes(nic->active_mtu));
	else
		rn_json_null(j, "active_mtu");
	rn_json_arr(j, "addrs");
	for (k = 0; k < d->host->naddrs; k++) {
		const struct rn_nl_addr *a = &d->host->addrs[k];
		char s[INET6_ADDRSTRLEN + 8];

		if (a->ifindex != nic->ifindex)
			continue;
		snprintf(s, sizeof(s), "%s/%d", rn_ip_str(&a->ip, b, sizeof(b)), a->prefixlen);
		rn_json_str(j, NULL, s);
	}
	rn_json_close(j, ']');
	rn_json_str(j, "ip", nic->ip.family ? rn_ip_str(&nic->ip, b, sizeof(b)) : NULL);
	rn_json_int(j, "prefixlen", nic->prefixlen);
	if (nic->gid_index >= 0)
		rn_json_int(j, "gid_index", nic->gid_index);
	else
		rn_json_null(j, "gid_index");
	rn_json_str(j, "gid", nic->ip.family ? rn_gid_str(&nic->gid, g, sizeof(g)) : NULL);
	rn_json_str(j, "gid_why", dn->gid_why);
	rn_json_int(j, "table", nic->table);
	if (dn->rule_prio >= 0) {
		rn_json_obj(j, "rule");
		rn_json_int(j, "priority", dn->rule_prio);
		rn_json_int(j, "table", dn->rule_table);
		rn_json_close(j, '}');
	} else {
		rn_json_null(j, "rule");
	}
	rn_json_obj(j, "sysctl");
	rn_json_sysctls(j, "all", &d->host->all);
	rn_json_sysctls(j, "dev", &dn->sys_dev);
	rn_json_sysctls(j, "effective", &dn->sys_eff);
	rn_json_close(j, '}');
	if (dn->nic.route.dst.family) {
		rn_json_obj(j, "route");
		rn_json_str(j, "dst", rn_ip_str(&dn->nic.route.dst, b, sizeof(b)));
		json_route(d, j, "lookup", dn->nic.route.err, &dn->nic.route.route);
		json_route(d, j, "lookup_oif", dn->nic.route.oif_err, &dn->nic.route.route_oif);
		rn_json_close(j, '}');
	} else {
		rn_json_null(j, "route");
	}
	/* peers outside the subnet, unjudged (nothing says the fabric is routed) */
	if (nic->offnet_unjudged) {
		rn_json_obj(j, "offnet_unjudged");
		if (nic->offnet_oif)
			rn_json_str(j, "egress", link_name(d, nic->offnet_oif, dev, sizeof(dev)));
		else
			rn_json_null(j, "egress");
		rn_json_close(j, '}');
	} else {
		rn_json_null(j, "offnet_unjudged");
	}
	rn_json_str(j, "verdict", dn->err ? "error" : rn_verdict_str(nic->verdict));
	rn_json_str(j, "error", dn->err ? strerror(-dn->err) : NULL);
	rn_json_arr(j, "findings");
	for (k = 0; k < nic->nfindings; k++)
		rn_json_finding(j, &nic->findings[k], d->hostname);
	rn_json_close(j, ']');
	rn_json_close(j, '}');
}

static void json_host(struct rn_doctor *d, int rc)
{
	struct rn_json j;
	char cfg[2048];
	int i, k, c, seen[RN_CAUSE__MAX] = { 0 };

	rn_json_begin(&j, d->out);
	rn_json_str(&j, "schema", "roce-doctor/1");
	rn_json_str(&j, "version", RN_DOCTOR_VERSION);
	rn_json_str(&j, "command", "host");
	rn_json_str(&j, "host", d->hostname);
	rn_config_format(&d->cfg, cfg, sizeof(cfg));
	rn_json_str(&j, "config", cfg);
	rn_json_str(&j, "skipped", d->skipped[0] ? d->skipped : NULL);
	rn_json_arr(&j, "nics");
	for (i = 0; i < d->nnics; i++)
		rn_doctor_json_nic(d, &j, &d->nics[i]);
	rn_json_close(&j, ']');
	rn_json_arr(&j, "rules");
	for (i = 0; i < d->host->nrules; i++) {
		const struct rn_nl_rule *r = &d->host->rules[i];
		char b[INET6_ADDRSTRLEN + 8], a[INET6_ADDRSTRLEN];

		if (r->family != AF_INET)
			continue;
		rn_json_obj(&j, NULL);
		rn_json_int(&j, "priority", r->priority);
		snprintf(b, sizeof(b), "%s/%d", rn_ip_str(&r->src, a, sizeof(a)), r->src_len);
		rn_json_str(&j, "from", r->src_len ? b : "all");
		rn_json_int(&j, "table", r->table);
		rn_json_close(&j, '}');
	}
	rn_json_close(&j, ']');
	rn_json_obj(&j, "summary");
	rn_json_int(&j, "nics", d->nnics);
	rn_json_arr(&j, "causes");
	for (i = 0; i < d->nnics; i++)
		for (k = 0; k < d->nics[i].nic.nfindings; k++) {
			c = d->nics[i].nic.findings[k].cause;
			if (!seen[c]++)
				rn_json_str(&j, NULL, rn_cause_id((enum rn_cause)c));
		}
	rn_json_close(&j, ']');
	rn_json_bool(&j, "ports_left_out", d->skipped_problem);
	rn_json_int(&j, "elapsed_us", (long long)(d->gather_ms * 1000));
	rn_json_int(&j, "snapshot_us", (long long)(d->snapshot_ms * 1000));
	rn_json_int(&j, "discover_us", (long long)(d->discover_ms * 1000));
	rn_json_int(&j, "verdict_us", (long long)(d->verdict_ms * 1000));
	rn_json_int(&j, "exit", rc);
	rn_json_close(&j, '}');
	if (rc == RN_DOCTOR_NODEV) {
		/* the tools' error object (rn_cli.h), beside the report that explains it */
		rn_cli_json_error_obj(&j, rc, NULL,
				      "no RDMA device to check (name netdevs with --netdev)");
	}
	rn_json_end(&j);
}

int rn_doctor_cmd_host(struct rn_doctor *d, int argc, char **argv)
{
	int rc;

	if (d->prom || d->textfile)
		return rn_doctor_prom(d, d->textfile, rn_doctor_gather(d));
	if (d->cni)
		return rn_doctor_cni(d, rn_doctor_gather(d));
	if (d->nfd)
		return rn_doctor_nfd(d, d->nfd, rn_doctor_gather(d));
	if (rn_doctor_gather(d))
		return RN_DOCTOR_ERROR;
	rc = rn_doctor_host_problems(d) ? RN_DOCTOR_PROBLEMS : RN_DOCTOR_OK;
	if (!d->nnics && !d->netdevs)
		rc = RN_DOCTOR_NODEV;
	if (d->json)
		json_host(d, rc);
	else
		print_host(d);
	return rc;
}
