#!/usr/bin/env bash
# Each fault of the route-awareness list, made on its own 2-NIC host namespace, is named by
# roce-doctor --netdev with its cause id (asserted in --json) and the catalogue's fix:
# a rule to the wrong table, strict rp_filter with asymmetry (and the all=1/per-if=0 trap),
# arp_ignore/arp_announce only on all vs only per interface, one subnet per NIC on one L2
# segment (shared-l2; good with arp_ignore=1/arp_announce=2),
# link down.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T

json() { # NS FILE: the --json report of nic0,nic1 into FILE; status in RC
	ip netns exec "$1" "$DOCTOR" --netdev nic0,nic1 --json >"$2"
	RC=$?
}
sys() { rn_in "$1" sysctl -qw "${@:2}"; }

echo "== rule to the wrong table: nic1's table routes the subnet out of nic0"
rn_host_ns 2
H=$RN_HOST
sys "$H" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
ip -n "$H" rule add from "${RN_IP[0]}" lookup 200 priority 200
ip -n "$H" route add 198.18.0.0/24 dev nic0 src "${RN_IP[0]}" table 200
ip -n "$H" rule add from "${RN_IP[1]}" lookup 201 priority 201
ip -n "$H" route add 198.18.0.0/24 dev nic0 src "${RN_IP[0]}" table 201
json "$H" "$T/wrong.json"
[ $RC -eq 1 ] || rn_fail "rule-wrong-nic: exit $RC, want 1"
c1=$(causes "$T/wrong.json" nic1) c0=$(causes "$T/wrong.json" nic0)
echo "nic0: $c0; nic1: $c1"
has rule-wrong-nic "$c1" "nic1 with its table routing out of nic0"
[ -z "$c0" ] || rn_fail "nic0 is configured right but has findings: $c0"
fix=$(jq_py "$T/wrong.json" "[f['fix'] for f in d['nics'][1]['findings'] if f['cause'] == 'rule-wrong-nic'][0]")
echo "fix: $fix"
grep -q "dev nic1 src ${RN_IP[1]} table 201" <<<"$fix" || rn_fail "rule-wrong-nic fix does not repair table 201"
[ "$(jq_py "$T/wrong.json" "d['nics'][1]['rule']['table']")" = 201 ] || rn_fail "nic1's rule not shown"

echo "== strict rp_filter with asymmetric routing (no rules)"
rn_host_ns 2
H=$RN_HOST
sys "$H" net.ipv4.conf.all.rp_filter=1 net.ipv4.conf.nic0.rp_filter=1 net.ipv4.conf.nic1.rp_filter=1
json "$H" "$T/rp.json"
[ $RC -eq 1 ] || rn_fail "rp_filter: exit $RC, want 1"
c1=$(causes "$T/rp.json" nic1)
echo "nic1: $c1"
has rp-filter "$c1" "strict rp_filter with nic1's replies leaving nic0"
has route-wrong-nic "$c1" "strict rp_filter case"
echo "-- the trap: all=1, per-interface 0 is still strict (effective = max)"
sys "$H" net.ipv4.conf.nic0.rp_filter=0 net.ipv4.conf.nic1.rp_filter=0
json "$H" "$T/rp2.json"
has rp-filter "$(causes "$T/rp2.json" nic1)" "rp_filter all=1 per-if=0"
[ "$(jq_py "$T/rp2.json" "[d['nics'][1]['sysctl'][k]['rp_filter'] for k in ('all', 'dev', 'effective')]" )" = "1 0 1" ] ||
	rn_fail "rp_filter all/dev/effective not shown as 1/0/1"
echo "-- loose rp_filter (2) drops nothing"
sys "$H" net.ipv4.conf.all.rp_filter=2
json "$H" "$T/rp3.json"
hasnt rp-filter "$(causes "$T/rp3.json" nic1)" "rp_filter=2"

echo "== arp_ignore/arp_announce only on all"
rn_host_ns 2
H=$RN_HOST
sys "$H" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
json "$H" "$T/all.json"
for n in nic0 nic1; do
	c=$(causes "$T/all.json" $n)
	echo "$n: $c"
	hasnt arp-flux "$c" "$n with arp_ignore=1 arp_announce=2 on all"
done
has no-rule "$(causes "$T/all.json" nic0)" "nic0 without policy rules"
has route-wrong-nic "$(causes "$T/all.json" nic1)" "nic1 without policy rules"
[ "$(jq_py "$T/all.json" "[d['nics'][0]['sysctl'][k]['arp_ignore'] for k in ('all', 'dev', 'effective')]")" = "1 0 1" ] ||
	rn_fail "arp_ignore all/dev/effective not shown as 1/0/1"

echo "== arp_ignore/arp_announce only per interface"
rn_host_ns 2
H=$RN_HOST
sys "$H" net.ipv4.conf.nic0.arp_ignore=1 net.ipv4.conf.nic0.arp_announce=2
json "$H" "$T/half.json"
has arp-flux "$(causes "$T/half.json" nic0)" "nic0 while nic1 still answers for it"
has arp-flux "$(causes "$T/half.json" nic1)" "nic1 with kernel defaults"
sys "$H" net.ipv4.conf.nic1.arp_ignore=1 net.ipv4.conf.nic1.arp_announce=2
json "$H" "$T/perif.json"
for n in nic0 nic1; do
	c=$(causes "$T/perif.json" $n)
	echo "$n: $c"
	hasnt arp-flux "$c" "$n with arp_ignore=1 arp_announce=2 on every interface"
done
[ "$(jq_py "$T/perif.json" "[d['nics'][1]['sysctl'][k]['arp_announce'] for k in ('all', 'dev', 'effective')]")" = "0 2 2" ] ||
	rn_fail "arp_announce all/dev/effective not shown as 0/2/2"

echo "== one subnet per NIC"
rn_host_ns 2
H=$RN_HOST
ip -n "$H" addr flush dev nic1
ip -n "$H" addr add 198.18.1.12/24 dev nic1
# Both still hang off one bridge: one L2 segment, found by the doctor's ARP probe.
json "$H" "$T/l2.json"
[ $RC -eq 1 ] || rn_fail "one subnet per NIC on one L2 segment: exit $RC, want 1"
[ "$(causes "$T/l2.json" nic1)" = shared-l2 ] || rn_fail "nic1: $(causes "$T/l2.json" nic1), want shared-l2"
sys "$H" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
doc "$H" --netdev nic0,nic1
echo "$OUT"
expect_rc 0 "one subnet per NIC with arp_ignore=1/arp_announce=2"

echo "== link down"
rn_host_ns 2
H=$RN_HOST
ip -n "$H" link set nic1 down
json "$H" "$T/down.json"
[ $RC -eq 1 ] || rn_fail "link down: exit $RC, want 1"
c=$(causes "$T/down.json" nic1)
echo "nic1: $c"
has link-down "$c" "nic1 down"
fix=$(jq_py "$T/down.json" "[f['fix'] for f in d['nics'][1]['findings'] if f['cause'] == 'link-down'][0]")
[ "$fix" = "ip link set dev nic1 up" ] || rn_fail "link-down fix: $fix"
echo PASS
