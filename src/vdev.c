// SPDX-License-Identifier: MIT
/*
 * NIC fusion: the vNICs NCCL asks for with makeVDevice (NCCL_IB_MERGE_NICS). A vNIC
 * is a list of physical devices; NCCL numbers it after them. Its properties are the
 * members' (names joined with '+', speeds summed, the fewest QPs and the pointer types
 * all support, the first member's identity; made here alone), and
 * a connection on it carries a QP per member (src/comm.c), every message split over
 * them (src/xfer.c).
 *
 * Every device the engine offers is a RoCE port (discovery keeps Ethernet links
 * only), so net_ib's rule that members share a link layer holds by construction.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "rn_compiler.h"
#include "rn_dev.h"
#include "rn_log.h"

static pthread_mutex_t vdev_lock = PTHREAD_MUTEX_INITIALIZER;

int rn_engine_ndevs_all(const struct rn_engine *eng)
{
	return eng->ndevs + __atomic_load_n(&eng->nvdevs, __ATOMIC_ACQUIRE);
}

const struct rn_vdev *rn_engine_vdev(const struct rn_engine *eng, int dev)
{
	int k = dev - eng->ndevs;

	if (k < 0 || k >= __atomic_load_n(&eng->nvdevs, __ATOMIC_ACQUIRE))
		return NULL;
	return &eng->vdevs[k];
}

int rn_engine_members(const struct rn_engine *eng, int dev, struct rn_dev **out)
{
	const struct rn_vdev *v;
	int i;

	if (!eng || dev < 0)
		return -EINVAL;
	if (dev < eng->ndevs) {
		if (!eng->devs[dev])
			return -EINVAL;
		out[0] = eng->devs[dev];
		return 1;
	}
	v = rn_engine_vdev(eng, dev);
	if (!v)
		return -EINVAL;
	for (i = 0; i < v->n; i++)
		out[i] = eng->devs[v->devs[i]];
	return v->n;
}

int rn_engine_props(const struct rn_engine *eng, int dev, struct rn_props *p)
{
	struct rn_dev *m[RN_VNIC_MAX];
	const struct rn_vdev *v;
	const struct rn_dev *d;
	int n = eng ? rn_engine_members(eng, dev, m) : -EINVAL, i;

	if (n < 0)
		return n;
	d = m[0];
	memset(p, 0, sizeof(*p));
	p->name = d->nic.ibdev;
	p->pci_path = d->nccl_pci_path[0] ? d->nccl_pci_path : NULL;
	p->guid = d->guid;
	p->port = d->nccl_port ? d->nccl_port : d->nic.port;
	p->rail = d->nccl_port ? d->rail : -1;
	p->plane = d->nccl_port ? d->plane : -1;
	p->ptr_support = d->ptr_support;
	p->max_comms = d->attr.max_qp;
	/* over the members: a physical device is its own only member */
	for (i = 0; i < n; i++) {
		p->speed_mbps += m[i]->speed_mbps;
		p->max_comms = RN_MIN(p->max_comms, m[i]->attr.max_qp);
		p->ptr_support &= m[i]->ptr_support;
	}
	v = rn_engine_vdev(eng, dev);
	if (v)
		p->name = v->name;
	p->ndevs = v ? v->n : 1;
	for (i = 0; i < p->ndevs; i++)
		p->devs[i] = v ? v->devs[i] : dev;
	return 0;
}

/* -EINVAL with a WARN saying what is wrong with the member list, else 0. */
static int vdev_check(const struct rn_engine *eng, const int *devs, int n)
{
	int i, j;

	if (n < 1 || n > RN_VNIC_MAX) {
		rn_warn(RN_SUB_NET, RN_PFX "makeVDevice: %d devices; a vNIC has 1 to %d", n,
			RN_VNIC_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (devs[i] < 0 || devs[i] >= eng->ndevs || !eng->devs[devs[i]]) {
			rn_warn(RN_SUB_NET,
				RN_PFX "makeVDevice: member %d is device %d; only the "
				       "%d physical devices (0..%d) can be fused",
				i, devs[i], eng->ndevs, eng->ndevs - 1);
			return -EINVAL;
		}
		for (j = 0; j < i; j++)
			if (devs[j] == devs[i]) {
				rn_warn(RN_SUB_NET,
					RN_PFX "makeVDevice: device %d (%s) is listed "
					       "twice",
					devs[i], eng->devs[devs[i]]->nic.ibdev);
				return -EINVAL;
			}
	}
	return 0;
}

int rn_vdev_make(struct rn_engine *eng, const int *devs, int n, int *out)
{
	struct rn_vdev *v;
	int i, k, ret, speed = 0;

	if (!eng || !devs || !out)
		return -EINVAL;
	ret = vdev_check(eng, devs, n);
	if (ret)
		return ret;
	pthread_mutex_lock(&vdev_lock);
	for (k = 0; k < eng->nvdevs; k++) {
		v = &eng->vdevs[k];
		if (v->n == n && !memcmp(v->devs, devs, sizeof(*devs) * (size_t)n)) {
			/* asked again (another communicator): the same vNIC */
			*out = eng->ndevs + k;
			pthread_mutex_unlock(&vdev_lock);
			return 0;
		}
	}
	if (eng->nvdevs == RN_MAX_VDEVS) {
		pthread_mutex_unlock(&vdev_lock);
		rn_warn(RN_SUB_NET, RN_PFX "makeVDevice: already %d vNICs", RN_MAX_VDEVS);
		return -ENOSPC;
	}
	v = &eng->vdevs[eng->nvdevs];
	memset(v, 0, sizeof(*v));
	v->n = n;
	for (i = 0; i < n; i++) {
		size_t len = strlen(v->name);

		v->devs[i] = devs[i];
		snprintf(v->name + len, sizeof(v->name) - len, "%s%s", i ? "+" : "",
			 eng->devs[devs[i]]->nic.ibdev);
		speed += eng->devs[devs[i]]->speed_mbps;
	}
	*out = eng->ndevs + eng->nvdevs;
	__atomic_store_n(&eng->nvdevs, eng->nvdevs + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&vdev_lock);
	rn_info(RN_SUB_INIT | RN_SUB_NET, RN_PFX "vNIC [%d] %s: %d NICs, %d Mbps", *out, v->name, n,
		speed);
	return 0;
}
