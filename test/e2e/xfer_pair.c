// SPDX-License-Identifier: MIT
/*
 * End-to-end check of the transport on real verbs (Soft-RoCE in the test/vm
 * bed), without the plugin: one process is the receiver, one the sender, the
 * listen handle passes through a file (hex). Builds its own device entry from
 * the verbs device (IPv4 RoCE v2 GID), so it needs neither dev.c nor NCCL.
 *
 *   xfer_pair recv <ibdev> <handle-file>
 *   xfer_pair send <ibdev> <handle-file>
 *   xfer_pair recvwait|sendidle <ibdev> <handle-file>
 *       connect, then the receiver waits on one receive that never comes and
 *       prints how it ended (for faults: link down, peer killed); the sender idles.
 *
 * Sequence (both sides know it): sizes 0, 1, 4 KiB, 1 MiB, 20 MiB (split at the
 * device's 8 MiB), a 2-buffer multi-receive, then 64 x 1 MiB with 8 in flight
 * (prints MB/s; XFER_BW_ITERS changes the 64). Every payload is checked. Exit 0 =
 * all good.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rn_conn.h"
#include "rn_log.h"
#include "rn_mr.h"
#include "rn_net.h"
#include "rn_verbs.h"

#define BIG (20u << 20)
#define WIN 8
#define NBW_DEFAULT 64
static int nbw = NBW_DEFAULT; /* XFER_BW_ITERS */
#define BW (1u << 20)

static int dev_open(const char *name, struct rn_dev *d)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	int i, n;

	memset(d, 0, sizeof(*d));
	list = rn_verbs.get_device_list(&n);
	for (i = 0; i < n; i++)
		if (!strcmp(rn_verbs.get_device_name(list[i]), name))
			d->ctx = rn_verbs.open_device(list[i]);
	rn_verbs.free_device_list(list);
	if (!d->ctx)
		return -ENODEV;
	d->pd = rn_verbs.alloc_pd(d->ctx);
	rn_verbs.query_device(d->ctx, &d->attr);
	if (rn_verbs.query_port(d->ctx, 1, &pa))
		return -EIO;
	snprintf(d->nic.ibdev, sizeof(d->nic.ibdev), "%s", name);
	d->nic.port = 1;
	d->nic.active_mtu = pa.active_mtu;
	d->nic.gid_index = -1;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		if (rn_verbs.query_gid_ex(d->ctx, 1, (uint32_t)i, &e))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2 || e.gid.raw[10] != 0xff ||
		    e.gid.raw[11] != 0xff)
			continue;
		d->nic.gid_index = i;
		d->nic.gid = e.gid;
		d->nic.ip.family = AF_INET;
		memcpy(&d->nic.ip.v4, &e.gid.raw[12], 4);
		if_indextoname(e.ndev_ifindex, d->nic.netdev);
		d->nic.ifindex = (int)e.ndev_ifindex;
		break;
	}
	if (d->nic.gid_index < 0)
		return -ENOENT;
	{
		/* what the route check compares: the netdev's MAC and MTU */
		char path[128];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/net/%s/address", d->nic.netdev);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &d->nic.mac[0],
				   &d->nic.mac[1], &d->nic.mac[2], &d->nic.mac[3], &d->nic.mac[4],
				   &d->nic.mac[5]) != 6)
				memset(d->nic.mac, 0, sizeof(d->nic.mac));
			fclose(f);
		}
		snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", d->nic.netdev);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%d", &d->nic.mtu) != 1)
				d->nic.mtu = 0;
			fclose(f);
		}
		d->nic.link_up = 1;
	}
	d->is_rxe = !strncmp(name, "rxe", 3);
	d->max_msg_size = pa.max_msg_sz;
	d->relaxed_ordering = 1;
	/* claims GPU support so that the flush QP exists: its READ is checked on rxe */
	d->ptr_support = RN_PTR_HOST | RN_PTR_CUDA;
	pthread_mutex_init(&d->lock, NULL);
	return 0;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31 + i * 7 + (i >> 13));
}

/* XFER_NAP_US: nap after an idle poll, as a driver should on a 1-vCPU rxe guest. */
static int nap_us;

static void nap(void)
{
	if (nap_us)
		usleep((useconds_t)nap_us);
}

static int wait_req(struct rn_req *r, int *sizes)
{
	int done = 0, ret;

	for (;;) {
		ret = rn_test(r, &done, sizes);
		if (ret || done)
			return ret;
		nap();
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const size_t seq[] = { 0, 1, 4096, 1u << 20, BIG };

static int run_recv(struct rn_engine *eng, const char *file)
{
	unsigned char handle[RN_HANDLE_SIZE], *buf, *want;
	struct rn_listen_comm *lc;
	struct rn_recv_comm *rc = NULL;
	struct rn_req *r[WIN];
	struct rn_mr *mr;
	char tmp[4096];
	FILE *f;
	int ret, i, k, got[RN_MAX_RECVS], tag = 0;

	ret = rn_listen(eng, 0, handle, &lc);
	if (ret)
		return ret;
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "w");
	for (i = 0; i < RN_HANDLE_SIZE; i++)
		fprintf(f, "%02x", handle[i]);
	fclose(f);
	rename(tmp, file);
	while (!rc) {
		ret = rn_accept(lc, &rc);
		if (ret)
			return ret;
	}
	buf = malloc(BIG + 4096);
	want = malloc(BIG);
	if ((ret = rn_reg_mr(rc, buf, BIG + 4096, RN_PTR_HOST, &mr)))
		return ret;
	for (i = 0; i < (int)(sizeof(seq) / sizeof(seq[0])); i++) {
		void *p = buf;
		size_t sz = seq[i] + 100; /* receive larger than the send */

		memset(buf, 0xee, sz);
		if ((ret = rn_irecv(rc, 1, &p, &sz, &tag, &mr, &r[0])) ||
		    (ret = wait_req(r[0], got)))
			return ret;
		fill(want, seq[i], (unsigned)i);
		if (got[0] != (int)seq[i] || memcmp(buf, want, seq[i])) {
			fprintf(stderr, "FAIL: message %d: got %d bytes, want %zu\n", i, got[0],
				seq[i]);
			return -EIO;
		}
		printf("recv %zu bytes ok\n", seq[i]);
	}
	{
		void *p[2] = { buf, buf + 8192 };
		size_t sz[2] = { 8192, 8192 };
		int tags[2] = { 1, 2 };
		struct rn_mr *mrs[2] = { mr, mr };

		if ((ret = rn_irecv(rc, 2, p, sz, tags, mrs, &r[0])) || (ret = wait_req(r[0], got)))
			return ret;
		if (got[0] != 1000 || got[1] != 2000) {
			fprintf(stderr, "FAIL: multi-recv sizes %d %d\n", got[0], got[1]);
			return -EIO;
		}
		printf("multi-recv ok\n");
	}
	{
		/* flush: a 1-byte READ through the loopback QP ("CUDA" MR over host memory) */
		static char gbuf[8192];
		struct rn_mr *gmr;
		void *p = gbuf;
		int sz = 100;

		if ((ret = rn_reg_mr(rc, gbuf, sizeof(gbuf), RN_PTR_CUDA, &gmr)) ||
		    (ret = rn_iflush(rc, 1, &p, &sz, &gmr, &r[0])))
			return ret;
		if (r[0] && (ret = wait_req(r[0], NULL)))
			return ret;
		printf("flush %s\n", r[0] ? "ok" : "disabled");
		rn_dereg_mr(rc, gmr);
	}
	for (k = 0; k < nbw; k += WIN) {
		for (i = 0; i < WIN; i++) {
			void *p = buf + (size_t)i * (BW / WIN);
			size_t sz = BW / WIN;

			if ((ret = rn_irecv(rc, 1, &p, &sz, &tag, &mr, &r[i])))
				return ret;
		}
		for (i = 0; i < WIN; i++)
			if ((ret = wait_req(r[i], got)))
				return ret;
	}
	{
		/* one last message of 1 byte: tells the sender we are done */
		void *p = buf;
		size_t sz = 1;

		if ((ret = rn_irecv(rc, 1, &p, &sz, &tag, &mr, &r[0])) ||
		    (ret = wait_req(r[0], got)))
			return ret;
	}
	printf("PASS recv\n");
	rn_dereg_mr(rc, mr);
	rn_close_recv(rc);
	rn_close_listen(lc);
	return 0;
}

static int run_recvwait(struct rn_engine *eng, const char *file)
{
	unsigned char handle[RN_HANDLE_SIZE];
	static char buf[4096];
	struct rn_listen_comm *lc;
	struct rn_recv_comm *rc = NULL;
	struct rn_req *r;
	struct rn_mr *mr;
	char tmp[4096];
	size_t sz = sizeof(buf);
	void *p = buf;
	int ret, i, tag = 0;
	double t0;
	FILE *f;

	if ((ret = rn_listen(eng, 0, handle, &lc)))
		return ret;
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "w");
	for (i = 0; i < RN_HANDLE_SIZE; i++)
		fprintf(f, "%02x", handle[i]);
	fclose(f);
	rename(tmp, file);
	while (!rc)
		if ((ret = rn_accept(lc, &rc)))
			return ret;
	if ((ret = rn_reg_mr(rc, buf, sizeof(buf), RN_PTR_HOST, &mr)) ||
	    (ret = rn_irecv(rc, 1, &p, &sz, &tag, &mr, &r)))
		return ret;
	printf("waiting\n");
	t0 = now_s();
	ret = wait_req(r, NULL);
	printf("wait ended after %.2f s: %s\n", now_s() - t0, ret ? strerror(-ret) : "done");
	return ret;
}

static int run_sendidle(struct rn_engine *eng, const char *file)
{
	unsigned char handle[RN_HANDLE_SIZE];
	struct rn_send_comm *sc = NULL;
	char hex[2 * RN_HANDLE_SIZE + 2];
	FILE *f = NULL;
	int ret, i;

	while (!f) {
		f = fopen(file, "r");
		if (!f)
			usleep(100000);
	}
	if (!fgets(hex, sizeof(hex), f))
		return -EINVAL;
	fclose(f);
	for (i = 0; i < RN_HANDLE_SIZE; i++)
		sscanf(hex + 2 * i, "%2hhx", &handle[i]);
	while (!sc)
		if ((ret = rn_connect(eng, 0, handle, -1, &sc)))
			return ret;
	printf("connected, idling\n");
	sleep(30);
	rn_close_send(sc);
	return 0;
}

static int run_send(struct rn_engine *eng, const char *file)
{
	unsigned char handle[RN_HANDLE_SIZE], *buf;
	struct rn_send_comm *sc = NULL;
	struct rn_req *r[WIN];
	struct rn_mr *mr;
	char hex[2 * RN_HANDLE_SIZE + 2];
	FILE *f = NULL;
	int ret, i, k, got[1];
	double t0, t1;

	while (!f) {
		f = fopen(file, "r");
		if (!f)
			usleep(100000);
	}
	if (!fgets(hex, sizeof(hex), f))
		return -EINVAL;
	fclose(f);
	for (i = 0; i < RN_HANDLE_SIZE; i++)
		sscanf(hex + 2 * i, "%2hhx", &handle[i]);
	while (!sc) {
		ret = rn_connect(eng, 0, handle, -1, &sc);
		if (ret)
			return ret;
	}
	buf = malloc(BIG);
	if ((ret = rn_reg_mr(sc, buf, BIG, RN_PTR_HOST, &mr)))
		return ret;
	for (i = 0; i < (int)(sizeof(seq) / sizeof(seq[0])); i++) {
		fill(buf, seq[i], (unsigned)i);
		r[0] = NULL;
		while (!r[0]) {
			if ((ret = rn_isend(sc, buf, seq[i], 0, mr, &r[0])))
				return ret;
			if (!r[0])
				nap();
		}
		if ((ret = wait_req(r[0], got)))
			return ret;
	}
	for (i = 1; i >= 0; i--) { /* the multi-recv, in reverse tag order */
		r[i] = NULL;
		while (!r[i])
			if ((ret = rn_isend(sc, buf, 1000 * (size_t)(i + 1), i + 1, mr, &r[i])))
				return ret;
	}
	for (i = 0; i < 2; i++)
		if ((ret = wait_req(r[i], got)))
			return ret;
	t0 = now_s();
	for (k = 0; k < nbw; k += WIN) {
		for (i = 0; i < WIN; i++) {
			r[i] = NULL;
			while (!r[i]) {
				if ((ret = rn_isend(sc, buf + (size_t)i * (BW / WIN), BW / WIN,
						    0, mr, &r[i])))
					return ret;
				if (!r[i])
					nap();
			}
		}
		for (i = 0; i < WIN; i++)
			if ((ret = wait_req(r[i], got)))
				return ret;
	}
	t1 = now_s();
	printf("bandwidth: %d x %u KiB in %.3f s = %.1f MB/s\n", nbw, BW / WIN / 1024, t1 - t0,
	       nbw * (BW / WIN) / (t1 - t0) / 1e6);
	r[0] = NULL;
	while (!r[0])
		if ((ret = rn_isend(sc, buf, 1, 0, mr, &r[0])))
			return ret;
	if ((ret = wait_req(r[0], got)))
		return ret;
	printf("PASS send\n");
	rn_dereg_mr(sc, mr);
	rn_close_send(sc);
	return 0;
}

int main(int argc, char **argv)
{
	static struct rn_engine eng;
	static struct rn_dev dev;
	int ret;

	if (argc != 4) {
		fprintf(stderr, "usage: %s recv|send <ibdev> <handle-file>\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("XFER_BW_ITERS"))
		nbw = atoi(getenv("XFER_BW_ITERS")) / WIN * WIN;
	if (getenv("XFER_NAP_US"))
		nap_us = atoi(getenv("XFER_NAP_US"));
	rn_log_set_level(rn_log_level_from_env());
	rn_config_load(&eng.cfg);
	gethostname(eng.hostname, sizeof(eng.hostname) - 1);
	ret = dev_open(argv[2], &dev);
	if (ret) {
		fprintf(stderr, "FAIL: %s: %s\n", argv[2], strerror(-ret));
		return 1;
	}
	eng.devs[0] = &dev;
	eng.ndevs = 1;
	if (!strcmp(argv[1], "recv"))
		ret = run_recv(&eng, argv[3]);
	else if (!strcmp(argv[1], "send"))
		ret = run_send(&eng, argv[3]);
	else if (!strcmp(argv[1], "recvwait"))
		ret = run_recvwait(&eng, argv[3]);
	else
		ret = run_sendidle(&eng, argv[3]);
	if (ret) {
		fprintf(stderr, "FAIL: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	return 0;
}
