#!/usr/bin/env bash
# roce-doctor health as Slurm's Prolog on a real one-node Slurm (test/netns/slurm_lib.sh),
# the node's NICs the netns host's nic0, nic1 in one subnet: on the broken host a job's
# Prolog drains the node with our reason and the job does not run there (srun fails, the
# job's command never ran); with the host fixed (the reason's fix pasted, persistent
# files into an overlay) and the node resumed, the Prolog passes and the job runs.
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
rn_require_netns
rn_slurm_require
command -v srun >/dev/null || rn_skip "skip: srun not installed (slurm-client)"
rn_tmpdir T
rn_host_ns 2
H=$RN_HOST
NODE=rn-node-$$
WANT="roce: arp-flux nic0,nic1; no-rule nic0; route-wrong-nic nic1 fix: roce-policy-routing --persist nic0 nic1"
rn_slurm_init "$H" "$NODE"
cat >"$T/roce-health" <<EOF
ROCE_DOCTOR=$DOCTOR
ROCE_HEALTH_ARGS="--netdev nic0,nic1"
EOF
# the Prolog as slurm.conf names it, entering the host's namespace first
cat >"$T/prolog" <<EOF
#!/bin/sh
/bin/echo "\$SLURM_JOB_ID" >>"$T/prolog.jobs"
exec /usr/sbin/ip netns exec $H /usr/bin/env ROCE_HEALTH_CONF=$T/roce-health \\
	SLURM_CONF=$SLURM_CONF $RN_TOP/scripts/roce-health-check >>"$T/prolog.log" 2>&1
EOF
chmod +x "$T/prolog"
rn_slurm_start "Prolog=$T/prolog"
rn_slurm_wait "$NODE" State '^IDLE$' "node up"

# job CMD: srun on the node (in its namespace, where slurmctld listens); its exit status
job() {
	nsenter --net="/run/netns/$H" timeout 60 srun -N1 -w "$NODE" -t 1 "$@" >>"$T/srun.log" 2>&1
}
job /bin/touch "$T/ran-1"
RC=$?
[ $RC -ne 0 ] || rn_fail "srun succeeded on the broken host"
[ -e "$T/ran-1" ] && rn_fail "the job ran on the broken host"
[ -s "$T/prolog.jobs" ] || rn_fail "the Prolog did not run"
rn_slurm_wait "$NODE" State 'DRAIN' "broken host"
[ "$(rn_slurm_node "$NODE" Reason)" = "$WANT" ] ||
	rn_fail "drain reason '$(rn_slurm_node "$NODE" Reason)', want '$WANT'"
grep "srun: error" "$T/srun.log"
echo "broken host: srun exit $RC, the job did not run, $(rn_slurm_node "$NODE" State): $WANT"

fix=${WANT#* fix: }
mkdir -p "$T/ov/etc.u" "$T/ov/etc.w" "$T/ov/var.u" "$T/ov/var.w"
ip netns exec "$H" sh -c "
mount -t overlay overlay -o lowerdir=/etc,upperdir=$T/ov/etc.u,workdir=$T/ov/etc.w /etc &&
mount -t overlay overlay -o lowerdir=/var/lib,upperdir=$T/ov/var.u,workdir=$T/ov/var.w /var/lib &&
PATH=$RN_TOP/scripts:\$PATH && $fix" >"$T/fix.log" 2>&1 || { cat "$T/fix.log"; rn_fail "the pasted fix failed: $fix"; }
# with the Prolog alone nothing runs on a drained node: the operator resumes it (the
# HealthCheckProgram would, slurm_health.t)
rn_scontrol update nodename="$NODE" state=resume || rn_fail "resume"
rn_slurm_wait "$NODE" State '^IDLE$' "resumed"
job /bin/touch "$T/ran-2" || { cat "$T/srun.log" "$T/prolog.log"; rn_fail "srun failed on the fixed host"; }
[ -e "$T/ran-2" ] || rn_fail "the job did not run on the fixed host"
# (COMPLETING for a moment after the job)
rn_slurm_wait "$NODE" State '^IDLE$' "fixed host after the job"
[ -z "$(rn_slurm_node "$NODE" Reason)" ] || rn_fail "fixed host: a reason after the job"
echo "fixed host: the Prolog passed, the job ran, State=IDLE"
echo "PASS"
