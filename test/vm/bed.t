#!/usr/bin/env bash
# The bed's own contract: jobs on two guests at once, exit statuses and timeouts passed through,
# a fault cleared back to the scenario (replaying roce-policy-routing's commands), a dead guest
# reported as a BED failure (exit 200 + $BED_FAILFILE) and not as the command's, and `bed down`
# leaving no qemu process, namespace or file behind.
set -u
# shellcheck source=lib/test.sh
. "$(dirname "$0")/lib/test.sh"
bed_prereq

ns_listed() { ip netns list | awk '{print $1}' | grep -qxF -- "$1"; }

body() {
	local j1 out rc pids st want ns=$BED_NAME
	# The name check is exact: a namespace of the bed's name refuses `up` (before any boot),
	# an unrelated one that merely starts with it ("$ns-other") does not.
	ip netns add "$ns" || rn_fail "ip netns add $ns"
	out=$("$bed" up --name "$ns" --hosts 2 --nics 1 2>&1)
	rc=$?
	ip netns del "$ns"
	[ $rc -eq 2 ] && [[ $out == *"namespace $ns exists"* ]] ||
		rn_fail "up with namespace $ns present: exit $rc, '$out' (want 2, namespace $ns exists)"
	ip netns add "$ns-other" || rn_fail "ip netns add $ns-other"
	# expanded now: the trap runs after body() has returned, when its locals are gone
	# (with set -u the old trap stopped at "ns: unbound variable", leaving the namespace)
	trap "ip netns del '$ns-other' 2>/dev/null" EXIT
	B up --hosts 2 --nics 1 --scenario broken --owner "$BED_OWNER" >/dev/null ||
		rn_fail "up refused with an unrelated namespace $ns-other present"
	ns_listed "$ns-other" || rn_fail "up or its cleanup touched the unrelated namespace $ns-other"
	rn_log "ok: up refuses a namespace of its own name only, not $ns-other"
	st=$RN_TOP/build/vm-runs/$BED_NAME
	pids="$(cat "$st/h0.pid") $(cat "$st/h1.pid")"

	# Two guests at once: a TCP server job on h1 receives what a job on h0 sends meanwhile.
	j1=$(bg --timeout 30 1 -- busybox nc -l -p 19000)
	wait_listen 1 19000 || rn_fail "nc server on h1 did not listen"
	B run --timeout 20 0 -- bash -c "echo hello-from-h0 | busybox nc -w 5 $(bed_ip 1 0) 19000" ||
		rn_fail "h0 could not send to the job on h1"
	out=$(B wait "$j1")
	[ "$out" = hello-from-h0 ] || rn_fail "the job on h1 received '$out'"
	rn_log "ok: jobs on two guests run concurrently (h1 server, h0 client)"

	out=$(B run 1 -- bash -c 'echo to-out; echo to-err >&2; exit 7' 2>/dev/null)
	rc=$?
	[ $rc -eq 7 ] && [ "$out" = to-out ] || rn_fail "run: status $rc output '$out' (want 7, to-out)"
	out=$(B run 1 -- bash -c 'echo to-err >&2' 2>&1 >/dev/null)
	[ "$out" = to-err ] || rn_fail "run: stderr '$out'"
	out=$(B run --env BEDT=a=b 0 -- bash -c 'echo "$BEDT $(hostname) $PWD"')
	[ "$out" = "a=b h0 $RN_TOP" ] || rn_fail "run: env/host/cwd '$out'"
	B run --timeout 2 0 -- sleep 30
	rc=$?
	[ $rc -eq 124 ] || rn_fail "run --timeout: status $rc, want 124"
	B run 0 -- bash -c 'exit 200'
	rc=$?
	[ $rc -eq 200 ] && [ ! -s "$BED_FAILFILE" ] ||
		rn_fail "a command's own 200 must not read as a bed failure"
	rn_log "ok: exit status, stdout, stderr, --env, --timeout pass through"

	# A fault cleared: h0's routing back to what scripts/roce-policy-routing made (the
	# second time by replaying the commands it printed), the host's shaper off its tap too.
	B scenario fixed 0 >/dev/null || rn_fail "scenario fixed on h0"
	state() { B run 0 -- sh -c 'ip -4 rule; ip -4 route show table all | grep -v "table local"
		sysctl -n net.ipv4.conf.all.arp_ignore net.ipv4.conf.eth0.arp_announce'; }
	want=$(state)
	grep -q "lookup" <<<"$want" || rn_fail "scenario fixed made no rule: $want"
	B fault 0 no-rule --nic 0 >/dev/null && B fault 0 rate --nic 0 --value 50 >/dev/null ||
		rn_fail "faults on h0 eth0"
	[ "$(state)" != "$want" ] || rn_fail "the faults changed nothing"
	out=$(B fault 0 clear) || rn_fail "clear: $out"
	grep -q "roce-policy-routing eth0 (the commands of its first run replayed)" <<<"$out" ||
		rn_fail "clear did not replay the script's commands: $out"
	[ "$(state)" = "$want" ] || rn_fail "after clear: '$(state)', want '$want'"
	! tc -n "$ns" qdisc show dev t0n0 | grep -q tbf || rn_fail "clear left the shaper on t0n0"
	rn_log "ok: fault clear restores the script's rules, routes and sysctls (replayed) and the tap"

	# A guest that dies is a bed failure, never the command's.
	kill -9 "$(cat "$st/h1.pid")"
	"$bed" run 1 -- true 2>/dev/null
	rc=$?
	[ $rc -eq 200 ] && [ -s "$BED_FAILFILE" ] ||
		rn_fail "dead guest: status $rc, failfile '$(cat "$BED_FAILFILE" 2>/dev/null)'"
	: >"$BED_FAILFILE"
	rn_log "ok: a dead guest is reported as a BED failure (200)"

	B down || rn_fail "bed down failed"
	for p in $pids; do
		! kill -0 "$p" 2>/dev/null || rn_fail "qemu $p survived bed down"
	done
	! ns_listed "$ns" || rn_fail "namespace $ns survived bed down"
	[ ! -e "$st" ] || rn_fail "$st survived bed down"
	rn_log "ok: bed down leaves no qemu, namespace or run folder"
}

bed_attempt body
