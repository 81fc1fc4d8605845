#!/usr/bin/env bash
# The shipped Prometheus rules (doc/prometheus/nccl-net-roce.rules.yml) pass
# `promtool check rules`, and `promtool test rules` runs them over the series roce-doctor
# writes here (test/netns/prom_series.py turns its textfiles into promtool's input series,
# scraped once a minute):
#   broken   2 NICs in one subnet, kernel defaults (both refused) for 20 min, then fixed by
#            scripts/roce-policy-routing: RoceNicRefused fires for nic0 and nic1, then not
#   down     nic1 down: RoceNicLinkDown and RoceNicRefused for nic1 only
#   unread   --netdev names a NIC that is not there (roce_doctor_up 0): RoceDoctorDown
#   stale    a clean textfile that stops being rewritten after 5 min: RoceDoctorStale
#            only once it is 15 min old (and 5 min more)
# and over the RDMA ports of the doctor's sysfs fixture (test/unit/test_doctor_prom.c with
# RN_PROM_OUT, the plugin's failover record in NCCL_ROCE_STATE_DIR, as the plugin writes
# it): comms moved off rxe0 (1, then 3) fire RoceNicFailover; two comms failed on rxe0 at
# 10 min (the plugin's journal, written by its own writer) fire RoceCommFailed for 15 min; its flapping link
# RoceNicLinkFlapping; its completer_retry_err growing (the fixture's 3, then 9: the
# fixture's sysfs is fixed, so the second file has the count raised) RoceNicTransportErrors,
# which stops once the count stops growing. The recording rules' values are checked too.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
command -v promtool >/dev/null || rn_skip "skip: promtool (Debian's prometheus) not installed"
FX=$RN_TOP/build/test/test_doctor_prom
[ -x "$FX" ] || rn_fail "build/test/test_doctor_prom missing: run make tests first"
JOURNAL=$RN_TOP/build/test/rn-journal
[ -x "$JOURNAL" ] || rn_fail "build/test/rn-journal missing: run make tests first"
RULES=$RN_TOP/doc/prometheus/nccl-net-roce.rules.yml
SERIES=$RN_TOP/test/netns/prom_series.py
rn_tmpdir T

out=$(promtool check rules "$RULES" 2>&1) || { echo "$out"; rn_fail "promtool check rules failed"; }
echo "$out"
grep -q 'SUCCESS: 16 rules found' <<<"$out" || rn_fail "promtool check rules: not the 16 rules"

# textfile NAME ARGS...: the doctor's --textfile in the host namespace, its exit status checked
textfile() {
	local name=$1 want=$2
	shift 2
	ip netns exec "$RN_HOST" "$DOCTOR" "$@" --textfile "$T/$name.prom" 2>"$T/$name.err"
	local rc=$?
	[ $rc -eq "$want" ] || { cat "$T/$name.err"; rn_fail "$name: --textfile exit $rc, want $want"; }
}
rn_host_ns 2
textfile broken 1 --netdev nic0,nic1
rn_in "$RN_HOST" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/state" nic0 nic1 >/dev/null ||
	rn_fail "roce-policy-routing failed"
textfile fixed 0 --netdev nic0,nic1
rn_host_ns 2
ip -n "$RN_HOST" link set nic1 down
textfile down 1 --netdev nic0,nic1
# the doctor could not read its NICs: a file all the same, roce_doctor_up 0
textfile unread 2 --netdev nic0,nosuch
grep -qx 'roce_doctor_up 0' "$T/unread.prom" || rn_fail "unread: roce_doctor_up not 0"

# the fixture's RDMA ports, with 1 and then 3 comms moved off rxe0 port 1
for n in 1 3; do
	mkdir -p "$T/st$n"
	for ((i = 0; i < n; i++)); do
		echo "$((1796000000 + i)) rxe0 1 nic0 mlx5_0 4242 port-down"
	done >"$T/st$n/failovers"
	# and, from 10 min, two comms failed on rxe0:1 (the plugin's own journal writer)
	if [ "$n" = 3 ]; then
		for i in 1 2; do
			"$JOURNAL" "$T/st$n" route-wrong-nic RETRY_EXC_ERR rxe0:1 nic0 peer1 nic1 ||
				rn_fail "rn-journal"
		done
	fi
	NCCL_ROCE_STATE_DIR=$T/st$n RN_PROM_OUT=$T/fx$n.prom "$FX" >"$T/fx$n.log" 2>&1 ||
		{ cat "$T/fx$n.log"; rn_fail "test_doctor_prom failed"; }
	grep -q "^roce_nic_failovers_total{device=\"rxe0\",port=\"1\",netdev=\"nic0\"} $n\$" \
		"$T/fx$n.prom" || rn_fail "fixture: rxe0 has not $n failovers"
done
c='roce_nic_hw_counters_total{device="rxe0",port="1",netdev="nic0",counter="completer_retry_err"}'
grep -qxF "$c 3" "$T/fx3.prom" || rn_fail "fixture: completer_retry_err is not 3"
awk -v c="$c" '$0 == c " 3" { $0 = c " 9" } { print }' "$T/fx3.prom" >"$T/fx3.new" &&
	mv "$T/fx3.new" "$T/fx3.prom"
grep -qxF "$c 9" "$T/fx3.prom" || rn_fail "could not raise completer_retry_err"
j='{device="rxe0",port="1",netdev="nic0",cause="route-wrong-nic"}'
grep -qxF "roce_comm_failures_total$j 2" "$T/fx3.prom" || rn_fail "fixture: not 2 comm failures"
grep -q "^roce_comm_failures_total" "$T/fx1.prom" && rn_fail "fixture: failures without a journal"
# promtool's clock starts at 0: the newest failure at 10 min, as the series begin there
awk -v j="roce_comm_failure_last_timestamp_seconds$j" '$1 == j { $2 = 600 } { print }' \
	"$T/fx3.prom" >"$T/fx3.new" && mv "$T/fx3.new" "$T/fx3.prom"
grep -qxF "roce_comm_failure_last_timestamp_seconds$j 600" "$T/fx3.prom" ||
	rn_fail "could not set the failure's time"

{
	printf 'rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n' "$RULES"
	printf -- '- interval: 1m\n  input_series:\n'
	python3 "$SERIES" broken="$T/broken.prom:20,$T/fixed.prom:20" down="$T/down.prom:40" \
		unread="$T/unread.prom:40" stale="$T/fixed.prom:5,stale:35" ||
		rn_fail "prom_series.py failed"
	cat "$RN_TOP/test/netns/prom_rules_hosts.yml"
	printf -- '- interval: 1m\n  input_series:\n'
	python3 "$SERIES" rdma="$T/fx1.prom:10,$T/fx3.prom:20" || rn_fail "prom_series.py failed"
	cat "$RN_TOP/test/netns/prom_rules_rdma.yml"
} >"$T/test.yml"
grep -c "series:" "$T/test.yml" | sed 's/^/input series: /'
out=$(cd "$T" && promtool test rules test.yml 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || rn_fail "promtool test rules failed"
grep -q SUCCESS <<<"$out" || rn_fail "promtool test rules: no SUCCESS"
echo "PASS"
