#!/usr/bin/env bash
# roce-policy-routing --dry-run: prints exactly the commands a real run then executes, and
# changes nothing (rules, routes, sysctls, state, persistent files); its output pasted into a
# shell gives the real run's state; same for --undo --dry-run. As non-root it works too.
. "$(dirname "$0")/policy_lib.sh"
rn_host_ns 2 1
H=$RN_HOST
mkdir -p "$T/root/etc/network"
echo "source /etc/network/interfaces.d/*" >"$T/root/etc/network/interfaces"
find "$T/root" -printf '%p %m\n' | sort >"$T/tree-before"

rn_snapshot "$H" >"$T/before"
rn_in "$H" "$TOOL" "${st[@]}" --dry-run --persist --root "$T/root" nic0 nic1 >"$T/dry" 2>&1 ||
	{ cat "$T/dry"; rn_fail "dry run failed"; }
cat "$T/dry"
rn_snapshot "$H" >"$T/after-dry"
rn_assert_same "$T/before" "$T/after-dry" "dry run changed the configuration"
[ ! -e "$T/state" ] || rn_fail "dry run created the state dir"
find "$T/root" -printf '%p %m\n' | sort >"$T/tree-dry"
rn_assert_same "$T/tree-before" "$T/tree-dry" "dry run wrote files"
grep -q '^# would write .*/etc/sysctl.d/90-roce-multinic.conf:' "$T/dry" || rn_fail "dry run does not show the sysctl.d file"
grep -q '^# dry run: nothing was changed' "$T/dry" || rn_fail "dry run does not say so"

# the printed commands are the ones a real run executes, in order
rn_in "$H" "$TOOL" "${st[@]}" nic0 nic1 >"$T/real" 2>&1 || { cat "$T/real"; rn_fail "real run failed"; }
grep -v '^#' "$T/dry" >"$T/dry-cmds"
grep -v '^#' "$T/real" >"$T/real-cmds"
[ -s "$T/real-cmds" ] || rn_fail "real run printed no commands"
rn_assert_same "$T/dry-cmds" "$T/real-cmds" "dry run and real run commands differ"

# the dry-run output pasted into a shell (bash, stopping at the first error) on a fresh copy
# of the bed gives the same state as the real run; comment lines are harmless there
rn_snapshot "$H" >"$T/after-real"
H1=$H
rn_host_ns 2 1
rn_in "$RN_HOST" bash -e <"$T/dry" >"$T/paste.out" 2>&1 || { cat "$T/paste.out"; rn_fail "pasting the dry run into a shell failed"; }
rn_snapshot "$RN_HOST" >"$T/after-replay"
rn_assert_same "$T/after-real" "$T/after-replay" "replayed dry-run commands give another state"

# --dry-run as an unprivileged user: same commands (nothing needs root to look)
if command -v setpriv >/dev/null; then
	rn_host_ns 2 1
	rn_in "$RN_HOST" setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$TOOL" --state-dir "$T/nostate" --dry-run nic0 nic1 >"$T/dry-user" 2>&1 ||
		{ cat "$T/dry-user"; rn_fail "dry run as nobody failed"; }
	grep -v '^#' "$T/dry-user" >"$T/dry-user-cmds"
	rn_assert_same "$T/dry-cmds" "$T/dry-user-cmds" "dry run as nobody prints other commands"
	echo "ok: dry run as nobody"
fi

# --undo --dry-run: lists the reverse commands, changes nothing
rn_in "$H1" "$TOOL" "${st[@]}" --undo --dry-run >"$T/undo-dry" 2>&1 || rn_fail "undo dry run failed"
cat "$T/undo-dry"
grep -q '^ip rule del from 198.18.0.12 lookup' "$T/undo-dry" || rn_fail "undo dry run lacks the rule deletion"
rn_snapshot "$H1" >"$T/after-undo-dry"
rn_assert_same "$T/after-real" "$T/after-undo-dry" "undo dry run changed something"
set -- "$T/state"/netns-*.state
[ -s "$1" ] || rn_fail "undo dry run removed the state"
# what iproute2 prints beside a whole listing when a veth's peer netns is being deleted
# (exit 0) stays out of the output a user pastes: only commands and comments come out
mkdir -p "$T/wrap"
cat >"$T/wrap/ip" <<EOF
#!/bin/sh
case "\$*" in *"link show"*) echo "Error: Peer netns reference is invalid." >&2 ;; esac
exec $(command -v ip) "\$@"
EOF
chmod +x "$T/wrap/ip"
rn_host_ns 2 1
rn_in "$RN_HOST" env PATH="$T/wrap:$PATH" "$TOOL" --state-dir "$T/state-w" --dry-run nic0 nic1 \
	>"$T/dry-w" 2>&1 || { cat "$T/dry-w"; rn_fail "dry run beside ip's netns warning failed"; }
grep -q '^ip rule add from 198.18.0.12 lookup' "$T/dry-w" || { cat "$T/dry-w"; rn_fail "no rule in that dry run"; }
! grep -v '^#' "$T/dry-w" | grep -qv '^\(ip\|sysctl\) ' ||
	{ cat "$T/dry-w"; rn_fail "the dry run printed a line that is not a command or a comment"; }
echo "ok: ip's netns warning stays out of a dry run"
echo PASS
