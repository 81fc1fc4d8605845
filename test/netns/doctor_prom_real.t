#!/usr/bin/env bash
# roce-doctor --textfile read by a real node-exporter (Debian's prometheus-node-exporter,
# textfile collector) and scraped by a real Prometheus (Debian's prometheus): two hosts
# with 2 NICs in one subnet each, "broken" (kernel defaults) and "fixed" (after
# scripts/roce-policy-routing); Prometheus' HTTP API gives the broken host's
# roce_nic_verdict 2 and its arp-flux / no-rule / route-wrong-nic finding series, the fixed
# host's verdicts 0 and no finding series; once the broken host is fixed and its textfile
# rewritten, its finding series go away in Prometheus too. Both files pass
# `promtool check metrics` and node-exporter reads them without a textfile error.
# The exporters and the server run in a namespace of their own (its loopback: every port
# free, nothing listens on the host), with private data directories; the test stops
# exactly the processes it started. A Prometheus or node-exporter service the packages
# started on this machine is neither used nor touched.
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/prom_lib.sh"
rn_require_netns
prom_require
rn_tmpdir T

rn_host_ns 2
BROKEN=$RN_HOST
rn_host_ns 2
FIXED=$RN_HOST
rn_in "$FIXED" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/state" nic0 nic1 >/dev/null ||
	rn_fail "roce-policy-routing failed on the fixed host"
mkdir -p "$T/tf-broken" "$T/tf-fixed"

# textfile HOST: the host's doctor run into its collector directory (exit 1 broken, 0 fixed)
textfile() {
	ip netns exec "${!1}" "$DOCTOR" --netdev nic0,nic1 --textfile "$T/tf-${1,,}/roce.prom"
}
textfile BROKEN
RC=$?
[ $RC -eq 1 ] || rn_fail "broken host: --textfile exit $RC, want 1"
textfile FIXED
RC=$?
[ $RC -eq 0 ] || rn_fail "fixed host: --textfile exit $RC, want 0"
for h in broken fixed; do
	prom_check_file "$T/tf-$h/roce.prom" "$h"
done
echo "promtool check metrics: both textfiles clean"

prom_start broken="$T/tf-broken" fixed="$T/tf-fixed"

t0=$(date +%s.%N)
until_q 'up{job="roce"}' 'up{node=broken} 1
up{node=fixed} 1' "Prometheus does not scrape both node-exporters"
until_q 'node_textfile_scrape_error' 'node_textfile_scrape_error{node=broken} 0
node_textfile_scrape_error{node=fixed} 0' "node-exporter reports a textfile error"
until_q 'roce_nic_verdict' 'roce_nic_verdict{netdev=nic0,node=broken} 2
roce_nic_verdict{netdev=nic0,node=fixed} 0
roce_nic_verdict{netdev=nic1,node=broken} 2
roce_nic_verdict{netdev=nic1,node=fixed} 0' "verdict series"
t1=$(date +%s.%N)
# nic0 egresses right by luck (no-rule); nic1's route leaves nic0 (route-wrong-nic)
until_q 'sum by (node, netdev, cause) (roce_nic_finding)' '{cause=arp-flux,netdev=nic0,node=broken} 1
{cause=arp-flux,netdev=nic1,node=broken} 1
{cause=no-rule,netdev=nic0,node=broken} 1
{cause=route-wrong-nic,netdev=nic1,node=broken} 1' "finding series"
until_q 'roce_host_problems' 'roce_host_problems{node=broken} 1
roce_host_problems{node=fixed} 0' "roce_host_problems"
# what an alert rule would say: the hosts with a refused NIC
until_q 'count by (node) (roce_nic_verdict >= 2)' '{node=broken} 2' "alert expression"
q 'roce_doctor_info' | grep -q 'version=' || rn_fail "no roce_doctor_info series"
echo "via Prometheus' API after $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s:"
q '{__name__=~"roce_nic_verdict|roce_nic_finding"}'

# the broken host fixed: its textfile rewritten, its finding series go stale
rn_in "$BROKEN" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/state2" nic0 nic1 >/dev/null ||
	rn_fail "roce-policy-routing failed on the broken host"
textfile BROKEN
RC=$?
[ $RC -eq 0 ] || rn_fail "broken host after the fix: --textfile exit $RC, want 0"
until_q 'roce_nic_finding' '' "finding series left after the fix"
until_q 'max by (node) (roce_nic_verdict)' '{node=broken} 0
{node=fixed} 0' "verdicts after the fix"
until_q 'roce_host_problems' 'roce_host_problems{node=broken} 0
roce_host_problems{node=fixed} 0' "roce_host_problems after the fix"
echo "after the fix: no finding series, every verdict 0"
echo "PASS"
