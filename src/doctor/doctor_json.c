// SPDX-License-Identifier: MIT
/*
 * The doctor's JSON objects that more than one report writes (a finding, the sysctls),
 * over the tools' one JSON writer (rn_json.h); keys in the schema's order (README).
 */
#include <stdio.h>

#include "doctor.h"

void rn_json_finding(struct rn_json *j, const struct rn_finding *f, const char *maker)
{
	char lb[32];
	int pre = rn_finding_pre_fix(f)[0] != '\0';

	rn_json_obj(j, NULL);
	rn_json_str(j, "cause", rn_cause_label(f->cause, lb, sizeof(lb)));
	rn_json_str(j, "severity", rn_doctor_sev_str(f->sev));
	rn_json_str(j, "message", rn_finding_msg(f));
	rn_json_str(j, "fix", rn_finding_fix(f));
	rn_json_str(j, "fix_host", rn_finding_fix(f)[0] ? rn_finding_where(f, 0, maker) : "");
	rn_json_str(j, "pre_fix", rn_finding_pre_fix(f));
	rn_json_str(j, "pre_host", pre ? rn_finding_where(f, 1, maker) : "");
	rn_json_str(j, "advice", rn_finding_advice(f));
	rn_json_close(j, '}');
}

void rn_json_sysctls(struct rn_json *j, const char *key, const struct rn_sysctls *s)
{
	rn_json_obj(j, key);
	rn_json_int(j, "arp_ignore", s->arp_ignore);
	rn_json_int(j, "arp_announce", s->arp_announce);
	rn_json_int(j, "arp_filter", s->arp_filter);
	rn_json_int(j, "rp_filter", s->rp_filter);
	rn_json_int(j, "accept_local", s->accept_local);
	rn_json_close(j, '}');
}
