#!/usr/bin/env bash
# The fix commands printed for mlx5-style netdev names, a plain one (ens1f0np0) and a dotted
# VLAN one (ens2f0np0.100; a veth of that name: the name is what the commands must get
# right), run as pasted in a shell on the host and fix it (the doctor then says all good):
#   1. the script command roce-doctor offers ("all at once: roce-policy-routing ..." in the
#      verdict, "# or, for all NICs at once: ..." after a fix), as printed, with the script
#      on PATH as installed;
#   2. roce-doctor's fixes themselves (the part before the '#'), in order;
#   3. the commands roce-policy-routing --dry-run prints (the same state as its real run).
# The script's default state dir is put on a tmpfs (a private mount namespace), so running
# it as pasted leaves nothing on this machine's /var/lib.
. "$(dirname "$0")/policy_lib.sh"
command -v unshare >/dev/null || rn_skip "skip: unshare (util-linux) not installed"
DOC=$RN_TOP/build/roce-doctor
[ -x "$DOC" ] || rn_skip "skip: build/roce-doctor not built (make)"
NICS=ens1f0np0,ens2f0np0.100

mkhost() {
	[ -n "${H:-}" ] && { rn_ns_del "$H"; rn_ns_del "$P"; }
	rn_ns P peer
	rn_ns H host
	for ns in "$P" "$H"; do
		rn_in "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	done
	rn_bridge "$P" br0 198.18.0.254/24
	rn_veth "$H" ens1f0np0 "$P" hp0 br0 198.18.0.11/24
	rn_veth "$H" ens2f0np0.100 "$P" hp1 br0 198.18.0.12/24
}
doctor() { rn_in "$H" "$DOC" --netdev "$NICS" >"$T/doc.out" 2>&1; }
# a shell on the host as an admin's: the installed script on PATH, /var/lib private
paste_in() { # file-of-commands
	rn_in "$H" unshare -m --propagation private bash -c \
		'mount -t tmpfs rn-varlib /var/lib && PATH=$1:$PATH && exec bash -e "$2"' _ \
		"$RN_TOP/scripts" "$1"
}
all_good() { # what
	doctor
	grep -q '^verdict: all good' "$T/doc.out" || { cat "$T/doc.out"; rn_fail "$1: the doctor still finds problems"; }
}

mkhost
doctor
cat "$T/doc.out"
grep -q "^verdict: 2 of 2 NICs need fixing" "$T/doc.out" || rn_fail "the host is not broken to begin with"

# 1. every distinct script command the doctor offers
{
	sed -n 's/^verdict: .*; all at once: \(roce-policy-routing .*\)$/\1/p' "$T/doc.out"
	sed -n 's/^    fix: .*  # or, for all NICs at once: \(roce-policy-routing .*\)$/\1/p' "$T/doc.out"
} | sort -u >"$T/offered"
grep -qx 'roce-policy-routing ens1f0np0 ens2f0np0.100' "$T/offered" ||
	{ cat "$T/offered"; rn_fail "the doctor does not offer the script for both NICs"; }
while IFS= read -r cmd; do
	mkhost
	echo "$cmd" >"$T/cmd.sh"
	paste_in "$T/cmd.sh" >"$T/paste.out" 2>&1 || { cat "$T/paste.out"; rn_fail "pasted '$cmd' failed"; }
	all_good "after '$cmd'"
	echo "ok: offered by the doctor, pasted: $cmd"
done <"$T/offered"

# 2. the doctor's own fixes, in the order printed
mkhost
doctor
sed -n 's/^    fix: \(.*\)$/\1/p' "$T/doc.out" | sed 's/  # .*$//' >"$T/fixes.sh"
[ -s "$T/fixes.sh" ] || rn_fail "no fix printed"
paste_in "$T/fixes.sh" >"$T/paste.out" 2>&1 || { cat "$T/fixes.sh" "$T/paste.out"; rn_fail "pasted fixes failed"; }
all_good "after the doctor's $(wc -l <"$T/fixes.sh") fixes"
grep -q 'net/ipv4/conf/ens2f0np0.100/\|net.ipv4.conf.all' "$T/fixes.sh" || rn_fail "no sysctl fix seen"
echo "ok: the doctor's $(wc -l <"$T/fixes.sh") fixes pasted"

# 3. the script's dry run, pasted: the state of its real run
mkhost
echo "roce-policy-routing --dry-run ${NICS/,/ }" >"$T/cmd.sh"
paste_in "$T/cmd.sh" >"$T/dry.out" 2>&1 || { cat "$T/dry.out"; rn_fail "dry run failed"; }
grep -v '^#' "$T/dry.out" >"$T/cmds.sh"
grep -q ' ens2f0np0.100' "$T/cmds.sh" || { cat "$T/dry.out"; rn_fail "the dry run names no command for the VLAN"; }
paste_in "$T/cmds.sh" >"$T/paste.out" 2>&1 || { cat "$T/cmds.sh" "$T/paste.out"; rn_fail "pasted dry-run commands failed"; }
rn_snapshot "$H" >"$T/pasted"
all_good "after the pasted dry run"
mkhost
echo "roce-policy-routing ${NICS/,/ }" >"$T/cmd.sh"
paste_in "$T/cmd.sh" >"$T/real.out" 2>&1 || { cat "$T/real.out"; rn_fail "real run failed"; }
rn_snapshot "$H" >"$T/real"
rn_assert_same "$T/real" "$T/pasted" "the pasted dry run gives another state than the real run"
echo "ok: the script's $(wc -l <"$T/cmds.sh") dry-run commands pasted = its real run"
echo PASS
