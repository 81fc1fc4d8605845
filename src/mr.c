// SPDX-License-Identifier: MIT
/*
 * The registration cache. A plain list per device under dev->lock: NCCL
 * registers a few large buffers per communicator, never per message, so a list
 * beats anything cleverer. Entries are never merged: a new range that only
 * overlaps an old one gets its own MR (the HCA allows overlapping MRs).
 */
#include <errno.h>
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
};

unsigned int rn_mr_access(const struct rn_dev *dev)
{
	unsigned int a = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

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

int rn_mr_get(struct rn_dev *dev, void *data, size_t size, int type, int dmabuf_fd,
	      uint64_t offset, struct rn_mr **out)
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
	m->next = c->head;
	c->head = m;
	c->count++;
	*out = m;
out:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int rn_mr_put(struct rn_dev *dev, struct rn_mr *mr)
{
	struct rn_mr **pp;
	int ret = -EINVAL;

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
		free(mr);
		break;
	}
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int rn_mr_cache_destroy(struct rn_dev *dev)
{
	struct rn_mr_cache *c = dev->mrs;
	struct rn_mr *m, *n;
	int left;

	if (!c)
		return 0;
	left = c->count;
	if (left)
		rn_warn(RN_SUB_NET, RN_PFX "%s: %d memory registrations were never released",
			dev->nic.ibdev, left);
	for (m = c->head; m; m = n) {
		n = m->next;
		rn_verbs.dereg_mr(m->ibmr);
		free(m);
	}
	free(c);
	dev->mrs = NULL;
	return left;
}
