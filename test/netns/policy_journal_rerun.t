#!/usr/bin/env bash
# roce-policy-routing killed at each of its change points (SIGKILL just before and just
# after each change; journal_lib.sh), then run again with the same arguments: it reverts
# the unfinished run and ends in the state of an uninterrupted run (rules, routes, sysctls,
# files), never stacked on the half-done one (the user's rule that the run deletes to move
# it ahead of main keeps its table 200); then --undo gives back the host byte for byte.
. "$(dirname "$0")/policy_lib.sh"
. "$(dirname "$0")/journal_lib.sh"

rerun_after_kill() { # n when
	local what rrc
	killed_run "$1" "$2"
	what=$(cat "$T/count.killed")
	plain "${args[@]}" >"$T/rerun.out" 2>&1
	rrc=$?
	snap >"$T/now"
	if [ $rrc -ne 0 ] || ! diff -u "$T/ref" "$T/now" >"$T/diff"; then
		echo "STACKED: killed $what, run again: exit $rrc" >&2
		sed 's/^/    | /' "$T/rerun.out" "$T/diff" >&2
		return 1
	fi
	plain --undo --state-dir "$ST" >"$T/undo.out" 2>&1
	snap >"$T/now"
	if ! diff -u "$T/before" "$T/now" >"$T/diff"; then
		echo "NOT RESTORED: killed $what, run again, --undo" >&2
		sed 's/^/    | /' "$T/undo.out" "$T/diff" >&2
		return 1
	fi
	echo "ok: killed $what: run again = uninterrupted run; --undo exact"
}
journal_points rerun_after_kill
[ $bad -eq 0 ] || rn_fail "$bad of $tried kill points: the run again did not end as an uninterrupted run"
echo PASS
