#!/usr/bin/env bash
# The route issue's faults, injected on one NIC of a fixed host on real kernel Soft-RoCE, and
# what the plugin makes of each: the NIC's verdict names the cause (cause ids, never wording),
# strict mode drops the NIC, and faults that only show on the wire end in a bounded error that
# points where to look.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
# The fixed scenario from plain ip rules and sysctls: the script costs seconds per boot and per
# reset under TCG; doctor.t and plugin_pods.t run scripts/roce-policy-routing itself.
export BED_POLICY=${BED_POLICY:-plain}
plugin_prereq

# A probe on h0 as NCCL would run it (NCCL_DEBUG=INFO, extra env); its output in probe_out.
probe() { probe_out=$(drv_run 0 NCCL_DEBUG=INFO "$@" -- probe); }
# The INFO verdict line of NIC <ibdev> in the last probe.
vline() { grep -m1 "NET/RoCE : NIC $1:1 " <<<"$probe_out"; }
ndevs() { grep -m1 -o 'devices: [0-9]*' <<<"$probe_out" | awk '{print $2}'; }
clear_fault() { B fault 0 clear >/dev/null 2>&1 || B scenario fixed >/dev/null || rn_fail "could not clear"; }

expect_cause() { # what ibdev cause env...
	local what=$1 dev=$2 cause=$3 line
	shift 3
	probe NCCL_ROCE_ROUTE_CHECK=warn "$@"
	line=$(vline "$dev")
	echo "  $line"
	grep -Eq "verdict (warn|refused) causes .*\b$cause\b" <<<"$line" ||
		{ echo "$probe_out" | sed 's/^/  | /'; rn_fail "$what: $dev's verdict does not name $cause"; }
	grep -q "NCCL WARN .*$dev:1 \[$cause\]: .*fix: " <<<"$probe_out" ||
		rn_fail "$what: no WARN with the fix for $cause"
}

body() {
	local line
	B up --hosts 2 --nics 2 --scenario fixed --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 hosts x 2 NICs, scenario fixed; faults go on h0 eth1 (rxe1) unless said"

	t_step "control: both NICs accepted"
	probe
	for d in rxe0 rxe1; do
		line=$(vline $d)
		echo "  $line"
		grep -q "verdict ok" <<<"$line" || rn_fail "fixed host: $d not ok"
	done
	[ "$(ndevs)" = 2 ] || rn_fail "fixed host: $(ndevs) devices offered, want 2"

	t_step "no rule for eth1's address: its replies leave through eth0"
	B fault 0 no-rule --nic 1 >/dev/null || rn_fail "fault no-rule"
	expect_cause "no-rule" rxe1 route-wrong-nic
	probe NCCL_ROCE_ROUTE_CHECK=strict
	[ "$(ndevs)" = 1 ] || rn_fail "no-rule, strict: $(ndevs) devices offered, want 1 (rxe1 refused)"
	grep -q "NET/RoCE : NIC rxe0:1 .*verdict ok" <<<"$probe_out" || rn_fail "no-rule: rxe0 suffered"
	rn_log "ok: missing rule: route-wrong-nic named, rxe1 refused under strict, rxe0 kept"
	clear_fault

	t_step "eth1's rule points at eth0's table"
	B fault 0 wrong-table --nic 1 >/dev/null || rn_fail "fault wrong-table"
	expect_cause "wrong-table" rxe1 rule-wrong-nic
	grep -q "rxe1:1 \[rule-wrong-nic\]: .*fix: ip rule del from $(bed_ip 0 1) lookup" <<<"$probe_out" ||
		rn_fail "wrong-table: the fix does not give eth1 a table of its own"
	rn_log "ok: rule to the wrong table: rule-wrong-nic, and the fix leaves eth0's table alone"
	clear_fault

	t_step "strict rp_filter with asymmetric routes"
	B fault 0 rp-strict --nic 1 >/dev/null || rn_fail "fault rp-strict"
	expect_cause "rp-strict" rxe1 rp-filter
	rn_log "ok: strict rp_filter: rp-filter named"
	clear_fault

	t_step "eth1 down"
	B fault 0 link-down --nic 1 >/dev/null || rn_fail "fault link-down"
	probe
	[ "$(ndevs)" = 1 ] || rn_fail "link down: $(ndevs) devices offered, want 1"
	rn_log "ok: link down: rxe1 not offered, rxe0 kept"
	clear_fault

	t_step "a wrong NCCL_IB_GID_INDEX (0: the link-local GID)"
	# a forced link-local GID is refused at init, by name (it cannot reach another host)
	expect_cause "gid index" rxe0 no-gid NCCL_IB_GID_INDEX=0
	grep -q "NCCL WARN .*rxe0:1 \[no-gid\]: .*NCCL_IB_GID_INDEX=0 (link-local" <<<"$probe_out" ||
		rn_fail "gid index: the refusal does not name NCCL_IB_GID_INDEX=0 as link-local"
	rn_log "ok: forced link-local GID index refused at init, named: no-gid"

	t_step "MTU 9000 on h0 eth1, 1500 on h1 eth1: connects at the smaller MTU, and says so"
	B fault 0 mtu --nic 1 --value 9000 >/dev/null || rn_fail "fault mtu"
	drv_pair 18711 1 "--size 65537 --iters 4" "${FAULT_ENV[@]}" "${NOFO_ENV[@]}"
	expect_ok "MTU mismatch: data still checked on rxe1"
	grep -q "NCCL WARN .*\[mtu-mismatch\]" <<<"$cli_out$srv_out" ||
		{ show_pair; rn_fail "MTU mismatch: no mtu-mismatch WARN at connect"; }
	rn_log "ok: MTU mismatch: mtu-mismatch said at connect"
	clear_fault

	t_step "UDP 4791 dropped on h1 eth0: ARP and routes fine, RoCE packets lost"
	B fault 1 drop-4791 --nic 0 >/dev/null || rn_fail "fault drop-4791"
	drv_pair 18712 0 "--size 65537 --iters 4 --timeout-ms 20000" "${FAULT_ENV[@]}" "${NOFO_ENV[@]}"
	[ "$cli_rc" -eq 1 ] || { show_pair; rn_fail "drop-4791: client exit $cli_rc, want 1"; }
	grep -q "NCCL WARN .*UDP 4791.*roce-doctor peer $(bed_ip 1 0)" <<<"$cli_out" ||
		{ show_pair; rn_fail "drop-4791: the status 12 WARN does not point at dropped RoCE packets"; }
	# the counters name it, with figures, on the side that failed first (the other may find
	# its peer gone first); the server's own netdev got what its rxe never saw
	grep -Eq "NCCL WARN .*\[no-reply\]: rxe0:1 \(eth0\): nothing came back from peer .*: rxe0 sent [0-9]+ packets and received [0-9]+ in [0-9.]+ s, with [0-9]+ retransmission timeouts" <<<"$cli_out$srv_out" ||
		{ show_pair; rn_fail "drop-4791: no no-reply with the packet counts"; }
	rn_log "ok: RoCE v2 dropped: status 12 within the QP timeout, pointing at UDP 4791 and the doctor"
	B fault 1 clear >/dev/null 2>&1
}

bed_attempt body
