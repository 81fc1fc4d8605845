#!/usr/bin/env bash
# roce-doctor serve holds a bounded amount of clients' bytes, whatever they announce: 64
# connections, each a valid inventory header announcing 16 MiB and then 16 MiB - 1 bytes of
# it, are refused at their headers (an inventory is at most 1 MiB); 64 announcing 1 MiB, the
# limit, and sending all but its last byte, share the 8 MiB byte budget (the ones that held a
# part of it longest make room). Serve's peak RSS under each flood (VmHWM, reset before it)
# stays within its RSS before the flood + BOUND_MIB (the budget, 8 MiB, and 4 MiB for the
# allocator's slack), and a real peer that comes during the second flood is served.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
doc_bed
BOUND_MIB=12

peer() { # tag: a real client, JSON report in $T/tag.json, status in $T/tag.rc
	ip netns exec "$A" "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --json --timeout 20 \
		>"$T/$1.json" 2>"$T/$1.err"
	echo $? >"$T/$1.rc"
}
served() { # tag
	local rc
	rc=$(cat "$T/$1.rc")
	if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
		cat "$T/$1.err" "$T/serve.log"
		rn_fail "$1: peer exited $rc"
	fi
	[[ $(jq_py "$T/$1.json" "d['remote']['host']") != "" ]] || rn_fail "$1: no remote host"
}
kib() { awk -v k="$1" '$1 == k ":" { print $2 }' "/proc/$SRV/status"; }

serve_start "$T/serve.log" --timeout 120
# one real session first: serve's own facts and libraries are in the baseline
peer warm
served warm

flood() { # tag announce send
	local base hwm
	echo 5 >"/proc/$SRV/clear_refs" # VmHWM := VmRSS
	base=$(kib VmRSS)
	ip netns exec "$A" python3 "$HOSTILE" big 198.18.0.21 18515 --conns 64 --announce "$2" \
		--send "$3" --seconds 6 >"$T/$1.out" 2>&1 || { cat "$T/$1.out"; rn_fail "$1: flooder failed"; }
	cat "$T/$1.out"
	hwm=$(kib VmHWM)
	kill -0 "$SRV" 2>/dev/null || rn_fail "$1: serve died"
	echo "== $1: serve's RSS $((base / 1024)) MiB before, peak $((hwm / 1024)) MiB under the flood" \
		"(+$(((hwm - base) / 1024)) MiB; bound +$BOUND_MIB MiB)"
	[ $((hwm - base)) -le $((BOUND_MIB * 1024)) ] ||
		{ tail -5 "$T/serve.log"; rn_fail "$1: serve's RSS grew by $(((hwm - base) / 1024)) MiB, over $BOUND_MIB MiB"; }
}

echo "== 64 x 16 MiB announced, 16 MiB - 1 sent each"
flood over $((16 << 20)) $(((16 << 20) - 1))
grep -q '^big: 64 connections .* 64 closed by the server' "$T/over.out" ||
	rn_fail "over the limit: not every connection was refused"
grep -m1 'rejected 198.18.0.11:[0-9]*: an inventory of 16777216 bytes exceeds its limit of 1048576 bytes' "$T/serve.log" ||
	rn_fail "over the limit: no rejection naming the limit"

echo "== 64 x 1 MiB announced (the limit), 1 MiB - 1 sent each; a real peer meanwhile"
( sleep 2; peer during ) &
during=$!
flood budget $((1 << 20)) $(((1 << 20) - 1))
wait $during
served during
grep -m1 'dropped 198.18.0.11:[0-9]*: the byte budget for waiting clients (8388608 bytes) is full' "$T/serve.log" ||
	rn_fail "at the limit: no connection made room in the byte budget"
peer after
served after
echo PASS
