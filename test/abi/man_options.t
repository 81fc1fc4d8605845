#!/usr/bin/env bash
# The man pages cannot drift from the tools: every long option a tool's --help lists
# appears in its man page, every option the man page documents (.TP headers) exists in
# --help, and each page documents the exit codes 0..3 and the JSON error object where the
# tool has --json. roce-doctor(8)'s FLEET SWEEP section is roce-doctor-mpi's (checked
# against its --help where Open MPI built it), the rest of the page roce-doctor's.
set -u
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; exit 1; }
# part WHICH PAGE: the page ("all"), its FLEET SWEEP section ("sweep") or all but it ("rest")
part() {
	awk -v which="$1" '/^\.SH / { s = ($0 == ".SH FLEET SWEEP") }
		which == "all" || (which == "sweep" && s) || (which == "rest" && !s)' "$2"
}
pages="nccl-net-driver:man/nccl-net-driver.1:all nccl-net-bench:man/nccl-net-bench.1:all
	roce-doctor:man/roce-doctor.8:rest"
if [ -x build/roce-doctor-mpi ]; then
	pages="$pages roce-doctor-mpi:man/roce-doctor.8:sweep"
else
	echo "note: build/roce-doctor-mpi not built (no Open MPI): its man section is not checked"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 # its --help, as root too
for entry in $pages; do
	tool=${entry%%:*} page=${entry#*:} which=${entry##*:}
	page=${page%:*}
	[ -x "build/$tool" ] || fail "build/$tool missing: run make first"
	[ -f "$page" ] || fail "$page missing"
	help=$("build/$tool" --help) || fail "$tool --help: exit $?"
	# roff source with its escapes undone: \- is -, \fB...\fR fonts dropped
	text=$(part "$which" "$page" | sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g')
	opts=$(grep -o -- '--[a-z][a-z0-9-]*' <<<"$help" | sort -u)
	[ -n "$opts" ] || fail "$tool --help lists no long option"
	for o in $opts; do
		grep -q -- "$o\b" <<<"$text" || fail "$page does not document $o (in $tool --help)"
	done
	# the options the page describes, i.e. the first line after each .TP
	documented=$(part "$which" "$page" | awk '/^\.TP/ {getline; print}' | sed -e 's/\\-/-/g' |
		grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
	for o in $documented; do
		grep -q -- "$o\b" <<<"$help" || fail "$page documents $o, which $tool --help does not list"
	done
	if [ "$which" = sweep ]; then
		# its exit status is said in the section; the page's table is roce-doctor's
		echo "ok: $page FLEET SWEEP documents the $(wc -w <<<"$opts") long options of $tool --help"
		continue
	fi
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
