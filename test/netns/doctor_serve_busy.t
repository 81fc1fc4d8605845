#!/usr/bin/env bash
# 32 `roce-doctor peer --timeout 5` at once against one serve (sessions run one at a time, a
# second or less each): every peer either gets its report (exit 0/1) or is told the server is
# busy, with how many were ahead (exit 2, JSON error kind "busy"), never "timed out". Serve
# tells each queued client its place when it joins and whenever it changes. Then a lone peer
# is served at once, and a second client of `serve --once` while its one session runs is told
# busy at once (BUSY: the server takes no more). Prints how many were served and told busy.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
doc_bed
serve_start "$T/serve.log" --timeout 120
N=32

t0=$(date +%s.%N)
pids=()
for i in $(seq $N); do
	(ip netns exec "$A" "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --json --timeout 5 \
		>"$T/p$i.json" 2>"$T/p$i.err"; echo $? >"$T/p$i.rc") &
	pids+=($!)
done
wait "${pids[@]}"
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
served=0 busy=0
for i in $(seq $N); do
	rc=$(cat "$T/p$i.rc")
	case $rc in
	0 | 1)
		[[ $(jq_py "$T/p$i.json" "d['remote']['host']") != "" ]] || rn_fail "peer $i: exit $rc without a report"
		served=$((served + 1)) ;;
	2)
		if ! grep -q 'server busy: [0-9]* clients\? ahead' "$T/p$i.err"; then
			cat "$T/p$i.err"
			tail -5 "$T/serve.log"
			rn_fail "peer $i: exit 2 without being told the server is busy"
		fi
		[ "$(jq_py "$T/p$i.json" "d['error']['kind']")" = busy ] || rn_fail "peer $i: JSON error kind is not busy"
		busy=$((busy + 1)) ;;
	*) cat "$T/p$i.err"; rn_fail "peer $i: exit $rc" ;;
	esac
	! grep -qi 'timed out' "$T/p$i.err" || { cat "$T/p$i.err"; rn_fail "peer $i: told 'timed out'"; }
done
echo "== $N peers at once in $secs s: $served served, $busy told busy"
for i in $(seq $N); do grep -h 'server busy' "$T/p$i.err"; done | head -3
[ $((served + busy)) -eq $N ] || rn_fail "not every peer was served or told busy"
[ "$served" -ge 1 ] || rn_fail "no peer was served"
sess=$(grep -c 'pairs checked here' "$T/serve.log")
[ "$sess" -eq "$served" ] || rn_fail "serve logged $sess sessions, $served peers got a report"

echo "== a lone peer afterwards"
ip netns exec "$A" "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --timeout 5 >"$T/lone.txt" 2>&1
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || { cat "$T/lone.txt"; rn_fail "the lone peer: exit $rc"; }
kill -0 "$SRV" 2>/dev/null || rn_fail "serve died"

echo "== serve --once: a second client while the one session runs is told busy at once"
serve_start "$T/once.log" --once --port 18516 --timeout 60
bg_start HOS ip netns exec "$A" python3 "$HOSTILE" session 198.18.0.21 18516 --probes 1 \
	--interval 3 --ready "$T/hos.ready" >"$T/hos.out" 2>&1
wait_file "$T/hos.ready" "the first session did not start"
doc "$A" peer 198.18.0.21 --port 18516 --netdev nic0,nic1 --timeout 20
echo "$OUT"
expect_rc 2 "a second client of serve --once"
grep -q 'server busy: 1 client ahead, it takes no more now' <<<"$OUT" ||
	rn_fail "the second client of serve --once was not told busy"
wait "$HOS"
grep -q 'busy: told 198.18.0.11:[0-9]* that 1 client is ahead (--once: one session)' "$T/once.log" ||
	{ cat "$T/once.log"; rn_fail "serve --once does not log the busy answer"; }
echo PASS
