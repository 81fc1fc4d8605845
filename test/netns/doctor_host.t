#!/usr/bin/env bash
# roce-doctor --netdev on a host with 3 NICs in one subnet: kernel defaults are named as
# arp-flux and no-rule (exit 1, cause ids in --json); after scripts/roce-policy-routing the
# doctor says all good (exit 0); bad arguments exit 2 with a message.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_host_ns 3
rn_tmpdir T
H=$RN_HOST
NICS=nic0,nic1,nic2

doc "$H" --netdev $NICS
echo "$OUT"
expect_rc 1 "defaults"
grep -q 'arp-flux' <<<"$OUT" || rn_fail "human output does not name arp-flux"
grep -q 'fix.*roce-policy-routing' <<<"$OUT" || rn_fail "human output names no fix"

ip netns exec "$H" "$DOCTOR" --netdev $NICS --json >"$T/before.json"
RC=$?
[ $RC -eq 1 ] || rn_fail "--json defaults: exit $RC, want 1"
for n in nic0 nic1 nic2; do
	c=$(causes "$T/before.json" $n)
	echo "$n: $c"
	has arp-flux "$c" "$n before the fix"
done
# nic0 egresses right by luck (main's first route): no rule; the others say route-wrong-nic,
# whose fix is the same commands (said once: pasting both would fail with 'File exists').
has no-rule "$(causes "$T/before.json" nic0)" "nic0 before the fix"
hasnt no-rule "$(causes "$T/before.json" nic1)" "nic1 before the fix (route-wrong-nic says it)"
# nic1 and nic2 share nic0's connected route: the kernel sends their traffic out of nic0.
has route-wrong-nic "$(causes "$T/before.json" nic1)" "nic1 before the fix"
[ "$(jq_py "$T/before.json" "d['nics'][1]['route']['lookup']['dev']")" = nic0 ] ||
	rn_fail "nic1's route lookup does not show nic0 as the kernel's answer"
[ "$(jq_py "$T/before.json" "d['summary']['exit']")" = 1 ] || rn_fail "summary.exit is not 1"
[ "$(jq_py "$T/before.json" "d['nics'][0]['sysctl']['effective']['arp_ignore']")" = 0 ] ||
	rn_fail "effective arp_ignore is not 0 with kernel defaults"
# The fix text is the catalogue's, rendered with this NIC's facts.
fix=$(jq_py "$T/before.json" "[f['fix'] for f in d['nics'][1]['findings'] if f['cause'] == 'route-wrong-nic'][0]")
grep -q "ip rule add from ${RN_IP[1]} lookup" <<<"$fix" || rn_fail "route-wrong-nic fix for nic1: $fix"

rn_in "$H" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/state" nic0 nic1 nic2 >/dev/null ||
	rn_fail "roce-policy-routing failed"
doc "$H" --netdev $NICS
echo "$OUT"
expect_rc 0 "after roce-policy-routing"
grep -q 'verdict: all good' <<<"$OUT" || rn_fail "no 'all good' verdict after the fix"
ip netns exec "$H" "$DOCTOR" -n $NICS -j >"$T/after.json" || rn_fail "--json after the fix: exit $?"
[ -z "$(jq_py "$T/after.json" "d['summary']['causes']")" ] || rn_fail "causes left after the fix"
for i in 0 1 2; do
	[ "$(jq_py "$T/after.json" "d['nics'][$i]['gid_why']")" = policy ] ||
		rn_fail "nic$i: GID not chosen from the policy rule"
	[ "$(jq_py "$T/after.json" "d['nics'][$i]['route']['lookup']['dev']")" = nic$i ] ||
		rn_fail "nic$i: kernel route answer does not leave nic$i after the fix"
done
echo "time to a verdict: $(jq_py "$T/after.json" "d['summary']['elapsed_us']") us for 3 NICs"

# The plugin's knobs choose the GID as in the plugin: IPv6 wanted, the NICs have none.
NCCL_IB_ADDR_FAMILY=AF_INET6 ip netns exec "$H" "$DOCTOR" -n nic0 -j >"$T/v6.json"
RC=$?
[ $RC -eq 1 ] || rn_fail "NCCL_IB_ADDR_FAMILY=AF_INET6: exit $RC, want 1"
has no-gid "$(causes "$T/v6.json" nic0)" "NCCL_IB_ADDR_FAMILY=AF_INET6 without IPv6 addresses"
NCCL_IB_ADDR_RANGE=198.18.0.12/32 ip netns exec "$H" "$DOCTOR" -n nic0,nic1 -j >"$T/range.json"
has no-gid "$(causes "$T/range.json" nic0)" "NCCL_IB_ADDR_RANGE excluding nic0"
[ -z "$(causes "$T/range.json" nic1)" ] || rn_fail "NCCL_IB_ADDR_RANGE: nic1 in range has findings"
# A bad value is reported and the default used, as the plugin does.
NCCL_IB_GID_INDEX=abc ip netns exec "$H" "$DOCTOR" -n nic0 >"$T/badenv.txt" 2>&1
RC=$?
[ $RC -eq 0 ] || { cat "$T/badenv.txt"; rn_fail "NCCL_IB_GID_INDEX=abc: exit $RC, want 0"; }
grep -q 'bad NCCL_\* value' "$T/badenv.txt" || rn_fail "bad NCCL_IB_GID_INDEX not reported"

# Bad arguments: exit 2 with a message on stderr.
bad() {
	doc "$H" "$@"
	[ "$RC" -eq 2 ] || rn_fail "'$*': exit $RC, want 2"
	[ -n "$OUT" ] || rn_fail "'$*': no message"
	echo "'$*' -> $OUT"
}
bad --bogus
bad --netdev
bad --netdev nosuchdev0
bad --netdev nic0,,nic1
bad frobnicate
bad peer
bad peer 198.18.0.254 extra
bad serve --port 0
bad serve --port 70000
bad --once
bad host --port 1
bad peer 198.18.0.254 --timeout x
doc "$H" --help
[ "$RC" -eq 0 ] && grep -q 'Usage: roce-doctor' <<<"$OUT" || rn_fail "--help"
doc "$H" --version
[ "$RC" -eq 0 ] && grep -q '^roce-doctor ' <<<"$OUT" || rn_fail "--version"
echo PASS
