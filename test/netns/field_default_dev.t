#!/usr/bin/env bash
# Field layout (issue #16, point 7): per-NIC tables where one table's default route was
# copied from another NIC's and still names that NIC's device ("default via GW dev nic0"
# in nic1's table). Refused as rule-wrong-nic; the printed fix is pasted into the host's
# shell and the host judged again: good. Plain names, mlx5-style names where one is a
# prefix of the other (ens1f0np0, ens1f0np0.100), and the metric a netplan route carries.
. "$(dirname "$0")/field_lib.sh"

gw=198.18.0.254
pair() { # DEV0 DEV1 [ROUTE-OPTIONS of the copied default]
	local d0=$1 d1=$2
	shift 2
	fl_host
	fl_seg s0
	fl_peer s0 $gw/24
	fl_nic "$d0" s0 198.18.0.11/24
	fl_nic "$d1" s0 198.18.0.12/24
	fl_sys net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
	ip -n "$H" route add 198.18.0.0/24 dev "$d0" src 198.18.0.11 table 101
	ip -n "$H" route add default via $gw dev "$d0" "$@" table 101
	ip -n "$H" rule add from 198.18.0.11 lookup 101 priority 101
	ip -n "$H" route add 198.18.0.0/24 dev "$d1" src 198.18.0.12 table 102
	# the slip: the line copied from table 101, only the table number changed
	ip -n "$H" route add default via $gw dev "$d0" "$@" table 102
	ip -n "$H" rule add from 198.18.0.12 lookup 102 priority 102
}

want_fix() { # the exact command among the fixes pasted
	grep -qxF "$1" "$FL_PASTE_LAST" ||
		{ cat "$FL_PASTE_LAST"; rn_fail "$FL_NAME: the fix '$1' was not printed"; }
}

pair nic0 nic1
fl_layout "nic1's table: default via $gw dev nic0" nic0,nic1 nic0= nic1=rule-wrong-nic
want_fix "ip route replace default via $gw dev nic1 table 102"
ip -n "$H" route show table 102 | grep -q "dev nic0" && rn_fail "table 102 still names nic0"

pair ens1f0np0 ens1f0np0.100
fl_layout "ens1f0np0.100's table: default via $gw dev ens1f0np0" ens1f0np0,ens1f0np0.100 \
	ens1f0np0= ens1f0np0.100=rule-wrong-nic
want_fix "ip route replace default via $gw dev ens1f0np0.100 table 102"

# netplan writes 'proto static metric 100': the fix replaces that route, not one beside it
pair ens1f0np0 ens1f1np1 proto static metric 100
fl_layout "ens1f1np1's table: default via $gw dev ens1f0np0 proto static metric 100" \
	ens1f0np0,ens1f1np1 ens1f0np0= ens1f1np1=rule-wrong-nic
want_fix "ip route replace default via $gw dev ens1f1np1 table 102 metric 100"
[ "$(ip -n "$H" route show table 102 default | wc -l)" = 1 ] ||
	rn_fail "table 102 holds two defaults after the fix"

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
