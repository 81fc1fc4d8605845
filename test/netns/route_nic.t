#!/usr/bin/env bash
# NIC verdicts against real kernel routing and sysctls: a host namespace with three
# veth NICs in 198.18.0.0/24 on a bridge, driven by rn-pathcheck (netdev-only NICs).
set -u
. "$(dirname "$0")/route_lib.sh"
rn_require

SW=$(rn_role_ns sw)
rn_switch "$SW"
H=$(rn_role_ns host)
rn_nic "$H" eth0 "$SW" h0 198.18.0.1/24
rn_nic "$H" eth1 "$SW" h1 198.18.0.2/24
rn_nic "$H" eth2 "$SW" h2 198.18.0.3/24
P=$(rn_role_ns peer)
rn_nic "$P" p0 "$SW" q0 198.18.0.10/24

reset_host() {
	local k d
	rn_unpolicy "$H"
	for k in arp_ignore arp_announce arp_filter rp_filter; do
		for d in all eth0 eth1 eth2; do
			rn_sysctl "$H" "net.ipv4.conf.$d.$k=0"
		done
	done
}
fix_arp() { rn_sysctl "$H" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2; }
seed_policy() { rn_policy "$H" 198.18.0.0/24 eth0:198.18.0.1 eth1:198.18.0.2 eth2:198.18.0.3; }

# A. no policy routing, default ARP sysctls
reset_host
out=$(rn_pc "$H" nic eth0 eth1 eth2)
echo "$out" | grep '^nic'
rn_expect default "$out" eth0 verdict=refused ip=198.18.0.1/24 table=254
rn_expect_cause default "$out" eth0 arp-flux
rn_expect_cause default "$out" eth0 no-rule
rn_expect_cause default "$out" eth0 route-wrong-nic absent
rn_expect default "$out" eth1 verdict=refused
rn_expect_cause default "$out" eth1 route-wrong-nic
rn_expect_cause default "$out" eth1 arp-flux
rn_expect_cause default "$out" eth2 route-wrong-nic
out=$(rn_pc "$H" -c warn nic eth1)
rn_expect default-warn "$out" eth1 verdict=warn

# B. the seed's full fix, command for command (roce-multi-nic-guide): per NIC a
# table with a default route and the subnet with src, 'ip rule add from IP lookup T'
# without a priority, then arp_ignore=1/arp_announce=2 on all and on every NIC.
reset_host
t=101
for pair in eth0:198.18.0.1 eth1:198.18.0.2 eth2:198.18.0.3; do
	ip -n "$H" route add default dev "${pair%%:*}" table $t
	ip -n "$H" route add 198.18.0.0/24 dev "${pair%%:*}" src "${pair#*:}" table $t
	ip -n "$H" rule add from "${pair#*:}" lookup $t
	t=$((t + 1))
done
fix_arp
for d in eth0 eth1 eth2; do
	rn_sysctl "$H" "net.ipv4.conf.$d.arp_ignore=1" "net.ipv4.conf.$d.arp_announce=2"
done
out=$(rn_pc "$H" nic eth0 eth1 eth2)
echo "$out" | grep '^nic'
rn_expect seed-fix "$out" eth0 verdict=ok causes=none ip=198.18.0.1/24 table=101
rn_expect seed-fix "$out" eth1 verdict=ok causes=none ip=198.18.0.2/24 table=102
rn_expect seed-fix "$out" eth2 verdict=ok causes=none ip=198.18.0.3/24 table=103

while ip -n "$H" rule show | grep -q "lookup 10[123]"; do
	ip -n "$H" rule del pref "$(ip -n "$H" rule show | grep -m1 "lookup 10[123]" | cut -d: -f1)"
done

# C. eth1's rule leads to a table that routes out of eth0
reset_host
seed_policy
fix_arp
ip -n "$H" route replace 198.18.0.0/24 dev eth0 table 102
out=$(rn_pc "$H" nic eth0 eth1 eth2)
rn_expect wrong-table "$out" eth1 verdict=refused table=102
rn_expect_cause wrong-table "$out" eth1 rule-wrong-nic
printf '%s\n' "$out" | grep -q "^finding eth1 rule-wrong-nic .*ip route replace 198.18.0.0/24 dev eth1 src 198.18.0.2 table 102" &&
	echo "ok   [wrong-table] fix names dev, src and table" ||
	{ echo "FAIL [wrong-table] fix text"; RN_FAILS=$((RN_FAILS + 1)); }
rn_expect wrong-table "$out" eth0 verdict=ok
rn_expect wrong-table "$out" eth2 verdict=ok

# D. strict rp_filter with asymmetric routing (no rules)
reset_host
fix_arp
rn_sysctl "$H" net.ipv4.conf.all.rp_filter=1
out=$(rn_pc "$H" nic eth0 eth1)
rn_expect_cause rp-filter "$out" eth1 rp-filter
rn_expect_cause rp-filter "$out" eth0 rp-filter absent
rn_sysctl "$H" net.ipv4.conf.eth1.rp_filter=2
out=$(rn_pc "$H" nic eth1)
rn_expect_cause rp-filter-loose-dev "$out" eth1 rp-filter absent
rn_sysctl "$H" net.ipv4.conf.eth1.rp_filter=0
out=$(rn_pc "$H" nic eth1)
rn_expect_cause rp-filter-dev0-all1 "$out" eth1 rp-filter

# E. arp_ignore only per interface vs only on all (effective = max)
reset_host
seed_policy
rn_sysctl "$H" net.ipv4.conf.eth0.arp_ignore=1 net.ipv4.conf.eth1.arp_ignore=1 \
	net.ipv4.conf.eth2.arp_ignore=1
out=$(rn_pc "$H" nic eth0 eth1 eth2)
rn_expect arp-ignore-per-if "$out" eth0 verdict=ok causes=none
rn_expect arp-ignore-per-if "$out" eth2 verdict=ok causes=none
rn_sysctl "$H" net.ipv4.conf.eth2.arp_ignore=0
out=$(rn_pc "$H" nic eth0)
rn_expect_cause arp-ignore-one-missing "$out" eth0 arp-flux
reset_host
seed_policy
rn_sysctl "$H" net.ipv4.conf.all.arp_ignore=1
out=$(rn_pc "$H" nic eth0 eth1 eth2)
rn_expect arp-ignore-all "$out" eth1 verdict=ok causes=none
reset_host
seed_policy
out=$(rn_pc "$H" nic eth1)
rn_expect_cause arp-ignore-none "$out" eth1 arp-flux

# F. a secondary IP on eth1 that the policy routing makes its source
reset_host
ip -n "$H" addr add 198.18.0.102/24 dev eth1
rn_policy "$H" 198.18.0.0/24 eth0:198.18.0.1 eth1:198.18.0.102 eth2:198.18.0.3
fix_arp
out=$(rn_pc "$H" nic eth1)
echo "$out" | grep '^nic'
rn_expect secondary "$out" eth1 verdict=ok ip=198.18.0.102/24 table=102
reset_host
seed_policy
fix_arp
out=$(rn_pc "$H" nic eth1)
rn_expect secondary-unruled "$out" eth1 verdict=ok ip=198.18.0.2/24 table=102
ip -n "$H" addr del 198.18.0.102/24 dev eth1

# G. one subnet per NIC needs no policy routing; on one L2 segment (one bridge here) it
# needs arp_ignore/arp_announce (found by the ARP probe: this runs as root)
H2=$(rn_role_ns host2)
rn_nic "$H2" eth0 "$SW" k0 198.18.1.1/24
rn_nic "$H2" eth1 "$SW" k1 198.18.2.1/24
out=$(rn_pc "$H2" nic eth0 eth1)
rn_expect_cause subnet-per-nic-one-l2 "$out" eth0 shared-l2
rn_sysctl "$H2" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
out=$(rn_pc "$H2" nic eth0 eth1)
rn_expect subnet-per-nic "$out" eth0 verdict=ok causes=none
rn_expect subnet-per-nic "$out" eth1 verdict=ok causes=none

# Time to a verdict (a figure, not an assertion).
reset_host
seed_policy
fix_arp
rn_pc "$H" bench 200 eth0 eth1 eth2

rn_finish
