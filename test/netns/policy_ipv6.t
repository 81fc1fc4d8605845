#!/usr/bin/env bash
# roce-policy-routing --family 6|both: per-NIC IPv6 rules and routes ('ip -6 rule', 'ip -6
# route ... table') for each NIC's global address (never the link-local one), no sysctl for
# IPv6 (neighbour answers come only from the owning NIC); both families share the NIC's
# table. A NIC without an address of the asked family is refused up front (exit 2, nothing
# changed) with the family it lacks and the --family that fits. The dry run pasted into a
# shell equals the real run; --undo restores both families.
. "$(dirname "$0")/policy_lib.sh"
P6=2001:db8:18:    # documentation prefix; the host's /64 is 2001:db8:18::/64

bed() {
	rn_ns RN_PEER peer
	rn_ns H host
	rn_bridge "$RN_PEER" br0 198.18.0.254/24
	ip -n "$RN_PEER" addr add "${P6}:fe/64" dev br0 nodad
	local i
	for i in 0 1 2; do
		rn_veth "$H" "nic$i" "$RN_PEER" "hp$i" br0 "198.18.0.$((11 + i))/24"
		ip -n "$H" addr add "${P6}:$((11 + i))/64" dev "nic$i" nodad
	done
	rn_veth "$H" v4only "$RN_PEER" hp3 br0 198.18.0.14/24
	rn_veth "$H" v6only "$RN_PEER" hp4 br0
	ip -n "$H" addr add "${P6}:15/64" dev v6only nodad
	rn_in "$H" sysctl -qw net.ipv6.conf.v4only.disable_ipv6=1
}
snap() {
	rn_snapshot "$1"
	echo "== ipv6"
	ip -n "$1" -6 rule show
	ip -n "$1" -6 route show table all | grep -v '^\(local\|multicast\|anycast\) \|proto kernel\|fe80::'
}
bed
H1=$H
snap "$H" >"$T/before"

n=0
refuse() { # pattern args...
	local pat=$1
	shift
	n=$((n + 1))
	rn_in "$H" "$TOOL" --state-dir "$T/st" "$@" >"$T/r" 2>&1
	[ $? = 2 ] || { cat "$T/r"; rn_fail "'$*' not refused with exit 2"; }
	grep -q -- "$pat" "$T/r" || { cat "$T/r"; rn_fail "'$*': message lacks '$pat'"; }
	snap "$H" >"$T/now"
	rn_assert_same "$T/before" "$T/now" "'$*' changed something"
	echo "ok: refused '$*': $(cat "$T/r")"
}
refuse 'v6only: has no IPv4 address.*--family 6' nic0 v6only
refuse 'v4only: has no global IPv6 address.*--family 4' --family 6 nic0 v4only
refuse 'v4only: has no global IPv6 address.*--family 4 for this NIC alone' --family both nic0 v4only
refuse '--family must be' --family 5 nic0

# --family 6: IPv6 rule and route per NIC, no sysctl
rn_in "$H" "$TOOL" --state-dir "$T/st" --family 6 --dry-run nic0 nic1 nic2 v6only >"$T/dry6" 2>&1 || { cat "$T/dry6"; rn_fail "dry run 6"; }
rn_in "$H" "$TOOL" --state-dir "$T/st" --family 6 nic0 nic1 nic2 v6only >"$T/out6" 2>&1 || { cat "$T/out6"; rn_fail "family 6"; }
cat "$T/out6"
grep -q '^sysctl' "$T/out6" && rn_fail "--family 6 set a sysctl"
t1=$((100 + $(rn_in "$H" cat /sys/class/net/nic1/ifindex)))
grep -qx "ip -6 rule add from ${P6}:12 lookup $t1 priority $t1" "$T/out6" || rn_fail "no ip -6 rule for nic1 in table $t1"
grep -qx "ip -6 route replace ${P6}:/64 dev nic1 src ${P6}:12 table $t1" "$T/out6" || rn_fail "no ip -6 route for nic1"
grep -q 'fe80' "$T/out6" && rn_fail "a link-local address was used"
for i in 0 1 2; do
	dev=$(ip -n "$H" -6 route get "${P6}:fe" from "${P6}:$((11 + i))" | sed -n 's/.* dev \([^ ]*\).*/\1/p')
	[ "$dev" = "nic$i" ] || rn_fail "from ${P6}:$((11 + i)) leaves $dev, not nic$i"
done
rn_in "$H" ping -6 -c1 -W2 -I "${P6}:12" "${P6}:fe" >/dev/null || rn_fail "no IPv6 ping from nic1's address"
rn_in "$H" "$TOOL" --state-dir "$T/st" --family 6 nic0 nic1 nic2 v6only >"$T/re" 2>&1 || rn_fail "rerun"
grep -qx '# nothing to change' "$T/re" || { cat "$T/re"; rn_fail "rerun changed something"; }
rn_assert_same <(grep -v '^#' "$T/dry6") <(grep -v '^#' "$T/out6") "dry run and real run differ (6)"

# --family both on top: the IPv4 half joins the same tables
rn_in "$H" "$TOOL" --state-dir "$T/st" --family both nic0 nic1 nic2 >"$T/both" 2>&1 || { cat "$T/both"; rn_fail "family both"; }
cat "$T/both"
grep -qx "ip rule add from 198.18.0.12 lookup $t1 priority $t1" "$T/both" || rn_fail "IPv4 rule of nic1 not in table $t1"
grep -q '^ip -6 rule add' "$T/both" && rn_fail "the IPv6 rules were added twice"
grep -qx 'sysctl -w net.ipv4.conf.all.arp_ignore=1' "$T/both" || rn_fail "no ARP sysctls with IPv4"
snap "$H" >"$T/applied"
rn_in "$H" "$TOOL" --state-dir "$T/st" --undo >"$T/u" 2>&1 || { cat "$T/u"; rn_fail "undo"; }
snap "$H" >"$T/now"
rn_assert_same "$T/before" "$T/now" "undo of both families"

# the dry run of --family both pasted into a shell equals the real run
rn_in "$H" "$TOOL" --state-dir "$T/st" --family both --dry-run nic0 nic1 nic2 >"$T/dry" 2>&1 || rn_fail "dry run both"
rn_in "$H" "$TOOL" --state-dir "$T/st" --family both nic0 nic1 nic2 >"$T/real" 2>&1 || rn_fail "real both"
snap "$H" >"$T/real-state"
bed
grep -v '^#' "$T/dry" | rn_in "$H" bash -e >/dev/null || rn_fail "pasted commands failed"
snap "$H" >"$T/pasted"
sed -i "s/$H1/HOST/g" "$T/real-state"; sed -i "s/$H/HOST/g" "$T/pasted"
rn_assert_same "$T/real-state" "$T/pasted" "pasted dry run differs from the real run"
# --persist --family both: every manager's files carry both halves; netplan's YAML renders
# (netplan generate, when installed) to IPv6 routes and rules; --undo removes them
tree() { (cd "$1" && find . -mindepth 1 | sort); }
for m in netplan networkmanager networkd ifupdown network-scripts; do
	R=$T/root-$m
	mkdir -p "$R/etc/network"
	echo "source /etc/network/interfaces.d/*" >"$R/etc/network/interfaces"
	tree "$R" >"$T/tree0"
	rn_in "$H" "$TOOL" --state-dir "$T/st-$m" --root "$R" --persist --no-apply --manager $m \
		--family both nic0 nic1 >"$T/p" 2>&1 || { cat "$T/p"; rn_fail "$m: persist both failed"; }
	grep -rq "${P6}:11" "$R/etc" || rn_fail "$m: no IPv6 address in the files"
	grep -rq "198.18.0.11" "$R/etc" || rn_fail "$m: no IPv4 address in the files"
	if [ $m = netplan ] && command -v netplan >/dev/null; then
		cp -a "$R" "$T/gen"
		netplan generate --root-dir "$T/gen" 2>"$T/np.err" || { cat "$T/np.err"; rn_fail "netplan rejects the YAML"; }
		f=$T/gen/run/systemd/network/10-netplan-nic0.network
		grep -qx "From=${P6}:11" "$f" || { cat "$f"; rn_fail "netplan: no IPv6 rule for nic0"; }
		grep -qx "Destination=${P6}:/64" "$f" || rn_fail "netplan: no IPv6 route for nic0"
		rm -rf "$T/gen"
	fi
	rn_in "$H" "$TOOL" --state-dir "$T/st-$m" --undo >/dev/null 2>&1 || rn_fail "$m: undo"
	rn_assert_same "$T/tree0" <(tree "$R") "$m: undo left files"
	echo "ok: persist --family both with $m"
done
echo "PASS ($n refusals)"
