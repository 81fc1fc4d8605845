#!/usr/bin/env bash
# The command-line convention shared by roce-doctor, nccl-net-driver and nccl-net-bench
# (include/rn_cli.h), without a network or a device: --version and --help exit 0 on stdout;
# an unknown option, a missing value or a trailing word, before or after the command, is
# exit 2 with one line ending "try '<tool> --help'"; bad values are exit 2 before any work
# (the plugin named is one that does not exist: had the tool started, it would fail with 1);
# --json failures print a JSON error object that parses; a bench server without a device
# exits 3 at once instead of waiting for a client.
set -u
cd "$(dirname "$0")/../.."
for t in roce-doctor nccl-net-driver nccl-net-bench libnccl-net-roce.so; do
	[ -e "build/$t" ] || { echo "FAIL: build/$t missing: run make first"; exit 1; }
done
command -v python3 >/dev/null || { echo "skip: python3 (JSON checks) not installed"; exit 77; }
tmp=$(mktemp -d /tmp/rn-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/out "$tmp"/err; do echo "--- $f"; cat "$f"; done; exit 1; }
# No RDMA device is selected, even on a host that has some.
export NCCL_IB_HCA='=rn-no-such-device'
unset NCCL_NET_PLUGIN

run() { # tool args... -> $rc, $tmp/out, $tmp/err (bounded: nothing here may wait)
	local tool=$1
	shift
	timeout 20 "build/$tool" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

usage_error() { # tool want-text args...
	local tool=$1 want=$2
	shift 2
	run "$tool" "$@"
	[ $rc -eq 2 ] || fail "$tool $*: exit $rc, want 2"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$tool $*: want one line on stderr"
	grep -q -- "$want" "$tmp/err" || fail "$tool $*: no '$want' in the message"
	grep -q "; try '$tool --help'$" "$tmp/err" || fail "$tool $*: no \"try '$tool --help'\""
	echo "ok: $tool $* -> 2: $(cat "$tmp/err")"
}

json_error() { # code file: the file holds {"error": {"code": code, "message": ...}}
	python3 - "$1" "$2" <<'EOF' || fail "not a JSON error object with code $1: $(cat "$2")"
import json, sys
d = json.load(open(sys.argv[2]))
e = d["error"]
assert e["code"] == int(sys.argv[1]), e
assert e["kind"] in ("usage", "system", "failure", "no-device"), e
assert isinstance(e["message"], str) and e["message"], e
EOF
}

for tool in roce-doctor nccl-net-driver nccl-net-bench; do
	run "$tool" --version
	[ $rc -eq 0 ] && grep -Eq "^$tool [0-9]+\.[0-9]+\.[0-9]+" "$tmp/out" && [ ! -s "$tmp/err" ] ||
		fail "$tool --version: exit $rc"
	run "$tool" --help
	[ $rc -eq 0 ] && grep -q "^Exit status: 0 " "$tmp/out" && [ ! -s "$tmp/err" ] ||
		fail "$tool --help: exit $rc, or not on stdout, or no exit-code table"
	grep -q "3 no usable RDMA/RoCE device\|3 no RDMA device" "$tmp/out" ||
		fail "$tool --help: the no-device exit code is not documented"
	usage_error "$tool" "unknown option '--no-such-option'" --no-such-option
done

# Trailing words and late options, for each tool.
usage_error nccl-net-driver "unexpected argument 'extra'" probe extra junk
usage_error nccl-net-driver "unexpected argument 'extra'" --plugin rn-no-such-plugin loopback extra
usage_error nccl-net-driver "unknown option '--bogus'" server unix:/nonexistent --bogus
usage_error nccl-net-bench "unexpected argument 'junk'" 198.18.0.1 junk
usage_error nccl-net-bench "unknown option '--bogus'" 198.18.0.1 --bogus
usage_error roce-doctor "unexpected argument 'junk'" host junk
usage_error roce-doctor "unexpected argument 'extra'" peer 198.18.0.254 extra
usage_error roce-doctor "unknown option '--bogus'" peer 198.18.0.254 --bogus

# Bad values: exit 2 before any work. A plugin that does not exist would make any work
# fail with 1; a server or client would wait.
P=(--plugin rn-no-such-plugin)
for v in 1Q 0 -1 4x 2G ""; do
	usage_error nccl-net-driver "bad value '$v' for --size" "${P[@]}" server 198.18.0.1:1 --size "$v"
done
for v in 0 -3 garbage 7x ""; do
	usage_error nccl-net-driver "bad value '$v' for --iters" "${P[@]}" server 198.18.0.1:1 --iters "$v"
	usage_error nccl-net-bench "bad value '$v' for -n" "${P[@]}" -n "$v"
done
usage_error nccl-net-driver "bad value '33' for --window" "${P[@]}" --window 33
usage_error nccl-net-driver "bad value '13' for --max-version" "${P[@]}" --max-version 13
usage_error nccl-net-driver "bad value '0' for --timeout-ms" "${P[@]}" --timeout-ms 0
usage_error nccl-net-driver "bad value '1,,2' for --sizes" "${P[@]}" --sizes 1,,2
usage_error nccl-net-driver "bad address '198.18.0.1'" "${P[@]}" client 198.18.0.1
usage_error nccl-net-driver "bad address '198.18.0.1:70000'" "${P[@]}" client 198.18.0.1:70000
usage_error nccl-net-driver "bad address '300.1.1.1:80'" "${P[@]}" server 300.1.1.1:80
usage_error nccl-net-driver "server needs ADDR:PORT" "${P[@]}" server
usage_error nccl-net-driver "option '--iters' needs a value" "${P[@]}" probe --iters
usage_error nccl-net-bench "bad value '1Q' for -s" "${P[@]}" -s 1Q
usage_error nccl-net-bench "bad value '70000' for -p" "${P[@]}" -p 70000
usage_error nccl-net-bench "bad value 'x' for --timeout" "${P[@]}" --timeout x
usage_error nccl-net-bench "bad value 'rdma' for -t" "${P[@]}" -t rdma
usage_error nccl-net-bench "bad server address '300.1.1.1'" "${P[@]}" 300.1.1.1
usage_error nccl-net-bench "at most 1024 connections" "${P[@]}" -t conn -n 1025
usage_error roce-doctor "'x' is not a number" peer 198.18.0.254 --timeout x
usage_error roce-doctor "'0' is not a number" serve --port 0
usage_error roce-doctor "peer needs the other host's address" peer

# --json: every failure is a JSON error object on stdout.
run nccl-net-bench --json -n 0
[ $rc -eq 2 ] || fail "bench --json -n 0: exit $rc"
json_error 2 "$tmp/out"
run roce-doctor peer 198.18.0.254 extra --json
[ $rc -eq 2 ] || fail "doctor peer extra --json: exit $rc"
json_error 2 "$tmp/out"
run roce-doctor --json --netdev rnnodev0
[ $rc -eq 2 ] || fail "doctor --netdev rnnodev0: exit $rc"
json_error 2 "$tmp/out"
grep -q "no netdev 'rnnodev0'" "$tmp/out" || fail "the JSON error does not say why"

# No device: 3 in every tool. The bench server says so at once instead of waiting for a
# client (timeout's 124 would show a wait), and never starts waiting.
run nccl-net-bench --plugin "$PWD/build/libnccl-net-roce.so" -p 18599
[ $rc -eq 3 ] || fail "bench server without a device: exit $rc, want 3 (124: it waited)"
grep -q "waiting for a client" "$tmp/out" && fail "bench server waited for a client without a device"
grep -q "no RoCE device" "$tmp/out" || fail "bench server: no reason given"
run nccl-net-bench --plugin "$PWD/build/libnccl-net-roce.so" -p 18599 --json
[ $rc -eq 3 ] || fail "bench server --json without a device: exit $rc"
json_error 3 "$tmp/out"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["results"] == [] and d["exit"] == 3' \
	"$tmp/out" || fail "bench --json: not the results document"
grep -q "no RoCE device" "$tmp/err" || fail "bench --json: the human lines did not go to stderr"
# the client too checks its device before it looks for a server
run nccl-net-bench --plugin "$PWD/build/libnccl-net-roce.so" -p 18599 198.18.0.1
[ $rc -eq 3 ] || fail "bench client without a device: exit $rc, want 3"
grep -q "no server" "$tmp/out" && fail "bench client looked for a server without a device"
run nccl-net-driver --plugin "$PWD/build/libnccl-net-roce.so" loopback
[ $rc -eq 3 ] || fail "driver loopback without a device: exit $rc, want 3"
if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
	run roce-doctor
	[ $rc -eq 3 ] || fail "doctor without an RDMA device: exit $rc, want 3"
	run roce-doctor --json
	[ $rc -eq 3 ] || fail "doctor --json without an RDMA device: exit $rc, want 3"
	json_error 3 "$tmp/out"
	python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["summary"]["exit"] == 3' \
		"$tmp/out" || fail "doctor --json: summary.exit is not 3"
else
	echo "note: this host has RDMA devices; the doctor's no-device case is left to the netns layer"
fi
echo ok
