#!/usr/bin/env bash
# roce-doctor serve under a connection flood: 200 idle + 50 slow-loris connections (one byte
# per second of a plausible header) from host A, then 4 `roce-doctor peer` runs at once from A
# all get their session. Each slow client is dropped by the per-message deadline (5 s from its
# first byte) however many bytes it trickles, the oldest waiting connections make room for the
# new ones, and serve logs the drops once per address per minute. Prints the peers' wall time
# without and under the flood (a figure, not asserted).
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
command -v python3 >/dev/null || rn_skip "skip: python3 (the flooder) not installed"
rn_tmpdir T
doc_bed # host A and host B, two NICs each on one bridge
SRV= FL=
trap '_rc=$?; [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; [ -n "$FL" ] && kill "$FL" 2>/dev/null; (exit $_rc); _rn_cleanup' EXIT
N=4

ip netns exec "$B" "$DOCTOR" serve --netdev nic0,nic1 --timeout 60 >"$T/serve.log" 2>&1 &
SRV=$!
for i in $(seq 50); do
	ip netns exec "$B" ss -Hltn 'sport = :18515' | grep -q . && break
	sleep 0.1
done

# N peers at once; their exit codes in $T/<tag>.<i>.rc; prints the wall time in seconds
peers() {
	local tag=$1 i t0 t1
	t0=$(date +%s.%N)
	for i in $(seq $N); do
		(ip netns exec "$A" "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --json --timeout 5 \
			>"$T/$tag.$i.json" 2>"$T/$tag.$i.err"; echo $? >"$T/$tag.$i.rc") &
	done
	wait $(jobs -p | grep -vx "$SRV" | grep -vx "${FL:-x}")
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}'
}
# every peer had a whole session: exit 0/1 (1: kernel defaults' ARP flux), host B named
check_peers() {
	local tag=$1 i rc
	for i in $(seq $N); do
		rc=$(cat "$T/$tag.$i.rc")
		if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
			cat "$T/$tag.$i.err" "$T/serve.log"
			rn_fail "$tag: peer $i exited $rc"
		fi
		[ "$(jq_py "$T/$tag.$i.json" "d['remote']['host']")" != "" ] || rn_fail "$tag: peer $i: no remote host"
	done
}

quiet=$(peers quiet)
check_peers quiet
echo "== $N peers without a flood: ${quiet} s"

echo "== flood: 200 idle + 50 slow-loris"
ip netns exec "$A" python3 "$RN_TOP/test/netns/flood.py" 198.18.0.21 18515 --idle 200 --slow 50 \
	--prefix 524e44520001000100000044 --seconds 10 --ready "$T/ready" >"$T/flood.out" 2>&1 &
FL=$!
for i in $(seq 100); do [ -s "$T/ready" ] && break; sleep 0.1; done
[ -s "$T/ready" ] || rn_fail "the flooder did not start"
sleep 1.5 # the slow ones have begun to talk
flooded=$(peers flood)
check_peers flood
echo "== $N peers under the flood: ${flooded} s (without: ${quiet} s)"
wait "$FL"
FL=
cat "$T/flood.out"
grep -q '^flood slow: 50 open, 50 closed by the server' "$T/flood.out" ||
	rn_fail "slow-loris connections were not all dropped while they kept sending"
grep -q '^flood idle: 200 open, 200 closed by the server' "$T/flood.out" ||
	rn_fail "idle connections were not all dropped"
kill -0 "$SRV" 2>/dev/null || rn_fail "serve died under the flood"
grep 'dropped' "$T/serve.log" | head -3
grep -q 'dropped 198.18.0.11:[0-9]*: no whole inventory within 5000 ms of its first byte\|dropped 198.18.0.11:[0-9]*: the longest \(waiting\|silent\)' "$T/serve.log" ||
	rn_fail "no drop logged with the flooder's address"
# one line per address per minute: the flood is one address
[ "$(grep -c 'dropped' "$T/serve.log")" -eq 1 ] || rn_fail "drops not rate-limited: $(grep -c dropped "$T/serve.log") lines"
[ "$(grep -c 'pairs checked here' "$T/serve.log")" -eq $((2 * N)) ] || rn_fail "serve did not log $((2 * N)) sessions"
echo PASS
