#!/usr/bin/env bash
# Field layouts that RoCE survives but the host's other traffic does not, named as
# warnings with their fixes: proxy_arp on a RoCE NIC of a forwarding host (it answers ARP
# for the subnet's other hosts with its own MAC), and MTUs that differ across the host's
# RoCE NICs. Names like ens1f0np0.100 (a dot: sysctl's slash form) paste as printed.
. "$(dirname "$0")/field_lib.sh"

NICS=(ens1f0np0 ens1f1np1.100 ens2f0np0)
DEVS=$(IFS=,; echo "${NICS[*]}")
good() { # three NICs in 198.18.0.0/24 with the seed's fix: per-NIC tables, ARP sysctls
	local i ip
	fl_host
	fl_seg s0
	for i in 0 1 2; do
		ip=198.18.0.$((11 + i))
		fl_nic "${NICS[i]}" s0 $ip/24
		ip -n "$H" route add 198.18.0.0/24 dev "${NICS[i]}" src $ip table $((101 + i))
		ip -n "$H" rule add from $ip lookup $((101 + i)) priority $((101 + i))
	done
	fl_sys net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
}

good
fl_layout "the seed's layout" "$DEVS" ens1f0np0= ens1f1np1.100= ens2f0np0=

# proxy_arp on one NIC, on all, while the host forwards (a router's image, a CNI's sysctl)
good
fl_sys net.ipv4.ip_forward=1
rn_in "$H" sysctl -qw net/ipv4/conf/ens1f1np1.100/proxy_arp=1
fl_layout "proxy_arp on ens1f1np1.100, forwarding on" "$DEVS" ens1f0np0= \
	ens1f1np1.100=proxy-arp ens2f0np0=
grep -qx 'sysctl -w net/ipv4/conf/ens1f1np1.100/proxy_arp=0' "$FL_PASTE_LAST" ||
	rn_fail "proxy-arp: the fix is not the NIC's own key"
good
fl_sys net.ipv4.ip_forward=1 net.ipv4.conf.all.proxy_arp=1
fl_layout "proxy_arp on all, forwarding on" "$DEVS" ens1f0np0=proxy-arp \
	ens1f1np1.100=proxy-arp ens2f0np0=proxy-arp
# without forwarding the kernel answers no proxy ARP: nothing to say
good
fl_sys net.ipv4.conf.all.proxy_arp=1
fl_layout "proxy_arp on all, forwarding off" "$DEVS" ens1f0np0= ens1f1np1.100= ens2f0np0=

# MTU: jumbo on two NICs, 1500 left on the third (a NIC replaced, its config not)
good
ip -n "$H" link set ens1f0np0 mtu 9000
ip -n "$H" link set ens2f0np0 mtu 9000
fl_layout "MTU 9000, 1500, 9000" "$DEVS" ens1f0np0= ens1f1np1.100=mtu-mismatch ens2f0np0=
grep -qx 'ip link set dev ens1f1np1.100 mtu 9000' "$FL_PASTE_LAST" ||
	rn_fail "mtu-mismatch: the fix does not raise the odd NIC"
# two against one the other way: the odd jumbo NIC is named, set to what the others have
good
ip -n "$H" link set ens2f0np0 mtu 9000
fl_layout "MTU 1500, 1500, 9000" "$DEVS" ens1f0np0= ens1f1np1.100= ens2f0np0=mtu-mismatch

# Rails: one subnet and one segment per NIC, jumbo on two, 1500 on the third: the host's
# RoCE NICs are compared whatever their subnet.
rails() {
	local i
	fl_host
	for i in 0 1 2; do
		fl_seg r$i
		fl_nic "${NICS[i]}" r$i 198.18.$((1 + i)).11/24
	done
}
rails
ip -n "$H" link set ens1f0np0 mtu 9000
ip -n "$H" link set ens2f0np0 mtu 9000
fl_layout "rails: MTU 9000, 1500, 9000" "$DEVS" ens1f0np0= ens1f1np1.100=mtu-mismatch \
	ens2f0np0=
grep -qx 'ip link set dev ens1f1np1.100 mtu 9000' "$FL_PASTE_LAST" ||
	rn_fail "rails mtu-mismatch: the fix does not raise the odd NIC"
# only the NICs judged are compared: one alone has nothing to differ from
rails
ip -n "$H" link set ens1f0np0 mtu 9000
fl_layout "rails: ens1f0np0 (9000) judged alone" ens1f0np0 ens1f0np0=

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
