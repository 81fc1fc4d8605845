/* SPDX-License-Identifier: MIT */
/*
 * Memory registration (src/mr.c): one refcounted cache per device, keyed by
 * page-aligned address ranges, so that registering a sub-range of a registered
 * buffer is a hit (what regIsGlobal=1 promises NCCL). The rn_mr returned is
 * shared by every hit; each rn_reg_mr*() is balanced by one rn_dereg_mr().
 */
#ifndef RN_MR_H
#define RN_MR_H

#include <stddef.h>
#include <stdint.h>

#include "rn_dev.h"

#define RN_MR_ALT_MAX 8 /* other NICs one registration may be carried to */

struct rn_mr {
	struct ibv_mr *ibmr;
	struct rn_dev *dev;
	uintptr_t base; /* page-aligned start */
	size_t len;     /* page-aligned length */
	int type;       /* RN_PTR_HOST / RN_PTR_CUDA; a CUDA MR needs flushing */
	int dmabuf;
	int refs;
	struct rn_mr *next;
	/*
	 * A vNIC comm's handle (rn_vmr_get): not in any cache, dev = member 0's,
	 * ibmr = member 0's, one cached registration per member. 0 in a plain MR.
	 */
	int nmem;
	struct rn_mr *mem[RN_VNIC_MAX];
	/*
	 * Failover (src/failover.c): the same range registered on the NICs a comm moved to,
	 * made on first use and released with this one; a DMA-BUF registration keeps a dup
	 * of its fd for them (NCCL closes its own after regMrDmaBuf).
	 */
	int fd;          /* -1: none */
	uint64_t fd_off; /* the fd's offset of base */
	struct rn_mr *alt[RN_MR_ALT_MAX];
};

/* The keys of @mr on member @k (0 for a plain MR). */
static inline uint32_t rn_mr_lkey(const struct rn_mr *mr, int k)
{
	return k ? mr->mem[k]->ibmr->lkey : mr->ibmr->lkey;
}

static inline uint32_t rn_mr_rkey(const struct rn_mr *mr, int k)
{
	return k ? mr->mem[k]->ibmr->rkey : mr->ibmr->rkey;
}

/*
 * Register @data..@data+@size on each of @n devices (a vNIC's members) and return one
 * handle holding them all. 0 or -errno (nothing kept). rn_vmr_put() over the same
 * members releases all: 0, or -EINVAL for a handle they do not hold.
 */
int rn_vmr_get(struct rn_dev *const *devs, int n, void *data, size_t size, int type, int dmabuf_fd,
	       uint64_t offset, struct rn_mr **out);
int rn_vmr_put(struct rn_dev *const *devs, int n, struct rn_mr *v);

/* Register @data..@data+@size on @dev (cache hit or new). 0 or -errno. */
int rn_mr_get(struct rn_dev *dev, void *data, size_t size, int type, int dmabuf_fd, uint64_t offset,
	      struct rn_mr **out);
/* Drop one reference; deregisters at zero. 0, or -EINVAL for an MR @dev's cache does not hold. */
int rn_mr_put(struct rn_dev *dev, struct rn_mr *mr);

/*
 * @mr's range as registered on @dev: @mr itself when it is @dev's, else the registration
 * made there on first use (host memory and nvidia-peermem by address, DMA-BUF through
 * the kept fd) and held until @mr is released. 0, -EOPNOTSUPP (a vNIC handle), -ENOSPC,
 * or the registration's error.
 */
int rn_mr_on(struct rn_mr *mr, struct rn_dev *dev, struct rn_mr **out);

/* Access flags for every buffer NCCL hands us (plus relaxed ordering when @dev allows). */
unsigned int rn_mr_access(const struct rn_dev *dev);

/*
 * Release @dev's cache at device close (dev.c): deregisters what is left, with one
 * WARN naming how many registrations NCCL never released. Returns that count.
 */
int rn_mr_cache_destroy(struct rn_dev *dev);
/* The same without the WARN (the last finalize says what it closed); returns the count. */
int rn_mr_cache_release(struct rn_dev *dev);

#endif /* RN_MR_H */
