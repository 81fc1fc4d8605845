/* SPDX-License-Identifier: MIT */
/*
 * The policy-rule model (src/policy.c), read from the host snapshot: which rule decides
 * a source's table, the address policy routing makes a NIC's source, the rules that
 * shadow ours, and the table and priority to propose for a NIC. One definition shared
 * by the GID choice, the route checks, the doctor and scripts/roce-policy-routing (the
 * agreement test, test_table, holds them to the same numbers):
 *   table    100 + ifindex, or the next free number (see policy.c)
 *   priority the table's number when free and ahead of the first shadowing rule
 *   shadow   a 'from all' rule that ends the lookup for unmarked local traffic
 *   mgmt     the device of main's best default route of a family
 */
#ifndef RN_POLICY_H
#define RN_POLICY_H

#include <stdint.h>

#include "rn_host.h"

/* The first rule the kernel would try for a lookup from @ip (no iif/oif/mark), NULL if none. */
const struct rn_nl_rule *rn_rule_for_src(const struct rn_host *host, const struct rn_ip *ip);
/*
 * The IP that policy routing makes this netdev's source: an address of @ifindex
 * with a 'from' rule whose table routes the address's subnet out of @ifindex (with
 * src = the address where the route names one). Returns the rule's table (>0) and
 * sets @ip, or 0 when none.
 */
int rn_policy_source(const struct rn_host *host, int ifindex, int family, struct rn_ip *ip,
		     uint32_t *prio);
/*
 * Table and priority to propose for @ifindex's policy routing: table 100 + ifindex or the
 * next free number, priority the table's when free and ahead of every shadowing rule.
 * @host may be NULL (connection time): 100 + ifindex for both.
 */
void rn_propose_table(const struct rn_host *host, int ifindex, uint32_t *table, uint32_t *prio);
/* 1 when @r matches unmarked local traffic from any source and ends the lookup. */
int rn_rule_shadows(const struct rn_nl_rule *r);
/* The priority of the first shadowing rule (32766, main's, when there is none). */
uint32_t rn_rule_first_shadow(const struct rn_host *host);
/*
 * The priority @ifindex's rule into @table gets (also where a shadowed rule moves to):
 * the table's number when free and ahead of the first shadowing rule, else the highest
 * free priority ahead of it; 0 when none is free.
 */
uint32_t rn_rule_prio_for(const struct rn_host *host, int ifindex, uint32_t table);
/* ifindex of main's best default route of @family (the management NIC), 0 when none. */
int rn_host_mgmt_ifindex(const struct rn_host *host, int family);

#endif /* RN_POLICY_H */
