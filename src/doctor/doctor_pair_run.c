// SPDX-License-Identifier: MIT
/*
 * The pair protocol's runner (doctor_pair.h): the steps of a host pair in their order,
 * for A (who leads) and B (who answers), over any transport. peer and the sweep's lower
 * rank run A, serve and the higher rank B; each gives its transport and makes its own
 * report of the result.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_pair.h"
#include "rn_codec.h"
#include "rn_net.h"

/* ---- the RDMA probe of one NIC pair, both ends ------------------------------------- */

/* The next message, which must be @type. */
static int io_recv_type(struct rn_pair_io *io, uint16_t type, struct rn_dw_msg *m, char *why,
			size_t len)
{
	int ret = io->recv(io, type, m, why, len);

	if (!ret && m->type != type) {
		snprintf(why, len, "unexpected message type %u (wanted %u)", m->type, type);
		rn_dw_msg_free(m);
		ret = -EBADMSG;
	}
	return ret;
}

/*
 * Client end: ask the other side to listen on its NIC @j (PROBE_REQ, PROBE_HANDLE), ping
 * from our NIC @i, take its side (PROBE_RESULT) and, after a failure, the plugin's
 * diagnosis into @p. 0 (@p says how it went) or -errno when the transport failed (@why).
 */
static int probe(struct rn_doctor *d, struct rn_pair_io *io, const struct rn_dw_inv *remote, int i,
		 int j, int timeout_ms, struct rn_pair_probe *p, char *why, size_t len)
{
	uint8_t req[4] = { (uint8_t)j, (uint8_t)i, p->bw.want ? RN_DW_PROBE_BW : 0, 0 };
	struct rn_probe_ctr_snap *ctr = NULL;
	struct rn_dw_msg m;
	double t0 = rn_doctor_now_ms();
	int ret;

	p->tried = 1;
	if (p->bw.want)
		timeout_ms += RN_BW_CAP_MS + 2000;
	ret = io->send(io, RN_DW_PROBE_REQ, req, sizeof(req));
	if (ret)
		snprintf(why, len, "cannot send: %s", strerror(-ret));
	else
		ret = io_recv_type(io, RN_DW_PROBE_HANDLE, &m, why, len);
	if (ret)
		return ret;
	if (m.len != 4 + RN_HANDLE_SIZE) {
		rn_dw_msg_free(&m);
		snprintf(why, len, "malformed probe handle");
		return -EBADMSG;
	}
	if (rn_get_be32(m.payload)) {
		p->peer_ret = -(int)rn_get_be32(m.payload);
		p->ret = 0;
		snprintf(p->why, sizeof(p->why), "no handle");
	} else {
		/* our NIC's counters around the ping: what they did, should it fail */
		ctr = rn_probe_ctr_begin(&d->nics[i].nic);
		p->ret = rn_probe_client(d, i, m.payload + 4, timeout_ms, &p->bw, p->why,
					 sizeof(p->why));
	}
	rn_dw_msg_free(&m);
	ret = io_recv_type(io, RN_DW_PROBE_RESULT, &m, why, len);
	if (ret)
		goto out;
	if (m.len < 4 || m.len - 4 >= sizeof(p->peer_why) ||
	    memchr(m.payload + 4, '\0', m.len - 4)) {
		rn_dw_msg_free(&m);
		snprintf(why, len, "malformed probe result");
		ret = -EBADMSG;
		goto out;
	}
	if (!p->peer_ret)
		p->peer_ret = -(int)rn_get_be32(m.payload);
	memcpy(p->peer_why, m.payload + 4, m.len - 4); /* whole: it fits, checked above */
	p->peer_why[m.len - 4] = '\0';
	rn_dw_msg_free(&m);
	p->ms = rn_doctor_now_ms() - t0;
	/* status 12 (retry exceeded) comes back as ETIMEDOUT from either side's probe */
	p->timeout = p->ret == -ETIMEDOUT || p->peer_ret == -ETIMEDOUT;
	if (p->ret || p->peer_ret) {
		struct rn_peer_facts pf;

		/* The plugin's own diagnosis after a failed connection. */
		rn_dw_peer_facts(remote, j, &pf);
		if (rn_diagnose_peer(&d->nics[i].nic, &pf, &p->diag))
			memset(&p->diag, 0, sizeof(p->diag));
		rn_probe_ctr_end(ctr, &d->nics[i].nic, &pf, &p->ctr);
		ctr = NULL;
	}
out:
	rn_probe_ctr_end(ctr, NULL, NULL, NULL);
	return ret;
}

/*
 * Server end of PROBE_REQ @m (4 bytes, its NICs checked by the caller): listen, answer
 * the handle, accept the ping, send the result. Returns the probe's 0/-errno; *@io_err
 * gets the transport's (nonzero: stop the session).
 */
static int answer(struct rn_doctor *d, struct rn_pair_io *io, const struct rn_dw_msg *m,
		  int timeout_ms, int *io_err)
{
	uint8_t h[4 + RN_HANDLE_SIZE] = { 0 }, res[4 + RN_DW_WHY_MAX] = { 0 };
	struct rn_probe_srv srv = { 0 };
	char why[RN_DW_WHY_MAX] = "";
	int nic = m->payload[0], bw = m->payload[2] & RN_DW_PROBE_BW, ret, n;

	if (nic >= d->nnics || !rn_probe_available(d, nic)) {
		snprintf(why, sizeof(why), "%s has no usable RDMA port here",
			 nic < d->nnics ? d->nics[nic].nic.netdev : "this NIC");
		ret = -ENODEV;
	} else {
		ret = rn_probe_listen(d, nic, h + 4, &srv, why, sizeof(why));
	}
	rn_put_be32(h, (uint32_t)-ret);
	*io_err = io->send(io, RN_DW_PROBE_HANDLE, h, sizeof(h));
	if (*io_err || ret) {
		rn_probe_srv_close(&srv);
	} else {
		ret = rn_probe_accept_ping(&srv, timeout_ms + (bw ? RN_BW_CAP_MS + 2000 : 0), bw,
					   why, sizeof(why));
	}
	if (*io_err)
		return ret;
	rn_put_be32(res, (uint32_t)-ret);
	n = ret ? (int)strnlen(why, RN_DW_WHY_MAX - 1) : 0;
	memcpy(res + 4, why, (size_t)n);
	*io_err = io->send(io, RN_DW_PROBE_RESULT, res, 4 + (size_t)n);
	return ret;
}

/* ---- the runner ----------------------------------------------------------------------- */

static int stopped(struct rn_pair_run *r, enum rn_pair_stop stop, int ret)
{
	r->stop = stop;
	r->ret = ret;
	if (stop == RN_PAIR_SEND)
		snprintf(r->why, sizeof(r->why), "cannot send: %s", strerror(-ret));
	return ret;
}

/* A message its encoder made (@ret: the encoder's 0/-errno), to the other side. */
static int send_encoded(struct rn_pair_run *r, uint16_t type, uint8_t *enc, size_t len, int ret)
{
	if (!ret)
		ret = r->io->send(r->io, type, enc, len);
	free(enc);
	return ret ? stopped(r, RN_PAIR_SEND, ret) : 0;
}

static int send_inv(struct rn_pair_run *r)
{
	uint8_t *enc = NULL;
	size_t len = 0;
	int ret = rn_dw_encode_inv(r->local, &enc, &len);

	return send_encoded(r, RN_DW_INV, enc, len, ret);
}

static int send_checks(struct rn_pair_run *r)
{
	uint8_t *enc = NULL;
	size_t len = 0;
	int ret = rn_dw_encode_checks(&r->ours, &enc, &len);

	return send_encoded(r, RN_DW_CHECKS, enc, len, ret);
}

/* The other side's checks, in the peer protocol's encoding: findings whole, never pointers. */
static int recv_checks(struct rn_pair_run *r)
{
	struct rn_dw_msg m;
	int ret = r->io->recv(r->io, RN_DW_CHECKS, &m, r->why, sizeof(r->why));

	if (ret)
		return stopped(r, RN_PAIR_RECV, ret);
	/* a message of another type too: the decoder says what it expected */
	ret = rn_dw_decode_checks(&m, r->remote, r->local, &r->theirs, r->why, sizeof(r->why));
	rn_dw_msg_free(&m);
	return ret ? stopped(r, RN_PAIR_BAD, ret) : 0;
}

static int remote_rdma(const struct rn_dw_nic *n)
{
	return n->ibdev[0] && n->gid_index >= 0 && n->link_up;
}

/* A: one probe per NIC pair both ends can ping (of one address family), in order. */
static int probe_all(struct rn_pair_run *r)
{
	struct rn_doctor *d = r->d;
	int i, j, ret;

	for (j = 0; j < r->remote->nnics; j++)
		r->remote_rdma |= remote_rdma(&r->remote->nics[j]);
	for (i = 0; i < d->nnics && !d->no_rdma && r->probes; i++) {
		for (j = 0; j < r->remote->nnics; j++) {
			struct rn_pair_probe *p = &r->probes[i][j];
			int ms;

			if (r->only && !r->only[i * RN_DOCTOR_MAX_NICS + j])
				continue;
			if (d->nics[i].nic.ip.family != r->remote->nics[j].ip.family)
				continue;
			r->pairs++;
			if (!rn_probe_available(d, i))
				continue;
			r->local_rdma = 1;
			if (!remote_rdma(&r->remote->nics[j]))
				continue;
			ms = r->io->probe_ms(r->io);
			if (ms < 0 || r->cut) {
				r->cut++;
				continue;
			}
			p->bw.want = !!(r->flags & RN_PAIR_BW);
			ret = probe(d, r->io, r->remote, i, j, ms, p, r->why, sizeof(r->why));
			if (ret) {
				r->at_i = i;
				r->at_j = j;
				return stopped(r, RN_PAIR_RECV, ret);
			}
			r->probed++;
		}
	}
	return 0;
}

/*
 * B: answer PROBE_REQ after PROBE_REQ until DONE, each NIC pair once (a client that asks
 * again is cut: it would hold the one session thread of serve as long as it liked).
 */
static int answer_all(struct rn_pair_run *r)
{
	struct rn_doctor *d = r->d;
	struct rn_dw_msg m;
	int ret, io_err;

	for (;;) {
		ret = r->io->recv(r->io, RN_DW_PROBE_REQ, &m, r->why, sizeof(r->why));
		if (ret)
			return stopped(r, RN_PAIR_RECV, ret);
		if (m.type == RN_DW_DONE) {
			rn_dw_msg_free(&m);
			return 0;
		}
		if (m.type != RN_DW_PROBE_REQ || m.len != 4 || m.payload[0] >= d->nnics ||
		    m.payload[1] >= r->remote->nnics) {
			snprintf(r->why, sizeof(r->why), "unexpected message type %u", m.type);
			rn_dw_msg_free(&m);
			return stopped(r, RN_PAIR_BAD, -EBADMSG);
		}
		r->at_i = m.payload[0];
		r->at_j = m.payload[1];
		if (r->asked[r->at_i][r->at_j]) {
			rn_dw_msg_free(&m);
			return stopped(r, RN_PAIR_TWICE, -EALREADY);
		}
		r->asked[r->at_i][r->at_j] = 1;
		r->answered++;
		r->failed += answer(d, r->io, &m, r->io->probe_ms(r->io), &io_err) != 0;
		rn_dw_msg_free(&m);
		if (io_err)
			return stopped(r, RN_PAIR_SEND, io_err);
	}
}

/* ---- the steps in their order, one table per end ------------------------------------ */

/* A: ours, then B's inventory (the one message whose answer may wait in serve's queue). */
static int a_inv(struct rn_pair_run *r)
{
	struct rn_dw_msg m;
	int ret = send_inv(r);

	if (ret)
		return ret;
	ret = r->io->recv(r->io, RN_DW_INV, &m, r->why, sizeof(r->why));
	if (ret)
		return stopped(r, RN_PAIR_RECV, ret);
	ret = rn_dw_decode_inv(&m, r->remote, r->why, sizeof(r->why));
	rn_dw_msg_free(&m);
	return ret ? stopped(r, RN_PAIR_BAD, ret) : 0;
}

static int a_checks(struct rn_pair_run *r)
{
	rn_doctor_pair_checks(r->d, r->remote, NULL, &r->ours, &r->check_ms);
	return send_checks(r);
}

/* B's checks, then our ARP probes: after both sides' neighbour checks, as its requests
 * rewrite the other's entries. */
static int a_b_checks(struct rn_pair_run *r)
{
	int ret = recv_checks(r);

	if (!ret)
		r->arp_probed = rn_doctor_arp_unique(r->d, r->remote, NULL, &r->ours);
	return ret;
}

static int a_probes(struct rn_pair_run *r)
{
	int ret = probe_all(r);

	if (!ret) /* B needs no answer to it: the results are ours already */
		r->io->send(r->io, RN_DW_DONE, NULL, 0);
	return ret;
}

static int b_checks(struct rn_pair_run *r)
{
	rn_doctor_pair_checks(r->d, r->remote, r->scope, &r->ours, &r->check_ms);
	r->arp_probed = rn_doctor_arp_unique(r->d, r->remote, r->scope, &r->ours);
	return send_checks(r);
}

typedef int (*pair_step)(struct rn_pair_run *r);

static const pair_step a_steps[RN_PAIR_STEP_END] = {
	[RN_PAIR_STEP_INV] = a_inv,
	[RN_PAIR_STEP_A_CHECKS] = a_checks,
	[RN_PAIR_STEP_B_CHECKS] = a_b_checks,
	[RN_PAIR_STEP_PROBES] = a_probes,
};

static const pair_step b_steps[RN_PAIR_STEP_END] = {
	[RN_PAIR_STEP_INV] = send_inv, /* A's came first: it opened the session */
	[RN_PAIR_STEP_A_CHECKS] = recv_checks,
	[RN_PAIR_STEP_B_CHECKS] = b_checks,
	[RN_PAIR_STEP_PROBES] = answer_all,
};

/* The steps @r's flags take, in order, until one stops. */
static int run(struct rn_pair_run *r, const pair_step *steps)
{
	int k, ret;

	for (k = RN_PAIR_STEP_INV; k < RN_PAIR_STEP_END; k++) {
		r->step = (enum rn_pair_step)k;
		if (k == RN_PAIR_STEP_INV && !(r->flags & RN_PAIR_INV))
			continue;
		if ((k == RN_PAIR_STEP_A_CHECKS || k == RN_PAIR_STEP_B_CHECKS) &&
		    !(r->flags & RN_PAIR_CHECKS))
			continue;
		ret = steps[k](r);
		if (ret)
			return ret;
	}
	r->step = RN_PAIR_STEP_END;
	return 0;
}

int rn_pair_run_a(struct rn_pair_run *r)
{
	return run(r, a_steps);
}

int rn_pair_run_b(struct rn_pair_run *r)
{
	return run(r, b_steps);
}

void rn_pair_run_clear(struct rn_pair_run *r)
{
	int i, j;

	rn_dw_checks_clear(&r->ours);
	rn_dw_checks_clear(&r->theirs);
	for (i = 0; r->probes && i < RN_DOCTOR_MAX_NICS; i++)
		for (j = 0; j < RN_DOCTOR_MAX_NICS; j++) {
			rn_finding_clear(&r->probes[i][j].diag);
			rn_probe_ctr_clear(&r->probes[i][j].ctr);
		}
}
