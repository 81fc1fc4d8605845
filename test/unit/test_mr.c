// SPDX-License-Identifier: MIT
/* The registration cache: page alignment, hits on sub-ranges, refcounts, DMA-BUF. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture_xfer.h"
#include "double_conncheck.c"
#include "rn_verbs.h"

struct t {
	struct fx f;
	struct rn_send_comm *sc;
	struct rn_recv_comm *rc;
	char *mem;
	size_t pg;
};

static int setup(void **state)
{
	static struct t t;

	fx_setup(&t.f);
	fake_path_set(NULL, NULL);
	assert_int_equal(fx_connect(&t.f, 0, 1, 0, &t.sc, &t.rc), 0);
	t.pg = (size_t)sysconf(_SC_PAGESIZE);
	assert_int_equal(posix_memalign((void **)&t.mem, t.pg, 16 * t.pg), 0);
	*state = &t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	rn_close_send(t->sc);
	rn_close_recv(t->rc);
	free(t->mem);
	assert_int_equal(fx_teardown(&t->f), 0);
	return 0;
}

static void subrange_hits_and_refcount(void **state)
{
	struct t *t = *state;
	struct rn_mr *a, *b, *c, *d;
	int base = fake_verbs_live_objects();

	assert_int_equal(rn_reg_mr(t->sc, t->mem + 100, 8 * t->pg, RN_PTR_HOST, &a), 0);
	assert_int_equal(fake_verbs_live_objects(), base + 1);
	/* page-aligned registration around the unaligned buffer */
	assert_true(a->base == (uintptr_t)t->mem);
	assert_int_equal(a->len, 9 * t->pg);
	assert_true((uintptr_t)a->ibmr->addr == a->base);
	/* a sub-range of it is a hit: same MR, one more reference */
	assert_int_equal(rn_reg_mr(t->sc, t->mem + t->pg, t->pg, RN_PTR_HOST, &b), 0);
	assert_ptr_equal(a, b);
	assert_int_equal(a->refs, 2);
	assert_int_equal(fake_verbs_live_objects(), base + 1);
	/* same range, other type: its own MR */
	assert_int_equal(rn_reg_mr(t->sc, t->mem + t->pg, t->pg, RN_PTR_CUDA, &c), 0);
	assert_ptr_not_equal(a, c);
	assert_int_equal(c->type, RN_PTR_CUDA);
	/* beyond the first range: a new MR */
	assert_int_equal(rn_reg_mr(t->sc, t->mem + 8 * t->pg, 4 * t->pg, RN_PTR_HOST, &d), 0);
	assert_ptr_not_equal(a, d);
	assert_int_equal(fake_verbs_live_objects(), base + 3);
	/* the recv comm is on another device: another cache */
	{
		struct rn_mr *e;

		assert_int_equal(rn_reg_mr(t->rc, t->mem + t->pg, t->pg, RN_PTR_HOST, &e), 0);
		assert_ptr_not_equal(a, e);
		assert_int_equal(rn_dereg_mr(t->rc, e), 0);
	}
	assert_int_equal(rn_dereg_mr(t->sc, b), 0);
	assert_int_equal(fake_verbs_live_objects(), base + 3);
	assert_int_equal(rn_dereg_mr(t->sc, a), 0);
	assert_int_equal(fake_verbs_live_objects(), base + 2);
	assert_int_equal(rn_dereg_mr(t->sc, a), -EINVAL); /* gone */
	assert_int_equal(rn_dereg_mr(t->sc, c), 0);
	assert_int_equal(rn_dereg_mr(t->sc, d), 0);
	assert_int_equal(fake_verbs_live_objects(), base);
	assert_int_equal(rn_reg_mr(t->sc, NULL, 10, RN_PTR_HOST, &a), -EINVAL);
	assert_int_equal(rn_reg_mr(t->sc, t->mem, 0, RN_PTR_HOST, &a), -EINVAL);
}

static void dmabuf(void **state)
{
	struct t *t = *state;
	struct rn_mr *a, *b;
	int base = fake_verbs_live_objects();

	assert_int_equal(rn_reg_mr_dmabuf(t->sc, t->mem, 4 * t->pg, RN_PTR_CUDA, 0, 7, &a), 0);
	assert_int_equal(a->dmabuf, 1);
	assert_int_equal(a->type, RN_PTR_CUDA);
	assert_true((uintptr_t)a->ibmr->addr == (uintptr_t)t->mem); /* iova = address */
	/* the fd is closed by NCCL right after; a sub-range hit needs no fd */
	assert_int_equal(rn_reg_mr_dmabuf(t->sc, t->mem + t->pg, t->pg, RN_PTR_CUDA, t->pg, 8, &b),
			 0);
	assert_ptr_equal(a, b);
	assert_int_equal(rn_dereg_mr(t->sc, b), 0);
	assert_int_equal(rn_dereg_mr(t->sc, a), 0);
	assert_int_equal(fake_verbs_live_objects(), base);
	assert_int_equal(rn_reg_mr_dmabuf(t->sc, t->mem, t->pg, RN_PTR_CUDA, 0, -1, &a), -EINVAL);
	/* a device without DMA-BUF says so, and nothing is cached */
	t->f.fdevs[0].dmabuf = 0;
	assert_int_equal(rn_reg_mr_dmabuf(t->sc, t->mem, t->pg, RN_PTR_CUDA, 0, 7, &a),
			 -EOPNOTSUPP);
	assert_null(a);
	assert_non_null(strstr(fx_last_warn, "DMA-BUF registration"));
	t->f.fdevs[0].dmabuf = 1;
}

/*
 * Failover carries a registration to another NIC (rn_mr_on): host memory by address;
 * DMA-BUF through the dup of its fd the registration kept (NCCL closed its own). Released
 * with the original; a vNIC handle is not carried.
 */
static void carried_to_another_nic(void **state)
{
	struct t *t = *state;
	struct rn_mr *a, *on, *again, *h;
	int base = fake_verbs_live_objects(), fd = open("/dev/null", O_RDONLY), kept;

	assert_true(fd >= 0);
	assert_int_equal(rn_reg_mr_dmabuf(t->sc, t->mem, 4 * t->pg, RN_PTR_CUDA, 0, fd, &a), 0);
	kept = a->fd;
	assert_true(kept >= 0 && kept != fd);
	close(fd); /* as NCCL does after regMrDmaBuf */
	assert_int_equal(rn_mr_on(a, &t->f.devs[0], &on), 0);
	assert_ptr_equal(on, a);
	assert_int_equal(rn_mr_on(a, &t->f.devs[1], &on), 0);
	assert_ptr_equal(on->dev, &t->f.devs[1]);
	assert_int_equal(on->dmabuf, 1);
	assert_int_equal(on->base, a->base);
	assert_int_equal(on->len, a->len);
	assert_int_equal(rn_mr_on(a, &t->f.devs[1], &again), 0);
	assert_ptr_equal(again, on); /* made once */
	assert_int_equal(rn_dereg_mr(t->sc, a), 0);
	assert_int_equal(fake_verbs_live_objects(), base);
	assert_int_equal(fcntl(kept, F_GETFD), -1); /* the dup went with it */
	/* host memory */
	assert_int_equal(rn_reg_mr(t->sc, t->mem, t->pg, RN_PTR_HOST, &h), 0);
	assert_int_equal(h->fd, -1);
	assert_int_equal(rn_mr_on(h, &t->f.devs[1], &on), 0);
	assert_int_equal(on->dmabuf, 0);
	assert_int_equal(rn_dereg_mr(t->sc, h), 0);
	assert_int_equal(fake_verbs_live_objects(), base);
	/* a DMA-BUF registration whose fd could not be kept cannot be carried */
	assert_int_equal(rn_reg_mr_dmabuf(t->sc, t->mem, t->pg, RN_PTR_CUDA, 0, 999, &a), 0);
	assert_int_equal(a->fd, -1);
	assert_int_equal(rn_mr_on(a, &t->f.devs[1], &on), -EBADF);
	assert_int_equal(rn_dereg_mr(t->sc, a), 0);
}

static void relaxed_ordering_flag(void **state)
{
	struct t *t = *state;
	struct rn_dev *d = &t->f.devs[0];

	d->relaxed_ordering = 0;
	assert_false(rn_mr_access(d) & IBV_ACCESS_RELAXED_ORDERING);
	assert_true(rn_mr_access(d) & IBV_ACCESS_REMOTE_READ); /* flush reads GPU buffers */
	assert_true(rn_mr_access(d) & IBV_ACCESS_REMOTE_WRITE);
	d->relaxed_ordering = 1;
	assert_true(rn_mr_access(d) & IBV_ACCESS_RELAXED_ORDERING);
	d->relaxed_ordering = 0;
}

static void leftovers_released_at_close(void **state)
{
	struct t *t = *state;
	struct rn_mr *a;

	assert_int_equal(rn_reg_mr(t->sc, t->mem, t->pg, RN_PTR_HOST, &a), 0);
	fx_log_reset();
	assert_int_equal(rn_mr_cache_destroy(&t->f.devs[0]), 1);
	assert_non_null(strstr(fx_last_warn, "never released"));
	assert_null(t->f.devs[0].mrs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(subrange_hits_and_refcount, setup, teardown),
		cmocka_unit_test_setup_teardown(dmabuf, setup, teardown),
		cmocka_unit_test_setup_teardown(carried_to_another_nic, setup, teardown),
		cmocka_unit_test_setup_teardown(relaxed_ordering_flag, setup, teardown),
		cmocka_unit_test_setup_teardown(leftovers_released_at_close, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
