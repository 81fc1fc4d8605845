// SPDX-License-Identifier: MIT
/*
 * Scripted rn_conn_check_* / rn_diagnose_peer (see double_conncheck.h). A double, not a
 * fake: only the tests that #include it get it (it installs itself as the transport's path
 * checks, rn_path_check, before main), so the route code's own tests keep the real functions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "double_conncheck.h"

#define FP_MAX 8

struct rn_conn_check {
	struct fake_path_script s;
	int polls;
};

static struct {
	char ibdev[64];
	struct fake_path_script s;
} scripts[FP_MAX];
static int nchecks, ndiags;
static struct rn_peer_facts last_peer;

void fake_path_set(const char *ibdev, const struct fake_path_script *s)
{
	int i;

	if (!ibdev) {
		memset(scripts, 0, sizeof(scripts));
		nchecks = ndiags = 0;
		return;
	}
	for (i = 0; i < FP_MAX; i++)
		if (!scripts[i].ibdev[0] || !strcmp(scripts[i].ibdev, ibdev))
			break;
	if (i == FP_MAX)
		return;
	strncpy(scripts[i].ibdev, ibdev, sizeof(scripts[i].ibdev) - 1);
	scripts[i].s = *s;
}

static const struct fake_path_script *script_of(const struct rn_nic *nic)
{
	static const struct fake_path_script pass;
	int i;

	for (i = 0; i < FP_MAX; i++)
		if (scripts[i].ibdev[0] && !strcmp(scripts[i].ibdev, nic->ibdev))
			return &scripts[i].s;
	return &pass;
}

int fake_path_checks(void)
{
	return nchecks;
}

int fake_path_diagnoses(void)
{
	return ndiags;
}

const struct rn_peer_facts *fake_path_last_peer(void)
{
	return &last_peer;
}

static void dbl_facts_from_nic(const struct rn_nic *nic, struct rn_peer_facts *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->netdev, nic->netdev, sizeof(out->netdev));
	memcpy(out->mac, nic->mac, sizeof(out->mac));
	out->gid = nic->gid;
	out->ip = nic->ip;
	out->mtu = nic->mtu;
	out->active_mtu = nic->active_mtu;
	out->verdict_cause = nic->nfindings ? nic->findings[0].cause : RN_CAUSE_NONE;
}

static int dbl_start(const struct rn_nic *nic, const struct rn_peer_facts *peer, int timeout_ms,
		     struct rn_conn_check **out)
{
	const struct fake_path_script *s = script_of(nic);

	*out = NULL;
	nchecks++;
	last_peer = *peer;
	if (s->start_ret)
		return s->start_ret;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->s = *s;
	return 0;
}

static int dbl_poll(struct rn_conn_check *chk, struct rn_finding *out)
{
	if (chk->polls++ < chk->s.eagain_polls)
		return -EAGAIN;
	/* as the real one: the refusing cause, or on success a warning if any */
	if (out && (chk->s.poll_ret == -EHOSTUNREACH || chk->s.poll_ret == 0)) {
		rn_finding_clear(out);
		if (chk->s.finding.cause && rn_finding_copy(out, &chk->s.finding))
			return -ENOMEM;
	}
	return chk->s.poll_ret;
}

static void dbl_free(struct rn_conn_check *chk)
{
	free(chk);
}

static int dbl_diagnose(const struct rn_nic *nic, const struct rn_peer_facts *peer,
			struct rn_finding *out)
{
	const struct fake_path_script *s = script_of(nic);

	ndiags++;
	rn_finding_clear(out);
	if (s->diag_ret == 0 && s->diag.cause && rn_finding_copy(out, &s->diag))
		return -ENOMEM;
	return s->diag_ret ? s->diag_ret : (s->diag.cause ? 0 : -ENOENT);
}

__attribute__((constructor)) static void double_conncheck_install(void)
{
	rn_path_check = (struct rn_path_check_ops){
		.facts_from_nic = dbl_facts_from_nic,
		.start = dbl_start,
		.poll = dbl_poll,
		.free = dbl_free,
		.diagnose = dbl_diagnose,
	};
}
