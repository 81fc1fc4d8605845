// SPDX-License-Identifier: MIT
/*
 * roce-doctor --cni and --nfd (src/doctor/doctor_k8s.c with the host report and JSON
 * writer compiled in): a pod's two NICs, one on kernel defaults (arp-flux), one with strict
 * rp_filter, judged on net1/net2 of the pod whose ports' netdevs are the node's eth0/eth1.
 * --cni: one NetworkAttachmentDefinition per NIC, macvlan on the node's netdev with the
 * NIC's address, tuning (rp_filter loose only where it is strict), sbr; the fixes' commands
 * once each on stderr. --nfd: the verdict, counts and causes, the file whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "rn_log.h"
#include "../../src/doctor/doctor.h"
#include "rn_nic.h"
#include "rn_sys.h"
#include "fixture_sysfs.h"

static struct rn_doctor doc;
static struct rn_dev devs[3];

static void pod_nic(int i, const char *netdev, const char *ibdev, const char *ip,
		    enum rn_cause cause, const char *fix)
{
	struct rn_doctor_nic *dn = &doc.nics[i];
	struct rn_vars v = RN_VARS_INIT;

	snprintf(dn->nic.netdev, sizeof(dn->nic.netdev), "%s", netdev);
	snprintf(dn->nic.port_netdev, sizeof(dn->nic.port_netdev), "eth%d", i);
	snprintf(dn->nic.ibdev, sizeof(dn->nic.ibdev), "%s", ibdev);
	dn->nic.port = 1;
	assert_int_equal(rn_ip_parse(ip, &dn->nic.ip), 0);
	dn->nic.prefixlen = 24;
	dn->nic.verdict = RN_VERDICT_REFUSED;
	dn->dev = &devs[i];
	/* both fixes the same command: printed once */
	rn_vars_set(&v, "sysctls", "%s", fix);
	rn_vars_set(&v, "rp_keys", "%s", fix);
	rn_nic_add_finding(&dn->nic, cause, &v);
	rn_vars_free(&v);
}

/* the findings here carry only the fix: their templates' other facts are not the point */
static void quiet(enum rn_log_level level, unsigned long sub, const char *file, int line,
		  const char *msg)
{
}

static int setup(void **state)
{
	rn_log_set_sink(quiet);
	memset(&doc, 0, sizeof(doc));
	snprintf(doc.hostname, sizeof(doc.hostname), "node7");
	pod_nic(0, "rnpodnet1", "rxe0", "198.18.0.110", RN_CAUSE_ARP_FLUX,
		"net.ipv4.conf.all.arp_ignore=1");
	pod_nic(1, "rnpodnet2", "rxe1", "198.18.0.111", RN_CAUSE_RP_FILTER,
		"net.ipv4.conf.all.arp_ignore=1");
	doc.nnics = 2;
	return 0;
}

static int teardown(void **state)
{
	int i;

	for (i = 0; i < doc.nnics; i++)
		rn_nic_cleanup(&doc.nics[i].nic);
	return 0;
}

static char *slurp(FILE *f)
{
	long n;
	char *s;

	fflush(f);
	fseek(f, 0, SEEK_END); /* written through the descriptor too (stderr) */
	n = ftell(f);
	s = calloc(1, (size_t)n + 1);
	rewind(f);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	return s;
}

static void test_cni_nads(void **state)
{
	FILE *f = tmpfile();
	char *out, *n2;

	doc.out = f;
	assert_int_equal(rn_doctor_cni(&doc, 0), RN_DOCTOR_PROBLEMS);
	out = slurp(f);
	assert_non_null(strstr(out, "\"kind\": \"List\""));
	assert_non_null(strstr(out, "\"name\": \"roce-rnpodnet1\""));
	n2 = strstr(out, "\"name\": \"roce-rnpodnet2\"");
	assert_non_null(n2);
	/* the node's netdev under each port, the NIC's own address, the chain in order */
	assert_non_null(strstr(out, "{\\\"type\\\":\\\"macvlan\\\",\\\"master\\\":\\\"eth0\\\""));
	assert_non_null(strstr(out, "\\\"master\\\":\\\"eth1\\\""));
	assert_non_null(strstr(out, "\\\"address\\\":\\\"198.18.0.110/24\\\""));
	assert_non_null(strstr(out, "\\\"net.ipv4.conf.IFNAME.arp_ignore\\\":\\\"1\\\","
				    "\\\"net.ipv4.conf.IFNAME.arp_announce\\\":\\\"2\\\""));
	assert_non_null(strstr(out, "{\\\"type\\\":\\\"sbr\\\"}]}"));
	/* rp_filter loosened only for the NIC whose rp_filter is strict */
	assert_null(strstr(out, "rp_filter") < n2 ? strstr(out, "rp_filter") : NULL);
	assert_non_null(strstr(n2, "\\\"net.ipv4.conf.IFNAME.rp_filter\\\":\\\"2\\\""));
	free(out);
	fclose(f);
}

/* The NET_ADMIN commands on stderr: each once, without the "# or ..." tail. */
static void test_cni_commands_once(void **state)
{
	FILE *f = tmpfile(), *err = tmpfile();
	int saved = dup(2);
	char *s, *p;

	doc.out = f;
	fflush(stderr);
	dup2(fileno(err), 2);
	rn_doctor_cni(&doc, 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	s = slurp(err);
	p = strstr(s, "\nsysctl -w net.ipv4.conf.all.arp_ignore=1\n");
	assert_non_null(p);
	assert_null(strstr(p + 1, "\nsysctl -w"));
	assert_non_null(strstr(s, "k8s.v1.cni.cncf.io/networks: '[{\"name\":\"roce-rnpodnet1\","
				  "\"interface\":\"rnpodnet1\"},"));
	assert_non_null(strstr(s, "roce-policy-routing rnpodnet1 rnpodnet2\n"));
	free(s);
	fclose(err);
	fclose(f);
}

static void test_cni_good_pod_exit_0(void **state)
{
	FILE *f = tmpfile();
	int i;

	for (i = 0; i < doc.nnics; i++) {
		rn_nic_cleanup(&doc.nics[i].nic);
		doc.nics[i].nic.verdict = RN_VERDICT_OK;
	}
	doc.out = f;
	assert_int_equal(rn_doctor_cni(&doc, 0), RN_DOCTOR_OK);
	fclose(f);
}

/*
 * Shared netns mode, a pod with an RDMA device of its own on rnpodnet1 (rxa0, made in the
 * pod over its macvlan, whose lower link is the node's ifindex 2): the node's rxe0 is also
 * seen through rnpodnet1's GID. One NAD for rnpodnet1, the pod's own device's, with the
 * pod's address and a master left for the operator (the node's link is not nameable
 * from the pod), and the note that says which one.
 */
static void test_cni_pod_own_device(void **state)
{
	FILE *f = tmpfile(), *err = tmpfile();
	int saved = dup(2);
	char *out, *s, *p;

	fixture_sysfs_create();
	fixture_sysfs_num(3, "/sys/class/net/rnpodnet1/ifindex");
	fixture_sysfs_num(2, "/sys/class/net/rnpodnet1/iflink");
	/* a VLAN of the pod's net2 in the same namespace: lower_ shows, its master is named */
	fixture_sysfs_num(4, "/sys/class/net/rnpodnet2/ifindex");
	fixture_sysfs_num(5, "/sys/class/net/rnpodnet2/iflink");
	fixture_sysfs_lower("rnpodnet2", "eth1");
	doc.nics[2] = doc.nics[0];
	memset(&doc.nics[0].nic.findings, 0, sizeof(doc.nics[0].nic.findings));
	doc.nics[0].nic.nfindings = 0; /* the copy owns the finding */
	snprintf(doc.nics[2].nic.ibdev, sizeof(doc.nics[2].nic.ibdev), "rxa0");
	doc.nics[2].nic.port_netdev[0] = '\0';
	/* rxe1 is rnpodnet2's own, and rnpodnet2 a VLAN in this namespace: the node's view */
	doc.nics[1].nic.port_netdev[0] = '\0';
	fixture_sysfs_write("/sys/class/infiniband/rxe1/ports/1/gid_attrs/ndevs/0", "rnpodnet2");
	doc.nnics = 3;

	doc.out = f;
	fflush(stderr);
	dup2(fileno(err), 2);
	assert_int_equal(rn_doctor_cni(&doc, 0), RN_DOCTOR_PROBLEMS);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	out = slurp(f);
	s = slurp(err);
	fixture_sysfs_destroy();
	/* once each interface: rnpodnet1's is the pod's own device's */
	p = strstr(out, "\"name\": \"roce-rnpodnet1\"");
	assert_non_null(p);
	assert_null(strstr(p + 1, "\"name\": \"roce-rnpodnet1\""));
	assert_non_null(strstr(out, "\"roce-doctor/rdma-device\": \"rxa0\""));
	assert_null(strstr(out, "\"roce-doctor/rdma-device\": \"rxe0\""));
	/* not the pod's own net1 as its own master, nor host-local: the pod's address */
	assert_null(strstr(out, "\\\"master\\\":\\\"rnpodnet1\\\""));
	assert_non_null(strstr(out, "\\\"master\\\":\\\"MASTER\\\""));
	assert_non_null(strstr(out, "\\\"address\\\":\\\"198.18.0.110/24\\\""));
	/* a device on a link whose lower is in this namespace: the node's own, as before */
	p = strstr(out, "\"name\": \"roce-rnpodnet2\"");
	assert_non_null(p);
	assert_true(strstr(out, "host-local") > p);
	assert_non_null(strstr(p, "\\\"master\\\":\\\"rnpodnet2\\\""));
	assert_non_null(strstr(s,
			       "# roce-rnpodnet1: rnpodnet1 is this pod's own interface (rxa0 "
			       "is on it) over the node's link 2, in another network namespace"));
	assert_null(strstr(s, "# roce-rnpodnet2:"));
	/* the annotation names each interface once, in the devices' order */
	assert_non_null(strstr(s, "'[{\"name\":\"roce-rnpodnet2\",\"interface\":\"rnpodnet2\"},"
				  "{\"name\":\"roce-rnpodnet1\",\"interface\":\"rnpodnet1\"}]'"));
	free(out);
	free(s);
	fclose(err);
	fclose(f);
}

static void test_nfd_file(void **state)
{
	char dir[] = "/tmp/rn-nfd-XXXXXX", path[64], buf[2048];
	FILE *f;
	size_t n;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/roce", dir);
	assert_int_equal(rn_doctor_nfd(&doc, path, 0), RN_DOCTOR_PROBLEMS);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_non_null(strstr(buf, "\nroce.feature.node.kubernetes.io/verdict=refused\n"));
	assert_non_null(strstr(buf, "\nroce.feature.node.kubernetes.io/nics=2\n"));
	assert_non_null(strstr(buf, "\nroce.feature.node.kubernetes.io/nics-ok=0\n"));
	assert_non_null(strstr(buf, "\nroce.feature.node.kubernetes.io/cause-arp-flux=true\n"));
	assert_non_null(strstr(buf, "\nroce.feature.node.kubernetes.io/cause-rp-filter=true\n"));
	/* facts that cannot be read: still a file, verdict error */
	assert_int_equal(rn_doctor_nfd(&doc, path, -EIO), RN_DOCTOR_ERROR);
	f = fopen(path, "r");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_non_null(strstr(buf, "verdict=error\n"));
	assert_null(strstr(buf, "cause-"));
	unlink(path);
	assert_int_equal(rmdir(dir), 0); /* no temporary left behind */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cni_nads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cni_commands_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cni_good_pod_exit_0, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cni_pod_own_device, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nfd_file, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
