# Helpers for the plugin's end-to-end tests (test/vm/plugin_*.t): build/nccl-net-driver and
# build/nccl-net-bench across the bed's guests. Source after lib/test.sh.
#   drv_start <var> <h> <env...> -- <driver args...>   start the driver in the background on
#                                                       host <h>; the job id goes into <var>
#   drv_run <h> <env...> -- <driver args...>            run it in the foreground; output on
#                                                       stdout, the driver's status returned
#   drv_pair <port> <dev> "<server opts>" [env...]      server on h1 (dev), client on h0 (dev);
#                                                       sets srv_out srv_rc cli_out cli_rc
#   expect_ok <what>                                    both ends of the last pair exited 0
# Every run is bounded: --timeout-ms on each wait in the tools, `bed run --timeout` around them.
# shellcheck shell=bash
PLUG_BIN=${PLUG_BIN:-build}
# rxe takes retry_cnt 7 as infinite: 6 turns a dead path into an error
PLUG_ENV=(LD_LIBRARY_PATH="$PLUG_BIN" NCCL_IB_RETRY_CNT=6)
PLUG_DRV=(--nap-us 200 --timeout-ms 30000)
# short QP timeouts where a fault must show within seconds
FAULT_ENV=(NCCL_IB_TIMEOUT=14 NCCL_IB_RETRY_CNT=6)
# a failure's own diagnosis, where a move to a spare NIC pair would cure it (plugin_failover.t
# covers the move)
NOFO_ENV=(NCCL_ROCE_FAILOVER=0)

plugin_prereq() {
	bed_prereq stdbuf
	[ -x "$RN_TOP/build/nccl-net-driver" ] && [ -x "$RN_TOP/build/nccl-net-bench" ] &&
		[ -f "$RN_TOP/build/libnccl-net-roce.so" ] ||
		rn_skip "skip: build/nccl-net-driver, nccl-net-bench or the plugin not built (run make)"
}

# What the pod tests need besides the plugin (plugin_prereq's, with extra tools @...): the
# doctor, and Debian's CNI plugins (macvlan, static IPAM, tuning, sbr) the pods are made with.
pod_prereq() {
	plugin_prereq "$@"
	[ -x "$RN_TOP/build/roce-doctor" ] || rn_fail "build/roce-doctor missing: run make first"
	[ -x /usr/lib/cni/macvlan ] && [ -x /usr/lib/cni/sbr ] && [ -x /usr/lib/cni/tuning ] &&
		[ -x /usr/lib/cni/static ] ||
		rn_skip "skip: containernetworking-plugins not installed (/usr/lib/cni)"
}

# Split "<env...> -- <args...>" into the globals _env and _args.
_split() {
	_env=() _args=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do _env+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	_args=("$@")
}

drv_start() { # var h env... -- args...
	local var=$1 h=$2 id
	shift 2
	_split "$@"
	id=$(bg --timeout 170 "$h" -- env "${PLUG_ENV[@]}" "${_env[@]}" stdbuf -oL \
		"$PLUG_BIN/nccl-net-driver" "${PLUG_DRV[@]}" "${_args[@]}") || rn_fail "could not start a job on h$h"
	printf -v "$var" '%s' "$id"
}

drv_run() { # h env... -- args...
	local h=$1
	shift
	_split "$@"
	B run --timeout 170 "$h" -- env "${PLUG_ENV[@]}" "${_env[@]}" stdbuf -oL \
		"$PLUG_BIN/nccl-net-driver" "${PLUG_DRV[@]}" "${_args[@]}" 2>&1
}

bench_run() { # h env... -- args...
	local h=$1
	shift
	_split "$@"
	B run --timeout 170 "$h" -- env "${PLUG_ENV[@]}" "${_env[@]}" stdbuf -oL \
		"$PLUG_BIN/nccl-net-bench" "${_args[@]}" 2>&1
}

drv_pair() { # port dev "server opts" [env...]
	local port=$1 dev=$2 opts=$3 j addr
	shift 3
	addr=$(bed_ip 1 "$dev"):$port
	# shellcheck disable=SC2086
	drv_start j 1 "$@" -- --dev "$dev" $opts server "$addr"
	cli_out=$(drv_run 0 "$@" -- --dev "$dev" client "$addr")
	cli_rc=$?
	srv_out=$(B wait "$j" 2>&1)
	srv_rc=$?
}

show_pair() {
	echo "$srv_out" | sed 's/^/  server| /'
	echo "$cli_out" | sed 's/^/  client| /'
	bed_net_counters
}

# What the wire did, for a failure's log: each of h0's and h1's rxe counters that are not 0
# (retries, sequence errors: loss) and its netdevs' drops.
bed_net_counters() {
	local h
	for h in 0 1; do
		B run --timeout 20 "$h" -- sh -c 'cd /sys/class/infiniband && for d in *; do
			printf "%s:" "$d"; for f in $d/ports/1/hw_counters/*; do read -r v <"$f"
			[ "$v" = 0 ] || printf " %s=%s" "${f##*/}" "$v"; done; echo; done
			cd /sys/class/net && for n in eth*; do printf "%s: rx_dropped=%s tx_dropped=%s\n" \
			"$n" "$(cat $n/statistics/rx_dropped)" "$(cat $n/statistics/tx_dropped)"; done' \
			2>&1 | sed "s/^/  h$h net| /"
	done
	# the host's side: each tap's drops (a guest that did not read its queue fast enough)
	ip -n "$BED_NAME" -s -o link show 2>/dev/null | awk '$2 ~ /^t[0-9]+n[0-9]+/ {
		for (i = 1; i <= NF; i++) if ($i == "RX:") rx = $(i + 11); else if ($i == "TX:") tx = $(i + 11)
		print "  host net| " $2 " rx_dropped=" rx " tx_dropped=" tx }'
}

expect_ok() { # what
	if [ "$srv_rc" -ne 0 ] || [ "$cli_rc" -ne 0 ]; then
		show_pair
		rn_fail "$1: server exit $srv_rc, client exit $cli_rc"
	fi
	grep -q "checksums match" <<<"$cli_out" || { show_pair; rn_fail "$1: no checksum verdict"; }
	rn_log "ok: $1"
}
