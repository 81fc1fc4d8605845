#!/usr/bin/env bash
# scripts/roce-health-check finds its roce-doctor wherever it is run from: from a checkout
# (scripts/) the one `make` built (build/roce-doctor: it exited 127 there, exec's "not
# found", as it looked only beside itself and on its reset PATH); with no doctor anywhere,
# or a configured one that is not there, it prints NHC's ERROR line naming that and exits 2
# (the check could not run). --no-drain --netdev lo: a check that needs no Slurm and finds
# a problem (lo has no RoCE GID), so the doctor's own exit 1 and line come through.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail() { echo "FAIL: $*"; exit 1; }
[ -x build/roce-doctor ] || fail "build/roce-doctor missing: run make first"
tmp=$(mktemp -d /tmp/rn-health.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
printf 'ROCE_HEALTH_ARGS="--no-drain --netdev lo"\n' >"$tmp/conf"

# run WANT_RC WANT_LINE CMD...: CMD's exit status and first line of stdout
run() {
	local want=$1 line=$2
	shift 2
	out=$(ROCE_HEALTH_CONF=$tmp/conf "$@" 2>"$tmp/err")
	rc=$?
	echo "$* -> $rc: $out"
	[ $rc -eq "$want" ] || { cat "$tmp/err"; fail "$*: exit $rc, want $want"; }
	[[ "$out" == "$line"* ]] || fail "$*: printed '$out', want '$line...'"
}
run 1 "ERROR: roce-doctor: Health check failed: roce: no-gid lo" scripts/roce-health-check
# from elsewhere, by its path: the checkout's doctor all the same
(cd / && run 1 "ERROR: roce-doctor: Health check failed: roce: no-gid lo" \
	"$OLDPWD/scripts/roce-health-check") || exit 1
# alone (no doctor beside it, no build/, none on the system's PATH)
if ! PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v roce-doctor >/dev/null; then
	mkdir "$tmp/sbin"
	cp scripts/roce-health-check "$tmp/sbin/"
	run 2 "ERROR: roce-doctor: Health check failed: roce-doctor not found" "$tmp/sbin/roce-health-check"
else
	echo "note: a roce-doctor is installed on this machine: the lone script's case not run"
fi
# a configured doctor that is not there
echo "ROCE_DOCTOR=$tmp/no-such-doctor" >>"$tmp/conf"
run 2 "ERROR: roce-doctor: Health check failed: roce-doctor not found ($tmp/no-such-doctor)" \
	scripts/roce-health-check
echo ok
