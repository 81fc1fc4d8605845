// SPDX-License-Identifier: MIT
/*
 * The GID a comm uses is looked up again when the comm is made (src/conn.c) and while it
 * lives (src/xfer.c's slow checks): an address re-added at another index is followed, one
 * that is gone refuses the new comm and fails a live one, each naming gid-gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "double_conncheck.h"
#include "fixture_xfer.h"
#include "double_conncheck.c"
#include "rn_mr.h"
#include "rn_net.h"
#include "rn_verbs.h"
#include <unistd.h>

static int setup(void **state)
{
	static struct fx f;

	fx_setup(&f);
	fake_path_set(NULL, NULL);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(fx_teardown(*state), 0);
	return 0;
}

/* fx's device 0 has 198.18.0.1 at index 1: re-added behind another address, it is at 2. */
static void readd(struct fx *f)
{
	f->fdevs[0].ports[0].gids[1] = (struct fake_gid){ "198.18.0.99", IBV_GID_TYPE_ROCE_V2, 2 };
	f->fdevs[0].ports[0].gids[2] = f->fdevs[0].ports[0].gids[3] = (struct fake_gid){
		"198.18.0.1", IBV_GID_TYPE_ROCE_V2, 2
	};
	f->fdevs[0].ports[0].gids[3].addr = NULL;
}

static void moved_gid_is_followed(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	struct fake_wire_qp_attrs a;

	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), 0);
	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.grh.sgid_index, 1);
	rn_close_send(sc);
	rn_close_recv(rc);

	readd(f);
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), 0);
	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.grh.sgid_index, 2); /* not 1, which holds .99 now */
	assert_int_equal(f->devs[0].nic.gid_index, 2);
	assert_true(fx_info_seen("moved from index 1 to 2"));
	rn_close_send(sc);
	rn_close_recv(rc);
}

/*
 * The accepting side too: the receiver's NIC (device 0) has its address re-added behind a
 * VLAN's, whose entry takes the old index 1. The comm accepted afterwards makes its data
 * QP (and its flush QP, when it has one) with index 2, says it moved, and names the index
 * in its "up" line.
 */
static void moved_gid_is_followed_on_accept(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	struct fake_wire_qp_attrs a;
	int k;

	readd(f);
	f->fdevs[0].ports[0].gids[1] = (struct fake_gid){ "198.18.1.2", IBV_GID_TYPE_ROCE_V2, 7 };
	assert_int_equal(fx_connect(f, 1, 0, 0, &sc, &rc), 0); /* device 0 accepts */
	fake_wire_qp_attrs(rc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.grh.sgid_index, 2);     /* not 1: the VLAN's address */
	for (k = 0; k < rc->c.nmem; k++)
		if (rc->flush_qp[k]) {
			fake_wire_qp_attrs(rc->flush_qp[k], &a);
			assert_int_equal(a.rtr.ah_attr.grh.sgid_index, 2);
		}
	/* the sender's NIC did not move */
	fake_wire_qp_attrs(sc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.grh.sgid_index, 1);
	assert_true(fx_info_seen("rxe0:1: the GID of 198.18.0.1 moved from index 1 to 2"));
	assert_true(fx_info_seen("recv comm rxe0:1 "));
	assert_true(fx_info_seen("round-robin, GID index 2"));
	rn_close_send(sc);
	rn_close_recv(rc);
}

/*
 * A live comm whose address moves: its QPs keep the index they were made with (a live QP
 * cannot change it), it goes on, and its slow checks say gid-moved once, with both
 * indexes; the next comm uses the new index.
 */
static void moved_gid_under_a_live_comm_is_said_once(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc, *sc2;
	struct rn_recv_comm *rc, *rc2;
	struct fake_wire_qp_attrs a;
	struct rn_mr *mr;
	struct rn_req *req;
	char r[64];
	size_t sz = sizeof(r);
	void *p = r;
	int i, tag = 0, done = 0, ret = 0, sizes[RN_MAX_RECVS];

	assert_int_equal(fx_connect(f, 1, 0, 0, &sc, &rc), 0);
	assert_int_equal(rn_reg_mr(rc, r, sizeof(r), RN_PTR_HOST, &mr), 0);
	assert_int_equal(rn_irecv(rc, 1, &p, &sz, &tag, &mr, &req), 0);
	readd(f);
	/* the slow checks look once a second while the comm waits */
	for (i = 0; i < 3000 && !ret && !fx_warn_seen("[gid-moved]"); i++) {
		ret = rn_test(req, &done, sizes);
		if (!ret)
			usleep(1000);
	}
	assert_int_equal(ret, 0); /* it goes on */
	assert_false(done);
	assert_true(fx_warn_seen("[gid-moved]: rxe0:1 (eth0): this comm's QPs send from GID "
				 "index 1, but address 198.18.0.1 is at index 2 now"));
	for (i = 0; i < 1500 && !ret; i++) { /* past another check: said once */
		ret = rn_test(req, &done, sizes);
		usleep(1000);
	}
	assert_int_equal(ret, 0);
	assert_int_equal(fx_warn_count("[gid-moved]"), 1);
	fake_wire_qp_attrs(rc->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.grh.sgid_index, 1);
	assert_int_equal(fx_connect(f, 1, 0, 0, &sc2, &rc2), 0);
	fake_wire_qp_attrs(rc2->c.qps[0], &a);
	assert_int_equal(a.rtr.ah_attr.grh.sgid_index, 2);
	rn_close_send(sc2);
	rn_close_recv(rc2);
	rn_dereg_mr(rc, mr);
	rn_close_send(sc);
	rn_close_recv(rc);
}

static void gone_gid_refuses_the_comm(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc = NULL;
	struct rn_recv_comm *rc = NULL;

	f->fdevs[0].ports[0].gids[1] = (struct fake_gid){ "198.18.0.99", IBV_GID_TYPE_ROCE_V2, 2 };
	assert_int_equal(fx_connect(f, 0, 1, 0, &sc, &rc), -EADDRNOTAVAIL);
	assert_true(fx_warn_seen("new comm refused [gid-gone]"));
	assert_true(fx_warn_seen("address 198.18.0.1 is no longer in the port's GID table (it was "
				 "at index 1, which now holds 198.18.0.99 v2"));
	if (sc)
		rn_close_send(sc);
	if (rc)
		rn_close_recv(rc);
}

/* A live comm whose address goes: its slow checks look at the table and fail it by name. */
static void gone_gid_fails_a_live_comm(void **state)
{
	struct fx *f = *state;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	struct rn_mr *mr;
	struct rn_req *req;
	char r[64];
	size_t sz = sizeof(r);
	void *p = r;
	int i, tag = 0, done, ret = 0, sizes[RN_MAX_RECVS];

	assert_int_equal(fx_connect(f, 1, 0, 0, &sc, &rc), 0); /* device 0 receives */
	assert_int_equal(rn_reg_mr(rc, r, sizeof(r), RN_PTR_HOST, &mr), 0);
	assert_int_equal(rn_irecv(rc, 1, &p, &sz, &tag, &mr, &req), 0);
	f->fdevs[0].ports[0].gids[1].addr = NULL;
	for (i = 0; i < 5000 && !ret; i++) {
		ret = rn_test(req, &done, sizes);
		if (!ret)
			usleep(1000);
	}
	assert_int_equal(ret, -EADDRNOTAVAIL);
	assert_true(fx_warn_seen("fails [gid-gone]: rxe0:1 (eth0): address 198.18.0.1 is no "
				 "longer in the port's GID table"));
	rn_dereg_mr(rc, mr);
	rn_close_send(sc);
	rn_close_recv(rc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(moved_gid_is_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(moved_gid_is_followed_on_accept, setup, teardown),
		cmocka_unit_test_setup_teardown(moved_gid_under_a_live_comm_is_said_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(gone_gid_refuses_the_comm, setup, teardown),
		cmocka_unit_test_setup_teardown(gone_gid_fails_a_live_comm, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
