#!/usr/bin/env bash
# What a user sees of the plugin under NCCL's log filter, through nccl-net-driver
# (whose logger applies NCCL's rule: a line shows when its level is within
# NCCL_DEBUG and its flags meet NCCL_DEBUG_SUBSYS, default INIT,BOOTSTRAP,ENV,
# WARNs included). The plugin's "no RoCE device" WARN must show with NCCL_DEBUG=WARN
# and NCCL_DEBUG_SUBSYS unset or naming any subsystem, and vanish only with ^ALL;
# its INFO lines keep their subsystems; the first names the version and the ABI.
set -u
cd "$(dirname "$0")/../.."
drv=build/nccl-net-driver
[ -x "$drv" ] && [ -f build/libnccl-net-roce.so ] || { echo "FAIL: run make first"; exit 1; }
tmp=$(mktemp -d /tmp/rn-nccllog.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$out"; exit 1; }
version=$(sed -n 's/^VERSION := *//p' Makefile)
[ -n "$version" ] || { echo "FAIL: no VERSION in the Makefile"; exit 1; }

# No device is selected even where RDMA devices exist; no stray settings from outside.
export NCCL_IB_HCA='=rn-no-such-device' LD_LIBRARY_PATH=build
unset NCCL_DEBUG NCCL_DEBUG_SUBSYS NCCL_DEBUG_FILE
warn='NCCL WARN .*NET/RoCE : no RoCE device: '

run() { # [VAR=value...]: the probe, as a user types it
	env "$@" "$drv" roce >"$out" 2>&1 || fail "probe exited $? with $*"
}

# 1. NCCL's defaults: the WARN shows, and nothing else of NCCL's
run NCCL_DEBUG=WARN
grep -q "$warn" "$out" || fail "WARN hidden under NCCL_DEBUG=WARN with the default subsystems"
grep -q "NCCL INFO" "$out" && fail "INFO lines under NCCL_DEBUG=WARN"
run NCCL_DEBUG=warn
grep -q "$warn" "$out" || fail "lower-case 'warn' not understood"

# 2. any subsystem list lets a WARN through (it carries NCCL_ALL), except ^ALL
for s in NET INIT COLL ENV BOOTSTRAP '^NET' '^INIT,NET,ENV' ALL; do
	run NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS="$s"
	grep -q "$warn" "$out" || fail "WARN hidden with NCCL_DEBUG_SUBSYS=$s"
done
for s in '^ALL' '' 'NOSUCH'; do
	run NCCL_DEBUG=WARN NCCL_DEBUG_SUBSYS="$s"
	grep -q "NCCL WARN" "$out" && fail "WARN shown with NCCL_DEBUG_SUBSYS='$s' (NCCL shows none)"
done
# the tool's own lines do not go through the filter: the reason is still given
grep -q "no RoCE device" "$out" || fail "the driver's own summary vanished with the log"

# 3. levels: VERSION hides WARN; an unknown word shows nothing, as in NCCL
run NCCL_DEBUG=VERSION
grep -q "NCCL WARN" "$out" && fail "WARN under NCCL_DEBUG=VERSION"
run NCCL_DEBUG=LOUD
grep -q "NCCL WARN" "$out" && fail "WARN under an unknown NCCL_DEBUG"

# 4. INFO keeps its subsystem: the first INFO line of the plugin names version and ABI
run NCCL_DEBUG=INFO
first=$(grep -m1 "NCCL INFO NET/RoCE" "$out")
case $first in
*"nccl-net-roce $version, NCCL net plugin ABI v12"*) ;;
*) fail "first plugin INFO line is not the version line: $first" ;;
esac
grep -q "NCCL INFO NET/RoCE : config " "$out" || fail "config line (INIT|ENV) hidden by default"
grep -q "NCCL INFO NET/Plugin: Loaded net plugin RoCE (v12)" "$out" || fail "loader line"
# ENV only: the config line (INIT|ENV) shows, the INIT|NET lines do not; the WARN does
run NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV
grep -q "NET/RoCE : config " "$out" || fail "ENV: config line hidden"
grep -q "Loaded net plugin\|nccl-net-roce $version" "$out" && fail "ENV: INIT|NET lines shown"
grep -q "$warn" "$out" || fail "ENV: WARN hidden"
# COLL: no INFO line of ours at all, the WARN still
run NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL
grep -q "NCCL INFO" "$out" && fail "COLL: INFO lines shown"
grep -q "$warn" "$out" || fail "COLL: WARN hidden"
# the table NCCL 2.18 would pick is the one named
env NCCL_DEBUG=INFO "$drv" --plugin "$PWD/build/libnccl-net-roce.so" --max-version 9 \
	>"$out" 2>&1 || fail "v9 probe exited $?"
grep -q "NCCL INFO NET/RoCE : nccl-net-roce $version, NCCL net plugin ABI v9 (ncclNetPlugin_v9)" \
	"$out" || fail "v9 not named"

# 5. NCCL_DEBUG_FILE: %h (host name up to the first dot) and %p (pid); lines go there
run NCCL_DEBUG=WARN NCCL_DEBUG_FILE="$tmp/nccl.%h.%p.log"
grep -q "NCCL WARN" "$out" && fail "WARN on stdout with NCCL_DEBUG_FILE set"
host=$(hostname); host=${host%%.*}
f=$(ls "$tmp"/nccl."$host".[0-9]*.log 2>/dev/null | head -1)
[ -n "$f" ] || { ls -l "$tmp"; fail "no $tmp/nccl.$host.<pid>.log"; }
grep -q "$warn" "$f" || { cat "$f"; fail "WARN not in $f"; }
echo ok
