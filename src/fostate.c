// SPDX-License-Identifier: MIT
/* The host's record of failovers (see include/rn_fostate.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rn_fostate.h"

const char *rn_fostate_dir(void)
{
	const char *d = getenv("NCCL_ROCE_STATE_DIR");

	return d && *d ? d : RN_FOSTATE_DIR;
}

/* A field of one word: a name with a blank in it would shift every field after it. */
static const char *word(const char *s)
{
	return s && *s && !strpbrk(s, " \t\n") ? s : "-";
}

int rn_fostate_add(const char *dir, const char *ibdev, int port, const char *netdev, const char *to,
		   const char *cause)
{
	char path[4096], line[512];
	struct stat st;
	int fd, n, ret = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, RN_FOSTATE_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* the first writer on a host makes the directory (a tmpfs under /run after a boot) */
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	if (!fstat(fd, &st) && (!S_ISREG(st.st_mode) || st.st_size > RN_FOSTATE_MAX)) {
		close(fd);
		return S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
	}
	n = snprintf(line, sizeof(line), "%lld %s %d %s %s %d %s\n", (long long)time(NULL),
		     word(ibdev), port, word(netdev), word(to), (int)getpid(), word(cause));
	if (n >= (int)sizeof(line))
		n = (int)sizeof(line) - 1;
	if (write(fd, line, (size_t)n) != n)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

/* One line of the record: 0 with its fields, -EINVAL for a cut or foreign line. */
static int parse_line(const char *line, long long *t, char *dev, char *netdev, int *port)
{
	if (!strchr(line, '\n') || sscanf(line, "%lld %63s %d %63s", t, dev, port, netdev) != 4 ||
	    *t < 0)
		return -EINVAL;
	return 0;
}

static FILE *record_open(const char *dir, int *err)
{
	char path[4096];
	FILE *f;

	*err = 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, RN_FOSTATE_FILE) >= (int)sizeof(path)) {
		*err = -ENAMETOOLONG;
		return NULL;
	}
	f = fopen(path, "re");
	if (!f && errno != ENOENT)
		*err = -errno;
	return f;
}

int rn_fostate_nics(const char *dir, struct rn_fostate_nic *out, int max)
{
	char line[512], dev[64], netdev[64];
	long long t;
	int port, n = 0, i, err;
	FILE *f = record_open(dir, &err);

	if (!f)
		return err;
	while (fgets(line, sizeof(line), f)) {
		if (parse_line(line, &t, dev, netdev, &port))
			continue;
		for (i = 0; i < n; i++)
			if (out[i].port == port && !strcmp(out[i].ibdev, dev))
				break;
		if (i == n) {
			if (n == max)
				continue;
			memset(&out[n], 0, sizeof(out[n]));
			snprintf(out[n].ibdev, sizeof(out[n].ibdev), "%s", dev);
			snprintf(out[n].netdev, sizeof(out[n].netdev), "%s", netdev);
			out[n].port = port;
			n++;
		}
		out[i].n++;
		if ((uint64_t)t > out[i].last)
			out[i].last = (uint64_t)t;
	}
	fclose(f);
	return n;
}

int rn_fostate_count(const char *dir, const char *ibdev, int port, uint64_t *n, uint64_t *last)
{
	struct rn_fostate_nic nics[64];
	int k = rn_fostate_nics(dir, nics, 64), i;

	*n = 0;
	*last = 0;
	if (k < 0)
		return k;
	for (i = 0; i < k; i++)
		if (nics[i].port == port && !strcmp(nics[i].ibdev, ibdev)) {
			*n = nics[i].n;
			*last = nics[i].last;
		}
	return 0;
}
