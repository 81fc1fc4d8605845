# shellcheck shell=bash
# The field layer (test/netns/field_*.t): host layouts found on real GPU clusters, each
# built in a fresh host namespace, judged by `roce-doctor --netdev ... --json` (the
# plugin's library), asserted by exact cause ids, and for a bad layout the printed fixes
# pasted into a shell in that host and the verdict judged again.
#
#   fl_host                      new host namespace $H (kernel-default ARP sysctls) and a
#                                switch namespace $SW; every call starts a new layout
#   fl_seg SEG                   an L2 segment (bridge SEG in $SW)
#   fl_nic DEV SEG [CIDR...]     veth DEV in $H on segment SEG with the addresses given
#   fl_peer SEG CIDR             an address on the segment's bridge (a gateway / a peer)
#   fl_judge DEVS [ENV...]       doctor --json for DEVS (comma list) into $J; prints the
#                                causes and the time to a verdict per NIC
#   fl_expect DEV "ID ..."       DEV's cause ids are exactly these ("" = none)
#   fl_paste                     every distinct printed fix into a script that the next
#                                fl_judge runs in $H's shell (set -e) before the doctor
#   fl_layout NAME DEVS ...      judge, expect, paste, judge again and expect all good:
#                                fl_layout NAME DEVS DEV=IDS... (IDS comma separated)
# Addresses come from 198.18.0.0/15 and fd00:198:18::/48 only.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir FL_T
FL_N=0

fl_sys() { rn_in "$H" sysctl -qw "$@" >/dev/null; }

fl_host() {
	local k
	rn_ns SW sw
	rn_ns H host
	for k in arp_ignore arp_announce arp_filter rp_filter accept_local; do
		fl_sys "net.ipv4.conf.all.$k=0" "net.ipv4.conf.default.$k=0"
	done
	rn_in "$SW" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	fl_sys net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
}

fl_seg() {
	ip -n "$SW" link add name "$1" type bridge || rn_fail "bridge $1"
	ip -n "$SW" link set "$1" up
}

fl_nic() {
	local dev=$1 seg=$2 a
	shift 2
	FL_N=$((FL_N + 1))
	ip -n "$H" link add name "$dev" type veth peer name "p$FL_N" netns "$SW" ||
		rn_fail "veth $dev"
	ip -n "$SW" link set "p$FL_N" master "$seg" up
	# shellcheck disable=SC2086 # "CIDR [flags]" splits into words on purpose
	for a in "$@"; do ip -n "$H" addr add $a dev "$dev" nodad 2>/dev/null ||
		ip -n "$H" addr add $a dev "$dev" || rn_fail "addr $a on $dev"; done
	ip -n "$H" link set "$dev" up
}

fl_peer() { ip -n "$SW" addr add "$2" dev "$1" nodad 2>/dev/null || ip -n "$SW" addr add "$2" dev "$1"; }

# fl_judge DEVS [ENV=VAL...]
fl_judge() {
	local devs=$1
	shift
	J=$FL_T/j$((++FL_J)).json
	if [ -n "${FL_PASTE:-}" ]; then
		# The pasted fixes and the doctor in one shell: an 'export' among them counts.
		ip netns exec "$H" bash -c "set -e; . \"\$1\" >&2; shift; exec \"\$@\"" _ "$FL_PASTE" \
			env "$@" "$DOCTOR" --netdev "$devs" --json >"$J" 2>"$J.err"
	else
		ip netns exec "$H" env "$@" "$DOCTOR" --netdev "$devs" --json >"$J" 2>"$J.err"
	fi
	RC=$?
	[ -s "$J" ] || { cat "$J.err"; rn_fail "$FL_NAME: no report (exit $RC): a pasted fix failed?"; }
	# One python per report (they cost ~0.1 s each on a busy machine): the summary on
	# stdout, "DEV ID ID" lines in $J.causes, the distinct fixes in $J.fixes.
	python3 - "$J" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d['summary']
n = max(1, s['nics'])
fixes = []
with open(sys.argv[1] + '.causes', 'w') as c:
    for nic in d['nics']:
        ids = sorted(set(f['cause'] for f in nic['findings']))
        c.write(" ".join([nic['netdev']] + ids) + "\n")
        print("    %-16s %-8s %s" % (nic['netdev'], nic['verdict'], ",".join(ids) or "none"))
        for f in nic['findings']:
            if f['fix'] and f['fix'] not in fixes:
                fixes.append(f['fix'])
with open(sys.argv[1] + '.fixes', 'w') as x:
    x.write("".join(f + "\n" for f in fixes))
print("    time to a verdict: %.3f ms per NIC (%d NICs: snapshot %.3f ms, verdicts %.3f ms)"
      % ((s['snapshot_us'] + s['verdict_us']) / 1000.0 / n, n, s['snapshot_us'] / 1000.0,
         s['verdict_us'] / 1000.0))
EOF
	[ $? = 0 ] || { cat "$J.err"; rn_fail "$FL_NAME: unreadable report (a pasted fix failed?)"; }
	# The verdicts above answered their route questions from the snapshot: every answer
	# must be the kernel's own (rn-pathcheck routes asks both).
	local pc=$RN_TOP/build/test/rn-pathcheck out
	if [ -x "$pc" ]; then
		# shellcheck disable=SC2086
		out=$(ip netns exec "$H" "$pc" routes ${devs//,/ } 2>&1) ||
			{ echo "$out"; rn_fail "$FL_NAME: the snapshot's route answers differ from the kernel's"; }
		echo "    snapshot $(tail -1 <<<"$out")"
	fi
}
FL_J=0

# fl_expect DEV "ID ID"  (exact set; "" = no finding)
fl_expect() {
	local got want
	grep -q "^$1\( \|\$\)" "$J.causes" || rn_fail "$FL_NAME: $1 not in the report"
	got=$(awk -v d="$1" '$1 == d { $1 = ""; print substr($0, 2) }' "$J.causes")
	want=$(tr ', ' '\n\n' <<<"$2" | sed '/^$/d' | sort -u | tr '\n' ' ' | sed 's/ $//')
	[ "$got" = "$want" ] || rn_fail "$FL_NAME: $1: causes '$got', want '${want:-none}'"
}

# fl_fixes: every distinct fix of the last report, one per line
fl_fixes() { cat "$J.fixes"; }

# fl_paste: the printed fixes, each as printed on a line of a script that a shell on $H
# runs with 'set -e' (the next fl_judge runs it, then the doctor in that shell)
fl_paste() {
	local fix
	FL_PASTE=$FL_T/paste$FL_J.sh
	: >"$FL_PASTE"
	while IFS= read -r fix; do
		echo "    \$ $fix"
		printf '%s\n' "$fix" >>"$FL_PASTE"
	done < <(fl_fixes)
}

# fl_up DEVS: wait (up to 3 s) until each is operationally up: the kernel's link watch
# may take its time on a busy machine, and a link without carrier is judged link-down
fl_up() {
	local d i
	for d in ${1//,/ }; do
		for ((i = 0; i < 60; i++)); do
			ip -n "$H" -o link show dev "$d" | grep -q 'state UP' && break
			sleep 0.05
		done
	done
}

# fl_layout NAME DEVS DEV=ID,ID ... : judge; expect; for a bad layout paste the fixes and
# judge again: every NIC good. ENV for the doctor and the paste in FL_ENV (array).
fl_layout() {
	local devs=$2 kv bad=0 d
	FL_NAME=$1
	shift 2
	echo "== $FL_NAME"
	fl_up "$devs"
	fl_judge "$devs" "${FL_ENV[@]}"
	for kv in "$@"; do
		fl_expect "${kv%%=*}" "${kv#*=}"
		[ -z "${kv#*=}" ] || bad=1
		FL_REPORT+=("$FL_NAME ${kv%%=*}: ${kv#*=}")
	done
	[ $bad = 1 ] || { [ "$RC" = 0 ] || rn_fail "$FL_NAME: good layout, doctor exit $RC"; return 0; }
	[ "$RC" = 1 ] || rn_fail "$FL_NAME: bad layout, doctor exit $RC"
	fl_paste
	fl_judge "$devs" "${FL_ENV[@]}"
	FL_PASTE_LAST=$FL_PASTE FL_PASTE=
	for d in ${devs//,/ }; do fl_expect "$d" ""; done
	[ "$RC" = 0 ] || rn_fail "$FL_NAME: after the pasted fix, doctor exit $RC"
	echo "    fixed by the pasted commands"
}
FL_ENV=()
FL_REPORT=()
