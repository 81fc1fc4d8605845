#!/usr/bin/env bash
# roce-policy-routing killed at each of its change points (SIGKILL just before and just
# after each change; journal_lib.sh), then --undo: the host is given back byte for byte
# (IPv4 and IPv6 rules, every table's routes of both families, the ARP sysctls of every
# interface, the files --persist wrote or changed), the user's own rule that the run moves
# ahead of main (32767: from 198.18.0.11 lookup 200) included, and no journal is left.
. "$(dirname "$0")/policy_lib.sh"
. "$(dirname "$0")/journal_lib.sh"

undo_after_kill() { # n when
	local what urc
	killed_run "$1" "$2"
	what=$(cat "$T/count.killed")
	plain --undo --state-dir "$ST" >"$T/undo.out" 2>&1
	urc=$?
	snap >"$T/now"
	if [ $urc -ne 0 ] || ! diff -u "$T/before" "$T/now" >"$T/diff"; then
		echo "NOT RESTORED: killed $what; --undo exit $urc" >&2
		sed 's/^/    | /' "$T/undo.out" "$T/diff" >&2
		return 1
	fi
	if ls "$ST"/*.state >/dev/null 2>&1; then
		echo "NOT RESTORED: killed $what; --undo left the journal: $(ls "$ST")" >&2
		return 1
	fi
	echo "ok: killed $what: --undo exact"
}
journal_points undo_after_kill
[ $bad -eq 0 ] || rn_fail "$bad of $tried kill points: --undo did not restore the host"

echo PASS
