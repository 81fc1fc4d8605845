#!/usr/bin/env bash
# roce-policy-routing places each NIC's rule ahead of the rules that would shadow it, and
# moves an existing per-NIC rule that sits behind one (delete + add ahead; re-adding it at
# the same priority would fail with "File exists" and change nothing): wg-quick's
# priority-less rules (added after the per-NIC rules, so ahead of them), Tailscale's rules
# with an exit node (table 52 at 5270), rules placed after main (40000). After the script,
# `ip route get <peer> from <ip>` leaves through the NIC; a rerun changes nothing; --undo
# puts the rules back where they were; the dry run pasted into a shell does the same.
. "$(dirname "$0")/policy_lib.sh"

egress_ok() { # what
	local i dev
	for i in 0 1 2; do
		dev=$(ip -n "$H" -4 route get "$RN_PEER_IP" from "${RN_IP[i]}" | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n1)
		[ "$dev" = "nic$i" ] || { ip -n "$H" rule show >&2; rn_fail "$1: from ${RN_IP[i]} to $RN_PEER_IP leaves $dev, not nic$i"; }
	done
}
egress_bad() { # what: at least one NIC's traffic leaves elsewhere (the layout is broken)
	local i dev
	for i in 0 1 2; do
		dev=$(ip -n "$H" -4 route get "$RN_PEER_IP" from "${RN_IP[i]}" | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n1)
		[ "$dev" = "nic$i" ] || return 0
	done
	rn_fail "$1: the layout is not broken to begin with"
}
per_nic_rules() { # prio0 table0: rules from each NIC's IP into tables table0+i at prio0+i
	local i
	for i in 0 1 2; do
		ip -n "$H" route add 198.18.0.0/24 dev "nic$i" src "${RN_IP[i]}" table $(($2 + i))
		ip -n "$H" rule add from "${RN_IP[i]}" lookup $(($2 + i)) priority $(($1 + i))
	done
}
check() { # what
	local st=(--state-dir "$T/state-$1")
	egress_bad "$1"
	rn_snapshot "$H" >"$T/before"
	rn_in "$H" "$TOOL" "${st[@]}" --dry-run nic0 nic1 nic2 >"$T/dry" 2>&1 || { cat "$T/dry"; rn_fail "$1: dry run failed"; }
	rn_in "$H" "$TOOL" "${st[@]}" nic0 nic1 nic2 >"$T/out" 2>&1 || { cat "$T/out"; rn_fail "$1: script failed"; }
	cat "$T/out"
	grep -q '^ip rule del from 198.18.0.11 lookup 200 priority ' "$T/out" || rn_fail "$1: nic0's rule not moved"
	egress_ok "$1"
	rn_in "$H" "$TOOL" "${st[@]}" nic0 nic1 nic2 >"$T/out2" 2>&1 || { cat "$T/out2"; rn_fail "$1: rerun failed"; }
	grep -qx '# nothing to change' "$T/out2" || { cat "$T/out2"; rn_fail "$1: rerun changed something"; }
	rn_in "$H" "$TOOL" "${st[@]}" --undo >"$T/out3" 2>&1 || { cat "$T/out3"; rn_fail "$1: undo failed"; }
	rn_snapshot "$H" >"$T/after"
	rn_assert_same "$T/before" "$T/after" "$1: undo did not restore the rules"
	# the dry run pasted into a shell moves the rules the same way
	rn_in "$H" bash -e <"$T/dry" >/dev/null 2>&1 || rn_fail "$1: pasted dry run failed"
	egress_ok "$1 (pasted)"
	echo "ok: $1"
}

# 1. wg-quick (full tunnel) brought up after the per-NIC rules: its priority-less rules
#    land ahead of them; the suppress_prefixlength rule sends the NICs' subnet to main
rn_host_ns 3 1
H=$RN_HOST
per_nic_rules 100 200
ip -n "$H" link add wg0 type veth peer name wg0p
ip -n "$H" link set wg0p up; ip -n "$H" link set wg0 up
ip -n "$H" route add default dev wg0 table 51820
ip -n "$H" rule add not fwmark 0xca6c lookup 51820
ip -n "$H" rule add lookup main suppress_prefixlength 0
ip -n "$H" rule show
check "wg-quick"

# 2. Tailscale with an exit node: table 52 holds a default route, rules 5210..5270, the
#    per-NIC rules at 6000 behind them
rn_host_ns 3 1
H=$RN_HOST
per_nic_rules 6000 200
ip -n "$H" link add ts0 type veth peer name ts0p
ip -n "$H" link set ts0p up; ip -n "$H" link set ts0 up
ip -n "$H" route add default dev ts0 table 52
ip -n "$H" rule add fwmark 0x80000/0xff0000 lookup main priority 5210
ip -n "$H" rule add fwmark 0x80000/0xff0000 lookup default priority 5230
ip -n "$H" rule add fwmark 0x80000/0xff0000 unreachable priority 5250
ip -n "$H" rule add lookup 52 priority 5270
check "tailscale"

# 3. per-NIC rules placed after main (40000): never consulted
rn_host_ns 3 1
H=$RN_HOST
per_nic_rules 40000 200
check "after main"
echo PASS
