#!/usr/bin/env bash
# roce-doctor health and the plugin's journal of failed comms (errors.jsonl, written by the
# plugin's own writer through build/test/rn-journal) on a real Slurm (Debian's munge,
# slurmctld, slurmd; test/netns/slurm_lib.sh) of two nodes: this host (clean: policy
# routing applied) and a peer host (no slurmd):
#   - a clean host and no journal: the node stays IDLE, the peer untouched;
#   - replies-elsewhere (the peer resolves this host to the wrong MAC; its fix runs there):
#     the peer node is drained with the cause, where and when; this node stays IDLE, exit 0;
#   - with --mesh (the local mesh agent's metrics), the same record drains the peer only
#     when the agent sees a pair with it down: all up or no view leave it as it is (said);
#   - peer-died and no-reply name no node: nothing drained;
#   - route-wrong-nic of this host: this node drained with the journal's reason, exit 1;
#     once the window has passed, and the host still clean, it is resumed (as the peer's
#     own check resumes the peer once it is clean: the peer here has no slurmd to show it);
#   - bad --journal-window values: exit 2.
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
rn_require_netns
rn_slurm_require
JOURNAL=$RN_TOP/build/test/rn-journal
[ -x "$JOURNAL" ] || rn_fail "build/test/rn-journal missing: run make tests first"
rn_tmpdir T
rn_host_ns 2
H=$RN_HOST
NODE=rn-node-$$
PEER=rn-peer-$$
export NCCL_ROCE_STATE_DIR=$T/state
ip netns exec "$H" "$RN_TOP/scripts/roce-policy-routing" nic0 nic1 >"$T/fix.log" 2>&1 ||
	{ cat "$T/fix.log"; rn_fail "roce-policy-routing nic0 nic1 failed"; }

rn_slurm_init "$H" "$NODE"
rn_slurm_start "NodeName=$PEER NodeAddr=127.0.0.2 CPUs=1 RealMemory=100 State=UNKNOWN"
rn_slurm_wait "$NODE" State '^IDLE$' "slurmd registered"

health() { # args...: runs the check as Slurm's would on this node; output in $T/out, exit in RC
	ip netns exec "$H" env SLURM_CONF="$SLURM_CONF" NCCL_ROCE_STATE_DIR="$NCCL_ROCE_STATE_DIR" \
		"$DOCTOR" health --netdev nic0,nic1 --node "$NODE" "$@" >"$T/out" 2>&1
	RC=$?
	sed 's/^/  health| /' "$T/out"
}

health -v
[ $RC -eq 0 ] || rn_fail "clean host, no journal: exit $RC, want 0"
[ "$(rn_slurm_node "$NODE" State)" = IDLE ] || rn_fail "clean host: $NODE not IDLE"
[ -z "$(rn_slurm_node "$PEER" Reason)" ] || rn_fail "the peer got a reason from an empty journal"
grep -q "journal $T/state: 0 records read" "$T/out" || rn_fail "health -v did not say it read the journal"

# the peer at fault: its node drained with the cause, this one left as it is
"$JOURNAL" "$T/state" replies-elsewhere RETRY_EXC_ERR rxe0:1 nic0 "$PEER.cluster.example" nic1 ||
	rn_fail "rn-journal"
# --mesh: the peer drained only when the local mesh agent's metrics (its textfile, here one
# written in its format; a missing one is no view) show a pair with it down now
mesh_file() { # up of the two pair series (udp, rc) with the peer
	{
		echo '# TYPE roce_mesh_pair_up gauge'
		printf 'roce_mesh_pair_up{host="%s",nic="nic0",peer_host="%s",peer_nic="nic1",group="all",peer_group="all",cross="0",kind="udp"} 1\n' "$NODE" "$PEER"
		printf 'roce_mesh_pair_up{host="%s",nic="nic0",peer_host="%s",peer_nic="nic1",group="all",peer_group="all",cross="0",kind="rc"} %s\n' "$NODE" "$PEER" "$1"
		[ "$1" = 0 ] && printf 'roce_mesh_pair_cause{host="%s",nic="nic0",peer_host="%s",peer_nic="nic1",group="all",peer_group="all",cross="0",kind="rc",cause="no-reply"} 1\n' "$NODE" "$PEER"
		printf 'roce_mesh_pair_up{host="%s",nic="nic0",peer_host="other",peer_nic="nic1",group="all",peer_group="all",cross="0",kind="udp"} 0\n' "$NODE"
	} >"$T/mesh.prom"
}
mesh_file 1
health --mesh "$T/mesh.prom"
rn_slurm_node "$PEER" State | grep -q DRAIN && rn_fail "--mesh, all pairs up: the peer was drained"
grep -q "node $PEER (the journal: replies-elsewhere): not confirmed: the mesh agent sees its 2 pair series with it up" "$T/out" ||
	rn_fail "--mesh, all up: not said"
grep -q "node $PEER not drained: the journal's replies-elsewhere unconfirmed" "$T/out" || rn_fail "--mesh: not said undrained"
health --mesh "$T/none.prom"
rn_slurm_node "$PEER" State | grep -q DRAIN && rn_fail "--mesh, no view: the peer was drained"
grep -q "not confirmed: the mesh agent's view ($T/none.prom) could not be read" "$T/out" ||
	rn_fail "--mesh, no view: not said"
mesh_file 0
health --mesh "$T/mesh.prom"
grep -q "confirmed by the mesh agent: 1 of 2 pair series with it down, cause no-reply" "$T/out" ||
	rn_fail "--mesh, confirmed: not said"
echo "ok: --mesh: the peer left as it is while the mesh sees it up or cannot be read, drained once it sees a pair down"

[ $RC -eq 0 ] || rn_fail "replies-elsewhere (the peer's): this node's exit $RC, want 0"
[ "$(rn_slurm_node "$NODE" State)" = IDLE ] || rn_fail "the peer's fault drained this node"
reason=$(rn_slurm_node "$PEER" Reason)
echo "peer: State=$(rn_slurm_node "$PEER" State) Reason=$reason"
[[ $reason =~ ^roce:\ replies-elsewhere\ seen\ from\ [^\ ]+\ rxe0:1\ [0-9]+s\ ago\ \(journal\ .*/errors.jsonl\)$ ]] ||
	rn_fail "the peer's reason is '$reason'"
rn_slurm_node "$PEER" State | grep -q DRAIN || rn_fail "the peer is not drained"
grep -q "node $PEER drained (the peer at fault): roce: replies-elsewhere" "$T/out" ||
	rn_fail "health did not say it drained the peer"
# again: drained already for it, nothing more to do
health
grep -q "drained (the peer at fault)" "$T/out" && rn_fail "the peer was drained twice"

# causes that name no node drain nothing (the peer keeps the reason it has)
before=$(rn_slurm_node "$PEER" Reason)
: >"$T/state/errors.jsonl"
"$JOURNAL" "$T/state" peer-died WR_FLUSH_ERR rxe0:1 nic0 "$PEER" nic0 || rn_fail "rn-journal"
"$JOURNAL" "$T/state" no-reply RETRY_EXC_ERR rxe1:1 nic1 "$PEER" nic1 || rn_fail "rn-journal"
health -v
[ $RC -eq 0 ] || rn_fail "peer-died, no-reply: exit $RC, want 0"
grep -q "2 records read, 0 naming a node" "$T/out" || rn_fail "peer-died/no-reply named a node"
[ "$(rn_slurm_node "$NODE" State)" = IDLE ] || rn_fail "peer-died/no-reply drained this node"
[ "$(rn_slurm_node "$PEER" Reason)" = "$before" ] || rn_fail "peer-died/no-reply changed the peer"

# this host's cause: this node drained with the journal's reason
"$JOURNAL" "$T/state" route-wrong-nic RETRY_EXC_ERR rxe1:1 nic1 "$PEER" nic1 || rn_fail "rn-journal"
health
[ $RC -eq 1 ] || rn_fail "route-wrong-nic (this host's): exit $RC, want 1"
reason=$(rn_slurm_node "$NODE" Reason)
echo "this node: State=$(rn_slurm_node "$NODE" State) Reason=$reason"
[[ $reason =~ ^roce:\ route-wrong-nic\ seen\ from\ [^\ ]+\ rxe1:1\ [0-9]+s\ ago ]] ||
	rn_fail "this node's reason is '$reason'"
grep -q "^ERROR: roce-doctor: Health check failed: roce: route-wrong-nic" "$T/out" ||
	rn_fail "no NHC-style error line for the journal's cause"
# the window passed, the host still clean: resumed
sleep 2
health --journal-window 1
[ $RC -eq 0 ] || rn_fail "after the window: exit $RC, want 0"
rn_slurm_wait "$NODE" State '^IDLE$' "the window passed: resumed" 10
echo "after the window: State=$(rn_slurm_node "$NODE" State)"

for args in "--journal-window -1" "--journal-window x" "--journal-window 2592001"; do
	# shellcheck disable=SC2086
	"$DOCTOR" health $args >/dev/null 2>"$T/err"
	RC=$?
	[ $RC -eq 2 ] || rn_fail "health $args: exit $RC, want 2"
	grep -q "journal-window" "$T/err" || rn_fail "health $args: $(cat "$T/err")"
done
echo "ok: the journal drains the node its cause names, and only that one"
