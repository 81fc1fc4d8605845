#!/usr/bin/env bash
# A path that goes bad in the middle of a transfer (what a late ARP flux does): the plugin's
# QP fails with completion status 12, and its WARN carries the route diagnosis for that peer
# (the neighbour entry holds the wrong NIC's MAC, and the fix) instead of a bare status.
# rxe re-reads the neighbour table for every packet, so poisoning h0's entry for h1/eth0 with
# h1/eth1's MAC mid-transfer sends the QP's packets to a NIC that drops them.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
plugin_prereq

body() {
	local wrong right srv cli out rc t0 secs
	B up --hosts 2 --nics 2 --scenario fixed --owner "$BED_OWNER" >/dev/null
	wrong=$(bed_mac 1 1)
	right=$(bed_mac 1 0)
	echo "bed: 2 hosts x 2 NICs, scenario fixed; h1/eth0 is $right, h1/eth1 is $wrong"

	t_step "a long transfer h0/rxe0 -> h1/rxe0, poisoned after it started"
	drv_start srv 1 "${FAULT_ENV[@]}" -- --dev 0 --size 256K --iters 100000 \
		server "$(bed_ip 1 0):18661"
	wait_server 1 18661 "$srv"
	drv_start cli 0 "${FAULT_ENV[@]}" -- --dev 0 client "$(bed_ip 1 0):18661"
	wait_out "$cli" "connected [0-9]+ connection" 60 || t_fail "the client never connected"
	sleep 1
	B run 0 -- bash -c 'pgrep -x nccl-net-driver >/dev/null' ||
		t_fail "the client was not running any more when the path was to be broken"
	t0=$(date +%s.%N)
	B fault 0 arp-poison --nic 0 --peer 1:0 --mac "$wrong" || t_fail "could not poison"
	out=$(B wait --timeout 60 "$cli" 2>&1)
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
	echo "$out" | sed 's/^/  client| /'
	echo "(client ended ${secs} s after the poisoning)"
	B kill "$srv" >/dev/null 2>&1
	B wait "$srv" >/dev/null 2>&1

	[ $rc -eq 1 ] || t_fail "client exit $rc, want 1 (a plugin error)"
	grep -q "NCCL WARN.*RETRY_EXC_ERR" <<<"$out" ||
		t_fail "no WARN naming the completion status RETRY_EXC_ERR"
	grep -q "NCCL WARN.*RETRY_EXC_ERR.*neigh-wrong-mac" <<<"$out" ||
		t_fail "the completion error's WARN carries no route diagnosis (neigh-wrong-mac)"
	grep -q "NCCL WARN.*RETRY_EXC_ERR.*$wrong" <<<"$out" ||
		t_fail "the diagnosis does not name the wrong MAC $wrong"
	grep -q "NCCL WARN.*RETRY_EXC_ERR.*Fix: " <<<"$out" || t_fail "the diagnosis names no fix"
	t_ok "mid-transfer: status 12 reported with the cause (wrong MAC) and the fix, in ${secs} s"
}

bed_attempt body
