# shellcheck shell=bash
# The bed of policy_journal.t and policy_journal_rerun.t: roce-policy-routing killed with
# SIGKILL (as kill -9, the OOM killer or a lost ssh session's group would) at each of its
# change points, just before and just after each change. The kill comes from stand-ins for
# ip, sysctl, mkdir, cp, mv, rm and chmod put first on the script's PATH: each counts the
# calls that change something and, at call number N, kills the run's process group before or
# after running the real command. No timing involved.
# Source it after policy_lib.sh; it sets H, P (namespaces), R (the --persist root), ST (state dir),
# args (the run), T/before (the host before), T/ref (after an uninterrupted run), total (the
# number of change points, listed in T/points), and runs
#   journal_points FUNC   FUNC N WHEN for N in 1..total, WHEN before and after
command -v setsid >/dev/null || rn_skip "skip: setsid (util-linux) not installed"
P6=2001:db8:18:    # documentation prefix; the NICs' /64 is 2001:db8:18::/64

# the host: nic0, nic1 on one bridge (IPv4 and IPv6), mgmt0 with main's default route; the
# run configures nic0 (both families; every kind of change, kept to one NIC for time):
# the user's own rule for nic0 sits behind main (at 32767) with table 200 routing the
# subnet without a source address, so the run replaces that route and moves the rule
mkbed() {
	rn_ns P peer
	rn_ns H host
	# no DAD: a link-local address that turns up later would change the routes compared
	rn_in "$H" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	rn_bridge "$P" br0 198.18.0.254/24
	ip -n "$P" addr add "${P6}:fe/64" dev br0 nodad
	# fixed MACs: a host built again after a failed kill point has the same link-local routes
	for i in 0 1; do
		ip -n "$H" link add "nic$i" address "02:00:00:00:00:1$i" type veth peer name "hp$i" netns "$P"
		ip -n "$P" link set "hp$i" master br0 up
		ip -n "$H" addr add "198.18.0.$((11 + i))/24" dev "nic$i"
		ip -n "$H" addr add "${P6}:$((11 + i))/64" dev "nic$i" nodad
		ip -n "$H" link set "nic$i" up
	done
	ip -n "$H" link add mgmt0 address 02:00:00:00:00:20 type veth peer name mgmtp netns "$P"
	ip -n "$P" link set mgmtp up
	ip -n "$H" addr add 198.19.0.2/24 dev mgmt0
	ip -n "$H" link set mgmt0 up
	ip -n "$P" addr add 198.19.0.1/24 dev mgmtp
	ip -n "$H" route add default via 198.19.0.1 dev mgmt0
	ip -n "$H" route add 198.18.0.0/24 dev nic0 table 200
	ip -n "$H" rule add from 198.18.0.11 lookup 200 priority 32767

	# --persist into a root holding a NetworkManager profile for nic0 (changed in place) and
	# no sysctl.d (a new directory and file)
	R=$T/root
	mkdir -p "$R/etc/NetworkManager/system-connections"
	cat >"$R/etc/NetworkManager/system-connections/nic0.nmconnection" <<'EOF'
[connection]
id=nic0
uuid=0b7c1d2e-0000-4000-8000-000000000011
type=ethernet
interface-name=nic0

[ipv4]
method=manual
address1=198.18.0.11/24
EOF
	chmod 600 "$R/etc/NetworkManager/system-connections/nic0.nmconnection"
}
mkbed
ST=$T/state
args=(--state-dir "$ST" --root "$R" --persist --manager networkmanager --family both
	nic0)

snap() {
	echo "== ip -4 rule"; ip -n "$H" -4 rule show
	echo "== ip -6 rule"; ip -n "$H" -6 rule show
	echo "== ip -4 route table all"; ip -n "$H" -4 route show table all
	echo "== ip -6 route table all"; ip -n "$H" -6 route show table all
	echo "== sysctls"
	rn_in "$H" bash -c 'for f in /proc/sys/net/ipv4/conf/*/{arp_ignore,arp_announce,arp_filter,rp_filter}; do echo "$f=$(<"$f")"; done'
	echo "== files"
	(cd "$R" && find . -printf '%y %m %s %p\n' | sort && find . -type f -print0 | sort -z | xargs -0 -r md5sum)
}

# the stand-ins: $KILL_AT = N (0: only count), $KILL_WHEN = before|after
SH=$T/shim
mkdir -p "$SH"
for c in ip sysctl mkdir cp mv rm chmod; do
	real=$(command -v "$c") || rn_skip "skip: no $c"
	cat >"$SH/$c" <<EOF
#!/bin/sh
mut=1
case $c in
ip) mut=0; for a in "\$@"; do case \$a in add|del|delete|replace|change|flush) mut=1 ;; esac; done ;;
sysctl) mut=0; for a in "\$@"; do case \$a in -*w*|*=*) mut=1 ;; esac; done ;;
esac
if [ \$mut = 1 ] && [ -n "\${KILL_COUNT:-}" ]; then
	n=0
	[ -f "\$KILL_COUNT" ] && read -r n <"\$KILL_COUNT"
	n=\$((n + 1))
	echo \$n >"\$KILL_COUNT"
	echo "\$n $c \$*" >>"\$KILL_COUNT.log"
	if [ "\$n" = "\${KILL_AT:-0}" ]; then
		read -r _ _ _ _ pgid _ </proc/\$\$/stat
		echo "\$KILL_WHEN \$n: $c \$*" >"\$KILL_COUNT.killed"
		[ "\$KILL_WHEN" = before ] && kill -s KILL -- -"\$pgid"
		"$real" "\$@"
		kill -s KILL -- -"\$pgid"
	fi
fi
exec "$real" "\$@"
EOF
	chmod +x "$SH/$c"
done

# killed_run N WHEN [ARG...]: the script (with args, or ARG...) under the stand-ins, killed at
# change N; N=0 counts only and returns the exit status. A run that was to be killed and was
# not (it exited on its own) fails the test.
killed_run() {
	local n=$1 when=$2 rc
	shift 2
	[ $# -gt 0 ] || set -- "${args[@]}"
	rm -f "$T/count" "$T/count.log" "$T/count.killed"
	rn_in "$H" env PATH="$SH:$PATH" KILL_COUNT="$T/count" KILL_AT="$n" KILL_WHEN="$when" \
		setsid -w "$TOOL" "$@" >"$T/killed.out" 2>&1
	rc=$?
	[ "$n" = 0 ] && return $rc
	[ $rc = 137 ] && [ -s "$T/count.killed" ] ||
		{ cat "$T/killed.out"; rn_fail "$when $n: the run was not killed (exit $rc)"; }
}
plain() { rn_in "$H" "$TOOL" "$@"; }

snap >"$T/before"
# the uninterrupted run: its end state, and the number of change points
killed_run 0 none || { cat "$T/killed.out"; rn_fail "the uninterrupted run failed"; }
grep -q '^ip rule del from 198.18.0.11 lookup 200 priority 32767' "$T/killed.out" ||
	{ cat "$T/killed.out"; rn_fail "the user's rule at 32767 was not moved"; }
total=$(cat "$T/count")
cp "$T/count.log" "$T/points"
snap >"$T/ref"
plain --undo --state-dir "$ST" >"$T/undo.out" 2>&1 || { cat "$T/undo.out"; rn_fail "undo failed"; }
snap >"$T/now"
rn_assert_same "$T/before" "$T/now" "undo after the uninterrupted run"
rn_log "$total change points:"
sed 's/^/    /' "$T/points"

# rebuild: a fresh host after a kill point that left it changed
journal_rebuild() { rn_ns_del "$H"; rn_ns_del "$P"; rm -rf "$R" "$ST"; mkbed; }
journal_points() { # func
	local n when
	tried=0 bad=0 t0=$(date +%s)
	for ((n = 1; n <= total; n++)); do
		for when in before after; do
			tried=$((tried + 1))
			"$1" "$n" "$when" || { bad=$((bad + 1)); journal_rebuild; }
		done
	done
	rn_log "$tried kill points ($total changes, before and after each) in $(($(date +%s) - t0)) s"
}
