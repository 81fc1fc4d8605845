#!/usr/bin/env bash
# Field layouts, neighbour entries the kernel never checks: a PERMANENT (or NOARP) entry
# for the gateway or a peer of the subnet holding a MAC nobody answers with (a static-ARP
# workaround's leftover; 'ip neigh flush' keeps it). Host mode asks an ARP probe (root)
# who answers for each such entry and names neigh-wrong-mac with 'ip neigh del IP dev
# DEV'; the connection check (the plugin's, and the doctor's peer mode) names it for the
# peer's own entry. Each fix pasted, judged again.
. "$(dirname "$0")/field_lib.sh"

NICS=(ens1f0np0 ens1f1np1.100)
DEVS=$(IFS=,; echo "${NICS[*]}")
GW=198.18.0.254
PEER=198.18.0.21
BAD=02:00:5e:10:00:99 # nobody's
seeded() { # two NICs in 198.18.0.0/24, per-NIC tables with a default via the ToR on s0; a peer
	local i ip
	fl_host
	fl_seg s0
	for i in 0 1; do
		ip=198.18.0.$((11 + i))
		fl_nic "${NICS[i]}" s0 $ip/24
		ip -n "$H" route add 198.18.0.0/24 dev "${NICS[i]}" src $ip table $((101 + i))
		ip -n "$H" route add default via $GW dev "${NICS[i]}" table $((101 + i))
		ip -n "$H" rule add from $ip lookup $((101 + i)) priority $((101 + i))
	done
	fl_sys net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
	fl_peer s0 $GW/24
	fl_peer s0 $PEER/24
	SWMAC=$(ip -n "$SW" -o link show s0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
}
# Right static entries are no finding (the probe's answer is theirs).
seeded
ip -n "$H" neigh replace $GW lladdr "$SWMAC" nud permanent dev ens1f0np0
ip -n "$H" neigh replace $PEER lladdr "$SWMAC" nud noarp dev ens1f1np1.100
fl_layout "static entries with the right MACs" "$DEVS" ens1f0np0= ens1f1np1.100=

seeded
ip -n "$H" neigh replace $GW lladdr $BAD nud permanent dev ens1f0np0
ip -n "$H" neigh replace $PEER lladdr $BAD nud noarp dev ens1f1np1.100
ip -n "$H" neigh flush dev ens1f0np0 # what one tries first: it keeps them
fl_layout "a PERMANENT gateway entry, a NOARP peer entry, wrong MACs" "$DEVS" \
	ens1f0np0=neigh-wrong-mac ens1f1np1.100=neigh-wrong-mac
grep -qx "ip neigh del $GW dev ens1f0np0" "$FL_PASTE_LAST" || rn_fail "the gateway's fix"
grep -qx "ip neigh del $PEER dev ens1f1np1.100" "$FL_PASTE_LAST" || rn_fail "the peer's fix"
jq_py "$FL_T/j$((FL_J - 1)).json" "[f['message'] for n in d['nics'] for f in n['findings']][0]" |
	grep -q "^gateway $GW is reached at the wrong MAC (MAC $BAD instead of $SWMAC) from ens1f0np0: a PERMANENT" ||
	rn_fail "the message does not name the gateway's entry"

# Without CAP_NET_RAW nothing can be told: no finding, as before.
seeded
ip -n "$H" neigh replace $GW lladdr $BAD nud permanent dev ens1f0np0
FL_ENV=(setpriv --bounding-set -net_raw --inh-caps -net_raw)
FL_NAME="wrong static entry, doctor without CAP_NET_RAW"
echo "== $FL_NAME"
fl_judge "$DEVS" "${FL_ENV[@]}"
grep -q neigh-wrong-mac "$J.causes" && rn_fail "$FL_NAME: judged without a probe"
FL_ENV=()

# The connection check: the peer's own entry, PERMANENT with a wrong MAC.
seeded
ip -n "$H" neigh replace $PEER lladdr $BAD nud permanent dev ens1f0np0
PC=$RN_TOP/build/test/rn-pathcheck
out=$(rn_in "$H" "$PC" conn ens1f0np0 $PEER "$SWMAC" 500 2>&1)
echo "    $out"
grep -q "result=refused cause=neigh-wrong-mac" <<<"$out" || rn_fail "conn: static entry: $out"
fix=$(sed -n 's/^paste ens1f0np0 neigh-wrong-mac here //p' <<<"$out")
[ "$fix" = "ip neigh del $PEER dev ens1f0np0" ] || rn_fail "conn: the fix is '$fix'"
grep -q "^paste .* peer" <<<"$out" && rn_fail "conn: a first part on the peer for a static entry"
rn_in "$H" bash -c "set -e; $fix" || rn_fail "conn: the pasted fix failed"
out=$(rn_in "$H" "$PC" conn ens1f0np0 $PEER "$SWMAC" 2000 2>&1)
echo "    $out"
grep -q "result=ok" <<<"$out" || rn_fail "conn: after the fix: $out"

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
