#!/usr/bin/env bash
# The fleet sweep (roce-doctor-mpi) launched by srun on a real one-node Slurm
# (test/netns/slurm_lib.sh) instead of mpirun: Debian's Slurm offers PMIx (srun --mpi=list),
# Debian's Open MPI 4.1 talks to it, so `srun --mpi=pmix -n 3` runs three ranks, each
# checking the netns host's nic0, nic1 (one subnet, kernel defaults): every host pair is
# checked, every NIC refused with arp-flux, the JSON report as under mpirun, and srun exits
# with the sweep's status (1). PMI-2: Debian's Open MPI is built without Slurm's PMI-2
# library, so srun --mpi=pmi2 cannot start it; the test says so (and passes either way).
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
SWEEP=$RN_TOP/build/roce-doctor-mpi
[ -x "$SWEEP" ] || rn_skip "skip: build/roce-doctor-mpi not built (Open MPI's libopenmpi-dev missing)"
rn_require_netns
rn_slurm_require
command -v srun >/dev/null || rn_skip "skip: srun not installed (slurm-client)"
rn_tmpdir T
rn_host_ns 2
H=$RN_HOST
NODE=rn-node-$$
rn_slurm_init "$H" "$NODE"
rn_slurm_start ""
rn_slurm_wait "$NODE" State '^IDLE$' "node up"
S=(nsenter --net="/run/netns/$H")
"${S[@]}" srun --mpi=list >"$T/mpi" 2>&1 || { cat "$T/mpi"; rn_fail "srun --mpi=list"; }
cat "$T/mpi"
grep -qx '[[:space:]]*pmix' "$T/mpi" || rn_skip "skip: this Slurm has no PMIx plugin (srun --mpi=list)"
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp

# 3 ranks on the node (-O: one CPU configured), each in the host's namespace for its NICs
t0=$(date +%s.%N)
"${S[@]}" timeout -k 5 90 srun --mpi=pmix -n 3 -O -t 2 ip netns exec "$H" "$SWEEP" \
	--netdev nic0,nic1 --no-rdma --json-file "$T/r.json" >"$T/out" 2>&1
RC=$?
t1=$(date +%s.%N)
cat "$T/out"
[ $RC -eq 1 ] || rn_fail "srun --mpi=pmix sweep: exit $RC, want 1 (problems found)"
python3 - "$T/r.json" <<'PY' || rn_fail "JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['schema'] == 'roce-doctor-sweep/1', d['schema']
s = d['summary']
assert (s['hosts'], s['rounds'], s['host_pairs'], s['host_pairs_checked'], s['exit']) == (3, 3, 3, 3, 1), s
assert d['missing'] == [], d['missing']
# one host three times: the fleet agrees with itself, the facts crossed srun's PMIx whole
assert d['differences'] == [] and d['fleet']['mtu'] == '1500', (d['fleet'], d['differences'])
for h in d['hosts']:
    assert sorted(n['netdev'] for n in h['nics']) == ['nic0', 'nic1'], h
    assert h['kernel'] == d['fleet']['kernel'] != 'unknown', h
    for n in h['nics']:
        assert n['verdict'] == 'refused', n
        assert 'arp-flux' in [f['cause'] for f in n['findings']], n
PY
grep -q 'roce-doctor-mpi .*: 3 hosts, 3 rounds, 3 of 3 host pairs checked' "$T/out" ||
	rn_fail "the report's header is not the 3-host one"
echo "srun --mpi=pmix: 3 ranks, every pair checked, in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s (srun included)"

if "${S[@]}" timeout -k 5 60 srun --mpi=pmi2 -n 2 -O -t 1 "$SWEEP" --netdev lo --no-rdma \
	>"$T/pmi2" 2>&1; then
	echo "srun --mpi=pmi2: the sweep ran"
else
	grep -q "not built with SLURM's PMI support" "$T/pmi2" || { cat "$T/pmi2"; rn_fail "pmi2: an unexpected failure"; }
	echo "srun --mpi=pmi2: this Open MPI has no Slurm PMI-2 support (use --mpi=pmix)"
fi
echo "PASS"
