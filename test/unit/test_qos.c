// SPDX-License-Identifier: MIT
/*
 * The QoS check (src/qos.c) over fake DCB answers (the netlink edge's dcb_get) and a sysfs
 * fixture (the mlx5 traffic_class override); the RTM_GETDCB parser (src/nl.c) over a
 * hand-made kernel reply; and the dcb commands we print, against iproute2's own `dcb`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <cmocka.h>

#include "fixture_sysfs.h"
#include "rn_log.h"
#include "rn_nic.h"
#include "rn_nl.h"
#include "rn_qos.h"

static struct rn_nl_dcb dcb;
static int dcb_ret;
static char logged[4096];

static int f_dcb_get(const char *ifname, struct rn_nl_dcb *out)
{
	if (dcb_ret)
		return dcb_ret;
	*out = dcb;
	return 0;
}

static void sink(enum rn_log_level level, unsigned long sub, const char *file, int line,
		 const char *msg)
{
	snprintf(logged + strlen(logged), sizeof(logged) - strlen(logged), "%s\n", msg);
}

static int setup(void **state)
{
	static const struct rn_nl_ops ops = { .dcb_get = f_dcb_get };

	fixture_sysfs_create();
	rn_nl_set_ops(&ops);
	rn_log_set_sink(sink);
	rn_log_set_level(RN_LOG_INFO);
	memset(&dcb, 0, sizeof(dcb));
	dcb_ret = 0;
	logged[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	rn_nl_reset_ops();
	fixture_sysfs_destroy();
	return 0;
}

static void app(int dscp, int prio)
{
	dcb.app[dcb.napp].selector = RN_DCB_SEL_DSCP;
	dcb.app[dcb.napp].protocol = (uint16_t)dscp;
	dcb.app[dcb.napp].prio = (uint8_t)prio;
	dcb.napp++;
}

/* PFC on priority 3, DSCP 26 mapped there: NCCL's usual RoCE setup. */
static void lossless_p3(void)
{
	dcb.has_pfc = 1;
	dcb.pfc_cap = 8;
	dcb.pfc_en = 1u << 3;
	app(26, 3);
	app(48, 6);
}

static struct rn_nic nic_for(const char *ib)
{
	struct rn_nic n;

	memset(&n, 0, sizeof(n));
	snprintf(n.ibdev, sizeof(n.ibdev), "%s", ib);
	snprintf(n.netdev, sizeof(n.netdev), "eth0");
	n.port = 1;
	return n;
}

static const struct rn_finding *only(const struct rn_nic *n, enum rn_cause c, int count)
{
	int i, k = 0;
	const struct rn_finding *f = NULL;

	for (i = 0; i < n->nfindings; i++)
		if (n->findings[i].cause == c) {
			k++;
			if (!f)
				f = &n->findings[i];
		}
	assert_int_equal(k, count);
	return f;
}

static void assess(struct rn_nic *n, int tc, int fifo_tc)
{
	struct rn_config cfg;

	rn_config_defaults(&cfg);
	cfg.tc = tc;
	cfg.fifo_tc = fifo_tc;
	rn_nic_findings_clear(n);
	assert_int_equal(rn_qos_assess(n, &cfg), 0);
}

/* A netdev without DCB: said plainly at INFO, no finding (rxe, virtio: the bed's NICs). */
static void no_dcb(void **state)
{
	struct rn_nic n = nic_for("rxe0");

	dcb_ret = -EOPNOTSUPP;
	assess(&n, 106, -1);
	assert_int_equal(n.nfindings, 0);
	assert_non_null(strstr(logged, "rxe0:1: eth0 has no DCB (Operation not supported)"));
	/* DCB, but nothing lossless: no lossless class to ride instead */
	dcb_ret = 0;
	app(26, 3);
	assess(&n, 0, -1);
	assert_int_equal(n.nfindings, 0);
	assert_non_null(strstr(logged, "no lossless priority"));
	rn_nic_cleanup(&n);
}

static void lossless_class_ok(void **state)
{
	struct rn_nic n = nic_for("mlx5_0");

	lossless_p3();
	assess(&n, 106, -1); /* DSCP 26 -> 3 */
	assert_int_equal(n.nfindings, 0);
	rn_nic_cleanup(&n);
}

/* NCCL_IB_TC unset: class 0, DSCP 0, not in the APP table: default map, priority 0, lossy. */
static void lossy_class_named(void **state)
{
	struct rn_nic n = nic_for("mlx5_0");
	const struct rn_finding *f;

	lossless_p3();
	assess(&n, -1, -1);
	f = only(&n, RN_CAUSE_QOS_LOSSY, 1);
	assert_int_equal(f->sev, RN_SEV_WARN);
	assert_non_null(strstr(f->msg, "data traffic class 0 (DSCP 0) maps to priority 0"));
	assert_non_null(strstr(f->msg, "priority 3 is lossless"));
	/* the class that lands on 3 (DSCP 26, the APP table's), ECN bits kept; or the dcb map */
	assert_string_equal(f->fix, "export NCCL_IB_TC=104  # or map DSCP 0 to the lossless "
				    "priority: dcb app add dev eth0 dscp-prio 0:3");
	/* an ECN-capable class keeps its ECN bits: 2 -> 106 */
	assess(&n, 2, -1);
	f = only(&n, RN_CAUSE_QOS_LOSSY, 1);
	assert_non_null(strstr(f->fix, "export NCCL_IB_TC=106 "));
	rn_nic_cleanup(&n);
}

/* The CTS writes ride NCCL_IB_FIFO_TC: judged on their own. */
static void fifo_class(void **state)
{
	struct rn_nic n = nic_for("mlx5_0");
	const struct rn_finding *f;

	lossless_p3();
	assess(&n, 106, 192); /* DSCP 48 -> priority 6, lossy */
	f = only(&n, RN_CAUSE_QOS_LOSSY, 1);
	assert_non_null(strstr(f->msg,
			       "CTS (FIFO) traffic class 192 (DSCP 48) maps to priority 6"));
	assert_non_null(strstr(f->fix, "export NCCL_IB_FIFO_TC=104 "));
	rn_nic_cleanup(&n);
}

/* trust pcp (no DSCP entry): no class helps, the APP table does. */
static void trust_pcp(void **state)
{
	struct rn_nic n = nic_for("mlx5_0");
	const struct rn_finding *f;

	dcb.has_pfc = 1;
	dcb.pfc_en = 1u << 3;
	assess(&n, 106, -1);
	f = only(&n, RN_CAUSE_QOS_LOSSY, 1);
	assert_non_null(strstr(f->msg, "trust pcp"));
	assert_string_equal(f->fix, "dcb app add dev eth0 dscp-prio 26:3");
	rn_nic_cleanup(&n);
}

/* The mlx5 per-device override replaces NCCL_IB_TC for every QP: it is what is judged. */
static void mlx5_override(void **state)
{
	struct rn_nic n = nic_for("mlx5_0");
	const struct rn_finding *f;

	lossless_p3();
	fixture_sysfs_write("/sys/class/infiniband/mlx5_0/tc/1/traffic_class", "Global tclass=0\n");
	assess(&n, 106, -1);
	f = only(&n, RN_CAUSE_QOS_LOSSY, 1);
	assert_non_null(strstr(f->msg, "traffic class 0 (DSCP 0)"));
	assert_non_null(strstr(f->msg, "mlx5 override"));
	assert_string_equal(f->fix,
			    "echo 104 > /sys/class/infiniband/mlx5_0/tc/1/traffic_class  "
			    "# or map DSCP 0 to the lossless priority: dcb app add dev eth0 "
			    "dscp-prio 0:3");
	fixture_sysfs_write("/sys/class/infiniband/mlx5_0/tc/1/traffic_class",
			    "Global tclass=106\n");
	assess(&n, 0, -1);
	assert_int_equal(n.nfindings, 0);
	rn_nic_cleanup(&n);
}

/* ---- the RTM_GETDCB parser over a reply as the kernel builds it ---- */

struct msgbuf {
	unsigned char b[1024];
	size_t len;
};

static struct nlattr *put(struct msgbuf *m, int type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)(m->b + m->len);

	a->nla_type = (uint16_t)type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	if (data)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	m->len += NLA_ALIGN(a->nla_len);
	return a;
}

static void end_nest(struct msgbuf *m, struct nlattr *a)
{
	a->nla_len = (uint16_t)(m->b + m->len - (unsigned char *)a);
}

static void parse_reply(void **state)
{
	struct msgbuf m = { .len = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct dcbmsg)) };
	struct nlmsghdr *h = (struct nlmsghdr *)m.b;
	struct dcbmsg *d = (struct dcbmsg *)(m.b + NLMSG_HDRLEN);
	struct ieee_pfc pfc = { .pfc_cap = 8, .pfc_en = 0x08 };
	struct dcb_app a1 = { .selector = IEEE_8021QAZ_APP_SEL_DSCP,
			      .priority = 3,
			      .protocol = 26 };
	struct dcb_app a2 = { .selector = IEEE_8021QAZ_APP_SEL_ETHERTYPE,
			      .priority = 1,
			      .protocol = 0x8915 };
	struct nlattr *ieee, *tbl;
	struct rn_nl_dcb out;

	memset(m.b, 0, sizeof(m.b));
	d->dcb_family = AF_UNSPEC;
	d->cmd = DCB_CMD_IEEE_GET;
	put(&m, DCB_ATTR_IFNAME, "eth0", 5);
	ieee = put(&m, DCB_ATTR_IEEE | NLA_F_NESTED, NULL, 0);
	put(&m, DCB_ATTR_IEEE_PFC, &pfc, sizeof(pfc));
	tbl = put(&m, DCB_ATTR_IEEE_APP_TABLE | NLA_F_NESTED, NULL, 0);
	put(&m, DCB_ATTR_IEEE_APP, &a1, sizeof(a1));
	put(&m, DCB_ATTR_IEEE_APP, &a2, sizeof(a2));
	end_nest(&m, tbl);
	end_nest(&m, ieee);
	h->nlmsg_len = (uint32_t)m.len;
	h->nlmsg_type = RTM_GETDCB;

	assert_int_equal(rn_nl_dcb_parse(m.b, m.len, &out), 0);
	assert_true(out.has_pfc);
	assert_int_equal(out.pfc_cap, 8);
	assert_int_equal(out.pfc_en, 0x08);
	assert_int_equal(out.napp, 2);
	assert_int_equal(out.app[0].selector, RN_DCB_SEL_DSCP);
	assert_int_equal(out.app[0].protocol, 26);
	assert_int_equal(out.app[0].prio, 3);
	assert_int_equal(out.app[1].protocol, 0x8915);
	/* no IEEE attribute (a device without ieee ops): nothing, no error */
	h->nlmsg_len = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct dcbmsg));
	assert_int_equal(rn_nl_dcb_parse(m.b, h->nlmsg_len, &out), 0);
	assert_false(out.has_pfc);
	assert_int_equal(out.napp, 0);
	/* garbage */
	h->nlmsg_type = RTM_GETLINK;
	assert_int_equal(rn_nl_dcb_parse(m.b, m.len, &out), -EBADMSG);
	assert_int_equal(rn_nl_dcb_parse(m.b, 3, &out), -EBADMSG);
}

/* ---- the commands we print, against iproute2's dcb ---- */

/* @cmd's output (stderr too) into @out; 0 when dcb ran. */
static int run(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n;

	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	return pclose(p) == -1 ? -1 : 0;
}

/*
 * `dcb app help` lists the grammar our fixes use, and each fix, run against 'lo' (which has no
 * DCB), gets past dcb's parser: the kernel's refusal, never dcb's usage text.
 */
static void dcb_syntax(void **state)
{
	struct rn_nic n = nic_for("mlx5_0");
	const struct rn_finding *f;
	char out[4096], cmd[512];
	const char *p;

	if (run("command -v dcb >/dev/null 2>&1 && echo yes", out, sizeof(out)) ||
	    strncmp(out, "yes", 3))
		skip(); /* iproute2's dcb (scripts/deps.d) */
	assert_int_equal(run("dcb app help 2>&1", out, sizeof(out)), 0);
	assert_non_null(strstr(out, "{ add | del | replace } dev STRING"));
	assert_non_null(strstr(out, "[ dscp-prio INTEGER:PRIO ]"));

	lossless_p3();
	assess(&n, 0, -1);
	f = only(&n, RN_CAUSE_QOS_LOSSY, 1);
	p = strstr(f->fix, "dcb app add dev eth0 dscp-prio 0:3");
	assert_non_null(p);
	snprintf(cmd, sizeof(cmd), "dcb app add dev lo dscp-prio 0:3 2>&1");
	assert_int_equal(run(cmd, out, sizeof(out)), 0);
	assert_null(strstr(out, "Usage"));
	assert_null(strstr(out, "What is"));
	assert_true(strstr(out, "not supported") || strstr(out, "not permitted"));
	/* and dcb does reject a wrong form, so the check above means something */
	assert_int_equal(run("dcb app add dev lo dscp-prio 0-3 2>&1", out, sizeof(out)), 0);
	assert_non_null(strstr(out, "Usage"));

	memset(&dcb, 0, sizeof(dcb));
	dcb.has_pfc = 1;
	dcb.pfc_en = 1u << 3;
	assess(&n, 106, -1);
	f = only(&n, RN_CAUSE_QOS_LOSSY, 1);
	assert_string_equal(f->fix, "dcb app add dev eth0 dscp-prio 26:3");
	assert_int_equal(run("dcb app add dev lo dscp-prio 26:3 2>&1", out, sizeof(out)), 0);
	assert_null(strstr(out, "Usage"));
	assert_true(strstr(out, "not supported") || strstr(out, "not permitted"));
	rn_nic_cleanup(&n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(no_dcb, setup, teardown),
		cmocka_unit_test_setup_teardown(lossless_class_ok, setup, teardown),
		cmocka_unit_test_setup_teardown(lossy_class_named, setup, teardown),
		cmocka_unit_test_setup_teardown(fifo_class, setup, teardown),
		cmocka_unit_test_setup_teardown(trust_pcp, setup, teardown),
		cmocka_unit_test_setup_teardown(mlx5_override, setup, teardown),
		cmocka_unit_test(parse_reply),
		cmocka_unit_test_setup_teardown(dcb_syntax, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
