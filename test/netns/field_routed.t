#!/usr/bin/env bash
# Field layouts, peers behind a router (an L3 fabric: GPU hosts of another rack sit behind
# the ToR): per-NIC tables that hold only the subnet route, main's default through the
# management NIC. Told where the routed peers are (--peer-subnet, NCCL_ROCE_PEER_SUBNETS)
# and the NICs' gateway (--gateway, NCCL_ROCE_GATEWAYS), each NIC is judged no-gateway and
# the pasted per-NIC default fixes it; roce-policy-routing --gateway gives the same; the
# connection check judges the route to a routed peer's own address.
. "$(dirname "$0")/field_lib.sh"

PEERS=198.19.8.0/24 # the other rack's GPU hosts (route lookups only, and one router)
GW=198.18.1.1
routed() { # $1: rp_filter; RoCE NICs .11/.12 in 198.18.1.0/24 on s0, the ToR at .1
	fl_host
	fl_seg s0
	fl_seg m0
	fl_nic mgmt0 m0 198.19.255.2/24
	fl_peer m0 198.19.255.1/24
	fl_nic ens1f0np0 s0 198.18.1.11/24
	fl_nic ens1f1np1 s0 198.18.1.12/24
	fl_peer s0 $GW/24
	ip -n "$H" route add default via 198.19.255.1 dev mgmt0
	fl_sys net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 \
		"net.ipv4.conf.all.rp_filter=$1"
	ip -n "$H" route add 198.18.1.0/24 dev ens1f0np0 src 198.18.1.11 table 101
	ip -n "$H" rule add from 198.18.1.11 lookup 101 priority 101
	ip -n "$H" route add 198.18.1.0/24 dev ens1f1np1 src 198.18.1.12 table 102
	ip -n "$H" rule add from 198.18.1.12 lookup 102 priority 102
}
DEVS=ens1f0np0,ens1f1np1

# The host alone cannot tell a flat fabric from a routed one: all good, as before, but the
# report says what it did not judge, where such peers would go, and how to have them judged.
routed 0
fl_layout "per-NIC tables without default, peers not named" $DEVS ens1f0np0= ens1f1np1=
jq_py "$J" "[(n['netdev'], n['offnet_unjudged']) for n in d['nics']]" |
	tee /dev/stderr | grep -q "('ens1f0np0', {'egress': 'mgmt0'}) ('ens1f1np1', {'egress': 'mgmt0'})" ||
	rn_fail "unjudged routed peers: not in the JSON with their egress"
ip netns exec "$H" "$DOCTOR" --netdev $DEVS >"$FL_T/o.txt"
[ $? = 0 ] || rn_fail "unjudged routed peers: the verdict changed"
cat "$FL_T/o.txt" >&2
grep -qx "  from ens1f0np0 ens1f1np1: they would be reached through mgmt0 (main's default route)" \
	"$FL_T/o.txt" || rn_fail "unjudged routed peers: the egress is not named"
grep -q "^not judged: peers outside the NICs' subnets" "$FL_T/o.txt" &&
	grep -q "roce-doctor --peer-subnet CIDR --gateway NETDEV=GW" "$FL_T/o.txt" &&
	grep -q "^verdict: all good" "$FL_T/o.txt" || rn_fail "unjudged routed peers: not said"
# told, the NICs are judged and the line is gone
ip netns exec "$H" "$DOCTOR" --netdev $DEVS --peer-subnet $PEERS >"$FL_T/o.txt"
! grep -q "^not judged" "$FL_T/o.txt" || rn_fail "--peer-subnet: still said not judged"

FL_ENV=(NCCL_ROCE_PEER_SUBNETS=$PEERS NCCL_ROCE_GATEWAYS=$GW)
routed 0
fl_layout "routed peers, per-NIC tables without default" $DEVS ens1f0np0=no-gateway \
	ens1f1np1=no-gateway
grep -qx "ip route replace default via $GW dev ens1f0np0 table 101" "$FL_PASTE_LAST" ||
	rn_fail "the fix is not ens1f0np0's per-NIC default"
jq_py "$FL_T/j$((FL_J - 1)).json" "[f['message'] for n in d['nics'] for f in n['findings']][0]" |
	tee /dev/stderr | grep -q "leaves through mgmt0 (the management NIC: main's default route)" ||
	rn_fail "the management NIC holding main's default is not named"

# Strict rp_filter drops the routed peers' replies too: named with its own fix.
routed 1
fl_layout "routed peers, per-NIC tables without default, rp_filter=1" $DEVS \
	ens1f0np0=no-gateway,rp-filter ens1f1np1=no-gateway,rp-filter

# A netdev named as a VLAN is (a dot in its name; a veth, the VLAN module may be absent):
# the fix pastes as printed.
fl_host
fl_seg s0
fl_seg m0
fl_nic mgmt0 m0 198.19.255.2/24
fl_peer m0 198.19.255.1/24
fl_nic ens1f0np0.100 s0 198.18.1.11/24
fl_peer s0 $GW/24
ip -n "$H" route add default via 198.19.255.1 dev mgmt0
FL_ENV=(NCCL_ROCE_PEER_SUBNETS=$PEERS NCCL_ROCE_GATEWAYS=ens1f0np0.100=$GW)
fl_layout "routed peers, a VLAN NIC without a table" ens1f0np0.100 ens1f0np0.100=no-gateway

# Without the gateway no command can be printed: the message says how to name it.
FL_ENV=(NCCL_ROCE_PEER_SUBNETS=$PEERS)
routed 0
FL_NAME="routed peers, gateway unknown"
echo "== $FL_NAME"
fl_judge $DEVS "${FL_ENV[@]}"
fl_expect ens1f0np0 no-gateway
[ ! -s "$J.fixes" ] || rn_fail "$FL_NAME: a command printed without a gateway: $(cat "$J.fixes")"
jq_py "$J" "[f['message'] for n in d['nics'] for f in n['findings']][0]" |
	grep -q "roce-doctor --gateway" || rn_fail "$FL_NAME: the message does not say how to name it"
jq_py "$J" "[f['advice'] for n in d['nics'] for f in n['findings']][0]" | tee /dev/stderr |
	grep -q "^find ens1f0np0's gateway (the router's address in 198.18.1.0/24), then add ens1f0np0's default route via it in table 101: ip route replace default via <gateway> dev ens1f0np0 table 101 (or roce-policy-routing --gateway=ens1f0np0=<gateway> ens1f0np0" ||
	rn_fail "$FL_NAME: the advice does not say what to do"
# The doctor's own options say the same as the knobs.
ip netns exec "$H" "$DOCTOR" --netdev $DEVS --json --peer-subnet $PEERS --gateway $GW >"$FL_T/o.json"
[ $? = 1 ] || rn_fail "--peer-subnet/--gateway: not judged bad"
grep -q "ip route replace default via $GW dev ens1f1np1 table 102" "$FL_T/o.json" ||
	rn_fail "--peer-subnet/--gateway: no per-NIC default in the fix"
ip netns exec "$H" "$DOCTOR" --netdev $DEVS --peer-subnet 198.19.8.0/33 >/dev/null 2>&1
[ $? = 2 ] || rn_fail "--peer-subnet: a bad CIDR is not a usage error"

# roce-policy-routing --gateway gives each NIC its default: all good after it.
rn_in "$H" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$FL_T/st" --gateway=$GW \
	ens1f0np0 ens1f1np1 >/dev/null || rn_fail "roce-policy-routing --gateway failed"
fl_layout "routed peers, roce-policy-routing --gateway" $DEVS ens1f0np0= ens1f1np1=
FL_ENV=()

# The connection check judges the route to the peer's own address, outside the subnet.
routed 1
PC=$RN_TOP/build/test/rn-pathcheck
out=$(rn_in "$H" "$PC" conn ens1f0np0 198.19.8.5 02:00:00:00:00:05 500 2>&1)
echo "    $out"
grep -q "result=refused cause=no-gateway" <<<"$out" || rn_fail "routed peer: conn check: $out"
grep -q "leaves through mgmt0" <<<"$out" || rn_fail "routed peer: mgmt0 not named: $out"
# the NIC's gateway named (NCCL_ROCE_GATEWAYS): the fix is its per-NIC default, pasted
out=$(rn_in "$H" "$PC" -g $GW conn ens1f0np0 198.19.8.5 02:00:00:00:00:05 500 2>&1)
echo "    $out"
fix=$(sed -n 's/^paste ens1f0np0 no-gateway here //p' <<<"$out")
[ "$fix" = "ip route replace default via $GW dev ens1f0np0 table 101" ] ||
	rn_fail "routed peer, gateway known: the fix is '$fix'"
rn_in "$H" bash -c "set -e; $fix" || rn_fail "routed peer: the pasted fix failed"
out=$(rn_in "$H" "$PC" conn ens1f0np0 198.19.8.5 02:00:00:00:00:05 2000 2>&1)
echo "    $out"
grep -q "result=ok" <<<"$out" || rn_fail "routed peer with the per-NIC default: $out"
# main's default via the NIC (a gateway the QP finds), TCP leaving mgmt0: the fix is the
# per-NIC default via that gateway, not the subnet route
ip -n "$H" route del default via $GW dev ens1f0np0 table 101
ip -n "$H" route add default via $GW dev ens1f0np0 metric 500
out=$(rn_in "$H" "$PC" conn ens1f0np0 198.19.8.5 02:00:00:00:00:05 500 2>&1)
echo "    $out"
grep -q "result=refused cause=route-wrong-nic" <<<"$out" || rn_fail "routed peer via mgmt0: $out"
grep -q "ip route replace default via $GW dev ens1f0np0 table 101" <<<"$out" ||
	rn_fail "routed peer via mgmt0: the fix is not the per-NIC default: $out"

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
