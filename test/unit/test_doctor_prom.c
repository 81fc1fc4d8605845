// SPDX-License-Identifier: MIT
/*
 * roce-doctor --prometheus's link history and port counters (src/doctor/doctor_prom.c over
 * the model's rn_doctor_nic_counters, src/doctor/doctor_model.c), over a sysfs fixture:
 * an rxe port whose link flaps, an mlx5 port with the PMA's data counters (4-byte words
 * in sysfs, bytes in the metric), a driver the library does not know, and a netdev-only
 * NIC. Every counter is one series by the driver's name with the port's labels, each
 * family has one HELP and TYPE, the info series names the driver and what it lacks, and
 * the whole text passes `promtool check metrics` (Debian's prometheus package).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture_sysfs.h"
#include "rn_log.h"
#include "../../src/doctor/doctor.h"

static struct rn_doctor doc;
static struct rn_dev devs[4];

static void quiet(enum rn_log_level level, unsigned long sub, const char *file, int line,
		  const char *msg)
{
}

static void put(const char *path, unsigned long long v)
{
	fixture_sysfs_num(v, "%s", path);
}

/* A RoCE port @ib:1 on netdev @nd, its counters "group/name=value" ... NULL. */
static void port(const char *ib, const char *nd, ...)
{
	char p[256];
	const char *c;
	va_list ap;

	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/link_layer", ib);
	fixture_sysfs_write(p, "Ethernet");
	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0", ib);
	fixture_sysfs_write(p, nd);
	va_start(ap, nd);
	while ((c = va_arg(ap, const char *))) {
		const char *eq = strchr(c, '=');

		snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/%.*s", ib, (int)(eq - c),
			 c);
		fixture_sysfs_write(p, eq + 1);
	}
	va_end(ap);
}

static void carrier(const char *nd, unsigned long long changes, unsigned long long down)
{
	char p[256];

	snprintf(p, sizeof(p), "/sys/class/net/%s/carrier_changes", nd);
	put(p, changes);
	snprintf(p, sizeof(p), "/sys/class/net/%s/carrier_down_count", nd);
	put(p, down);
}

static void nic(int i, const char *netdev, const char *ibdev)
{
	struct rn_doctor_nic *dn = &doc.nics[i];

	snprintf(dn->nic.netdev, sizeof(dn->nic.netdev), "%s", netdev);
	if (ibdev) {
		snprintf(dn->nic.ibdev, sizeof(dn->nic.ibdev), "%s", ibdev);
		dn->nic.port = 1;
		dn->dev = &devs[i];
	}
	dn->nic.verdict = RN_VERDICT_OK;
	/* the library's flap verdict over the same fixture (the model's rn_nic_assess does) */
	rn_flap_assess(&dn->nic);
	rn_doctor_nic_counters(dn);
}

static int setup(void **state)
{
	rn_log_set_sink(quiet);
	fixture_sysfs_create();
	rn_ctr_reset();
	memset(&doc, 0, sizeof(doc));
	snprintf(doc.hostname, sizeof(doc.hostname), "node7");
	fixture_sysfs_write("/proc/uptime", "7200.00 100.00"); /* two hours since boot */
	port("rxe0", "nic0", "hw_counters/sent_pkts=12", "hw_counters/rcvd_pkts=10",
	     "hw_counters/completer_retry_err=3", "hw_counters/link_downed=4",
	     "hw_counters/lifespan=10", NULL);
	carrier("nic0", 14, 7); /* 7 lost carriers in 2 h: link-flapping */
	port("mlx5_0", "ens1f0", "counters/port_xmit_data=1000", "counters/port_rcv_data=250",
	     "counters/port_xmit_packets=40", "counters/link_downed=1",
	     "hw_counters/local_ack_timeout_err=2", "hw_counters/out_of_sequence=0", NULL);
	carrier("ens1f0", 2, 1);
	port("qedr0", "ens4", "counters/port_xmit_packets=8", NULL);
	carrier("veth9", 3, 1); /* a netdev without RDMA: no port counters */
	nic(0, "nic0", "rxe0");
	nic(1, "ens1f0", "mlx5_0");
	nic(2, "ens4", "qedr0");
	nic(3, "veth9", NULL);
	doc.nnics = 4;
	return 0;
}

static int teardown(void **state)
{
	rn_doctor_release(&doc);
	fixture_sysfs_destroy();
	rn_ctr_reset();
	return 0;
}

static char *render(int *rc)
{
	FILE *f = tmpfile();
	long n;
	char *s;

	assert_non_null(f);
	doc.out = f;
	*rc = rn_doctor_prom(&doc, NULL, 0);
	n = ftell(f);
	s = calloc(1, (size_t)n + 1);
	assert_non_null(s);
	rewind(f);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

/* @line, whole, in @s; how many times */
static int lines(const char *s, const char *line)
{
	const char *p = s;
	size_t l = strlen(line);
	int n = 0;

	for (; (p = strstr(p, line)); p += l)
		if ((p == s || p[-1] == '\n') && p[l] == '\n')
			n++;
	return n;
}

static void expect(const char *s, const char *line)
{
	if (lines(s, line) != 1) {
		fprintf(stderr, "--- output:\n%s--- want once: %s\n", s, line);
		fail();
	}
}

/* lines of @s that start with @prefix */
static int count(const char *s, const char *prefix)
{
	const char *p = s;
	int n = 0;

	for (; (p = strstr(p, prefix)); p++)
		if (p == s || p[-1] == '\n')
			n++;
	return n;
}

static void hw_counters(void **state)
{
	int rc;
	char *s = render(&rc);

	/* link-flapping on nic0 is a warning: exit 1, as the text report */
	assert_int_equal(rc, RN_DOCTOR_PROBLEMS);
	expect(s, "# HELP roce_nic_hw_counters_total The RDMA port's counters (sysfs hw_counters/ "
		  "and counters/) by the driver's own name, in base units: port_xmit_data and "
		  "port_rcv_data in bytes (sysfs counts 4-byte words).");
	expect(s, "# TYPE roce_nic_hw_counters_total counter");
	/* the driver's own names, the port's labels */
	expect(s, "roce_nic_hw_counters_total{device=\"rxe0\",port=\"1\",netdev=\"nic0\","
		  "counter=\"sent_pkts\"} 12");
	expect(s, "roce_nic_hw_counters_total{device=\"rxe0\",port=\"1\",netdev=\"nic0\","
		  "counter=\"completer_retry_err\"} 3");
	/* the PMA's data counters: 4-byte words in sysfs, bytes here */
	expect(s, "roce_nic_hw_counters_total{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\","
		  "counter=\"port_xmit_data\"} 4000");
	expect(s, "roce_nic_hw_counters_total{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\","
		  "counter=\"port_rcv_data\"} 1000");
	expect(s, "roce_nic_hw_counters_total{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\","
		  "counter=\"port_xmit_packets\"} 40");
	expect(s, "roce_nic_hw_counters_total{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\","
		  "counter=\"out_of_sequence\"} 0");
	/* a driver we do not know: its counters all the same, and what the diagnosis lacks */
	expect(s, "roce_nic_hw_counters_total{device=\"qedr0\",port=\"1\",netdev=\"ens4\","
		  "counter=\"port_xmit_packets\"} 8");
	assert_int_equal(count(s, "roce_nic_hw_counters_total{device=\"qedr0\""), 1);
	expect(s,
	       "roce_nic_hw_counters_info{device=\"qedr0\",port=\"1\",netdev=\"ens4\","
	       "driver=\"unknown\",lacks=\"packets received, retransmission timeouts, "
	       "sequence-error NAKs, out-of-sequence packets, duplicate requests, RNR NAKs, "
	       "retries exhausted, CNPs sent, CNPs handled, ECN-marked packets, link downs\"} 1");
	expect(s, "roce_nic_hw_counters_info{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\","
		  "driver=\"mlx5\",lacks=\"packets received, sequence-error NAKs, duplicate "
		  "requests, RNR NAKs, retries exhausted, CNPs sent, CNPs handled, ECN-marked "
		  "packets\"} 1");
	/* a setting, not a counter; a netdev without RDMA has none */
	assert_null(strstr(s, "lifespan"));
	assert_int_equal(count(s, "roce_nic_hw_counters_total{"), 6 + 4 + 1);
	assert_null(strstr(s, "roce_nic_hw_counters_total{device=\"\""));
	assert_int_equal(count(s, "roce_nic_hw_counters_info{"), 3);
	free(s);
}

static void link_history(void **state)
{
	int rc;
	char *s = render(&rc);

	expect(s, "# TYPE roce_nic_carrier_changes_total counter");
	expect(s, "# TYPE roce_nic_carrier_down_total counter");
	expect(s, "# TYPE roce_nic_link_downed_total counter");
	expect(s, "# TYPE roce_nic_link_flapping gauge");
	expect(s,
	       "roce_nic_carrier_changes_total{device=\"rxe0\",port=\"1\",netdev=\"nic0\",ibdev=\"rxe0\"} 14");
	expect(s,
	       "roce_nic_carrier_down_total{device=\"rxe0\",port=\"1\",netdev=\"nic0\",ibdev=\"rxe0\"} 7");
	expect(s,
	       "roce_nic_carrier_changes_total{device=\"\",port=\"\",netdev=\"veth9\",ibdev=\"\"} 3");
	/* link_downed: the PMA's (mlx5), else the driver's own (rxe); none without RDMA */
	expect(s,
	       "roce_nic_link_downed_total{device=\"rxe0\",port=\"1\",netdev=\"nic0\",ibdev=\"rxe0\"} 4");
	expect(s,
	       "roce_nic_link_downed_total{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\",ibdev=\"mlx5_0\"} 1");
	assert_int_equal(count(s, "roce_nic_link_downed_total{"), 2);
	/* the link-flapping finding as a gauge on every NIC, and as a finding series */
	expect(s,
	       "roce_nic_link_flapping{device=\"rxe0\",port=\"1\",netdev=\"nic0\",ibdev=\"rxe0\"} 1");
	expect(s,
	       "roce_nic_link_flapping{device=\"mlx5_0\",port=\"1\",netdev=\"ens1f0\",ibdev=\"mlx5_0\"} 0");
	expect(s, "roce_nic_link_flapping{device=\"\",port=\"\",netdev=\"veth9\",ibdev=\"\"} 0");
	expect(s, "roce_nic_finding{device=\"rxe0\",port=\"1\",netdev=\"nic0\",ibdev=\"rxe0\","
		  "cause=\"link-flapping\",severity=\"warn\"} 1");
	free(s);
}

/* Each family's HELP and TYPE once, before its samples, and promtool finds nothing. */
static void promtool_clean(void **state)
{
	char path[] = "/tmp/rn-prom-XXXXXX", cmd[128], out[4096];
	int rc, fd;
	char *s = render(&rc);
	FILE *p;
	size_t n;

	assert_int_equal(count(s, "# HELP roce_nic_hw_counters_total "), 1);
	assert_int_equal(count(s, "# TYPE roce_nic_hw_counters_total "), 1);
	assert_true(strstr(s, "# TYPE roce_nic_hw_counters_total") <
		    strstr(s, "\nroce_nic_hw_counters_total{"));
	assert_int_equal(count(s, "# HELP roce_nic_link_flapping "), 1);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
	/* test/netns/prom_rules.t runs the shipped rules over these series (RDMA ports) */
	if (getenv("RN_PROM_OUT")) {
		FILE *o = fopen(getenv("RN_PROM_OUT"), "w");

		assert_non_null(o);
		assert_int_equal(fputs(s, o) < 0, 0);
		assert_int_equal(fclose(o), 0);
	}
	free(s);
	if (system("command -v promtool >/dev/null 2>&1")) {
		unlink(path);
		fprintf(stderr, "promtool not installed (scripts/install-deps --test): not run\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd), "promtool check metrics <%s 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	rc = pclose(p);
	unlink(path);
	if (rc || n)
		fprintf(stderr, "promtool check metrics: status %d:\n%s", rc, out);
	assert_int_equal(rc, 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(hw_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(link_history, setup, teardown),
		cmocka_unit_test_setup_teardown(promtool_clean, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
