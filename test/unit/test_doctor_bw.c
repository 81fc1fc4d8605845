// SPDX-License-Identifier: MIT
/*
 * The sweep's bandwidth stream (src/doctor/doctor_rdma.c, rn_bw_*) over the transport
 * test bed (fake verbs and wire, one process): both sides stepped in turn, as two hosts
 * would run them, finish the same count of messages; the sender's figures count what
 * completed; past its cap the sender sends the rest empty and both still finish. The
 * figure is printed, never asserted (the fake wire is memcpy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "double_conncheck.h"
#include "fixture_xfer.h"
#include "double_conncheck.c"
#include "../../src/doctor/doctor_probe.h"
#include "rn_conn.h"
#include "rn_net.h"

struct t {
	struct fx f;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
};

static int setup(void **state)
{
	static struct t t;

	fx_setup(&t.f);
	fake_path_set(NULL, NULL);
	assert_int_equal(fx_connect(&t.f, 0, 1, 0, &t.sc, &t.rc), 0);
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	assert_int_equal(fx_close(&t->f, t->sc, t->rc), 0);
	return 0;
}

/* Step both sides until neither wants more; each one's result. */
static void run_both(struct rn_bw_side *s, struct rn_bw_side *r, int *rs, int *rr)
{
	long i;

	*rs = *rr = -EAGAIN;
	for (i = 0; i < 10000000 && (*rs == -EAGAIN || *rr == -EAGAIN); i++) {
		if (*rs == -EAGAIN)
			*rs = rn_bw_step(s);
		if (*rr == -EAGAIN)
			*rr = rn_bw_step(r);
	}
}

static void whole_stream(void **state)
{
	struct t *t = *state;
	struct rn_bw_side s, r;
	int rs, rr;

	assert_int_equal(rn_bw_start(&s, 1, t->sc, 60000), 0);
	assert_int_equal(rn_bw_start(&r, 0, t->rc, 60000), 0);
	run_both(&s, &r, &rs, &rr);
	assert_int_equal(rs, 0);
	assert_int_equal(rr, 0);
	assert_int_equal(s.done, (int)(RN_BW_BYTES / RN_BW_MSG));
	assert_int_equal(r.done, s.done);
	assert_int_equal(s.bytes, RN_BW_BYTES);
	assert_int_equal(r.bytes, RN_BW_BYTES);
	assert_false(s.capped);
	assert_true(rn_bw_gbps(&s) > 0);
	printf("fake wire: %.2f Gbit/s (memcpy, not a timing)\n", rn_bw_gbps(&s));
	rn_bw_end(&s);
	rn_bw_end(&r);
}

/* Past the cap (here at once, after the first message) the rest go empty. */
static void capped_stream(void **state)
{
	struct t *t = *state;
	struct rn_bw_side s, r;
	int rs, rr;

	assert_int_equal(rn_bw_start(&s, 1, t->sc, -1), 0);
	assert_int_equal(rn_bw_start(&r, 0, t->rc, 60000), 0);
	run_both(&s, &r, &rs, &rr);
	assert_int_equal(rs, 0);
	assert_int_equal(rr, 0);
	assert_int_equal(s.done, (int)(RN_BW_BYTES / RN_BW_MSG));
	assert_int_equal(r.done, s.done);
	assert_true(s.capped);
	assert_int_equal(s.bytes, RN_BW_MSG);
	assert_int_equal(r.bytes, RN_BW_MSG);
	rn_bw_end(&s);
	rn_bw_end(&r);
}

/* Two streams one after the other on one connection: the count keeps them apart. */
static void streams_in_turn(void **state)
{
	struct t *t = *state;
	struct rn_bw_side s, r;
	int k, rs, rr;

	for (k = 0; k < 2; k++) {
		assert_int_equal(rn_bw_start(&s, 1, t->sc, 60000), 0);
		assert_int_equal(rn_bw_start(&r, 0, t->rc, 60000), 0);
		run_both(&s, &r, &rs, &rr);
		assert_int_equal(rs, 0);
		assert_int_equal(rr, 0);
		assert_int_equal(r.bytes, RN_BW_BYTES);
		rn_bw_end(&s);
		rn_bw_end(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(whole_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(capped_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(streams_in_turn, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
