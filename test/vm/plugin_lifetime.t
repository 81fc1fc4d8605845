#!/usr/bin/env bash
# The plugin under NCCL's own call patterns (../shared/docs/nccl-calls.md) on real kernel
# Soft-RoCE (2 guests x 2 NICs, scenario fixed), through build/nccl-net-driver:
#  - a peer whose first accept comes 45 s after the connect (NCCL has no connect timeout; a
#    rank waits for a third one before its accept loop), over eth1 while the other steps run
#    on eth0: the connection comes up and carries checked data, past
#    NCCL_ROCE_CONNECT_TIMEOUT_MS (5 s here; 30 s by default);
#  - the peer process killed while the connector waits for that accept: an error naming the
#    peer, at once; the peer's host vanishing (its cable out): an error naming it within
#    TCP keepalive's 25 s;
#  - one thread bringing up 8 loopback pairs with listens, connects, accepts and regMr
#    interleaved (NCCL's proxy service thread), checked data on each;
#  - an abort with listeners, connects and accepts in flight, then finalize, dlclose, dlopen
#    and a new communicator with a checked transfer: the process's threads, fds and sockets
#    back to their count before the first init.
# Prints the figures (how long the connect waited, the process counts); bounds are asserted
# only where a dead peer must give an error, never a hang.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
# The fixed scenario from plain ip rules and sysctls: the script costs seconds per boot and per
# reset under TCG; doctor.t and plugin_pods.t run scripts/roce-policy-routing itself.
export BED_POLICY=${BED_POLICY:-plain}
plugin_prereq

secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", b - a}'; }

# dead_peer <tag> <port> <how: kill|vanish>: a server that never accepts in time, a client
# that connects and waits; then the server dies (or its host goes). Sets dead_secs, dead_out.
dead_peer() {
	local tag=$1 port=$2 how=$3 j c rc t0 t1 peer
	peer=$(bed_ip 1 0)
	drv_start j 1 -- --dev 0 --late-accept-ms 600000 --timeout-ms 700000 server "$peer:$port"
	drv_start c 0 -- --dev 0 --timeout-ms 150000 client "$peer:$port"
	wait_out "$j" "holding the first accept" 60 || rn_fail "$tag: the server never handed out its handle"
	wait_out "$c" "using dev 0" 60 || rn_fail "$tag: the client did not start"
	sleep 3 # the client's connect is through TCP and waits for the peer's HELLO
	if [ "$how" = kill ]; then
		B kill "$j"
	else
		B carrier 1 0 off || rn_fail "$tag: could not pull h1 eth0's cable"
	fi
	t0=$(date +%s.%N)
	dead_out=$(B wait "$c" 2>&1)
	rc=$?
	t1=$(date +%s.%N)
	[ "$how" = vanish ] && { B carrier 1 0 on || rn_fail "$tag: could not plug h1 eth0 back"; }
	B kill "$j" >/dev/null 2>&1
	B wait "$j" >/dev/null 2>&1
	dead_secs=$(secs "$t0" "$t1")
	echo "$dead_out" | grep -v "^nccl-net-driver: dev " | sed 's/^/  client| /'
	[ $rc -eq 1 ] || rn_fail "$tag: client exit $rc, want 1 (124 = hung until the bed's timeout)"
	grep -q "connect timed out" <<<"$dead_out" &&
		rn_fail "$tag: only the driver's own bound caught it; the plugin reported nothing"
	grep -Eq "NCCL WARN.*connect to $peer:[0-9]+ failed" <<<"$dead_out" ||
		rn_fail "$tag: the plugin's error does not name the peer $peer"
}

body() {
	local out rc peer lpeer j c t kill_secs vanish_secs late_ms
	B up --hosts 2 --nics 2 --scenario fixed --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 hosts x 2 NICs, scenario fixed"
	peer=$(bed_ip 1 0) lpeer=$(bed_ip 1 1)

	# the late accept's 45 s go on over eth1 while the other steps run on eth0 (the vanished
	# host's cable among them, some 40 s); the connect timeout (what bounded the wait for the
	# accept before #16) at 5 s, so 45 s is 9 of them. LIFETIME_LATE_ACCEPT_MS sets another hold.
	late_ms=${LIFETIME_LATE_ACCEPT_MS:-45000}
	t_step "the peer's first accept comes $((late_ms / 1000)) s after the connect (running; the next steps meanwhile)"
	drv_start j 1 NCCL_ROCE_CONNECT_TIMEOUT_MS=5000 -- --dev 1 --size 65537 --iters 20 \
		--late-accept-ms "$late_ms" --timeout-ms $((late_ms + 100000)) server "$lpeer:18811"
	drv_start c 0 NCCL_ROCE_CONNECT_TIMEOUT_MS=5000 -- --dev 1 --timeout-ms $((late_ms + 100000)) client \
		"$lpeer:18811"
	wait_out "$j" "holding the first accept" 60 || rn_fail "late accept: the server never handed out its handle"

	t_step "the peer process killed while the connector waits for its accept"
	dead_peer kill 18812 kill
	awk -v t="$dead_secs" 'BEGIN {exit !(t < 25)}' || rn_fail "killed peer: told after $dead_secs s"
	rn_log "ok: killed peer: the connect failed $dead_secs s after the kill, naming $peer"
	kill_secs=$dead_secs

	t_step "one service thread: 8 loopback pairs, listens, connects, accepts and regMr interleaved"
	out=$(drv_run 0 -- --dev 0 --conns 8 --size 65537 --iters 10 service)
	rc=$?
	echo "$out" | grep -E "service thread|checksums|WARN|failed" | sed 's/^/  | /'
	[ $rc -eq 0 ] && grep -q "checksums match (8 pairs)" <<<"$out" ||
		{ echo "$out" | sed 's/^/  | /'; rn_fail "service: exit $rc"; }
	rn_log "ok: 8 pairs from one thread, each with checked data"

	t_step "abort with listeners, connects and accepts in flight; finalize, dlclose, dlopen, a new communicator"
	out=$(drv_run 0 -- -v --dev 0 --conns 4 --size 65537 --iters 10 abort-reload)
	rc=$?
	echo "$out" | grep -E "threads|aborting|last finalize|checksums|nothing left|left behind|WARN" |
		sed 's/^/  | /'
	[ $rc -eq 0 ] || { echo "$out" | tail -30 | sed 's/^/  | /'; rn_fail "abort-reload: exit $rc"; }
	grep -q "NET/RoCE : last finalize: closed what NCCL left open .*: 4 listeners (2 handshakes in them), 4 connects in progress, 2 comms, 1 memory registration" <<<"$out" ||
		rn_fail "abort-reload: the last finalize did not say it closed the 4 listeners, 4 connects, 2 comms, 1 registration"
	grep -q "checksums match (loopback)" <<<"$out" || rn_fail "abort-reload: the new communicator carried no checked data"
	grep -q "abort-reload: nothing left behind" <<<"$out" || rn_fail "abort-reload: something left behind"
	rn_log "ok: after the abort and the unload: $(grep -m1 'after finalize + dlclose' <<<"$out" | sed 's/.*dlclose: //') (before the first init: $(grep -m1 'before the first init' <<<"$out" | sed 's/.*init: //'))"

	t_step "the peer's host vanishes (h1 eth0's cable out) while the connector waits"
	dead_peer vanish 18813 vanish
	grep -q "stopped answering" <<<"$dead_out" || rn_fail "vanished host: the error does not say its host stopped answering"
	awk -v t="$dead_secs" 'BEGIN {exit !(t < 40)}' || rn_fail "vanished host: told after $dead_secs s (keepalive: 25 s)"
	rn_log "ok: vanished host: the connect failed $dead_secs s after the cable went (TCP keepalive, 25 s from the last ACK), naming $peer"
	vanish_secs=$dead_secs

	t_step "the late accept: the connection came up and carried checked data"
	cli_out=$(B wait "$c" 2>&1)
	cli_rc=$?
	srv_out=$(B wait "$j" 2>&1)
	srv_rc=$?
	expect_ok "late accept"
	show_pair | grep -E "holding|first accept|connected|accepted|checksums|WARN"
	grep -q "checksums match" <<<"$cli_out" || { show_pair; rn_fail "late accept: no checked data"; }
	t=$(sed -n 's/.*connected 1 connection(s) in \([0-9.]*\) s.*/\1/p' <<<"$cli_out")
	# the hold starts when the handle goes out, the connect once the client's init is done
	awk -v t="$t" -v h="$late_ms" 'BEGIN {exit !(t > h / 1000 - 10 && t > 10)}' ||
		{ show_pair; rn_fail "late accept: the connect took ${t:-?} s: not the hold of $((late_ms / 1000)) s (and past twice the 5 s the old deadline allowed)"; }
	rn_log "ok: a connect waited $t s for its peer's accept (NCCL_ROCE_CONNECT_TIMEOUT_MS 5 s), then carried checked data"

	echo "figures: a connect waited $t s for a late accept; killed peer told in $kill_secs s, vanished host in $vanish_secs s; $(grep -m1 'before the first init' <<<"$out" | sed 's/.*: //') before the first init, $(grep -m1 'at the abort' <<<"$out" | sed 's/.*: //') at the abort, $(grep -m1 'after finalize + dlclose' <<<"$out" | sed 's/.*: //') after finalize + dlclose"
}

bed_attempt body
