// SPDX-License-Identifier: MIT
/*
 * roce-doctor-mpi: the doctor across a fleet, launched by the cluster's own launcher
 *
 *   mpirun -np N --map-by ppr:1:node roce-doctor-mpi [--json] [--svg FILE]
 *   srun --mpi=pmix -N N --ntasks-per-node=1 roce-doctor-mpi
 *
 * One rank per host. Each takes its host's facts with the doctor's host check (the
 * plugin's library), the facts travel with MPI collectives, then every pair of hosts
 * meets once in N-1 rounds of disjoint pairs (doctor_sweep.c's tournament). A pair runs
 * `peer`'s checks: the lower rank ("a") checks every NIC pair from its side (route,
 * neighbour MAC, MTU), then "b" from its side plus ARP uniqueness, then "a"'s ARP
 * uniqueness (one side at a time, as peer: ARP requests rewrite the entries being
 * checked), then an RC ping through the plugin's transport for every RDMA NIC pair.
 * Rank 0 gathers the pair results and reports.
 *
 * A dead or hung rank must not hang the sweep, and MPI cannot survive a dead rank:
 * every wait is non-blocking with a deadline. A pair whose partner does not answer
 * within --pair-timeout is recorded as such and the rank moves on; rank 0 names every
 * host whose facts or results never came, prints what it has and ends the job with
 * MPI_Abort (exit 2). Every rank tells rank 0 when its facts are ready (a small
 * message), so a hang before the collective is named too.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "doctor_sweep.h"
#include "rn_codec.h"
#include "rn_net.h"

#define TAG_READY 1
#define TAG_FINAL 2
#define TAG_BYE 3           /* rank 0 -> all: 0 finalize, 1 the job is being aborted */
#define TAG_PAIR 100       /* + round * 8 + step */
#define PROBE_TIMEOUT_MS 6000
#define WHY_LEN 160

enum { STEP_GO = 0, STEP_CHECKS, STEP_REQ, STEP_HANDLE, STEP_RESULT };

/*
 * Every message goes through the byte codec (rn_codec.h), never a struct's bytes: ranks
 * may be different builds or machines. GO is be32 1; a pair's probes are the peer
 * protocol's messages (doctor_pair.c's engine over mpi_io below: be16 type, then the
 * payload). FACTS: be32 gather_err, be64 gather_ms (IEEE 754 bits), then the peer
 * protocol's INV payload. Pair results (PAIRS) below.
 */
#define FACTS_HDR 12

struct ctx {
	struct rn_doctor *d;
	int rank, n;
	int pair_timeout_s;
	char (*names)[64];
	struct rn_dw_inv **inv;     /* every host's facts (NULL: not received) */
	struct rn_sweep_pair **mine;    /* pairs this rank led ("a"), one per round */
	int nmine;
	double round_max_ms;
};

static void die_usage(int rank, const char *what, const char *arg)
{
	if (!rank)
		fprintf(stderr, "roce-doctor-mpi: %s '%s'; see --help\n", what, arg);
}

static void usage(void)
{
	printf("Usage: mpirun -np N --map-by ppr:1:node roce-doctor-mpi [options]\n"
	       "       srun --mpi=pmix --ntasks-per-node=1 roce-doctor-mpi [options]\n"
	       "\n"
	       "Checks every pair of hosts of an MPI job for RoCE on several NICs in one subnet:\n"
	       "each host's own check, then every pair of hosts in N-1 rounds of disjoint pairs,\n"
	       "every NIC pair: route symmetry, neighbour MAC (ARP flux), ARP uniqueness, MTU and\n"
	       "an RDMA RC ping through the plugin's transport. Rank 0 prints a per-host summary,\n"
	       "the bad (host, NIC, host, NIC) pairs with cause ids and fixes, and a heat map.\n"
	       "\n"
	       "Options:\n"
	       "  -j, --json            machine-readable report (schema roce-doctor-sweep/1)\n"
	       "  -s, --svg FILE        also draw the heat map (hosts x NICs) as SVG\n"
	       "  -J, --json-file FILE  also write the JSON report to FILE (text stays on stdout)\n"
	       "  -T, --pair-timeout S  bound of one host pair's checks (default 60); a host that\n"
	       "                        does not answer in time is named and left out\n"
	       "  -n, --netdev LIST     check these netdevs on every host (as roce-doctor)\n"
	       "      --no-rdma         skip the RDMA RC ping\n"
	       "  -v, --verbose         the library's log lines, every fix\n"
	       "  -h, --help, -V, --version\n"
	       "\n"
	       "Exit status (rank 0, so mpirun's): 0 all good, 1 problems found, 2 usage or system\n"
	       "error or a host that did not answer.\n");
}

/* ---- waiting with a deadline ----------------------------------------------------------- */

/* Complete @req by @deadline (ms), or cancel it: 0 or -ETIMEDOUT. */
static int wait_req(MPI_Request *req, double deadline)
{
	int done = 0;

	for (;;) {
		MPI_Test(req, &done, MPI_STATUS_IGNORE);
		if (done)
			return 0;
		if (rn_doctor_now_ms() > deadline)
			break;
		usleep(500);
	}
	MPI_Cancel(req);
	MPI_Request_free(req);
	return -ETIMEDOUT;
}

static int send_by(const void *buf, int len, int to, int tag, double deadline)
{
	MPI_Request req;

	MPI_Isend(buf, len, MPI_BYTE, to, tag, MPI_COMM_WORLD, &req);
	return wait_req(&req, deadline);
}

static int recv_by(void *buf, int len, int from, int tag, double deadline)
{
	MPI_Request req;

	MPI_Irecv(buf, len, MPI_BYTE, from, tag, MPI_COMM_WORLD, &req);
	return wait_req(&req, deadline);
}

/* A message of unknown size: *@out malloc'ed. */
static int recv_any_by(void **out, int *len, int from, int tag, double deadline, int *src)
{
	MPI_Status st;
	int flag = 0;

	while (!flag) {
		MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &st);
		if (flag)
			break;
		if (rn_doctor_now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(500);
	}
	MPI_Get_count(&st, MPI_BYTE, len);
	*out = malloc((size_t)(*len ? *len : 1));
	if (!*out)
		return -ENOMEM;
	MPI_Recv(*out, *len, MPI_BYTE, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (src)
		*src = st.MPI_SOURCE;
	return 0;
}

static int tag_of(int round, int step)
{
	return TAG_PAIR + round * 8 + step;
}

/*
 * The pair engine's transport between two ranks (rn_pair_io): a tag per step of the
 * round, the message's type in front (DONE travels on the request's tag, in order).
 */
struct mpi_io {
	struct rn_pair_io io;       /* first: the engine's view */
	int peer, round;
	double deadline;
	const char *name;           /* the peer's host */
};

static int step_of(uint16_t type)
{
	switch (type) {
	case RN_DW_CHECKS: return STEP_CHECKS;
	case RN_DW_PROBE_HANDLE: return STEP_HANDLE;
	case RN_DW_PROBE_RESULT: return STEP_RESULT;
	default: return STEP_REQ; /* PROBE_REQ, DONE */
	}
}

static int mio_send(struct rn_pair_io *io, uint16_t type, const void *buf, size_t len)
{
	struct mpi_io *x = (struct mpi_io *)io;
	uint8_t *m = malloc(len + 2);
	int ret;

	if (!m)
		return -ENOMEM;
	rn_put_be16(m, type);
	if (len)
		memcpy(m + 2, buf, len);
	ret = send_by(m, (int)len + 2, x->peer, tag_of(x->round, step_of(type)), x->deadline);
	free(m);
	return ret;
}

static int mio_recv(struct rn_pair_io *io, uint16_t type, struct rn_dw_msg *m, char *why,
		    size_t len)
{
	struct mpi_io *x = (struct mpi_io *)io;
	void *buf = NULL;
	int n = 0, ret;

	memset(m, 0, sizeof(*m));
	ret = recv_any_by(&buf, &n, x->peer, tag_of(x->round, step_of(type)), x->deadline, NULL);
	if (ret) {
		snprintf(why, len, "%s did not answer in time", x->name);
		return ret;
	}
	if (n < 2 || n - 2 > (int)RN_DW_MAX_PAYLOAD) {
		free(buf);
		snprintf(why, len, "malformed message from %s", x->name);
		return -EBADMSG;
	}
	m->type = rn_get_be16(buf);
	m->len = (uint32_t)(n - 2);
	m->payload = malloc(m->len ? m->len : 1);
	if (m->payload)
		memcpy(m->payload, (uint8_t *)buf + 2, m->len);
	free(buf);
	return m->payload ? 0 : -ENOMEM;
}

/* ---- one host pair --------------------------------------------------------------------- */

static int worst_of(const struct rn_dw_pair *p, uint8_t *cause, uint8_t *sev)
{
	int k;

	for (k = 0; k < p->nfindings; k++)
		if (p->findings[k].sev >= RN_SEV_WARN && p->findings[k].sev + 1 > *sev) {
			*cause = (uint8_t)p->findings[k].cause;
			*sev = (uint8_t)(p->findings[k].sev + 1);
		}
	return *cause != 0;
}

static int add_find(struct rn_sweep_pair *p, int i, int j, int by, const struct rn_finding *f)
{
	struct rn_sweep_find *x = realloc(p->finds, (size_t)(p->nfind + 1) * sizeof(*x));

	if (!x)
		return -ENOMEM;
	p->finds = x;
	x = &p->finds[p->nfind++];
	memset(x, 0, sizeof(*x));
	x->i = (int16_t)i;
	x->j = (int16_t)j;
	x->by = (int16_t)by;
	return rn_finding_copy(&x->f, f);
}

/* One side's checks into the cells: @by_b when @c holds b's checks (local = b's NIC). */
static void merge_checks(struct rn_sweep_pair *p, const struct rn_dw_pair *pairs, int npairs,
			 int by_b)
{
	int n, k;

	for (n = 0; n < npairs; n++) {
		const struct rn_dw_pair *q = &pairs[n];
		int i = by_b ? q->remote : q->local, j = by_b ? q->local : q->remote;
		struct rn_sweep_cell *c;

		if (i < 0 || i >= p->na || j < 0 || j >= p->nb)
			continue;
		c = &p->cells[i * p->nb + j];
		if (by_b) {
			c->b_checked = q->status != 2;
			worst_of(q, &c->b_cause, &c->b_sev);
		} else {
			c->a_checked = q->status != 2;
			worst_of(q, &c->a_cause, &c->a_sev);
		}
		for (k = 0; k < q->nfindings; k++)
			if (q->findings[k].sev >= RN_SEV_WARN)
				add_find(p, i, j, by_b ? RN_SW_BY_B : RN_SW_BY_A, &q->findings[k]);
	}
	/* the severities are kept +1 so that "none" is 0; back to rn_severity */
	for (n = 0; n < p->na * p->nb; n++) {
		struct rn_sweep_cell *c = &p->cells[n];

		if (!by_b && c->a_sev)
			c->a_sev--;
		if (by_b && c->b_sev)
			c->b_sev--;
	}
}

static int remote_rdma(const struct rn_dw_nic *n)
{
	return n->ibdev[0] && n->gid_index >= 0 && n->link_up;
}

static void probe_one(struct ctx *x, struct rn_sweep_pair *p, int b, int i, int j, int round,
		      double deadline)
{
	struct mpi_io io = { { mio_send, mio_recv }, b, round, deadline, x->names[b] };
	struct rn_sweep_cell *c = &p->cells[i * p->nb + j];
	struct rn_pair_probe pr = { 0 };
	struct rn_finding f = { 0 };
	char why[RN_DW_WHY_MAX], *msg = NULL, *m;
	int tmo = (int)RN_MIN((double)PROBE_TIMEOUT_MS, deadline - rn_doctor_now_ms());

	c->rdma = RN_SW_RDMA_ERROR;
	if (rn_pair_probe(x->d, &io.io, x->inv[b], i, j, RN_MAX(tmo, 100), &pr, why, sizeof(why))) {
		if (asprintf(&msg, "%s did not answer the probe request", x->names[b]) < 0)
			msg = NULL;
		rn_finding_set(&f, RN_CAUSE_NONE, RN_SEV_INFO, msg ? msg : "no answer", "");
		free(msg);
		c->rdma = RN_SW_RDMA_TIMEOUT;
		add_find(p, i, j, RN_SW_BY_RDMA, &f);
		rn_finding_clear(&f);
		rn_finding_clear(&pr.diag);
		rn_probe_ctr_clear(&pr.ctr);
		p->status = -ETIMEDOUT;
		return;
	}
	c->rdma_us = (uint32_t)(pr.ms * 1000);
	if (!pr.ret && !pr.peer_ret) {
		c->rdma = RN_SW_RDMA_OK;
		return;
	}
	c->rdma = pr.timeout ? RN_SW_RDMA_TIMEOUT : RN_SW_RDMA_ERROR;
	if (pr.diag.cause) {
		c->diag = (uint8_t)pr.diag.cause;
		rn_finding_move(&f, &pr.diag);
	}
	rn_finding_clear(&pr.diag);
	rn_probe_ctr_clear(&pr.ctr); /* the sweep's report carries the diagnosis, not these */
	/* the message is the probe's error, whole; the fix the diagnosis's */
	if (asprintf(&msg, "%s%s%s", pr.ret ? pr.why : "",
		     pr.ret && pr.peer_ret ? "; peer: " : pr.peer_ret ? "peer: " : "",
		     pr.peer_ret ? pr.peer_why : "") < 0)
		msg = NULL;
	/* the diagnosis keeps its fixes and advice: only the message changes */
	m = strdup(msg ? msg : "probe failed");
	if (m) {
		free(f.msg);
		f.msg = m;
	}
	free(msg);
	add_find(p, i, j, RN_SW_BY_RDMA, &f);
	rn_finding_clear(&f);
}

/* The lower rank of a pair: leads the steps and keeps the record. */
static struct rn_sweep_pair *pair_a(struct ctx *x, int b, int round, double deadline)
{
	struct rn_doctor *d = x->d;
	double t0 = rn_doctor_now_ms(), ms;
	struct rn_sweep_pair *p = calloc(1, sizeof(*p));
	struct rn_dw_checks *ours = calloc(1, sizeof(*ours));
	struct rn_dw_checks *tc = calloc(1, sizeof(*tc));
	const struct rn_dw_inv *rb = x->inv[b];
	void *theirs = NULL;
	uint8_t go[4];
	int len = 0, i, j;

	if (!p || !ours || !tc || !rb || !x->inv[x->rank]) {
		free(ours);
		free(tc);
		if (p)
			free(p);
		return NULL;
	}
	p->a = x->rank;
	p->b = b;
	p->na = d->nnics;
	p->nb = rb->nnics;
	p->cells = calloc((size_t)RN_MAX(p->na * p->nb, 1), sizeof(*p->cells));
	if (!p->cells) {
		free(ours);
		free(tc);
		rn_sweep_pair_free(p);
		return NULL;
	}
	rn_doctor_pair_checks(d, rb, NULL, ours, &ms);
	rn_put_be32(go, 1);
	if (send_by(go, sizeof(go), b, tag_of(round, STEP_GO), deadline) ||
	    recv_any_by(&theirs, &len, b, tag_of(round, STEP_CHECKS), deadline, NULL)) {
		p->status = -ETIMEDOUT;
		snprintf(p->err, sizeof(p->err), "%s did not answer in round %d (--pair-timeout %d s)",
			 x->names[b], round + 1, x->pair_timeout_s);
		goto out;
	}
	rn_doctor_arp_unique(d, rb, NULL, ours);
	merge_checks(p, ours->pairs, ours->npairs, 0);
	{
		/* b's checks in the peer protocol's encoding: findings whole, never pointers */
		struct rn_dw_msg m = { RN_DW_CHECKS, (uint32_t)len, theirs };
		char why[128];

		if (!rn_dw_decode_checks(&m, rb, x->inv[x->rank], tc, why, sizeof(why)))
			merge_checks(p, tc->pairs, tc->npairs, 1);
		else
			snprintf(p->err, sizeof(p->err), "%s sent bad checks: %s", x->names[b], why);
	}
	for (i = 0; i < p->na && !d->no_rdma && !p->status; i++)
		for (j = 0; j < p->nb && !p->status; j++)
			if (rn_probe_available(d, i) && remote_rdma(&rb->nics[j]) &&
			    d->nics[i].nic.ip.family == rb->nics[j].ip.family)
				probe_one(x, p, b, i, j, round, deadline);
	if (p->status)
		snprintf(p->err, sizeof(p->err), "%s stopped answering during the RDMA probes",
			 x->names[b]);
	else {
		struct mpi_io io = { { mio_send, mio_recv }, b, round, deadline, x->names[b] };

		io.io.send(&io.io, RN_DW_DONE, NULL, 0);
	}
out:
	p->ms = rn_doctor_now_ms() - t0;
	free(theirs);
	rn_dw_checks_clear(ours);
	rn_dw_checks_clear(tc);
	free(ours);
	free(tc);
	return p;
}

/* The higher rank: answers. */
static void pair_b(struct ctx *x, int a, int round, double deadline)
{
	struct rn_doctor *d = x->d;
	double ms;
	struct rn_dw_checks *ours = calloc(1, sizeof(*ours));
	const struct rn_dw_inv *ra = x->inv[a];
	uint8_t *enc = NULL;
	size_t elen = 0;
	uint8_t go[4];
	int n;

	if (!ours || !ra || recv_by(go, sizeof(go), a, tag_of(round, STEP_GO), deadline)) {
		if (ra)
			fprintf(stderr, "roce-doctor-mpi: %s: %s did not start round %d in time\n",
				d->hostname, x->names[a], round + 1);
		free(ours);
		return;
	}
	rn_doctor_pair_checks(d, ra, NULL, ours, &ms);
	rn_doctor_arp_unique(d, ra, NULL, ours);
	/* the peer protocol's encoding: the findings' texts travel whole */
	if (rn_dw_encode_checks(ours, &enc, &elen) ||
	    send_by(enc, (int)elen, a, tag_of(round, STEP_CHECKS), deadline)) {
		free(enc);
		rn_dw_checks_clear(ours);
		free(ours);
		return;
	}
	free(enc);
	rn_dw_checks_clear(ours);
	free(ours);
	for (n = 0; n < RN_DOCTOR_MAX_NICS * RN_DOCTOR_MAX_NICS + 1; n++) {
		struct mpi_io io = { { mio_send, mio_recv }, a, round, deadline, x->names[a] };
		struct rn_dw_msg m;
		char why[128];
		int io_err, tmo;

		if (io.io.recv(&io.io, RN_DW_PROBE_REQ, &m, why, sizeof(why)))
			return;
		if (m.type != RN_DW_PROBE_REQ || m.len != 4) {
			rn_dw_msg_free(&m); /* DONE, or not ours: the round is over */
			return;
		}
		tmo = (int)RN_MAX(100.0, RN_MIN((double)PROBE_TIMEOUT_MS,
						deadline - rn_doctor_now_ms()));
		rn_pair_probe_answer(d, &io.io, &m, tmo, &io_err);
		rn_dw_msg_free(&m);
		if (io_err)
			return;
	}
}

/* ---- facts ----------------------------------------------------------------------------- */

/*
 * Every host's facts to every host (Allgather of sizes, then Allgatherv), each with a
 * deadline. Before that each rank tells rank 0 it is ready, so rank 0 can name a host
 * that hangs in its own check. Returns 0, or -ETIMEDOUT (rank 0 has marked who).
 */
static int exchange_facts(struct ctx *x, struct rn_sweep *s, int gather_err, double gather_ms)
{
	struct rn_dw_inv *inv = calloc(1, sizeof(*inv));
	uint64_t ms_bits;
	MPI_Request req, *ready = NULL;
	double deadline = rn_doctor_now_ms() + x->pair_timeout_s * 1000.0;
	int *lens = calloc((size_t)x->n, sizeof(int)), *displs = calloc((size_t)x->n, sizeof(int));
	char *mine = NULL, *all = NULL;
	uint8_t *enc = NULL;
	size_t elen = 0;
	int len, total = 0, h, ret = -ENOMEM, one = 1, *flags = NULL;

	if (!inv || !lens || !displs)
		goto out;
	if (!gather_err && rn_dw_inv_from_doctor(x->d, inv))
		goto out;
	snprintf(inv->host, sizeof(inv->host), "%s", x->names[x->rank]);
	/* the peer protocol's own encoding: findings travel whole, never as pointers */
	if (rn_dw_encode_inv(inv, &enc, &elen))
		goto out;
	len = (int)(FACTS_HDR + elen);
	mine = malloc((size_t)len);
	if (!mine)
		goto out;
	memcpy(&ms_bits, &gather_ms, sizeof(ms_bits)); /* the double's IEEE 754 bits */
	rn_put_be32((uint8_t *)mine, (uint32_t)gather_err);
	rn_put_be64((uint8_t *)mine + 4, ms_bits);
	memcpy(mine + FACTS_HDR, enc, elen);
	if (x->rank) {
		send_by(&one, sizeof(one), 0, TAG_READY, deadline);
	} else {
		ready = calloc((size_t)x->n, sizeof(*ready));
		flags = calloc((size_t)x->n, sizeof(int));
		if (!ready || !flags)
			goto out;
		for (h = 1; h < x->n; h++)
			MPI_Irecv(&flags[h], 1, MPI_INT, h, TAG_READY, MPI_COMM_WORLD, &ready[h]);
		flags[0] = 1;
		for (h = 1; h < x->n; h++)
			if (wait_req(&ready[h], deadline))
				flags[h] = 0;
		ret = 0;
		for (h = 0; h < x->n; h++)
			if (!flags[h]) {
				fprintf(stderr, "roce-doctor-mpi: %s (rank %d) did not finish its host check within %d s\n",
					x->names[h], h, x->pair_timeout_s);
				ret = -ETIMEDOUT;
			}
		if (ret)
			goto out;
	}
	ret = -ETIMEDOUT;
	MPI_Iallgather(&len, 1, MPI_INT, lens, 1, MPI_INT, MPI_COMM_WORLD, &req);
	if (wait_req(&req, deadline + (x->rank ? 2000.0 * x->pair_timeout_s : 0)))
		goto out;
	for (h = 0; h < x->n; h++) {
		displs[h] = total;
		total += lens[h];
	}
	all = malloc((size_t)total);
	if (!all) {
		ret = -ENOMEM;
		goto out;
	}
	MPI_Iallgatherv(mine, len, MPI_BYTE, all, lens, displs, MPI_BYTE, MPI_COMM_WORLD, &req);
	if (wait_req(&req, deadline + (x->rank ? 2000.0 * x->pair_timeout_s : 0)))
		goto out;
	for (h = 0; h < x->n; h++) {
		const uint8_t *fh = (const uint8_t *)all + displs[h];
		struct rn_dw_inv *hv = calloc(1, sizeof(*hv));
		struct rn_dw_msg m = { RN_DW_INV, 0, NULL };
		char why[128];
		double fms;

		if (!hv || lens[h] < FACTS_HDR) {
			free(hv);
			continue;
		}
		m.len = (uint32_t)(lens[h] - FACTS_HDR);
		m.payload = (uint8_t *)all + displs[h] + FACTS_HDR;
		if (rn_dw_decode_inv(&m, hv, why, sizeof(why))) {
			rn_dw_inv_clear(hv);
			free(hv);
			continue;
		}
		x->inv[h] = hv;
		if (s) {
			s->hosts[h].facts = 1;
			ms_bits = rn_get_be64(fh + 4);
			memcpy(&fms, &ms_bits, sizeof(fms));
			s->hosts[h].gather_err = (int32_t)rn_get_be32(fh);
			s->hosts[h].gather_ms = fms;
		}
	}
	ret = 0;
out:
	/* Rank 0 stopped at the ready messages: the hosts that sent one are not the culprits. */
	if (s && flags && ret == -ETIMEDOUT)
		for (h = 0; h < x->n; h++)
			s->hosts[h].facts = s->hosts[h].results = flags[h];
	free(flags);
	free(ready);
	free(all);
	free(mine);
	free(lens);
	free(displs);
	free(enc);
	if (inv)
		rn_dw_inv_clear(inv);
	free(inv);
	return ret;
}

/* ---- results to rank 0 ----------------------------------------------------------------- */

/*
 * PAIRS, the pairs a rank led, to rank 0: per pair be32 a, b, status, na, nb, nfind,
 * be64 ms (IEEE 754 bits), err[160]; na * nb cells (u8 a_cause, a_sev, b_cause, b_sev,
 * a_checked, b_checked, rdma, diag, be32 rdma_us); nfind x (be16 i, j, by, then the
 * peer protocol's FINDING, texts whole).
 */
static char *pack_pairs(struct ctx *x, int *len)
{
	struct rn_wbuf b = { 0 };
	uint64_t bits;
	int k, q, c;

	for (k = 0; k < x->nmine; k++) {
		const struct rn_sweep_pair *p = x->mine[k];

		rn_wb_u32(&b, (uint32_t)p->a);
		rn_wb_u32(&b, (uint32_t)p->b);
		rn_wb_u32(&b, (uint32_t)p->status);
		rn_wb_u32(&b, (uint32_t)p->na);
		rn_wb_u32(&b, (uint32_t)p->nb);
		rn_wb_u32(&b, (uint32_t)p->nfind);
		memcpy(&bits, &p->ms, sizeof(bits));
		rn_wb_u64(&b, bits);
		rn_wb_field(&b, p->err, sizeof(p->err));
		for (c = 0; c < p->na * p->nb; c++) {
			const struct rn_sweep_cell *e = &p->cells[c];
			const uint8_t u[8] = { e->a_cause, e->a_sev, e->b_cause, e->b_sev,
					       e->a_checked, e->b_checked, e->rdma, e->diag };

			rn_wb_put(&b, u, sizeof(u));
			rn_wb_u32(&b, e->rdma_us);
		}
		for (q = 0; q < p->nfind; q++) {
			rn_wb_u16(&b, (uint16_t)p->finds[q].i);
			rn_wb_u16(&b, (uint16_t)p->finds[q].j);
			rn_wb_u16(&b, (uint16_t)p->finds[q].by);
			rn_dw_put_finding(&b, &p->finds[q].f);
		}
	}
	if (b.err || b.len > INT_MAX) {
		free(b.p);
		return NULL;
	}
	*len = (int)b.len;
	return b.p ? (char *)b.p : calloc(1, 1);
}

static int unpack_pairs(struct rn_sweep *s, int from, const char *buf, int len)
{
	struct rn_rbuf b = { (const uint8_t *)buf, (size_t)len, 0, 0 };

	while (b.off < b.len && !b.err) {
		struct rn_sweep_pair *p = calloc(1, sizeof(*p));
		uint64_t bits;
		int c;
		long k;

		if (!p)
			return -ENOMEM;
		p->a = (int32_t)rn_rb_u32(&b);
		p->b = (int32_t)rn_rb_u32(&b);
		p->status = (int32_t)rn_rb_u32(&b);
		p->na = (int32_t)rn_rb_u32(&b);
		p->nb = (int32_t)rn_rb_u32(&b);
		p->nfind = (int32_t)rn_rb_u32(&b);
		bits = rn_rb_u64(&b);
		memcpy(&p->ms, &bits, sizeof(p->ms));
		rn_rb_field(&b, p->err, sizeof(p->err));
		if (b.err || p->a != from || p->b <= p->a || p->b >= s->n || p->na < 0 ||
		    p->nb < 0 || p->na > RN_DOCTOR_MAX_NICS || p->nb > RN_DOCTOR_MAX_NICS ||
		    p->nfind < 0 ||
		    p->nfind > RN_DOCTOR_MAX_NICS * RN_DOCTOR_MAX_NICS * 2 * RN_DW_PAIR_FINDINGS)
			goto bad;
		p->cells = calloc((size_t)RN_MAX(p->na * p->nb, 1), sizeof(*p->cells));
		p->finds = calloc((size_t)RN_MAX(p->nfind, 1), sizeof(*p->finds));
		if (!p->cells || !p->finds) {
			rn_sweep_pair_free(p);
			return -ENOMEM;
		}
		for (c = 0; c < p->na * p->nb; c++) {
			struct rn_sweep_cell *e = &p->cells[c];
			const uint8_t *u = rn_rb_take(&b, 8);

			if (!u)
				goto bad;
			e->a_cause = u[0];
			e->a_sev = u[1];
			e->b_cause = u[2];
			e->b_sev = u[3];
			e->a_checked = u[4];
			e->b_checked = u[5];
			e->rdma = u[6];
			e->diag = u[7];
			e->rdma_us = rn_rb_u32(&b);
		}
		for (c = 0; c < p->nfind && !b.err; c++) {
			p->finds[c].i = (int16_t)rn_rb_u16(&b);
			p->finds[c].j = (int16_t)rn_rb_u16(&b);
			p->finds[c].by = (int16_t)rn_rb_u16(&b);
			rn_dw_get_finding(&b, &p->finds[c].f);
		}
		if (b.err)
			goto bad;
		k = rn_sweep_pair_index(s->n, p->a, p->b);
		rn_sweep_pair_free(s->pairs[k]);
		s->pairs[k] = p;
		continue;
bad:
		rn_sweep_pair_free(p);
		return -EBADMSG;
	}
	return 0;
}

/* A rank whose partners all said it did not answer: no point waiting for it. */
static int declared_hung(const struct rn_sweep *s, int h)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int said = 0;

	for (k = 0; k < np; k++) {
		const struct rn_sweep_pair *p = s->pairs[k];

		if (p && p->b == h && p->status)
			said++;
	}
	return said > 0;
}

static void collect(struct ctx *x, struct rn_sweep *s, double deadline)
{
	int h, got = 1, waiting;

	s->hosts[0].results = 1;
	for (h = 0; h < x->nmine; h++) {
		long k = rn_sweep_pair_index(s->n, x->mine[h]->a, x->mine[h]->b);

		s->pairs[k] = x->mine[h];
		x->mine[h] = NULL;
	}
	while (got < x->n) {
		void *buf = NULL;
		int len = 0, src = -1;

		/* Stop early once every rank still out is one its partners found dead. */
		for (h = 1, waiting = 0; h < x->n; h++)
			waiting += !s->hosts[h].results && !declared_hung(s, h);
		if (!waiting)
			break;
		if (recv_any_by(&buf, &len, MPI_ANY_SOURCE, TAG_FINAL, RN_MIN(deadline, rn_doctor_now_ms() + 1000), &src)) {
			if (rn_doctor_now_ms() > deadline)
				break;
			continue;
		}
		if (src > 0 && src < x->n && !s->hosts[src].results) {
			if (unpack_pairs(s, src, buf, len))
				fprintf(stderr, "roce-doctor-mpi: malformed results from %s\n", x->names[src]);
			s->hosts[src].results = 1;
			got++;
		}
		free(buf);
	}
}

struct json_args {
	const struct rn_sweep *s;
	int rc;
};

static void json_fill(FILE *f, const void *arg)
{
	const struct json_args *a = arg;

	rn_sweep_json(f, a->s, a->rc);
}

/* The JSON report into @path, whole or not at all. */
static int write_json(const char *path, const struct rn_sweep *s, int rc)
{
	struct json_args a = { s, rc };

	return rn_doctor_write_file(path, json_fill, &a);
}

/*
 * Fault injection for the tests: RN_SWEEP_TEST_HANG=<rank>:facts|rounds makes that rank
 * stop answering (sleep until killed) before its host check or before the rounds, as a
 * host stuck in the kernel would.
 */
static void test_hang(int rank, const char *phase)
{
	const char *e = getenv("RN_SWEEP_TEST_HANG"), *c = e ? strchr(e, ':') : NULL;

	if (!c || atoi(e) != rank || strcmp(c + 1, phase))
		return;
	fprintf(stderr, "roce-doctor-mpi: rank %d hangs before its %s (RN_SWEEP_TEST_HANG)\n", rank,
		phase);
	for (;;)
		pause();
}

/* ---- main ------------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "svg", required_argument, NULL, 's' },
		{ "json-file", required_argument, NULL, 'J' },
		{ "pair-timeout", required_argument, NULL, 'T' },
		{ "netdev", required_argument, NULL, 'n' },
		{ "no-rdma", no_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct rn_doctor *d = calloc(1, sizeof(*d));
	struct ctx x = { 0 };
	struct rn_sweep s = { 0 };
	const char *svg = NULL, *json_file = NULL;
	double t0, tn, t1, t2, r0;
	int c, rc = RN_DOCTOR_ERROR, r, gather_err = 0, quit = -1;
	char *end;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &x.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &x.n);
	t0 = rn_doctor_now_ms();
	if (!d) {
		fprintf(stderr, "roce-doctor-mpi: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, RN_DOCTOR_ERROR);
	}
	x.d = d;
	x.pair_timeout_s = 60;
	d->out = stdout;
	d->port = RN_DOCTOR_PORT;
	d->timeout_s = -1;
	opterr = 0;
	/* Every rank parses the same arguments, so all agree whether to stop. */
	while (quit < 0 && (c = getopt_long(argc, argv, ":js:J:T:n:vhV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			d->json = 1;
			break;
		case 's':
			svg = optarg;
			break;
		case 'J':
			json_file = optarg;
			break;
		case 'T':
			errno = 0;
			x.pair_timeout_s = (int)strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || x.pair_timeout_s < 1 ||
			    x.pair_timeout_s > 3600) {
				die_usage(x.rank, "--pair-timeout: not a number of seconds in 1..3600:", optarg);
				quit = RN_DOCTOR_ERROR;
			}
			break;
		case 'n':
			d->netdevs = optarg;
			break;
		case 'R':
			d->no_rdma = 1;
			break;
		case 'v':
			d->verbose++;
			break;
		case 'h':
			if (!x.rank)
				usage();
			quit = RN_DOCTOR_OK;
			break;
		case 'V':
			if (!x.rank)
				printf("roce-doctor-mpi %s (nccl-net-roce)\n", RN_DOCTOR_VERSION);
			quit = RN_DOCTOR_OK;
			break;
		case ':':
			die_usage(x.rank, "this option needs a value:", argv[optind - 1]);
			quit = RN_DOCTOR_ERROR;
			break;
		default:
			die_usage(x.rank, "unknown option", argv[optind - 1]);
			quit = RN_DOCTOR_ERROR;
			break;
		}
	}
	if (quit < 0 && optind < argc) {
		die_usage(x.rank, "unexpected argument", argv[optind]);
		quit = RN_DOCTOR_ERROR;
	}
	if (quit >= 0) {
		free(d);
		MPI_Finalize();
		return x.rank ? 0 : quit;
	}

	d->bad_env = rn_config_load(&d->cfg);
	if (gethostname(d->hostname, sizeof(d->hostname) - 1))
		snprintf(d->hostname, sizeof(d->hostname), "rank%d", x.rank);
	rn_doctor_log_init(d->verbose);
	x.names = calloc((size_t)x.n, sizeof(*x.names));
	x.inv = calloc((size_t)x.n, sizeof(*x.inv));
	x.mine = calloc((size_t)x.n, sizeof(*x.mine));
	if (!x.names || !x.inv || !x.mine || (!x.rank && rn_sweep_init(&s, x.n))) {
		fprintf(stderr, "roce-doctor-mpi: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, RN_DOCTOR_ERROR);
	}
	/* Names first, while nothing can have hung yet: from here on a host is named. */
	MPI_Allgather(d->hostname, 64, MPI_CHAR, x.names, 64, MPI_CHAR, MPI_COMM_WORLD);
	tn = rn_doctor_now_ms();     /* every rank is up: the launch is behind us */
	for (r = 0; r < x.n; r++) {
		x.names[r][63] = '\0';
		if (!x.rank)
			snprintf(s.hosts[r].name, sizeof(s.hosts[r].name), "%s", x.names[r]);
	}

	test_hang(x.rank, "facts");
	gather_err = d->netdevs ? rn_doctor_set_netdevs(d, d->netdevs) : 0;
	if (!gather_err)
		gather_err = rn_doctor_gather(d);
	if (gather_err)
		fprintf(stderr, "roce-doctor-mpi: %s: cannot read this host's facts\n", d->hostname);
	if (exchange_facts(&x, x.rank ? NULL : &s, gather_err, d->gather_ms)) {
		if (x.rank) {
			fprintf(stderr, "roce-doctor-mpi: %s: the facts exchange did not complete\n",
				d->hostname);
			MPI_Abort(MPI_COMM_WORLD, RN_DOCTOR_ERROR);
		}
		s.aborted = 1;
		s.pair_timeout_s = x.pair_timeout_s;
		s.startup_ms = tn - t0;
		s.facts_ms = rn_doctor_now_ms() - tn;
		s.total_ms = rn_doctor_now_ms() - t0;
		if (d->json)
			rn_sweep_json(stdout, &s, RN_DOCTOR_ERROR);
		else
			rn_sweep_print(stdout, &s, d->verbose);
		fflush(stdout);
		fflush(stderr);
		MPI_Abort(MPI_COMM_WORLD, RN_DOCTOR_ERROR);
	}
	t1 = rn_doctor_now_ms();

	test_hang(x.rank, "rounds");
	/*
	 * Round r ends --pair-timeout after round r-1's end, on every rank's clock (all left
	 * the facts exchange together): a rank kept waiting by a hung partner starts the next
	 * round with everyone else instead of making its next partner wait in turn.
	 */
	for (r = 0; r < rn_sweep_rounds(x.n); r++) {
		int p = rn_sweep_partner(x.n, r, x.rank);
		double round_end = t1 + (r + 1) * x.pair_timeout_s * 1000.0;

		r0 = rn_doctor_now_ms();
		if (p < 0)
			continue;
		if (x.rank < p) {
			struct rn_sweep_pair *pr = pair_a(&x, p, r, round_end);

			if (pr)
				x.mine[x.nmine++] = pr;
		} else {
			pair_b(&x, p, r, round_end);
		}
		x.round_max_ms = RN_MAX(x.round_max_ms, rn_doctor_now_ms() - r0);
	}
	t2 = rn_doctor_now_ms();
	rn_probe_release();

	if (x.rank) {
		int len = 0;
		char *buf = pack_pairs(&x, &len);

		/* rank 0 may still be in its last round: wait as long as a round */
		int bye = 1;

		if (buf)
			send_by(buf, len, 0, TAG_FINAL,
				rn_doctor_now_ms() + (x.pair_timeout_s + 10) * 1000.0 * 2);
		free(buf);
		/*
		 * Finalize only when rank 0 says every rank made it: MPI_Finalize waits for all
		 * ranks, and an abort while ranks sit in it can leave mpirun hanging.
		 */
		if (recv_by(&bye, sizeof(bye), 0, TAG_BYE, rn_doctor_now_ms() +
			    x.pair_timeout_s * 1000.0 * (rn_sweep_rounds(x.n) + 2) + 10000))
			MPI_Abort(MPI_COMM_WORLD, RN_DOCTOR_ERROR);
		if (bye)
			for (;;)
				pause();        /* rank 0's MPI_Abort ends us */
		rc = RN_DOCTOR_OK;
	} else {
		/* Every rank's rounds end by the same deadline (see above). */
		collect(&x, &s, t1 + x.pair_timeout_s * 1000.0 * rn_sweep_rounds(x.n) + 10000);
		s.pair_timeout_s = x.pair_timeout_s;
		s.no_rdma = d->no_rdma;
		s.startup_ms = tn - t0;
		s.facts_ms = t1 - tn;
		s.rounds_ms = t2 - t1;
		s.round_max_ms = x.round_max_ms;
		s.total_ms = rn_doctor_now_ms() - t0;
		for (r = 0; r < x.n; r++) {
			s.hosts[r].inv = x.inv[r];
			x.inv[r] = NULL;
		}
		rn_sweep_infer(&s);
		rc = rn_sweep_exit(&s);
		if (d->json)
			rn_sweep_json(stdout, &s, rc);
		else
			rn_sweep_print(stdout, &s, d->verbose);
		if (json_file) {
			int ret = write_json(json_file, &s, rc);

			if (ret) {
				fprintf(stderr, "roce-doctor-mpi: --json-file %s: %s\n", json_file, strerror(-ret));
				rc = RN_DOCTOR_ERROR;
			}
		}
		if (svg) {
			int ret = rn_sweep_svg(svg, &s);

			if (ret) {
				fprintf(stderr, "roce-doctor-mpi: --svg %s: %s\n", svg, strerror(-ret));
				rc = RN_DOCTOR_ERROR;
			}
		}
		fflush(stdout);
		{
			int bye = 0;

			for (r = 0; r < x.n; r++)
				bye |= !s.hosts[r].results;
			for (r = 1; r < x.n; r++)
				if (s.hosts[r].results)
					send_by(&bye, sizeof(bye), r, TAG_BYE, rn_doctor_now_ms() + 5000);
			if (bye) {
				/* A hung rank can never finalize: end the job, with our status. */
				fflush(stderr);
				MPI_Abort(MPI_COMM_WORLD, RN_DOCTOR_ERROR);
			}
		}
		rn_sweep_free(&s);
	}
	for (r = 0; r < x.n; r++) {
		if (x.inv[r])
			rn_dw_inv_clear(x.inv[r]);
		free(x.inv[r]);
		rn_sweep_pair_free(x.mine[r]);
	}
	free(x.inv);
	free(x.mine);
	free(x.names);
	rn_doctor_release(d);
	free(d);
	MPI_Finalize();
	return rc;
}
