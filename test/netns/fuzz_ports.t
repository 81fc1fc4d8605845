#!/usr/bin/env bash
# The fuzzers that talk TCP over loopback (fuzz_handle, fuzz_hs_peer, fuzz_listener) leave
# thousands of TIME_WAIT sockets; where those of earlier targets (or of a long run) hold the
# ephemeral ports, binding a listener fails and the fuzzer aborts. Each fuzzer runs in a
# network namespace of its own (fuzz_fx.h) where no TIME_WAIT socket is kept, so nothing
# outside can use up its ports and it cannot itself. Shown by running each, for a fixed
# number of inputs, in a namespace whose ephemeral range is 16 ports, 8 of them held.
. "$(dirname "$0")/lib.sh"
rn_require_netns
rn_tmpdir T
n=0
for f in fuzz_handle fuzz_hs_peer fuzz_listener; do
	bin=$RN_TOP/build/fuzz/$f
	[ -x "$bin" ] || rn_skip "skip: $bin not built (make fuzz)"
	rn_ns NS "$f"
	rn_in "$NS" sysctl -qw net.ipv4.ip_local_port_range="61000 61015" || rn_fail "port range"
	# 8 of the 16 ports held by listeners (as another target's sockets would). Started as
	# a plain command, not through rn_in: a backgrounded function is a subshell, and
	# killing it left python3 (what "ip netns exec" becomes) holding our fds for an hour.
	ip netns exec "$NS" python3 -c '
import socket, sys, time
s = []
for p in range(61000, 61008):
    x = socket.socket(); x.bind(("127.0.0.1", p)); x.listen(1); s.append(x)
sys.stdout.write("held\n"); sys.stdout.flush()
time.sleep(3600)' >"$T/$f.hold" 2>&1 &
	hold=$!
	for _ in $(seq 50); do grep -q held "$T/$f.hold" 2>/dev/null && break; sleep 0.1; done
	rm -f "$T/$f.hold"
	mkdir -p "$T/corpus-$f" # new inputs land here, not in the seed corpus
	out=$(rn_in "$NS" "$bin" -runs=3000 -error_exitcode=1 -seed=1 \
		-artifact_prefix="$T/" "$T/corpus-$f" "$RN_TOP/test/fuzz/corpus/$f" 2>&1)
	rc=$?
	kill "$hold"; wait "$hold" 2>/dev/null
	# and whatever else still runs in the namespace, before it goes
	for p in $(ip netns pids "$NS"); do kill "$p" 2>/dev/null; done
	runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' <<<"$out")
	[ $rc -eq 0 ] && [ -n "$runs" ] ||
		{ tail -n 30 <<<"$out"; rn_fail "$f aborted (exit $rc) in a namespace short of ports"; }
	echo "ok: $f: $runs inputs with 8 free ephemeral ports outside"
	n=$((n + 1))
	rn_ns_del "$NS"
done
echo PASS
