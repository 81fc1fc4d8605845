#!/usr/bin/env bash
# The man pages cannot drift from the tools: every long option a tool's --help lists
# appears in its man page, every option the man page documents (.TP headers) exists in
# --help, and each page documents the exit codes 0..3 and the JSON error object where the
# tool has --json.
set -u
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; exit 1; }
for pair in nccl-net-driver:man/nccl-net-driver.1 nccl-net-bench:man/nccl-net-bench.1 \
	roce-doctor:man/roce-doctor.8; do
	tool=${pair%%:*} page=${pair#*:}
	[ -x "build/$tool" ] || fail "build/$tool missing: run make first"
	[ -f "$page" ] || fail "$page missing"
	help=$("build/$tool" --help) || fail "$tool --help: exit $?"
	# roff source with its escapes undone: \- is -, \fB...\fR fonts dropped
	text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$page")
	opts=$(grep -o -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u)
	[ -n "$opts" ] || fail "$tool --help lists no long option"
	for o in $opts; do
		grep -q -- "$o\b" <<<"$text" || fail "$page does not document $o (in $tool --help)"
	done
	# the options the page describes, i.e. the first line after each .TP
	documented=$(awk '/^\.TP/ {getline; print}' "$page" | sed -e 's/\\-/-/g' |
		grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
	for o in $documented; do
		grep -q -- "$o\b" <<<"$help" || fail "$page documents $o, which $tool --help does not list"
	done
	for code in 0 1 2 3; do
		awk '/^\.SH EXIT STATUS/ {s = 1; next} /^\.SH/ {s = 0} s' "$page" | grep -qx "\.B $code" ||
			fail "$page: exit status $code not documented"
	done
	if grep -q -- '--json' <<<"$help"; then
		grep -q '^\.SH JSON ERROR OBJECT' "$page" || fail "$page: no JSON ERROR OBJECT section"
	fi
	echo "ok: $page documents the $(wc -w <<<"$opts") long options of $tool --help"
done
echo ok
