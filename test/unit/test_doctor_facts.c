// SPDX-License-Identifier: MIT
/*
 * What the fleet sweep compares (src/doctor/doctor_facts.c): versions read from files
 * without loading them (the tag in an ELF file's .rodata, else the file's versioned
 * name), libraries found as the loader finds them (NCCL_HOME/lib, LD_LIBRARY_PATH, a path
 * in NCCL_NET_PLUGIN), a NIC's driver and firmware from sysfs (a fixture tree), the
 * kernel's release, rdma-core's version from the libibverbs this test runs, and the
 * facts' encoding in the byte codec (whole, or refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture_sysfs.h"
#include "../../src/doctor/doctor.h"
#include "rn_codec.h"
#include "rn_sys.h"
#include "rn_version.h"

/* What a library of each kind holds in its .rodata: this binary plays both. */
__attribute__((used)) static const char nccl_tag[] = "NCCL version 9.8.7+cuda1.2";
__attribute__((used)) static const char plugin_tag[] = RN_VERSION_TAG "7.7.7~rc1";

static char dir[PATH_MAX];

static void copy_self(const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open("/proc/self/exe", O_RDONLY), out;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void append_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char p[PATH_MAX + 32];

	snprintf(dir, sizeof(dir), "/tmp/rn-facts-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/lib", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	unsetenv("NCCL_HOME");
	unsetenv("NCCL_NET_PLUGIN");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	unsetenv("NCCL_HOME");
	unsetenv("NCCL_NET_PLUGIN");
	return 0;
}

static void versioned_names(void **state)
{
	char v[64];

	assert_string_equal(rn_doctor_lib_version("/usr/lib/libnccl.so.2.21.5", "libnccl.so.", v,
						  sizeof(v)),
			    "2.21.5");
	assert_string_equal(rn_doctor_lib_version("libibverbs.so.1.14.44.0", "libibverbs.so.1.", v,
						  sizeof(v)),
			    "14.44.0");
	assert_null(rn_doctor_lib_version("/x/libnccl.so", "libnccl.so.", v, sizeof(v)));
	assert_null(rn_doctor_lib_version("/x/libnccl.so.x", "libnccl.so.", v, sizeof(v)));
	assert_null(rn_doctor_lib_version("/libnccl.so.2/other.so.3", "libnccl.so.", v, sizeof(v)));
}

/* The tag's own literal (the scanner's, a format string) is followed by no digit: skipped. */
static void tag_in_rodata(void **state)
{
	char v[64], p[PATH_MAX + 32];

	assert_int_equal(rn_doctor_file_tag("/proc/self/exe", RN_NCCL_VERSION_TAG, v, sizeof(v)),
			 0);
	assert_string_equal(v, "9.8.7+cuda1.2");
	assert_int_equal(rn_doctor_file_tag("/proc/self/exe", RN_VERSION_TAG, v, sizeof(v)), 0);
	assert_string_equal(v, "7.7.7~rc1");
	assert_int_equal(rn_doctor_file_tag("/proc/self/exe", "no such tag ", v, sizeof(v)),
			 -ENOENT);
	/* not ELF: the whole file is read (written in pieces: no tagged literal in this binary) */
	snprintf(p, sizeof(p), "%s/text", dir);
	write_file(p, "junk " RN_NCCL_VERSION_TAG "\n" RN_NCCL_VERSION_TAG);
	append_file(p, "2.18.3-1 tail");
	assert_int_equal(rn_doctor_file_tag(p, RN_NCCL_VERSION_TAG, v, sizeof(v)), 0);
	assert_string_equal(v, "2.18.3-1");
	assert_int_equal(rn_doctor_file_tag("/nonexistent", RN_NCCL_VERSION_TAG, v, sizeof(v)),
			 -ENOENT);
}

static void find_like_the_loader(void **state)
{
	char p[PATH_MAX + 64], lib[PATH_MAX + 32], out[PATH_MAX * 2 + 64];
	const char *old = getenv("LD_LIBRARY_PATH");
	char *saved = old ? strdup(old) : NULL;

	snprintf(lib, sizeof(lib), "%s/lib", dir);
	snprintf(p, sizeof(p), "%s/libfoo-rn.so.1", lib);
	write_file(p, "x");
	assert_int_equal(rn_doctor_find_lib("libfoo-rn.so.1", NULL, out, sizeof(out)), -ENOENT);
	assert_int_equal(rn_doctor_find_lib("libfoo-rn.so.1", lib, out, sizeof(out)), 0);
	assert_string_equal(out, p);
	setenv("LD_LIBRARY_PATH", "/nonexistent::", 1);
	snprintf(out, sizeof(out), "/nonexistent:%s", lib);
	setenv("LD_LIBRARY_PATH", out, 1);
	assert_int_equal(rn_doctor_find_lib("libfoo-rn.so.1", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, p);
	/* a path is taken as it is; a directory is no library */
	assert_int_equal(rn_doctor_find_lib(p, NULL, out, sizeof(out)), 0);
	assert_int_equal(rn_doctor_find_lib(lib, NULL, out, sizeof(out)), -ENOENT);
	if (saved)
		setenv("LD_LIBRARY_PATH", saved, 1);
	else
		unsetenv("LD_LIBRARY_PATH");
	free(saved);
}

static void nccl_and_plugin(void **state)
{
	struct rn_doctor d = { 0 };
	struct rn_doctor_facts f;
	char p[PATH_MAX + 32], q[PATH_MAX + 64];

	/* NCCL_HOME/lib/libnccl.so.2 with NCCL's version string inside */
	snprintf(p, sizeof(p), "%s/lib/libnccl.so.2", dir);
	copy_self(p);
	setenv("NCCL_HOME", dir, 1);
	/* NCCL_NET_PLUGIN as a path, as NCCL takes it */
	snprintf(q, sizeof(q), "%s/lib/libnccl-net-roce.so", dir);
	copy_self(q);
	setenv("NCCL_NET_PLUGIN", q, 1);
	assert_int_equal(rn_doctor_facts_read(&d, &f), 0);
	assert_string_equal(f.nccl, "9.8.7+cuda1.2");
	assert_string_equal(f.nccl_path, p);
	assert_string_equal(f.plugin, "7.7.7~rc1");
	assert_string_equal(f.plugin_path, q);
	/* as a name: libnccl-net-<name>.so on the loader's path */
	snprintf(q, sizeof(q), "%s/lib", dir);
	setenv("LD_LIBRARY_PATH", q, 1);
	setenv("NCCL_NET_PLUGIN", "roce", 1);
	rn_doctor_facts_read(&d, &f);
	assert_string_equal(f.plugin, "7.7.7~rc1");
	/* a library without our tag, one that is not there */
	snprintf(q, sizeof(q), "%s/lib/libnccl-net-other.so", dir);
	write_file(q, "another plugin");
	setenv("NCCL_NET_PLUGIN", q, 1);
	rn_doctor_facts_read(&d, &f);
	assert_string_equal(f.plugin, "unknown");
	setenv("NCCL_NET_PLUGIN", "/nonexistent/libnccl-net-roce.so", 1);
	rn_doctor_facts_read(&d, &f);
	assert_string_equal(f.plugin, "not found");
	assert_string_equal(f.plugin_path, "");
	unsetenv("LD_LIBRARY_PATH");
	/* no string inside: the version in the real file's name */
	assert_int_equal(unlink(p), 0);
	snprintf(q, sizeof(q), "%s/lib/libnccl.so.2.18.3", dir);
	write_file(q, "no version inside");
	assert_int_equal(symlink("libnccl.so.2.18.3", p), 0);
	rn_doctor_facts_read(&d, &f);
	assert_string_equal(f.nccl, "2.18.3");
	/* neither: unknown, and the path says which file */
	assert_int_equal(unlink(p), 0);
	write_file(p, "no version anywhere");
	rn_doctor_facts_read(&d, &f);
	assert_string_equal(f.nccl, "unknown");
	assert_string_equal(f.nccl_path, p);
}

/* rdma-core names libibverbs.so.1.<ABI>.<its version>: this test runs one. */
static void rdma_core_of_this_process(void **state)
{
	struct rn_doctor d = { 0 };
	struct rn_doctor_facts f;

	assert_int_equal(rn_doctor_facts_read(&d, &f), 0);
	printf("rdma-core %s, kernel %s, nccl %s\n", f.rdma_core, f.kernel, f.nccl);
	assert_string_not_equal(f.rdma_core, "unknown");
	assert_true(f.rdma_core[0] >= '1' && f.rdma_core[0] <= '9');
	assert_non_null(strchr(f.rdma_core, '.'));
}

static void sysfs_facts(void **state)
{
	struct rn_doctor_nic_facts n;
	struct rn_doctor d = { 0 };
	struct rn_doctor_facts f;

	fixture_sysfs_create();
	fixture_sysfs_write("/proc/sys/kernel/osrelease", "6.1.0-99-amd64\n");
	fixture_sysfs_write("/sys/bus/pci/drivers/mlx5_core/bind", "");
	fixture_sysfs_write("/sys/devices/pci0000:00/0000:3b:00.0/vendor", "0x15b3\n");
	fixture_sysfs_symlink("/sys/devices/pci0000:00/0000:3b:00.0/driver",
			      "../../../bus/pci/drivers/mlx5_core");
	fixture_sysfs_symlink("/sys/class/net/ens1f0np0/device",
			      "../../../devices/pci0000:00/0000:3b:00.0");
	fixture_sysfs_write("/sys/class/infiniband/mlx5_0/fw_ver", "28.39.1002\n");
	fixture_sysfs_netdev("veth0", 4, "02:00:00:00:00:04", 1500, "up");
	rn_doctor_facts_nic("ens1f0np0", "mlx5_0", &n);
	assert_string_equal(n.driver, "mlx5_core");
	assert_string_equal(n.fw, "28.39.1002");
	/* a virtual netdev has no device; a netdev without an RDMA port no firmware */
	rn_doctor_facts_nic("veth0", NULL, &n);
	assert_string_equal(n.driver, "none");
	assert_string_equal(n.fw, "none");
	rn_doctor_facts_read(&d, &f);
	assert_string_equal(f.kernel, "6.1.0-99-amd64");
	assert_int_equal(f.all.arp_ignore, -1); /* no host snapshot: unread, not 0 */
	fixture_sysfs_destroy();
}

static void codec_roundtrip_and_refusals(void **state)
{
	struct rn_doctor_facts in = { 0 }, out;
	struct rn_wbuf b = { 0 };
	struct rn_rbuf r;
	size_t cut;

	strcpy(in.plugin, "0.3.0");
	strcpy(in.plugin_path, "/usr/lib/x86_64-linux-gnu/libnccl-net-roce.so");
	strcpy(in.kernel, "6.1.0-21-amd64");
	strcpy(in.rdma_core, "44.0");
	strcpy(in.nccl, "2.21.5+cuda12.4");
	in.all = (struct rn_sysctls){ 1, 2, 0, 0, 0, 0, 0 };
	in.nnics = 2;
	strcpy(in.nics[0].driver, "mlx5_core");
	strcpy(in.nics[0].fw, "28.39.1002");
	in.nics[0].eff = (struct rn_sysctls){ 1, 2, 0, 2, 0, 0, 0 };
	strcpy(in.nics[1].driver, "none");
	strcpy(in.nics[1].fw, "none");
	in.nics[1].dev = (struct rn_sysctls){ -1, -1, -1, -1, -1, 0, 0 };
	rn_doctor_facts_put(&b, &in);
	assert_int_equal(b.err, 0);
	r = (struct rn_rbuf){ b.p, b.len, 0, 0 };
	assert_int_equal(rn_doctor_facts_get(&r, &out), 0);
	assert_int_equal(r.off, b.len);
	assert_memory_equal(&in, &out, sizeof(in));
	/* every cut is refused, never half taken */
	for (cut = 0; cut < b.len; cut++) {
		r = (struct rn_rbuf){ b.p, cut, 0, 0 };
		assert_int_equal(rn_doctor_facts_get(&r, &out), -EBADMSG);
		assert_string_equal(out.plugin, "");
	}
	/* a string longer than its field is refused by the reader */
	b.p[1] = RN_FACT_LEN;
	r = (struct rn_rbuf){ b.p, b.len, 0, 0 };
	assert_int_equal(rn_doctor_facts_get(&r, &out), -EBADMSG);
	free(b.p);
	/* a NUL inside is no string */
	{
		const uint8_t nul[] = { 0, 3, 'a', 0, 'b' };
		char dst[8];

		r = (struct rn_rbuf){ nul, sizeof(nul), 0, 0 };
		rn_rb_str(&r, dst, sizeof(dst));
		assert_int_equal(r.err, -EBADMSG);
		assert_string_equal(dst, "");
	}
	/* and by the writer: a value is sent whole or not at all */
	memset(&b, 0, sizeof(b));
	rn_wb_str(&b, "abcdef", 5);
	assert_int_equal(b.err, -EMSGSIZE);
	assert_int_equal(b.len, 0);
	free(b.p);
	/* more NICs than a doctor has: the count is refused before any NIC is read */
	memset(&b, 0, sizeof(b));
	in.nnics = 0;
	rn_doctor_facts_put(&b, &in);
	rn_put_be16(b.p + b.len - 2, RN_DOCTOR_MAX_NICS + 1);
	r = (struct rn_rbuf){ b.p, b.len, 0, 0 };
	assert_int_equal(rn_doctor_facts_get(&r, &out), -EBADMSG);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(versioned_names),
		cmocka_unit_test_setup_teardown(tag_in_rodata, setup, teardown),
		cmocka_unit_test_setup_teardown(find_like_the_loader, setup, teardown),
		cmocka_unit_test_setup_teardown(nccl_and_plugin, setup, teardown),
		cmocka_unit_test(rdma_core_of_this_process),
		cmocka_unit_test(sysfs_facts),
		cmocka_unit_test(codec_roundtrip_and_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
