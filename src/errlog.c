// SPDX-License-Identifier: MIT
/* The host's journal of failed comms (see include/rn_errlog.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rn_errlog.h"
#include "rn_json.h"

/* The record as one line, at most RN_ERRLOG_LINE bytes with its newline; its length or -errno. */
static int render(const struct rn_errlog_rec *r, char *out, size_t len)
{
	char host[256] = "", ctr[RN_ERRLOG_LINE / 2], nic[96];
	struct rn_json j;
	FILE *f;
	long n;

	gethostname(host, sizeof(host) - 1);
	snprintf(nic, sizeof(nic), "%s:%d", r->ibdev ? r->ibdev : "", r->port);
	/* the counters are the one field of any length: cut, never the line */
	snprintf(ctr, sizeof(ctr), "%s", r->counters ? r->counters : "");
	f = fmemopen(out, len, "w");
	if (!f)
		return -errno;
	rn_json_begin_line(&j, f);
	rn_json_int(&j, "time", (long long)time(NULL));
	rn_json_str(&j, "host", host);
	rn_json_int(&j, "pid", (long long)getpid());
	rn_json_str(&j, "cause", r->cause && *r->cause ? r->cause : "unknown");
	rn_json_str(&j, "status", r->status);
	rn_json_str(&j, "nic", nic);
	rn_json_str(&j, "netdev", r->netdev);
	rn_json_str(&j, "ip", r->ip);
	rn_json_str(&j, "peer_host", r->peer_host);
	rn_json_str(&j, "peer_netdev", r->peer_netdev);
	rn_json_str(&j, "peer_ip", r->peer_ip);
	rn_json_str(&j, "counters", ctr);
	rn_json_end(&j); /* the newline, flushed */
	n = ftell(f);
	if (ferror(f) || n <= 0 || (size_t)n >= len || out[n - 1] != '\n') {
		fclose(f);
		return -EMSGSIZE;
	}
	fclose(f);
	return (int)n;
}

static int open_journal(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
}

int rn_errlog_add(const char *dir, const struct rn_errlog_rec *r)
{
	char path[4096], old[4200], line[RN_ERRLOG_LINE + 1];
	struct stat st;
	int fd, n, ret = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, RN_ERRLOG_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	n = render(r, line, sizeof(line));
	if (n < 0)
		return n;
	/* the first writer on a host makes the directory (a tmpfs under /run after a boot) */
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	fd = open_journal(path);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (st.st_size + n > RN_ERRLOG_MAX) {
		/*
		 * Full: the journal becomes errors.jsonl.1 and a new one starts. Two processes
		 * rotating at once may drop the older half early; a record is never cut.
		 */
		close(fd);
		snprintf(old, sizeof(old), "%s.1", path);
		if (rename(path, old) && errno != ENOENT)
			return -errno;
		fd = open_journal(path);
		if (fd < 0)
			return -errno;
	}
	if (write(fd, line, (size_t)n) != n)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}
