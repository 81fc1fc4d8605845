#!/usr/bin/env bash
# roce-doctor health as Slurm's HealthCheckProgram on a real one-node Slurm (Debian's
# munge, slurmctld, slurmd; test/netns/slurm_lib.sh) whose RoCE NICs are the netns host's
# nic0, nic1 in one subnet (kernel defaults: broken):
#   - slurmd's health check drains the node with our reason (scontrol show node):
#     "roce: arp-flux nic0,nic1; no-rule nic0; route-wrong-nic nic1 fix: roce-policy-routing
#     --persist nic0 nic1";
#   - that fix, pasted as the reason prints it (persistent files into an overlay: the
#     host's /etc and /var/lib stay as they are), makes the host clean, and the next
#     health check resumes the node: IDLE, no reason;
#   - an admin's drain stays as it is, also while the host is broken again; once the admin
#     resumes the node, the check drains it with our reason again.
# Then, without Slurm: the time bound (a hung scontrol ends in exit 2, node untouched),
# usage errors, and 8 NICs with long names (reason within 255 bytes; the time printed; with
# one NIC down, 'see: roce-doctor ...', which runs as printed).
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
rn_require_netns
rn_slurm_require
rn_tmpdir T
rn_host_ns 2
H=$RN_HOST
NODE=rn-node-$$
WANT="roce: arp-flux nic0,nic1; no-rule nic0; route-wrong-nic nic1 fix: roce-policy-routing --persist nic0 nic1"

# without Slurm: the same verdict, printed NHC's way, nothing drained
ip netns exec "$H" "$DOCTOR" health --netdev nic0,nic1 --no-drain >"$T/out" 2>&1
RC=$?
cat "$T/out"
[ $RC -eq 1 ] || rn_fail "health --no-drain on the broken host: exit $RC, want 1"
grep -qxF "ERROR: roce-doctor: Health check failed: $WANT" "$T/out" || rn_fail "no NHC-style error line"

rn_slurm_init "$H" "$NODE"
# What slurm.conf names, run as slurmd runs it (no arguments, no PATH, SLURMD_NODENAME),
# entering the host's namespace first as a real node's NICs need not. Each run counted.
cat >"$T/roce-health" <<EOF
ROCE_DOCTOR=$DOCTOR
ROCE_HEALTH_ARGS="--netdev nic0,nic1"
EOF
cat >"$T/hc" <<EOF
#!/bin/sh
/usr/bin/env >"$T/hc.env"
/bin/echo run >>"$T/hc.runs"
exec /usr/sbin/ip netns exec $H /usr/bin/env ROCE_HEALTH_CONF=$T/roce-health \\
	SLURM_CONF=$SLURM_CONF $RN_TOP/scripts/roce-health-check >>"$T/hc.log" 2>&1
EOF
chmod +x "$T/hc"
t0=$(date +%s.%N)
rn_slurm_start "HealthCheckProgram=$T/hc
HealthCheckInterval=2
HealthCheckNodeState=ANY"
t1=$(date +%s.%N)
echo "slurm up in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s"

rn_slurm_wait "$NODE" State 'DRAIN' "broken host"
[ "$(rn_slurm_node "$NODE" Reason)" = "$WANT" ] ||
	rn_fail "drain reason '$(rn_slurm_node "$NODE" Reason)', want '$WANT'"
t2=$(date +%s.%N)
echo "drained by the health check $(awk -v a="$t1" -v b="$t2" 'BEGIN{printf "%.1f", b-a}') s after slurmd started:"
rn_scontrol show node "$NODE" | grep -E 'State=|Reason='
grep -qx "SLURMD_NODENAME=$NODE" "$T/hc.env" || rn_fail "slurmd did not set SLURMD_NODENAME"

# the fix as the reason names it, pasted in the host; --persist writes into overlays
fix=$(rn_slurm_node "$NODE" Reason)
fix=${fix#* fix: }
mkdir -p "$T/ov/etc.u" "$T/ov/etc.w" "$T/ov/var.u" "$T/ov/var.w"
ip netns exec "$H" sh -c "
mount -t overlay overlay -o lowerdir=/etc,upperdir=$T/ov/etc.u,workdir=$T/ov/etc.w /etc &&
mount -t overlay overlay -o lowerdir=/var/lib,upperdir=$T/ov/var.u,workdir=$T/ov/var.w /var/lib &&
PATH=$RN_TOP/scripts:\$PATH && $fix" >"$T/fix.log" 2>&1 || { cat "$T/fix.log"; rn_fail "the pasted fix failed: $fix"; }
[ -f "$T/ov/etc.u/sysctl.d/90-roce-multinic.conf" ] || { cat "$T/fix.log"; rn_fail "--persist wrote no sysctl file"; }
rn_slurm_wait "$NODE" State '^IDLE$' "fixed host: resumed"
[ -z "$(rn_slurm_node "$NODE" Reason)" ] || rn_fail "reason left after the resume"
echo "after '$fix': State=$(rn_slurm_node "$NODE" State)"
# the check by hand on the clean node: its time with scontrol (one show node)
ip netns exec "$H" "$DOCTOR" health --netdev nic0,nic1 --node "$NODE" -v >"$T/out" 2>&1
RC=$?
[ $RC -eq 0 ] || { cat "$T/out"; rn_fail "health on the fixed host: exit $RC, want 0"; }
echo "clean node, by hand: $(grep -o 'checked in [0-9.]* ms' "$T/out"), $(grep -o 'done in [0-9.]* ms' "$T/out") with scontrol"

# wait_runs N: until the health check ran N more times (from now)
wait_runs() {
	local want=$(($(wc -l <"$T/hc.runs") + $1))
	for _ in $(seq 240); do [ "$(wc -l <"$T/hc.runs")" -ge $want ] && return 0; sleep 0.25; done
	rn_fail "the health check did not run $1 more times"
}
ADMIN="admin: replacing a DIMM"
rn_scontrol update nodename="$NODE" state=drain reason="$ADMIN" || rn_fail "admin drain"
wait_runs 2
[ "$(rn_slurm_node "$NODE" Reason)" = "$ADMIN" ] || rn_fail "the admin's reason was changed (clean host)"
rn_slurm_node "$NODE" State | grep -q DRAIN || rn_fail "the admin's drain was resumed"
# broken again under the admin's drain (nic0 answers ARP for nic1 too): still the admin's
ip netns exec "$H" sysctl -qw net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.nic0.arp_ignore=0
ip netns exec "$H" "$DOCTOR" health --netdev nic0,nic1 --no-drain >/dev/null
[ $? -eq 1 ] || rn_fail "arp_ignore=0 on nic0 did not break the host"
wait_runs 2
[ "$(rn_slurm_node "$NODE" Reason)" = "$ADMIN" ] || rn_fail "the admin's reason was changed (broken host)"
echo "admin's drain left alone: $(rn_slurm_node "$NODE" State) '$ADMIN'"
grep -q "stays drained as it was (Reason=$ADMIN)" "$T/hc.log" || rn_fail "the check did not say it left the drain"
rn_scontrol update nodename="$NODE" state=resume || rn_fail "admin resume"
rn_slurm_wait "$NODE" Reason '^roce: arp-flux nic0,nic1 fix: roce-policy-routing --persist nic0 nic1$' \
	"broken again after the admin's resume"

# the time bound: a hung scontrol ends the check with exit 2, the node as it was
printf '#!/bin/sh\necho $$ >%s/hung.pid\nexec sleep 30\n' "$T" >"$T/hung-scontrol"
chmod +x "$T/hung-scontrol"
s0=$(date +%s.%N)
ip netns exec "$H" "$DOCTOR" health --netdev nic0,nic1 --node "$NODE" --timeout 2 \
	--scontrol "$T/hung-scontrol" >"$T/out" 2>&1
RC=$?
s1=$(date +%s.%N)
cat "$T/out"
[ $RC -eq 2 ] || rn_fail "hung scontrol: exit $RC, want 2"
grep -q "timed out" "$T/out" || rn_fail "hung scontrol: no 'timed out'"
sleep 0.2
kill -0 "$(cat "$T/hung.pid")" 2>/dev/null && rn_fail "the hung scontrol was left running"
echo "hung scontrol: exit 2 after $(awk -v a="$s0" -v b="$s1" 'BEGIN{printf "%.1f", b-a}') s (--timeout 2)"
for args in "--bogus" "junk" "--timeout 0" "--node="; do
	# shellcheck disable=SC2086
	"$DOCTOR" health $args >/dev/null 2>"$T/err"
	RC=$?
	[ $RC -eq 2 ] || rn_fail "health $args: exit $RC, want 2"
	grep -q "try 'roce-doctor health --help'" "$T/err" || rn_fail "health $args: $(cat "$T/err")"
done

# 8 NICs with a real server's names: the reason fits slurmdbd's 255 bytes
rn_ns P8 p8
rn_ns H8 h8
rn_bridge "$P8" br0 198.18.1.254/24
n8=
for i in 1 2 3 4 5 6 7 8; do
	rn_veth "$H8" "ens${i}f0np0" "$P8" "hp$i" br0 "198.18.1.$((10 + i))/24"
	n8=$n8${n8:+,}ens${i}f0np0
done
ip netns exec "$H8" "$DOCTOR" health --netdev "$n8" --no-drain -v >"$T/out8" 2>&1
RC=$?
cat "$T/out8"
[ $RC -eq 1 ] || rn_fail "8 NICs: exit $RC, want 1"
r8=$(sed -n 's/^ERROR: roce-doctor: Health check failed: //p' "$T/out8")
[ ${#r8} -le 255 ] || rn_fail "8 NICs: reason of ${#r8} bytes"
case $r8 in "roce: arp-flux all; "*" fix: roce-policy-routing --persist ens1f0np0 "*) ;;
*) rn_fail "8 NICs: reason '$r8'" ;; esac
echo "8 NICs: reason of ${#r8} bytes; $(grep -o 'checked in [0-9.]* ms' "$T/out8")"
# a cause the script does not fix (a NIC down): the reason points at roce-doctor, which
# runs as printed and names the fixes
ip -n "$H8" link set ens8f0np0 down
ip netns exec "$H8" "$DOCTOR" health --netdev "$n8" --no-drain >"$T/out8" 2>&1
r8=$(sed -n 's/^ERROR: roce-doctor: Health check failed: //p' "$T/out8")
case $r8 in "roce: "*"link-down ens8f0np0"*" see: roce-doctor --netdev $n8") ;;
*) rn_fail "8 NICs, one down: reason '$r8'" ;; esac
[ ${#r8} -le 255 ] || rn_fail "8 NICs, one down: reason of ${#r8} bytes"
ip netns exec "$H8" sh -c "PATH=$RN_TOP/build:\$PATH && ${r8#* see: }" >"$T/see.out" 2>&1
RC=$?
[ $RC -eq 1 ] && grep -q '^verdict: ' "$T/see.out" || { cat "$T/see.out"; rn_fail "'${r8#* see: }': exit $RC"; }
echo "8 NICs, one down: $r8"
echo "PASS"
