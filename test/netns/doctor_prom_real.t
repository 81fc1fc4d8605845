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
rn_require_netns
for t in prometheus prometheus-node-exporter promtool curl; do
	command -v $t >/dev/null || rn_skip "skip: $t not installed (scripts/install-deps --test)"
done
rn_tmpdir T
PIDS=()
# shellcheck disable=SC2317 # called by the trap
stop_ours() {
	local rc=$? p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	done
	(exit $rc)
	_rn_cleanup
}
trap stop_ours EXIT

rn_host_ns 2
BROKEN=$RN_HOST
rn_host_ns 2
FIXED=$RN_HOST
rn_ns MON mon
rn_in "$FIXED" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/state" nic0 nic1 >/dev/null ||
	rn_fail "roce-policy-routing failed on the fixed host"
mkdir -p "$T/tf-broken" "$T/tf-fixed" "$T/prom-data"

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
	out=$(promtool check metrics <"$T/tf-$h/roce.prom" 2>&1) ||
		{ echo "$out"; rn_fail "$h: promtool check metrics failed"; }
	[ -z "$out" ] || { echo "$out"; rn_fail "$h: promtool check metrics has lint problems"; }
done
echo "promtool check metrics: both textfiles clean"

# bg CMD...: start CMD in the monitoring namespace, its pid kept for the trap
bg() {
	ip netns exec "$MON" "$@" &
	PIDS+=($!)
}
bg prometheus-node-exporter --web.listen-address=127.0.0.1:9101 --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$T/tf-broken" >"$T/ne-broken.log" 2>&1
bg prometheus-node-exporter --web.listen-address=127.0.0.1:9102 --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$T/tf-fixed" >"$T/ne-fixed.log" 2>&1
cat >"$T/prometheus.yml" <<'YML'
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: roce
    static_configs:
      - targets: ['127.0.0.1:9101']
        labels: {node: broken}
      - targets: ['127.0.0.1:9102']
        labels: {node: fixed}
YML
promtool check config "$T/prometheus.yml" >/dev/null || rn_fail "promtool check config"
bg prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom-data" \
	--web.listen-address=127.0.0.1:9090 --log.level=warn >"$T/prometheus.log" 2>&1

# q PROMQL: the instant query's result as sorted "metric{labels} value" lines (without
# instance and job; Prometheus drops empty labels, the netdev-only NICs' ibdev and port)
q() {
	ip netns exec "$MON" curl -sf --max-time 5 http://127.0.0.1:9090/api/v1/query \
		--data-urlencode "query=$1" >"$T/q.json" || return 1
	python3 - "$T/q.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["status"] == "success", d
lines = []
for r in d["data"]["result"]:
    m = r["metric"]
    name = m.pop("__name__", "")
    m.pop("instance", None), m.pop("job", None)
    lines.append("%s{%s} %s" % (name, ",".join("%s=%s" % kv for kv in sorted(m.items())),
                                r["value"][1]))
print("\n".join(sorted(lines)))
PY
}
# until_q PROMQL WANT WHAT: wait (up to 60 s) for the query to give exactly WANT
until_q() {
	local got
	for _ in $(seq 120); do
		got=$(q "$1" 2>/dev/null) && [ "$got" = "$2" ] && return 0
		sleep 0.5
	done
	echo "--- query: $1"; echo "--- got:"; echo "$got"; echo "--- want:"; echo "$2"
	tail -n 5 "$T/prometheus.log" "$T/ne-broken.log" "$T/ne-fixed.log"
	rn_fail "$3"
}

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
