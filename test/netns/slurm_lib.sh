# shellcheck shell=bash
# A real one-node Slurm for the netns tests, from Debian's packages (munge, slurmctld,
# slurmd, slurm-client), on top of lib.sh:
#   rn_slurm_require               skip (77, the reason printed) without the programs
#   rn_slurm_init NS NODE          its directory RN_SLURM and SLURM_CONF (exported), for the
#                                  programs the test writes before the daemons start
#   rn_slurm_start [CONF]          munged, slurmctld and slurmd NODE in NS's network; CONF
#                                  lines are added to slurm.conf (HealthCheckProgram=...)
#   rn_scontrol ARGS...            scontrol against it
#   rn_slurm_node NODE FIELD       one field of `scontrol show node` (State, Reason, ...)
#   rn_slurm_wait NODE FIELD ERE WHAT [S]   until FIELD matches ERE (default 60 s), or fail
# Everything lives under one temporary directory: munge's key and socket, slurm.conf,
# state, spool and logs; the daemons listen only in NS (its own ports, nothing on the
# host's network) and are stopped by pid at exit, after this test's jobs are cancelled
# and its slurmstepds (found by this test's SLURM_CONF in their environment) are gone.
# A munged, slurmctld or slurmd the packages started on this machine is neither used nor
# touched.
# The daemons enter NS with nsenter --net, not ip netns exec: slurmd needs the host's
# /sys/fs/cgroup, which ip netns exec hides under a fresh /sys. A program they run that
# must see NS's netdevs in /sys enters it with ip netns exec itself.

_rn_slurm_pids=()

# Our slurmstepds: those that carry this test's SLURM_CONF (a step whose tasks died in
# MPI_Init can outlive slurmd).
_rn_slurm_stepds() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || continue
		{ tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=$SLURM_CONF" &&
			echo "${p#/proc/}"
	done
}

# shellcheck disable=SC2317 # called by the trap
_rn_slurm_stop() {
	local rc=$? p jobs
	if [ -n "${SLURM_CONF-}" ] && [ ${#_rn_slurm_pids[@]} -gt 1 ]; then
		jobs=$(nsenter --net="/run/netns/$RN_SLURM_NS" squeue -h -o %i 2>/dev/null)
		# shellcheck disable=SC2086
		[ -z "$jobs" ] || nsenter --net="/run/netns/$RN_SLURM_NS" scancel $jobs 2>/dev/null
		for _ in $(seq 20); do [ -z "$(_rn_slurm_stepds)" ] && break; sleep 0.25; done
		for p in $(_rn_slurm_stepds); do kill -9 "$p" 2>/dev/null; done
	fi
	for ((p = ${#_rn_slurm_pids[@]} - 1; p >= 0; p--)); do
		kill "${_rn_slurm_pids[p]}" 2>/dev/null
	done
	for p in "${_rn_slurm_pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	done
	(exit $rc)
	_rn_cleanup
}

rn_slurm_require() {
	local t
	for t in munged munge slurmctld slurmd scontrol nsenter; do
		command -v $t >/dev/null ||
			rn_skip "skip: $t not installed (scripts/install-deps --test: munge slurmctld slurmd slurm-client)"
	done
}

# _rn_slurm_bg NAME CMD...: start CMD in the test's Slurm namespace, its pid kept
_rn_slurm_bg() {
	local name=$1
	shift
	nsenter --net="/run/netns/$RN_SLURM_NS" "$@" >"$RN_SLURM/log/$name.out" 2>&1 &
	_rn_slurm_pids+=($!)
}

rn_slurm_init() {
	rn_tmpdir RN_SLURM
	RN_SLURM_NS=$1
	RN_SLURM_NODE=$2
	export SLURM_CONF=$RN_SLURM/etc/slurm.conf
	trap _rn_slurm_stop EXIT
}

rn_slurm_start() {
	local extra=${1-} node=$RN_SLURM_NODE s=$RN_SLURM
	mkdir -p "$s/munge/key" "$s/munge/run" "$s/etc" "$s/ctld" "$s/spool" "$s/log"
	# munged checks its directories: the key's private, the socket's reachable by all
	chmod 0755 "$s" "$s/munge" "$s/munge/run"
	chmod 0700 "$s/munge/key"
	dd if=/dev/urandom of="$s/munge/key/munge.key" bs=1024 count=1 2>/dev/null
	chmod 0400 "$s/munge/key/munge.key"
	_rn_slurm_bg munged munged -F --socket="$s/munge/run/sock" --key-file="$s/munge/key/munge.key" \
		--pid-file="$s/munge/run/munged.pid" --log-file="$s/log/munged.log" \
		--seed-file="$s/munge/key/seed"
	for _ in $(seq 50); do [ -S "$s/munge/run/sock" ] && break; sleep 0.1; done
	[ -S "$s/munge/run/sock" ] || { cat "$s/log/munged.out"; rn_fail "munged did not start"; }
	# slurmctld wants its own short host name as SlurmctldHost; everything on NS's loopback
	cat >"$SLURM_CONF" <<CONF
ClusterName=rntest
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
AuthInfo=socket=$s/munge/run/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$s/ctld
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/ctld/slurmctld.pid
SlurmdPidFile=$s/spool/slurmd.pid
SlurmctldLogFile=$s/log/slurmctld.log
SlurmdLogFile=$s/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=1
SlurmdTimeout=30
$extra
NodeName=$node NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN
PartitionName=rn Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
	_rn_slurm_bg slurmctld slurmctld -D -f "$SLURM_CONF"
	for _ in $(seq 100); do rn_scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.1; done
	rn_scontrol ping | grep -q 'is UP' ||
		{ tail -n 20 "$s/log/slurmctld.out" "$s/log/slurmctld.log"; rn_fail "slurmctld did not start"; }
	_rn_slurm_bg slurmd slurmd -D -N "$node" -f "$SLURM_CONF"
}

rn_scontrol() {
	nsenter --net="/run/netns/$RN_SLURM_NS" scontrol "$@"
}

# The value of FIELD in `scontrol show node NODE --oneliner` (Reason: without " [user@time]").
rn_slurm_node() {
	local line
	line=$(rn_scontrol show node "$1" --oneliner) || return 1
	if [ "$2" = Reason ]; then
		case $line in *" Reason="*) ;; *) return 0 ;; esac
		line=${line#* Reason=}
		echo "${line% \[*}"
		return 0
	fi
	grep -o " $2=[^ ]*" <<<"$line" | head -n 1 | cut -d= -f2-
}

rn_slurm_wait() {
	local node=$1 field=$2 ere=$3 what=$4 secs=${5:-60} got
	for _ in $(seq $((secs * 4))); do
		got=$(rn_slurm_node "$node" "$field" 2>/dev/null) && [[ $got =~ $ere ]] && return 0
		sleep 0.25
	done
	rn_scontrol show node "$node"
	tail -n 15 "$RN_SLURM/log/slurmctld.log" "$RN_SLURM/log/slurmd.log"
	rn_fail "$what: $field is '$got', want /$ere/ (after ${secs} s)"
}
