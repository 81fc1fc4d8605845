#!/usr/bin/env bash
# roce-policy-routing keeps its undo record under <root>/var/lib/roce-policy-routing (not
# /run), keyed by a name that survives a reboot, and --undo after a reboot restores the
# runtime state and removes the files --persist wrote. Reboot = the host's namespace is
# deleted and created again under the same name, its NICs come back with their addresses
# and the persisted configuration is applied as a boot would (sysctl.d, ifupdown post-up).
. "$(dirname "$0")/policy_lib.sh"
R=$T/root
mkdir -p "$R/etc/network"
echo "source /etc/network/interfaces.d/*" >"$R/etc/network/interfaces"
tree() { (cd "$1" && find . -mindepth 1 | sort); }
tree "$R" >"$T/tree0"

rn_ns RN_PEER peer
rn_bridge "$RN_PEER" br0 198.18.0.254/24
H=rn-reboot-$$
boot() { # the host as the base network configuration brings it up
	ip netns add "$H" || rn_fail "ip netns add $H"
	_rn_netns+=("$H")
	ip -n "$H" link set lo up
	rn_in "$H" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	local i
	for i in 0 1; do
		ip -n "$RN_PEER" link del "hp$i" 2>/dev/null
		rn_veth "$H" "nic$i" "$RN_PEER" "hp$i" br0 "198.18.0.$((11 + i))/24"
	done
}
egress_ok() {
	local i dev
	for i in 0 1; do
		dev=$(ip -n "$H" -4 route get 198.18.0.254 from "198.18.0.$((11 + i))" | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n1)
		[ "$dev" = "nic$i" ] || rn_fail "$1: from 198.18.0.$((11 + i)) leaves $dev, not nic$i"
	done
}
boot
rn_snapshot "$H" >"$T/fresh"
rn_in "$H" "$TOOL" --root "$R" --persist nic0 nic1 >"$T/out" 2>&1 || { cat "$T/out"; rn_fail "apply --persist failed"; }
cat "$T/out"
grep -q "^# done: .* revert with: roce-policy-routing --undo --root $R\$" "$T/out" || rn_fail "the revert hint lacks --root"
[ -s "$R/var/lib/roce-policy-routing/netns-$H.state" ] || rn_fail "no state under $R/var/lib/roce-policy-routing: $(tree "$R")"
egress_ok "applied"

# reboot: runtime state is gone, the state file and the persisted files stay
ip netns del "$H"
boot
rn_snapshot "$H" >"$T/booted-bare"
rn_assert_same "$T/fresh" "$T/booted-bare" "the simulated reboot kept runtime state"
rn_in "$H" sysctl -q -p "$R/etc/sysctl.d/90-roce-multinic.conf" >/dev/null || rn_fail "sysctl.d file does not load"
for f in "$R"/etc/network/interfaces.d/roce-*; do
	sed -n 's/^[[:space:]]*post-up //p' "$f" | rn_in "$H" bash -e || rn_fail "post-up of $f failed"
done
egress_ok "after reboot"

rn_in "$H" "$TOOL" --root "$R" --undo >"$T/undo" 2>&1 || { cat "$T/undo"; rn_fail "undo after reboot failed"; }
cat "$T/undo"
grep -q 'nothing to undo' "$T/undo" && rn_fail "undo lost its record in the reboot"
rn_snapshot "$H" >"$T/after"
rn_assert_same "$T/fresh" "$T/after" "undo after reboot did not restore the runtime state"
[ -z "$(ls -A "$R/var/lib/roce-policy-routing")" ] || rn_fail "undo left state: $(ls -A "$R/var/lib/roce-policy-routing")"
rm -r "$R/var"   # the emptied state dir stays (on a real root /var/lib was there before us)
tree "$R" >"$T/tree1"
rn_assert_same "$T/tree0" "$T/tree1" "undo after reboot left persisted files"
echo PASS
