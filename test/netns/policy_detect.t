#!/usr/bin/env bash
# roce-policy-routing without NETDEV: RoCE netdevs come from sysfs (RDMA port GID ndevs and
# net/*/device/infiniband); netdevs of other namespaces, non-RoCE NICs and the management NIC
# are left alone. Uses a fake sysfs tree (ROCE_POLICY_ROUTING_SYSFS) as namespaces have no
# RDMA devices; one NIC name has a dot (VLAN-style) to exercise the '/' sysctl form. A port
# whose netdev has no address but carries GIDs of a VLAN that has one (how mlx5 and rxe do
# RoCE over a VLAN) stands for that VLAN (veths with such names: no 8021q on this kernel).
. "$(dirname "$0")/policy_lib.sh"
rn_host_ns 3 1
H=$RN_HOST
ip -n "$H" link set nic2 down
ip -n "$H" link set nic2 name rail.2
ip -n "$H" link set rail.2 up

S=$T/sys
gid() { mkdir -p "$S/class/infiniband/$1/ports/1/gid_attrs/ndevs"; echo "$2" >"$S/class/infiniband/$1/ports/1/gid_attrs/ndevs/0"; }
gid rxe0 nic0
gid mlx5_8 mgmt0
gid mlx5_9 elsewhere7     # bound to a netdev of another namespace
gid mlx5_7 down7          # a RoCE port that is down: skipped when auto-detected
ip -n "$H" link add down7 type veth peer name down7p
mkdir -p "$S/class/net/rail.2/device/infiniband/mlx5_2"
rn_veth "$H" base3 "$RN_PEER" hp3 br0
rn_veth "$H" base3.100 "$RN_PEER" hp4 br0 198.18.0.20/24
gid mlx5_3 base3
d=$S/class/infiniband/mlx5_3/ports/1/gid_attrs/ndevs
echo base3 >"$d/1"; echo base3.100 >"$d/2"; echo base3.100 >"$d/3"
base3_before=$(rn_in "$H" cat /proc/sys/net/ipv4/conf/base3/arp_ignore)

rn_snapshot "$H" >"$T/before"
nic1_before=$(rn_in "$H" cat /proc/sys/net/ipv4/conf/nic1/arp_ignore /proc/sys/net/ipv4/conf/nic1/arp_announce)
ROCE_POLICY_ROUTING_SYSFS=$S rn_in "$H" "$TOOL" --state-dir "$T/state" >"$T/out" 2>&1 ||
	{ cat "$T/out"; rn_fail "auto-detect run failed"; }
cat "$T/out"
grep -q '^# mgmt0: skipped, it holds the default route' "$T/out" || rn_fail "mgmt0 not reported as skipped"
grep -q '^# nic0: ip 198.18.0.11/24' "$T/out" || rn_fail "nic0 not detected"
grep -q '^# down7: skipped, it is down' "$T/out" || rn_fail "down7 not reported as skipped"
grep -q '^# rail.2: ip 198.18.0.13/24' "$T/out" || rn_fail "rail.2 not detected"
grep -v '^# down7: skipped' "$T/out" | grep -Eq 'nic1|elsewhere7|down7' && rn_fail "touched a non-RoCE or foreign netdev"
grep -qx 'sysctl -w net/ipv4/conf/rail.2/arp_ignore=1' "$T/out" || rn_fail "dotted name not written in '/' form"
grep -q '^# base3.100: ip 198.18.0.20/24' "$T/out" || rn_fail "the VLAN of a port without an address not detected"
grep -Eq '(^# base3:|dev base3 |conf/base3/)' "$T/out" && rn_fail "touched the VLAN's port netdev base3"
[ "$(rn_in "$H" cat /proc/sys/net/ipv4/conf/base3/arp_ignore)" = "$base3_before" ] || rn_fail "base3's sysctls changed"
ip -n "$H" -4 route get 198.18.0.254 from 198.18.0.20 | grep -q 'dev base3.100' || rn_fail "base3.100 egress"
[ "$(rn_in "$H" cat /proc/sys/net/ipv4/conf/rail.2/arp_ignore)" = 1 ] || rn_fail "rail.2 arp_ignore not set"
[ "$(rn_in "$H" cat /proc/sys/net/ipv4/conf/nic1/arp_ignore /proc/sys/net/ipv4/conf/nic1/arp_announce)" = "$nic1_before" ] ||
	rn_fail "nic1's own sysctls changed"
rules=$(ip -n "$H" -4 rule show | grep -c 'from 198')
[ "$rules" = 3 ] || rn_fail "expected 3 rules, got $rules"
ip -n "$H" -4 route get 198.18.0.254 from 198.18.0.13 | grep -q 'dev rail.2' || rn_fail "rail.2 egress"
ip -n "$H" -4 rule show | grep -q 198.18.0.12 && rn_fail "rule for nic1"

rn_in "$H" "$TOOL" --state-dir "$T/state" --undo >/dev/null || rn_fail "undo failed"
rn_snapshot "$H" >"$T/after"
rn_assert_same "$T/before" "$T/after" "undo after auto-detect"
echo PASS
