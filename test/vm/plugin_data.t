#!/usr/bin/env bash
# The plugin end to end on real kernel Soft-RoCE (2 guests x 2 NICs, scenario fixed), driven by
# build/nccl-net-driver acting as NCCL (non-blocking loops, up to NCCL_NET_MAX_REQUESTS in flight,
# every byte checked per message plus a checksum of all data compared between the two ends):
# sizes 0 B .. 64 MiB (odd ones, > rxe's 8 MiB WR limit), multi-receive with tags, receives
# larger than the send, 32 requests in flight, several connections on both NICs at once,
# 4 QPs per connection (split and round robin), a loopback connection, a send larger than the
# receive (an error on both ends), a peer killed mid-transfer (an error naming the peer and
# saying it died), and a 0.3 s link flap mid-transfer (no error, every byte checked).
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
# The fixed scenario from plain ip rules and sysctls: the script costs seconds per boot and per
# reset under TCG; doctor.t and plugin_pods.t run scripts/roce-policy-routing itself.
export BED_POLICY=${BED_POLICY:-plain}
plugin_prereq

body() {
	local j0 j1 c0 c1 out rc t0 t1 o0 o1 r0 r1
	B up --hosts 2 --nics 2 --scenario fixed --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 hosts x 2 NICs, scenario fixed"

	t_step "sizes 0 B .. 64 MiB, odd ones, 9 MiB and 64 MiB over rxe's 8 MiB WR limit"
	drv_pair 18601 0 "--sizes 0,1,4095,65537,1048579,9437184,67108864 --iters 1"
	expect_ok "sizes 0,1,4095,65537,1M+3,9M,64M: every byte and the checksum match"

	t_step "64 MiB with a short QP timeout (NCCL_IB_TIMEOUT=14, the fault cases' setting)"
	drv_pair 18612 0 "--size 64M --iters 1" "${FAULT_ENV[@]}"
	# the stall watchdog grants a large WR its payload time: no false "QP stalled"
	expect_ok "64 MiB with NCCL_IB_TIMEOUT=14"

	t_step "multi-receive: irecv n=2 and n=8 with distinct tags, sent in another order"
	# the driver sends tag t of a group with 13*t bytes less than the receive: each buffer must
	# report its own send's size and hold its own data
	drv_pair 18602 0 "--tags 2 --sizes 4096,65537 --iters 6"
	expect_ok "irecv n=2: each buffer got its tag's data and size"
	drv_pair 18603 0 "--tags 8 --sizes 4096,1048579 --iters 4"
	expect_ok "irecv n=8: each buffer got its tag's data and size"
	drv_pair 18604 0 "--size 65537 --recv-size 1M --iters 8"
	expect_ok "receive of 1 MiB for a send of 65537 B: test() reports 65537"

	t_step "32 requests in flight"
	drv_pair 18605 0 "--window 32 --size 4096 --iters 400"
	grep -q "window 32" <<<"$srv_out" || { show_pair; rn_fail "the driver did not keep 32 in flight"; }
	expect_ok "4 KiB x 400 with 32 receives in flight"

	t_step "several connections on both NICs at once (h0/rxe0 -> h1/rxe0 and h0/rxe1 -> h1/rxe1)"
	drv_start j0 1 -- --dev 0 --conns 3 --size 262147 --iters 8 server "$(bed_ip 1 0):18606"
	drv_start j1 1 -- --dev 1 --conns 3 --size 262147 --iters 8 server "$(bed_ip 1 1):18607"
	drv_start c0 0 -- --dev 0 client "$(bed_ip 1 0):18606"
	drv_start c1 0 -- --dev 1 client "$(bed_ip 1 1):18607"
	o0=$(B wait "$c0" 2>&1); r0=$?
	o1=$(B wait "$c1" 2>&1); r1=$?
	srv_out=$(B wait "$j0" 2>&1; echo "rc $?"; B wait "$j1" 2>&1; echo "rc $?")
	cli_out="$o0"$'\n'"$o1"
	if [ $r0 -ne 0 ] || [ $r1 -ne 0 ] || [ "$(grep -c '^rc 0$' <<<"$srv_out")" -ne 2 ]; then
		srv_rc=1 cli_rc=$((r0 | r1)); show_pair
		rn_fail "two NICs x 3 connections: clients $r0 $r1"
	fi
	grep -q "using dev 0 (rxe0)" <<<"$o0" && grep -q "using dev 1 (rxe1)" <<<"$o1" ||
		{ show_pair; rn_fail "the pairs did not run on rxe0 and rxe1"; }
	[ "$(grep -c 'checksums match (3 connection' <<<"$cli_out")" -eq 2 ] ||
		{ show_pair; rn_fail "two NICs x 3 connections: checksums"; }
	rn_log "ok: rxe0 and rxe1 at once, 3 connections each: all data and checksums match"

	t_step "4 QPs per connection"
	drv_pair 18608 0 "--sizes 65537,1048579 --iters 6" NCCL_IB_QPS_PER_CONNECTION=4 \
		NCCL_IB_SPLIT_DATA_ON_QPS=0
	expect_ok "NCCL_IB_QPS_PER_CONNECTION=4, SPLIT_DATA_ON_QPS=0 (round robin)"
	drv_pair 18609 0 "--sizes 65537,1048579 --iters 6" NCCL_IB_QPS_PER_CONNECTION=4 \
		NCCL_IB_SPLIT_DATA_ON_QPS=1
	expect_ok "NCCL_IB_QPS_PER_CONNECTION=4, SPLIT_DATA_ON_QPS=1 (every message split)"

	t_step "loopback: both ends in one process on rxe0 (NCCL's GDR probe)"
	out=$(drv_run 0 -- --dev 0 --sizes 1,4096,1048579 --iters 6 loopback)
	rc=$?
	echo "$out" | sed 's/^/  | /'
	[ $rc -eq 0 ] && grep -q "checksums match (loopback)" <<<"$out" ||
		rn_fail "loopback on rxe0: exit $rc"
	rn_log "ok: loopback on rxe0: data and checksum match"

	t_step "nccl-net-bench with --check: bandwidth (odd and large sizes) and ping-pong latency"
	j0=$(bg --timeout 120 1 -- env "${PLUG_ENV[@]}" stdbuf -oL "$PLUG_BIN/nccl-net-bench" \
		-d rxe0 -p 18613 --timeout 30000)
	out=$(bench_run 0 -- -d rxe0 -p 18613 --timeout 30 -s 9437187 -n 3 -w 4 --check --csv "$(bed_ip 1 0)")
	rc=$?
	o0=$(B wait "$j0" 2>&1); r0=$?
	echo "$out" | sed 's/^/  bench| /'
	[ $rc -eq 0 ] && [ $r0 -eq 0 ] || { echo "$o0" | sed 's/^/  server| /'; rn_fail "bench bw --check: client $rc server $r0"; }
	grep -q "^client,bw,9437187,3,[0-9.]*,[0-9.]*,[0-9]*,[0-9]*,1$" <<<"$out" || rn_fail "bench bw: no checked CSV result line"
	grep -q " 9437187 *3 " <<<"$o0" || rn_fail "bench bw: the server does not print the result table"
	rn_log "ok: nccl-net-bench bw 9 MiB+3 --check: data and checksum verified"
	j0=$(bg --timeout 120 1 -- env "${PLUG_ENV[@]}" stdbuf -oL "$PLUG_BIN/nccl-net-bench" \
		-d rxe1 -p 18614 --timeout 30000)
	out=$(bench_run 0 -- -d rxe1 -p 18614 --timeout 30 -t lat -s 4097 -n 100 --check --csv "$(bed_ip 1 1)")
	rc=$?
	o0=$(B wait "$j0" 2>&1); r0=$?
	echo "$out" | sed 's/^/  bench| /'
	[ $rc -eq 0 ] && [ $r0 -eq 0 ] || { echo "$o0" | sed 's/^/  server| /'; rn_fail "bench lat --check: client $rc server $r0"; }
	grep -q "^client,lat,4097,100,.*,1$" <<<"$out" || rn_fail "bench lat: no checked CSV result line"
	grep -q "device 0 of 1: rxe1" <<<"$out" || rn_fail "bench -d rxe1 did not select rxe1"
	rn_log "ok: nccl-net-bench -d rxe1 -t lat 4097 B --check: both directions verified"

	t_step "a send larger than the posted receive: an error on both ends"
	drv_pair 18610 0 "--size 65536 --recv-size 4096 --iters 2 --timeout-ms 20000" "${FAULT_ENV[@]}"
	show_pair
	[ "$srv_rc" -eq 1 ] && [ "$cli_rc" -eq 1 ] ||
		rn_fail "send 64 KiB into a 4 KiB receive: server exit $srv_rc, client exit $cli_rc (want 1 1)"
	grep -q "NCCL WARN.*larger than" <<<"$cli_out" ||
		rn_fail "send larger than receive: the sender's error does not say so"
	grep -q "NCCL WARN" <<<"$srv_out" || rn_fail "send larger than receive: no error from the receiver"
	grep -q "checksums match" <<<"$srv_out$cli_out" && rn_fail "send larger than receive: reported as good data"
	rn_log "ok: send of 64 KiB into a 4 KiB receive: both ends fail with the plugin's reason"

	t_step "the peer killed mid-transfer: the sender gets an error naming it, no hang"
	drv_start j0 1 "${FAULT_ENV[@]}" -- --dev 0 --size 1M --iters 100000 --timeout-ms 60000 \
		server "$(bed_ip 1 0):18611"
	drv_start c0 0 "${FAULT_ENV[@]}" -- --dev 0 --timeout-ms 60000 client "$(bed_ip 1 0):18611"
	# kill only once data flows: a fixed sleep is outlasted by a loaded machine's set-up
	wait_out "$c0" "connected [0-9]+ connection" 60 || rn_fail "peer killed: the client never connected"
	sleep 1
	B kill "$j0"
	t0=$(date +%s.%N)
	out=$(B wait "$c0" 2>&1)
	rc=$?
	t1=$(date +%s.%N)
	B wait "$j0" >/dev/null 2>&1
	echo "$out" | sed 's/^/  client| /'
	grep -q "connected 1 connection" <<<"$out" || rn_fail "peer killed: the client never connected"
	[ $rc -eq 1 ] || rn_fail "peer killed: client exit $rc, want 1 (124 = hung until the bed's timeout)"
	grep -q "no progress for" <<<"$out" &&
		rn_fail "peer killed: only the driver's own 60 s bound caught it; the plugin reported nothing"
	grep -q "NCCL WARN.*$(bed_ip 1 0)" <<<"$out" ||
		rn_fail "peer killed: the plugin's error does not name the peer $(bed_ip 1 0)"
	grep -q "NCCL WARN.*peer-died" <<<"$out" ||
		rn_fail "peer killed: the plugin's error does not say the peer died (cause peer-died)"
	rn_log "ok: peer killed: client failed in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s after the kill, the error names $(bed_ip 1 0) and says peer-died"

	t_step "nccl-net-bench: the server killed mid-run: the client fails with the plugin's reason"
	j0=$(bg --timeout 120 1 -- env "${PLUG_ENV[@]}" "${FAULT_ENV[@]}" stdbuf -oL \
		"$PLUG_BIN/nccl-net-bench" -d rxe0 -p 18615 --timeout 60)
	c0=$(bg --timeout 120 0 -- env "${PLUG_ENV[@]}" "${FAULT_ENV[@]}" stdbuf -oL \
		"$PLUG_BIN/nccl-net-bench" -d rxe0 -p 18615 --timeout 60 -s 1M -n 100000 "$(bed_ip 1 0)")
	# both ends open their device first (a few seconds each in TCG), then transfer
	# the server says "client connected" when the settings arrive; the plugin's connection
	# and the first transfers follow within a second or two
	wait_out "$j0" "client connected" 60 || rn_fail "bench, server killed: the client never came"
	sleep 3
	B kill "$j0"
	out=$(B wait "$c0" 2>&1)
	rc=$?
	B wait "$j0" >/dev/null 2>&1
	echo "$out" | sed 's/^/  bench| /'
	[ $rc -eq 1 ] || rn_fail "bench, server killed: client exit $rc, want 1 (124 = hung)"
	grep -q "no progress for" <<<"$out" && rn_fail "bench, server killed: only the bench's own bound caught it"
	grep -Eq "^nccl-net-bench: (transfer failed|isend): .*$(bed_ip 1 0)" <<<"$out" ||
		rn_fail "bench, server killed: the error does not name the peer"
	rn_log "ok: bench, server killed: the client fails with the plugin's reason naming $(bed_ip 1 0)"

	# Last: an admin down also deletes h1 eth0's policy-table routes, which later connects
	# would need (the QPs' egress is pinned to eth0, so this transfer does not).
	# The cable, not `ip link set down`: an admin down deletes the routes rxe's transmit path
	# needs, so every WQE sent in that window fails locally (LOC_QP_OP_ERR), which real NICs
	# do not do; a carrier loss is what a switch port flap is, and raises PORT_ERR the same.
	t_step "a link flap during a checked transfer (h1 eth0 carrier off 0.3 s, then on): it completes"
	drv_start j0 1 -- --dev 0 --size 262147 --iters 400 --timeout-ms 120000 \
		server "$(bed_ip 1 0):18616"
	drv_start c0 0 -- --dev 0 --timeout-ms 120000 client "$(bed_ip 1 0):18616"
	wait_out "$c0" "connected [0-9]+ connection" 60 || rn_fail "flap: the client never connected"
	sleep 0.5
	{ B carrier 1 0 off && sleep 0.3 && B carrier 1 0 on; } || rn_fail "flap: could not flap h1 eth0"
	cli_out=$(B wait "$c0" 2>&1); cli_rc=$?
	srv_out=$(B wait "$j0" 2>&1); srv_rc=$?
	grep -q "PORT_ERR" <<<"$srv_out" ||
		{ show_pair; rn_fail "flap: the plugin saw no PORT_ERR: the flap missed the transfer"; }
	expect_ok "link flap of 0.3 s mid-transfer: every byte and the checksum match"
}

bed_attempt body
