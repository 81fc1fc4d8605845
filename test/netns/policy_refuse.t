#!/usr/bin/env bash
# roce-policy-routing refuses (exit 2, clear message, nothing changed) when it cannot tell a
# NIC's IPv4, a gateway that --gateway asked for, is given bad input (unknown or stray
# options anywhere, lo), or runs as non-root without --dry-run; exit 1 on a failed apply.
# --version names the release (the Makefile's VERSION when it has one).
. "$(dirname "$0")/policy_lib.sh"
rn_host_ns 3 1
H=$RN_HOST
ip -n "$H" addr flush dev nic2
rn_snapshot "$H" >"$T/before"
mkdir "$T/emptyroot" "$T/nosysfs"

n=0
expect() { # rc pattern args...
	local want=$1 pat=$2 rc
	shift 2
	n=$((n + 1))
	rn_in "$H" "$TOOL" --state-dir "$T/state" "$@" >"$T/out" 2>&1
	rc=$?
	[ "$rc" = "$want" ] || { cat "$T/out"; rn_fail "'$*': exit $rc, want $want"; }
	grep -q -- "$pat" "$T/out" || { cat "$T/out"; rn_fail "'$*': message lacks '$pat'"; }
	rn_snapshot "$H" >"$T/now"
	rn_assert_same "$T/before" "$T/now" "'$*' changed the configuration"
	[ ! -e "$T/state" ] || [ -z "$(ls -A "$T/state")" ] || rn_fail "'$*' recorded state"
	echo "ok: '$*' -> exit $rc: $(grep -m1 -- "$pat" "$T/out")"
}

expect 2 'nic2: has no IPv4 address' nic0 nic1 nic2
expect 2 'nic2: has no IPv4 address' --dry-run nic2
expect 2 'no gateway known' --gateway nic0
expect 2 'is not in 198.18.0.0/24' --gateway=198.19.0.1 nic0
expect 2 'is not in 198.18.0.0/24' --gateway=nic1=198.19.255.1 nic0 nic1
expect 2 'no such network device' nic0 nosuch9
expect 2 'unknown option' --bogus nic0
expect 2 'has no IPv4 address 198.18.0.99' --ip nic0=198.18.0.99 nic0
expect 2 'not being configured' --ip nic1=198.18.0.12 nic0
expect 2 'management NIC' nic0 mgmt0
expect 2 'named twice' nic0 nic0
ip -n "$H" link set nic1 down
rn_snapshot "$H" >"$T/before"
expect 2 'nic1: is down' nic0 nic1
ip -n "$H" link set nic1 up
rn_snapshot "$H" >"$T/before"
expect 2 'prio-base' --prio-base 40000 nic0
expect 2 'cannot tell which network manager' --persist --root "$T/emptyroot" nic0
ROCE_POLICY_ROUTING_SYSFS=$T/nosysfs expect 2 'no RoCE netdev found'
expect 1 'cannot create state dir' --state-dir /proc/rn-no-such-dir nic0
expect 2 'loopback device' nic0 lo
expect 2 'takes no value' --dry-run=yes nic0
expect 2 'needs a value' nic0 --family
expect 2 'unknown option' nic0 --bogus-after
expect 2 '--undo takes no NETDEV' --undo nic0
if command -v setpriv >/dev/null; then # not root: refused before looking any further
	n=$((n + 1))
	rn_in "$H" setpriv --reuid=65534 --regid=65534 --clear-groups "$TOOL" --state-dir "$T/state" nic0 >"$T/out" 2>&1
	rc=$?
	[ $rc = 2 ] && grep -q 'must run as root.*--dry-run works without root' "$T/out" ||
		{ cat "$T/out"; rn_fail "non-root: exit $rc"; }
	rn_snapshot "$H" >"$T/now"
	rn_assert_same "$T/before" "$T/now" "non-root run changed the configuration"
	echo "ok: as nobody -> exit 2: $(cat "$T/out")"
fi
rn_in "$H" "$TOOL" --version >"$T/out" 2>&1 || rn_fail "--version failed"
ver=$(sed -n 's/^VERSION[[:space:]]*[:?]*=[[:space:]]*//p' "$RN_TOP/Makefile" | head -n1)
[ "$(cat "$T/out")" = "roce-policy-routing ${ver:-0.3.0}" ] || rn_fail "--version says '$(cat "$T/out")', want roce-policy-routing ${ver:-0.3.0}"
rn_in "$H" "$TOOL" --help >"$T/out" 2>&1 || rn_fail "--help failed"
grep -q '^Usage: roce-policy-routing \[options\] \[NETDEV...\]' "$T/out" || rn_fail "--help has no usage line"
# every option --help lists is in the man page, which renders
man=$RN_TOP/man/roce-policy-routing.8
for o in $(grep -o -- '--[a-z][a-z-]*' "$T/out" | sort -u); do
	grep -qF -- "${o//-/\\-}" "$man" || rn_fail "man page lacks $o"
done
if command -v man >/dev/null; then
	MANWIDTH=80 man -l "$man" >"$T/man.txt" 2>"$T/man.err" || { cat "$T/man.err"; rn_fail "man -l fails"; }
	grep -q 'EXIT STATUS' "$T/man.txt" || rn_fail "man page renders without EXIT STATUS"
fi
echo "PASS ($n cases)"
