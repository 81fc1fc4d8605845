#!/usr/bin/env bash
# NIC fusion (makeVDevice, NCCL_IB_MERGE_NICS) on real kernel Soft-RoCE: 2 guests x 3 NICs with
# per-NIC policy routing (scenario fixed). build/nccl-net-driver --merge 0,1 fuses rxe0+rxe1 into
# one vNIC, as NCCL does for NICs close to one GPU, and runs a checked transfer over it: every
# message is split over a QP per NIC, so BOTH NICs must carry data. Each NIC's traffic counters
# (netdev bytes, rxe sent/received packets) are read before and after, and each must have grown
# by at least a quarter of the payload. Then a vNIC against one plain NIC (2 members vs 1), and
# nccl-net-bench --check over the vNIC and over one NIC (figures printed, never asserted), and
# init/finalize cycles with the library kept loaded on the vNIC of the first init (v12, v10).
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
# The fixed scenario from plain ip rules and sysctls: the script costs seconds per boot and per
# reset under TCG; doctor.t and plugin_pods.t run scripts/roce-policy-routing itself.
export BED_POLICY=${BED_POLICY:-plain}
plugin_prereq

# "tx0 tx1 rx0 rx1 sent0 sent1 rcvd0 rcvd1" of host <h>: netdev bytes and rxe packets per NIC
# (-1 where this kernel's rxe has no hw_counters).
counters() { # h
	B run "$1" -- sh -c 'for i in 0 1; do cat /sys/class/net/eth$i/statistics/tx_bytes; done
		for i in 0 1; do cat /sys/class/net/eth$i/statistics/rx_bytes; done
		for c in sent_pkts rcvd_pkts; do for i in 0 1; do
			cat /sys/class/infiniband/rxe$i/ports/1/hw_counters/$c 2>/dev/null || echo -1
		done; done' | tr '\n' ' '
}

# grew <before> <after> <index> <min> <what>: fail unless field <index> grew by >= <min>
grew() {
	local b a d
	b=$(awk -v i="$3" '{print $i}' <<<"$1")
	a=$(awk -v i="$3" '{print $i}' <<<"$2")
	if [ "$b" = -1 ] || [ "$a" = -1 ]; then
		echo "  ($5: no rxe hw_counters on this kernel)"
		return 0
	fi
	d=$((a - b))
	echo "  $5: +$d (want >= $4)"
	[ "$d" -ge "$4" ] || rn_fail "$5 grew by $d, less than $4: that NIC did not carry its share"
}

mbs() { grep -o '[0-9.]* MB/s' <<<"$1" | tail -n1; }

body() {
	local c0 c1 h0a h0b h1a h1b bytes one fused
	# 3 NICs a guest (the vNIC of 3 below), so a process's one vNIC is dev 3
	B up --hosts 2 --nics 3 --scenario fixed --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 hosts x 3 NICs, scenario fixed (per-NIC policy routing)"

	t_step "a vNIC of rxe0+rxe1 at both ends: a checked transfer moves data over both NICs"
	# 3 x 1 MiB+3 + 3 x 8 MiB: every message split into a part per NIC
	bytes=$((3 * 1048579 + 3 * 8388608))
	h0a=$(counters 0); h1a=$(counters 1)
	# NET lines too: the comm's "up" line says how many NICs each end has
	drv_start c0 1 NCCL_DEBUG_SUBSYS=INIT,NET -- --merge 0,1 --sizes 1048579,8388608 --iters 3 -v \
		server "$(bed_ip 1 0):18701"
	cli_out=$(drv_run 0 NCCL_DEBUG_SUBSYS=INIT,NET -- --merge 0,1 -v client "$(bed_ip 1 0):18701")
	cli_rc=$?
	srv_out=$(B wait "$c0" 2>&1); srv_rc=$?
	h0b=$(counters 0); h1b=$(counters 1)
	grep -q "using dev 3 (rxe0+rxe1)" <<<"$cli_out" && grep -q "using dev 3 (rxe0+rxe1)" <<<"$srv_out" ||
		{ show_pair; rn_fail "the driver did not fuse rxe0+rxe1 into dev 3 on both ends"; }
	grep -q "send comm rxe0:1+rxe1 .* up: 2 QPs, split (vNIC 2:2)" <<<"$cli_out" &&
		grep -q "recv comm rxe0:1+rxe1 .* up: 2 QPs, split (vNIC 2:2)" <<<"$srv_out" ||
		{ show_pair; rn_fail "the comms are not 2:2 vNIC comms with a QP per NIC"; }
	expect_ok "vNIC rxe0+rxe1 -> vNIC rxe0+rxe1: every byte and the checksum match"
	echo "figures: driver over the vNIC: $(mbs "$cli_out")"
	echo "h0 (sender) $h0a -> $h0b"
	echo "h1 (receiver) $h1a -> $h1b"
	grew "$h0a" "$h0b" 1 $((bytes / 4)) "h0 eth0 tx_bytes"
	grew "$h0a" "$h0b" 2 $((bytes / 4)) "h0 eth1 tx_bytes"
	grew "$h1a" "$h1b" 3 $((bytes / 4)) "h1 eth0 rx_bytes"
	grew "$h1a" "$h1b" 4 $((bytes / 4)) "h1 eth1 rx_bytes"
	# rxe's MTU-sized packets (1024 B payload with the bed's path MTU): a quarter of the bytes
	grew "$h0a" "$h0b" 5 $((bytes / 4 / 4096)) "h0 rxe0 sent_pkts"
	grew "$h0a" "$h0b" 6 $((bytes / 4 / 4096)) "h0 rxe1 sent_pkts"
	grew "$h1a" "$h1b" 7 $((bytes / 4 / 4096)) "h1 rxe0 rcvd_pkts"
	grew "$h1a" "$h1b" 8 $((bytes / 4 / 4096)) "h1 rxe1 rcvd_pkts"
	rn_log "ok: both NICs of the vNIC carried at least a quarter of the payload each, both ways counted"

	# a receiver of 3 NICs writes CTS entries of 64 bytes (a key per member), 2 or fewer 32
	t_step "a vNIC of 3 NICs at both ends: a checked transfer with 64-byte CTS entries"
	drv_start c2 1 NCCL_DEBUG_SUBSYS=INIT,NET -- --merge 0,1,2 --sizes 1048579,4194304 --iters 3 \
		-v server "$(bed_ip 1 0):18703"
	cli_out=$(drv_run 0 NCCL_DEBUG_SUBSYS=INIT,NET -- --merge 0,1,2 -v client "$(bed_ip 1 0):18703")
	cli_rc=$?
	srv_out=$(B wait "$c2" 2>&1); srv_rc=$?
	grep -q "using dev 3 (rxe0+rxe1+rxe2)" <<<"$cli_out" &&
		grep -q "using dev 3 (rxe0+rxe1+rxe2)" <<<"$srv_out" ||
		{ show_pair; rn_fail "the driver did not fuse rxe0+rxe1+rxe2 into dev 3 on both ends"; }
	grep -q "send comm rxe0:1+rxe1+rxe2 .* up: 3 QPs, split (vNIC 3:3)" <<<"$cli_out" &&
		grep -q "recv comm rxe0:1+rxe1+rxe2 .* up: 3 QPs, split (vNIC 3:3)" <<<"$srv_out" ||
		{ show_pair; rn_fail "the comms are not 3:3 vNIC comms with a QP per NIC"; }
	expect_ok "vNIC of 3 -> vNIC of 3: every byte and the checksum match"

	t_step "a vNIC (h0 rxe0+rxe1) to one NIC (h1 rxe0): both of h0's NICs send to h1 eth0"
	bytes=$((4 * 4194304))
	h0a=$(counters 0); h1a=$(counters 1)
	drv_start c1 1 -- --dev 0 --size 4194304 --iters 4 server "$(bed_ip 1 0):18702"
	cli_out=$(drv_run 0 -- --merge 0,1 client "$(bed_ip 1 0):18702"); cli_rc=$?
	srv_out=$(B wait "$c1" 2>&1); srv_rc=$?
	h0b=$(counters 0); h1b=$(counters 1)
	expect_ok "vNIC rxe0+rxe1 -> rxe0: every byte and the checksum match"
	grew "$h0a" "$h0b" 1 $((bytes / 4)) "h0 eth0 tx_bytes"
	grew "$h0a" "$h0b" 2 $((bytes / 4)) "h0 eth1 tx_bytes"
	grew "$h1a" "$h1b" 3 $((bytes * 3 / 4)) "h1 eth0 rx_bytes"
	rn_log "ok: 2 members against 1: both sending NICs carried data"

	# NCCL_NET_PLUGIN_REF_COUNT=1: the vNIC made at the first init is used by the next
	# communicators, after the last one was finalized, without devices() or makeVDevice
	local maxv out rc
	for maxv in 12 10; do
		t_step "library kept loaded (v$maxv): init/finalize x3, the first init's vNIC each time"
		out=$(drv_run 0 -- --max-version $maxv --merge 0,1 --cycles 3 --sizes 1,1048579 \
			--iters 2 reinit)
		rc=$?
		[ $rc -eq 0 ] && grep -q "3 init/finalize cycles with the library kept loaded (v$maxv): ok" \
			<<<"$out" && grep -q "cycle 2: init, dev 3 (rxe0+rxe1), checked loopback" <<<"$out" ||
			{ echo "$out" | sed 's/^/  | /'; rn_fail "reinit v$maxv over the vNIC: exit $rc"; }
		rn_log "ok: v$maxv: 3 communicators one after another on vNIC 3, each a checked loopback"
	done

	t_step "figures: nccl-net-bench bw --check, vNIC rxe0+rxe1 vs one NIC (printed, never asserted)"
	local j o r what port=18704 line
	for what in "rxe0,rxe1 --merge" "rxe0"; do
		# shellcheck disable=SC2086
		j=$(bg --timeout 120 1 -- env "${PLUG_ENV[@]}" stdbuf -oL "$PLUG_BIN/nccl-net-bench" \
			-d $what -p $port --timeout 30000)
		# shellcheck disable=SC2086
		out=$(bench_run 0 -- -d $what -p $port --timeout 30 -s 1M -n 16 --check --csv \
			"$(bed_ip 1 0)")
		rc=$?
		o=$(B wait "$j" 2>&1); r=$?
		echo "$out" | sed 's/^/  bench| /'
		[ $rc -eq 0 ] && [ $r -eq 0 ] ||
			{ echo "$o" | sed 's/^/  server| /'; rn_fail "bench -d $what: client $rc server $r"; }
		line=$(grep "^client,bw,1048576,16,.*,1$" <<<"$out") || rn_fail "bench -d $what: no checked result"
		[ "$what" = rxe0 ] || grep -q "device 2 of 3: rxe0+rxe1" <<<"$out" ||
			rn_fail "bench --merge did not use the vNIC rxe0+rxe1"
		[ "$what" = rxe0 ] && one=$line || fused=$line
		port=$((port + 1))
	done
	echo "figures (client,bw,bytes,iters,Gb/s,Mpps,...): vNIC $fused; one NIC $one"
	echo "(Soft-RoCE under TCG is CPU-bound: these compare, they do not measure NICs)"
}

bed_attempt body
