// SPDX-License-Identifier: MIT
/*
 * What the hosts of a fleet must agree on, read on each host for the sweep to compare
 * (doctor_sweep.c): the version of the plugin library NCCL would load, the kernel,
 * rdma-core, NCCL, and per NIC its driver, firmware and ARP/reverse-path sysctls (the
 * MTU travels in the inventory). Nothing is loaded or run to find them: files, the
 * loader's cache and sysfs only (no GPU, no CUDA needed); what cannot be found says so
 * ("not found", "unknown"), never a guess.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor.h"
#include "rn_codec.h"
#include "rn_sys.h"
#include "rn_version.h"

#define NCCL_LIB "libnccl.so.2"

/* A fact, cut to its field (a value longer than 63 bytes is no version we compare). */
static void set(char *dst, const char *s)
{
	size_t n = strnlen(s, RN_FACT_LEN - 1);

	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* ---- finding a library as the dynamic loader would ------------------------------------- */

static int is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

static int in_dir(const char *dir, size_t dlen, const char *name, char *out, size_t len)
{
	if (!dlen || dlen + 1 + strlen(name) >= len)
		return 0;
	snprintf(out, len, "%.*s/%s", (int)dlen, dir, name);
	return is_file(out);
}

/* Each directory of a ':' list (LD_LIBRARY_PATH). */
static int in_list(const char *list, const char *name, char *out, size_t len)
{
	const char *p = list, *e;

	for (; p && *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, ':');
		if (in_dir(p, (size_t)(e - p), name, out, len))
			return 1;
	}
	return 0;
}

/*
 * /etc/ld.so.cache maps names to paths. Its layout changed over glibc versions (old,
 * old+new, new only), but in every one the paths are NUL-terminated absolute strings:
 * the first that ends in "/@name" and exists is the loader's answer, 32-bit
 * directories aside.
 */
static int in_cache(const char *name, char *out, size_t len)
{
	size_t nl = strlen(name), size, k;
	struct stat st;
	const char *m;
	int fd, found = 0;

	fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || st.st_size <= 0) {
		close(fd);
		return 0;
	}
	size = (size_t)st.st_size;
	m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	for (k = 0; k < size && !found; k++) {
		const char *s = m + k, *z = memchr(s, '\0', size - k);
		size_t sl = z ? (size_t)(z - s) : 0;

		if (!z)
			break;
		if (s[0] == '/' && sl > nl && s[sl - nl - 1] == '/' &&
		    !memcmp(s + sl - nl, name, nl) && sl < len && !strstr(s, "i386") &&
		    !strstr(s, "/lib32/")) {
			memcpy(out, s, sl);
			out[sl] = '\0';
			found = is_file(out);
		}
		k += sl;
	}
	munmap((void *)m, size);
	return found;
}

int rn_doctor_find_lib(const char *name, const char *first_dir, char *out, size_t len)
{
	static const char *const sys_dirs[] = {
		"/lib/x86_64-linux-gnu",
		"/usr/lib/x86_64-linux-gnu",
		"/lib/aarch64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu",
		"/lib64",
		"/usr/lib64",
		"/lib",
		"/usr/lib",
	};
	size_t k;

	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return is_file(out) ? 0 : -ENOENT;
	}
	if (first_dir && in_dir(first_dir, strlen(first_dir), name, out, len))
		return 0;
	if (in_list(getenv("LD_LIBRARY_PATH"), name, out, len) || in_cache(name, out, len))
		return 0;
	for (k = 0; k < RN_ARRAY_SIZE(sys_dirs); k++)
		if (in_dir(sys_dirs[k], strlen(sys_dirs[k]), name, out, len))
			return 0;
	return -ENOENT;
}

/* ---- a version inside an ELF file ------------------------------------------------------ */

static int version_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '.' || c == '+' || c == '-' || c == '_' || c == '~';
}

/* The version after the first @tag in @p that a digit follows (the tag alone is a
 * format string, or this very scanner's literal). */
static int tag_in(const char *p, size_t n, const char *tag, char *out, size_t len)
{
	size_t tl = strlen(tag), k;
	const char *q = p, *end = p + n;

	while ((q = memmem(q, (size_t)(end - q), tag, tl))) {
		q += tl;
		if (q < end && *q >= '0' && *q <= '9') {
			for (k = 0; q + k < end && k + 1 < len && version_char(q[k]); k++)
				out[k] = q[k];
			out[k] = '\0';
			return 0;
		}
	}
	return -ENOENT;
}

/* @p (@n bytes) is a 64-bit ELF file: its .rodata section into *@sec, or the whole. */
static void rodata_of(const char *p, size_t n, const char **sec, size_t *slen)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
	const Elf64_Shdr *sh, *names;
	int k;

	*sec = p;
	*slen = n;
	if (n < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    eh->e_shoff > n || (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > n - eh->e_shoff ||
	    eh->e_shstrndx >= eh->e_shnum)
		return;
	sh = (const Elf64_Shdr *)(p + eh->e_shoff);
	names = &sh[eh->e_shstrndx];
	if (names->sh_offset > n || names->sh_size > n - names->sh_offset)
		return;
	for (k = 0; k < eh->e_shnum; k++) {
		const char *nm;

		if (sh[k].sh_name >= names->sh_size)
			continue;
		nm = p + names->sh_offset + sh[k].sh_name;
		if (strnlen(nm, names->sh_size - sh[k].sh_name) == names->sh_size - sh[k].sh_name)
			continue;
		if (strcmp(nm, ".rodata") || sh[k].sh_type == SHT_NOBITS || sh[k].sh_offset > n ||
		    sh[k].sh_size > n - sh[k].sh_offset)
			continue;
		*sec = p + sh[k].sh_offset;
		*slen = sh[k].sh_size;
		return;
	}
}

/*
 * The version after @tag in @path's read-only data: only .rodata of an ELF file is
 * read (NCCL's library is hundreds of MB of GPU code besides), the whole of anything
 * else. 0, -ENOENT (no such tag) or -errno.
 */
int rn_doctor_file_tag(const char *path, const char *tag, char *out, size_t len)
{
	const char *m, *sec;
	struct stat st;
	size_t slen;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0) {
		close(fd);
		return -ENOENT;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ret = m == MAP_FAILED ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	rodata_of(m, (size_t)st.st_size, &sec, &slen);
	ret = tag_in(sec, slen, tag, out, len);
	munmap((void *)m, (size_t)st.st_size);
	return ret;
}

const char *rn_doctor_lib_version(const char *file, const char *stem, char *out, size_t len)
{
	const char *b = strrchr(file, '/');
	size_t sl = strlen(stem);

	b = b ? b + 1 : file;
	if (strncmp(b, stem, sl) || !b[sl] || b[sl] < '0' || b[sl] > '9')
		return NULL;
	snprintf(out, len, "%s", b + sl);
	return out;
}

/* ---- the facts ------------------------------------------------------------------------- */

/*
 * rdma-core names libibverbs.so.1.<ABI>.<its own version> (libibverbs/CMakeLists.txt):
 * the version of the one this process runs, from the file the loader mapped.
 */
static int ibverbs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	char *out = arg, real[PATH_MAX], v[RN_FACT_LEN];
	const char *dot;

	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libibverbs.so"))
		return 0;
	if (!realpath(info->dlpi_name, real) ||
	    !rn_doctor_lib_version(real, "libibverbs.so.1.", v, sizeof(v)) ||
	    !(dot = strchr(v, '.')))
		set(out, "unknown");
	else
		set(out, dot + 1);
	return 1;
}

static void read_rdma_core(char *out)
{
	set(out, "unknown");
	dl_iterate_phdr(ibverbs_cb, out);
}

/* The plugin NCCL_NET_PLUGIN names (a path, a file name, or "roce" for libnccl-net-roce.so). */
static void read_plugin(struct rn_doctor_facts *f)
{
	const char *e = getenv("NCCL_NET_PLUGIN");
	char name[PATH_MAX], v[RN_FACT_LEN];

	set(f->plugin, "not found");
	f->plugin_path[0] = '\0';
	if (!e || !e[0])
		e = "roce";
	if (rn_doctor_find_lib(e, NULL, f->plugin_path, sizeof(f->plugin_path))) {
		snprintf(name, sizeof(name), "libnccl-net-%s.so", e);
		if (strchr(e, '/') ||
		    rn_doctor_find_lib(name, NULL, f->plugin_path, sizeof(f->plugin_path))) {
			f->plugin_path[0] = '\0';
			return;
		}
	}
	set(f->plugin,
	    rn_doctor_file_tag(f->plugin_path, RN_VERSION_TAG, v, sizeof(v)) ? "unknown" : v);
}

/* libnccl.so.2 under NCCL_HOME/lib, else where the loader finds it. */
static void read_nccl(struct rn_doctor_facts *f)
{
	const char *home = getenv("NCCL_HOME");
	char dir[PATH_MAX], real[PATH_MAX], v[RN_FACT_LEN];

	set(f->nccl, "not found");
	f->nccl_path[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/lib", home ? home : "");
	if (rn_doctor_find_lib(NCCL_LIB, home && home[0] ? dir : NULL, f->nccl_path,
			       sizeof(f->nccl_path)))
		return;
	if (!rn_doctor_file_tag(f->nccl_path, RN_NCCL_VERSION_TAG, v, sizeof(v)))
		set(f->nccl, v);
	else if (realpath(f->nccl_path, real) &&
		 rn_doctor_lib_version(real, "libnccl.so.", v, sizeof(v)) && strcmp(v, "2"))
		set(f->nccl, v);
	else
		set(f->nccl, "unknown");
}

void rn_doctor_facts_nic(const char *netdev, const char *ibdev, struct rn_doctor_nic_facts *n)
{
	char p[PATH_MAX], real[PATH_MAX];
	const char *b;

	/* a virtual netdev (veth, bridge) has no device, so no driver of its own */
	set(n->driver, "none");
	snprintf(p, sizeof(p), "/sys/class/net/%s/device/driver", netdev);
	if (rn_sys.realpath && !rn_sys.realpath(p, real, sizeof(real)) &&
	    (b = strrchr(real, '/')) && b[1])
		set(n->driver, b + 1);
	set(n->fw, "none");
	if (ibdev && ibdev[0] &&
	    !rn_sys_readf(p, sizeof(p), "/sys/class/infiniband/%s/fw_ver", ibdev))
		set(n->fw, p[0] ? p : "unknown");
}

int rn_doctor_facts_read(const struct rn_doctor *d, struct rn_doctor_facts *f)
{
	char buf[RN_FACT_LEN];
	int i;

	memset(f, 0, sizeof(*f));
	if (rn_sys_readf(buf, sizeof(buf), "/proc/sys/kernel/osrelease"))
		snprintf(buf, sizeof(buf), "unknown");
	set(f->kernel, buf);
	read_rdma_core(f->rdma_core);
	read_plugin(f);
	read_nccl(f);
	f->all = d->host && d->host->all_read ? d->host->all :
						(struct rn_sysctls){ -1, -1, -1, -1, -1, -1, -1 };
	f->nnics = d->nnics;
	for (i = 0; i < d->nnics; i++) {
		const struct rn_doctor_nic *dn = &d->nics[i];

		rn_doctor_facts_nic(dn->nic.netdev, dn->dev ? dn->nic.ibdev : NULL, &f->nics[i]);
		f->nics[i].dev = dn->sys_dev;
		f->nics[i].eff = dn->sys_eff;
	}
	return 0;
}

/* ---- on the wire (the sweep's FACTS message) --------------------------------------------- */

static void put_sysctls(struct rn_wbuf *b, const struct rn_sysctls *s)
{
	const int v[] = { s->arp_ignore, s->arp_announce, s->arp_filter, s->rp_filter,
			  s->accept_local };
	size_t k;

	for (k = 0; k < RN_ARRAY_SIZE(v); k++)
		rn_wb_u32(b, (uint32_t)v[k]);
}

static void get_sysctls(struct rn_rbuf *b, struct rn_sysctls *s)
{
	int *v[] = { &s->arp_ignore, &s->arp_announce, &s->arp_filter, &s->rp_filter,
		     &s->accept_local };
	size_t k;

	for (k = 0; k < RN_ARRAY_SIZE(v); k++)
		*v[k] = (int32_t)rn_rb_u32(b);
}

void rn_doctor_facts_put(struct rn_wbuf *b, const struct rn_doctor_facts *f)
{
	int i;

	rn_wb_str(b, f->plugin, RN_FACT_LEN - 1);
	rn_wb_str(b, f->plugin_path, sizeof(f->plugin_path) - 1);
	rn_wb_str(b, f->kernel, RN_FACT_LEN - 1);
	rn_wb_str(b, f->rdma_core, RN_FACT_LEN - 1);
	rn_wb_str(b, f->nccl, RN_FACT_LEN - 1);
	rn_wb_str(b, f->nccl_path, sizeof(f->nccl_path) - 1);
	put_sysctls(b, &f->all);
	rn_wb_u16(b, (unsigned int)f->nnics);
	for (i = 0; i < f->nnics; i++) {
		rn_wb_str(b, f->nics[i].driver, RN_FACT_LEN - 1);
		rn_wb_str(b, f->nics[i].fw, RN_FACT_LEN - 1);
		put_sysctls(b, &f->nics[i].dev);
		put_sysctls(b, &f->nics[i].eff);
	}
}

int rn_doctor_facts_get(struct rn_rbuf *b, struct rn_doctor_facts *f)
{
	int i;

	memset(f, 0, sizeof(*f));
	rn_rb_str(b, f->plugin, RN_FACT_LEN);
	rn_rb_str(b, f->plugin_path, sizeof(f->plugin_path));
	rn_rb_str(b, f->kernel, RN_FACT_LEN);
	rn_rb_str(b, f->rdma_core, RN_FACT_LEN);
	rn_rb_str(b, f->nccl, RN_FACT_LEN);
	rn_rb_str(b, f->nccl_path, sizeof(f->nccl_path));
	get_sysctls(b, &f->all);
	f->nnics = (int)rn_rb_u16(b);
	if (f->nnics > RN_DOCTOR_MAX_NICS)
		b->err = -EBADMSG;
	for (i = 0; i < f->nnics && !b->err; i++) {
		rn_rb_str(b, f->nics[i].driver, RN_FACT_LEN);
		rn_rb_str(b, f->nics[i].fw, RN_FACT_LEN);
		get_sysctls(b, &f->nics[i].dev);
		get_sysctls(b, &f->nics[i].eff);
	}
	if (b->err)
		memset(f, 0, sizeof(*f));
	return b->err;
}
