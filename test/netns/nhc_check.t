#!/usr/bin/env bash
# scripts/roce.nhc, the LBNL NHC check, sourced into a bash where only NHC's documented
# helpers for checks are defined (die RET MSG, log MSG, dbg MSG: NHC's README, "Writing
# Checks"; NHC itself is not in Debian, and was tried by hand, see README), as NHC's
# driver sources every scripts/*.nhc and then runs `check_roce_doctor ARGS` from a
# nhc.conf line. Over real netns hosts with 2 NICs in one subnet:
#   bad host (kernel defaults): the check returns 1 and dies once, with the doctor's causes
#     and the fix, exactly the line `roce-doctor health` prints, without its "roce: " mark
#   the same host after scripts/roce-policy-routing: returns 0, no die, a dbg line
#   a NIC that is not there: dies saying the doctor could not check (exit 2) and why
#   ROCE_DOCTOR pointing nowhere: dies saying the doctor is not found
# The doctor never drains (--no-drain: NHC marks the node itself): no scontrol is on PATH.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
NHC_FILE=$RN_TOP/scripts/roce.nhc

# nhc NS ARGS...: check_roce_doctor ARGS in NS, in a clean bash with NHC's helpers only;
# prints "rc=N", then "die RET MSG" / "dbg MSG" / "log MSG" lines as the helpers are called
nhc() {
	local ns=$1
	shift
	# shellcheck disable=SC2016 # the inner bash expands them
	ip netns exec "$ns" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ROCE_DOCTOR="${ROCE_DOCTOR:-$DOCTOR}" \
		bash --norc --noprofile -c '
die() { local ret=$1; shift; echo "die $ret $*"; return 0; }
log() { echo "log $*"; }
dbg() { echo "dbg $*"; }
. "$1"
shift
check_roce_doctor "$@"
echo "rc=$?"' nhc "$NHC_FILE" "$@"
}

rn_host_ns 2
H=$RN_HOST
# what the doctor's own health line says on this host, for comparison
want=$(ip netns exec "$H" "$DOCTOR" health --no-drain --netdev nic0,nic1)
[ $? -eq 1 ] || rn_fail "roce-doctor health on the bad host: not exit 1"
want=${want#ERROR: roce-doctor: Health check failed: roce: }
echo "doctor: $want"
out=$(nhc "$H" --netdev nic0,nic1)
echo "$out"
[ "$(tail -n1 <<<"$out")" = rc=1 ] || rn_fail "bad host: the check did not return 1"
[ "$(grep -c '^die ' <<<"$out")" = 1 ] || rn_fail "bad host: not exactly one die"
grep -qxF "die 1 check_roce_doctor:  $want" <<<"$out" || rn_fail "bad host: die is not the doctor's cause line"
grep -q '^die 1 check_roce_doctor:  arp-flux nic0,nic1; .*fix: roce-policy-routing' <<<"$out" ||
	rn_fail "bad host: the cause (arp-flux) or the fix not named"

rn_in "$H" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/state" nic0 nic1 >/dev/null ||
	rn_fail "roce-policy-routing failed"
out=$(nhc "$H" --netdev nic0,nic1)
echo "$out"
[ "$(tail -n1 <<<"$out")" = rc=0 ] || rn_fail "fixed host: the check did not return 0"
grep -q '^die ' <<<"$out" && rn_fail "fixed host: died"
grep -q '^dbg check_roce_doctor: .*ok' <<<"$out" || rn_fail "fixed host: no dbg line"

out=$(nhc "$H" --netdev nic0,nosuch)
echo "$out"
[ "$(tail -n1 <<<"$out")" = rc=1 ] || rn_fail "missing NIC: the check did not return 1"
grep -qx "die 1 check_roce_doctor:  $DOCTOR could not check the RoCE NICs (exit 2): cannot read this hosts facts (--netdev: no netdev nosuch on this host)" <<<"$out" ||
	rn_fail "missing NIC: die does not say the doctor could not check, and why"

out=$(ROCE_DOCTOR=$T/no-such-doctor nhc "$H")
echo "$out"
[ "$(tail -n1 <<<"$out")" = rc=1 ] || rn_fail "no doctor: the check did not return 1"
grep -qx "die 1 check_roce_doctor:  $T/no-such-doctor not found or not executable .*" <<<"$out" ||
	rn_fail "no doctor: die does not say so"
echo "PASS"
