// SPDX-License-Identifier: MIT
/*
 * The local NIC's port counters around an RDMA probe (peer, serve's client side, the
 * sweep): read by name before the ping (src/counters.c), again once the probe failed,
 * and the counters that moved are shown with their driver's names and the role the
 * library's table gives them, with what the library's judge (rn_ctr_judge: replies on
 * another NIC, nothing back, RNR, fabric loss, congestion) makes of the two snapshots.
 * A probe that worked keeps nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor_probe.h"
#include "rn_conncheck.h"
#include "rn_json.h"

struct rn_probe_ctr_snap {
	int err; /* -errno: the counters could not be read */
	struct rn_ctr_named *named;
	int n;
	struct rn_ctr_snap *all; /* every local NIC, for the judge */
};

struct rn_probe_ctr_snap *rn_probe_ctr_begin(const struct rn_nic *nic)
{
	struct rn_probe_ctr_snap *s;

	if (!nic->ibdev[0])
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->n = rn_ctr_read_named(nic->ibdev, nic->port, &s->named);
	if (s->n < 0)
		s->err = s->n;
	s->all = rn_ctr_snap_take();
	if (!s->all && !s->err)
		s->err = -errno;
	return s;
}

static void snap_free(struct rn_probe_ctr_snap *s)
{
	if (!s)
		return;
	free(s->named);
	rn_ctr_snap_free(s->all);
	free(s);
}

/* The counters in both (each sorted by name) that went up, in @out. */
static void deltas(const struct rn_probe_ctr_snap *a, const struct rn_probe_ctr_snap *b,
		   struct rn_probe_ctr *out)
{
	int i = 0, k = 0;

	while (i < a->n && k < b->n) {
		int c = strcmp(a->named[i].name, b->named[k].name);
		const struct rn_ctr_named *x = &b->named[k];

		if (c) {
			c < 0 ? i++ : k++;
			continue;
		}
		/* a counter that went backwards was reset: no figure */
		if (x->value > a->named[i].value) {
			if (out->n < RN_PROBE_CTR_MAX) {
				snprintf(out->delta[out->n].name, sizeof(out->delta[0].name), "%s",
					 x->name);
				out->delta[out->n].role = x->role;
				out->delta[out->n++].d = x->value - a->named[i].value;
			} else {
				out->more++;
			}
		}
		i++;
		k++;
	}
}

void rn_probe_ctr_end(struct rn_probe_ctr_snap *before, const struct rn_nic *nic,
		      const struct rn_peer_facts *peer, struct rn_probe_ctr *out)
{
	struct rn_probe_ctr_snap *after;
	struct rn_vars v = RN_VARS_INIT;
	enum rn_cause cause;

	if (!before || !out) {
		snap_free(before);
		return;
	}
	rn_probe_ctr_clear(out);
	snprintf(out->nic, sizeof(out->nic), "%s:%d", nic->ibdev, nic->port);
	after = rn_probe_ctr_begin(nic);
	if (!after || before->err || after->err) {
		out->read = before->err ? before->err : after ? after->err : -ENOMEM;
		snap_free(after);
		snap_free(before);
		return;
	}
	out->read = 1;
	out->driver = rn_ctr_driver(nic->ibdev, nic->port);
	rn_ctr_lacks(nic->ibdev, nic->port, out->lacks, sizeof(out->lacks));
	out->secs = (double)(after->all->t_ns - before->all->t_ns) / 1e9;
	deltas(before, after, out);
	/* the library's judge, as the plugin's WARN after a completion error uses it */
	rn_conn_vars(nic, peer, &v);
	cause = rn_ctr_judge(before->all, NULL, after->all, nic->ibdev, nic->port, &v);
	if (cause != RN_CAUSE_NONE && rn_finding_render(&out->shows, cause, &v))
		rn_finding_clear(&out->shows);
	rn_vars_free(&v);
	snap_free(after);
	snap_free(before);
}

void rn_probe_ctr_clear(struct rn_probe_ctr *c)
{
	rn_finding_clear(&c->shows);
	memset(c, 0, sizeof(*c));
}

void rn_probe_ctr_print(FILE *f, const char *indent, const struct rn_probe_ctr *c,
			const char *maker)
{
	char lb[32], sub[64];
	int k;

	if (!c->read)
		return;
	if (c->read < 0) {
		fprintf(f, "%scounters of %s around the probe: not read (%s)\n", indent, c->nic,
			strerror(-c->read));
		return;
	}
	fprintf(f, "%scounters of %s (%s) over the probe's %.1f s:", indent, c->nic,
		c->driver ? c->driver : "?", c->secs);
	for (k = 0; k < c->n; k++) {
		const char *role = rn_ctr_role_name(c->delta[k].role);

		fprintf(f, "%s %s +%" PRIu64, k ? "," : "", c->delta[k].name, c->delta[k].d);
		if (role[0])
			fprintf(f, " (%s)", role);
	}
	if (c->more)
		fprintf(f, " and %d more", c->more);
	fprintf(f, "%s\n", c->n ? "" : " none moved");
	if (!c->shows.cause) {
		/* what they could not show: the roles this driver does not count */
		if (c->lacks[0])
			fprintf(f, "%s  they show nothing wrong; %s has no counter of %s\n", indent,
				c->driver, c->lacks);
		return;
	}
	fprintf(f, "%sthey show %s [%s]: %s\n", indent,
		rn_cause_label(c->shows.cause, lb, sizeof(lb)), rn_doctor_sev_str(c->shows.sev),
		rn_finding_msg(&c->shows));
	snprintf(sub, sizeof(sub), "%s  ", indent);
	rn_doctor_print_fix(f, sub, "", &c->shows, maker);
}

void rn_probe_ctr_json(struct rn_json *j, const char *key, const struct rn_probe_ctr *c,
		       const char *maker)
{
	int k;

	if (!c->read)
		return;
	rn_json_obj(j, key);
	rn_json_str(j, "nic", c->nic);
	if (c->read < 0) {
		rn_json_str(j, "error", strerror(-c->read));
		rn_json_close(j, '}');
		return;
	}
	rn_json_str(j, "driver", c->driver);
	rn_json_num(j, "window_s", c->secs, 3);
	rn_json_arr(j, "deltas");
	for (k = 0; k < c->n; k++) {
		const char *role = rn_ctr_role_name(c->delta[k].role);

		rn_json_obj(j, NULL);
		rn_json_str(j, "counter", c->delta[k].name);
		rn_json_int(j, "delta", (long long)c->delta[k].d);
		rn_json_str(j, "role", role[0] ? role : NULL);
		rn_json_close(j, '}');
	}
	rn_json_close(j, ']');
	rn_json_int(j, "more", c->more);
	rn_json_str(j, "lacks", c->lacks);
	/* an array, as the probe's "diagnosis": empty when the counters show nothing */
	rn_json_arr(j, "shows");
	if (c->shows.cause)
		rn_json_finding(j, &c->shows, maker);
	rn_json_close(j, ']');
	rn_json_close(j, '}');
}
