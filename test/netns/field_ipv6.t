#!/usr/bin/env bash
# Field layouts, IPv6: IPv6-only NICs in one /64 (default family: refused naming
# NCCL_IB_ADDR_FAMILY=AF_INET6; with AF_INET6: judged as a RoCE QP's lookup sees it,
# source = the GID's address, egress = the GID's netdev, ND answered by the owner only),
# dual-stack NICs, and an IPv6 L3 fabric (/127 per NIC) whose fix needs 'ip -6'.
. "$(dirname "$0")/field_lib.sh"

v6only() {
	fl_host
	fl_seg s0
	fl_nic nic0 s0 fd00:198:18::11/64
	fl_nic nic1 s0 fd00:198:18::12/64
}
v6only
doc "$H" --netdev nic0,nic1
grep -q 'all at once' <<<"$OUT" && rn_fail "the script is offered for NICs it refuses (no IPv4)"
fl_layout "IPv6-only NICs in one /64, default family" nic0,nic1 nic0=no-gid nic1=no-gid
grep -q 'NCCL_IB_ADDR_FAMILY=AF_INET6' "$FL_PASTE_LAST" || rn_fail "no-gid fix does not name AF_INET6"
v6only
FL_ENV=(NCCL_IB_ADDR_FAMILY=AF_INET6)
fl_layout "IPv6-only NICs in one /64, AF_INET6" nic0,nic1 nic0= nic1=
FL_ENV=()
# ... and the connection check from nic1 to a peer in the /64 (ND resolves on nic1 itself)
rn_in "$SW" sysctl -qw net.ipv6.conf.s0.disable_ipv6=0
fl_peer s0 fd00:198:18::254/64
out=$(rn_in "$H" "$RN_TOP/build/test/rn-pathcheck" -6 conn nic1 fd00:198:18::254 \
	"$(ip -n "$SW" -o link show s0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')" 2000)
echo "    $out"
grep -q "result=ok" <<<"$out" || rn_fail "IPv6 connection check from nic1 refused: $out"

# Peers outside the /64, nothing saying the fabric is routed: not judged, and the report
# says where IPv6 would take them (asked of the IPv6 routes, not "no route reaches them")
v6only
fl_seg m0
fl_nic mgmt0 m0 fd00:198:19::2/64
ip -n "$H" -6 route add default via fd00:198:19::1 dev mgmt0
fl_up nic0,nic1,mgmt0
ip netns exec "$H" env NCCL_IB_ADDR_FAMILY=AF_INET6 "$DOCTOR" --netdev nic0,nic1 >"$FL_T/o6.txt"
sed 's/^/    | /' "$FL_T/o6.txt"
grep -qx "  from nic0 nic1: they would be reached through mgmt0 (main's default route)" \
	"$FL_T/o6.txt" || rn_fail "IPv6: where unjudged routed peers would go is not named"

# A NIC with no address at all: no command can choose its address, so none is printed and
# the advice says what to do.
fl_host
fl_seg s0
fl_nic nic0 s0 198.18.0.11/24
fl_nic nic1 s0
FL_NAME="a NIC without an address"
echo "== $FL_NAME"
fl_up nic0,nic1
fl_judge nic0,nic1
fl_expect nic0 ""
fl_expect nic1 no-gid
[ -z "$(jq_py "$J" "[f['fix'] for n in d['nics'] for f in n['findings'] if n['netdev'] == 'nic1'][0]")" ] ||
	rn_fail "a command is printed where none can fix it"
jq_py "$J" "[f['advice'] for n in d['nics'] for f in n['findings'] if n['netdev'] == 'nic1'][0]" |
	grep -q "give nic1 an IPv4 address in 198.18.0.0/24 (nic0's subnet, which its L2 segment carries) (ip addr add <address>/24 dev nic1), then run again; or leave it out of NCCL: NCCL_IB_HCA=^" ||
	rn_fail "the advice does not say what to do"
# the text report shows it too, below the finding
ip netns exec "$H" "$DOCTOR" --netdev nic0,nic1 >"$FL_T/text" 2>&1
grep -A3 'no-gid' "$FL_T/text" | sed 's/^/    | /'
grep -q "NCCL_IB_HCA=^" "$FL_T/text" || rn_fail "the text report does not say what to do"
FL_REPORT+=("$FL_NAME nic1: no-gid (no command; the message says to give it an address)")

dual() {
	fl_host
	fl_seg s0
	fl_nic nic0 s0 198.18.0.11/24 fd00:198:18::11/64
	fl_nic nic1 s0 198.18.0.12/24 fd00:198:18::12/64
}
dual
fl_layout "dual-stack NICs, default family (IPv4 judged)" nic0,nic1 nic0=arp-flux,no-rule \
	nic1=arp-flux,route-wrong-nic
dual
FL_ENV=(NCCL_IB_ADDR_FAMILY=AF_INET6)
fl_layout "dual-stack NICs, AF_INET6 (IPv6 judged)" nic0,nic1 nic0= nic1=

# L3: a /127 per NIC, main's default via nic0's gateway only. IPv6 takes the QP's oif as a
# preference only: nic1's lookup leaves via nic0's gateway (its MAC then sent out of nic1).
fl_host
fl_seg s0
fl_seg s1
fl_nic nic0 s0 fd00:198:18::/127
fl_nic nic1 s1 fd00:198:18::2/127
ip -n "$H" -6 route add default via fd00:198:18::1 dev nic0
fl_layout "IPv6 L3 /127, no per-NIC tables, AF_INET6" nic0,nic1 nic0= nic1=route-wrong-nic
grep -q 'ip -6 rule add from fd00:198:18::2 ' "$FL_PASTE_LAST" || rn_fail "IPv6 fix without 'ip -6 rule'"
FL_ENV=()

printf '%s\n' "${FL_REPORT[@]}"
echo PASS
