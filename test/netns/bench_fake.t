#!/usr/bin/env bash
# nccl-net-bench end to end over the stand-in plugin (test/abi/fake_net_plugin.c, Unix
# sockets) with its TCP side channel inside a namespace of its own: options after the
# server's address take effect; the server prints the same table as the client; the results
# go alone to stdout with --csv / --json (the table to stderr); polling is busy unless
# --nap-us; -t conn sets up N connections and reports the time of each on both sides.
. "$(dirname "$0")/lib.sh"
rn_require_netns
command -v python3 >/dev/null || rn_skip "skip: python3 (JSON checks) not installed"
BENCH=$RN_TOP/build/nccl-net-bench
[ -x "$BENCH" ] || rn_fail "build/nccl-net-bench missing: run make first"
rn_tmpdir T
rn_ns N bench
ip -n "$N" addr add 198.18.0.1/32 dev lo
${CC:-cc} -std=gnu11 -D_GNU_SOURCE -Wall -Werror -shared -fPIC -I"$RN_TOP/plugin" \
	-o "$T/libnccl-net-fake.so" "$RN_TOP/test/abi/fake_net_plugin.c" || rn_fail "fake plugin does not build"
export FAKE_NET_DIR=$T LD_LIBRARY_PATH=$T
SRV=
trap '_rc=$?; [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; (exit $_rc); _rn_cleanup' EXIT
port=18700

pair() { # name "server args" client args... -> $T/name.{c,s}.{out,err}, CRC SRC
	local name=$1 sargs=$2
	shift 2
	port=$((port + 1))
	# shellcheck disable=SC2086
	ip netns exec "$N" "$BENCH" --plugin fake -p $port --timeout 20 $sargs \
		>"$T/$name.s.out" 2>"$T/$name.s.err" &
	SRV=$!
	ip netns exec "$N" "$BENCH" 198.18.0.1 --plugin fake -p $port --timeout 20 "$@" \
		>"$T/$name.c.out" 2>"$T/$name.c.err"
	CRC=$?
	wait "$SRV"
	SRC=$?
	SRV=
	if [ $CRC -ne 0 ] || [ $SRC -ne 0 ]; then
		tail -n +1 "$T/$name".*
		rn_fail "$name: client exit $CRC, server exit $SRC"
	fi
}
table() { sed -n '/^ *#bytes\|^ side /,/^---/p' "$1"; }

echo "== bw, options after the address, data checked"
pair bw "" -s 4K -n 37 -w 4 -c
cat "$T/bw.c.out"
grep -Eq "^ 4096 +37 " "$T/bw.c.out" || rn_fail "bw: no row for 4096 B x 37 (-s/-n after the address ignored?)"
[ -n "$(table "$T/bw.c.out")" ] && [ "$(table "$T/bw.c.out")" = "$(table "$T/bw.s.out")" ] ||
	rn_fail "bw: the server's table differs from the client's"
grep -q "bw_gbps\|^client,\|{" "$T/bw.c.out" && rn_fail "bw: machine lines in the human output"

echo "== bw --csv: the results alone on stdout"
pair csv "--csv" -a -n 3 --csv
cat "$T/csv.c.out"
[ "$(head -1 "$T/csv.c.out")" = "role,test,bytes,iters,bw_avg_gbps,msg_rate_mpps,window,nap_us,checked" ] ||
	rn_fail "csv: header"
[ "$(wc -l <"$T/csv.c.out")" -eq 16 ] || rn_fail "csv: want a header and 15 rows (4K..64M)"
grep -vq "^client,bw,[0-9]*,3,[0-9.]*,[0-9.]*,8,0,0$" <(tail -n +2 "$T/csv.c.out") &&
	rn_fail "csv: a row is not client,bw,bytes,3,gbps,mpps,8,0 (busy poll),0"
[ "$(tail -n +2 "$T/csv.s.out" | cut -d, -f2-)" = "$(tail -n +2 "$T/csv.c.out" | cut -d, -f2-)" ] ||
	rn_fail "csv: the server's rows differ from the client's"
grep -q "^ 65536 " "$T/csv.c.err" || rn_fail "csv: the table did not go to stderr"

echo "== bw --csv --cpu: each side's CPU time per message, two columns more"
pair cpu "--csv" -s 64M -n 3 --csv --cpu
cat "$T/cpu.c.out"
[ "$(head -1 "$T/cpu.c.out")" = "role,test,bytes,iters,bw_avg_gbps,msg_rate_mpps,window,nap_us,checked,cpu_send_us,cpu_recv_us" ] ||
	rn_fail "csv --cpu: header"
# 64 MiB a message (the fake plugin copies it on the receiving side): both sides' CPU shows
awk -F, '$1 == "client" && $3 == 67108864 && $10 > 0 && $11 > 0 {ok = 1} END {exit !ok}' \
	"$T/cpu.c.out" || rn_fail "csv --cpu: no CPU time per message on each side for 64 MiB"
grep -q "CPU\[usec/msg\] send recv" "$T/cpu.c.err" || rn_fail "--cpu: not in the table"

echo "== bw --pattern: NCCL's proxy loop by default, every slot each pass on request"
# the server receives: its plugin writes R for an irecv, T for a test of one, in order
for p in nccl each; do
	export FAKE_NET_TRACE=$T/trace.$p
	if [ $p = nccl ]; then pair "p$p" "" -s 4K -n 20 -w 8 -c --json; else pair "p$p" "" -s 4K -n 20 -w 8 -c --pattern each --json; fi
	unset FAKE_NET_TRACE
	echo "$p: $(head -c 40 "$T/trace.$p")..."
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; sys.exit(r["pattern"] != sys.argv[2])' \
		"$T/p$p.c.out" $p || rn_fail "--pattern $p: not in the JSON row"
	grep -q "window 8, pattern $p, data checked" "$T/p$p.s.out" "$T/p$p.s.err" ||
		rn_fail "--pattern $p: the server did not take it from the client"
done
# NCCL's receive proxy posts a request a pass and tests only when a pass posted none: all 8
# receives reach the plugin before the first test. Each pass over every slot: R then T.
[ "$(head -c 9 "$T/trace.nccl")" = RRRRRRRRT ] || rn_fail "--pattern nccl: receives not posted ahead of the tests"
[ "$(head -c 2 "$T/trace.each")" = RT ] || rn_fail "--pattern each: the first receive not tested in its pass"
# and both loops post every message once: warm-up (8) + 20
[ "$(tr -cd R <"$T/trace.nccl" | wc -c)" -eq 28 ] && [ "$(tr -cd R <"$T/trace.each" | wc -c)" -eq 28 ] ||
	rn_fail "--pattern: want 28 irecv calls each (8 warm-up + 20)"
ip netns exec "$N" "$BENCH" --pattern sometimes >/dev/null 2>"$T/pbad.err" && rn_fail "--pattern sometimes accepted"
grep -q "bad value 'sometimes' for --pattern (nccl or each)" "$T/pbad.err" || rn_fail "--pattern: no clear error"

echo "== lat --json, napping on request"
pair lat "" -t lat -n 200 -c --nap-us 5 --json
cat "$T/lat.c.out"
python3 - "$T/lat.c.out" <<'EOF' || rn_fail "lat --json: not the results document"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "nccl-net-bench/1" and d["role"] == "client" and d["test"] == "lat", d
assert d["exit"] == 0 and "error" not in d, d
r, = d["results"]
assert r["bytes"] == 8 and r["iters"] == 200 and r["nap_us"] == 5 and r["checked"], r
assert 0 < r["t_min_us"] <= r["t_typical_us"] <= r["t_max_us"], r
EOF
grep -Eq "^ 8 +200 " "$T/lat.s.out" || rn_fail "lat: the server prints no table"

echo "== conn: 16 connections, timed on both sides"
pair conn "--json" -t conn -n 16
cat "$T/conn.c.out"
grep -Eq "^ connect +16 " "$T/conn.c.out" && grep -Eq "^ accept +16 " "$T/conn.c.out" ||
	rn_fail "conn: the client's table lacks a side"
[ "$(table "$T/conn.c.out")" = "$(table "$T/conn.s.err")" ] || rn_fail "conn: the tables differ"
python3 - "$T/conn.s.out" <<'EOF' || rn_fail "conn --json on the server"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["role"] == "server" and d["test"] == "conn" and d["route_check"] == "strict", d
sides = {r["side"]: r for r in d["results"]}
assert set(sides) == {"connect", "accept"}, d
for r in sides.values():
    assert r["conns"] == 16 and 0 <= r["t_min_ms"] <= r["t_p50_ms"] <= r["t_max_ms"], r
    assert r["total_ms"] >= r["t_avg_ms"], r
EOF
echo "conn: $(grep -m1 'each on average' "$T/conn.c.out")"

echo "== --plugin PATH (any .so, as NCCL loads it), a plugin logging malformed formats"
port=$((port + 1))
ip netns exec "$N" env FAKE_NET_BAD_LOG=1 "$BENCH" --plugin "$T/libnccl-net-fake.so" -p $port \
	--timeout 20 >"$T/path.s.out" 2>"$T/path.s.err" &
SRV=$!
ip netns exec "$N" env FAKE_NET_BAD_LOG=1 "$BENCH" 198.18.0.1 --plugin "$T/libnccl-net-fake.so" \
	-p $port --timeout 20 -t lat -n 50 --json >"$T/path.c.out" 2>"$T/path.c.err"
CRC=$?
wait "$SRV"
SRC=$?
SRV=
[ $CRC -eq 0 ] && [ $SRC -eq 0 ] || { tail -n +1 "$T"/path.*; rn_fail "path: client $CRC, server $SRC"; }
grep -q "plugin Fake (v12)" "$T/path.c.err" || rn_fail "path: the plugin was not loaded by its path"
grep -q "fake: bad pointer (bad pointer)" "$T/path.c.err" || rn_fail "path: the malformed WARN is lost"
grep -Eq "^nccl-net-bench: init [0-9.]+ ms \(1 devices\)" "$T/path.s.out" ||
	rn_fail "path: the server prints no init time"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["init_ms"] >= 0 and d["exit"] == 0, d' \
	"$T/path.c.out" || rn_fail "path --json: no init_ms"
echo "path: $(grep -m1 "init " "$T/path.s.out")"

echo "== the client dies: the server fails, never waits forever"
port=$((port + 1))
ip netns exec "$N" "$BENCH" --plugin fake -p $port --timeout 5 --json >"$T/dead.s.out" 2>"$T/dead.s.err" &
SRV=$!
sleep 0.3
ip netns exec "$N" bash -c "printf 'junk' >/dev/tcp/198.18.0.1/$port"
wait "$SRV"
SRC=$?
SRV=
[ $SRC -eq 1 ] || rn_fail "server after a bad client: exit $SRC, want 1"
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["error"]; assert e["code"] == 1 and "settings" in e["message"], e' \
	"$T/dead.s.out" || rn_fail "server --json: no error object naming the bad settings"
echo PASS
