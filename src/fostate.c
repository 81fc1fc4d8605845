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

int rn_fostate_add(const char *dir, const char *ibdev, int port, const char *netdev,
		   const char *to, const char *cause)
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

int rn_fostate_count(const char *dir, const char *ibdev, int port, uint64_t *n, uint64_t *last)
{
	char path[4096], line[512], dev[128];
	long long t;
	int p;
	FILE *f;

	*n = 0;
	*last = 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, RN_FOSTATE_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		/* a line cut by a full disk, or not ours, counts nothing */
		if (!strchr(line, '\n') || sscanf(line, "%lld %127s %d", &t, dev, &p) != 3 || t < 0)
			continue;
		if (p != port || strcmp(dev, ibdev))
			continue;
		(*n)++;
		if ((uint64_t)t > *last)
			*last = (uint64_t)t;
	}
	fclose(f);
	return 0;
}
