#!/usr/bin/env bash
# Per-connection checks against real ARP: our host (policy routing, fixed sysctls)
# talks to a peer namespace with two NICs in the same subnet. With the peer's
# default sysctls both of its NICs answer ARP for either IP (ARP flux) and our
# neighbour entry for peer NIC1's IP can hold peer NIC0's MAC: the check must say
# neigh-wrong-mac. With arp_ignore=1/arp_announce=2 on the peer it passes. An
# address nobody owns ends as neigh-unresolved within the timeout, the poll loop
# never blocking (max poll time printed, not asserted).
set -u
. "$(dirname "$0")/route_lib.sh"
rn_require

rn_conn_pair
echo "peer p0 $MAC0 198.18.0.10, p1 $MAC1 198.18.0.11"

out=$(rn_pc "$H" nic eth0 eth1)
rn_expect host-fixed "$out" eth0 verdict=ok
rn_expect host-fixed "$out" eth1 verdict=ok

# 1. ARP flux on the peer: the tool's verdict must agree with the kernel's entry,
# and the wrong entry must have been reproduced at least once.
wrong=0
for i in 1 2 3 4 5; do
	ip -n "$H" neigh flush dev eth0
	out=$(rn_pc "$H" conn eth0 198.18.0.11 "$MAC1" 1000 peerhost p1)
	line=$(printf '%s\n' "$out" | grep '^conn ')
	ent=$(ip -n "$H" neigh show 198.18.0.11 dev eth0 | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p')
	echo "try $i: kernel entry $ent; $line"
	if [ "$ent" = "$MAC0" ]; then
		wrong=$((wrong + 1))
		case $line in
		*"result=refused cause=neigh-wrong-mac "*) ;;
		*) echo "FAIL [flux] entry holds p0's MAC but: $line"; RN_FAILS=$((RN_FAILS + 1)) ;;
		esac
		printf '%s\n' "$out" | grep -q "^finding eth0 neigh-wrong-mac .*peer 198.18.0.11 is reached at the wrong NIC (MAC $MAC0 instead of $MAC1).*host peerhost" ||
			{ echo "FAIL [flux] message"; RN_FAILS=$((RN_FAILS + 1)); }
	elif [ "$ent" = "$MAC1" ]; then
		case $line in
		*"result=ok "*) ;;
		*) echo "FAIL [flux] entry holds p1's MAC but: $line"; RN_FAILS=$((RN_FAILS + 1)) ;;
		esac
	else
		echo "FAIL [flux] no neighbour entry after the check"; RN_FAILS=$((RN_FAILS + 1))
	fi
done
if [ $wrong -gt 0 ]; then
	echo "ok   [flux] reproduced $wrong/5 and named neigh-wrong-mac"
else
	echo "FAIL [flux] ARP flux never reproduced"; RN_FAILS=$((RN_FAILS + 1))
fi

# Diagnosis reads the same live entry without sending anything.
out=$(rn_pc "$H" diag eth0 198.18.0.11 "$MAC1")
ent=$(ip -n "$H" neigh show 198.18.0.11 dev eth0 | sed -n 's/.*lladdr \([0-9a-f:]*\).*/\1/p')
if [ "$ent" = "$MAC0" ]; then
	case $out in
	*"result=found cause=neigh-wrong-mac"*) echo "ok   [diag] neigh-wrong-mac" ;;
	*) echo "FAIL [diag] $out"; RN_FAILS=$((RN_FAILS + 1)) ;;
	esac
fi

# 2. The fix on the peer: arp_ignore=1, arp_announce=2.
rn_sysctl "$P" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
for i in 1 2 3; do
	ip -n "$H" neigh flush dev eth0
	out=$(rn_pc "$H" conn eth0 198.18.0.11 "$MAC1" 1000 peerhost p1)
	line=$(printf '%s\n' "$out" | grep '^conn ')
	case $line in
	*"result=ok "*) echo "ok   [peer-fixed] try $i: $line" ;;
	*) echo "FAIL [peer-fixed] try $i: $line"; RN_FAILS=$((RN_FAILS + 1)) ;;
	esac
done
out=$(rn_pc "$H" conn eth1 198.18.0.10 "$MAC0" 1000 peerhost p0)
case $out in
*"result=ok "*) echo "ok   [peer-fixed] eth1 -> p0" ;;
*) echo "FAIL [peer-fixed] eth1 -> p0: $out"; RN_FAILS=$((RN_FAILS + 1)) ;;
esac
out=$(rn_pc "$H" diag eth0 198.18.0.11 "$MAC1")
case $out in
*"result=healthy"*) echo "ok   [diag] healthy" ;;
*) echo "FAIL [diag] healthy: $out"; RN_FAILS=$((RN_FAILS + 1)) ;;
esac

# 3. Nobody has 198.18.0.99: unresolved within the timeout, polls never block.
out=$(rn_pc "$H" conn eth0 198.18.0.99 02:00:00:00:00:99 400 nohost)
line=$(printf '%s\n' "$out" | grep '^conn ')
echo "$line"
case $line in
*"result=refused cause=neigh-unresolved "*) echo "ok   [unresolved] neigh-unresolved" ;;
*) echo "FAIL [unresolved] $line"; RN_FAILS=$((RN_FAILS + 1)) ;;
esac

# 4. No route at all (198.19.0.0/16 is routed nowhere here): the kernel's own errno
# comes through netlink (libnl alone would fold it into a generic failure).
out=$(rn_pc "$H" conn eth0 198.19.0.5 02:00:00:00:00:05 200 nohost)
case $out in
*"result=refused cause=no-route "*"Network is unreachable"*) echo "ok   [no-route] ENETUNREACH kept" ;;
*) echo "FAIL [no-route] $out"; RN_FAILS=$((RN_FAILS + 1)) ;;
esac

# 5. The peer says its own path is broken: refused here too (unit-tested in depth);
# a route through the other NIC: break eth0's table.
ip -n "$H" route replace 198.18.0.0/24 dev eth1 table 101
out=$(rn_pc "$H" -c warn conn eth0 198.18.0.11 "$MAC1" 1000 peerhost p1)
case $out in
*"result=refused cause=route-wrong-nic "*) echo "ok   [route] route-wrong-nic" ;;
*) echo "FAIL [route] $out"; RN_FAILS=$((RN_FAILS + 1)) ;;
esac

rn_finish
