#!/usr/bin/env bash
# Real ARP: with default sysctls every host NIC answers a peer's ARP request for NIC1's
# address (ARP flux, so the peer may learn NIC0's MAC); after roce-policy-routing only NIC1
# answers, and the peer's neighbour entry for NIC1's address is NIC1's MAC.
. "$(dirname "$0")/policy_lib.sh"
rn_host_ns 3
H=$RN_HOST P=$RN_PEER
TARGET=${RN_IP[1]}
mac0=$(ip -n "$H" -o link show dev nic0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
mac1=$(ip -n "$H" -o link show dev nic1 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
echo "nic0 $mac0, nic1 $mac1, asking for $TARGET from the peer"

# MACs that answer one round of ARP requests for TARGET (arping from iputils), sorted
answers() {
	rn_in "$P" arping -c "$1" -w 3 -I br0 -s "$RN_PEER_IP" "$TARGET" 2>&1 |
		grep -io 'reply from [0-9.]* \[[0-9a-f:]*\]' | grep -o '\[.*\]' | tr -d '[]' | tr 'A-F' 'a-f' | sort -u
}
peer_neigh() { # MAC the peer resolves TARGET to after source-bound traffic
	ip -n "$P" neigh flush dev br0
	rn_in "$P" ping -q -c 1 -W 2 -I "$RN_PEER_IP" "$TARGET" >/dev/null || rn_fail "ping $TARGET failed"
	ip -n "$P" neigh show "$TARGET" dev br0 | grep -o 'lladdr [0-9a-f:]*' | cut -d' ' -f2
}

if command -v arping >/dev/null && arping -V 2>&1 | grep -q iputils; then
	before=$(answers 3)
	echo "before: answered by $(echo $before)"
	echo "$before" | grep -qx "$mac1" || rn_fail "nic1 did not answer for its own address"
	echo "$before" | grep -qx "$mac0" || rn_fail "no ARP flux before the fix (nic0 did not answer for $TARGET)"
else
	echo "iputils arping not installed: checking only the neighbour entry after the fix"
fi

rn_in "$H" "$TOOL" --state-dir "$T/state" nic0 nic1 nic2 || rn_fail "apply failed"

if command -v arping >/dev/null && arping -V 2>&1 | grep -q iputils; then
	after=$(answers 2)
	echo "after: answered by $(echo $after)"
	[ "$after" = "$mac1" ] || rn_fail "after the fix ARP for $TARGET answered by: $(echo $after)"
fi
got=$(peer_neigh)
echo "peer resolves $TARGET to $got"
[ "$got" = "$mac1" ] || rn_fail "peer resolved $TARGET to $got, want nic1's $mac1"
echo PASS
