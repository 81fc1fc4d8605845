#!/usr/bin/env bash
# roce-policy-routing: gateways (from main or --gateway), multi-IP NICs (--ip), reuse of an
# existing rule's table (a stale route there is replaced and restored by --undo), table and
# priority numbers already in use are skipped, --table-base/--prio-base. Tables are
# 100 + ifindex (the rule shared with roce-doctor).
. "$(dirname "$0")/policy_lib.sh"
rn_host_ns 3 1
H=$RN_HOST
FAR=198.19.200.1    # off-subnet destination, only used for route lookups (no traffic)
for i in 0 1 2; do eval "T$i=\$((100 + \$(rn_in "$H" bash -c 'cat /sys/class/net/nic'$i'/ifindex')))"; done

route_get() { ip -n "$H" -4 route get "$2" from "$1" | head -n 1; }
run() { rn_in "$H" "$TOOL" "${st[@]}" "$@" >"$T/out" 2>&1 || { cat "$T/out"; rn_fail "'$*' failed"; }; cat "$T/out"; }
undo_check() {
	run --undo
	rn_snapshot "$H" >"$T/now"
	rn_assert_same "$T/before" "$T/now" "undo did not restore the state ($1)"
}

# 1. gateway detected from main: a (non-best) default route via nic1
ip -n "$H" route add default via 198.18.0.254 dev nic1 metric 500
rn_snapshot "$H" >"$T/before"
run nic0 nic1
grep -q '^# nic1: .* gateway 198.18.0.254$' "$T/out" || rn_fail "nic1's gateway not detected"
grep -q '^# nic0: .* gateway none$' "$T/out" || rn_fail "nic0 got a gateway"
ip -n "$H" -4 route show table $T1 | grep -qx 'default via 198.18.0.254 dev nic1 *' || rn_fail "no default in table $T1"
route_get 198.18.0.12 $FAR | grep -q "via 198.18.0.254 dev nic1 table $T1" ||
	rn_fail "off-subnet from nic1: $(route_get 198.18.0.12 $FAR)"
route_get 198.18.0.11 $FAR | grep -q "dev mgmt0" || rn_fail "nic0 has no gateway, should fall to main"
undo_check "detected gateway"
ip -n "$H" route del default via 198.18.0.254 dev nic1 metric 500
rn_snapshot "$H" >"$T/before"

# 2. --gateway=GW for all, per-NIC override, --gateway (required) satisfied by it
run --rp-filter 2 --gateway --gateway=198.18.0.254 --gateway=nic2=198.18.0.253 nic0 nic1 nic2
for n in all nic0 nic1 nic2; do
	[ "$(rn_in "$H" cat /proc/sys/net/ipv4/conf/$n/rp_filter)" = 2 ] || rn_fail "$n rp_filter not 2"
done
for t in $T0 $T1; do
	ip -n "$H" -4 route show table $t | grep -q '^default via 198.18.0.254 ' || rn_fail "table $t lacks the gateway"
done
ip -n "$H" -4 route show table $T2 | grep -q '^default via 198.18.0.253 dev nic2' || rn_fail "table $T2: per-NIC gateway"
undo_check "--gateway"

# 3. multi-IP NIC: primary by default, --ip picks another
ip -n "$H" addr add 198.18.0.21/24 dev nic0
rn_snapshot "$H" >"$T/before"
run nic0
grep -q 'has 2 IPv4 addresses; using primary 198.18.0.11' "$T/out" || rn_fail "no multi-IP note"
ip -n "$H" -4 rule show | grep -q "from 198.18.0.11 lookup $T0" || rn_fail "primary not used"
undo_check "primary"
run --ip nic0=198.18.0.21 nic0
ip -n "$H" -4 rule show | grep -q "from 198.18.0.21 lookup $T0" || rn_fail "--ip not used"
ip -n "$H" -4 route show table $T0 | grep -q 'src 198.18.0.21' || rn_fail "--ip not the route source"
route_get 198.18.0.21 198.18.0.254 | grep -q 'dev nic0' || rn_fail "route get from .21"
undo_check "--ip"

# 3b. a secondary address whose rule's table routes it out of nic0 is the source (as the
#     library's rn_policy_source); when that table routes it elsewhere, the primary is
ip -n "$H" route add 198.18.0.0/24 dev nic0 src 198.18.0.21 table 300
ip -n "$H" rule add from 198.18.0.21 lookup 300 priority 300
rn_snapshot "$H" >"$T/before"
run nic0
grep -q '^# nic0: has 2 IPv4 addresses; using 198.18.0.21, which has its rule already' "$T/out" || rn_fail "the ruled secondary not chosen"
grep -q '^ip rule add' "$T/out" && rn_fail "a second rule for the ruled secondary"
undo_check "ruled secondary"
ip -n "$H" route replace 198.18.0.0/24 dev nic1 table 300
rn_snapshot "$H" >"$T/before"
run nic0
grep -q 'using primary 198.18.0.11' "$T/out" || rn_fail "a rule into a table routing elsewhere made the secondary the source"
undo_check "misrouted secondary"
ip -n "$H" rule del from 198.18.0.21 lookup 300 priority 300
ip -n "$H" route flush table 300
ip -n "$H" addr del 198.18.0.21/24 dev nic0
rn_snapshot "$H" >"$T/before"

# 4. existing rule for nic1 into table 200 holding a stale route via nic0; nic0's table
#    $T0 used by a route of mgmt0's and the next number by a rule's priority: nic0 skips
#    both and the numbers that are other links' 100 + ifindex; bases moved for nic2
ip -n "$H" rule add from 198.18.0.12 lookup 200 priority 50
ip -n "$H" route add 198.18.0.0/24 dev nic0 table 200
ip -n "$H" route add 198.19.5.0/24 dev mgmt0 table $T0
nlinks=$(ip -n "$H" -o link show | wc -l)
ip -n "$H" rule add fwmark 7 lookup 300 priority $((101 + nlinks))
rn_snapshot "$H" >"$T/before"
run nic0 nic1
want=$((102 + nlinks))
grep -q "^# nic0: .* table $want priority $want " "$T/out" || rn_fail "nic0 should skip used table $T0 and the others' numbers to $want"
grep -q '^# nic1: .* table 200 priority 50 .*existing rule' "$T/out" || rn_fail "nic1 should reuse table 200"
grep -q '^ip rule add from 198.18.0.12' "$T/out" && rn_fail "nic1 got a second rule"
[ "$(ip -n "$H" -4 route show table 200 | tr -s ' ' | sed 's/ $//')" = \
	"198.18.0.0/24 dev nic1 scope link src 198.18.0.12" ] || rn_fail "table 200: $(ip -n "$H" route show table 200)"
route_get 198.18.0.12 198.18.0.254 | grep -q 'dev nic1' || rn_fail "nic1 egress"
run nic0 nic1
grep -qx '# nothing to change' "$T/out" || rn_fail "rerun with reused table not idempotent"
undo_check "reuse and collisions"   # the stale route and foreign rules come back exactly
run --table-base 1000 --prio-base 2000 nic2
ip -n "$H" -4 rule show | grep -q "^$((T2 + 1900)):.*from 198.18.0.13 lookup $((T2 + 900))" || rn_fail "bases not honoured"
undo_check "bases"

# 5. drift before --undo: a rule we added was removed, a sysctl we set was changed by
#    someone else -> undo reports both, leaves that sysctl alone, restores the rest
rn_snapshot "$H" >"$T/before"
run nic0 nic1
read -r prio _ _ _ tbl _ < <(ip -n "$H" -N -4 rule show | grep 'from 198.18.0.11 lookup')
prio=${prio%:}
ip -n "$H" rule del from 198.18.0.11 lookup "$tbl" priority "$prio" || rn_fail "cannot delete the rule"
rn_in "$H" sysctl -qw net.ipv4.conf.nic0.arp_ignore=2
run --undo
grep -q "rule from 198.18.0.11 lookup $tbl priority $prio already gone" "$T/out" || rn_fail "no note on the missing rule"
grep -q 'net.ipv4.conf.nic0.arp_ignore is now 2 .*left alone' "$T/out" || rn_fail "no note on the changed sysctl"
[ "$(rn_in "$H" cat /proc/sys/net/ipv4/conf/nic0/arp_ignore)" = 2 ] || rn_fail "undo clobbered a foreign change"
rn_in "$H" sysctl -qw net.ipv4.conf.nic0.arp_ignore=0
rn_snapshot "$H" >"$T/now"
rn_assert_same "$T/before" "$T/now" "undo with drift"
echo PASS
