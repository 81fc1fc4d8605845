#!/usr/bin/env bash
# `roce-doctor peer --timeout 2` against a server that takes the inventory and then trickles a
# valid header one byte every 5 s: --timeout bounds the whole run, not each read, so the peer
# gives up (exit 2, the message names --timeout) before the server's second byte, and says so
# on --json too. Prints how long it took.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
doc_bed

trickle() { # tag: the trickling server in B, its report in $T/tag.out
	rm -f "$T/$1.ready"
	bg_start TR ip netns exec "$B" python3 "$HOSTILE" trickle-server 18515 --interval 5 \
		--seconds 60 --ready "$T/$1.ready" >"$T/$1.out" 2>&1
	wait_file "$T/$1.ready" "the trickling server did not start"
}
run_peer() { # tag args...: status in RC, seconds in SECS
	local tag=$1 t0
	shift
	t0=$(date +%s.%N)
	timeout 120 ip netns exec "$A" "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --timeout 2 \
		"$@" >"$T/$tag.stdout" 2>"$T/$tag.err"
	RC=$?
	SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
}
bytes() { sed -n 's/^trickle: \([0-9]*\) bytes sent.*/\1/p' "$T/$1.out"; }

echo "== human"
trickle human
run_peer human
wait "$TR"
cat "$T/human.err" "$T/human.out"
echo "peer --timeout 2 ended after $SECS s (exit $RC)"
[ "$RC" -eq 2 ] || rn_fail "exit $RC, want 2"
grep -q -- "--timeout (2 s) ran out waiting for the server's inventory" "$T/human.err" ||
	rn_fail "the error does not name the run's --timeout"
[ "$(bytes human)" -le 1 ] || rn_fail "the peer waited for $(bytes human) trickled bytes"

echo "== json"
trickle json
run_peer json --json
wait "$TR"
echo "peer --timeout 2 --json ended after $SECS s (exit $RC)"
[ "$RC" -eq 2 ] || rn_fail "--json: exit $RC, want 2"
[ "$(bytes json)" -le 1 ] || rn_fail "--json: the peer waited for $(bytes json) trickled bytes"
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["error"]; assert e["code"] == 2 and "--timeout" in e["message"], e' \
	"$T/json.stdout" || { cat "$T/json.stdout"; rn_fail "--json: no error object naming --timeout"; }
echo PASS
