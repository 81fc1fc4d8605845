#!/usr/bin/env bash
# roce-doctor serve's front desk against squatters and connect churn at once: 40 clients of
# one address (198.18.0.12) each send a valid inventory, take their session with CHECKS that
# name no pair and then send nothing, and start again when cut or told busy; meanwhile up to
# 1,000 connect+close a second come from host A (the other netns lane runs beside it: the
# churn is kept to what a 2-core machine sustains). Five real `peer` runs from A's other
# address, one after another, must each be served within their deadline. Serve gives one address at most
# 4 places in the queue (the rest are told busy, said once a minute), cuts a session whose
# CHECKS named no pair when no DONE follows within 2 s, and reads each accepted socket
# before the next accept (a connect+close goes at once, the oldest silent one makes room).
# Prints the peers' times, the squatters' figures and serve's RSS and CPU (figures only).
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
command -v python3 >/dev/null || rn_skip "skip: python3 (the squatters) not installed"
rn_tmpdir T
doc_bed
ip -n "$A" -4 addr show dev nic1 | grep -q '198.18.0.12/' || rn_fail "host A has no 198.18.0.12 on nic1"
serve_start "$T/serve.log" --timeout 120
FLOOD=$RN_TOP/test/netns/flood.py

bg_start SQ ip netns exec "$A" python3 "$HOSTILE" squat 198.18.0.21 18515 --conns 40 \
	--seconds 40 --source 198.18.0.12 --ready "$T/sq.ready" >"$T/sq.out" 2>&1
bg_start FL ip netns exec "$A" python3 "$FLOOD" 198.18.0.21 18515 --idle 0 --slow 0 \
	--churn 1000 --seconds 40 --ready "$T/fl.ready" >"$T/fl.out" 2>&1
wait_file "$T/sq.ready" "the squatters did not start"
wait_file "$T/fl.ready" "the churn did not start"
sleep 3 # the queue is the squatters' by now
cpu0=$(awk '{print $14 + $15}' "/proc/$SRV/stat")
served=0
for i in 1 2 3 4 5; do
	t0=$(date +%s.%N)
	ip netns exec "$A" "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --timeout 20 >"$T/p$i.txt" 2>&1
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
	echo "peer $i: exit $rc in $secs s"
	if [ $rc -eq 0 ] || [ $rc -eq 1 ]; then
		grep -q '^roce-doctor .* <-> ' "$T/p$i.txt" || { cat "$T/p$i.txt"; rn_fail "peer $i: no report"; }
		served=$((served + 1))
	else
		cat "$T/p$i.txt"
		tail -5 "$T/serve.log"
	fi
done
cpu1=$(awk '{print $14 + $15}' "/proc/$SRV/stat")
rss=$(awk '/VmHWM/ {print $2}' "/proc/$SRV/status")
wait "$SQ" "$FL"
cat "$T/sq.out" "$T/fl.out"
echo "== serve: peak RSS $((rss / 1024)) MiB, $(( (cpu1 - cpu0) / $(getconf CLK_TCK) )) s of CPU during the peers"
[ "$served" -eq 5 ] || rn_fail "$served of 5 real peers served while squatters and churn ran"
grep -q 'squat: 40 squatters, [0-9]* sessions taken, [1-9][0-9]* told busy' "$T/sq.out" ||
	rn_fail "the squatters were never told busy (no limit per address?)"
grep -q 'busy: told 198.18.0.12:[0-9]* that .* (4 of them are its address.s already)' "$T/serve.log" ||
	rn_fail "serve does not say why the squatters are busy"
grep -q 'cut: its CHECKS named no pair and no DONE came within 2000 ms' "$T/serve.log" ||
	rn_fail "serve did not cut an idle session whose CHECKS named no pair"
longest=$(sed -n 's/.*longest held \([0-9.]*\) s.*/\1/p' "$T/sq.out")
awk -v l="$longest" 'BEGIN {exit !(l < 10)}' || rn_fail "a squatter held its session $longest s"
kill -0 "$SRV" 2>/dev/null || rn_fail "serve died"
echo PASS
