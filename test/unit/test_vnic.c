// SPDX-License-Identifier: MIT
/*
 * NIC fusion over the fake wire: a vNIC of the fixture's two NICs (rxe0+rxe1) talking
 * to itself, to one NIC, and one NIC talking to it. Every message is split over a QP
 * per member, each on its own NIC with that NIC's keys (the fake refuses a key of
 * another PD); a member whose path is refused fails the connection with its diagnosis.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "double_conncheck.h"
#include "fixture_xfer.h"
#include "double_conncheck.c"
#include "rn_verbs.h"

struct t {
	struct fx f;
	int vdev;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
};

static struct t t;

static int setup(void **state)
{
	static const int members[] = { 0, 1 };

	fx_setup(&t.f);
	fake_path_set(NULL, NULL);
	t.sc = NULL;
	t.rc = NULL;
	assert_int_equal(rn_vdev_make(&t.f.eng, members, 2, &t.vdev), 0);
	assert_int_equal(t.vdev, 2);
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(fx_close(&t.f, t.sc, t.rc), 0);
	return 0;
}

/* @nmsg checked messages of @size each; returns 0 or the first error. */
static int xfer(size_t size, int nmsg)
{
	void *s = fx_pattern(size, 1), *r = fx_pattern(size, 99);
	struct rn_mr *smr = NULL, *rmr = NULL;
	struct rn_req *sreq, *rreq;
	int i, tag = 5, got = -1, ret = 0;

	assert_int_equal(rn_reg_mr(t.sc, s, size, RN_PTR_HOST, &smr), 0);
	assert_int_equal(rn_reg_mr(t.rc, r, size, RN_PTR_HOST, &rmr), 0);
	for (i = 0; i < nmsg && !ret; i++) {
		memset(r, 0, size);
		((unsigned char *)s)[i % size] ^= 0x5a;
		sreq = rreq = NULL;
		assert_int_equal(rn_irecv(t.rc, 1, &r, &size, &tag, &rmr, &rreq), 0);
		assert_non_null(rreq);
		ret = fx_isend(t.sc, s, size, tag, smr, &sreq);
		if (ret)
			break;
		assert_non_null(sreq);
		ret = fx_wait(sreq, NULL);
		if (!ret)
			ret = fx_wait(rreq, &got);
		if (!ret) {
			assert_int_equal(got, (int)size);
			assert_memory_equal(r, s, size);
		}
	}
	assert_int_equal(rn_dereg_mr(t.sc, smr), 0);
	assert_int_equal(rn_dereg_mr(t.rc, rmr), 0);
	free(s);
	free(r);
	return ret;
}

/* The bytes each QP of @c wrote (RDMA writes, with or without imm). */
static int qp_writes(struct rn_comm *c, int q)
{
	struct fake_wire_stats st;

	fake_wire_stats(c->qps[q], &st);
	return st.writes + st.writes_imm;
}

/* Pages of @c's control block, as registered on each of its members (all alike). */
static int ctrl_pages(const struct rn_comm *c)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	int k;

	for (k = 0; k < c->nmem; k++)
		assert_int_equal(c->mem[k].ctrl_mr->length, c->ctrl_len);
	return (int)(c->ctrl_len / pg);
}

/* vNIC to vNIC: a QP per member, on its own NIC, each carrying a part of every message. */
static void vnic_to_vnic(void **state)
{
	struct fake_wire_qp_attrs a;
	int q;

	assert_int_equal(fx_connect(&t.f, t.vdev, t.vdev, 0, &t.sc, &t.rc), 0);
	assert_int_equal(t.sc->c.nmem, 2);
	assert_int_equal(t.sc->c.rmem, 2);
	assert_int_equal(t.sc->c.nqps, 2);
	assert_int_equal(t.rc->c.nqps, 2);
	assert_true(t.sc->c.split);
	/* a receiver of 2 NICs: a key per member, 32-byte CTS entries at both ends (3 or more
	 * take 64: plugin_vnic.t's vNIC of 3), a control block of 3 pages on each member */
	assert_int_equal(t.sc->c.cts_len, 32);
	assert_int_equal(t.rc->c.cts_len, 32);
	assert_int_equal(ctrl_pages(&t.sc->c), 3);
	assert_int_equal(ctrl_pages(&t.rc->c), 3);
	/* QP q is on member q at both ends: its own NIC's context, the peer member's GID */
	for (q = 0; q < 2; q++) {
		assert_ptr_equal(t.sc->c.qps[q]->context, t.f.devs[q].ctx);
		assert_ptr_equal(t.rc->c.qps[q]->context, t.f.devs[q].ctx);
		fake_wire_qp_attrs(t.sc->c.qps[q], &a);
		assert_int_equal(a.state, IBV_QPS_RTS);
		assert_memory_equal(&a.rtr.ah_attr.grh.dgid, &t.f.devs[q].nic.gid, 16);
		assert_int_equal(a.rtr.dest_qp_num, t.rc->c.qps[q]->qp_num);
	}
	/* both pairs were checked, on each side */
	assert_int_equal(fake_path_checks(), 4);
	assert_true(fx_info_seen("(vNIC 2:2)"));

	assert_int_equal(xfer(1 << 20, 3), 0);
	assert_int_equal(xfer(1000, 2), 0); /* smaller than 2 chunks of 128 B alignment */
	assert_int_equal(xfer(1, 1), 0);    /* one byte: the second QP sends only its imm */
	for (q = 0; q < 2; q++) {
		assert_int_equal(qp_writes(&t.sc->c, q), 3 + 2 + 1); /* one WR per QP per message */
		assert_true(qp_writes(&t.rc->c, q) > 0);             /* CTS entries, through both */
	}
	assert_int_equal(fx_nwarn, 0);
}

/* Two members against one: both of ours talk to the peer's one, both ways round. */
static void two_members_to_one(void **state)
{
	int q;

	assert_int_equal(fx_connect(&t.f, t.vdev, 1, 0, &t.sc, &t.rc), 0);
	assert_int_equal(t.sc->c.nqps, 2);
	assert_int_equal(t.rc->c.nqps, 2);
	assert_int_equal(t.rc->c.nmem, 1);
	assert_int_equal(t.rc->c.rmem, 2);
	assert_true(t.rc->c.split); /* both ends agree the messages are split */
	/* and on the CTS entry: the receiver has one NIC, one key */
	assert_int_equal(t.sc->c.cts_len, 32);
	assert_int_equal(t.rc->c.cts_len, 32);
	/* each end registers a control block of 3 pages (8 KiB of FIFO), on every member */
	assert_int_equal(ctrl_pages(&t.sc->c), 3);
	assert_int_equal(ctrl_pages(&t.rc->c), 3);
	assert_ptr_equal(t.sc->c.qps[0]->context, t.f.devs[0].ctx);
	assert_ptr_equal(t.sc->c.qps[1]->context, t.f.devs[1].ctx);
	assert_ptr_equal(t.rc->c.qps[0]->context, t.f.devs[1].ctx);
	assert_ptr_equal(t.rc->c.qps[1]->context, t.f.devs[1].ctx);
	assert_int_equal(xfer(300000, 4), 0);
	for (q = 0; q < 2; q++)
		assert_int_equal(qp_writes(&t.sc->c, q), 4);
	rn_close_send(t.sc);
	rn_close_recv(t.rc);
	t.sc = NULL;
	t.rc = NULL;

	assert_int_equal(fx_connect(&t.f, 0, t.vdev, 0, &t.sc, &t.rc), 0);
	assert_int_equal(t.sc->c.nqps, 2); /* sized by the member count in the handle */
	assert_int_equal(t.sc->c.nmem, 1);
	assert_int_equal(t.rc->c.nmem, 2);
	assert_int_equal(t.sc->c.cts_len, 32); /* the receiver's 2 keys fit */
	assert_int_equal(t.rc->c.cts_len, 32);
	assert_ptr_equal(t.rc->c.qps[1]->context, t.f.devs[1].ctx);
	assert_int_equal(xfer(65536, 3), 0);
	for (q = 0; q < 2; q++)
		assert_int_equal(qp_writes(&t.sc->c, q), 3);
	assert_int_equal(fx_nwarn, 0);
}

/* NCCL_IB_QPS_PER_CONNECTION counts per member: 2 x 2 QPs, striped over the NICs. */
static void qps_per_member(void **state)
{
	int q;

	t.f.eng.cfg.qps_per_conn = 2;
	assert_int_equal(fx_connect(&t.f, t.vdev, t.vdev, 0, &t.sc, &t.rc), 0);
	assert_int_equal(t.sc->c.nqps, 4);
	for (q = 0; q < 4; q++)
		assert_ptr_equal(t.sc->c.qps[q]->context, t.f.devs[q % 2].ctx);
	assert_int_equal(xfer(1 << 16, 2), 0);
	for (q = 0; q < 4; q++)
		assert_int_equal(qp_writes(&t.sc->c, q), 2);
	/* each pair of NICs is checked once, not once per QP */
	assert_int_equal(fake_path_checks(), 4);
}

/* A member whose path is refused fails the whole connection with that member's finding. */
static void member_refused(void **state)
{
	struct fake_path_script s = { 0 };
	struct fake_wire_stats st;

	s.poll_ret = -EHOSTUNREACH;
	s.finding.cause = RN_CAUSE_NO_RULE;
	s.finding.sev = RN_SEV_FATAL;
	s.finding.msg = (char *)"no rule for 198.18.0.2"; /* the fake copies it */
	s.finding.fix = (char *)"ip rule add from 198.18.0.2 lookup 102";
	fake_path_set("rxe1", &s);
	/* the vNIC sends to rxe0 alone: its pair rxe1 -> rxe0 is the refused one */
	assert_int_equal(fx_connect(&t.f, t.vdev, 0, 0, &t.sc, &t.rc), -EHOSTUNREACH);
	assert_null(t.sc);
	assert_null(t.rc);
	assert_int_equal(fake_path_checks(), 4); /* 2 pairs, each seen from both ends */
	/* the refusing side names its member NIC, not the vNIC's first */
	assert_true(fx_warn_seen("rxe1:1 -> "));
	assert_true(fx_warn_seen("connection refused here [no-rule]"));
	assert_true(fx_warn_seen("connection refused by the peer [no-rule]"));
	assert_true(fx_warn_seen("lookup 102"));
	assert_int_equal(fx_nwarn, 2);                             /* one per side */
	fake_wire_stats(NULL, &st);
	assert_int_equal(st.writes + st.writes_imm + st.reads, 0); /* no RDMA ever */
}

/* One message of 64 KiB, vNIC to vNIC, whose second QP's write completes with @st. */
struct member_fail {
	size_t size;
	void *sb, *rb;
	struct rn_mr *smr, *rmr;
};

static void member_fail_send(struct member_fail *m, enum ibv_wc_status st)
{
	struct rn_req *sreq = NULL, *rreq = NULL;
	int i, ret, done, got, tag = 1;

	m->size = 65536;
	m->sb = fx_pattern(m->size, 1);
	m->rb = fx_pattern(m->size, 2);
	assert_int_equal(fx_connect(&t.f, t.vdev, t.vdev, 0, &t.sc, &t.rc), 0);
	assert_int_equal(rn_reg_mr(t.sc, m->sb, m->size, RN_PTR_HOST, &m->smr), 0);
	assert_int_equal(rn_reg_mr(t.rc, m->rb, m->size, RN_PTR_HOST, &m->rmr), 0);
	assert_int_equal(rn_irecv(t.rc, 1, &m->rb, &m->size, &tag, &m->rmr, &rreq), 0);
	fake_wire_fail_qp(t.sc->c.qps[1], st, 0x81);
	fx_log_reset();
	assert_int_equal(fx_isend(t.sc, m->sb, m->size, tag, m->smr, &sreq), 0);
	assert_non_null(sreq);
	for (i = 0, ret = 0; i < 100 && !ret; i++)
		ret = rn_test(sreq, &done, &got);
	assert_int_equal(ret, -EREMOTEIO);
	assert_int_equal(fx_nwarn, 1);
	assert_non_null(strstr(fx_last_warn, "hca rxe1:1"));
}

static void member_fail_free(struct member_fail *m)
{
	assert_int_equal(rn_dereg_mr(t.sc, m->smr), 0);
	assert_int_equal(rn_dereg_mr(t.rc, m->rmr), 0);
	free(m->sb);
	free(m->rb);
}

/* A completion error on the second NIC's QP names that NIC and its peer NIC. */
static void member_completion_error(void **state)
{
	struct member_fail m;
	char lg[48], rg[48];

	member_fail_send(&m, IBV_WC_RETRY_EXC_ERR);
	/* QP numbers collide across the two NICs: the CQ's member must tell which failed */
	assert_int_equal(t.sc->c.qps[0]->qp_num, t.sc->c.qps[1]->qp_num);
	assert_non_null(strstr(fx_last_warn, "status=RETRY_EXC_ERR(12)"));
	assert_non_null(strstr(fx_last_warn, rn_gid_str(&t.f.devs[1].nic.gid, lg, sizeof(lg))));
	assert_non_null(strstr(fx_last_warn, rn_gid_str(&t.f.devs[1].nic.gid, rg, sizeof(rg))));
	member_fail_free(&m);
}

/*
 * The receiver refuses the second QP's part of a message: the WARN names the key that QP
 * wrote with, the receiver's buffer's key on its second NIC, not the first NIC's.
 */
static void member_refused_write_names_its_key(void **state)
{
	struct member_fail m;
	char want[96], other[96];

	member_fail_send(&m, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(m.rmr->nmem, 2);
	assert_int_not_equal(m.rmr->mem[0]->ibmr->rkey, m.rmr->mem[1]->ibmr->rkey);
	assert_non_null(strstr(fx_last_warn, "status=REM_ACCESS_ERR"));
	snprintf(want, sizeof(want), "its buffer of %zu bytes at %#llx, rkey %#x,", m.size,
		 (unsigned long long)(uintptr_t)m.rb, m.rmr->mem[1]->ibmr->rkey);
	snprintf(other, sizeof(other), "rkey %#x,", m.rmr->mem[0]->ibmr->rkey);
	assert_non_null(strstr(fx_last_warn, want));
	assert_null(strstr(fx_last_warn, other));
	member_fail_free(&m);
}

/* The second NIC's port down past the QPs' retry budget fails the vNIC's comm, naming it. */
static void member_port_stays_down(void **state)
{
	char r[64];
	struct rn_mr *rmr = NULL;
	struct rn_req *req = NULL;
	struct ibv_async_event ev;
	size_t sz = sizeof(r);
	void *p = r;
	int i, done, ret = 0, tag = 0;

	t.f.eng.cfg.timeout = 1; /* a budget of microseconds: the grace is its 1 s of slack */
	t.f.eng.cfg.retry_cnt = 1;
	assert_int_equal(fx_connect(&t.f, t.vdev, t.vdev, 0, &t.sc, &t.rc), 0);
	assert_int_equal(rn_reg_mr(t.rc, r, sizeof(r), RN_PTR_HOST, &rmr), 0);
	assert_int_equal(rn_irecv(t.rc, 1, &p, &sz, &tag, &rmr, &req), 0);
	fx_log_reset();
	memset(&ev, 0, sizeof(ev));
	ev.event_type = IBV_EVENT_PORT_ERR;
	ev.element.port_num = 1;
	fake_wire_push_async(t.f.devs[1].ctx, &ev);
	for (i = 0; i < 5000 && !ret; i++) {
		ret = rn_test(req, &done, NULL);
		if (!ret)
			usleep(1000);
	}
	assert_int_equal(ret, -ENETDOWN);
	assert_true(fx_warn_seen("rxe1:1: the port has been down"));
	/* the member's netdev is admin-up (the fixture's): its carrier went, not a command */
	assert_true(fx_warn_seen("[link-flap]: rxe1:1 (eth1)"));
	assert_int_equal(rn_dereg_mr(t.rc, rmr), 0);
}

/*
 * A listener from before NIC fusion (handshake version 2) hands out a version-2 handle:
 * connect fails at once with a WARN saying so, not with a handshake that times out.
 */
static void old_listener_clean_error(void **state)
{
	unsigned char handle[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	struct rn_send_comm *sc = (void *)1;

	assert_int_equal(rn_listen(&t.f.eng, 0, handle, &lc), 0);
	handle[5] = 3; /* be16 version at 4: a build from before NIC fusion */
	fx_log_reset();
	assert_int_equal(rn_connect(&t.f.eng, t.vdev, handle, 0, &sc), -EPROTO);
	assert_null(sc);
	assert_int_equal(fx_nwarn, 1);
	assert_true(fx_warn_seen("another version of nccl-net-roce"));
	rn_close_listen(lc);
}

/* Registration on a vNIC comm holds one MR per member; deregistration releases them all. */
static void mr_per_member(void **state)
{
	size_t size = 8192;
	void *p = fx_pattern(size, 3);
	struct rn_mr *mr = NULL, *plain = NULL;

	assert_int_equal(fx_connect(&t.f, t.vdev, 0, 0, &t.sc, &t.rc), 0);
	assert_int_equal(rn_reg_mr(t.sc, p, size, RN_PTR_HOST, &mr), 0);
	assert_int_equal(mr->nmem, 2);
	assert_ptr_equal(mr->mem[0]->ibmr->pd, t.f.devs[0].pd);
	assert_ptr_equal(mr->mem[1]->ibmr->pd, t.f.devs[1].pd);
	assert_int_not_equal(rn_mr_lkey(mr, 0), rn_mr_lkey(mr, 1));
	/* a handle of the one-NIC comm is not this comm's: refused, nothing lost */
	assert_int_equal(rn_reg_mr(t.rc, p, size, RN_PTR_HOST, &plain), 0);
	assert_int_equal(rn_dereg_mr(t.sc, plain), -EINVAL);
	assert_int_equal(rn_dereg_mr(t.rc, mr), -EINVAL);
	{
		struct rn_req *req = NULL;

		assert_int_equal(rn_isend(t.sc, p, size, 0, plain, &req), -EINVAL);
		assert_null(req);
	}
	assert_int_equal(rn_dereg_mr(t.rc, plain), 0);
	assert_int_equal(rn_dereg_mr(t.sc, mr), 0);
	assert_int_equal(rn_dereg_mr(t.sc, mr), -EINVAL); /* released once */
	free(p);
}

/* A GPU receive on a vNIC is flushed through every member NIC. */
static void flush_every_member(void **state)
{
	size_t size = 4096;
	void *r = fx_pattern(size, 5);
	struct rn_mr *mr = NULL;
	struct rn_req *req = NULL;
	struct fake_wire_stats st;
	int sz = (int)size, k;

	assert_int_equal(fx_connect(&t.f, t.vdev, t.vdev, 0, &t.sc, &t.rc), 0);
	assert_non_null(t.rc->flush_qp[0]);
	assert_non_null(t.rc->flush_qp[1]);
	assert_int_equal(rn_reg_mr(t.rc, r, size, RN_PTR_CUDA, &mr), 0);
	assert_int_equal(rn_iflush(t.rc, 1, &r, &sz, &mr, &req), 0);
	assert_non_null(req);
	assert_int_equal(fx_wait(req, NULL), 0);
	for (k = 0; k < 2; k++) {
		fake_wire_stats(t.rc->flush_qp[k], &st);
		assert_int_equal(st.reads, 1);
	}
	assert_int_equal(rn_dereg_mr(t.rc, mr), 0);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(vnic_to_vnic, setup, teardown),
		cmocka_unit_test_setup_teardown(two_members_to_one, setup, teardown),
		cmocka_unit_test_setup_teardown(qps_per_member, setup, teardown),
		cmocka_unit_test_setup_teardown(member_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(member_completion_error, setup, teardown),
		cmocka_unit_test_setup_teardown(member_refused_write_names_its_key, setup,
						teardown),
		cmocka_unit_test_setup_teardown(member_port_stays_down, setup, teardown),
		cmocka_unit_test_setup_teardown(old_listener_clean_error, setup, teardown),
		cmocka_unit_test_setup_teardown(mr_per_member, setup, teardown),
		cmocka_unit_test_setup_teardown(flush_every_member, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
