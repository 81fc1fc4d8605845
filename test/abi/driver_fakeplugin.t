#!/usr/bin/env bash
# nccl-net-driver's server/client modes against a stand-in plugin over local Unix
# sockets (test/abi/fake_net_plugin.c): the handle goes over the side channel, the
# non-blocking loops complete, every byte is checked, a corrupted byte is caught,
# a missing peer is an error within the timeout, never a hang. No network is used.
set -u
cd "$(dirname "$0")/../.."
drv=$PWD/build/nccl-net-driver
[ -x "$drv" ] || { echo "FAIL: run make first"; exit 1; }
tmp=$(mktemp -d /tmp/rn-fakeplug.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.out; do echo "--- $f"; cat "$f"; done; exit 1; }

${CC:-cc} -std=gnu11 -D_GNU_SOURCE -Wall -Werror -shared -fPIC -Iplugin -o "$tmp/libnccl-net-fake.so" \
	test/abi/fake_net_plugin.c || fail "fake plugin does not build"
export FAKE_NET_DIR=$tmp LD_LIBRARY_PATH=$tmp

run_pair() { # name size iters [env...]
	local name=$1 size=$2 iters=$3
	shift 3
	env "$@" "$drv" --plugin fake --timeout-ms 10000 --size "$size" --iters "$iters" \
		server "unix:$tmp/$name.sock" >"$tmp/$name.server.out" 2>&1 &
	local sp=$!
	pids+=($sp)
	env "$@" "$drv" --plugin fake --timeout-ms 10000 client "unix:$tmp/$name.sock" \
		>"$tmp/$name.client.out" 2>&1
	crc=$?
	wait $sp
	src=$?
}

# 1. many small messages: the window of 32 turns over many times
run_pair small 4K 500
[ $src -eq 0 ] && [ $crc -eq 0 ] || fail "small: server $src client $crc"
grep -q "received 500 messages of 4096 bytes" "$tmp/small.server.out" || fail "small: count"
grep -q "sent 500 messages of 4096 bytes" "$tmp/small.client.out" || fail "small: sent"
grep -q "loaded net plugin Fake (v12)" "$tmp/small.client.out" || fail "small: plugin"

# 2. large messages, a narrow window
env "$drv" --plugin fake --timeout-ms 10000 --size 3M --iters 7 --window 2 \
	server "unix:$tmp/big.sock" >"$tmp/big.server.out" 2>&1 &
sp=$!
pids+=($sp)
"$drv" --plugin fake --timeout-ms 10000 --window 2 client "unix:$tmp/big.sock" \
	>"$tmp/big.client.out" 2>&1
crc=$?
wait $sp
src=$?
[ $src -eq 0 ] && [ $crc -eq 0 ] || fail "big: server $src client $crc"
grep -q "received 7 messages of 3145728 bytes" "$tmp/big.server.out" || fail "big: count"

# 2b. options after the command and its address take effect (getopt permutes): 4 KiB x 7,
#     not the default 100 x 1 MiB
"$drv" server "unix:$tmp/late.sock" --plugin fake --timeout-ms 10000 --size 4K --iters 7 \
	>"$tmp/late.server.out" 2>&1 &
sp=$!
pids+=($sp)
"$drv" client "unix:$tmp/late.sock" --plugin fake --timeout-ms 10000 >"$tmp/late.client.out" 2>&1
crc=$?
wait $sp
src=$?
[ $src -eq 0 ] && [ $crc -eq 0 ] || fail "late options: server $src client $crc"
grep -q "received 7 messages of 4096 bytes" "$tmp/late.server.out" ||
	fail "late options: --size 4K --iters 7 after the command were not used"
grep -q "sent 7 messages of 4096 bytes" "$tmp/late.client.out" || fail "late options: client"

# 3. one corrupted byte: the server names the message and the byte, both sides fail
run_pair corrupt 1K 10 FAKE_NET_CORRUPT=1
[ $src -eq 1 ] && [ $crc -eq 1 ] || fail "corrupt: server $src client $crc, want 1 1"
grep -q "first bad byte 512" "$tmp/corrupt.server.out" || fail "corrupt: not located"

# 3b. reinit: communicators one after another with the library kept loaded, each a checked
#     loopback on the device index of the first init
"$drv" --plugin fake --timeout-ms 10000 --size 4K --iters 2 --cycles 4 reinit >"$tmp/reinit.out" 2>&1 ||
	fail "reinit: exit $?"
[ "$(grep -c 'checked loopback, finalize: ok' "$tmp/reinit.out")" = 4 ] || fail "reinit: not 4 cycles"
[ "$(grep -c '^nccl-net-driver: devices:' "$tmp/reinit.out")" = 1 ] ||
	fail "reinit: devices() called again after the first init (NCCL caches the count)"
grep -q "4 init/finalize cycles with the library kept loaded (v12): ok" "$tmp/reinit.out" ||
	fail "reinit: no summary"

# 3c. a plugin's malformed log formats (%s without its argument, a bad pointer, %n): the
#     logger prints what it can and the tool carries on
FAKE_NET_BAD_LOG=1 "$drv" --plugin fake >"$tmp/badlog.out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "malformed plugin log formats: driver exited $rc, want 0"
grep -q "NCCL WARN .*fake: missing args" "$tmp/badlog.out" || fail "badlog: first WARN missing"
grep -q "NCCL WARN .*fake: bad pointer (bad pointer)" "$tmp/badlog.out" ||
	fail "badlog: the bad pointer is not named"

# 3d. -v is INFO at least: it lets INFO through under NCCL_DEBUG=WARN, and keeps
#     NCCL_DEBUG=TRACE's TRACE lines (it once lowered TRACE to INFO)
FAKE_NET_LEVELS=1 NCCL_DEBUG=WARN "$drv" -v --plugin fake >"$tmp/lv-warn.out" 2>&1 ||
	fail "levels, WARN: driver exited $?"
grep -q "NCCL INFO .*fake: an INFO line" "$tmp/lv-warn.out" || fail "-v under NCCL_DEBUG=WARN: no INFO line"
! grep -q "fake: a TRACE line" "$tmp/lv-warn.out" || fail "-v under NCCL_DEBUG=WARN: a TRACE line"
FAKE_NET_LEVELS=1 NCCL_DEBUG=TRACE "$drv" -v --plugin fake >"$tmp/lv-trace.out" 2>&1 ||
	fail "levels, TRACE: driver exited $?"
grep -q "NCCL TRACE .*fake: a TRACE line" "$tmp/lv-trace.out" ||
	{ cat "$tmp/lv-trace.out"; fail "-v under NCCL_DEBUG=TRACE: the TRACE line was dropped"; }

# 4. no server: the client gives up within its timeout
"$drv" --plugin fake --timeout-ms 500 client "unix:$tmp/nobody.sock" >"$tmp/alone.out" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "client without server exited $rc, want 1"
grep -q "no server" "$tmp/alone.out" || fail "client without server: no reason"
# 5. stray connections on the server's side channel before the client (a connect and close,
#    garbage bytes, one that stays open and silent, one that sends a truncated greeting and
#    stays): the server drops them, keeps waiting, and serves the real client
"$drv" --plugin fake --timeout-ms 20000 --size 4K --iters 20 server "unix:$tmp/stray.sock" \
	>"$tmp/stray.server.out" 2>&1 &
sp=$!
pids+=($sp)
python3 - "$tmp/stray.sock" >"$tmp/stray.strays.out" 2>&1 <<'PY' &
import os, socket, sys, time
path = sys.argv[1]
for _ in range(200):
    if os.path.exists(path):
        break
    time.sleep(0.05)
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s
conn().close()                                   # connect and close
s = conn(); s.sendall(b"GET / HTTP/1.0\r\n\r\n"); s.close()  # garbage, then close
g = conn(); g.sendall(os.urandom(64))            # garbage, kept open
idle = conn()                                    # silent, kept open
half = conn(); half.sendall(b"qcnr")             # the greeting's magic only ("rncq" LE)
print("strays in", flush=True)
time.sleep(30)
PY
strays=$!
pids+=($strays)
for _ in $(seq 100); do grep -q "strays in" "$tmp/stray.strays.out" 2>/dev/null && break; sleep 0.1; done
grep -q "strays in" "$tmp/stray.strays.out" || fail "strays: could not connect: $(cat "$tmp/stray.strays.out")"
"$drv" --plugin fake --timeout-ms 20000 client "unix:$tmp/stray.sock" >"$tmp/stray.client.out" 2>&1
crc=$?
wait $sp
src=$?
kill $strays 2>/dev/null
[ $src -eq 0 ] && [ $crc -eq 0 ] || fail "strays: server $src client $crc, want 0 0"
grep -q "received 20 messages of 4096 bytes" "$tmp/stray.server.out" || fail "strays: count"
grep -q "checksums match" "$tmp/stray.client.out" || fail "strays: client"
echo ok
