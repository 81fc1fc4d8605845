// SPDX-License-Identifier: MIT
/*
 * roce-doctor: is this host (and the path to another one) fit for RoCE on
 * several NICs in one subnet? Command table with the default first, as
 * iproute2's rdma tool; one context struct passed everywhere.
 *
 *   roce-doctor [host]                  this host's NICs, verdicts and fixes
 *   roce-doctor peer <ip> [--port N]    pair checks against a `serve` on <ip>
 *   roce-doctor serve [--listen ADDR]   the other end of `peer`
 *
 * Exit (rn_cli.h, the tools' table): 0 no problem found, 1 problems found, 2 usage or
 * system error, 3 no RDMA device to check. Options may come anywhere (getopt permutes).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "doctor_mesh.h"
#include "doctor_probe.h"
#include "rn_log.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: roce-doctor [options] [host]\n"
		"       roce-doctor [options] peer <ip|name> [--port N] [--timeout S] [--no-rdma]\n"
		"       roce-doctor [options] serve [--listen ADDR] [--port N] [--once] [--timeout S]\n"
		"       roce-doctor health [--netdev LIST] [--node NAME] [--no-drain] [--timeout S]\n"
		"                          [--scontrol PATH] [--journal-window S]\n"
		"                          [--mesh FILE|URL]\n"
		"       roce-doctor mesh (--hosts FILE | --hosts-cmd CMD) [--group NAME] [--netdev LIST]\n"
		"                        [--listen-metrics [ADDR:]PORT] [--textfile-dir DIR] [--rate N]\n"
		"                        [--interval MS] [--probe-port N] [--echo-rate N]\n"
		"                        [--check-interval S] [--reload S] [--max-hosts N] [--duration S]\n"
		"                        [--rc-rate N] [--rc-qps N] [--no-rc]\n"
		"       roce-doctor localize (FILE... | --prometheus URL) [--rtt-groups]\n"
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
		"  serve         answer `peer` (run it on the other host first; TCP port %d); it\n"
		"                tells this host's NICs to whoever asks: --listen on the management\n"
		"                address, and let only your hosts reach the port (firewall)\n"
		"  health        for Slurm's HealthCheckProgram and Prolog: drain this node on a\n"
		"                problem, resume it when clean if roce-doctor drained it (the first\n"
		"                word; roce-doctor health --help)\n"
		"  mesh          the long-running agent, one per host: answers peers, probes a\n"
		"                rotating sample of peer NICs at a bounded rate (UDP, and RC\n"
		"                where both NICs have RDMA ports), runs the pair\n"
		"                checks, and exports per-pair metrics (roce-doctor mesh --help)\n"
		"  localize      which NIC, host or link between groups the mesh's metrics blame\n"
		"\n"
		"Options:\n"
		"  -n, --netdev LIST   check these netdevs (comma list), also without an RDMA device\n"
		"  -j, --json          machine-readable output (stable keys, cause ids)\n"
		"  -p, --port N        TCP port of serve/peer (default %d)\n"
		"      --listen ADDR   serve: on this IP address of this host only (default: every\n"
		"                      address of both families)\n"
		"  -t, --timeout S     peer: the whole run, queue and probes included (default 600;\n"
		"                      each message at most 10 s plus the server's checks);\n"
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
		"      --peer-subnet CIDR  host, peer: peers also sit behind a router in CIDR (an\n"
		"                      address alone is one peer; repeatable, or a comma list):\n"
		"                      each NIC's route to them is judged (NCCL_ROCE_PEER_SUBNETS)\n"
		"      --gateway GW, --gateway NETDEV=GW  the NICs' (one NIC's) gateway where no route\n"
		"                      names it, for the fix's per-NIC default (NCCL_ROCE_GATEWAYS)\n"
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

#define PROG "roce-doctor"

/* The options only some commands take (the others refuse them), in the order checked. */
enum {
	OPT_ONCE = 1,
	OPT_NO_RDMA = 2,
	OPT_PORT = 4,
	OPT_TIMEOUT = 8,
	OPT_PROM = 16,
	OPT_LISTEN = 32
};

struct rn_doctor_cmd {
	const char *name;
	int (*fn)(struct rn_doctor *d, int argc, char **argv);
	int nargs;                             /* words after the command */
	const char *takes;                     /* what they are, for the usage error */
	const char *missing;                   /* the error when they are missing */
	int (*check)(FILE *jerr, char **args); /* before any work, NULL: nothing to check */
	unsigned int opts;                     /* OPT_*: the command's own options */
};

static int check_address(FILE *jerr, char **args)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	int g = getaddrinfo(args[0], NULL, &hints, &res);

	if (g)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "peer: cannot resolve '%s': %s",
				    args[0], gai_strerror(g));
	freeaddrinfo(res);
	return 0;
}

/*
 * --listen: an IPv4 address in dotted-quad form or an IPv6 address, as inet_pton reads them
 * (not inet_aton's "127.1" or "0x7fffffff"); the kernel says at bind time whether it is
 * this host's.
 */
static int check_listen(FILE *jerr, const char *addr)
{
	unsigned char buf[sizeof(struct in6_addr)];

	if (inet_pton(AF_INET, addr, buf) != 1 && inet_pton(AF_INET6, addr, buf) != 1)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR,
				    "--listen: '%s' is not an IP "
				    "address (dotted quad or IPv6)",
				    addr);
	return 0;
}

/* The default action first (rdma/link.c); a new command is one entry and its own file. */
static const struct rn_doctor_cmd cmds[] = {
	{ "host", rn_doctor_cmd_host, 0, "no arguments", NULL, NULL, OPT_PROM },
	{ "peer", rn_doctor_cmd_peer, 1, "one address",
	  "peer needs the other host's address "
	  "(where `roce-doctor serve` runs)",
	  check_address, OPT_NO_RDMA | OPT_PORT | OPT_TIMEOUT },
	{ "serve", rn_doctor_cmd_serve, 0, "no arguments", NULL, NULL,
	  OPT_ONCE | OPT_PORT | OPT_TIMEOUT | OPT_LISTEN },
};

static int parse_int(FILE *jerr, const char *opt, const char *s, int lo, int hi, int *out)
{
	if (rn_cli_int(s, lo, hi, out))
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR,
				    "%s: '%s' is not a number in %d..%d", opt, s, lo, hi);
	return 0;
}

/*
 * --peer-subnet CIDR (an address alone: one peer) and --gateway GW|NETDEV=GW, checked as
 * their knobs check NCCL_ROCE_PEER_SUBNETS and NCCL_ROCE_GATEWAYS, appended to @list.
 */
static int add_list(FILE *jerr, char *list, const char *arg, int cidr)
{
	char one[RN_CFG_STR_MAX];
	struct rn_ip ip;
	int i, len, ret, n = 0;

	for (i = 0; (ret = cidr ? rn_cfg_cidr_at(arg, i, &ip, &len) :
				  rn_cfg_gateway_at(arg, i, one, sizeof(one), &ip)) != -ENOENT;
	     i++) {
		if (ret)
			return rn_cli_error(
				PROG, jerr, RN_DOCTOR_ERROR, "%s: '%s' is not %s",
				cidr ? "--peer-subnet" : "--gateway", arg,
				cidr ? "a comma list of address[/prefix]" :
				       "a comma list of GW or NETDEV=GW (IP addresses)");
		n++;
	}
	if (!n || strlen(list) + strlen(arg) + 2 > RN_CFG_STR_MAX)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "%s: %s",
				    cidr ? "--peer-subnet" : "--gateway",
				    n ? "too long a list" : "empty");
	if (*list)
		strcat(list, ",");
	strcat(list, arg);
	return 0;
}

/* The options' list after the environment's: an entry of either counts. */
static int join_list(FILE *jerr, char *cfg, const char *opt, const char *name)
{
	size_t l = strlen(cfg);

	if (!*opt)
		return 0;
	if (l + strlen(opt) + 2 > RN_CFG_STR_MAX)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR,
				    "%s: the list with the "
				    "environment's is too long",
				    name);
	if (l)
		strcat(cfg, ",");
	strcat(cfg, opt);
	return 0;
}

/* The options given that @cmd does not take, and the words after it: before any work. */
static int check_cmd(FILE *jerr, const struct rn_doctor_cmd *cmd, unsigned int given, int json,
		     int nargs, char **args)
{
	/* by bit; --prometheus and --textfile (OPT_PROM) have their own line below */
	static const char *const names[] = { "--once",    "--no-rdma", "--port",
					     "--timeout", NULL,        "--listen" };
	unsigned int i;

	for (i = 0; i < RN_ARRAY_SIZE(names); i++)
		if (names[i] && (given & ~cmd->opts & (1u << i)))
			return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "%s does not take %s",
					    cmd->name, names[i]);
	if ((given & OPT_PROM) && (!(cmd->opts & OPT_PROM) || json))
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR,
				    "--prometheus and --textfile go "
				    "with the host command, without --json");
	if (nargs < cmd->nargs)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR, "%s", cmd->missing);
	if (nargs > cmd->nargs)
		return rn_cli_error(PROG, jerr, RN_DOCTOR_ERROR,
				    "unexpected argument '%s' (%s "
				    "takes %s)",
				    args[cmd->nargs], cmd->name, cmd->takes);
	return cmd->check ? cmd->check(jerr, args) : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "netdev", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "port", required_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 't' },
		{ "listen", required_argument, NULL, 'L' },
		{ "once", no_argument, NULL, 'o' },
		{ "no-rdma", no_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "textfile", required_argument, NULL, 'F' },
		{ "cni", no_argument, NULL, 'C' },
		{ "nfd", required_argument, NULL, 'N' },
		{ "peer-subnet", required_argument, NULL, 'S' },
		{ "gateway", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	FILE *jerr = rn_cli_wants_json(argc, argv, 1) ? stdout : NULL;
	struct rn_doctor *d;
	const struct rn_doctor_cmd *cmd = &cmds[0];
	const char *netdevs = NULL;
	/* appended to the environment's lists once it is read */
	char subnets[RN_CFG_STR_MAX] = "", gateways[RN_CFG_STR_MAX] = "";
	unsigned int given = 0;
	int c, rc = RN_DOCTOR_ERROR, first;
	size_t i;

	if (argc > 1 && !strcmp(argv[1], "health")) /* parses its own options */
		return rn_doctor_health(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "mesh"))
		return rn_doctor_mesh(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "localize"))
		return rn_doctor_localize(argc - 1, argv + 1);
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
			netdevs = optarg;
			break;
		case 'j':
			d->json = 1;
			break;
		case 'p':
			if (parse_int(jerr, "--port", optarg, 1, 65535, &d->port))
				goto out;
			given |= OPT_PORT;
			break;
		case 't':
			if (parse_int(jerr, "--timeout", optarg, 1, 86400, &d->timeout_s))
				goto out;
			given |= OPT_TIMEOUT;
			break;
		case 'L':
			if (check_listen(jerr, optarg))
				goto out;
			d->listen = optarg;
			given |= OPT_LISTEN;
			break;
		case 'o':
			d->once = 1;
			given |= OPT_ONCE;
			break;
		case 'R':
			d->no_rdma = 1;
			given |= OPT_NO_RDMA;
			break;
		case 'v':
			d->verbose++;
			break;
		case 'P':
			d->prom = 1;
			given |= OPT_PROM;
			break;
		case 'F':
			d->textfile = optarg;
			given |= OPT_PROM;
			break;
		case 'C':
			d->cni = 1;
			break;
		case 'N':
			d->nfd = optarg;
			break;
		case 'S':
		case 'G':
			if (add_list(jerr, c == 'S' ? subnets : gateways, optarg, c == 'S'))
				goto out;
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
			rn_cli_error(PROG, jerr, rc,
				     "unknown command '%s' (host, peer, serve, "
				     "health, mesh, localize)",
				     argv[optind]);
			goto out;
		}
		cmd = &cmds[i];
		first++;
	}
	if ((d->cni || d->nfd) && (cmd->fn != rn_doctor_cmd_host || d->json || d->prom ||
				   d->textfile || (d->cni && d->nfd))) {
		rn_cli_error(PROG, jerr, rc,
			     "--cni and --nfd go with the host command, one at a "
			     "time, without --json, --prometheus or --textfile");
		goto out;
	}
	/* the files the doctor would replace: node_exporter reads *.prom alone */
	if (d->textfile || d->nfd) {
		char why[256];

		if (rn_doctor_target_ok(d->textfile ? d->textfile : d->nfd,
					d->textfile ? ".prom" : NULL, why, sizeof(why))) {
			rn_cli_error(PROG, jerr, rc, "--%s: %s", d->textfile ? "textfile" : "nfd",
				     why);
			goto out;
		}
	}
	/* every word checked before any work (no netlink, no device, no socket) */
	if (check_cmd(jerr, cmd, given, d->json, argc - first, argv + first))
		goto out;
	if (netdevs && rn_doctor_set_netdevs(d, netdevs)) {
		if (jerr)
			rn_cli_json_error(jerr, rc, d->err);
		goto out;
	}

	d->bad_env = rn_config_load(&d->cfg);
	if (join_list(jerr, d->cfg.peer_subnets, subnets, "--peer-subnet") ||
	    join_list(jerr, d->cfg.gateways, gateways, "--gateway"))
		goto out;
	if (gethostname(d->hostname, sizeof(d->hostname) - 1))
		snprintf(d->hostname, sizeof(d->hostname), "?");
	rn_doctor_log_init(d->verbose);
	if (d->bad_env)
		fprintf(stderr,
			"roce-doctor: %d bad NCCL_* value%s in the environment (defaults used; -v shows which)\n",
			d->bad_env, d->bad_env == 1 ? "" : "s");
	rc = cmd->fn(d, argc - first, argv + first);
	/* a report was printed unless the command failed (2): then the error object */
	if (rc == RN_DOCTOR_ERROR && d->json)
		rn_cli_json_error_kind(d->out, rc, d->err_kind ? d->err_kind : "system",
				       d->err[0] ? d->err : "failed (see stderr)");
	rn_probe_release(d);
	rn_doctor_release(d);
out:
	free(d);
	return rc;
}
