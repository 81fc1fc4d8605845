// SPDX-License-Identifier: MIT
/*
 * roce-doctor: is this host (and the path to another one) fit for RoCE on
 * several NICs in one subnet? Command table with the default first, as
 * iproute2's rdma tool; one context struct passed everywhere.
 *
 *   roce-doctor [host]                  this host's NICs, verdicts and fixes
 *   roce-doctor peer <ip> [--port N]    pair checks against a `serve` on <ip>
 *   roce-doctor serve [--port N]        the other end of `peer`
 *
 * Exit (rn_cli.h, the tools' table): 0 no problem found, 1 problems found, 2 usage or
 * system error, 3 no RDMA device to check. Options may come anywhere (getopt permutes).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "doctor.h"
#include "rn_log.h"

double rn_doctor_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *rn_doctor_sev_str(enum rn_severity s)
{
	return s == RN_SEV_FATAL ? "fatal" : s == RN_SEV_WARN ? "warn" : "info";
}

const char *rn_doctor_nic_name(const struct rn_nic *nic, char *buf, size_t len)
{
	if (nic->ibdev[0])
		snprintf(buf, len, "%s:%d", nic->ibdev, nic->port);
	else
		snprintf(buf, len, "%s", nic->netdev);
	return buf;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: roce-doctor [options] [host]\n"
		"       roce-doctor [options] peer <ip|name> [--port N] [--timeout S] [--no-rdma]\n"
		"       roce-doctor [options] serve [--port N] [--once] [--timeout S]\n"
		"\n"
		"Checks that RoCE works on a host whose NICs share one IP subnet (ARP flux, policy\n"
		"routing, rp_filter, MTU, GIDs) with the same checks and messages as the NCCL plugin\n"
		"(libnccl-net-roce), and names the commands that fix each problem.\n"
		"\n"
		"Commands:\n"
		"  host          (default) every RoCE NIC: netdev, link, MTU vs active MTU, the GID the\n"
		"                plugin would choose and why, ARP/rp_filter sysctls (all, per netdev,\n"
		"                effective), policy rules and tables, the kernel's route answer\n"
		"  peer IP       connect to `roce-doctor serve` on the other host, exchange inventories,\n"
		"                and check every NIC pair both ways: neighbour MAC and (as root) who\n"
		"                answers ARP (ARP flux), route symmetry, MTU, and an RDMA RC ping\n"
		"                where both ends have RDMA ports\n"
		"  serve         answer `peer` (run it on the other host first; TCP port %d)\n"
		"\n"
		"Options:\n"
		"  -n, --netdev LIST   check these netdevs (comma list), also without an RDMA device\n"
		"  -j, --json          machine-readable output (stable keys, cause ids)\n"
		"  -p, --port N        TCP port of serve/peer (default %d)\n"
		"  -t, --timeout S     peer: connect and I/O timeout (default 10);\n"
		"                      serve: give up after S seconds without a client (default: never)\n"
		"      --once          serve: exit after one client (status 0/1 as that session)\n"
		"      --no-rdma       peer: skip the RDMA RC probe\n"
		"      --prometheus    host: the verdicts as Prometheus metrics (text exposition)\n"
		"      --textfile FILE host: the same metrics written atomically to FILE\n"
		"                      (node-exporter's textfile collector: FILE ends in .prom)\n"
		"      --cni           host, in a pod: the fix as NetworkAttachmentDefinitions (JSON,\n"
		"                      stdout: macvlan/sriov + tuning + sbr per NIC); how to attach\n"
		"                      them and the NET_ADMIN commands on stderr\n"
		"      --nfd FILE      host: node-feature-discovery labels (verdict, causes) to FILE\n"
		"  -v, --verbose       show the library's log lines (NCCL_DEBUG=INFO style)\n"
		"  -h, --help          this text\n"
		"  -V, --version       print the version\n"
		"Options may come before or after the command. With --json, an error (exit 2)\n"
		"prints {\"error\": {\"code\": 2, \"kind\": \"usage\"|\"system\", \"message\": \"...\"}}\n"
		"on stdout. A report names the checks it could not run (\"skipped\") and never\n"
		"says all good for them.\n"
		"\n"
		"Environment: the plugin's knobs (NCCL_IB_HCA, NCCL_IB_GID_INDEX, NCCL_IB_ADDR_FAMILY,\n"
		"NCCL_IB_ADDR_RANGE, NCCL_IB_ROCE_VERSION_NUM, NCCL_ROCE_NEIGH_TIMEOUT_MS, ...) select and\n"
		"judge NICs exactly as the plugin would; NCCL_ROCE_ROUTE_CHECK=off still checks.\n"
		"The RDMA probe uses NCCL_IB_TIMEOUT=14 and NCCL_IB_RETRY_CNT=3 unless they are set.\n"
		"\n"
		"Exit status: 0 no problem found, 1 problems found, 2 usage or system error,\n"
		"3 no RDMA device to check (and no --netdev).\n",
		RN_DOCTOR_PORT, RN_DOCTOR_PORT);
}

struct rn_doctor_cmd {
	const char *name;
	int (*fn)(struct rn_doctor *d, int argc, char **argv);
};

/* The default action first (rdma/link.c). */
static const struct rn_doctor_cmd cmds[] = {
	{ "host", rn_doctor_cmd_host },
	{ "peer", rn_doctor_cmd_peer },
	{ "serve", rn_doctor_cmd_serve },
};

#define PROG "roce-doctor"

int rn_doctor_err(struct rn_doctor *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": %s\n", msg);
	if (!d->err[0])
		snprintf(d->err, sizeof(d->err), "%s", msg);
	return RN_DOCTOR_ERROR;
}

static int parse_int(FILE *jerr, const char *opt, const char *s, int lo, int hi, int *out)
{
	if (rn_cli_int(s, lo, hi, out))
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "%s: '%s' is not a number in %d..%d",
				    opt, s, lo, hi);
	return 0;
}

/* The words after the command: host and serve take none, peer one address (a command
 * added later checks its own). */
static int check_args(FILE *jerr, const struct rn_doctor_cmd *cmd, int nargs, char **args)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int want = cmd->fn == rn_doctor_cmd_peer, g;

	if (cmd->fn != rn_doctor_cmd_host && cmd->fn != rn_doctor_cmd_peer &&
	    cmd->fn != rn_doctor_cmd_serve)
		return 0;

	if (nargs < want)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "peer needs the other host's "
				    "address (where `roce-doctor serve` runs)");
	if (nargs > want)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "unexpected argument '%s' (%s "
				    "takes %s)", args[want], cmd->name,
				    want ? "one address" : "no arguments");
	if (!want)
		return 0;
	g = getaddrinfo(args[0], NULL, &hints, &res);
	if (g)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "peer: cannot resolve '%s': %s",
				    args[0], gai_strerror(g));
	freeaddrinfo(res);
	return 0;
}

static int log_verbose;
static char last_warn[1024]; /* the library formats a line into 1 KiB too */

/* The doctor prints findings itself; the library's lines show with -v only. */
static void log_sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		     const char *msg)
{
	if (level == RN_LOG_WARN)
		snprintf(last_warn, sizeof(last_warn), "%s", msg);
	if (log_verbose && (int)level <= (log_verbose > 1 ? RN_LOG_TRACE : RN_LOG_INFO))
		fprintf(stderr, "%s%s\n", level == RN_LOG_WARN ? "WARN " : "", msg);
}

void rn_doctor_log_init(int verbose)
{
	log_verbose = verbose;
	rn_log_set_sink(log_sink);
}

const char *rn_doctor_last_warn(void)
{
	return last_warn;
}

void rn_doctor_clear_warn(void)
{
	last_warn[0] = '\0';
}

/* roce-doctor-mpi links this file for the helpers above and has its own main. */
#ifndef RN_DOCTOR_NO_MAIN
int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "netdev", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "once", no_argument, NULL, 'o' },
		{ "no-rdma", no_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "textfile", required_argument, NULL, 'F' },
		{ "cni", no_argument, NULL, 'C' },
		{ "nfd", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	FILE *jerr = rn_cli_wants_json(argc, argv, 1) ? stdout : NULL;
	struct rn_doctor *d;
	const struct rn_doctor_cmd *cmd = &cmds[0];
	int c, rc = RN_DOCTOR_ERROR, once_set = 0, port_set = 0, rdma_set = 0, first;
	size_t i;

	d = calloc(1, sizeof(*d));
	if (!d)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "out of memory");
	d->out = stdout;
	d->port = RN_DOCTOR_PORT;
	d->timeout_s = -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:jp:t:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!*optarg) {
				rn_cli_error(PROG, jerr, rc, "--netdev: empty list");
				goto out;
			}
			d->netdevs = optarg;
			break;
		case 'j':
			d->json = 1;
			break;
		case 'p':
			if (parse_int(jerr, "--port", optarg, 1, 65535, &d->port))
				goto out;
			port_set = 1;
			break;
		case 't':
			if (parse_int(jerr, "--timeout", optarg, 1, 86400, &d->timeout_s))
				goto out;
			break;
		case 'o':
			d->once = 1;
			once_set = 1;
			break;
		case 'R':
			d->no_rdma = 1;
			rdma_set = 1;
			break;
		case 'v':
			d->verbose++;
			break;
		case 'P':
			d->prom = 1;
			break;
		case 'F':
			d->textfile = optarg;
			break;
		case 'C':
			d->cni = 1;
			break;
		case 'N':
			d->nfd = optarg;
			break;
		case 'h':
			usage(stdout);
			rc = RN_DOCTOR_OK;
			goto out;
		case 'V':
			rc = rn_cli_version(PROG);
			goto out;
		default:
			rn_cli_bad_option(PROG, jerr, c, argv, optind, optopt);
			goto out;
		}
	}
	first = optind;
	if (optind < argc) {
		for (i = 0; i < RN_ARRAY_SIZE(cmds); i++)
			if (!strcmp(argv[optind], cmds[i].name))
				break;
		if (i == RN_ARRAY_SIZE(cmds)) {
			rn_cli_error(PROG, jerr, rc, "unknown command '%s' (host, peer, serve)",
				     argv[optind]);
			goto out;
		}
		cmd = &cmds[i];
		first++;
	}
	if ((once_set && cmd->fn != rn_doctor_cmd_serve) ||
	    (rdma_set && cmd->fn != rn_doctor_cmd_peer) ||
	    ((port_set || d->timeout_s > 0) && cmd->fn == rn_doctor_cmd_host)) {
		rn_cli_error(PROG, jerr, rc, "%s does not take %s", cmd->name,
			     once_set ? "--once" : rdma_set ? "--no-rdma" :
			     port_set ? "--port" : "--timeout");
		goto out;
	}
	if ((d->prom || d->textfile) && (cmd->fn != rn_doctor_cmd_host || d->json)) {
		rn_cli_error(PROG, jerr, rc, "--prometheus and --textfile go with the host command, "
			     "without --json");
		goto out;
	}
	if ((d->cni || d->nfd) && (cmd->fn != rn_doctor_cmd_host || d->json || d->prom ||
				   d->textfile || (d->cni && d->nfd))) {
		rn_cli_error(PROG, jerr, rc, "--cni and --nfd go with the host command, one at a "
			     "time, without --json, --prometheus or --textfile");
		goto out;
	}
	/* every word checked before any work (no netlink, no device, no socket) */
	if (check_args(jerr, cmd, argc - first, argv + first))
		goto out;
	if (d->netdevs) {
		char names[RN_DOCTOR_MAX_NICS][IF_NAMESIZE];

		if (rn_doctor_netdev_list(d, d->netdevs, names, RN_DOCTOR_MAX_NICS) < 0) {
			if (jerr)
				rn_cli_json_error(jerr, rc, d->err);
			goto out;
		}
	}

	d->bad_env = rn_config_load(&d->cfg);
	if (gethostname(d->hostname, sizeof(d->hostname) - 1))
		snprintf(d->hostname, sizeof(d->hostname), "?");
	rn_doctor_log_init(d->verbose);
	if (d->bad_env)
		fprintf(stderr, "roce-doctor: %d bad NCCL_* value%s in the environment (defaults used; -v shows which)\n",
			d->bad_env, d->bad_env == 1 ? "" : "s");
	rc = cmd->fn(d, argc - optind, argv + optind);
	/* a report was printed unless the command failed (2): then the error object */
	if (rc == RN_DOCTOR_ERROR && d->json)
		rn_cli_json_error_kind(d->out, rc, "system", d->err[0] ? d->err : "failed (see stderr)");
	rn_probe_release();
	rn_doctor_release(d);
out:
	free(d);
	return rc;
}
#endif /* RN_DOCTOR_NO_MAIN */
