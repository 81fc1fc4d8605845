#!/usr/bin/env bash
# roce-doctor --prometheus / --textfile on a host with 2 NICs in one subnet: kernel defaults
# give valid exposition text (test/netns/prom_check.py) with roce_nic_verdict 2 and the
# arp-flux and no-rule / route-wrong-nic findings per NIC (exit 1); after scripts/roce-policy-routing every
# verdict is 0 and no finding is left (exit 0); --textfile replaces the file atomically
# (no temporary left), an unwritable path exits 2, and the options refuse other commands.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_host_ns 2
rn_tmpdir T
H=$RN_HOST
CHECK=$RN_TOP/test/netns/prom_check.py

ip netns exec "$H" "$DOCTOR" --netdev nic0,nic1 --prometheus >"$T/before.prom"
RC=$?
[ $RC -eq 1 ] || rn_fail "--prometheus, defaults: exit $RC, want 1"
python3 "$CHECK" "$T/before.prom" >"$T/before.txt" || { cat "$T/before.prom"; rn_fail "not valid exposition text"; }
cat "$T/before.txt"
for n in nic0 nic1; do
	grep -qx "roce_nic_verdict{device=,ibdev=,netdev=$n,port=} 2" "$T/before.txt" || rn_fail "$n: verdict not 2 (refused)"
	# nic0 egresses right by luck (no-rule); nic1's route leaves nic0 (route-wrong-nic)
	[ $n = nic0 ] && r=no-rule || r=route-wrong-nic
	for c in arp-flux $r; do
		grep -q "^roce_nic_finding{cause=$c,device=,ibdev=,netdev=$n,port=,severity=[a-z]*} 1$" "$T/before.txt" ||
			rn_fail "$n: no $c finding series"
	done
done
grep -qx 'roce_host_problems{} 1' "$T/before.txt" || rn_fail "roce_host_problems not 1"
grep -qx 'roce_doctor_up{} 1' "$T/before.txt" || rn_fail "roce_doctor_up not 1"
grep -q '^roce_doctor_last_run_timestamp_seconds{} [0-9]' "$T/before.txt" || rn_fail "no timestamp"

rn_in "$H" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/state" nic0 nic1 >/dev/null ||
	rn_fail "roce-policy-routing failed"
echo stale >"$T/roce.prom"
ip netns exec "$H" "$DOCTOR" --netdev nic0,nic1 --textfile "$T/roce.prom" >"$T/stdout"
RC=$?
[ $RC -eq 0 ] || rn_fail "--textfile after the fix: exit $RC, want 0"
[ -s "$T/stdout" ] && rn_fail "--textfile printed to stdout: $(cat "$T/stdout")"
python3 "$CHECK" "$T/roce.prom" >"$T/after.txt" || { cat "$T/roce.prom"; rn_fail "textfile not valid exposition text"; }
for n in nic0 nic1; do
	grep -qx "roce_nic_verdict{device=,ibdev=,netdev=$n,port=} 0" "$T/after.txt" || rn_fail "$n: verdict not 0 after the fix"
done
grep -q '^roce_nic_finding' "$T/after.txt" && rn_fail "findings left after the fix: $(grep roce_nic_finding "$T/after.txt")"
grep -qx 'roce_host_problems{} 0' "$T/after.txt" || rn_fail "roce_host_problems not 0 after the fix"
compgen -G "$T/roce.prom.tmp*" >/dev/null && rn_fail "a temporary file was left next to the textfile"
echo "after the fix: $(grep -c . "$T/after.txt") samples, all verdicts 0"

ip netns exec "$H" "$DOCTOR" --netdev nic0 --textfile "$T/no/such/dir/roce.prom" 2>"$T/err"
RC=$?
[ $RC -eq 2 ] || rn_fail "unwritable textfile: exit $RC, want 2"
grep -q 'textfile' "$T/err" || rn_fail "unwritable textfile: no message"
for args in "peer 198.18.0.1 --prometheus" "--json --prometheus" "serve --textfile $T/x.prom"; do
	# shellcheck disable=SC2086
	ip netns exec "$H" "$DOCTOR" $args >/dev/null 2>"$T/err"
	RC=$?
	[ $RC -eq 2 ] || rn_fail "'$args': exit $RC, want 2"
done
echo "PASS"
