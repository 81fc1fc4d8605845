#!/usr/bin/env bash
# nccl-net-bench's command line, without the bed (no network, no device needed): bad arguments
# are exit 2 with a line saying what is wrong; --help documents the options and exit codes.
set -u
# shellcheck source=lib/test.sh
. "$(dirname "$0")/lib/test.sh"
cd "$RN_TOP" || exit 1
b=build/nccl-net-bench
[ -x "$b" ] || rn_skip "skip: build/nccl-net-bench not built (run make)"
rn_tmpdir T
out=$T/out
fail() { echo "--- output:"; cat "$out"; rn_fail "$*"; }

bad() { # expected-text args...
	local want=$1 rc
	shift
	"$b" "$@" >"$out" 2>&1
	rc=$?
	[ $rc -eq 2 ] || fail "'$*': exit $rc, want 2"
	grep -q -- "$want" "$out" || fail "'$*': no '$want' in the message"
	rn_log "ok: '$*' -> exit 2, $want"
}
bad "bad value 'foo' for -t" -t foo
bad "bad value '33' for -w" -w 33
bad "bad value '0' for -w" -w 0
bad "bad value '70000' for -p" -p 70000
bad "bad value 'x' for -n" -n x
bad "bad value '1Q' for -s" -s 1Q
bad "bad value '-1' for --nap-us" --nap-us -1
bad "-a goes with -t bw only" -a -t lat
bad "unexpected argument 'b'" a b
bad "unknown option '--no-such-option'; try 'nccl-net-bench --help'" --no-such-option
bad "unknown option '--no-such-option'" 198.18.0.1 --no-such-option
bad "-t conn moves no data to measure" -t conn -s 4K
bad "bad value '0' for --timeout" --timeout 0
"$b" --help >"$out" 2>&1 || fail "--help: exit $?"
for w in -d -s -a -n -p "-t, --test bw|lat|conn" -w --check --nap-us --plugin --json --csv --version "Exit status: 0 ok" "3 no usable RDMA/RoCE device"; do
	grep -q -- "$w" "$out" || fail "--help does not mention $w"
done
rn_log "ok: --help documents the options and exit codes"
