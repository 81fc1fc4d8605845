// SPDX-License-Identifier: MIT
/*
 * `roce-doctor localize` over a sweep's JSON report (`roce-doctor-mpi --json`): its pair
 * matrix as the mesh's pair observations, so the same verdicts (NIC, host, link between
 * groups) come from a one-off sweep as from the agents' metrics.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "doctor_jsonin.h"
#include "doctor_mesh.h"

/* What the sweep names a NIC it has no inventory of (rn_sweep_nic_name). */
#define SWEEP_NO_NIC "?"

static const char *nic_at(const struct rn_jv *h, int i)
{
	const struct rn_jv *nics = rn_jv_get(h, "nics");
	const char *n;

	if (!nics || nics->t != RN_JV_ARR || !nics->n)
		return SWEEP_NO_NIC;
	n = rn_jv_str(rn_jv_get(&nics->kids[i], "netdev"));
	return n ? n : SWEEP_NO_NIC;
}

static int nnics(const struct rn_jv *h)
{
	const struct rn_jv *nics = rn_jv_get(h, "nics");

	return nics && nics->t == RN_JV_ARR && nics->n ? nics->n : 1;
}

/* The bad_pairs entry of (@ha, @na) x (@hb, @nb) in either order; NULL: none. */
static const struct rn_jv *bad_of(const struct rn_jv *bad, const char *ha, const char *na,
				  const char *hb, const char *nb, int *whole)
{
	int k;

	for (k = 0; bad && k < bad->n; k++) {
		const struct rn_jv *p = &bad->kids[k];
		const char *a = rn_jv_str(rn_jv_get(p, "host_a")),
			   *b = rn_jv_str(rn_jv_get(p, "host_b"));
		const char *xa = rn_jv_str(rn_jv_get(p, "nic_a")),
			   *xb = rn_jv_str(rn_jv_get(p, "nic_b"));

		if (!a || !b)
			continue;
		/* a host pair that never answered: every NIC pair of it (its NICs null) */
		*whole = !xa || !xb;
		if (!strcmp(a, ha) && !strcmp(b, hb) &&
		    (*whole || (!strcmp(xa, na) && !strcmp(xb, nb))))
			return p;
		if (!strcmp(a, hb) && !strcmp(b, ha) &&
		    (*whole || (!strcmp(xa, nb) && !strcmp(xb, na))))
			return p;
	}
	return NULL;
}

/* The pair's cause: the first of its causes, else its result ("no-answer"). */
static void cause_of(const struct rn_jv *p, char *out, size_t len)
{
	const struct rn_jv *c = rn_jv_get(p, "causes");
	const char *s = c && c->t == RN_JV_ARR && c->n ? rn_jv_str(&c->kids[0]) : NULL;

	if (!s)
		s = rn_jv_str(rn_jv_get(p, "result"));
	snprintf(out, len, "%s", s ? s : "unknown");
}

static int one_pair(const struct rn_jv *bad, const char *missing_a, const char *ha, const char *na,
		    const char *hb, const char *nb,
		    int (*add)(void *arg, const struct rn_mesh_obs *o), void *arg)
{
	struct rn_mesh_obs o = { .up = 1 };
	const struct rn_jv *p;
	int whole = 0;

	snprintf(o.host, sizeof(o.host), "%s", ha);
	snprintf(o.nic, sizeof(o.nic), "%s", na);
	snprintf(o.peer_host, sizeof(o.peer_host), "%s", hb);
	snprintf(o.peer_nic, sizeof(o.peer_nic), "%s", nb);
	/* the sweep has no topology: one group (localize --rtt-groups has no RTT here) */
	snprintf(o.group, sizeof(o.group), "all");
	snprintf(o.peer_group, sizeof(o.peer_group), "all");
	p = bad_of(bad, ha, na, hb, nb, &whole);
	if (p) {
		o.up = 0;
		cause_of(p, o.cause, sizeof(o.cause));
	} else if (missing_a) {
		o.up = 0;
		snprintf(o.cause, sizeof(o.cause), "%s", missing_a);
	}
	return add(arg, &o);
}

/* A host the sweep has no results of (missing, hung): its status, else NULL. */
static const char *absent(const struct rn_jv *h)
{
	const char *st = rn_jv_str(rn_jv_get(h, "status"));

	return st && (!strcmp(st, "missing") || !strcmp(st, "hung")) ? st : NULL;
}

int rn_mesh_sweep_obs(const char *json, int (*add)(void *arg, const struct rn_mesh_obs *o),
		      void *arg, char *why, size_t len)
{
	const struct rn_jv *hosts, *bad;
	const char *schema;
	struct rn_jv *d;
	int a, b, i, x, ret;

	ret = rn_jv_parse(json, &d, why, len);
	if (ret)
		return ret;
	schema = rn_jv_str(rn_jv_get(d, "schema"));
	hosts = rn_jv_get(d, "hosts");
	bad = rn_jv_get(d, "bad_pairs");
	if (!schema || strcmp(schema, "roce-doctor-sweep/1") || !hosts || hosts->t != RN_JV_ARR ||
	    (bad && bad->t != RN_JV_ARR)) {
		snprintf(why, len, "not a sweep report (schema roce-doctor-sweep/1 with hosts)");
		rn_jv_free(d);
		return -EBADMSG;
	}
	for (a = 0; a < hosts->n && !ret; a++)
		for (b = a + 1; b < hosts->n && !ret; b++) {
			const struct rn_jv *ha = &hosts->kids[a], *hb = &hosts->kids[b];
			const char *na = rn_jv_str(rn_jv_get(ha, "host"));
			const char *nb = rn_jv_str(rn_jv_get(hb, "host"));
			const char *gone = absent(ha) ? absent(ha) : absent(hb);

			if (!na || !nb) {
				snprintf(why, len, "a host without its name");
				ret = -EBADMSG;
				break;
			}
			for (i = 0; i < nnics(ha) && !ret; i++)
				for (x = 0; x < nnics(hb) && !ret; x++)
					ret = one_pair(bad, gone, na, nic_at(ha, i), nb,
						       nic_at(hb, x), add, arg);
		}
	if (ret == -ENOMEM)
		snprintf(why, len, "out of memory");
	rn_jv_free(d);
	return ret;
}
