#!/usr/bin/env bash
# roce-policy-routing with dotted netdev names (VLANs like ens1f0np0.100) and a bond as the
# RoCE netdev: sysctls in the slash form (sysctl -w net/ipv4/conf/ens1f0np0.100/arp_ignore=1,
# the dotted form fails), in the runtime and in sysctl.d; rules and routes per NIC; the
# printed commands pasted into a shell give the same state; --undo restores it. Real 802.1Q
# VLAN and bond netdevs when the kernel has them (8021q, bonding), else veths with the same
# names (the naming is what the script must get right) and the test says so.
. "$(dirname "$0")/policy_lib.sh"

have_kind() { # kind: can this kernel create such a netdev?
	local ns=rn-kind-$$ ok=1
	ip netns add "$ns" || return 1
	case $1 in
	vlan) ip -n "$ns" link add b0 type veth peer name b1 2>/dev/null &&
		ip -n "$ns" link add link b0 name b0.7 type vlan id 7 2>/dev/null || ok=0 ;;
	bond) ip -n "$ns" link add bd0 type bond 2>/dev/null || ok=0 ;;
	esac
	ip netns del "$ns"
	[ $ok = 1 ]
}
VLAN=0 BOND=0
have_kind vlan && VLAN=1
have_kind bond && BOND=1
echo "real VLANs: $VLAN, real bonds: $BOND"

# bed: RN_PEER's br0 (198.18.0.254/24); on H two VLAN netdevs and a bond, one subnet
bed() {
	rn_ns RN_PEER peer
	rn_ns H host
	rn_in "$RN_PEER" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	rn_in "$H" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	rn_bridge "$RN_PEER" br0
	if [ $VLAN = 1 ]; then
		ip -n "$RN_PEER" link add link br0 name br0.100 type vlan id 100
		ip -n "$RN_PEER" link set br0.100 up
		ip -n "$RN_PEER" addr add 198.18.0.254/24 dev br0.100
	else
		ip -n "$RN_PEER" addr add 198.18.0.254/24 dev br0
	fi
	local i
	for i in 0 1; do
		if [ $VLAN = 1 ]; then
			rn_veth "$H" "ens1f${i}np$i" "$RN_PEER" "hp$i" br0
			ip -n "$H" link add link "ens1f${i}np$i" name "ens1f${i}np$i.100" type vlan id 100
		else
			rn_veth "$H" "ens1f${i}np$i.100" "$RN_PEER" "hp$i" br0
		fi
		ip -n "$H" addr add "198.18.0.$((11 + i))/24" dev "ens1f${i}np$i.100"
		ip -n "$H" link set "ens1f${i}np$i.100" up
	done
	if [ $BOND = 1 ] && [ $VLAN = 0 ]; then
		ip -n "$H" link add bond0 type bond mode active-backup
		ip -n "$H" link add bslave0 type veth peer name hp2 netns "$RN_PEER"
		ip -n "$RN_PEER" link set hp2 master br0 up
		ip -n "$H" link set bslave0 master bond0
		ip -n "$H" link set bond0 up
	elif [ $BOND = 0 ]; then
		rn_veth "$H" bond0 "$RN_PEER" hp2 br0
	fi
	if [ $BOND = 0 ] || [ $VLAN = 0 ]; then
		ip -n "$H" addr add 198.18.0.13/24 dev bond0
	fi
}
NICS=(ens1f0np0.100 ens1f1np1.100)
bed
[ $BOND = 0 ] || [ $VLAN = 0 ] && NICS+=(bond0)   # a bond on the untagged bridge only
IPS=(198.18.0.11 198.18.0.12 198.18.0.13)
HOST1=$H

rn_snapshot "$H" >"$T/before"
rn_in "$H" "$TOOL" --state-dir "$T/st" --dry-run "${NICS[@]}" >"$T/dry" 2>&1 || { cat "$T/dry"; rn_fail "dry run failed"; }
rn_in "$H" "$TOOL" --state-dir "$T/st" "${NICS[@]}" >"$T/out" 2>&1 || { cat "$T/out"; rn_fail "apply failed"; }
cat "$T/out"
grep -qx 'sysctl -w net/ipv4/conf/ens1f0np0.100/arp_ignore=1' "$T/out" || rn_fail "no slash-form sysctl for the VLAN"
grep -q 'sysctl -w net\.ipv4\.conf\.ens1f0np0\.100\.' "$T/out" && rn_fail "dotted sysctl key for a dotted name"
for n in "${NICS[@]}"; do
	[ "$(rn_in "$H" cat "/proc/sys/net/ipv4/conf/$n/arp_ignore")" = 1 ] || rn_fail "$n arp_ignore not 1"
	[ "$(rn_in "$H" cat "/proc/sys/net/ipv4/conf/$n/arp_announce")" = 2 ] || rn_fail "$n arp_announce not 2"
done
for i in "${!NICS[@]}"; do
	dev=$(ip -n "$H" -4 route get 198.18.0.254 from "${IPS[i]}" | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -n1)
	[ "$dev" = "${NICS[i]}" ] || rn_fail "from ${IPS[i]} leaves $dev, not ${NICS[i]}"
done
rn_snapshot "$H" >"$T/applied"

# the dry run's commands, pasted into a shell on a fresh copy of the host, give the same state
grep -v '^#' "$T/dry" >"$T/cmds"
rn_assert_same "$T/cmds" <(grep -v '^#' "$T/out") "dry run and real run print other commands"
bed
rn_in "$H" bash -e "$T/cmds" >/dev/null || rn_fail "pasted commands failed"
rn_snapshot "$H" >"$T/pasted"
rn_assert_same "$T/applied" "$T/pasted" "pasted dry-run commands give another state"

# persisted sysctls use the slash form too (sysctl.d reads it as a path)
mkdir -p "$T/root/etc/systemd/network"
rn_in "$HOST1" "$TOOL" --state-dir "$T/st2" --root "$T/root" --persist --no-apply --manager networkd "${NICS[@]}" >"$T/p" 2>&1 ||
	{ cat "$T/p"; rn_fail "persist failed"; }
grep -qx 'net/ipv4/conf/ens1f1np1.100/arp_announce = 2' "$T/root/etc/sysctl.d/90-roce-multinic.conf" ||
	{ cat "$T/root/etc/sysctl.d/90-roce-multinic.conf"; rn_fail "sysctl.d lacks the slash form"; }
rn_in "$HOST1" sysctl -p "$T/root/etc/sysctl.d/90-roce-multinic.conf" >/dev/null || rn_fail "sysctl -p rejects the file"
grep -qx 'Name=ens1f0np0.100' "$T/root/etc/systemd/network/10-roce-ens1f0np0.100.network" || rn_fail "networkd file for the VLAN"
rn_in "$HOST1" "$TOOL" --state-dir "$T/st2" --undo >/dev/null || rn_fail "undo of persist failed"
[ -z "$(find "$T/root" -type f)" ] || rn_fail "undo left files: $(find "$T/root" -type f)"

# netplan: a VLAN the site's netplan defines under vlans: gets our routes under vlans: too
# (under ethernets: netplan would reject the file). Without the 8021q module the netdev is
# a veth, so `ip -d link` is made to say what it says for a VLAN.
if command -v netplan >/dev/null; then
	NP=$T/np
	mkdir -p "$NP/etc/netplan" "$T/bin"
	printf '%s\n' "network:" "  version: 2" "  ethernets:" "    ens1f0np0: {}" "  vlans:" \
		"    ens1f0np0.100:" "      id: 100" "      link: ens1f0np0" "      addresses: [198.18.0.11/24]" \
		>"$NP/etc/netplan/01-site.yaml"
	chmod 600 "$NP/etc/netplan/01-site.yaml"
	PATHV=$PATH
	if [ $VLAN = 0 ]; then
		real_ip=$(command -v ip)
		cat >"$T/bin/ip" <<EOT
#!/bin/bash
if [ "\$*" = "-d -o link show dev ens1f0np0.100" ]; then
	echo '9: ens1f0np0.100@ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\    link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff promiscuity 0 allmulti 0 minmtu 0 maxmtu 65535 \    vlan protocol 802.1Q id 100 <REORDER_HDR> addrgenmode eui64'
	exit 0
fi
exec $real_ip "\$@"
EOT
		chmod +x "$T/bin/ip"
		PATHV=$T/bin:$PATH
	fi
	rn_in "$HOST1" env PATH="$PATHV" "$TOOL" --state-dir "$T/st3" --root "$NP" --persist --no-apply ens1f0np0.100 >"$T/np.out" 2>&1 ||
		{ cat "$T/np.out"; rn_fail "netplan persist for the VLAN failed"; }
	# (the file itself is judged by netplan: under ethernets: it is rejected)
	netplan generate --root-dir "$NP" 2>"$T/np.err" || { cat "$T/np.err" "$NP/etc/netplan/90-roce-ens1f0np0.100.yaml"; rn_fail "netplan rejects the VLAN's file"; }
	f=$NP/run/systemd/network/10-netplan-ens1f0np0.100.network
	grep -qx 'From=198.18.0.11' "$f" || { cat "$f"; rn_fail "netplan: the VLAN lost its rule"; }
	grep -qx 'Address=198.18.0.11/24' "$f" || rn_fail "netplan: the VLAN lost its address"
	echo "ok: netplan file for the VLAN merges with the site's vlans: entry"
fi

rn_in "$HOST1" "$TOOL" --state-dir "$T/st" --undo >"$T/u" 2>&1 || { cat "$T/u"; rn_fail "undo failed"; }
rn_snapshot "$HOST1" >"$T/now"
rn_assert_same "$T/before" "$T/now" "undo did not restore"
echo "PASS (real VLANs: $VLAN, real bonds: $BOND)"
