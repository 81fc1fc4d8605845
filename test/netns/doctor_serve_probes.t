#!/usr/bin/env bash
# One client cannot hold roce-doctor serve: after a valid inventory, a client that sends 778
# probe requests for one NIC pair (one every 25 ms, about 20 s of them) is cut at the second
# (one probe per NIC pair per session), and one that asks for every distinct pair of 32
# claimed NICs, a second apart, is cut at the session's deadline (20 s without RDMA pairs).
# Real peers that come while each runs are served (--timeout 5 for the first, 40 for the
# second: they wait for the cut). Prints how many probes each got answered and how long the
# real peers took.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
doc_bed
serve_start "$T/serve.log" --timeout 120

peer() { # tag timeout: a real client; JSON in $T/tag.json, status in RC, seconds in SECS
	local t0
	t0=$(date +%s.%N)
	ip netns exec "$A" "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --json --timeout "$2" \
		>"$T/$1.json" 2>"$T/$1.err"
	RC=$?
	SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
	if [ "$RC" != 0 ] && [ "$RC" != 1 ]; then
		cat "$T/$1.err" "$T/serve.log"
		rn_fail "$1: the real peer exited $RC after $SECS s while the hostile session ran"
	fi
	[[ $(jq_py "$T/$1.json" "d['remote']['host']") != "" ]] || rn_fail "$1: no remote host"
}
hostile() { # tag args...: one hostile session in the background (HOS), ready once in its probes
	local tag=$1
	shift
	bg_start HOS ip netns exec "$A" python3 "$HOSTILE" session 198.18.0.21 18515 --ready "$T/$tag.ready" "$@" >"$T/$tag.out" 2>&1
	wait_file "$T/$tag.ready" "$tag: the hostile session did not reach its probes"
}
answered() { sed -n 's/^session: \([0-9]*\) of .*/\1/p' "$T/$1.out"; }

echo "== 778 probe requests for one pair"
hostile repeat --ips 198.19.9.1 --probes 778 --interval 0.025
sleep 0.5
peer during 5
echo "real peer during the flood: exit $RC after $SECS s"
wait "$HOS"
cat "$T/repeat.out"
n=$(answered repeat)
[ -n "$n" ] && [ "$n" -le 1 ] || rn_fail "repeat: $n probes answered, want 1 (one per NIC pair)"
grep -q 'the server closed' "$T/repeat.out" || rn_fail "repeat: the server did not close the session"
grep -m1 'cut: a second probe of the pair nic0 <- its NIC 0' "$T/serve.log" ||
	rn_fail "repeat: serve did not log the cut"

echo "== every distinct pair of 32 claimed NICs, one a second"
ips=$(seq -f '198.19.9.%g' 1 32 | paste -sd,)
hostile distinct --ips "$ips" --probes 778 --interval 1 --pairs distinct
peer waited 40
echo "real peer during the distinct probes: exit $RC after $SECS s"
wait "$HOS"
cat "$T/distinct.out"
n=$(answered distinct)
[ -n "$n" ] && [ "$n" -lt 64 ] || rn_fail "distinct: $n probes answered: the session was not cut"
grep -m1 'cut: the session.s deadline (20 s for 0 RDMA pairs) passed' "$T/serve.log" ||
	rn_fail "distinct: serve did not log the session's deadline"
kill -0 "$SRV" 2>/dev/null || rn_fail "serve died"
echo PASS
