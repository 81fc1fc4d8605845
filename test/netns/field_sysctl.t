#!/usr/bin/env bash
# Field layouts, ARP sysctls and netdev kinds: every arp_ignore value 0-8 judged by what
# the kernel does with it (1/2 answer for the NIC's own address only; 0, 3 and the
# reserved 4-7 answer for any local address; 8 answers nothing), a per-NIC value worse
# than 'all', default.* written after the NICs were addressed (it never reaches them),
# VLAN netdevs with dotted names (sysctl's slash form), bonds as the RoCE netdev.
. "$(dirname "$0")/field_lib.sh"

# $1 $2: the two NICs' names; $3: "veth" or how they are built (fl_nic by default)
two() {
	fl_host
	fl_seg s0
	"${3:-fl_nic}" "$1" s0 198.18.0.11/24
	"${3:-fl_nic}" "$2" s0 198.18.0.12/24
}
seed() { # the seed's tables and rules for NICs $1 (.11) and $2 (.12)
	ip -n "$H" route add 198.18.0.0/24 dev "$1" src 198.18.0.11 table 101
	ip -n "$H" rule add from 198.18.0.11 lookup 101 priority 101
	ip -n "$H" route add 198.18.0.0/24 dev "$2" src 198.18.0.12 table 102
	ip -n "$H" rule add from 198.18.0.12 lookup 102 priority 102
}

for v in 0 1 2 3 4 5 6 7 8; do
	two nic0 nic1
	seed nic0 nic1
	fl_sys net.ipv4.conf.all.arp_announce=2 "net.ipv4.conf.all.arp_ignore=$v"
	case $v in
	1 | 2) want= ;;
	8) want=arp-silent ;;
	*) want=arp-flux ;;
	esac
	fl_layout "arp_ignore=$v on all" nic0,nic1 "nic0=$want" "nic1=$want"
done

# 'all' is 1 but nic1's own 3 wins (effective = max): the fix names nic1's key too.
two nic0 nic1
seed nic0 nic1
fl_sys net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.all.arp_ignore=1 \
	net.ipv4.conf.nic1.arp_ignore=3
fl_layout "arp_ignore all=1, nic1=3" nic0,nic1 nic0=arp-flux nic1=arp-flux

# default.* after the NICs got their addresses: the NICs keep 0 (devinet_copy_dflt_conf).
two nic0 nic1
seed nic0 nic1
fl_sys net.ipv4.conf.default.arp_ignore=1 net.ipv4.conf.default.arp_announce=2
fl_layout "default.* set after addressing" nic0,nic1 nic0=arp-flux nic1=arp-flux

# VLAN netdevs named like mlx5's (ens1f0np0.100): real 802.1Q where the kernel has it,
# else a veth with the same dotted name (what matters to sysctl(8) is the name).
vlan() { # NAME SEG CIDR
	local base=${1%.*}
	if [ -z "${FL_NOVLAN:-}" ] && fl_nic "$base" "$2" 2>/dev/null &&
		ip -n "$H" link add link "$base" name "$1" type vlan id "${1##*.}" 2>/dev/null; then
		ip -n "$H" addr add "$3" dev "$1"
		ip -n "$H" link set "$1" up
	else
		FL_NOVLAN=1
		ip -n "$H" link del "$base" 2>/dev/null
		fl_nic "$1" "$2" "$3"
	fi
}
two ens1f0np0.100 ens1f1np1.100 vlan
[ -n "${FL_NOVLAN:-}" ] && echo "   (no 802.1Q in this kernel: veths with the VLAN names)"
fl_sys net.ipv4.conf.all.rp_filter=1
fl_layout "VLAN netdevs, kernel defaults + strict rp_filter" ens1f0np0.100,ens1f1np1.100 \
	ens1f0np0.100=arp-flux,no-rule ens1f1np1.100=arp-flux,route-wrong-nic,rp-filter
grep -q 'net/ipv4/conf/ens1f1np1.100/rp_filter=2' "$FL_PASTE_LAST" ||
	rn_fail "rp_filter fix for a dotted netdev not in sysctl's slash form"
two ens1f0np0.100 ens1f1np1.100 vlan
seed ens1f0np0.100 ens1f1np1.100
fl_sys net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
rn_in "$H" sysctl -qw net/ipv4/conf/ens1f0np0.100/arp_ignore=1 net/ipv4/conf/ens1f1np1.100/arp_ignore=1
fl_layout "VLAN netdevs, fixed" ens1f0np0.100,ens1f1np1.100 ens1f0np0.100= ens1f1np1.100=

# Bonds as the RoCE netdev (RoCE LAG): real bonding where the kernel has it (one veth
# member on the segment), else a veth named bond<N>.
bond() { # NAME SEG CIDR
	if [ -z "${FL_NOBOND:-}" ] && ip -n "$H" link add name "$1" type bond mode active-backup 2>/dev/null; then
		fl_nic "$1m" "$2"
		ip -n "$H" link set "$1m" down
		ip -n "$H" link set "$1m" master "$1"
		ip -n "$H" addr add "$3" dev "$1"
		ip -n "$H" link set "$1m" up
		ip -n "$H" link set "$1" up
	else
		FL_NOBOND=1
		fl_nic "$1" "$2" "$3"
	fi
}
two bond0 bond1 bond
[ -n "${FL_NOBOND:-}" ] && echo "   (no bonding in this kernel: veths named bond0/bond1)"
fl_layout "bonds, kernel defaults" bond0,bond1 bond0=arp-flux,no-rule bond1=arp-flux,route-wrong-nic
two bond0 bond1 bond
seed bond0 bond1
fl_sys net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
fl_layout "bonds, fixed" bond0,bond1 bond0= bond1=

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
