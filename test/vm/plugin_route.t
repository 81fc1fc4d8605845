#!/usr/bin/env bash
# The plugin's route checks end to end on real kernel Soft-RoCE (2 guests x 2 NICs):
# - fixed hosts, but h0's neighbour entry for h1/eth0 poisoned with h1/eth1's MAC: a static
#   (permanent) entry is refused at init, rxe0 named with neigh-wrong-mac and 'ip neigh del';
#   a learned one (what ARP flux does) makes connect refused within seconds, naming the wrong
#   MAC, instead of a QP that hangs or dies with completion error 12 later; nccl-net-bench
#   says "connection refused by the plugin" with the reason and exits 1;
# - broken hosts (kernel defaults, one /24) with NCCL_ROCE_ROUTE_CHECK=strict: init offers no
#   device, naming the ARP-flux cause and the fix (scripts/roce-policy-routing).
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
# The fixed scenario from plain ip rules and sysctls: the script costs seconds per boot and per
# reset under TCG; doctor.t and plugin_pods.t run scripts/roce-policy-routing itself.
export BED_POLICY=${BED_POLICY:-plain}
plugin_prereq

since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}'; }

body() {
	local wrong right t0 out rc j
	B up --hosts 2 --nics 2 --scenario fixed --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 hosts x 2 NICs, scenario fixed"
	wrong=$(bed_mac 1 1)
	right=$(bed_mac 1 0)

	t_step "control: fixed hosts connect and move data on rxe0"
	drv_pair 18651 0 "--size 65537 --iters 4" "${FAULT_ENV[@]}"
	expect_ok "fixed: h0/rxe0 -> h1/rxe0 connects and moves checked data"

	t_step "a static entry: h0 eth0 holds h1 eth1's MAC ($wrong) for $(bed_ip 1 0), nud permanent"
	B fault 0 arp-poison --nic 0 --peer 1:0 --mac "$wrong" || rn_fail "could not poison"
	out=$(drv_run 0 -- --comms 1 probe)
	echo "$out" | grep -E "WARN|devices:" | sed 's/^/  | /'
	grep -q "NCCL WARN.*rxe0:1 \[neigh-wrong-mac\]: peer $(bed_ip 1 0) is reached at the wrong MAC (MAC $wrong instead of $right) from eth0: a PERMANENT neighbour entry.*; fix: ip neigh del $(bed_ip 1 0) dev eth0" <<<"$out" ||
		rn_fail "static entry: init does not refuse rxe0 naming the entry and its fix"
	grep -q "NCCL WARN.*refused by the route check: rxe0:1 eth0 neigh-wrong-mac" <<<"$out" ||
		rn_fail "static entry: the summary does not name rxe0's refusal"
	rn_log "ok: static entry: init refuses rxe0 with neigh-wrong-mac and 'ip neigh del' (an ARP probe gets $right)"

	# What ARP flux leaves is a learned entry, which only the connection check can judge
	# (against the MAC the peer announces): the same wrong MAC, reachable for the test's time.
	t_step "poisoned ARP: h0 eth0 learned h1 eth1's MAC ($wrong) for $(bed_ip 1 0)"
	B run 0 -- sh -c "sysctl -qw net.ipv4.neigh.eth0.base_reachable_time_ms=600000 &&
		ip neigh replace $(bed_ip 1 0) lladdr $wrong dev eth0 nud reachable" ||
		rn_fail "could not make the entry a learned one"
	t0=$(date +%s.%N)
	drv_pair 18652 0 "--size 65537 --iters 4 --timeout-ms 20000" "${FAULT_ENV[@]}"
	show_pair
	echo "(client ended $(since "$t0") s after the start, server included)"
	[ "$cli_rc" -eq 1 ] || rn_fail "poisoned: client exit $cli_rc, want 1"
	grep -q "nccl-net-driver: connect: " <<<"$cli_out" ||
		rn_fail "poisoned: the client did not fail at connect"
	grep -q "NCCL WARN.*connection refused here.*wrong NIC (MAC $wrong instead of $right)" \
		<<<"$cli_out" || rn_fail "poisoned: the refusal does not name the wrong MAC"
	grep -q "arp_ignore=1" <<<"$cli_out" || rn_fail "poisoned: the refusal gives no fix"
	[ "$srv_rc" -ne 0 ] || rn_fail "poisoned: the server accepted a refused connection"
	grep -q "NCCL WARN.*refused by the peer" <<<"$srv_out" ||
		rn_fail "poisoned: the server does not say the peer refused"
	rn_log "ok: poisoned: connect refused with the cause (wrong MAC $wrong) on both ends"

	t_step "nccl-net-bench over the poisoned entry: refused, with the reason"
	j=$(bg --timeout 60 1 -- env "${PLUG_ENV[@]}" "${FAULT_ENV[@]}" stdbuf -oL \
		"$PLUG_BIN/nccl-net-bench" -d rxe0 -p 18653 --timeout 20)
	out=$(bench_run 0 "${FAULT_ENV[@]}" -- -d rxe0 -p 18653 --timeout 20 -s 64K -n 10 "$(bed_ip 1 0)")
	rc=$?
	B wait "$j" >/dev/null 2>&1
	echo "$out" | sed 's/^/  bench| /'
	[ $rc -eq 1 ] || rn_fail "bench over a poisoned entry: exit $rc, want 1"
	grep -q "^nccl-net-bench: connection refused by the plugin: .*wrong NIC (MAC $wrong" <<<"$out" ||
		rn_fail "bench: no 'connection refused by the plugin' with the cause"
	grep -q "NCCL WARN" <<<"$out" || rn_fail "bench: the plugin's WARN line is not shown"
	rn_log "ok: bench: 'connection refused by the plugin' with the cause, exit 1"

	t_step "broken hosts (kernel defaults), NCCL_ROCE_ROUTE_CHECK=strict: init refuses"
	B scenario broken || rn_fail "scenario broken failed"
	out=$(drv_run 0 NCCL_ROCE_ROUTE_CHECK=strict -- --require-devices --comms 1 probe)
	rc=$?
	echo "$out" | sed 's/^/  | /'
	[ $rc -eq 3 ] || rn_fail "broken + strict: probe exit $rc, want 3 (no device)"
	grep -q "NCCL WARN.*refused by the route check: .*arp-flux" <<<"$out" ||
		rn_fail "broken + strict: the refusal does not name arp-flux"
	grep -q "NCCL WARN.*\[arp-flux\]: .*; fix: sysctl -w " <<<"$out" ||
		rn_fail "broken + strict: the refusal does not give the fix"
	grep -q "NCCL WARN.*roce-policy-routing" <<<"$out" && ! grep -q "scripts/roce-policy" <<<"$out" ||
		rn_fail "broken + strict: the fix does not name the installed roce-policy-routing"
	rn_log "ok: broken + strict: init offers no device, cause arp-flux, its fix and roce-policy-routing"
}

bed_attempt body
