// SPDX-License-Identifier: MIT
/*
 * `roce-doctor --prometheus` / `--textfile FILE`: the host check as Prometheus text
 * exposition (format 0.0.4), so a fleet's monitoring alerts on a host that drifted (a
 * reboot lost the rules, a NIC bounced). --textfile is for node-exporter's textfile
 * collector: written to a mkstemp FILE.tmp.XXXXXX in the same directory, synced, then renamed,
 * so the collector never reads half a file. A host whose facts cannot be read still
 * gets a file, with roce_doctor_up 0.
 *
 * Series: roce_doctor_up, roce_doctor_info{version,host}, roce_host_problems,
 * roce_host_nics, roce_nic_verdict{device,port,netdev,ibdev} (0 ok, 1 warn, 2 refused,
 * 3 error), roce_nic_link_up, roce_nic_mtu_bytes, roce_nic_finding{device,port,netdev,ibdev,
 * cause,severity} 1 for every cause found (absent: not found), the check's duration
 * and a timestamp. The link's history: roce_nic_carrier_changes_total,
 * roce_nic_carrier_down_total, roce_nic_link_downed_total (RDMA ports) and
 * roce_nic_link_flapping (the link-flapping finding, 0 or 1). Every counter of each RDMA
 * port, by its driver's own name and in base units (src/counters.c reads them):
 * roce_nic_hw_counters_total{device,port,netdev,counter}, labelled as node-exporter's
 * infiniband collector labels its series (device, port) so the two join, and
 * roce_nic_hw_counters_info{...,driver,lacks}: whose table the plugin's diagnosis reads
 * and the roles it has no counter of. The plugin's moves: roce_nic_failovers_total and
 * roce_nic_failover_last_timestamp_seconds{device,port,netdev} (src/fostate.c). NOTE: "hw_counters", not "hw_counter": promtool's
 * lint refuses a name that holds its type ("_counter_"), even a gauge's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "doctor.h"
#include "rn_fostate.h"
#include "doctor_journal.h"
#include "doctor_mesh.h"

/* A label value: backslash, double quote and newline escaped (the format's rules). */
void rn_doctor_prom_label(FILE *f, const char *name, const char *val, int comma)
{
	fprintf(f, "%s%s=\"", comma ? "," : "", name);
	for (; val && *val; val++) {
		if (*val == '\\' || *val == '"')
			fprintf(f, "\\%c", *val);
		else if (*val == '\n')
			fputs("\\n", f);
		else
			fputc(*val, f);
	}
	fputc('"', f);
}

/*
 * A NIC's labels: the RDMA port as node-exporter's infiniband collector names it (device,
 * port; empty on a netdev without one), the netdev, and the RDMA device again as ibdev.
 * NOTE: ibdev is the name 0.3.0 used; it is kept for one release so that rules and
 * dashboards written against it keep working (CHANGELOG.md), then removed.
 */
static void nic_labels(FILE *f, const char *name, const struct rn_doctor_nic *dn)
{
	char port[16];

	snprintf(port, sizeof(port), "%d", dn->dev ? dn->nic.port : 0);
	fprintf(f, "%s{", name);
	rn_doctor_prom_label(f, "device", dn->dev ? dn->nic.ibdev : "", 0);
	rn_doctor_prom_label(f, "port", dn->dev ? port : "", 1);
	rn_doctor_prom_label(f, "netdev", dn->nic.netdev, 1);
	rn_doctor_prom_label(f, "ibdev", dn->dev ? dn->nic.ibdev : "", 1);
}

static void help_typed(FILE *f, const char *name, const char *type, const char *text)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

static void help(FILE *f, const char *name, const char *text)
{
	help_typed(f, name, "gauge", text);
}

/* One of the link's counts per NIC that has it (-1: unread, no series). */
static void flap_series(FILE *f, const struct rn_doctor *d, const char *name, size_t off)
{
	int i;

	for (i = 0; i < d->nnics; i++) {
		long v = *(const long *)((const char *)&d->nics[i].flap + off);

		if (v < 0)
			continue;
		nic_labels(f, name, &d->nics[i]);
		fprintf(f, "} %ld\n", v);
	}
}

static int has_cause(const struct rn_nic *nic, enum rn_cause c)
{
	int k;

	for (k = 0; k < nic->nfindings; k++)
		if (nic->findings[k].cause == c)
			return 1;
	return 0;
}

static void port_labels(FILE *f, const char *name, const struct rn_doctor_nic *dn)
{
	char port[16];

	snprintf(port, sizeof(port), "%d", dn->nic.port);
	fprintf(f, "%s{", name);
	rn_doctor_prom_label(f, "device", dn->nic.ibdev, 0);
	rn_doctor_prom_label(f, "port", port, 1);
	rn_doctor_prom_label(f, "netdev", dn->nic.netdev, 1);
}

static void write_link_history(FILE *f, const struct rn_doctor *d)
{
	int i;

	help_typed(
		f, "roce_nic_carrier_changes_total", "counter",
		"The netdev's carrier changes, up and down, since it was made (sysfs carrier_changes).");
	flap_series(f, d, "roce_nic_carrier_changes_total",
		    offsetof(struct rn_flap_facts, carrier_changes));
	help_typed(
		f, "roce_nic_carrier_down_total", "counter",
		"The netdev's lost carriers since it was made (sysfs carrier_down_count), what link-flapping counts.");
	flap_series(f, d, "roce_nic_carrier_down_total",
		    offsetof(struct rn_flap_facts, carrier_down));
	help_typed(f, "roce_nic_link_downed_total", "counter",
		   "The RDMA port's link downs (link_downed).");
	flap_series(f, d, "roce_nic_link_downed_total",
		    offsetof(struct rn_flap_facts, link_downed));
	help(f, "roce_nic_link_flapping",
	     "1 when the host check found the link flapping (link-flapping: more than 5 lost carriers in 24 h), else 0.");
	for (i = 0; i < d->nnics; i++) {
		nic_labels(f, "roce_nic_link_flapping", &d->nics[i]);
		fprintf(f, "} %d\n", has_cause(&d->nics[i].nic, RN_CAUSE_LINK_FLAPPING));
	}
}

/*
 * The plugin's record of comms moved off each RDMA port (include/rn_fostate.h): every RDMA
 * port found here (0 when the record names it not), and every one the record names,
 * found here or not (a NIC whose link is down has no GID, so the host check lists it
 * without its RDMA port: it is the one that failed).
 */
#define FO_NICS 64

static void fo_series(FILE *f, const char *name, const char *ibdev, int port, const char *netdev,
		      uint64_t v)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", port);
	fprintf(f, "%s{", name);
	rn_doctor_prom_label(f, "device", ibdev, 0);
	rn_doctor_prom_label(f, "port", p, 1);
	rn_doctor_prom_label(f, "netdev", netdev, 1);
	fprintf(f, "} %" PRIu64 "\n", v);
}

static void write_failovers(FILE *f, const struct rn_doctor *d)
{
	struct rn_fostate_nic rec[FO_NICS], all[FO_NICS];
	int nrec = rn_fostate_nics(rn_fostate_dir(), rec, FO_NICS), n = 0, i, k;

	if (nrec < 0)
		return; /* an unreadable record: no series rather than a count of 0 */
	for (i = 0; i < d->nnics && n < FO_NICS; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];

		if (!dn->dev)
			continue;
		memset(&all[n], 0, sizeof(all[n]));
		snprintf(all[n].ibdev, sizeof(all[n].ibdev), "%s", dn->nic.ibdev);
		snprintf(all[n].netdev, sizeof(all[n].netdev), "%s", dn->nic.netdev);
		all[n++].port = dn->nic.port;
	}
	for (k = 0; k < nrec; k++) {
		for (i = 0; i < n; i++)
			if (all[i].port == rec[k].port && !strcmp(all[i].ibdev, rec[k].ibdev))
				break;
		if (i == n && n == FO_NICS)
			continue;
		if (i == n)
			all[n++] = rec[k];
		all[i].n = rec[k].n;
		all[i].last = rec[k].last;
	}
	help_typed(
		f, "roce_nic_failovers_total", "counter",
		"Comms the plugin moved off this RDMA port to a spare NIC pair (port failover), from the host's record in NCCL_ROCE_STATE_DIR.");
	for (i = 0; i < n; i++)
		fo_series(f, "roce_nic_failovers_total", all[i].ibdev, all[i].port, all[i].netdev,
			  all[i].n);
	help(f, "roce_nic_failover_last_timestamp_seconds",
	     "When a comm last moved off this RDMA port (Unix time; 0: never).");
	for (i = 0; i < n; i++)
		fo_series(f, "roce_nic_failover_last_timestamp_seconds", all[i].ibdev, all[i].port,
			  all[i].netdev, all[i].last);
}

/*
 * The plugin's journal of failed comms (include/rn_errlog.h), per RDMA port and cause: a
 * series only for what the journal holds (a cause is not known before a comm fails of it).
 * The rotated half counts too; a count that falls back is a rotation (a counter reset).
 */
#define JOURNAL_SERIES 128

static void jn_series(FILE *f, const char *name, const struct rn_journal_count *c, long long v)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", c->port);
	fprintf(f, "%s{", name);
	rn_doctor_prom_label(f, "device", c->ibdev, 0);
	rn_doctor_prom_label(f, "port", p, 1);
	rn_doctor_prom_label(f, "netdev", c->netdev, 1);
	rn_doctor_prom_label(f, "cause", c->cause, 1);
	fprintf(f, "} %lld\n", v);
}

void rn_doctor_prom_comm_failures(FILE *f)
{
	struct rn_journal_count *c = calloc(JOURNAL_SERIES, sizeof(*c));
	int n = c ? rn_journal_counts(rn_fostate_dir(), c, JOURNAL_SERIES) : 0, i;

	help_typed(
		f, "roce_comm_failures_total", "counter",
		"Comms the plugin failed on this RDMA port, by cause (the verdict catalogue's id), from the host's journal in NCCL_ROCE_STATE_DIR (errors.jsonl).");
	for (i = 0; i < n; i++)
		jn_series(f, "roce_comm_failures_total", &c[i], c[i].n);
	help(f, "roce_comm_failure_last_timestamp_seconds",
	     "When a comm last failed on this RDMA port of this cause (Unix time).");
	for (i = 0; i < n; i++)
		jn_series(f, "roce_comm_failure_last_timestamp_seconds", &c[i], c[i].last);
	free(c);
}

static void write_hw_counters(FILE *f, const struct rn_doctor *d)
{
	int i, k;

	help(f, "roce_nic_hw_counters_info",
	     "The counter table the plugin's diagnosis reads on the RDMA port (driver: rxe, mlx5, bnxt_re, irdma, unknown) and the roles it has no counter of (lacks).");
	for (i = 0; i < d->nnics; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];

		if (!dn->ctr_driver)
			continue;
		port_labels(f, "roce_nic_hw_counters_info", dn);
		rn_doctor_prom_label(f, "driver", dn->ctr_driver, 1);
		rn_doctor_prom_label(f, "lacks", dn->ctr_lacks, 1);
		fputs("} 1\n", f);
	}
	help_typed(
		f, "roce_nic_hw_counters_total", "counter",
		"The RDMA port's counters (sysfs hw_counters/ and counters/) by the driver's own name, in base units: port_xmit_data and port_rcv_data in bytes (sysfs counts 4-byte words).");
	for (i = 0; i < d->nnics; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];

		for (k = 0; k < dn->nctr; k++) {
			port_labels(f, "roce_nic_hw_counters_total", dn);
			rn_doctor_prom_label(f, "counter", dn->ctr[k].name, 1);
			fprintf(f, "} %" PRIu64 "\n", dn->ctr[k].value);
		}
	}
}

static void write_metrics(FILE *f, struct rn_doctor *d, int up, int rc)
{
	int i, k;

	help(f, "roce_doctor_up",
	     "1 when roce-doctor could read this host's links, rules and RDMA devices.");
	fprintf(f, "roce_doctor_up %d\n", up);
	help(f, "roce_doctor_info", "roce-doctor's version and the host it checked.");
	fputs("roce_doctor_info{", f);
	rn_doctor_prom_label(f, "version", RN_DOCTOR_VERSION, 0);
	rn_doctor_prom_label(f, "host", d->hostname, 1);
	fputs("} 1\n", f);
	help(f, "roce_doctor_last_run_timestamp_seconds", "Unix time of this check.");
	fprintf(f, "roce_doctor_last_run_timestamp_seconds %lld\n", (long long)time(NULL));
	if (!up)
		return;
	help(f, "roce_doctor_check_duration_seconds", "How long the host check took.");
	fprintf(f, "roce_doctor_check_duration_seconds %.6f\n", d->gather_ms / 1000);
	help(f, "roce_host_problems",
	     "1 when anything on this host needs fixing (roce-doctor exit 1).");
	fprintf(f, "roce_host_problems %d\n", rc == RN_DOCTOR_PROBLEMS);
	help(f, "roce_host_nics", "RoCE NICs checked.");
	fprintf(f, "roce_host_nics %d\n", d->nnics);
	help(f, "roce_nic_verdict",
	     "The plugin's verdict on the NIC: 0 ok, 1 warn, 2 refused, 3 error (facts unreadable).");
	for (i = 0; i < d->nnics; i++) {
		nic_labels(f, "roce_nic_verdict", &d->nics[i]);
		fprintf(f, "} %d\n", d->nics[i].err ? 3 : (int)d->nics[i].nic.verdict);
	}
	help(f, "roce_nic_link_up", "1 when the netdev (and its RDMA port) is up.");
	for (i = 0; i < d->nnics; i++) {
		nic_labels(f, "roce_nic_link_up", &d->nics[i]);
		fprintf(f, "} %d\n", !!d->nics[i].nic.link_up);
	}
	help(f, "roce_nic_mtu_bytes", "The netdev's MTU.");
	for (i = 0; i < d->nnics; i++) {
		nic_labels(f, "roce_nic_mtu_bytes", &d->nics[i]);
		fprintf(f, "} %d\n", d->nics[i].nic.mtu);
	}
	help(f, "roce_nic_finding",
	     "1 for each cause (catalogue id) the host check found on the NIC; absent when not found.");
	for (i = 0; i < d->nnics; i++) {
		const struct rn_nic *nic = &d->nics[i].nic;

		for (k = 0; k < nic->nfindings; k++) {
			int dup = 0, m;

			/* one series per cause: a cause found twice on a NIC is still one label set */
			for (m = 0; m < k; m++)
				dup |= nic->findings[m].cause == nic->findings[k].cause;
			if (dup)
				continue;
			nic_labels(f, "roce_nic_finding", &d->nics[i]);
			rn_doctor_prom_label(f, "cause", rn_cause_id(nic->findings[k].cause), 1);
			rn_doctor_prom_label(f, "severity", rn_doctor_sev_str(nic->findings[k].sev),
					     1);
			fputs("} 1\n", f);
		}
	}
	write_link_history(f, d);
	write_hw_counters(f, d);
	write_failovers(f, d);
	rn_doctor_prom_comm_failures(f);
}

struct prom_args {
	struct rn_doctor *d;
	int ok, rc;
};

static void prom_fill(FILE *f, const void *arg)
{
	const struct prom_args *a = arg;

	write_metrics(f, a->d, a->ok, a->rc);
}

int rn_doctor_prom(struct rn_doctor *d, const char *textfile, int gather_err)
{
	int rc = gather_err                 ? RN_DOCTOR_ERROR :
		 rn_doctor_host_problems(d) ? RN_DOCTOR_PROBLEMS :
					      RN_DOCTOR_OK;
	struct prom_args a = { d, !gather_err, rc };
	int ret;

	if (!textfile) {
		write_metrics(d->out, d, !gather_err, rc);
		return fflush(d->out) ? RN_DOCTOR_ERROR : rc;
	}
	ret = rn_doctor_write_file(textfile, prom_fill, &a);
	if (ret) {
		fprintf(stderr, "roce-doctor: --textfile %s: %s\n", textfile, strerror(-ret));
		return RN_DOCTOR_ERROR;
	}
	return rc;
}
