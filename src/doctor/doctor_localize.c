// SPDX-License-Identifier: MIT
/*
 * `roce-doctor localize`: which NIC, host or link between groups the mesh's pair metrics
 * blame, for a person at a terminal. It reads roce_mesh_pair_up and roce_mesh_pair_cause
 * from the agents' textfiles (or a saved /metrics), or from a Prometheus server's
 * /federate (the series as text, so no JSON parser is needed), and judges them with
 * rn_mesh_localize: the same arithmetic as the shipped rules
 * (doc/prometheus/nccl-net-roce.rules.yml, group nccl-net-roce-mesh).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "doctor_mesh.h"
#include "doctor_io.h"

#define PROG "roce-doctor localize"
#define LOC_MAX_BYTES (64u << 20) /* what a server may send us */
#define LOC_HTTP_MS 10000
#define LOC_VERDICTS 256

struct obs_set {
	struct rn_mesh_obs *o;
	int n, cap;
	int bad_lines;
};

static int same_pair(const struct rn_mesh_obs *a, const struct rn_mesh_obs *b)
{
	return !strcmp(a->host, b->host) && !strcmp(a->nic, b->nic) &&
	       !strcmp(a->peer_host, b->peer_host) && !strcmp(a->peer_nic, b->peer_nic);
}

/*
 * A pair's up series adds it; a cause series names the cause of the pair it belongs to, a
 * baseline series its usual RTT (either may come before the up series).
 */
static int obs_add(struct obs_set *s, const struct rn_mesh_obs *o, enum rn_mesh_series kind)
{
	int k;

	for (k = s->n - 1; k >= 0; k--)
		if (same_pair(&s->o[k], o))
			break;
	if (k < 0) {
		if (s->n == s->cap) {
			int cap = s->cap ? 2 * s->cap : 1024;
			struct rn_mesh_obs *v = realloc(s->o, (size_t)cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->o = v;
			s->cap = cap;
		}
		k = s->n++;
		s->o[k] = *o;
		s->o[k].cause[0] = 0;
		s->o[k].base_s = 0;
		s->o[k].up = kind == RN_MESH_UP ? o->up : kind != RN_MESH_CAUSE;
	}
	/* a pair's kinds (udp, rc) are one pair, down when any of them is (as the rules) */
	if (kind == RN_MESH_UP)
		s->o[k].up = s->o[k].up && o->up;
	else if (kind == RN_MESH_CAUSE)
		memcpy(s->o[k].cause, o->cause, sizeof(o->cause));
	else
		s->o[k].base_s = o->base_s;
	return 0;
}

/* One of a sweep's pairs (rn_mesh_sweep_obs): its up and, when down, its cause. */
static int sweep_add(void *arg, const struct rn_mesh_obs *o)
{
	struct obs_set *s = arg;
	int ret = obs_add(s, o, RN_MESH_UP);

	return ret || o->up ? ret : obs_add(s, o, RN_MESH_CAUSE);
}

/* A JSON object: a sweep's report, not metrics text. */
static int is_json(const char *text)
{
	return text[strspn(text, " \t\r\n")] == '{';
}

/* Every line of @text (NUL-terminated, modified). */
static int obs_parse(struct obs_set *s, char *text)
{
	char *save = NULL, *line;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct rn_mesh_obs o;
		enum rn_mesh_series kind;
		int ret = rn_mesh_parse_line(line, &o, &kind);

		if (ret == -EBADMSG)
			s->bad_lines++;
		else if (!ret && obs_add(s, &o, kind))
			return -ENOMEM;
	}
	return 0;
}

/* Room for 64 KiB more in *@buf (*@cap), within LOC_MAX_BYTES. 0 or -EFBIG. */
static int room(char **buf, size_t *cap, size_t n)
{
	char *b;

	if (n + 65537 <= *cap)
		return 0;
	b = *cap + 65537 > LOC_MAX_BYTES ? NULL : realloc(*buf, *cap + 65537);
	if (!b)
		return -EFBIG;
	*buf = b;
	*cap += 65537;
	return 0;
}

static char *read_file_all(const char *path, char *why, size_t len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		size_t r;

		if (room(&buf, &cap, n)) {
			snprintf(why, len, "%s: larger than %u MiB", path, LOC_MAX_BYTES >> 20);
			free(buf);
			fclose(f);
			return NULL;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (!r)
			break;
	}
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* "http://HOST:PORT[/PREFIX]" into its parts. 0 or -EINVAL. */
static int parse_url(const char *url, char *host, size_t hl, int *port, char *prefix, size_t pl)
{
	const char *p, *slash, *colon;

	if (strncmp(url, "http://", 7))
		return -EINVAL;
	p = url + 7;
	slash = strchr(p, '/');
	if (!slash)
		slash = p + strlen(p);
	colon = memchr(p, ':', (size_t)(slash - p));
	if (p[0] == '[')
		colon = memchr(p, ']', (size_t)(slash - p)) ? strchr(strchr(p, ']'), ':') : NULL;
	*port = 80;
	if (colon && colon < slash) {
		char num[8];

		if ((size_t)(slash - colon) > sizeof(num))
			return -EINVAL;
		snprintf(num, sizeof(num), "%.*s", (int)(slash - colon - 1), colon + 1);
		if (rn_cli_int(num, 1, 65535, port))
			return -EINVAL;
	}
	if (!colon || colon > slash)
		colon = slash;
	if (colon == p || (size_t)(colon - p) >= hl || strlen(slash) >= pl)
		return -EINVAL;
	snprintf(host, hl, "%.*s", (int)(colon - p), p);
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = 0;
	}
	snprintf(prefix, pl, "%s", strcmp(slash, "/") ? slash : "");
	return 0;
}

/* The body of GET @path from @host:@port, whole by the deadline; NULL with @why. */
static char *http_get(const char *host, int port, const char *path, char *why, size_t len)
{
	double end = rn_doctor_now_ms() + LOC_HTTP_MS;
	char req[1536], *buf = NULL, *body;
	size_t n = 0, cap = 0;
	int fd;

	if (rn_dw_connect(host, port, end, &fd, why, len))
		return NULL;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\nAccept: text/plain\r\n\r\n",
		 path, host);
	if (rn_dw_set_timeout(fd, LOC_HTTP_MS / 1000) ||
	    send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		snprintf(why, len, "cannot send to %s:%d: %s", host, port, strerror(errno));
		goto fail;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left = end - rn_doctor_now_ms();
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			snprintf(why, len, "%s:%d: no whole answer in %d s", host, port,
				 LOC_HTTP_MS / 1000);
			goto fail;
		}
		if (room(&buf, &cap, n)) {
			snprintf(why, len, "%s:%d: more than %u MiB", host, port,
				 LOC_MAX_BYTES >> 20);
			goto fail;
		}
		r = recv(fd, buf + n, cap - n - 1, 0);
		if (r < 0) {
			snprintf(why, len, "%s:%d: %s", host, port, strerror(errno));
			goto fail;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (!buf) {
		snprintf(why, len, "%s:%d: empty answer", host, port);
		return NULL;
	}
	buf[n] = 0;
	body = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.", 7) || !body || strncmp(buf + 8, " 200", 4)) {
		snprintf(why, len, "%s:%d: not HTTP 200: %.60s", host, port, buf);
		free(buf);
		return NULL;
	}
	memmove(buf, body + 4, strlen(body + 4) + 1);
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

static char *from_prometheus(const char *url, char *why, size_t len)
{
	char host[256], prefix[512], path[1024];
	int port;

	if (parse_url(url, host, sizeof(host), &port, prefix, sizeof(prefix))) {
		snprintf(why, len, "--prometheus: '%s' is not http://HOST:PORT[/PREFIX]", url);
		return NULL;
	}
	/* federate: the series in the text format the agents write, labels and all */
	snprintf(path, sizeof(path),
		 "%s/federate?match%%5B%%5D=roce_mesh_pair_up"
		 "&match%%5B%%5D=roce_mesh_pair_cause"
		 "&match%%5B%%5D=roce_mesh_pair_rtt_baseline_seconds",
		 prefix);
	return http_get(host, port, path, why, len);
}

char *rn_mesh_read(const char *src, char *why, size_t len)
{
	char host[256], path[512];
	int port;

	if (strncmp(src, "http://", 7))
		return read_file_all(src, why, len);
	if (parse_url(src, host, sizeof(host), &port, path, sizeof(path))) {
		snprintf(why, len, "'%s' is not http://HOST:PORT[/PATH]", src);
		return NULL;
	}
	return http_get(host, port, path[0] ? path : "/metrics", why, len);
}

int rn_mesh_pairs_with(const char *text, const char *node, int *up, int *down, char *cause,
		       size_t len)
{
	const char *line = text;

	*up = *down = 0;
	if (len)
		cause[0] = 0;
	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		char buf[1024];
		struct rn_mesh_obs o;
		enum rn_mesh_series kind;

		if (n < sizeof(buf)) {
			memcpy(buf, line, n);
			buf[n] = 0;
			if (!rn_mesh_parse_line(buf, &o, &kind) &&
			    (rn_doctor_same_host(o.peer_host, node) ||
			     rn_doctor_same_host(o.host, node))) {
				if (kind == RN_MESH_UP)
					*(o.up ? up : down) += 1;
				else if (kind == RN_MESH_CAUSE && len && !cause[0])
					snprintf(cause, len, "%s", o.cause);
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return *up + *down;
}

static void print_verdict(const struct rn_mesh_verdict *v)
{
	char cause[64] = "";

	if (v->cause[0])
		snprintf(cause, sizeof(cause), "; cause %s", v->cause);
	switch (v->blame) {
	case RN_MESH_BLAME_NIC:
		printf("nic %s:%s: fails with most of its peers (%d of %d pairs%s)\n", v->host,
		       v->nic, v->bad, v->of, cause);
		break;
	case RN_MESH_BLAME_HOST:
		printf("host %s: every NIC fails with most of its peers (%d of %d pairs%s)\n",
		       v->host, v->bad, v->of, cause);
		break;
	default:
		printf("link %s <-> %s: pairs across fail (%d of %d), pairs inside both groups "
		       "pass: the link or switch between them%s\n",
		       v->group, v->peer_group, v->bad, v->of, cause);
	}
}

/* --rtt-groups: where the series carry no groups, the hosts grouped by RTT. 0 or exit 2. */
static int rtt_groups(struct obs_set *s)
{
	int i, n;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->o[i].group, s->o[0].group) ||
		    strcmp(s->o[i].peer_group, s->o[0].group)) {
			fprintf(stderr,
				PROG ": the series carry groups (%s, %s): --rtt-groups not "
				     "applied\n",
				s->o[0].group,
				strcmp(s->o[i].group, s->o[0].group) ? s->o[i].group :
								       s->o[i].peer_group);
			return 0;
		}
	n = rn_mesh_rtt_groups(s->o, s->n);
	if (n < 0)
		return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR, "--rtt-groups: %s",
				    n == -E2BIG ? "more than 1024 hosts" : strerror(-n));
	fprintf(stderr, PROG ": %d group%s by RTT%s\n", n, n == 1 ? "" : "s",
		n == 1 ? " (no gap of 3x between the host pairs' RTTs)" : "");
	return 0;
}

static void loc_usage(FILE *f)
{
	fprintf(f,
		"Usage: roce-doctor localize FILE...\n"
		"       roce-doctor localize --prometheus http://HOST:PORT[/PREFIX]\n"
		"       (either with --rtt-groups: where the series carry no groups, group the\n"
		"       hosts by RTT: those whose pairs are on the near side of the largest gap,\n"
		"       3x at least, between host pairs' baseline RTTs)\n"
		"\n"
		"Which NIC, host or link between groups the mesh's pair metrics blame: a NIC that\n"
		"fails with most of its peers (and of those in its group); a host all of whose\n"
		"NICs do; two groups whose pairs across fail while the pairs inside both pass.\n"
		"FILE: the agents' textfiles (roce-mesh.prom) or saved /metrics, or a sweep's JSON\n"
		"report (roce-doctor-mpi --json-file: its pair matrix); --prometheus: the\n"
		"series from that server's /federate. The same arithmetic as the shipped rules.\n"
		"Exit: 0 nothing to blame, 1 verdicts printed, 2 usage or read error.\n");
}

int rn_doctor_localize(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prometheus", required_argument, NULL, 'P' },
		{ "rtt-groups", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct obs_set s = { 0 };
	struct rn_mesh_verdict *v = NULL;
	const char *url = NULL;
	char why[512];
	int c, i, nv, bad = 0, rc = RN_DOCTOR_ERROR, rtt = 0;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		if (c == 'P') {
			url = optarg;
		} else if (c == 'G') {
			rtt = 1;
		} else if (c == 'h') {
			loc_usage(stdout);
			return RN_DOCTOR_OK;
		} else {
			return rn_cli_bad_option(PROG, NULL, c, argv, optind, optopt);
		}
	}
	if (!url == (optind == argc))
		return rn_cli_error(PROG, NULL, rc,
				    "give metrics files or --prometheus URL (one "
				    "of them)");
	for (i = url ? -1 : optind; i < argc; i++) {
		char *text = i < 0 ? from_prometheus(url, why, sizeof(why)) :
				     read_file_all(argv[i], why, sizeof(why));

		if (!text) {
			rn_cli_error(PROG, NULL, rc, "%s", why);
			goto out;
		}
		if (i >= 0 && is_json(text)) {
			int ret = rn_mesh_sweep_obs(text, sweep_add, &s, why, sizeof(why));

			free(text);
			if (ret) {
				rn_cli_error(PROG, NULL, rc, "%s: %s", argv[i], why);
				goto out;
			}
			continue;
		}
		if (obs_parse(&s, text)) {
			free(text);
			rn_cli_error(PROG, NULL, rc, "out of memory");
			goto out;
		}
		free(text);
		if (i < 0)
			break;
	}
	if (s.bad_lines)
		fprintf(stderr, PROG ": %d malformed roce_mesh_pair_* line%s left out\n",
			s.bad_lines, s.bad_lines == 1 ? "" : "s");
	if (!s.n) {
		rn_cli_error(PROG, NULL, rc,
			     "no roce_mesh_pair_up series (nor a sweep's pairs): is "
			     "`roce-doctor mesh` running, and scraped?");
		goto out;
	}
	if (rtt && rtt_groups(&s))
		goto out;
	v = calloc(LOC_VERDICTS, sizeof(*v));
	nv = v ? rn_mesh_localize(s.o, s.n, v, LOC_VERDICTS) : -ENOMEM;
	if (nv < 0) {
		rn_cli_error(PROG, NULL, rc, "out of memory");
		goto out;
	}
	for (i = 0; i < s.n; i++)
		bad += !s.o[i].up;
	for (i = 0; i < RN_MIN(nv, LOC_VERDICTS); i++)
		print_verdict(&v[i]);
	if (!nv)
		printf("nothing to blame: %d pair%s, %d failing\n", s.n, s.n == 1 ? "" : "s", bad);
	else
		printf("%d pair%s, %d failing\n", s.n, s.n == 1 ? "" : "s", bad);
	rc = nv ? RN_DOCTOR_PROBLEMS : RN_DOCTOR_OK;
out:
	free(v);
	free(s.o);
	return rc;
}
