// SPDX-License-Identifier: MIT
/*
 * The helpers every doctor file shares (the CLI, the MPI sweep and the unit tests link
 * this file alone, never doctor_main.c's main): the clock, names, the error and log sinks,
 * and the whole-or-nothing report file writer.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

int rn_doctor_err(struct rn_doctor *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "roce-doctor: %s\n", msg);
	if (!d->err[0])
		snprintf(d->err, sizeof(d->err), "%s", msg);
	return RN_DOCTOR_ERROR;
}

void rn_doctor_slog(const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one write: serve logs from two threads, and a line is never mixed with another */
	fprintf(stderr, "roce-doctor serve: %s\n", msg);
}

int rn_doctor_set_netdevs(struct rn_doctor *d, const char *list)
{
	const char *p = list;

	d->netdevs = list;
	d->nnames = 0;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (!len || len >= IF_NAMESIZE) {
			rn_doctor_err(d, "--netdev: bad netdev name '%.*s' in '%s'", (int)len, p,
				      list);
			return -EINVAL;
		}
		if (d->nnames == RN_DOCTOR_MAX_NICS) {
			rn_doctor_err(d, "--netdev: more than %d netdevs", RN_DOCTOR_MAX_NICS);
			return -EINVAL;
		}
		memcpy(d->names[d->nnames], p, len);
		d->names[d->nnames++][len] = '\0';
		if (!end)
			return 0;
		p = end + 1;
	}
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

/*
 * The report file's directory may be writable by others (a textfile collector's): the
 * temporary is made by mkstemp beside @path (O_EXCL: a link planted at its name is never
 * followed), given its mode by fchmod (not the umask), synced and renamed over @path
 * (rename replaces a link at @path, it never writes through it), then the directory
 * is synced so the new name survives a crash.
 */
int rn_doctor_target_ok(const char *path, const char *suffix, char *why, size_t len)
{
	char dir[4096];
	size_t n = strlen(path), k = suffix ? strlen(suffix) : 0;
	struct stat st;

	if (!n || path[n - 1] == '/' || (k && (n <= k || strcmp(path + n - k, suffix)))) {
		snprintf(why, len, "'%s' is not a file name%s%s", path, k ? " ending in " : "",
			 k ? suffix : "");
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	if (stat(dirname(dir), &st) || !S_ISDIR(st.st_mode)) {
		snprintf(why, len, "the directory of '%s' does not exist", path);
		return -ENOENT;
	}
	if (!lstat(path, &st) && S_ISLNK(st.st_mode)) {
		snprintf(why, len, "'%s' is a symbolic link: not replaced", path);
		return -ELOOP;
	}
	if (!lstat(path, &st) && !S_ISREG(st.st_mode)) {
		snprintf(why, len, "'%s' exists and is not a regular file: not replaced", path);
		return -EEXIST;
	}
	return 0;
}

int rn_doctor_write_file(const char *path, void (*fill)(FILE *f, const void *arg), const void *arg)
{
	char tmp[4096], dir[4096], why[256];
	FILE *f;
	int fd, dfd, ret = 0;

	/* checked again here: the path may have changed since the command line was read */
	ret = rn_doctor_target_ok(path, NULL, why, sizeof(why));
	if (ret)
		return ret;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f || fchmod(fd, 0644)) {
		ret = -errno;
		if (f)
			fclose(f);
		else
			close(fd);
		unlink(tmp);
		return ret;
	}
	fill(f, arg);
	errno = 0;
	if (fflush(f) || ferror(f) || fsync(fd))
		ret = -(errno ? errno : EIO);
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

int rn_doctor_same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return a->ss_family == AF_INET6 &&
	       !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
}

int rn_doctor_same_host(const char *a, const char *b)
{
	size_t la = strcspn(a, "."), lb = strcspn(b, ".");

	/* "node1" is "node1.cluster": Slurm's node names are the hosts' short names */
	return la == lb && !strncmp(a, b, la);
}
