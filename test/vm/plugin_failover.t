#!/usr/bin/env bash
# Port failover on real kernel Soft-RoCE (2 hosts x 3 NICs, policy routing fixed): a stream
# of checked messages over h0 rxe0 -> h1 rxe0, and a NIC fails mid-stream. The comm moves to
# a spare pair and every message arrives once, whole and in order (the driver checks each
# one's contents by its number, and the checksum of all); each end logs one WARN naming the
# NIC, the cause and the pair that took over; rxe's counters show the new pair carried it.
# Cases: the receiver's NIC set down and left down; the sender's; both ends losing different
# NICs at once (the first spare is broken too, so the second takes it); the sender's cable
# pulled (carrier lost, no admin-down); RoCE dropped at the receiver's NIC (nft: only the
# QP's own retries see it); every NIC of the receiver down (one clear error, no hang).
# roce-doctor --prometheus counts the moves per NIC from the host's record.
# Then a vNIC of rxe0+rxe1 at both ends (NIC fusion, --merge 0,1): a member of the receiver,
# then of the sender, set down mid-stream: the comm leaves that member pair's QPs out and goes
# on over the other pair, checked; both members of the receiver down: one error naming both.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
plugin_prereq

PORT=18900
SIZE=256K
ITERS=320
DEV=(--dev 0) # the device the streams run on: a NIC, or a vNIC (--merge)

# rxe<i>'s sent packets on host <h>
sent_pkts() { B run --timeout 20 "$1" -- cat "/sys/class/infiniband/rxe$2/ports/1/hw_counters/sent_pkts"; }

# One stream with a fault injected 2 s after the connect: sets srv_out cli_out srv_rc cli_rc.
# $1: a label, $2: the fault (a shell command on this host, run after the connect)
stream_with() { # label fault [messages]
	local label=$1 fault=$2 iters=${3:-$ITERS} srv cli
	PORT=$((PORT + 1))
	t_step "$label"
	# The drivers' own side channel (handles, the checksum verdict) goes over NIC 2, which
	# no case but the last takes down, as a job's bootstrap network would: h0 reaches
	# h1 eth2 from its own eth2 address.
	B run 0 -- ip route replace "$(bed_ip 1 2)/32" dev eth2 src "$(bed_ip 0 2)" ||
		rn_fail "could not route the side channel over eth2"
	drv_start srv 1 "${FAULT_ENV[@]}" NCCL_DEBUG_SUBSYS=INIT,NET -- -v "${DEV[@]}" --size "$SIZE" --iters "$iters" \
		--window 8 server "$(bed_ip 1 2):$PORT"
	wait_server 1 "$PORT" "$srv" || rn_fail "$label: the server did not listen"
	drv_start cli 0 "${FAULT_ENV[@]}" NCCL_DEBUG_SUBSYS=INIT,NET -- -v "${DEV[@]}" client "$(bed_ip 1 2):$PORT"
	wait_out "$cli" "connected [0-9]+ connection" 90 || rn_fail "$label: no connection"
	sleep 2
	local t0=$SECONDS ended=0 took
	eval "$fault" || rn_fail "$label: the fault could not be injected"
	# a fault that takes its time to land (nft) must land within the stream
	[ -z "${3:-}" ] || [ "$(B status "$cli")" = running ] || ended=1
	took=$((SECONDS - t0))
	cli_out=$(B wait --timeout 150 "$cli" 2>&1)
	cli_rc=$?
	srv_out=$(B wait --timeout 60 "$srv" 2>&1)
	srv_rc=$?
	grep -hE "failover|no NIC pair|no vNIC|longest gap|checksums|MB/s|spare pairs" <<<"$cli_out" |
		sed 's/^/  client| /' | cut -c1-400
	grep -hE "failover|no NIC pair|no vNIC|longest gap|MB/s" <<<"$srv_out" | sed 's/^/  server| /' |
		cut -c1-400
	# Ended before the fault was in: a driver that failed did so on its own, a failure; a
	# stream whole and checked was only too short for this machine's pace (the caller goes
	# again), and the fault, landed since, is taken off.
	early=0
	[ "$ended" = 1 ] || return 0
	if [ "$cli_rc" -ne 0 ] || [ "$srv_rc" -ne 0 ]; then
		show_pair
		rn_fail "$label: the stream failed (client exit $cli_rc, server exit $srv_rc) before the fault was in; the fault took $took s"
	fi
	echo "  the stream of $iters messages ended before the fault was in (the fault took $took s)"
	early=1
	B fault 1 clear >/dev/null || rn_fail "could not clear h1's fault"
}

# Both ends exited 0 with checked data, and each end's WARN names the NIC that took over.
expect_moved() { # label h0-nic-after h1-nic-after [most moves, 1]
	local label=$1
	if [ "$srv_rc" -ne 0 ] || [ "$cli_rc" -ne 0 ]; then
		show_pair
		rn_fail "$label: server exit $srv_rc, client exit $cli_rc"
	fi
	grep -q "checksums match" <<<"$cli_out" || { show_pair; rn_fail "$label: no checksum verdict"; }
	grep -q "NCCL WARN .*failover: send comm with .*moved to rxe$2:1 -> eth$3 .* in [0-9]* ms; [0-9]* messages\?, [0-9]* bytes sent again" <<<"$cli_out" ||
		{ show_pair; rn_fail "$label: the sender's WARN does not say it moved to rxe$2 -> eth$3"; }
	grep -q "NCCL WARN .*failover: recv comm with .*moved to rxe$3:1 -> eth$2 " <<<"$srv_out" ||
		{ show_pair; rn_fail "$label: the receiver's WARN does not say it moved to rxe$3 -> eth$2"; }
	# one move, unless the case breaks two pairs at once: then a move may land on the
	# second before its failure shows, and the next move takes the comm on
	[ "$(grep -c 'failover: send comm' <<<"$cli_out")" -le "${4:-1}" ] ||
		rn_fail "$label: the sender moved more than ${4:-1} time(s)"
}

clear_all() { clear_hosts 0 1; }

body() {
	local before after h prom
	B up --hosts 2 --nics 3 --scenario fixed --owner "$BED_OWNER" >/dev/null
	# the nft fault must land within the stream: its module loaded beforehand
	B run 1 -- modprobe nf_tables || rn_fail "no nf_tables in the guest"
	echo "bed: 2 hosts x 3 NICs, scenario fixed; streams of $ITERS x $SIZE over h0 rxe0 -> h1 rxe0"
	# The pair that takes over carries the stream at once: a guest starved of CPU for half a
	# second on a loaded machine must not run its QPs out of retries (4.096 us x 2^17 x 7);
	# only the case that finds its failure through the retries (RoCE dropped) runs shorter.
	FAULT_ENV=(NCCL_IB_TIMEOUT=17 NCCL_IB_RETRY_CNT=6)

	before=$(sent_pkts 0 1)
	stream_with "the receiver's NIC (h1 eth0) set down mid-stream, and left down" \
		"B run 1 -- ip link set eth0 down"
	expect_moved "receiver's NIC down" 1 1
	grep -q "spare pairs rxe1:1->eth1,rxe2:1->eth2" <<<"$cli_out" ||
		rn_fail "the sender's comm did not list its two spare pairs"
	after=$(sent_pkts 0 1)
	echo "  h0 rxe1 sent_pkts: $before -> $after"
	[ $((after - before)) -gt 100 ] || rn_fail "h0 rxe1 carried no data after the move"
	rn_log "ok: receiver's NIC down: moved to rxe1 <-> rxe1, checked data, h0 rxe1 sent $((after - before)) packets"
	for h in 0 1; do
		prom=$(B run "$h" -- build/roce-doctor --prometheus 2>&1)
		grep -E '^roce_nic_failover' <<<"$prom" | sed "s/^/  h$h prom| /"
		grep -q '^roce_nic_failovers_total{device="rxe0",port="1",netdev="eth0"} 1$' <<<"$prom" ||
			rn_fail "h$h: roce-doctor --prometheus does not count the move off rxe0"
		grep -q '^roce_nic_failovers_total{device="rxe1",port="1",netdev="eth1"} 0$' <<<"$prom" ||
			rn_fail "h$h: roce-doctor --prometheus counts moves off rxe1"
	done
	rn_log "ok: roce-doctor --prometheus counts the move off rxe0 on both hosts"
	clear_all

	stream_with "the sender's NIC (h0 eth0) set down mid-stream" "B run 0 -- ip link set eth0 down"
	expect_moved "sender's NIC down" 1 1
	rn_log "ok: sender's NIC down: moved, checked data"
	clear_all

	stream_with "both ends lose different NICs at once (h0 eth0, h1 eth1: the first spare too)" \
		"B run 0 -- ip link set eth0 down & B run 1 -- ip link set eth1 down; wait"
	expect_moved "two NICs down" 2 2 2
	rn_log "ok: h0 eth0 and h1 eth1 down: the second spare (rxe2 <-> rxe2) took it, checked data"
	clear_all

	stream_with "the sender's cable pulled (carrier lost, the netdev stays up)" "B carrier 0 0 off"
	expect_moved "carrier lost" 1 1
	B carrier 0 0 on
	rn_log "ok: carrier lost: moved, checked data"
	clear_all

	FAULT_ENV=(NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=6)
	# The nft fault takes its time to land (seconds on a loaded machine), and the stream must
	# still be running then: a stream that ended whole before it goes again, twice as long.
	for n in 900 1800; do
		stream_with "RoCE dropped at the receiver's NIC (only the QPs' retries see it)" \
			"B fault 1 drop-4791 --nic 0 >/dev/null" $n
		[ "$early" = 1 ] || break
	done
	[ "$early" = 0 ] || rn_fail "RoCE dropped: 1,800 messages ended before the fault was in"
	FAULT_ENV=(NCCL_IB_TIMEOUT=17 NCCL_IB_RETRY_CNT=6)
	expect_moved "RoCE dropped" 1 1
	grep -q "failed (RETRY_EXC_ERR" <<<"$cli_out$srv_out" ||
		rn_fail "the drop was not seen as RETRY_EXC_ERR"
	rn_log "ok: RoCE dropped: RETRY_EXC_ERR moved it, checked data"
	clear_all

	stream_with "every NIC of the receiver down: the last pair goes" \
		"B run 1 -- sh -c 'ip link set eth0 down; ip link set eth1 down; ip link set eth2 down'"
	expect_none_left "all NICs down" "no NIC pair left to move to: .*rxe0:1 -> eth0 (.*rxe1:1 -> eth1 (.*rxe2:1 -> eth2 ("
	rn_log "ok: all NICs down: one error naming every pair, no hang"
	# No link is set up again on this bed: 6.1's rxe frees a QP whose last frames still sit
	# in the virtio TX ring of a link set down, and setting it up then panics the guest in
	# rxe_skb_tx_dtor (use after free; seen in 3 runs of 4 on the 2-CPU CI machine). Each
	# case that ends with every pair gone is the last of its own bed.
}

body_vnic() {
	B up --hosts 2 --nics 3 --scenario fixed --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 hosts x 3 NICs, scenario fixed; vNIC rxe0+rxe1 streams of $ITERS x $SIZE"
	FAULT_ENV=(NCCL_IB_TIMEOUT=17 NCCL_IB_RETRY_CNT=6)
	DEV=(--merge 0,1) # the pair left carries the stream while the other fails (as above)
	before=$(sent_pkts 0 0)
	stream_with "vNIC rxe0+rxe1 at both ends: the receiver's member eth1 set down mid-stream" \
		"B run 1 -- ip link set eth1 down"
	expect_vnic_left "receiver's member down" 0 "rxe1:1 -> eth1"
	after=$(sent_pkts 0 0)
	echo "  h0 rxe0 sent_pkts: $before -> $after"
	rn_log "ok: vNIC, receiver's member down: pair rxe1 <-> rxe1 left out, rxe0 <-> rxe0 carried on, checked"
	clear_all

	stream_with "vNIC: the sender's member eth0 set down mid-stream (the comm's side channel's NIC)" \
		"B run 0 -- ip link set eth0 down"
	expect_vnic_left "sender's member down" 1 "rxe0:1 -> eth0"
	rn_log "ok: vNIC, sender's member down: pair rxe0 <-> rxe0 left out, rxe1 <-> rxe1 carried on, checked"
	clear_all

	stream_with "vNIC: both members of the receiver down: the last pair goes" \
		"B run 1 -- sh -c 'ip link set eth0 down; ip link set eth1 down'"
	expect_none_left "vNIC, both members down" "no vNIC member pair left: rxe0:1 -> eth0 (.*rxe1:1 -> eth1 ("
	rn_log "ok: vNIC, both members down: one error naming both pairs, no hang"
	# (no clear_all: see body's end)
}

# The last pair gone: both ends failed, one says so naming every pair (ERE $2), no hang.
expect_none_left() { # label ere
	[ "$cli_rc" -ne 0 ] && [ "$srv_rc" -ne 0 ] ||
		{ show_pair; rn_fail "$1: both ends should fail: server exit $srv_rc, client exit $cli_rc"; }
	grep -q "NCCL WARN .*$2" <<<"$srv_out$cli_out" ||
		{ show_pair; rn_fail "$1: the error does not name every pair and why"; }
	grep -q "no progress for" <<<"$cli_out$srv_out" &&
		rn_fail "$1: an end hung until the driver's own timeout instead of failing"
}

# The vNIC streams: both ends exited 0 with checked data, and each end's WARN says which
# member pair was left out and that the comm went on over the other one's QP.
expect_vnic_left() { # label member-left pair-out
	local label=$1 m=$2
	if [ "$srv_rc" -ne 0 ] || [ "$cli_rc" -ne 0 ]; then
		show_pair
		rn_fail "$label: server exit $srv_rc, client exit $cli_rc"
	fi
	grep -q "checksums match" <<<"$cli_out" || { show_pair; rn_fail "$label: no checksum verdict"; }
	grep -q "NCCL WARN .*failover: send comm with .*vNIC member pair $3 (.*) left out; going on over 1 of 2 QPs (rxe$m:1 -> eth$m) in [0-9]* ms; [0-9]* messages\?, [0-9]* bytes sent again" <<<"$cli_out" ||
		{ show_pair; rn_fail "$label: the sender's WARN does not say it went on over rxe$m"; }
	grep -q "NCCL WARN .*failover: recv comm with .*vNIC member pair .* left out; going on over 1 of 2 QPs (rxe$m:1 -> eth$m)" <<<"$srv_out" ||
		{ show_pair; rn_fail "$label: the receiver's WARN does not say it went on over rxe$m"; }
}

bed_attempt body && bed_attempt body_vnic
