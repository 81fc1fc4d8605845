#!/usr/bin/env bash
# The plugin's side-channel listener under a connection flood on real kernel Soft-RoCE (2 guests,
# scenario fixed): h1 listens on rxe0 and accepts 32 connections from h0 made at once
# (build/test/rn-connstorm: rn_listen/rn_connect/rn_accept on the real devices, as the plugin
# runs them, with the route check on). First without a flood, then after h0 opened 200 idle +
# 50 slow-loris connections (one byte per second of a plausible header) to that listener:
# all 32 must still come up, the strangers are dropped (the slow ones at 2 s from their first
# byte, the idle ones only to make room: at most the listener's 64 slots stay taken, until the
# listener goes), and the drops are one WARN for the flooder's address (the rest at INFO). Then
# under a continuous connect+close flood (two flooders of 5k/s each from the bed's bridge, at
# the host's native speed; the guest answers what it can), all 32 come up again. Prints the time for the 32 connects without and under each flood, and the
# churn's rate (not asserted).
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
# The fixed scenario from plain ip rules and sysctls: the script costs seconds per boot and per
# reset under TCG; doctor.t and plugin_pods.t run scripts/roce-policy-routing itself.
export BED_POLICY=${BED_POLICY:-plain}
plugin_prereq
[ -x "$RN_TOP/build/test/rn-connstorm" ] || rn_skip "skip: build/test/rn-connstorm not built (make tests)"
command -v python3 >/dev/null || rn_skip "skip: python3 (the flooder, run in the guest from the host's root) not installed"

N=32
STORM=build/test/rn-connstorm

# job id -> its stdout file on this side (the guest writes it into the run's share)
job_out() { echo "${BED_RUNS:-$RN_TOP/build/vm-runs}/$BED_NAME/${1%%.*}/jobs/${1#*.}/out"; }

# round <tag> <flood 0|1> [n]: sets secs_<tag>; the server lingers while a flood is dropped
round() {
	local tag=$1 flood=$2 N=${3:-$N} j fj out hex addr i cli rc srv churn_dir
	# under the churn the guest drops SYNs it cannot take: real connects wait for retransmits
	local tmo=$((flood == 2 ? 150 : 60))
	j=$(bg --timeout $((tmo + 90)) 1 -- env "${PLUG_ENV[@]}" NCCL_DEBUG=INFO stdbuf -oL "$STORM" server 0 $N $((tmo + 30)) \
		$((flood ? 14 : 0))) || rn_fail "could not start the server"
	out=$(job_out "$j")
	for i in $(seq 300); do grep -q '^listening ' "$out" 2>/dev/null && break; sleep 0.1; done
	hex=$(awk '/^handle /{print $2}' "$out")
	addr=$(awk '/^listening /{print $2}' "$out")
	[ -n "$hex" ] && [ -n "$addr" ] || { B wait "$j"; rn_fail "$tag: the server did not listen"; }
	if [ "$flood" = 1 ]; then
		fj=$(bg --timeout 60 0 -- python3 test/netns/flood.py "${addr%:*}" "${addr##*:}" --idle 200 \
			--slow 50 --prefix 524e48530001000100000098 --seconds 10) || rn_fail "could not start the flooder"
		for i in $(seq 300); do grep -q '^flood ready' "$(job_out "$fj")" 2>/dev/null && break; sleep 0.1; done
		grep -q '^flood ready: 250' "$(job_out "$fj")" || { B wait "$fj"; rn_fail "the flooder did not open 250 connections"; }
		sleep 1.5 # the slow ones have begun to talk
	elif [ "$flood" = 2 ]; then
		# native speed: from the bed's bridge (198.18.0.251, no guest's), two flooders of 5k/s
		churn_dir=$(mktemp -d "${TMPDIR:-/tmp}/rnchurn-$$.XXXXXX")
		for i in 1 2; do
			ip netns exec "$BED_NAME" timeout 60 python3 "$RN_TOP/test/netns/flood.py" "${addr%:*}" \
				"${addr##*:}" --churn 5000 --seconds 14 >"$churn_dir/$i" 2>&1 &
		done
		sleep 2 # the churn is on
	fi
	cli=$(B run --timeout $((tmo + 60)) 0 -- env "${PLUG_ENV[@]}" stdbuf -oL "$STORM" client 0 $N $tmo "$hex" 2>&1)
	rc=$?
	srv=$(B wait "$j" 2>&1)
	echo "$cli" | grep -v INFO | sed 's/^/  client| /'
	echo "$srv" | grep -E '^done|WARN|dropped' | head -5 | sed 's/^/  server| /'
	[ $rc -eq 0 ] && grep -q "^done $N of $N" <<<"$cli" || rn_fail "$tag: the client did not connect $N/$N"
	grep -q "^done $N of $N" <<<"$srv" || rn_fail "$tag: the server did not accept $N/$N"
	printf -v "secs_$tag" '%s' "$(awk '/^done/{print $6}' <<<"$cli")"
	if [ "$flood" = 1 ]; then
		fout=$(B wait "$fj" 2>&1)
		echo "$fout" | sed 's/^/  flood| /'
		grep -q '^flood slow: 50 open, 50 closed by the server' <<<"$fout" ||
			rn_fail "slow-loris connections kept their slots"
		# a silent one is evicted for room: the 250 of the flood into 64 slots close 186 at
		# least; the 32 real connects need room too when they come before the slow ones' HELLO
		# deadline has emptied 50 slots (timing: up to 218 evictions), so all 200 may go
		local idle_closed
		idle_closed=$(sed -n 's/^flood idle: 200 open, \([0-9]*\) closed by the server.*/\1/p' <<<"$fout")
		[ "${idle_closed:-0}" -ge $((200 + 50 - 64)) ] && [ "$idle_closed" -le 200 ] ||
			rn_fail "idle connections: ${idle_closed:-?} of 200 closed, want 186..200 (evicted for room)"
		echo "  idle connections the listener closed for room: $idle_closed of 200"
		local src
		src=$(bed_ip 0 0)
		[ "$(grep -c "WARN.*dropped a connection from $src" <<<"$srv")" -eq 1 ] ||
			rn_fail "want exactly one WARN for the flooder's drops, got $(grep -c "WARN.*dropped a connection from $src" <<<"$srv")"
		grep -q "dropped a connection from $src:[0-9]* before a valid handshake: no complete HELLO within 2000 ms" <<<"$srv" ||
			rn_fail "no slow-loris dropped at its HELLO deadline"
		grep -q "dropped a connection from $src:[0-9]* before a valid handshake: 64 handshakes in progress" <<<"$srv" ||
			rn_fail "no stranger evicted to make room"
	elif [ "$flood" = 2 ]; then
		wait
		fout=$(cat "$churn_dir"/*)
		rm -rf "$churn_dir"
		echo "$fout" | sed 's/^/  flood| /'
		churn_rate=$(sed -n 's/^flood churn: .*(\([0-9]*\)\/s).*/\1/p' <<<"$fout" |
			awk '{s += $1} END {print s + 0}')
		[ "${churn_rate:-0}" -gt 0 ] || rn_fail "the churn made no connection"
	fi
}

body() {
	B up --hosts 2 --nics 1 --scenario fixed --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 hosts x 1 NIC, scenario fixed"
	# the churn's address: on the bridge, in the guests' /24, used by no guest
	ip -n "$BED_NAME" addr add 198.18.0.251/24 dev br0 || rn_fail "address on the bed's bridge"
	t_step "warm-up: 2 connects (ARP, the first route lookups and QPs are not what is measured)"
	round warm 0 2
	t_step "$N connects at once, no flood"
	round quiet 0
	rn_log "ok: $N/$N connected in ${secs_quiet} s"
	t_step "$N connects at once after 200 idle + 50 slow-loris connections to the same listener"
	round flood 1
	rn_log "ok: $N/$N connected in ${secs_flood} s under the flood (${secs_quiet} s without)"
	t_step "$N connects at once under a continuous connect+close flood to the same listener"
	round churn 2
	rn_log "ok: $N/$N connected in ${secs_churn} s under $churn_rate connect+close a second"
	echo "figures: $N connects ${secs_quiet} s quiet, ${secs_flood} s under 200 idle + 50 slow-loris, ${secs_churn} s under a $churn_rate/s connect+close flood"
}

bed_attempt body
