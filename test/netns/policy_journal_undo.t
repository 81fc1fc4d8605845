#!/usr/bin/env bash
# roce-policy-routing --undo killed at each of its steps (SIGKILL just before and just after
# each; journal_lib.sh) after a full run: a run then refuses (exit 2, nothing changed) and
# names the fix; that fix pasted (--undo again) gives back the host byte for byte. Killed
# after its last step, the undo is complete and a run is an ordinary one.
. "$(dirname "$0")/lib.sh"
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
echo PASS
