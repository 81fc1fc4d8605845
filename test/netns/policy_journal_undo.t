#!/usr/bin/env bash
# roce-policy-routing --undo killed at each of its steps (SIGKILL just before and just after
# each; journal_lib.sh) after a full run: a run then refuses (exit 2, nothing changed) and
# names the fix; that fix pasted (--undo again) gives back the host byte for byte. Killed
# after its last step, the undo is complete and a run is an ordinary one. A run while an
# --undo is going on says so (the lock first), not that the undo was interrupted.
. "$(dirname "$0")/policy_lib.sh"
. "$(dirname "$0")/journal_lib.sh"

# --undo killed at each of its steps (after a full run): a run then refuses (exit 2, nothing
# changed) naming the fix, and that fix, --undo again, restores the host
plain "${args[@]}" >/dev/null 2>&1 || rn_fail "run failed"
killed_run 0 none --undo --state-dir "$ST" || rn_fail "counted --undo failed"
usteps=$(cat "$T/count")
ubad=0
for ((n = 1; n <= usteps; n++)); do
	for when in before after; do
		plain "${args[@]}" >/dev/null 2>&1 || rn_fail "run failed"
		killed_run "$n" "$when" --undo --state-dir "$ST"
		what=$(cat "$T/count.killed")
		if ! ls "$ST"/*.state >/dev/null 2>&1; then
			# killed after it removed the journal: the undo had done all its work
			snap >"$T/now"
			rn_assert_same "$T/before" "$T/now" "--undo killed $what: the host is not restored"
			echo "ok: --undo killed $what: the journal was gone, the host restored"
			continue
		fi
		snap >"$T/mid"
		plain "${args[@]}" >"$T/refused.out" 2>&1
		rc=$?
		snap >"$T/mid2"
		fix=$(sed -n 's/.*finish it first: //p' "$T/refused.out")
		[ $rc -eq 2 ] && [ -n "$fix" ] ||
			{ cat "$T/refused.out"; rn_fail "--undo killed $what: a run did not refuse (exit $rc)"; }
		rn_assert_same "$T/mid" "$T/mid2" "--undo killed $what: the refused run changed the host"
		rn_in "$H" bash -c "PATH=$RN_TOP/scripts:\$PATH; $fix" >"$T/undo.out" 2>&1
		snap >"$T/now"
		if ! diff -u "$T/before" "$T/now" >&2; then
			ubad=$((ubad + 1))
			echo "NOT RESTORED: --undo killed $what, then '$fix'" >&2
			journal_rebuild
			continue
		fi
		echo "ok: --undo killed $what: a run refuses; '$fix' restores exactly"
	done
done
rn_log "--undo: $((2 * usteps)) kill points ($usteps steps, before and after each)"
[ $ubad -eq 0 ] || rn_fail "$ubad of $((2 * usteps)) --undo kill points: --undo again did not restore the host"

# a run started while an --undo is going on: the undo holds the lock and has written its
# "undo" mark; the run must say another run is at work (exit 2, nothing changed), not that
# the undo "was interrupted" (it read the journal before taking the lock)
plain "${args[@]}" >/dev/null 2>&1 || rn_fail "run failed"
state=$(ls "$ST"/*.state) lock=${state%.state}.lock
[ -e "$lock" ] || rn_fail "no lock file beside $state"
echo undo >>"$state"
# the holder is one process (the lock's fd is its own): killing it frees the lock
( exec 9>>"$lock" && flock -x 9 && exec sleep 30 ) &
holder=$!
for _ in $(seq 50); do flock -n -s "$lock" true || break; sleep 0.1; done
snap >"$T/mid"
plain "${args[@]}" >"$T/busy.out" 2>&1
rc=$?
plain "${args[@]}" --dry-run >"$T/busy-dry.out" 2>&1
drc=$?
snap >"$T/mid2"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
cat "$T/busy.out"
[ $rc -eq 2 ] || rn_fail "a run during an --undo: exit $rc, want 2"
grep -q "another roce-policy-routing run is changing this network namespace" "$T/busy.out" ||
	rn_fail "a run during an --undo does not say another run is at work"
grep -q "was interrupted" "$T/busy.out" "$T/busy-dry.out" &&
	rn_fail "a run during an --undo says it was interrupted"
[ $drc -le 1 ] || { cat "$T/busy-dry.out"; rn_fail "--dry-run during an --undo: exit $drc"; }
rn_assert_same "$T/mid" "$T/mid2" "a run during an --undo changed the host"
# the "undo" mark is a real one now: the fix it names restores the host
plain --undo --state-dir "$ST" >/dev/null 2>&1 || rn_fail "--undo after the busy test failed"
snap >"$T/now"
rn_assert_same "$T/before" "$T/now" "--undo after the busy test: the host is not restored"
rn_log "ok: a run during an --undo waits its turn by name; nothing changed"
echo PASS
