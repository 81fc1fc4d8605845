#!/usr/bin/env bash
# Field layouts, one subnet per NIC and L3 fabrics: per-NIC subnets on separate L2
# segments and on one shared segment (found from the host alone by ARP probes; without
# CAP_NET_RAW a warning), /31 per NIC with per-NIC tables, without them, with an ECMP
# default, a table whose default route names another NIC; a management NIC in another
# subnet and in the same subnet.
. "$(dirname "$0")/field_lib.sh"

echo "-- one subnet per NIC, kernel-default ARP sysctls"
fl_host
fl_seg s0
fl_seg s1
fl_nic nic0 s0 198.18.1.11/24
fl_nic nic1 s1 198.18.2.11/24
fl_layout "subnet per NIC, separate L2 segments" nic0,nic1 nic0= nic1=

fl_host
fl_seg s0
fl_nic nic0 s0 198.18.1.11/24
fl_nic nic1 s0 198.18.2.11/24
fl_layout "subnet per NIC, one shared L2 segment" nic0,nic1 nic0=shared-l2 nic1=shared-l2
# Without CAP_NET_RAW the probe cannot run: a warning naming the sysctls, never silence.
fl_host
fl_seg s0
fl_nic nic0 s0 198.18.1.11/24
fl_nic nic1 s0 198.18.2.11/24
FL_ENV=(setpriv --bounding-set -net_raw --inh-caps -net_raw)
fl_layout "subnet per NIC, shared L2, doctor without CAP_NET_RAW" nic0,nic1 \
	nic0=l2-unchecked nic1=l2-unchecked
FL_ENV=()

echo "-- L3: a /31 per NIC to its own ToR gateway (198.18.0.1, .3)"
l3() {
	fl_host
	fl_seg s0
	fl_seg s1
	fl_nic nic0 s0 198.18.0.0/31
	fl_nic nic1 s1 198.18.0.2/31
	fl_peer s0 198.18.0.1/31
	fl_peer s1 198.18.0.3/31
}
tables() { # per-NIC tables with their own default routes
	ip -n "$H" route add 198.18.0.0/31 dev nic0 src 198.18.0.0 table 101
	ip -n "$H" route add default via 198.18.0.1 dev nic0 table 101
	ip -n "$H" rule add from 198.18.0.0 lookup 101 priority 101
	ip -n "$H" route add 198.18.0.2/31 dev nic1 src 198.18.0.2 table 102
	ip -n "$H" route add default via 198.18.0.3 dev nic1 table 102
	ip -n "$H" rule add from 198.18.0.2 lookup 102 priority 102
}
l3
ip -n "$H" route add default via 198.18.0.1 dev nic0
tables
fl_layout "L3 /31, per-NIC tables with default routes" nic0,nic1 nic0= nic1=

l3
ip -n "$H" route add default via 198.18.0.1 dev nic0
fl_layout "L3 /31, no per-NIC tables (main's default via nic0)" nic0,nic1 nic0= nic1=no-gateway

# ECMP: each QP's lookup (oif = the GID's netdev) takes its own NIC's next hop; TCP from a
# NIC's IP may hash onto the other NIC (kernels before 6.13) and still reaches the fabric.
l3
ip -n "$H" route add default nexthop via 198.18.0.1 dev nic0 nexthop via 198.18.0.3 dev nic1
fl_layout "L3 /31, ECMP default over both NICs in main" nic0,nic1 nic0= nic1=

l3
ip -n "$H" route add default via 198.18.0.1 dev nic0
tables
ip -n "$H" route replace default via 198.18.0.1 dev nic0 table 102
fl_layout "L3 /31, nic1's table: default via nic0's gateway dev nic0" nic0,nic1 nic0= \
	nic1=rule-wrong-nic

echo "-- a management NIC"
mgmt_flat() { # $1: mgmt0's address; RoCE NICs .11/.12 in 198.18.0.0/24 on s0
	fl_host
	fl_seg s0
	fl_seg m0
	fl_nic mgmt0 "$2" "$1"
	fl_nic nic0 s0 198.18.0.11/24
	fl_nic nic1 s0 198.18.0.12/24
}
mgmt_flat 198.19.0.2/24 m0
fl_peer m0 198.19.0.1/24
ip -n "$H" route add default via 198.19.0.1 dev mgmt0
fl_layout "management NIC in another subnet, kernel defaults" nic0,nic1 nic0=arp-flux,no-rule \
	nic1=arp-flux,route-wrong-nic
mgmt_flat 198.18.0.2/24 s0
fl_peer s0 198.18.0.254/24
ip -n "$H" route add default via 198.18.0.254 dev mgmt0
fl_layout "management NIC in the same subnet, kernel defaults" nic0,nic1 \
	nic0=arp-flux,route-wrong-nic nic1=arp-flux,route-wrong-nic

# Time to a verdict per NIC (a figure, not an assertion): 8 NICs, one subnet and one L2
# segment each, kernel-default sysctls, so the ARP probe runs (once per snapshot, 30 ms).
fl_host
devs=()
for i in 0 1 2 3 4 5 6 7; do
	fl_seg "t$i"
	fl_nic "ens${i}f0np0" "t$i" "198.18.$((1 + i)).11/24"
	devs+=("ens${i}f0np0")
done
fl_up "$(IFS=,; echo "${devs[*]}")"
echo "time to a verdict, 8 NICs with the shared-L2 probe:"
rn_in "$H" "$RN_TOP/build/test/rn-pathcheck" bench 5 "${devs[@]}" || rn_fail "bench"

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
