#!/usr/bin/env bash
# nccl-net-driver loads the built plugin as NCCL does and, with no usable RoCE
# device (NCCL_IB_HCA selects none, so this holds on hosts with RDMA devices too),
# sees init fail cleanly with one WARN giving the reason, and finalize still called.
set -u
cd "$(dirname "$0")/../.."
drv=build/nccl-net-driver
[ -x "$drv" ] && [ -f build/libnccl-net-roce.so ] || { echo "FAIL: run make first"; exit 1; }
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$out"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# A prefix nothing matches: no device is selected even where RDMA devices exist.
export NCCL_IB_HCA='=rn-no-such-device'

# 1. by short name through the dlopen search path, newest table first (v12), the way the
#    README says it: `nccl-net-driver roce`
LD_LIBRARY_PATH=build NCCL_DEBUG=INFO "$drv" roce >"$out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "probe exited $rc, want 0 (no device is not a probe failure)"
grep -q "Could not find: roce" "$out" || fail "no fallback from 'roce' to libnccl-net-roce.so"
grep -q "NET/Plugin: Loaded net plugin RoCE (v12)" "$out" || fail "v12 not chosen"
[ "$(grep -c 'Loaded net plugin' "$out")" -eq 1 ] || fail "the plugin was loaded more than once"
grep -q "NCCL WARN .*NET/RoCE : no RoCE device: " "$out" || fail "no WARN with the reason"
[ "$(grep -c 'no RoCE device: ' "$out" | tr -d ' ')" -ge 1 ] || fail "reason missing"
[ "$(grep -c 'NCCL WARN' "$out")" -eq 1 ] || fail "want exactly one WARN line"
grep -q "init of communicator 0 failed: ncclSystemError" "$out" || fail "init did not fail"
grep -q "finalized 1 communicator" "$out" || fail "finalize not called after the failed init"

# 2. a mode that needs devices says so in its exit code
"$drv" --plugin build/libnccl-net-roce.so --require-devices probe >"$out" 2>&1
rc=$?
[ $rc -eq 3 ] || fail "--require-devices exited $rc, want 3"

# 3. each older table loads and fails the same clean way (NCCL 2.28 stops at v11)
for v in 11 10 9 8 7 6; do
	NCCL_DEBUG=INFO "$drv" --plugin "$PWD/build/libnccl-net-roce.so" --max-version $v \
		>"$out" 2>&1 || fail "v$v: exit $?"
	grep -q "Loaded net plugin RoCE (v$v)" "$out" || fail "v$v not loaded"
	grep -q "no RoCE device" "$out" || fail "v$v: no reason"
done

# 4. a plugin that does not exist: NCCL's INFO lines, exit 1
NCCL_DEBUG=INFO "$drv" --plugin rn-no-such-plugin >"$out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "missing plugin exited $rc, want 1"
grep -q "Could not find: libnccl-net-rn-no-such-plugin.so" "$out" || fail "no NCCL-style miss"
# 5. usage errors are exit 2, with a line saying what is wrong
"$drv" --size 0 >"$out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "bad value '0' for --size" "$out" || fail "--size 0: exit $rc"
"$drv" roce frobnicate >"$out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "unknown command 'frobnicate'" "$out" || fail "bad command: exit $rc"
# a first word that is no command names the plugin, as NCCL_NET_PLUGIN would
# ...and a lone word that is neither a command nor a plugin that loads is a usage error
"$drv" rn-no-such-plugin >"$out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "unknown command 'rn-no-such-plugin' (nor a plugin" "$out" ||
	fail "lone unknown word: exit $rc"
"$drv" server >"$out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "server needs ADDR:PORT" "$out" || fail "server without address: $rc"
"$drv" --help >"$out" 2>&1 || fail "--help failed"
grep -q "^Exit status: 0 ok" "$out" && grep -q "3 no usable RDMA/RoCE device" "$out" || fail "--help"
echo "ok"
