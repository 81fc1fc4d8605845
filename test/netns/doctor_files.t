#!/usr/bin/env bash
# Report files (--textfile here; --json-file and --svg share the writer) in a directory
# another user may write to: a symlink planted at the temporary's name (FILE.tmp.<pid>,
# today's guess) or at FILE itself is never followed, the file its link named keeps its
# bytes, FILE ends up a regular file of mode 0644 whatever the umask, and no temporary
# is left behind.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_host_ns 1
rn_tmpdir T
H=$RN_HOST
D=$T/textfiles
mkdir -p "$D"
chmod 1777 "$D"
echo "root only" >"$T/victim"
chmod 600 "$T/victim"

# the pid is known in advance: the shell that plants the link execs the doctor
ip netns exec "$H" sh -c 'ln -s "$1" "$2.tmp.$$"; umask 077; exec "$3" --netdev nic0 --textfile "$2"' \
	sh "$T/victim" "$D/roce.prom" "$DOCTOR" >"$T/out" 2>&1
RC=$?
cat "$T/out"
[ "$(cat "$T/victim")" = "root only" ] || rn_fail "a symlink at the temporary's name was followed: the file it names was overwritten"
[ $RC -le 1 ] || rn_fail "--textfile with a link planted beside it: exit $RC, want 0/1"
[ -f "$D/roce.prom" ] && [ ! -L "$D/roce.prom" ] || rn_fail "roce.prom is not a regular file"
grep -q '^roce_doctor_up 1$' "$D/roce.prom" || rn_fail "roce.prom lacks the metrics"
[ "$(stat -c %a "$D/roce.prom")" = 644 ] || rn_fail "roce.prom has mode $(stat -c %a "$D/roce.prom") under umask 077, want 644"
rm -f "$D"/roce.prom.tmp.*

# a link at the target's own name is replaced, not written through
rm -f "$D/roce.prom"
ln -s "$T/victim" "$D/roce.prom"
ip netns exec "$H" "$DOCTOR" --netdev nic0 --textfile "$D/roce.prom" >/dev/null 2>&1
RC=$?
[ $RC -le 1 ] || rn_fail "--textfile over a symlink: exit $RC, want 0/1"
[ "$(cat "$T/victim")" = "root only" ] || rn_fail "the symlink at the target was followed"
[ -L "$D/roce.prom" ] && rn_fail "the symlink at the target is still there"
grep -q '^roce_doctor_up 1$' "$D/roce.prom" || rn_fail "roce.prom lacks the metrics"
compgen -G "$D/roce.prom.tmp*" >/dev/null && rn_fail "a temporary was left: $(ls "$D")"
rn_log "ok: no link followed, mode 644, nothing left"
