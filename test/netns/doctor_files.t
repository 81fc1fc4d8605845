#!/usr/bin/env bash
# Report files (--textfile here; --json-file and --svg share the writer) in a directory
# another user may write to: a symlink planted at the temporary's name (FILE.tmp.<pid>,
# today's guess) or at FILE itself is never followed, the file its link named keeps its
# bytes, FILE ends up a regular file of mode 0644 whatever the umask, and no temporary
# is left behind. A target that is a symlink, a device, not named *.prom (--textfile) or in
# no directory is refused before any work (exit 2), --nfd's alike.
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

# a link at the target's own name is refused before any work: nothing written, the link kept
rm -f "$D/roce.prom"
ln -s "$T/victim" "$D/roce.prom"
ip netns exec "$H" "$DOCTOR" --netdev nic0 --textfile "$D/roce.prom" >"$T/out" 2>&1
RC=$?
cat "$T/out"
[ $RC -eq 2 ] || rn_fail "--textfile over a symlink: exit $RC, want 2 (refused)"
grep -q "^roce-doctor: --textfile: '$D/roce.prom' is a symbolic link: not replaced" "$T/out" ||
	rn_fail "--textfile over a symlink: the refusal does not say why"
[ "$(cat "$T/victim")" = "root only" ] || rn_fail "the symlink at the target was followed"
[ -L "$D/roce.prom" ] || rn_fail "the symlink at the target was replaced"
compgen -G "$D/roce.prom.tmp*" >/dev/null && rn_fail "a temporary was left: $(ls "$D")"
rm -f "$D/roce.prom"

# a device (as /dev/full), a name node_exporter does not read, a missing directory: refused,
# and the same for --nfd's target; a regular file of its own name is replaced as before
mknod "$D/full.prom" c 1 7
cp "$T/victim" "$T/passwd"
for t in "--textfile $D/full.prom|'$D/full.prom' exists and is not a regular file: not replaced" \
	"--textfile $T/passwd|'$T/passwd' is not a file name ending in .prom" \
	"--textfile $D/x.txt|'$D/x.txt' is not a file name ending in .prom" \
	"--textfile $T/no/such/r.prom|the directory of '$T/no/such/r.prom' does not exist" \
	"--nfd $D/full.prom|'$D/full.prom' exists and is not a regular file: not replaced"; do
	args=${t%%|*} want=${t#*|}
	# shellcheck disable=SC2086
	ip netns exec "$H" "$DOCTOR" --netdev nic0 $args >"$T/out" 2>&1
	RC=$?
	[ $RC -eq 2 ] || { cat "$T/out"; rn_fail "$args: exit $RC, want 2 (refused)"; }
	grep -qF "$want" "$T/out" || { cat "$T/out"; rn_fail "$args: the refusal does not say '$want'"; }
done
[ -c "$D/full.prom" ] || rn_fail "the device node was replaced"
[ "$(cat "$T/passwd")" = "root only" ] || rn_fail "a file not named .prom was replaced"
ip netns exec "$H" "$DOCTOR" --netdev nic0 --textfile "$D/roce.prom" >/dev/null 2>&1
RC=$?
[ $RC -le 1 ] && grep -q '^roce_doctor_up 1$' "$D/roce.prom" || rn_fail "--textfile to a fresh .prom: exit $RC"
ip netns exec "$H" "$DOCTOR" --netdev nic0 --textfile "$D/roce.prom" >/dev/null 2>&1
RC=$?
[ $RC -le 1 ] || rn_fail "--textfile over its own regular file: exit $RC, want 0/1"
rn_log "ok: no link followed, mode 644, nothing left; links, devices and other names refused"
