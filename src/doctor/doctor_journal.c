// SPDX-License-Identifier: MIT
/*
 * The plugin's journal of failed comms (include/rn_errlog.h), read for the health check:
 * which node a recent failure puts at fault. The record's cause is a verdict catalogue
 * id; where the catalogue runs the cause's fix on the peer (replies-elsewhere: the peer
 * resolves us to the wrong MAC), the node at fault is the record's peer host, else this
 * one. Causes that name no node stay out: the peer process died (peer-died), nothing came
 * back (no-reply: the peer, the switch or a firewall: the mesh or a sweep tells), marks
 * of congestion, and failures without a cause.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_errlog.h"
#include "rn_fostate.h"
#include "rn_verdict.h"
#include "doctor_journal.h"

/* The string value of @key in our own one-line record (escapes kept as they are). */
static int field(const char *line, const char *key, char *out, size_t len)
{
	char pat[64];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\": \"", key);
	p = strstr(line, pat);
	if (!p)
		return -ENOENT;
	p += strlen(pat);
	for (e = p; *e && *e != '"'; e++)
		if (*e == '\\' && e[1])
			e++;
	if (*e != '"' || (size_t)(e - p) >= len)
		return -EINVAL;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return 0;
}

static int number(const char *line, const char *key, long long *out)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(line, pat);
	return p && sscanf(p + strlen(pat), "%lld", out) == 1 ? 0 : -ENOENT;
}

/* The short form of a host name: Slurm's node names are hosts' short names. */
static void short_name(char *s)
{
	s[strcspn(s, ".")] = '\0';
}

/* 1 with @peer set when @id names a node at fault (see the top of the file). */
static int names_node(const char *id, int *peer)
{
	enum rn_cause c = rn_cause_from_id(id);

	if (c == RN_CAUSE_NONE || c == RN_CAUSE_PEER_DIED || c == RN_CAUSE_NO_REPLY ||
	    rn_cause_severity(c) != RN_SEV_FATAL)
		return 0;
	*peer = !strcmp(rn_cause_template(c, RN_TPL_FIX_ON), "{peer_host}");
	return 1;
}

static void scan_file(const char *path, long long since, struct rn_journal *j)
{
	char line[RN_ERRLOG_LINE + 2], host[64], nic[80], peer_host[64];
	struct rn_journal_hit *h;
	long long t;
	FILE *f = fopen(path, "re");
	int peer;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n') || line[0] != '{')
			continue; /* cut, or not ours */
		j->records++;
		if (number(line, "time", &t) || t < since)
			continue;
		h = &j->hit[j->n < RN_JOURNAL_HITS ? j->n : RN_JOURNAL_HITS - 1];
		if (field(line, "cause", h->cause, sizeof(h->cause)) ||
		    !names_node(h->cause, &peer) || field(line, "host", host, sizeof(host)) ||
		    field(line, "nic", nic, sizeof(nic)) ||
		    field(line, "peer_host", peer_host, sizeof(peer_host)))
			continue;
		short_name(host);
		short_name(peer_host);
		snprintf(h->node, sizeof(h->node), "%s", peer ? peer_host : host);
		snprintf(h->seen_from, sizeof(h->seen_from), "%s %s", host, nic);
		h->peer = peer;
		h->time = t;
		if (!h->node[0])
			continue;
		if (j->n < RN_JOURNAL_HITS)
			j->n++;
	}
	fclose(f);
}

void rn_journal_scan(const char *dir, long long window_s, struct rn_journal *j)
{
	char path[4096];

	memset(j, 0, sizeof(*j));
	if (window_s <= 0)
		return;
	j->since = (long long)time(NULL) - window_s;
	/* the older half first: the newest record of a node is the last one kept */
	snprintf(path, sizeof(path), "%s/%s.1", dir, RN_ERRLOG_FILE);
	scan_file(path, j->since, j);
	snprintf(path, sizeof(path), "%s/%s", dir, RN_ERRLOG_FILE);
	scan_file(path, j->since, j);
}

/* The counts of @path's records into @out (@n used of @max), by NIC and cause. */
static void count_file(const char *path, struct rn_journal_count *out, int *n, int max)
{
	char line[RN_ERRLOG_LINE + 2], nic[64], netdev[64], cause[48];
	long long t;
	FILE *f = fopen(path, "re");
	int i, port;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon;

		if (!strchr(line, '\n') || line[0] != '{' || number(line, "time", &t) ||
		    field(line, "nic", nic, sizeof(nic)) ||
		    field(line, "cause", cause, sizeof(cause)))
			continue;
		if (field(line, "netdev", netdev, sizeof(netdev)))
			netdev[0] = '\0';
		colon = strrchr(nic, ':');
		if (!colon || sscanf(colon + 1, "%d", &port) != 1)
			continue;
		*colon = '\0';
		for (i = 0; i < *n; i++)
			if (out[i].port == port && !strcmp(out[i].ibdev, nic) &&
			    !strcmp(out[i].cause, cause))
				break;
		if (i == *n) {
			if (*n == max)
				continue;
			memset(&out[i], 0, sizeof(out[i]));
			snprintf(out[i].ibdev, sizeof(out[i].ibdev), "%s", nic);
			snprintf(out[i].netdev, sizeof(out[i].netdev), "%s", netdev);
			snprintf(out[i].cause, sizeof(out[i].cause), "%s", cause);
			out[i].port = port;
			(*n)++;
		}
		out[i].n++;
		if (t > out[i].last)
			out[i].last = t;
	}
	fclose(f);
}

int rn_journal_counts(const char *dir, struct rn_journal_count *out, int max)
{
	char path[4096];
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s.1", dir, RN_ERRLOG_FILE);
	count_file(path, out, &n, max);
	snprintf(path, sizeof(path), "%s/%s", dir, RN_ERRLOG_FILE);
	count_file(path, out, &n, max);
	return n;
}

const struct rn_journal_hit *rn_journal_latest(const struct rn_journal *j, int peer,
					       const char *node)
{
	const struct rn_journal_hit *best = NULL;
	int i;

	for (i = 0; i < j->n; i++)
		if (j->hit[i].peer == peer && (!node || !strcmp(j->hit[i].node, node)) &&
		    (!best || j->hit[i].time >= best->time))
			best = &j->hit[i];
	return best;
}

void rn_journal_reason(const struct rn_journal_hit *h, char *buf, size_t len)
{
	long long age = (long long)time(NULL) - h->time;

	snprintf(buf, len, "roce: %s seen from %s %llds ago (journal %s/%s)", h->cause,
		 h->seen_from, age < 0 ? 0 : age, rn_fostate_dir(), RN_ERRLOG_FILE);
}
