#!/usr/bin/env bash
# roce-policy-routing without NETDEV inside a pod's network namespace, with a shared RDMA
# device (Multus macvlan): each port's GID table holds the GIDs of every pod on the node,
# bound to netdevs whose names repeat across pods (net1) and to the node's own netdev
# (eth0) while the pod has an eth0 of its own (the cluster network). Only the pod's netdevs
# whose address is a GID of the port are taken: net1 and net2 here, never the pod's eth0
# (the node's eth0 is named at index 0), never a port holding only other pods' GIDs; and a
# sparse table (first GID at 6) is read to its end. Fake sysfs tree with GID files
# (ROCE_POLICY_ROUTING_SYSFS); the rules, routes and sysctls are the pod namespace's.
. "$(dirname "$0")/policy_lib.sh"
rn_ns PEER peer
rn_ns POD pod
rn_bridge "$PEER" br0 198.18.0.254/24
rn_veth "$POD" eth0 "$PEER" hp0 "" 198.19.0.5/24          # the cluster network: not RoCE
rn_veth "$POD" net1 "$PEER" hp1 br0 198.18.0.110/24
rn_veth "$POD" net2 "$PEER" hp2 br0 198.18.0.111/24
m4() { printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${1//./ }; }
S=$T/sys
slot() { # ibdev index netdev gid
	local p=$S/class/infiniband/$1/ports/1
	mkdir -p "$p/gid_attrs/ndevs" "$p/gids"
	echo "$3" >"$p/gid_attrs/ndevs/$2"
	echo "$4" >"$p/gids/$2"
}
# rxe0 on the node's eth0 (MAC 52:54:00:18:00:00): the node's GIDs, pod B's net1, ours
slot rxe0 0 eth0 fe80:0000:0000:0000:5054:00ff:fe18:0000
slot rxe0 1 eth0 "$(m4 198.18.0.10)"
slot rxe0 2 net1 "$(m4 198.18.0.112)"
slot rxe0 3 net1 "$(m4 198.18.0.110)"
# rxe1: sparse, first GID at 6 (pod B's net1), our net2 at 9
slot rxe1 6 net1 "$(m4 198.18.0.122)"
slot rxe1 9 net2 "$(m4 198.18.0.111)"
# rxe2: the node's eth2 and pod B's net1 only (no NIC of this pod)
slot rxe2 0 eth2 fe80:0000:0000:0000:5054:00ff:fe18:0002
slot rxe2 1 net1 "$(m4 198.18.0.130)"

eth0_before=$(rn_in "$POD" cat /proc/sys/net/ipv4/conf/eth0/arp_ignore)
ROCE_POLICY_ROUTING_SYSFS=$S rn_in "$POD" "$TOOL" --state-dir "$T/state" >"$T/out" 2>&1 ||
	{ cat "$T/out"; rn_fail "auto-detect in the pod failed"; }
cat "$T/out"
grep -q '^# net1: ip 198.18.0.110/24' "$T/out" || rn_fail "net1 not detected"
grep -q '^# net2: ip 198.18.0.111/24' "$T/out" || rn_fail "net2 (sparse table) not detected"
grep -Eq '(^# eth[02]:|dev eth0 |conf/eth0/|198\.19\.0\.5)' "$T/out" &&
	rn_fail "took the pod's eth0 for the node's eth0 (same name)"
[ "$(rn_in "$POD" cat /proc/sys/net/ipv4/conf/eth0/arp_ignore)" = "$eth0_before" ] ||
	rn_fail "the pod's eth0 sysctls changed"
rn_in "$POD" ip -4 rule | grep -q 'from 198.18.0.110 lookup' || rn_fail "no rule for net1 in the pod"
rn_in "$POD" ip -4 rule | grep -q 'from 198.18.0.111 lookup' || rn_fail "no rule for net2 in the pod"
ip -n "$POD" -4 route get 198.18.0.254 from 198.18.0.111 | grep -q 'dev net2' || rn_fail "net2 egress"
[ "$(rn_in "$POD" cat /proc/sys/net/ipv4/conf/net2/arp_ignore)" = 1 ] || rn_fail "net2 arp_ignore"
# the node's namespace (this test's own) untouched: only the pod's were changed
ip -4 rule | grep -q '198.18.0.11[01]' && rn_fail "a rule in the caller's namespace outside the pod"
echo "PASS"
