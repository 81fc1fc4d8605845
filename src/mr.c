// SPDX-License-Identifier: MIT
/*
 * The registration cache. A plain list per device under dev->lock: NCCL
 * registers a few large buffers per communicator, never per message, so a list
 * beats anything cleverer. Entries are never merged: a new range that only
 * overlaps an old one gets its own MR (the HCA allows overlapping MRs).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_compiler.h"
#include "rn_log.h"
#include "rn_mr.h"
#include "rn_verbs.h"

struct rn_mr_cache {
	struct rn_mr *head;
	int count;
	struct rn_mr *vhead; /* vNIC handles whose member 0 is this device (rn_vmr_get) */
};

unsigned int rn_mr_access(const struct rn_dev *dev)
{
	unsigned int a = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	/*
	 * The RMA backend's signals are the peer's FETCH_AND_ADDs on NCCL's buffers, and one
	 * cache serves net and RMA alike; a device without atomics refuses the flag.
	 */
	if (dev->attr.atomic_cap != IBV_ATOMIC_NONE)
		a |= IBV_ACCESS_REMOTE_ATOMIC;
	if (dev->relaxed_ordering)
		a |= IBV_ACCESS_RELAXED_ORDERING;
	return a;
}

static struct rn_mr_cache *cache_of(struct rn_dev *dev)
{
	if (!dev->mrs)
		dev->mrs = calloc(1, sizeof(*dev->mrs));
	return dev->mrs;
}

int rn_mr_get(struct rn_dev *dev, void *data, size_t size, int type, int dmabuf_fd, uint64_t offset,
	      struct rn_mr **out)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)data & ~(pg - 1);
	uintptr_t end = ((uintptr_t)data + size + pg - 1) & ~(pg - 1);
	int dmabuf = dmabuf_fd >= 0;
	struct rn_mr_cache *c;
	struct rn_mr *m;
	int ret = 0;

	*out = NULL;
	if (!data || !size)
		return -EINVAL;
	if (end < start)
		return -EINVAL;
	if (dmabuf && offset < (uintptr_t)data - start) {
		/* The fd's offset cannot go below 0: register exactly what we got. */
		start = (uintptr_t)data;
		end = (uintptr_t)data + size;
	}
	pthread_mutex_lock(&dev->lock);
	c = cache_of(dev);
	if (!c) {
		ret = -ENOMEM;
		goto out;
	}
	for (m = c->head; m; m = m->next) {
		if (m->type == type && m->dmabuf == dmabuf && m->base <= start &&
		    m->base + m->len >= end) {
			m->refs++;
			*out = m;
			goto out;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		ret = -ENOMEM;
		goto out;
	}
	errno = 0;
	if (dmabuf)
		m->ibmr = rn_verbs.reg_dmabuf_mr(dev->pd, offset - ((uintptr_t)data - start),
						 end - start, start, dmabuf_fd,
						 (int)rn_mr_access(dev));
	else
		m->ibmr = rn_verbs.reg_mr_iova2(dev->pd, (void *)start, end - start, start,
						rn_mr_access(dev));
	if (!m->ibmr) {
		ret = errno ? -errno : -EIO;
		rn_warn(RN_SUB_NET, RN_PFX "%s: %sregistration of %zu bytes at %p failed: %s",
			dev->nic.ibdev, dmabuf ? "DMA-BUF " : "", size, data, strerror(-ret));
		free(m);
		goto out;
	}
	m->dev = dev;
	m->base = start;
	m->len = end - start;
	m->type = type;
	m->dmabuf = dmabuf;
	m->refs = 1;
	m->fd = dmabuf ? fcntl(dmabuf_fd, F_DUPFD_CLOEXEC, 0) : -1;
	m->fd_off = dmabuf ? offset - ((uintptr_t)data - start) : 0;
	m->next = c->head;
	c->head = m;
	c->count++;
	*out = m;
out:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/* Guards every rn_mr's alt[] (a failover's path, rare): no device lock is held under it. */
static pthread_mutex_t alt_lock = PTHREAD_MUTEX_INITIALIZER;

/* What a registration holds besides its MR: the fd kept, the other NICs' registrations. */
static void mr_release_extra(struct rn_mr *mr, struct rn_mr **alt)
{
	int i;

	pthread_mutex_lock(&alt_lock);
	for (i = 0; i < RN_MR_ALT_MAX; i++) {
		alt[i] = mr->alt[i];
		mr->alt[i] = NULL;
	}
	pthread_mutex_unlock(&alt_lock);
	if (mr->fd >= 0)
		close(mr->fd);
	mr->fd = -1;
}

int rn_mr_on(struct rn_mr *mr, struct rn_dev *dev, struct rn_mr **out)
{
	struct rn_mr *m = NULL;
	int i, ret;

	*out = NULL;
	if (mr->dev == dev) {
		*out = mr;
		return 0;
	}
	if (mr->nmem)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&alt_lock);
	for (i = 0; i < RN_MR_ALT_MAX && !m; i++)
		if (mr->alt[i] && mr->alt[i]->dev == dev)
			m = mr->alt[i];
	pthread_mutex_unlock(&alt_lock);
	if (m) {
		*out = m;
		return 0;
	}
	if (mr->dmabuf && mr->fd < 0)
		return -EBADF; /* the fd could not be kept at registration */
	ret = rn_mr_get(dev, (void *)mr->base, mr->len, mr->type, mr->dmabuf ? mr->fd : -1,
			mr->fd_off, &m);
	if (ret)
		return ret;
	pthread_mutex_lock(&alt_lock);
	for (i = 0; i < RN_MR_ALT_MAX; i++) {
		if (mr->alt[i] && mr->alt[i]->dev == dev) { /* another thread's, just now */
			pthread_mutex_unlock(&alt_lock);
			rn_mr_put(dev, m);
			*out = mr->alt[i];
			return 0;
		}
	}
	for (i = 0; i < RN_MR_ALT_MAX && mr->alt[i]; i++)
		;
	if (i < RN_MR_ALT_MAX)
		mr->alt[i] = m;
	pthread_mutex_unlock(&alt_lock);
	if (i == RN_MR_ALT_MAX) {
		rn_mr_put(dev, m);
		return -ENOSPC;
	}
	*out = m;
	return 0;
}

int rn_mr_put(struct rn_dev *dev, struct rn_mr *mr)
{
	struct rn_mr **pp, *alt[RN_MR_ALT_MAX], *gone = NULL;
	int ret = -EINVAL, i;

	/* @mr is only compared until found: a stale handle gets -EINVAL, not a crash */
	if (!mr)
		return -EINVAL;
	pthread_mutex_lock(&dev->lock);
	for (pp = dev->mrs ? &dev->mrs->head : NULL; pp && *pp; pp = &(*pp)->next) {
		if (*pp != mr)
			continue;
		ret = 0;
		if (--mr->refs > 0)
			break;
		*pp = mr->next;
		dev->mrs->count--;
		ret = rn_verbs_err(rn_verbs.dereg_mr(mr->ibmr));
		gone = mr;
		break;
	}
	pthread_mutex_unlock(&dev->lock);
	if (gone) {
		/* the other NICs' registrations, each under its own device's lock */
		mr_release_extra(gone, alt);
		for (i = 0; i < RN_MR_ALT_MAX; i++)
			if (alt[i])
				rn_mr_put(alt[i]->dev, alt[i]);
		free(gone);
	}
	return ret;
}

int rn_mr_cache_destroy(struct rn_dev *dev)
{
	if (dev->mrs && dev->mrs->count)
		rn_warn(RN_SUB_NET, RN_PFX "%s: %d memory registrations were never released",
			dev->nic.ibdev, dev->mrs->count);
	return rn_mr_cache_release(dev);
}

int rn_mr_cache_release(struct rn_dev *dev)
{
	struct rn_mr_cache *c = dev->mrs;
	struct rn_mr *m, *n;
	int left;

	if (!c)
		return 0;
	left = c->count;
	for (m = c->head; m; m = n) {
		n = m->next;
		rn_verbs.dereg_mr(m->ibmr);
		/* its other NICs' registrations go with their own caches */
		if (m->fd >= 0)
			close(m->fd);
		free(m);
	}
	/* their member registrations were counted (and released) in each member's cache */
	for (m = c->vhead; m; m = n) {
		n = m->next;
		free(m);
	}
	free(c);
	dev->mrs = NULL;
	return left;
}

/*
 * A vNIC comm registers on every member's PD (each through its device's cache) and
 * hands NCCL one handle; a WR on member k's QP uses member k's keys. The handle's
 * range is what every member covers.
 */
int rn_vmr_get(struct rn_dev *const *devs, int n, void *data, size_t size, int type, int dmabuf_fd,
	       uint64_t offset, struct rn_mr **out)
{
	struct rn_mr *v;
	uintptr_t base = 0, end = UINTPTR_MAX;
	int k, ret;

	*out = NULL;
	if (n < 1 || n > RN_VNIC_MAX)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->fd = -1;
	for (k = 0; k < n; k++) {
		ret = rn_mr_get(devs[k], data, size, type, dmabuf_fd, offset, &v->mem[k]);
		if (ret)
			goto err;
		base = RN_MAX(base, v->mem[k]->base);
		end = RN_MIN(end, v->mem[k]->base + v->mem[k]->len);
	}
	v->nmem = n;
	v->dev = devs[0];
	v->ibmr = v->mem[0]->ibmr;
	v->type = type;
	v->dmabuf = dmabuf_fd >= 0;
	v->base = base;
	v->len = end - base;
	v->refs = 1;
	pthread_mutex_lock(&devs[0]->lock);
	if (!cache_of(devs[0])) {
		pthread_mutex_unlock(&devs[0]->lock);
		ret = -ENOMEM;
		goto err;
	}
	v->next = devs[0]->mrs->vhead;
	devs[0]->mrs->vhead = v;
	pthread_mutex_unlock(&devs[0]->lock);
	*out = v;
	return 0;
err:
	while (k-- > 0)
		rn_mr_put(devs[k], v->mem[k]);
	free(v);
	return ret;
}

int rn_vmr_put(struct rn_dev *const *devs, int n, struct rn_mr *v)
{
	struct rn_mr **pp;
	int k, ret = -EINVAL;

	/* as rn_mr_put: @v is only compared until found, a stale handle gets -EINVAL */
	if (!v)
		return -EINVAL;
	pthread_mutex_lock(&devs[0]->lock);
	for (pp = devs[0]->mrs ? &devs[0]->mrs->vhead : NULL; pp && *pp; pp = &(*pp)->next) {
		if (*pp != v)
			continue;
		ret = 0;
		/* another comm's vNIC with the same first NIC: not this one's to release */
		for (k = 0; k < n && v->nmem == n; k++)
			if (v->mem[k]->dev != devs[k])
				ret = -EINVAL;
		if (v->nmem != n)
			ret = -EINVAL;
		if (!ret)
			*pp = v->next;
		break;
	}
	pthread_mutex_unlock(&devs[0]->lock);
	if (ret)
		return ret;
	for (k = 0; k < v->nmem; k++)
		ret = rn_mr_put(v->mem[k]->dev, v->mem[k]) ?: ret;
	free(v);
	return ret;
}
