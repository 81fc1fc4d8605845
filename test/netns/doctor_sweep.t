#!/usr/bin/env bash
# roce-doctor-mpi under a local mpirun (no VM: the ranks share this host and check lo, so
# every host is "refused": no-gid): the JSON report validates and checks every host pair
# (exit 1), the SVG renders; a rank that hangs before its host check or during the rounds
# (RN_SWEEP_TEST_HANG) is named, the others' results are printed and the job ends with
# exit 2 within a few pair timeouts instead of hanging; bad arguments exit 2.
. "$(dirname "$0")/lib.sh"
SWEEP=$RN_TOP/build/roce-doctor-mpi
[ -x "$SWEEP" ] || rn_skip "build/roce-doctor-mpi not built (Open MPI's libopenmpi-dev missing)"
command -v mpirun >/dev/null || rn_skip "mpirun (openmpi-bin) not installed"
command -v python3 >/dev/null || rn_skip "python3 not installed"
rn_tmpdir T
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 \
	OMPI_MCA_btl=self,vader,tcp OMPI_MCA_rmaps_base_oversubscribe=1

run() { # np args...: status in RC, output in $T/out, elapsed seconds in SECS
	local np=$1 t0
	shift
	t0=$(date +%s)
	timeout -k 5 60 mpirun -x RN_SWEEP_TEST_HANG -np "$np" "$SWEEP" "$@" >"$T/out" 2>&1
	RC=$?
	SECS=$(($(date +%s) - t0))
}

export RN_SWEEP_TEST_HANG=
run 3 --netdev lo --no-rdma --json-file "$T/r.json" --svg "$T/r.svg"
cat "$T/out"
[ $RC -eq 1 ] || rn_fail "3 ranks on lo: exit $RC, want 1"
python3 - "$T/r.json" <<'PY' || rn_fail "JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['schema'] == 'roce-doctor-sweep/1', d['schema']
s = d['summary']
assert (s['hosts'], s['rounds'], s['host_pairs'], s['host_pairs_checked'], s['exit']) == (3, 3, 3, 3, 1), s
assert d['missing'] == [] and d['bad_pairs'] == [], d
assert [n['findings'][0]['cause'] for h in d['hosts'] for n in h['nics']] == ['no-gid'] * 3
PY
grep -q '<svg' "$T/r.svg" || rn_fail "no SVG"
if command -v rsvg-convert >/dev/null; then
	rsvg-convert -o "$T/r.png" "$T/r.svg" || rn_fail "the SVG does not render"
fi
grep -q '^heat map' "$T/out" || rn_fail "no heat map"

RN_SWEEP_TEST_HANG=2:facts run 4 --netdev lo --no-rdma --pair-timeout 2
cat "$T/out"
[ $RC -eq 2 ] || rn_fail "hang before the facts: exit $RC, want 2"
grep -q '(rank 2) did not finish its host check' "$T/out" || rn_fail "the hung rank is not named"
grep -q 'missing .*no facts' "$T/out" || rn_fail "the summary does not mark it missing"
echo "hang before the facts: named, exit 2 after $SECS s"

RN_SWEEP_TEST_HANG=1:rounds run 4 --netdev lo --no-rdma --pair-timeout 2
cat "$T/out"
[ $RC -eq 2 ] || rn_fail "hang in the rounds: exit $RC, want 2"
grep -q 'hung .*no results' "$T/out" || rn_fail "the hung rank is not marked hung"
[ "$(grep -c '^[^ ]* *problem ' "$T/out")" -eq 3 ] || rn_fail "the other three hosts' results are missing"
grep -q 'did not answer in round' "$T/out" || rn_fail "no pair names the timeout"
# Only the hung rank's own pairs are lost: rounds are aligned, so no one else waits.
grep -q '3 of 6 host pairs checked' "$T/out" || rn_fail "pairs without the hung rank were lost too"
echo "hang in the rounds: named, the others reported, exit 2 after $SECS s"

run 2 --pair-timeout 0
[ $RC -eq 2 ] || rn_fail "--pair-timeout 0: exit $RC, want 2"
grep -q 'pair-timeout' "$T/out" || rn_fail "--pair-timeout 0: no message"
run 2 --bogus
[ $RC -eq 2 ] || rn_fail "--bogus: exit $RC, want 2"
echo PASS
