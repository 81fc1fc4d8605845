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

#include "doctor_pair.h"
#include "doctor_sweep.h"
#include "rn_codec.h"
#include "rn_net.h"

#define TAG_READY 1
#define TAG_FINAL 2
#define TAG_BYE 3    /* rank 0 -> all: 0 finalize, 1 the job is being aborted */
#define TAG_PAIR 100 /* + round * 8 + step */
#define PROBE_TIMEOUT_MS 6000
#define WHY_LEN 160

enum { STEP_CHECKS = 1, STEP_REQ, STEP_HANDLE, STEP_RESULT };

/*
 * Every message goes through the byte codec (rn_codec.h), never a struct's bytes: ranks
 * may be different builds or machines. A pair's steps are the peer protocol's messages
 * (the pair runner, doctor_pair.h, over mpi_io below: be16 type, then the payload), both
 * sides' CHECKS included (up to 0.3.0 the lower rank sent a GO word instead of its own:
 * a rank of such a build and one of this never meet, and the sweep names the pair as
 * one that did not answer; the fleet facts name the mixed versions). FACTS: be32
 * gather_err, be64 gather_ms (IEEE 754 bits), be32 length of the host facts that follow (rn_doctor_facts_put: versions, drivers, sysctls), then the
 * peer protocol's INV payload. Pair results (PAIRS), BYE and the second pass below.
 */

struct ctx {
	struct rn_doctor *d;
	int rank, n;
	int pair_timeout_s;
	double min_gbps;              /* --min-gbps: 0 none */
	char (*names)[64];
	struct rn_dw_inv **inv;       /* every host's facts (NULL: not received) */
	struct rn_pair_result **mine; /* pairs this rank led ("a"), one per round */
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
	       "the hosts and NICs that differ from the fleet (plugin, kernel, rdma-core, NCCL,\n"
	       "driver, firmware, MTU, ARP sysctls), the bad (host, NIC, host, NIC) pairs with\n"
	       "cause ids and fixes, and a heat map.\n"
	       "\n"
	       "Options:\n"
	       "  -j, --json            machine-readable report (schema roce-doctor-sweep/1)\n"
	       "  -s, --svg FILE        also draw the heat map (hosts x NICs) as SVG\n"
	       "  -J, --json-file FILE  also write the JSON report to FILE (text stays on stdout)\n"
	       "  -T, --pair-timeout S  bound of one host pair's checks (default 60); a host that\n"
	       "                        does not answer in time is named and left out\n"
	       "  -n, --netdev LIST     check these netdevs on every host (as roce-doctor)\n"
	       "      --no-rdma         skip the RDMA RC ping\n"
	       "  -G, --min-gbps X      after each good ping, 32 MiB through the plugin's transport:\n"
	       "                        a NIC pair under X Gbit/s is a finding; a second pass\n"
	       "                        measures each slow end alone against a fast NIC and names\n"
	       "                        the bad one\n"
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
 * The pair runner's transport between two ranks (rn_pair_io): a tag per step of the
 * round, the message's type in front (DONE travels on the request's tag, in order).
 */
struct mpi_io {
	struct rn_pair_io io; /* first: the engine's view */
	int peer, round;
	double deadline;
	const char *name; /* the peer's host */
};

static int step_of(uint16_t type)
{
	switch (type) {
	case RN_DW_CHECKS:
		return STEP_CHECKS;
	case RN_DW_PROBE_HANDLE:
		return STEP_HANDLE;
	case RN_DW_PROBE_RESULT:
		return STEP_RESULT;
	default:
		return STEP_REQ; /* PROBE_REQ, DONE */
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

/* A probe's wait, either end: PROBE_TIMEOUT_MS, at most the round's end, 100 ms at least. */
static int mio_probe_ms(struct rn_pair_io *io)
{
	struct mpi_io *x = (struct mpi_io *)io;

	return (int)RN_MAX(100.0,
			   RN_MIN((double)PROBE_TIMEOUT_MS, x->deadline - rn_doctor_now_ms()));
}

#define MPI_IO(x, peer, round, deadline) \
	{ { mio_send, mio_recv, mio_probe_ms }, (peer), (round), (deadline), (x)->names[peer] }

/* ---- one host pair --------------------------------------------------------------------- */

/* A run's probes, [ours][theirs], zeroed (what they own: rn_pair_run_clear). */
static struct rn_pair_probe (*probes_new(void))[RN_DOCTOR_MAX_NICS]
{
	return calloc(RN_DOCTOR_MAX_NICS, sizeof(struct rn_pair_probe[RN_DOCTOR_MAX_NICS]));
}

/* The run's result into the pair's record (rn_pair_result_run), and why it is partial. */
static void pair_record(struct ctx *x, struct rn_pair_result *p, struct rn_pair_run *r, int b,
			int round)
{
	if (r->step <= RN_PAIR_STEP_B_CHECKS && r->stop != RN_PAIR_BAD) {
		p->status = -ETIMEDOUT;
		snprintf(p->err, sizeof(p->err),
			 "%s did not answer in round %d (--pair-timeout %d s)", x->names[b],
			 round + 1, x->pair_timeout_s);
		return;
	}
	rn_pair_result_run(p, r, x->names[b]);
	if (r->step == RN_PAIR_STEP_B_CHECKS)
		snprintf(p->err, sizeof(p->err), "%s sent bad checks: %.127s", x->names[b], r->why);
	else if (p->status)
		snprintf(p->err, sizeof(p->err), "%s stopped answering during the RDMA probes",
			 x->names[b]);
}

/* The lower rank of a pair: the runner's A end; keeps the record. */
static struct rn_pair_result *pair_a(struct ctx *x, int b, int round, double deadline)
{
	struct mpi_io io = MPI_IO(x, b, round, deadline);
	double t0 = rn_doctor_now_ms();
	struct rn_pair_result *p = calloc(1, sizeof(*p));
	struct rn_pair_run *r = calloc(1, sizeof(*r));

	if (p && r && x->inv[b] && x->inv[x->rank]) {
		p->a = x->rank;
		p->b = b;
		p->na = x->d->nnics;
		p->nb = x->inv[b]->nnics;
		p->cells = calloc((size_t)RN_MAX(p->na * p->nb, 1), sizeof(*p->cells));
		r->probes = probes_new();
	}
	if (!p || !r || !p->cells || !r->probes) {
		if (r)
			free(r->probes);
		free(r);
		if (p)
			rn_pair_result_free(p);
		return NULL;
	}
	r->d = x->d;
	r->io = &io.io;
	r->flags = RN_PAIR_CHECKS | (x->min_gbps > 0 ? RN_PAIR_BW : 0);
	r->local = x->inv[x->rank];
	r->remote = x->inv[b];
	rn_pair_run_a(r);
	pair_record(x, p, r, b, round);
	p->ms = rn_doctor_now_ms() - t0;
	rn_pair_run_clear(r);
	free(r->probes);
	free(r);
	return p;
}

/*
 * The higher rank of a pair: the runner's B end, @flags RN_PAIR_CHECKS in a round, 0 in
 * the second pass (probes alone). A rank without its own facts answers with none.
 */
static void pair_b(struct ctx *x, int a, int round, double deadline, unsigned int flags)
{
	static const struct rn_dw_inv none;
	struct mpi_io io = MPI_IO(x, a, round, deadline);
	struct rn_pair_run *r = calloc(1, sizeof(*r));

	if (!r || !x->inv[a]) {
		free(r);
		return;
	}
	r->d = x->d;
	r->io = &io.io;
	r->flags = flags;
	r->local = x->inv[x->rank] ? x->inv[x->rank] : &none;
	r->remote = x->inv[a];
	if (rn_pair_run_b(r) && r->step == RN_PAIR_STEP_A_CHECKS && r->stop == RN_PAIR_RECV)
		fprintf(stderr, "roce-doctor-mpi: %s: %s did not start round %d in time\n",
			x->d->hostname, x->names[a], round + 1);
	rn_pair_run_clear(r);
	free(r);
}

/* ---- facts ----------------------------------------------------------------------------- */

/*
 * Every host's facts to every host (Allgather of sizes, then Allgatherv), each with a
 * deadline. Before that each rank tells rank 0 it is ready, so rank 0 can name a host
 * that hangs in its own check. Returns 0, or -ETIMEDOUT (rank 0 has marked who).
 */
/* This rank's FACTS: be32 gather_err, be64 gather_ms, be32 facts length, facts, INV. */
static int facts_pack(struct ctx *x, int gather_err, double gather_ms, struct rn_wbuf *mb)
{
	struct rn_dw_inv *inv = calloc(1, sizeof(*inv));
	struct rn_doctor_facts *hf = calloc(1, sizeof(*hf));
	struct rn_wbuf fb = { 0 };
	uint64_t ms_bits;
	uint8_t *enc = NULL;
	size_t elen = 0;
	int ret = -ENOMEM;

	if (!inv || !hf)
		goto out;
	if (!gather_err && rn_dw_inv_from_doctor(x->d, inv))
		goto out;
	snprintf(inv->host, sizeof(inv->host), "%s", x->names[x->rank]);
	/* the peer protocol's own encoding: findings travel whole, never as pointers */
	if (rn_dw_encode_inv(inv, &enc, &elen))
		goto out;
	rn_doctor_facts_read(x->d, hf);
	if (gather_err)
		hf->nnics = 0;                         /* as the inventory: no NIC read */
	rn_doctor_facts_put(&fb, hf);
	memcpy(&ms_bits, &gather_ms, sizeof(ms_bits)); /* the double's IEEE 754 bits */
	rn_wb_u32(mb, (uint32_t)gather_err);
	rn_wb_u64(mb, ms_bits);
	rn_wb_u32(mb, (uint32_t)fb.len);
	rn_wb_put(mb, fb.p, fb.len);
	rn_wb_put(mb, enc, elen);
	if (!fb.err && !mb->err && mb->len <= INT_MAX)
		ret = 0;
out:
	free(fb.p);
	free(hf);
	free(enc);
	if (inv)
		rn_dw_inv_clear(inv);
	free(inv);
	return ret;
}

/*
 * Rank 0: every rank's "ready" by @deadline, in *@flags (1 each that sent it). 0, or
 * -ETIMEDOUT with the ranks that did not named, -ENOMEM.
 */
static int ready_wait(struct ctx *x, double deadline, int **flags)
{
	MPI_Request *ready = calloc((size_t)x->n, sizeof(*ready));
	int h, ret = 0;

	*flags = calloc((size_t)x->n, sizeof(int));
	if (!ready || !*flags) {
		free(ready);
		return -ENOMEM;
	}
	for (h = 1; h < x->n; h++)
		MPI_Irecv(&(*flags)[h], 1, MPI_INT, h, TAG_READY, MPI_COMM_WORLD, &ready[h]);
	(*flags)[0] = 1;
	for (h = 1; h < x->n; h++)
		if (wait_req(&ready[h], deadline))
			(*flags)[h] = 0;
	for (h = 0; h < x->n; h++)
		if (!(*flags)[h]) {
			fprintf(stderr,
				"roce-doctor-mpi: %s (rank %d) did not finish its host check within %d s\n",
				x->names[h], h, x->pair_timeout_s);
			ret = -ETIMEDOUT;
		}
	free(ready);
	return ret;
}

/* Host @h's FACTS (@p, @len bytes) into x->inv[h] and, on rank 0 (@s), its facts. */
static void facts_unpack(struct ctx *x, struct rn_sweep *s, int h, const uint8_t *p, int len)
{
	struct rn_rbuf b = { p, (size_t)len, 0, 0 };
	struct rn_dw_inv *hv = calloc(1, sizeof(*hv));
	struct rn_doctor_facts *f = calloc(1, sizeof(*f));
	struct rn_dw_msg m = { RN_DW_INV, 0, NULL };
	char why[128];
	int32_t gerr = (int32_t)rn_rb_u32(&b);
	uint64_t ms_bits = rn_rb_u64(&b);
	uint32_t flen = rn_rb_u32(&b);
	double fms;

	if (hv && f && !b.err && flen <= b.len - b.off) {
		struct rn_rbuf fr = { b.p + b.off, flen, 0, 0 };

		b.off += flen;
		if (rn_doctor_facts_get(&fr, f) || fr.off != fr.len) {
			free(f);
			f = NULL; /* no facts to compare, the inventory still counts */
		}
	} else {
		b.err = -EBADMSG;
	}
	if (!hv || b.err)
		goto drop;
	m.len = (uint32_t)(b.len - b.off);
	m.payload = (uint8_t *)p + b.off;
	if (rn_dw_decode_inv(&m, hv, why, sizeof(why))) {
		rn_dw_inv_clear(hv);
		goto drop;
	}
	/* per NIC, in the inventory's order: a count that disagrees is not ours */
	if (f && f->nnics != hv->nnics) {
		free(f);
		f = NULL;
	}
	x->inv[h] = hv;
	if (!s) {
		free(f);
		return;
	}
	s->hosts[h].facts = 1;
	memcpy(&fms, &ms_bits, sizeof(fms));
	s->hosts[h].gather_err = gerr;
	s->hosts[h].gather_ms = fms;
	s->hosts[h].hf = f;
	return;
drop:
	free(hv);
	free(f);
}

static int exchange_facts(struct ctx *x, struct rn_sweep *s, int gather_err, double gather_ms)
{
	struct rn_wbuf mb = { 0 };
	MPI_Request req;
	double deadline = rn_doctor_now_ms() + x->pair_timeout_s * 1000.0;
	int *lens = calloc((size_t)x->n, sizeof(int)), *displs = calloc((size_t)x->n, sizeof(int));
	char *all = NULL;
	int len, total = 0, h, ret = -ENOMEM, one = 1, *flags = NULL;

	if (!lens || !displs || facts_pack(x, gather_err, gather_ms, &mb))
		goto out;
	len = (int)mb.len;
	if (x->rank)
		send_by(&one, sizeof(one), 0, TAG_READY, deadline);
	else if ((ret = ready_wait(x, deadline, &flags)))
		goto out;
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
	MPI_Iallgatherv(mb.p, len, MPI_BYTE, all, lens, displs, MPI_BYTE, MPI_COMM_WORLD, &req);
	if (wait_req(&req, deadline + (x->rank ? 2000.0 * x->pair_timeout_s : 0)))
		goto out;
	for (h = 0; h < x->n; h++)
		facts_unpack(x, s, h, (const uint8_t *)all + displs[h], lens[h]);
	ret = 0;
out:
	/* Rank 0 stopped at the ready messages: the hosts that sent one are not the culprits. */
	if (s && flags && ret == -ETIMEDOUT)
		for (h = 0; h < x->n; h++)
			s->hosts[h].facts = s->hosts[h].results = flags[h];
	free(flags);
	free(all);
	free(mb.p);
	free(lens);
	free(displs);
	return ret;
}

/* ---- results to rank 0 ----------------------------------------------------------------- */

/* The pairs a rank led, to rank 0: one RESULTS message (doctor_result.h). NULL: no memory. */
static char *pack_pairs(struct ctx *x, int *len)
{
	uint8_t *buf = NULL;
	size_t n = 0;

	if (rn_pair_results_encode(x->mine, x->nmine, &buf, &n) || n > INT_MAX) {
		free(buf);
		return NULL;
	}
	*len = (int)n;
	return (char *)buf;
}

/* A decoded pair into the sweep's table, replacing any there. */
static void take_pair(void *arg, struct rn_pair_result *p)
{
	struct rn_sweep *s = arg;
	long k = rn_sweep_pair_index(s->n, p->a, p->b);

	rn_pair_result_free(s->pairs[k]);
	s->pairs[k] = p;
}

/* A rank whose partners all said it did not answer: no point waiting for it. */
static int declared_hung(const struct rn_sweep *s, int h)
{
	long k, np = (long)s->n * (s->n - 1) / 2;
	int said = 0;

	for (k = 0; k < np; k++) {
		const struct rn_pair_result *p = s->pairs[k];

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
		if (recv_any_by(&buf, &len, MPI_ANY_SOURCE, TAG_FINAL,
				RN_MIN(deadline, rn_doctor_now_ms() + 1000), &src)) {
			if (rn_doctor_now_ms() > deadline)
				break;
			continue;
		}
		if (src > 0 && src < x->n && !s->hosts[src].results) {
			char why[RN_DW_WHY_MAX];

			if (rn_pair_results_decode(buf, (size_t)len, src, s->n, take_pair, s, why,
						   sizeof(why)))
				fprintf(stderr, "roce-doctor-mpi: malformed results from %s: %s\n",
					x->names[src], why);
			s->hosts[src].results = 1;
			got++;
		}
		free(buf);
	}
}

/* ---- the second bandwidth pass ---------------------------------------------------------- */

/*
 * BYE, rank 0 -> each rank that reported: be32 code (BYE_*); BYE_RECHECK carries the
 * second pass: be32 n, be32 rounds, n x (be16 h, i, w, k, round). After its part a rank
 * sends RECHECKS (TAG_FINAL2): be32 count, count x (be32 index, u8 bw, be32 mbps) for
 * the rechecks it led (the lower rank of each), and waits for the next BYE.
 */
enum { BYE_FINALIZE = 0, BYE_ABORT = 1, BYE_RECHECK = 2 };
#define TAG_FINAL2 4

static int send_bye(int to, int code, const struct rn_sweep *s, double deadline)
{
	struct rn_wbuf b = { 0 };
	int k, ret;

	rn_wb_u32(&b, (uint32_t)code);
	if (code == BYE_RECHECK) {
		rn_wb_u32(&b, (uint32_t)s->nrechecks);
		rn_wb_u32(&b, (uint32_t)s->recheck_rounds);
		for (k = 0; k < s->nrechecks; k++) {
			const struct rn_sweep_recheck *r = &s->rechecks[k];

			rn_wb_u16(&b, (unsigned int)r->h);
			rn_wb_u16(&b, (unsigned int)r->i);
			rn_wb_u16(&b, (unsigned int)r->w);
			rn_wb_u16(&b, (unsigned int)r->k);
			rn_wb_u16(&b, (unsigned int)r->round);
		}
	}
	ret = b.err ? b.err : send_by(b.p, (int)b.len, to, TAG_BYE, deadline);
	free(b.p);
	return ret;
}

/* The next BYE: its code, or -ETIMEDOUT / -EBADMSG; a second pass into *@plan (malloc'ed). */
static int recv_bye(struct ctx *x, double deadline, struct rn_sweep_recheck **plan, int *n,
		    int *rounds)
{
	void *buf = NULL;
	int len = 0, code, k;
	struct rn_rbuf b;

	*plan = NULL;
	*n = *rounds = 0;
	if (recv_any_by(&buf, &len, 0, TAG_BYE, deadline, NULL))
		return -ETIMEDOUT;
	b = (struct rn_rbuf){ buf, (size_t)len, 0, 0 };
	code = (int)rn_rb_u32(&b);
	if (code == BYE_RECHECK) {
		*n = (int)rn_rb_u32(&b);
		*rounds = (int)rn_rb_u32(&b);
		if (*n < 0 || *n > RN_SW_MAX_RECHECKS || *rounds < 0 || *rounds > *n)
			b.err = -EBADMSG;
		*plan = b.err ? NULL : calloc((size_t)RN_MAX(*n, 1), sizeof(**plan));
		for (k = 0; *plan && k < *n && !b.err; k++) {
			struct rn_sweep_recheck *r = &(*plan)[k];

			r->h = (int)rn_rb_u16(&b);
			r->i = (int)rn_rb_u16(&b);
			r->w = (int)rn_rb_u16(&b);
			r->k = (int)rn_rb_u16(&b);
			r->round = (int)rn_rb_u16(&b);
			if (r->h >= x->n || r->w >= x->n || r->h == r->w || r->round >= *rounds ||
			    r->i >= RN_DOCTOR_MAX_NICS || r->k >= RN_DOCTOR_MAX_NICS)
				b.err = -EBADMSG;
		}
		if (!*plan && !b.err)
			b.err = -ENOMEM;
	} else if (code != BYE_FINALIZE && code != BYE_ABORT) {
		b.err = -EBADMSG;
	}
	free(buf);
	if (b.err || b.off != b.len) {
		free(*plan);
		*plan = NULL;
		return -EBADMSG;
	}
	return code;
}

/* Plan entry @c as our NIC and @partner's, when it is this rank's with @partner in round @r. */
static int recheck_nics(const struct ctx *x, const struct rn_sweep_recheck *c, int partner, int r,
			int *mine, int *theirs)
{
	int me_h = c->h == x->rank;

	if (c->round != r || (c->h != partner && c->w != partner) ||
	    (c->h != x->rank && c->w != x->rank))
		return 0;
	*mine = me_h ? c->i : c->k;
	*theirs = me_h ? c->k : c->i;
	return *mine >= 0 && *mine < x->d->nnics && *theirs >= 0 &&
	       *theirs < x->inv[partner]->nnics;
}

/*
 * This rank leads round @r of the second pass with @partner: the runner's A end over
 * the plan's NIC pairs alone, each pinged and streamed once, into each plan entry.
 */
static void recheck_lead(struct ctx *x, struct rn_sweep_recheck *plan, int n, int r, int partner,
			 double end)
{
	struct mpi_io io = MPI_IO(x, partner, rn_sweep_rounds(x->n) + r, end);
	unsigned char *only = calloc(RN_DOCTOR_MAX_NICS * RN_DOCTOR_MAX_NICS, 1);
	struct rn_pair_run *run = calloc(1, sizeof(*run));
	int k, i, j;

	if (run)
		run->probes = probes_new();
	if (!only || !run || !run->probes)
		goto out;
	for (k = 0; k < n; k++)
		if (recheck_nics(x, &plan[k], partner, r, &i, &j))
			only[i * RN_DOCTOR_MAX_NICS + j] = 1;
	run->d = x->d;
	run->io = &io.io;
	run->flags = RN_PAIR_BW;
	run->local = x->inv[x->rank];
	run->remote = x->inv[partner];
	run->only = only;
	rn_pair_run_a(run);
	for (k = 0; k < n; k++) {
		struct rn_pair_cell c = { 0 };

		if (!recheck_nics(x, &plan[k], partner, r, &i, &j) || !run->probes[i][j].tried ||
		    (run->stop && run->at_i == i && run->at_j == j))
			continue; /* not pinged, or the partner stopped answering in it */
		rn_pair_cell_probe(&c, &run->probes[i][j]);
		/* a failed ping this time is a failed stream */
		plan[k].bw = c.rdma == RN_PAIR_RDMA_OK ? c.bw : RN_PAIR_BW_FAILED;
		if (c.rdma == RN_PAIR_RDMA_OK)
			plan[k].mbps = c.bw_mbps;
	}
out:
	if (run) {
		rn_pair_run_clear(run);
		free(run->probes);
	}
	free(run);
	free(only);
}

/*
 * This rank's part of the second pass, round by round as the tournament (round r ends at
 * @t0 + (r+1) x --pair-timeout): the lower rank of each host pair leads its rechecks and
 * records them in @plan, the other answers.
 */
static void run_rechecks(struct ctx *x, struct rn_sweep_recheck *plan, int n, int rounds, double t0)
{
	int r, k, partner;

	for (r = 0; r < rounds; r++) {
		double end = t0 + (r + 1) * x->pair_timeout_s * 1000.0;

		for (k = 0, partner = -1; k < n; k++)
			if (plan[k].round == r && (plan[k].h == x->rank || plan[k].w == x->rank))
				partner = plan[k].h == x->rank ? plan[k].w : plan[k].h;
		if (partner < 0 || !x->inv[partner] || !x->inv[x->rank])
			continue;
		if (x->rank > partner)
			pair_b(x, partner, rn_sweep_rounds(x->n) + r, end, 0);
		else
			recheck_lead(x, plan, n, r, partner, end);
	}
	rn_probe_release(x->d);
}

static void send_rechecks(struct ctx *x, const struct rn_sweep_recheck *plan, int n,
			  double deadline)
{
	struct rn_wbuf b = { 0 };
	int k, cnt = 0;

	for (k = 0; k < n; k++)
		cnt += plan[k].bw != RN_PAIR_BW_NONE && RN_MIN(plan[k].h, plan[k].w) == x->rank;
	rn_wb_u32(&b, (uint32_t)cnt);
	for (k = 0; k < n; k++) {
		if (plan[k].bw == RN_PAIR_BW_NONE || RN_MIN(plan[k].h, plan[k].w) != x->rank)
			continue;
		rn_wb_u32(&b, (uint32_t)k);
		rn_wb_u8(&b, (unsigned int)plan[k].bw);
		rn_wb_u32(&b, plan[k].mbps);
	}
	if (!b.err)
		send_by(b.p, (int)b.len, 0, TAG_FINAL2, deadline);
	free(b.p);
}

/* Rank 0: every other rank's RECHECKS by @deadline; a rank that sends none hung in it. */
static void collect_rechecks(struct ctx *x, struct rn_sweep *s, double deadline)
{
	char *got = calloc((size_t)x->n, 1);
	int left = x->n - 1, k;

	while (got && left > 0) {
		void *buf = NULL;
		int len = 0, src = -1;
		struct rn_rbuf b;
		uint32_t cnt;

		if (recv_any_by(&buf, &len, MPI_ANY_SOURCE, TAG_FINAL2, deadline, &src))
			break;
		b = (struct rn_rbuf){ buf, (size_t)len, 0, 0 };
		if (src > 0 && src < x->n && !got[src]) {
			got[src] = 1;
			left--;
			cnt = rn_rb_u32(&b);
			for (k = 0; k < (int)cnt && !b.err; k++) {
				uint32_t idx = rn_rb_u32(&b);
				unsigned int bw = rn_rb_u8(&b);
				uint32_t mbps = rn_rb_u32(&b);
				struct rn_sweep_recheck *r;

				if (b.err || idx >= (uint32_t)s->nrechecks ||
				    bw > RN_PAIR_BW_FAILED)
					break;
				r = &s->rechecks[idx];
				/* only the rank that led it says how it went */
				if (RN_MIN(r->h, r->w) != src)
					continue;
				r->bw = (int)bw;
				r->mbps = mbps;
			}
		}
		free(buf);
	}
	for (k = 1; got && k < x->n; k++)
		if (!got[k] && s->hosts[k].results) {
			fprintf(stderr,
				"roce-doctor-mpi: %s did not finish the second bandwidth pass\n",
				x->names[k]);
			s->hosts[k].results = 0; /* it cannot finalize: the job ends by MPI_Abort */
			snprintf(s->recheck_skipped, sizeof(s->recheck_skipped),
				 "%s did not answer in it (its rechecks are missing)", x->names[k]);
		}
	free(got);
}

/* Rank 0 after the rounds: which pairs are slow, the second pass, which end to blame. */
static void second_pass(struct ctx *x, struct rn_sweep *s)
{
	double t0;
	int r;

	rn_sweep_bw_judge(s);
	for (r = 0; r < x->n; r++)
		if (!s->hosts[r].results) {
			snprintf(s->recheck_skipped, sizeof(s->recheck_skipped),
				 "%s did not answer (named above)", s->hosts[r].name);
			goto blame;
		}
	if (rn_sweep_bw_plan(s)) {
		snprintf(s->recheck_skipped, sizeof(s->recheck_skipped), "out of memory");
		goto blame;
	}
	if (!s->nrechecks)
		goto blame;
	t0 = rn_doctor_now_ms();
	for (r = 1; r < x->n; r++)
		send_bye(r, BYE_RECHECK, s, rn_doctor_now_ms() + 5000);
	run_rechecks(x, s->rechecks, s->nrechecks, s->recheck_rounds, t0);
	collect_rechecks(x, s, t0 + (s->recheck_rounds + 1) * x->pair_timeout_s * 1000.0 + 10000);
	s->recheck_ms = rn_doctor_now_ms() - t0;
blame:
	rn_sweep_bw_blame(s);
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
		{ "min-gbps", required_argument, NULL, 'G' },
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
	while (quit < 0 && (c = getopt_long(argc, argv, ":js:J:T:n:G:vhV", opts, NULL)) != -1) {
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
				die_usage(x.rank,
					  "--pair-timeout: not a number of seconds in 1..3600:",
					  optarg);
				quit = RN_DOCTOR_ERROR;
			}
			break;
		case 'n':
			d->netdevs = optarg;
			break;
		case 'G':
			errno = 0;
			x.min_gbps = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(x.min_gbps > 0) ||
			    x.min_gbps > 100000) {
				die_usage(x.rank,
					  "--min-gbps: not a rate in Gbit/s above 0:", optarg);
				quit = RN_DOCTOR_ERROR;
			}
			d->probe_streams = 1;
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
	tn = rn_doctor_now_ms(); /* every rank is up: the launch is behind us */
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
		fprintf(stderr, "roce-doctor-mpi: %s: cannot read this host's facts\n",
			d->hostname);
	if (exchange_facts(&x, x.rank ? NULL : &s, gather_err, d->gather_ms)) {
		if (x.rank) {
			fprintf(stderr,
				"roce-doctor-mpi: %s: the facts exchange did not complete\n",
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
			struct rn_pair_result *pr = pair_a(&x, p, r, round_end);

			if (pr)
				x.mine[x.nmine++] = pr;
		} else {
			pair_b(&x, p, r, round_end, RN_PAIR_CHECKS);
		}
		x.round_max_ms = RN_MAX(x.round_max_ms, rn_doctor_now_ms() - r0);
	}
	t2 = rn_doctor_now_ms();
	rn_probe_release(d);

	if (x.rank) {
		int len = 0;
		char *buf = pack_pairs(&x, &len);

		/* rank 0 may still be in its last round: wait as long as a round */
		int bye = 1;

		double deadline = rn_doctor_now_ms() +
				  x.pair_timeout_s * 1000.0 * (rn_sweep_rounds(x.n) + 2) + 10000;

		if (buf)
			send_by(buf, len, 0, TAG_FINAL,
				rn_doctor_now_ms() + (x.pair_timeout_s + 10) * 1000.0 * 2);
		free(buf);
		/*
		 * Finalize only when rank 0 says every rank made it: MPI_Finalize waits for all
		 * ranks, and an abort while ranks sit in it can leave mpirun hanging. Rank 0
		 * may first send the second bandwidth pass.
		 */
		while (bye) {
			struct rn_sweep_recheck *plan;
			int n, rounds;
			double tp;

			bye = recv_bye(&x, deadline, &plan, &n, &rounds);
			if (bye < 0)
				MPI_Abort(MPI_COMM_WORLD, RN_DOCTOR_ERROR);
			if (bye == BYE_ABORT)
				for (;;)
					pause(); /* rank 0's MPI_Abort ends us */
			if (bye == BYE_RECHECK) {
				tp = rn_doctor_now_ms();
				run_rechecks(&x, plan, n, rounds, tp);
				send_rechecks(&x, plan, n,
					      tp + (rounds + 1) * x.pair_timeout_s * 1000.0 +
						      10000);
				deadline = tp + (rounds + 2) * x.pair_timeout_s * 1000.0 + 20000;
			}
			free(plan);
		}
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
		for (r = 0; r < x.n; r++)
			s.hosts[r].inv = x.inv[r];
		s.min_gbps = x.min_gbps;
		if (s.min_gbps > 0)
			second_pass(&x, &s);
		if (rn_sweep_consistency(&s))
			fprintf(stderr, "roce-doctor-mpi: out of memory comparing the hosts\n");
		s.total_ms = rn_doctor_now_ms() - t0;
		for (r = 0; r < x.n; r++)
			x.inv[r] = NULL; /* the report's now */
		rn_sweep_infer(&s);
		rc = rn_sweep_exit(&s);
		if (d->json)
			rn_sweep_json(stdout, &s, rc);
		else
			rn_sweep_print(stdout, &s, d->verbose);
		if (json_file) {
			int ret = write_json(json_file, &s, rc);

			if (ret) {
				fprintf(stderr, "roce-doctor-mpi: --json-file %s: %s\n", json_file,
					strerror(-ret));
				rc = RN_DOCTOR_ERROR;
			}
		}
		if (svg) {
			int ret = rn_sweep_svg(svg, &s);

			if (ret) {
				fprintf(stderr, "roce-doctor-mpi: --svg %s: %s\n", svg,
					strerror(-ret));
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
					send_bye(r, bye ? BYE_ABORT : BYE_FINALIZE, NULL,
						 rn_doctor_now_ms() + 5000);
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
		rn_pair_result_free(x.mine[r]);
	}
	free(x.inv);
	free(x.mine);
	free(x.names);
	rn_doctor_release(d);
	free(d);
	MPI_Finalize();
	return rc;
}
