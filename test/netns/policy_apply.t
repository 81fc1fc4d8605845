#!/usr/bin/env bash
# roce-policy-routing: apply -> per-NIC rule/table/route, kernel route answers, ARP sysctls;
# second run changes nothing; --undo restores the recorded state exactly; mgmt NIC untouched.
. "$(dirname "$0")/policy_lib.sh"
rn_host_ns 3 1
H=$RN_HOST

# kernel's own egress choice for traffic sourced from an address
egress() { # src dst
	local w j
	read -ra w < <(ip -n "$H" -4 route get "$2" from "$1")
	for ((j = 0; j + 1 < ${#w[@]}; j++)); do [ "${w[j]}" = dev ] && { echo "${w[j + 1]}"; return; }; done
}
eff() { # nic knob: effective value = max(all, nic)
	local a d
	a=$(rn_in "$H" cat "/proc/sys/net/ipv4/conf/all/$2")
	d=$(rn_in "$H" cat "/proc/sys/net/ipv4/conf/$1/$2")
	echo $((a > d ? a : d))
}

# the problem this fixes: without policy routing, nic1's source address leaves via nic0
[ "$(egress "${RN_IP[1]}" "$RN_PEER_IP")" = nic0 ] ||
	rn_fail "precondition: expected main's first connected route (nic0) for nic1's address"

rn_snapshot "$H" >"$T/before"
mgmt_before=$(rn_in "$H" bash -c 'for f in /proc/sys/net/ipv4/conf/mgmt0/*; do echo "$f=$(<"$f")"; done')

rn_in "$H" "$TOOL" "${st[@]}" nic0 nic1 nic2 >"$T/out1" 2>&1 || { cat "$T/out1"; rn_fail "apply failed"; }
cat "$T/out1"

for i in 0 1 2; do
	nic=nic$i ip=${RN_IP[i]}
	rule=$(ip -n "$H" -N -4 rule show | while read -r p f a l t r; do
		[ "$f $a $l" = "from $ip lookup" ] && [ -z "$r" ] && echo "${p%:} $t"; done)
	[ -n "$rule" ] || rn_fail "$nic: no 'from $ip lookup' rule"
	set -- $rule
	[ "$1" -lt 32766 ] || rn_fail "$nic: rule priority $1 is not before main"
	tbl=$2
	got=$(ip -n "$H" -4 route show table "$tbl")
	[ "$(echo $got)" = "198.18.0.0/24 dev $nic scope link src $ip" ] ||
		rn_fail "$nic: table $tbl holds '$got'"
	[ "$(egress "$ip" "$RN_PEER_IP")" = "$nic" ] || rn_fail "$nic: route get from $ip does not egress $nic"
	[ "$(eff "$nic" arp_ignore)" = 1 ] || rn_fail "$nic: effective arp_ignore $(eff "$nic" arp_ignore)"
	[ "$(eff "$nic" arp_announce)" = 2 ] || rn_fail "$nic: effective arp_announce $(eff "$nic" arp_announce)"
	# source-bound ICMP to the peer works on every NIC
	rn_in "$H" ping -q -c 1 -W 2 -I "$ip" "$RN_PEER_IP" >/dev/null || rn_fail "$nic: ping from $ip failed"
	echo "$nic: rule -> table $tbl, egress $nic, arp_ignore 1, arp_announce 2"
done
tables=$(ip -n "$H" -N -4 rule show | while read -r p f a l t r; do [ "$a" != all ] && echo "$t"; done | sort -u | wc -l)
[ "$tables" = 3 ] || rn_fail "expected 3 distinct tables, got $tables"

# management NIC: no rule for its address, no route on it in other tables, sysctls as before
ip -n "$H" -4 rule show | grep -q 198.19.0.2 && rn_fail "a rule mentions the management address"
ip -n "$H" -4 route show table all | grep -v 'table local' | grep 'dev mgmt0' | grep -q table &&
	rn_fail "management NIC appears in a policy table"
mgmt_after=$(rn_in "$H" bash -c 'for f in /proc/sys/net/ipv4/conf/mgmt0/*; do echo "$f=$(<"$f")"; done')
[ "$mgmt_before" = "$mgmt_after" ] || rn_fail "sysctls of mgmt0 changed"

# idempotent: second run changes nothing and says so
rn_snapshot "$H" >"$T/after1"
rn_in "$H" "$TOOL" "${st[@]}" nic0 nic1 nic2 >"$T/out2" 2>&1 || { cat "$T/out2"; rn_fail "second run failed"; }
cat "$T/out2"
rn_snapshot "$H" >"$T/after2"
rn_assert_same "$T/after1" "$T/after2" "second run changed the configuration"
grep -v '^#' "$T/out2" && rn_fail "second run printed commands"
grep -qx '# nothing to change' "$T/out2" || rn_fail "second run does not say nothing changed"

# naming the management NIC is refused without --force, and changes nothing
rn_in "$H" "$TOOL" "${st[@]}" mgmt0 >"$T/out3" 2>&1
rc=$?
[ $rc = 2 ] || rn_fail "naming mgmt0: exit $rc, want 2"
grep -q 'management NIC' "$T/out3" || rn_fail "no management-NIC message: $(cat "$T/out3")"
rn_snapshot "$H" >"$T/after3"
rn_assert_same "$T/after1" "$T/after3" "refused run changed something"

# undo: exactly the recorded state again
rn_in "$H" "$TOOL" "${st[@]}" --undo >"$T/out4" 2>&1 || { cat "$T/out4"; rn_fail "undo failed"; }
cat "$T/out4"
rn_snapshot "$H" >"$T/after-undo"
rn_assert_same "$T/before" "$T/after-undo" "undo did not restore the state"
[ -z "$(ls -A "$T/state")" ] || rn_fail "state dir not empty after undo: $(ls -A "$T/state")"
rn_in "$H" "$TOOL" "${st[@]}" --undo | grep -q 'nothing to undo' || rn_fail "second undo did something"
echo "PASS"
