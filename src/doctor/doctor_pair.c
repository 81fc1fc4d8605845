// SPDX-License-Identifier: MIT
/*
 * The pair checks of peer, serve and the sweep: every local NIC against every remote
 * NIC of an inventory, with the plugin's own connection check (rn_conn_check_*: route
 * from our source IP out of our NIC, our neighbour entry for the peer holds the MAC the
 * peer advertised, MTUs agree), all checks in flight at once. The protocol that
 * carries them between two hosts is doctor_pair_run.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor_pair.h"
#include "rn_conncheck.h"

int rn_doctor_pair_problem(const struct rn_dw_pair *p)
{
	int k;

	for (k = 0; k < p->nfindings; k++)
		if (p->findings[k].sev >= RN_SEV_WARN)
			return 1;
	return p->status == 1;
}

/* @w is one of the space-separated words of @list. */
static int has_word(const char *list, const char *w)
{
	size_t n = strlen(w);
	const char *p;

	for (p = list; (p = strstr(p, w)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return 1;
	return 0;
}

/*
 * The sysctls the remote's own verdict names against ARP flux (its arp-flux fixes:
 * "sysctl -w KEY=V ...  # or ..."), each key once, into @v's "keys"; "" when the
 * remote reports no flux.
 */
static void remote_flux_keys(const struct rn_dw_inv *remote, struct rn_vars *v)
{
	static const char head[] = "sysctl -w ";
	int i, k;

	rn_vars_set(v, "keys", "%s", "");
	for (i = 0; i < remote->nnics; i++)
		for (k = 0; k < remote->nics[i].nfindings; k++) {
			const struct rn_finding *f = &remote->nics[i].findings[k];
			char *cmd, *save = NULL, *w;

			if (f->cause != RN_CAUSE_ARP_FLUX ||
			    strncmp(rn_finding_fix(f), head, sizeof(head) - 1))
				continue;
			cmd = strdup(rn_finding_fix(f) + sizeof(head) - 1);
			/* KEY=V words up to the first that is not one ("#", ";", a command) */
			for (w = cmd ? strtok_r(cmd, " ", &save) : NULL; w && strchr(w, '=');
			     w = strtok_r(NULL, " ", &save))
				if (!has_word(rn_vars_get(v, "keys"), w))
					rn_vars_append(v, "keys", " ", "%s", w);
			free(cmd);
		}
}

void rn_doctor_peer_fix(const struct rn_dw_inv *remote, struct rn_dw_checks *c)
{
	struct rn_vars v = RN_VARS_INIT;
	char *pre = NULL;
	int n, k;

	remote_flux_keys(remote, &v);
	if (v.err)
		goto out; /* the library's default stands */
	if (rn_vars_get(&v, "keys")[0] &&
	    asprintf(&pre, "sysctl -w %s", rn_vars_get(&v, "keys")) < 0)
		goto out;
	for (n = 0; n < c->npairs; n++)
		for (k = 0; k < c->pairs[n].nfindings; k++)
			/* a static entry's finding has no first part: nothing there made it */
			if (c->pairs[n].findings[k].cause == RN_CAUSE_NEIGH_WRONG_MAC &&
			    rn_finding_pre_fix(&c->pairs[n].findings[k])[0])
				rn_finding_set_where(&c->pairs[n].findings[k], NULL, pre ? pre : "",
						     pre ? NULL : "", NULL);
out:
	free(pre);
	rn_vars_free(&v);
}

/* @a and @b share their first @plen bits (same family). */
static int same_prefix(const struct rn_ip *a, const struct rn_ip *b, int plen)
{
	const uint8_t *x = a->family == AF_INET ? (const uint8_t *)&a->v4 : a->v6.s6_addr;
	const uint8_t *y = b->family == AF_INET ? (const uint8_t *)&b->v4 : b->v6.s6_addr;
	int full = plen / 8, rest = plen % 8;

	if (memcmp(x, y, (size_t)full))
		return 0;
	return !rest || !((x[full] ^ y[full]) & (0xff00 >> rest));
}

int rn_doctor_pair_scope(const struct rn_doctor *d, const struct rn_dw_inv *remote, int max,
			 unsigned char *in)
{
	int i, j, k, taken = 0, out = 0;

	memset(in, 0, RN_DOCTOR_MAX_NICS);
	for (j = 0; j < remote->nnics; j++) {
		const struct rn_ip *ip = &remote->nics[j].ip;
		int ours = 0, seen = 0;

		for (i = 0; i < d->nnics && !ours; i++) {
			const struct rn_nic *nic = &d->nics[i].nic;

			ours = nic->ip.family && nic->ip.family == ip->family &&
			       nic->prefixlen <= (ip->family == AF_INET ? 32 : 128) &&
			       same_prefix(&nic->ip, ip, nic->prefixlen);
		}
		/* an address named twice costs one: its neighbour entry is the same */
		for (k = 0; k < j && !seen; k++)
			seen = in[k] && rn_ip_equal(&remote->nics[k].ip, ip);
		if (ours && (seen || taken < max)) {
			in[j] = 1;
			taken += !seen;
		} else {
			out++;
		}
	}
	return out;
}

/*
 * The route from @nic to a NIC outside the scope: a refusal is a finding (1), and 0
 * when its next hop is a gateway of ours, whose neighbour entry may be checked; 2 when
 * the next hop would be the address itself (nothing more is done for it).
 */
static int route_only(const struct rn_nic *nic, const struct rn_peer_facts *pf,
		      struct rn_dw_pair *p)
{
	struct rn_vars v = RN_VARS_INIT;
	struct rn_ip nh;
	int nh_is_peer = 0, ret;

	rn_conn_vars(nic, pf, &v);
	ret = rn_conn_route(nic, pf, &v, &nh, &nh_is_peer, &p->findings[p->nfindings]);
	rn_vars_free(&v);
	if (ret == 1) {
		p->nfindings++;
		p->status = 1;
		return 1;
	}
	return ret == 0 && !nh_is_peer ? 0 : 2;
}

void rn_doctor_pair_checks(struct rn_doctor *d, const struct rn_dw_inv *remote,
			   const unsigned char *scope, struct rn_dw_checks *out, double *ms)
{
	struct rn_conn_check *chk[RN_DOCTOR_MAX_NICS * RN_DOCTOR_MAX_NICS] = { 0 };
	double t0 = rn_doctor_now_ms();
	int i, j, n, pending = 0;

	rn_dw_checks_clear(out);
	memset(out, 0, sizeof(*out));
	for (i = 0; i < d->nnics; i++) {
		for (j = 0; j < remote->nnics; j++) {
			const struct rn_nic *nic = &d->nics[i].nic;
			struct rn_dw_pair *p = &out->pairs[out->npairs];
			struct rn_peer_facts pf;
			int ret;

			p->local = i;
			p->remote = j;
			p->status = 2;
			rn_dw_peer_facts(remote, j, &pf);
			if (!nic->link_up) {
				struct rn_vars v = RN_VARS_INIT;

				rn_conn_vars(nic, &pf, &v);
				rn_finding_render(&p->findings[p->nfindings++], RN_CAUSE_LINK_DOWN,
						  &v);
				rn_vars_free(&v);
				p->status = 1;
			} else if (nic->ip.family && pf.ip.family == nic->ip.family &&
				   remote->nics[j].link_up &&
				   (!scope || scope[j] || !route_only(nic, &pf, p))) {
				ret = rn_conn_check_start(nic, &pf, d->cfg.neigh_timeout_ms,
							  &chk[out->npairs]);
				if (!ret)
					pending++;
			}
			out->npairs++;
		}
	}
	while (pending) {
		usleep(2000);
		for (n = 0; n < out->npairs; n++) {
			struct rn_dw_pair *p = &out->pairs[n];
			const struct rn_finding *all;
			int ret, k, nf;

			if (!chk[n])
				continue;
			ret = rn_conn_check_poll(chk[n], NULL);
			if (ret == -EAGAIN)
				continue;
			nf = rn_conn_check_findings(chk[n], &all);
			for (k = 0; k < nf && p->nfindings < RN_DW_PAIR_FINDINGS; k++)
				if (!rn_finding_copy(&p->findings[p->nfindings], &all[k]))
					p->nfindings++;
			p->status = ret == 0 || ret == -EHOSTUNREACH ? (ret ? 1 : 0) : 2;
			if (!p->status && rn_doctor_pair_problem(p))
				p->status = 1;
			rn_conn_check_free(chk[n]);
			chk[n] = NULL;
			pending--;
		}
	}
	rn_doctor_peer_fix(remote, out);
	*ms = rn_doctor_now_ms() - t0;
}
