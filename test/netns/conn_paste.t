#!/usr/bin/env bash
# The connection-level causes' fixes, pasted as printed: our host (policy routing,
# fixed sysctls) and a peer namespace "peerhost" with two NICs in the same subnet.
# For each cause the check prints, every "paste DEV ID HOST COMMANDS" line runs in a
# shell (set -e) on the host it names ("here" or "peerhost"), and the same check
# then says good. A cause no command can fix prints no command, only what to do.
set -u
. "$(dirname "$0")/route_lib.sh"
rn_require

rn_conn_pair
TO_P1=(eth0 198.18.0.11 "$MAC1" 1000 peerhost p1) # the connection eth0 -> p1, as HELLO says

fail() { echo "FAIL [$1] $2"; RN_FAILS=$((RN_FAILS + 1)); }
mtu() { ip -n "$1" -o link show dev "$2" | sed -n 's/.* mtu \([0-9]*\).*/\1/p'; }

# paste NAME OUTPUT: run each printed part on the host it names, in order.
paste_fixes() {
	local name=$1 out=$2 line dev id host cmds ns n=0
	while IFS= read -r line; do
		read -r _ dev id host cmds <<<"$line"
		case $host in
		here) ns=$H ;;
		peerhost) ns=$P ;;
		*) fail "$name" "a fix for an unknown host '$host': $line"; continue ;;
		esac
		echo "    ($host)\$ $cmds"
		ip netns exec "$ns" bash -ec "$cmds" >/dev/null ||
			fail "$name" "pasted on $host, failed: $cmds"
		n=$((n + 1))
	done < <(printf '%s\n' "$out" | grep '^paste ')
	[ "$n" -gt 0 ] || fail "$name" "no command printed"
}

# check NAME WANT OUTPUT: the conn line's result and cause
check() {
	local line
	line=$(printf '%s\n' "$3" | grep '^conn ')
	case $line in
	*"$2 "*) echo "ok   [$1] $2" ;;
	*) fail "$1" "want '$2' in: $line"; printf '%s\n' "$3" ;;
	esac
}

# advice_only NAME OUTPUT HOST: no command, and the advice says what to do on HOST
advice_only() {
	printf '%s\n' "$2" | grep -q '^paste ' &&
		fail "$1" "a command printed: $(grep '^paste ' <<<"$2")"
	printf '%s\n' "$2" | grep -q "^advice .*$3" || fail "$1" "no advice naming $3"
	printf '%s\n' "$2" | grep -q '^finding .* fix=$' || fail "$1" "the finding has a fix"
	echo "ok   [$1] no command; $(grep '^advice ' <<<"$2" | cut -d' ' -f4-)"
}

# 1. neigh-wrong-mac from the peer's ARP flux (a race: tried until it shows): the peer's
# sysctls on peerhost, then the stale entry here.
for i in $(seq 10); do
	ip -n "$H" neigh flush dev eth0
	out=$(rn_pc "$H" conn "${TO_P1[@]}")
	printf '%s\n' "$out" | grep -q 'result=refused cause=neigh-wrong-mac ' && break
done
if printf '%s\n' "$out" | grep -q 'result=refused cause=neigh-wrong-mac '; then
	echo "ok   [flux] neigh-wrong-mac after $i tries"
	[ "$(grep -c '^paste ' <<<"$out")" = 2 ] || fail flux "want two parts: $out"
	grep '^paste ' <<<"$out" | head -1 |
		grep -q '^paste eth0 neigh-wrong-mac peerhost sysctl -w .*arp_ignore=1' ||
		fail flux "the first part is not the peer's sysctls: $out"
	grep '^paste ' <<<"$out" | tail -1 |
		grep -q '^paste eth0 neigh-wrong-mac here ip neigh flush dev eth0 to 198.18.0.11' ||
		fail flux "the second part is not our flush: $out"
	paste_fixes flux "$out"
	for i in 1 2 3; do
		check "flux fixed $i" "result=ok cause=none" "$(rn_pc "$H" conn "${TO_P1[@]}")"
	done
else
	echo "skip [flux] ARP flux did not show in 10 tries (route_conn.t asserts it does)"
	rn_sysctl "$P" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
fi

# 2. neigh-wrong-mac from a static entry here (the peer is fixed by now): the flush
# must take a permanent entry too.
ip -n "$H" neigh replace 198.18.0.11 lladdr "$MAC0" dev eth0 nud permanent
out=$(rn_pc "$H" conn "${TO_P1[@]}")
check static "result=refused cause=neigh-wrong-mac" "$out"
paste_fixes static "$out"
check "static fixed" "result=ok cause=none" "$(rn_pc "$H" conn "${TO_P1[@]}")"
ip -n "$H" neigh show 198.18.0.11 dev eth0 | grep -q PERMANENT &&
	fail static "the permanent entry stayed"

# 3. mtu-mismatch, ours the smaller: the command runs here.
ip -n "$P" link set dev p1 mtu 9000
out=$(rn_pc "$H" conn "${TO_P1[@]}" "$(mtu "$P" p1)")
check "mtu here" "result=ok cause=mtu-mismatch" "$out"
grep -q '^paste eth0 mtu-mismatch here ip link set dev eth0 mtu 9000$' <<<"$out" ||
	fail "mtu here" "$out"
paste_fixes "mtu here" "$out"
check "mtu here fixed" "result=ok cause=none" "$(rn_pc "$H" conn "${TO_P1[@]}" "$(mtu "$P" p1)")"

# 4. mtu-mismatch, the peer's the smaller: the command runs on the peer.
TO_P0=(eth0 198.18.0.10 "$MAC0" 1000 peerhost p0)
out=$(rn_pc "$H" conn "${TO_P0[@]}" "$(mtu "$P" p0)")
check "mtu peer" "result=ok cause=mtu-mismatch" "$out"
grep -q '^paste eth0 mtu-mismatch peerhost ip link set dev p0 mtu 9000$' <<<"$out" ||
	fail "mtu peer" "$out"
paste_fixes "mtu peer" "$out"
check "mtu peer fixed" "result=ok cause=none" "$(rn_pc "$H" conn "${TO_P0[@]}" "$(mtu "$P" p0)")"

# 5. route-wrong-nic: eth0's table sends the subnet out of eth1.
ip -n "$H" route replace 198.18.0.0/24 dev eth1 table 101
out=$(rn_pc "$H" -c warn conn "${TO_P1[@]}" "$(mtu "$P" p1)")
check route "result=refused cause=route-wrong-nic" "$out"
paste_fixes route "$out"
check "route fixed" "result=ok cause=none" "$(rn_pc "$H" conn "${TO_P1[@]}" "$(mtu "$P" p1)")"

# 6. Causes no command here can fix: what to do, and no command.
out=$(rn_pc "$H" conn eth0 198.18.0.99 02:00:00:00:00:99 300 nohost)
check unresolved "result=refused cause=neigh-unresolved" "$out"
advice_only unresolved "$out" nohost
out=$(rn_pc "$H" conn "${TO_P1[@]}" 0 arp-flux)
check "peer refused" "result=refused cause=peer-refused" "$out"
advice_only "peer refused" "$out" peerhost

rn_finish
