// SPDX-License-Identifier: MIT
/*
 * "health": the host check as a Slurm HealthCheckProgram or Prolog (NHC's contract).
 * It judges this host's NICs with the library's verdicts as the host command does, in
 * bounded time (an alarm ends it; each scontrol call has its own deadline), and
 *   - on a problem prints "ERROR: roce-doctor: Health check failed: <reason>", drains
 *     this node with that reason, "roce: <cause> <nics>; ... fix: <command>" (under
 *     slurmdbd's 255 bytes), and exits 1;
 *   - when the host is clean again resumes the node only if the reason is one of ours
 *     (prefix "roce:"), never a node an admin drained, and exits 0;
 *   - leaves a node that is drained, down or failed with another reason as it is (its
 *     reason says more than ours would), also while the host is broken: exit 1.
 * Exit 2: the check itself could not run (usage, facts unreadable, scontrol failed or
 * timed out): the node is left as it is, a broken tool must not drain a cluster.
 * The node is --node, else $SLURMD_NODENAME (slurmd sets it for the health check and the
 * Prolog), else the short host name. Slurm runs the program with no arguments and an
 * empty environment: scripts/roce-health-check is what slurm.conf names.
 * The plugin's journal of failed comms (NCCL_ROCE_STATE_DIR/errors.jsonl) counts too: a
 * comm that failed within --journal-window seconds with a cause that names a node drains
 * that node, this one (its reason says what failed, where and when; the node comes back
 * once the window has passed and the host is clean) or the peer, when the cause's fix runs
 * there (replies-elsewhere): the peer's own health check resumes it once it is clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "doctor.h"
#include "doctor_journal.h"
#include "doctor_mesh.h"
#include "rn_fostate.h"

#define PROG "roce-doctor health"
/* Every reason we set starts so; a reason without it is someone else's (an admin's). */
#define RN_HEALTH_PREFIX "roce:"
/*
 * slurmctld keeps any length, but slurmdbd records a node's reason in its event table as
 * TINYTEXT: more than 255 bytes is cut there (sacctmgr show event).
 */
#define RN_HEALTH_REASON_MAX 255

struct rn_health {
	const char *node;
	const char *scontrol;
	int drain;
	int timeout_s;
	int verbose;
	int journal_s;    /* the journal's records of the last this many seconds count */
	const char *mesh; /* --mesh: the local mesh agent's metrics (file or URL), NULL none */
};

static volatile pid_t child_pid;

/* The time bound: whatever hangs (a netlink answer, scontrol), the check ends here. */
static void on_alarm(int sig)
{
	static const char msg[] = "ERROR: roce-doctor: Health check failed: timed out "
				  "(the node is left as it is)\n";
	ssize_t w;

	(void)sig;
	if (child_pid > 0)
		kill(child_pid, SIGKILL);
	w = write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	(void)w;
	_exit(RN_DOCTOR_ERROR);
}

/*
 * Run scontrol with @args (NULL-terminated, after the program name); its stdout and
 * stderr into @out. The exit status, or -errno (-ETIMEDOUT after @timeout_ms).
 */
static int scontrol(const struct rn_health *h, const char *const *args, char *out, size_t outlen,
		    int timeout_ms)
{
	const char *argv[16] = { h->scontrol };
	double end = rn_doctor_now_ms() + timeout_ms;
	int fds[2], st = 0, i;
	size_t len = 0;
	pid_t pid;

	for (i = 0; i < 14 && args[i]; i++)
		argv[i + 1] = args[i];
	out[0] = '\0';
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (!pid) {
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		/* Slurm gives the health check no PATH: execvp then searches /bin:/usr/bin */
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	close(fds[1]);
	for (;;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int left = (int)(end - rn_doctor_now_ms()), n;
		char buf[512];
		ssize_t r;

		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			child_pid = 0;
			close(fds[0]);
			return -ETIMEDOUT;
		}
		n = poll(&p, 1, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue;
		r = read(fds[0], buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (len + 1 < outlen) {
			size_t take = RN_MIN((size_t)r, outlen - 1 - len);

			memcpy(out + len, buf, take);
			len += take;
			out[len] = '\0';
		}
	}
	close(fds[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	child_pid = 0;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return -ECHILD;
}

/* What a failed scontrol call said: its first line, or why it gave none. */
static const char *scontrol_err(int ret, char *out, int timeout_ms, char *buf, size_t len)
{
	out[strcspn(out, "\n")] = '\0';
	if (ret == -ETIMEDOUT)
		snprintf(buf, len, "timed out (no answer in %.1f s)", timeout_ms / 1000.0);
	else if (ret < 0)
		snprintf(buf, len, "%s", strerror(-ret));
	else
		snprintf(buf, len, "exit %d: %s", ret, out);
	return buf;
}

/* The node's state word (IDLE+DRAIN, DOWN+DRAIN, ...) and reason from `scontrol show node -o`. */
static int node_state(const struct rn_health *h, char *state, size_t slen, char *reason,
		      size_t rlen, int timeout_ms)
{
	const char *args[] = { "show", "node", h->node, "--oneliner", NULL };
	char out[8192], err[256], *s, *r, *e;
	int ret;

	ret = scontrol(h, args, out, sizeof(out), timeout_ms);
	if (ret) {
		fprintf(stderr, PROG ": scontrol show node %s: %s\n", h->node,
			scontrol_err(ret, out, timeout_ms, err, sizeof(err)));
		return ret < 0 ? ret : -EIO;
	}
	s = strstr(out, " State=");
	if (!s) {
		fprintf(stderr, PROG ": scontrol show node %s: no State= in '%.200s'\n", h->node,
			out);
		return -EPROTO;
	}
	s += strlen(" State=");
	snprintf(state, slen, "%.*s", (int)strcspn(s, " \n"), s);
	reason[0] = '\0';
	/* Reason=<text> [<user>@<time>] comes last: the text is what lies before " [" */
	r = strstr(out, " Reason=");
	if (r) {
		r += strlen(" Reason=");
		e = strstr(r, " [");
		if (!e)
			e = r + strcspn(r, "\n");
		snprintf(reason, rlen, "%.*s", (int)(e - r), r);
	}
	return 0;
}

static int finding_counts(const struct rn_finding *f)
{
	return f->sev >= RN_SEV_WARN;
}

/* Append to @buf (always terminated; a cut tail is dropped, the caller checks the length). */
static void add(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

/*
 * The drain reason: "roce: <cause> <nic>,<nic>; <cause> <nic> fix: <command>", causes
 * in catalogue order. @short_lists: a cause on every NIC says "all", a longer list names
 * its first NIC and a count; @names: the fix names the NICs (roce-policy-routing finds
 * the RoCE netdevs itself, but not netdevs named with --netdev).
 */
static void reason_build(const struct rn_doctor *d, char *buf, size_t len, int short_lists,
			 int names)
{
	int c, i, k, script = 1, ncauses = 0;

	snprintf(buf, len, RN_HEALTH_PREFIX);
	if (!d->nnics) {
		add(buf, len, " no RoCE NIC found see: rdma link show");
		return;
	}
	for (c = 1; c < RN_CAUSE__MAX; c++) {
		int n = 0, first = -1;

		for (i = 0; i < d->nnics; i++)
			for (k = 0; k < d->nics[i].nic.nfindings; k++)
				if (d->nics[i].nic.findings[k].cause == (enum rn_cause)c &&
				    finding_counts(&d->nics[i].nic.findings[k])) {
					if (first < 0)
						first = i;
					n++;
					break;
				}
		if (!n)
			continue;
		add(buf, len, "%s %s ", ncauses++ ? ";" : "", rn_cause_id((enum rn_cause)c));
		if (!rn_doctor_script_fixes((enum rn_cause)c))
			script = 0;
		if (short_lists && n == d->nnics && n > 1) {
			add(buf, len, "all");
			continue;
		}
		if (short_lists && n > 2) {
			add(buf, len, "%s,+%d", d->nics[first].nic.netdev, n - 1);
			continue;
		}
		for (i = 0, n = 0; i < d->nnics; i++)
			for (k = 0; k < d->nics[i].nic.nfindings; k++)
				if (d->nics[i].nic.findings[k].cause == (enum rn_cause)c &&
				    finding_counts(&d->nics[i].nic.findings[k])) {
					add(buf, len, "%s%s", n++ ? "," : "",
					    d->nics[i].nic.netdev);
					break;
				}
	}
	for (i = 0; i < d->nnics; i++) {
		if (d->nics[i].err) {
			add(buf, len, "%s error %s", ncauses++ ? ";" : "", d->nics[i].nic.netdev);
			script = 0;
		} else if (d->nics[i].nic.nfindings && d->nics[i].nic.ip.family != AF_INET) {
			script = 0; /* the script configures IPv4 NICs only */
		}
	}
	if (d->skipped_problem) {
		add(buf, len, "%s ports-left-out", ncauses++ ? ";" : "");
		script = 0;
	}
	if (!ncauses) { /* a verdict without a finding to name */
		add(buf, len, " problem");
		script = 0;
	}
	if (!script) {
		add(buf, len, " see: roce-doctor%s%s", d->netdevs ? " --netdev " : "",
		    d->netdevs ? d->netdevs : "");
		return;
	}
	add(buf, len, " fix: roce-policy-routing --persist");
	for (i = 0; names && i < d->nnics; i++)
		add(buf, len, " %s", d->nics[i].nic.netdev);
}

/* The shortest form that fits: full lists, then short lists, then (RDMA NICs) no names. */
static void reason_fit(const struct rn_doctor *d, char *buf, size_t len)
{
	char full[1024];
	size_t n;

	reason_build(d, full, sizeof(full), 0, 1);
	if (strlen(full) > RN_HEALTH_REASON_MAX)
		reason_build(d, full, sizeof(full), 1, 1);
	if (strlen(full) > RN_HEALTH_REASON_MAX && !d->netdevs)
		reason_build(d, full, sizeof(full), 1, 0);
	if (strlen(full) > RN_HEALTH_REASON_MAX)
		snprintf(full + RN_HEALTH_REASON_MAX - 3, 4, "...");
	/* cut to @len as the caller's buffer is (not a format: gcc -O1 cannot see the cut above) */
	n = strnlen(full, len - 1);
	memcpy(buf, full, n);
	buf[n] = '\0';
}

static int ours(const char *reason)
{
	return !strncmp(reason, RN_HEALTH_PREFIX, strlen(RN_HEALTH_PREFIX));
}

static int drained(const char *state)
{
	return strstr(state, "DRAIN") != NULL;
}

/* Out of service for some reason: drained, down or failed (a reason not ours stays). */
static int out_of_service(const char *state)
{
	return drained(state) || strstr(state, "DOWN") || strstr(state, "FAIL");
}

/*
 * Drain @node (@problems) with @why, or resume it when it is clean and we drained it; a
 * peer (@self 0) is only ever drained here: its own health check resumes it.
 */
static int act(const struct rn_health *h, const char *node, int self, int problems, const char *why)
{
	struct rn_health on = *h;
	char state[128], cur[1024], out[2048], arg_node[300], arg_reason[400];
	const char *args[6];
	int ret, tmo = h->timeout_s * 1000 / 3;

	on.node = node;
	ret = node_state(&on, state, sizeof(state), cur, sizeof(cur), tmo);
	if (ret)
		return RN_DOCTOR_ERROR;
	if (h->verbose)
		printf(PROG ": node %s State=%s Reason=%s\n", node, state, cur);
	if (!self && (!problems || (drained(state) && ours(cur))))
		return RN_DOCTOR_OK; /* drained already for this, or by the peer's own check */
	snprintf(arg_node, sizeof(arg_node), "nodename=%s", node);
	args[0] = "update";
	args[1] = arg_node;
	if (problems) {
		if (out_of_service(state) && !ours(cur)) {
			printf(PROG ": node %s stays %s as it was (Reason=%s)\n", node,
			       drained(state) ? "drained" : "out of service", cur);
			return RN_DOCTOR_PROBLEMS;
		}
		if (drained(state) && !strcmp(cur, why))
			return RN_DOCTOR_PROBLEMS;
		snprintf(arg_reason, sizeof(arg_reason), "reason=%s", why);
		args[2] = "state=drain";
		args[3] = arg_reason;
		args[4] = NULL;
	} else {
		if (!drained(state) || !ours(cur))
			return RN_DOCTOR_OK;
		args[2] = "state=resume";
		args[3] = NULL;
	}
	ret = scontrol(h, args, out, sizeof(out), tmo);
	if (ret) {
		char err[256];

		fprintf(stderr, PROG ": scontrol update %s %s: %s\n", arg_node, args[2],
			scontrol_err(ret, out, tmo, err, sizeof(err)));
		return RN_DOCTOR_ERROR;
	}
	if (self)
		printf(PROG ": node %s %s\n", node,
		       problems ? "drained" : "resumed (roce-doctor had drained it)");
	else
		printf(PROG ": node %s drained (the peer at fault): %s\n", node, why);
	return problems ? RN_DOCTOR_PROBLEMS : RN_DOCTOR_OK;
}

/*
 * --mesh: does the mesh agent's view of the pairs between this host and @node confirm a
 * fault there now? 1 yes (a pair of it down), 0 no (all up, or no pair with it), -1 its
 * view could not be read; @note says which, for the log.
 */
static int mesh_confirms(const struct rn_health *h, const char *node, char *note, size_t len)
{
	char err[256], cause[48];
	char *text = rn_mesh_read(h->mesh, err, sizeof(err));
	int up, down, n;

	if (!text) {
		snprintf(note, len,
			 "not confirmed: the mesh agent's view (%s) could not be read: %s", h->mesh,
			 err);
		return -1;
	}
	n = rn_mesh_pairs_with(text, node, &up, &down, cause, sizeof(cause));
	free(text);
	if (!n)
		snprintf(note, len, "not confirmed: the mesh agent's view (%s) has no pair with it",
			 h->mesh);
	else if (!down)
		snprintf(note, len,
			 "not confirmed: the mesh agent sees its %d pair series with it up "
			 "(the fault may be gone)",
			 up);
	else
		snprintf(note, len,
			 "confirmed by the mesh agent: %d of %d pair series with it down%s%s", down,
			 n, cause[0] ? ", cause " : "", cause);
	return n && down;
}

/*
 * Each peer the journal puts at fault, once, its newest record: drained with the cause
 * (said only, with --no-drain). With --mesh, only when the mesh agent's view of its pairs
 * confirms it (a journal record is the past; a peer drained on it alone may be a healthy
 * node blamed for a fault long fixed). This node's own state does not hang on them.
 */
static void journal_peers(const struct rn_health *h, const struct rn_journal *jn)
{
	char why[RN_HEALTH_REASON_MAX + 1], note[512] = "";
	int i, k, done;

	for (i = 0; jn && i < jn->n; i++) {
		const struct rn_journal_hit *p = &jn->hit[i];

		if (!p->peer || !strcmp(p->node, h->node))
			continue;
		for (k = 0, done = 0; k < i && !done; k++)
			done = jn->hit[k].peer && !strcmp(jn->hit[k].node, p->node);
		if (done)
			continue;
		p = rn_journal_latest(jn, 1, p->node);
		rn_journal_reason(p, why, sizeof(why));
		k = h->mesh ? mesh_confirms(h, p->node, note, sizeof(note)) : 1;
		if (h->mesh)
			printf(PROG ": node %s (the journal: %s): %s\n", p->node, p->cause, note);
		if (!h->drain)
			printf(PROG ": node %s is at fault: %s\n", p->node, why);
		else if (k > 0)
			act(h, p->node, 0, 1, why);
		else
			printf(PROG ": node %s not drained: the journal's %s unconfirmed\n",
			       p->node, p->cause);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: roce-doctor health [--netdev LIST] [--node NAME] [--no-drain] [--timeout S]\n"
		"                          [--scontrol PATH] [--journal-window S] [--mesh FILE|URL] [-v]\n"
		"\n"
		"The host check for Slurm's HealthCheckProgram and Prolog (LBNL NHC's contract):\n"
		"on a problem it prints 'ERROR: roce-doctor: Health check failed: <reason>', drains\n"
		"this node with the reason 'roce: <cause> <nics>; ... fix: <command>' and exits 1;\n"
		"when the host is clean it resumes the node only if roce-doctor drained it (the\n"
		"reason starts 'roce:'), never a node drained for another reason, and exits 0.\n"
		"\n"
		"Options:\n"
		"  -n, --netdev LIST   check these netdevs (comma list) instead of the RDMA ports\n"
		"  -N, --node NAME     the Slurm node (default $SLURMD_NODENAME, else the host name)\n"
		"      --no-drain      check and print only; leave the node as it is\n"
		"  -t, --timeout S     give up after S seconds, node untouched (default 20;\n"
		"                      slurmd kills a health check after 60)\n"
		"      --scontrol PATH the scontrol to run (default: scontrol on PATH, /usr/bin)\n"
		"      --journal-window S  a comm the plugin failed within S seconds (its journal,\n"
		"                      $NCCL_ROCE_STATE_DIR/errors.jsonl) drains the node its cause\n"
		"                      names: this one, or the peer (default 900; 0: not read)\n"
		"      --mesh FILE|URL the local mesh agent's metrics (its textfile, or\n"
		"                      http://127.0.0.1:PORT/metrics): a peer the journal blames is\n"
		"                      drained only when the agent sees a pair with it down now\n"
		"  -v, --verbose       say what was checked and found, and how long it took\n"
		"\n"
		"Exit status: 0 healthy, 1 problems found (node drained), 2 the check could not\n"
		"run (usage, facts unreadable, scontrol failed or timed out; node untouched).\n");
}

/* health's options into @d and @h: 0 go on, 1 done (--help printed), -1 a bad one (said). */
static int health_args(int argc, char **argv, struct rn_doctor *d, struct rn_health *h)
{
	static const struct option opts[] = {
		{ "netdev", required_argument, NULL, 'n' },
		{ "node", required_argument, NULL, 'N' },
		{ "no-drain", no_argument, NULL, 'D' },
		{ "timeout", required_argument, NULL, 't' },
		{ "scontrol", required_argument, NULL, 'S' },
		{ "journal-window", required_argument, NULL, 'J' },
		{ "mesh", required_argument, NULL, 'M' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:N:t:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (rn_doctor_set_netdevs(d, optarg) < 0)
				return -1;
			break;
		case 'N':
			if (!*optarg || strchr(optarg, ' ')) {
				rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
					     "--node: bad node name '%s'", optarg);
				return -1;
			}
			h->node = optarg;
			break;
		case 'D':
			h->drain = 0;
			break;
		case 't':
			if (rn_cli_int(optarg, 1, 3600, &h->timeout_s)) {
				rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
					     "--timeout: '%s' is not a number in 1..3600", optarg);
				return -1;
			}
			break;
		case 'S':
			h->scontrol = optarg;
			break;
		case 'J':
			if (rn_cli_int(optarg, 0, 30 * 86400, &h->journal_s)) {
				rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
					     "--journal-window: '%s' "
					     "is not a number of seconds in 0..2592000",
					     optarg);
				return -1;
			}
			break;
		case 'M':
			h->mesh = optarg;
			break;
		case 'v':
			h->verbose++;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			rn_cli_bad_option(PROG, NULL, c, argv, optind, optopt);
			return -1;
		}
	}
	if (optind < argc) {
		rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
			     "unexpected argument '%s' (health takes "
			     "none)",
			     argv[optind]);
		return -1;
	}
	return 0;
}

int rn_doctor_health(int argc, char **argv)
{
	struct rn_health h = {
		.scontrol = "scontrol", .drain = 1, .timeout_s = 20, .journal_s = 900
	};
	const struct rn_journal_hit *here;
	struct rn_journal *jn = NULL;
	char why[RN_HEALTH_REASON_MAX + 1], host[64];
	struct rn_doctor *d;
	int c, rc = RN_DOCTOR_ERROR, problems;
	double t0 = rn_doctor_now_ms();

	d = calloc(1, sizeof(*d));
	if (!d)
		return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR, "out of memory");
	d->out = stdout;
	c = health_args(argc, argv, d, &h);
	if (c) {
		rc = c > 0 ? RN_DOCTOR_OK : RN_DOCTOR_ERROR;
		goto out;
	}
	if (gethostname(host, sizeof(host) - 1))
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	snprintf(d->hostname, sizeof(d->hostname), "%s", host);
	if (!h.node)
		h.node = getenv("SLURMD_NODENAME");
	if (!h.node || !*h.node) {
		host[strcspn(host, ".")] = '\0';
		h.node = host;
	}
	signal(SIGALRM, on_alarm);
	alarm((unsigned int)h.timeout_s);

	d->bad_env = rn_config_load(&d->cfg);
	rn_doctor_log_init(h.verbose > 1);
	if (rn_doctor_gather(d)) {
		printf("ERROR: roce-doctor: Health check failed: cannot read this host's facts "
		       "(%s); the node is left as it is\n",
		       d->err[0] ? d->err : "see stderr");
		goto out;
	}
	problems = rn_doctor_host_problems(d);
	if (h.verbose)
		printf(PROG ": %d NIC%s checked in %.1f ms on node %s: %s\n", d->nnics,
		       d->nnics == 1 ? "" : "s", d->gather_ms, h.node,
		       problems ? "problems" : "all good");
	if (problems)
		reason_fit(d, why, sizeof(why));
	jn = calloc(1, sizeof(*jn));
	if (jn)
		rn_journal_scan(rn_fostate_dir(), h.journal_s, jn);
	if (jn && h.verbose && h.journal_s)
		printf(PROG ": journal %s: %d record%s read, %d naming a node within %d s\n",
		       rn_fostate_dir(), jn->records, jn->records == 1 ? "" : "s", jn->n,
		       h.journal_s);
	/* the host is clean now, but a comm failed here lately for a cause of this host's */
	here = jn ? rn_journal_latest(jn, 0, NULL) : NULL;
	if (!problems && here) {
		problems = 1;
		rn_journal_reason(here, why, sizeof(why));
	}
	if (problems)
		printf("ERROR: roce-doctor: Health check failed: %s\n", why);
	if (!h.drain)
		rc = problems ? RN_DOCTOR_PROBLEMS : RN_DOCTOR_OK;
	else
		rc = act(&h, h.node, 1, problems, problems ? why : "");
	journal_peers(&h, jn);
	if (h.verbose)
		printf(PROG ": done in %.1f ms, exit %d\n", rn_doctor_now_ms() - t0, rc);
	alarm(0);
out:
	rn_doctor_release(d);
	free(d);
	free(jn);
	fflush(stdout);
	return rc;
}
