#!/usr/bin/env bash
# Field layouts, flat: three NICs in one subnet on one L2 segment (the seed's host).
# Broken (kernel defaults), the seed's fix, the fix by table name from rt_tables.d,
# table ids above 255, NetworkManager's noprefixroute + per-profile tables at 30000+.
. "$(dirname "$0")/field_lib.sh"

flat() { # three NICs .11-.13/24 on one segment; extra args go to every address
	fl_host
	fl_seg s0
	fl_nic nic0 s0 "198.18.0.11/24${1:+ $1}"
	fl_nic nic1 s0 "198.18.0.12/24${1:+ $1}"
	fl_nic nic2 s0 "198.18.0.13/24${1:+ $1}"
}
arp_fix() { fl_sys net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2; }

flat
doc "$H" --netdev nic0,nic1,nic2
grep -q 'all at once: roce-policy-routing nic0 nic1 nic2' <<<"$OUT" || rn_fail "the script is not offered where it fixes all"
fl_layout "flat, kernel defaults" nic0,nic1,nic2 nic0=arp-flux,no-rule \
	nic1=arp-flux,route-wrong-nic nic2=arp-flux,route-wrong-nic

# The seed's commands: per NIC a table with an on-link default and the subnet, a rule
# without a priority, arp_ignore=1/arp_announce=2 on all and every NIC.
flat
t=101
for p in nic0:198.18.0.11 nic1:198.18.0.12 nic2:198.18.0.13; do
	ip -n "$H" route add default dev "${p%%:*}" table $t
	ip -n "$H" route add 198.18.0.0/24 dev "${p%%:*}" src "${p#*:}" table $t
	ip -n "$H" rule add from "${p#*:}" lookup $t
	fl_sys "net.ipv4.conf.${p%%:*}.arp_ignore=1" "net.ipv4.conf.${p%%:*}.arp_announce=2"
	t=$((t + 1))
done
arp_fix
fl_layout "flat, the seed's fix" nic0,nic1,nic2 nic0= nic1= nic2=

# Tables named in /etc/iproute2/rt_tables.d (ip netns exec shows /etc/netns/NS/ as /etc/).
flat
mkdir -p "/etc/netns/$H/iproute2/rt_tables.d"
_rn_tmp+=("/etc/netns/$H")
printf '255\tlocal\n254\tmain\n253\tdefault\n0\tunspec\n' >"/etc/netns/$H/iproute2/rt_tables"
printf '101\trail0\n102\trail1\n103\trail2\n' >"/etc/netns/$H/iproute2/rt_tables.d/roce.conf"
i=0
for p in nic0:198.18.0.11 nic1:198.18.0.12 nic2:198.18.0.13; do
	rn_in "$H" ip route add 198.18.0.0/24 dev "${p%%:*}" src "${p#*:}" table rail$i ||
		rn_fail "route by table name"
	rn_in "$H" ip rule add from "${p#*:}" lookup rail$i priority $((101 + i)) ||
		rn_fail "rule by table name"
	i=$((i + 1))
done
arp_fix
fl_layout "flat, tables named in rt_tables.d" nic0,nic1,nic2 nic0= nic1= nic2=
# ... and one of them pointing at the wrong rail's name
rn_in "$H" ip route replace 198.18.0.0/24 dev nic0 src 198.18.0.11 table rail2
fl_layout "flat, rail2 routes out of nic0" nic0,nic1,nic2 nic0= nic1= nic2=rule-wrong-nic

# Table ids above 255 (u32 tables; priorities the same numbers).
flat
t=1001 prio=1001
for p in nic0:198.18.0.11 nic1:198.18.0.12 nic2:198.18.0.13; do
	ip -n "$H" route add 198.18.0.0/24 dev "${p%%:*}" src "${p#*:}" table $t
	ip -n "$H" rule add from "${p#*:}" lookup $t priority $((prio++))
	t=$((t + 70000))
done
arp_fix
fl_layout "flat, table ids 1001/71001/141001 at priorities 1001-1003" nic0,nic1,nic2 nic0= nic1= nic2=
ip -n "$H" route flush table 71001
fl_layout "flat, table 71001 emptied" nic0,nic1,nic2 nic0= nic1=table-no-route nic2=

# NetworkManager: addresses with noprefixroute (main has no route for the subnet), each
# profile's routes in its own table (ipv4.route-table) and its rule at 30000+.
flat noprefixroute
fl_layout "NetworkManager noprefixroute, no profile tables yet" nic0,nic1,nic2 \
	nic0=arp-flux,no-route nic1=arp-flux,no-route nic2=arp-flux,no-route
flat noprefixroute
t=101
for p in nic0:198.18.0.11 nic1:198.18.0.12 nic2:198.18.0.13; do
	ip -n "$H" route add 198.18.0.0/24 dev "${p%%:*}" proto kernel scope link src "${p#*:}" \
		metric 100 table $t
	ip -n "$H" rule add from "${p#*:}" lookup $t priority $((30000 + t))
	t=$((t + 1))
done
arp_fix
fl_layout "NetworkManager per-profile tables, rules at 30101+" nic0,nic1,nic2 nic0= nic1= nic2=

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
