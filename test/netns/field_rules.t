#!/usr/bin/env bash
# Field layouts, policy rules that exist but do not decide, and NICs that changed under
# them: the seed's rules shadowed by wg-quick's suppress_prefixlength rule, by Tailscale's
# table 52, or placed after main; a NIC bounced down/up (its table routes vanish); a
# renumbered NIC with a stale rule (named stale-rule where its table is still the NIC's);
# a NIC with a secondary IP.
. "$(dirname "$0")/field_lib.sh"

ips=(198.18.0.11 198.18.0.12 198.18.0.13)
flat() {
	fl_host
	fl_seg s0
	fl_nic nic0 s0 198.18.0.11/24
	fl_nic nic1 s0 198.18.0.12/24
	fl_nic nic2 s0 198.18.0.13/24
	fl_sys net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
}
seed() { # the seed's tables 101..103 at priority $1 (none: the kernel picks)
	local i
	for i in 0 1 2; do
		ip -n "$H" route add 198.18.0.0/24 dev nic$i src "${ips[i]}" table $((101 + i))
		ip -n "$H" rule add from "${ips[i]}" lookup $((101 + i)) ${1:+priority $(($1 + i))}
	done
}

# wg-quick (full tunnel) adds two priority-less rules after ours: the kernel puts them
# ahead of the first rule, so 'main suppress_prefixlength 0' decides the subnet.
flat
seed 101
ip -n "$H" link add name wg0 type veth peer name wg0p
ip -n "$H" link set wg0 up
ip -n "$H" route add default dev wg0 table 51820
ip -n "$H" rule add not fwmark 0xca6c table 51820
ip -n "$H" rule add table main suppress_prefixlength 0
fl_layout "seed rules shadowed by wg-quick's rules" nic0,nic1,nic2 nic0=rule-shadowed \
	nic1=rule-shadowed nic2=rule-shadowed
ip -n "$H" rule show | sed 's/^/    /'

# Tailscale's rules at 5210-5270; table 52 holds a subnet route for our subnet (another
# node advertises it); the seed's rules sit at 30000+ as NetworkManager would put them.
flat
seed 30101
ip -n "$H" link add name tailscale0 type veth peer name tsp
ip -n "$H" link set tailscale0 up
ip -n "$H" route add 198.18.0.0/24 dev tailscale0 table 52
ip -n "$H" rule add fwmark 0x80000/0xff0000 lookup main priority 5210
ip -n "$H" rule add fwmark 0x80000/0xff0000 lookup default priority 5230
ip -n "$H" rule add fwmark 0x80000/0xff0000 unreachable priority 5250
ip -n "$H" rule add lookup 52 priority 5270
fl_layout "seed rules at 30101+ shadowed by Tailscale's table 52" nic0,nic1,nic2 \
	nic0=rule-shadowed nic1=rule-shadowed nic2=rule-shadowed

# Rules placed after main (priority 40000+): main's connected route decides.
flat
seed 40001
fl_layout "seed rules after main (40001-40003)" nic0,nic1,nic2 nic0=rule-shadowed \
	nic1=rule-shadowed nic2=rule-shadowed

# A NIC bounced down and up: the kernel deletes its routes, table 102 is empty.
flat
seed 101
ip -n "$H" link set nic1 down
ip -n "$H" link set nic1 up
fl_layout "nic1 bounced down/up" nic0,nic1,nic2 nic0= nic1=table-no-route nic2=

# Renumbered: nic1 moved from .12 to .22; its old rule stays, its table lost the route
# (the kernel deletes routes whose src goes): the rule is stale, and nic1 the only NIC of
# the subnet without a rule, so it is nic1's.
flat
seed 101
ip -n "$H" addr del 198.18.0.12/24 dev nic1
ip -n "$H" addr add 198.18.0.22/24 dev nic1
fl_layout "nic1 renumbered .12 -> .22, stale rule" nic0,nic1,nic2 nic0= \
	nic1=route-wrong-nic,stale-rule nic2=
grep -qx 'ip rule del from 198.18.0.12 lookup 102 pref 102' "$FL_PASTE_LAST" ||
	rn_fail "stale-rule: the fix is not the rule's own deletion"
ip -n "$H" rule show | grep -q 'from 198.18.0.12 ' && rn_fail "stale-rule: the old rule stayed"

# Renumbered the same way, its table still routing the subnet out of nic1 (a route without
# src survives the address): the old rule is named stale-rule, deleted by the pasted fix.
flat
seed 101
ip -n "$H" addr del 198.18.0.12/24 dev nic1
ip -n "$H" addr add 198.18.0.22/24 dev nic1
ip -n "$H" route add 198.18.0.0/24 dev nic1 table 102
fl_layout "nic1 renumbered .12 -> .22, its table still routing out of it" nic0,nic1,nic2 nic0= \
	nic1=route-wrong-nic,stale-rule nic2=
ip -n "$H" rule show | grep -q 'from 198.18.0.12 ' && rn_fail "stale-rule: the old rule stayed"

# Set up by roce-policy-routing (table 100 + ifindex), then renumbered: the kernel empties
# nic1's table with the address; the empty table still bears nic1's number.
flat
rn_in "$H" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$FL_T/st" nic0 nic1 nic2 \
	>/dev/null || rn_fail "roce-policy-routing"
fl_layout "seed of roce-policy-routing" nic0,nic1,nic2 nic0= nic1= nic2=
ip -n "$H" addr del 198.18.0.12/24 dev nic1
ip -n "$H" addr add 198.18.0.22/24 dev nic1
t1=$((100 + $(ip -n "$H" -o link show dev nic1 | cut -d: -f1)))
fl_layout "roce-policy-routing's nic1 renumbered .12 -> .22" nic0,nic1,nic2 nic0= \
	nic1=route-wrong-nic,stale-rule nic2=
grep -q "^ip rule del from 198.18.0.12 lookup $t1 pref " "$FL_PASTE_LAST" ||
	rn_fail "stale-rule: no deletion of the rule into table $t1"

# A secondary IP on nic1: the primary is the source; a rule for the secondary makes it so.
flat
seed 101
ip -n "$H" addr add 198.18.0.112/24 dev nic1
fl_layout "nic1 with a secondary IP (rules for the primaries)" nic0,nic1,nic2 nic0= nic1= nic2=
ip -n "$H" route add 198.18.0.0/24 dev nic1 src 198.18.0.112 table 112
ip -n "$H" rule add from 198.18.0.112 lookup 112 priority 99
fl_layout "nic1's secondary IP with a rule of its own" nic0,nic1,nic2 nic0= nic1= nic2=
[ "$(jq_py "$J" "[n['ip'] for n in d['nics'] if n['netdev'] == 'nic1'][0]")" = 198.18.0.112 ] ||
	rn_fail "nic1's source is not the secondary IP its rule routes"

# The seed's rules with a fwmark (a mark-based routing scheme's): they select nothing for
# RoCE's unmarked traffic. no-rule says which rules exist and why they do not count.
flat
for i in 0 1 2; do
	ip -n "$H" route add 198.18.0.0/24 dev nic$i src "${ips[i]}" table $((101 + i))
	ip -n "$H" rule add from "${ips[i]}" fwmark 0x1 lookup $((101 + i)) priority $((101 + i))
done
fl_layout "seed rules that also match fwmark 0x1" nic0,nic1,nic2 nic0=no-rule \
	nic1=route-wrong-nic nic2=route-wrong-nic
pre=$FL_T/j$((FL_J - 1)).json
msg=$(jq_py "$pre" "[f['message'] for n in d['nics'] if n['netdev'] == 'nic0' for f in n['findings'] if f['cause'] == 'no-rule'][0]")
echo "    $msg"
grep -q "no 'from 198.18.0.11' rule selects a table for it; 'from 198.18.0.11 fwmark 0x1 lookup 101' (pref 101) matches only marked" <<<"$msg" ||
	rn_fail "no-rule does not name the fwmark rule that does not count"

# The same with uidrange (a per-user routing scheme's rules) and ipproto: named as such.
flat
for i in 0 1 2; do
	ip -n "$H" route add 198.18.0.0/24 dev nic$i src "${ips[i]}" table $((101 + i))
	ip -n "$H" rule add from "${ips[i]}" uidrange 1000-1999 lookup $((101 + i)) priority $((101 + i))
done
ip -n "$H" rule add from "${ips[0]}" ipproto tcp lookup 101 priority 200
fl_layout "seed rules that also match uidrange 1000-1999" nic0,nic1,nic2 nic0=no-rule \
	nic1=route-wrong-nic nic2=route-wrong-nic
pre=$FL_T/j$((FL_J - 1)).json
msg=$(jq_py "$pre" "[f['message'] for n in d['nics'] if n['netdev'] == 'nic0' for f in n['findings'] if f['cause'] == 'no-rule'][0]")
echo "    $msg"
grep -q "no 'from 198.18.0.11' rule selects a table for it; 'from 198.18.0.11 lookup 101 uidrange 1000-1999' (pref 101), 'from 198.18.0.11 lookup 101 ipproto 6' (pref 200) match only marked, forwarded or selected traffic (fwmark, iif/oif, uidrange, ipproto, ports)" <<<"$msg" ||
	rn_fail "no-rule does not name the uidrange and ipproto rules that do not count"

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
