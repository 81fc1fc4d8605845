#!/usr/bin/env bash
# Proof that the bed reproduces the seed's failure and its cure, on real kernel Soft-RoCE:
# 2 guests x 2 NICs in one /24. With kernel defaults and host 0's neighbour entry for host 1 NIC 0
# poisoned with host 1 NIC 1's MAC (what ARP flux does, made deterministic), an RC ping-pong
# h0/rxe0 -> h1/rxe0 fails and the entry holds the wrong MAC; after the `fixed` scenario (per-NIC
# policy routing, arp_ignore=1, arp_announce=2, neighbours flushed) it passes and the entries
# hold the right MACs.
set -u
# shellcheck source=lib/test.sh
. "$(dirname "$0")/lib/test.sh"
bed_prereq ibv_rc_pingpong stdbuf

# One RC ping-pong h0 NIC0 -> h1 NIC0; prints the client's output; returns its status.
pingpong() { # port client-timeout
	local port=$1 tmo=$2 g0 g1 srv rc
	# GID indexes from each guest's GID table (type RoCE v2, the NIC's IPv4), never fixed.
	g0=$(B gid 0 0) && g1=$(B gid 1 0) || rn_fail "no RoCE v2 IPv4 GID on rxe0"
	srv=$(bg --timeout $((tmo + 20)) 1 -- stdbuf -oL ibv_rc_pingpong -d rxe0 -g "$g1" -p "$port" -n 100)
	wait_listen 1 "$port" || rn_fail "ibv_rc_pingpong server did not start"
	# rxe treats ibv_rc_pingpong's retry_cnt 7 as infinite: a broken path hangs; bound it.
	B run --timeout "$tmo" 0 -- stdbuf -oL ibv_rc_pingpong -d rxe0 -g "$g0" -p "$port" -n 100 \
		"$(bed_ip 1 0)"
	rc=$?
	B kill "$srv"
	B wait "$srv" >/dev/null 2>&1
	return $rc
}

body() {
	local peer right wrong out rc mac
	B up --hosts 2 --nics 2 --scenario broken --owner "$BED_OWNER" >/dev/null
	peer=$(bed_ip 1 0)
	right=$(bed_mac 1 0)
	wrong=$(bed_mac 1 1)

	t_step "broken: kernel defaults, h0's entry for $peer poisoned with h1 eth1's MAC"
	B fault 0 arp-poison --nic 0 --peer 1:0 --mac "$wrong" || rn_fail "could not poison"
	out=$(pingpong 18515 10 2>&1)
	rc=$?
	echo "$out"
	echo "client exit status $rc"
	# The TCP exchange of QP numbers must have worked: the failure is the RC traffic itself.
	grep -q 'remote address:.*GID ::ffff:198.18.0.20' <<<"$out" ||
		rn_fail "broken: the ping-pong did not get as far as the QP exchange (bed problem?)"
	[ $rc -ne 0 ] || rn_fail "broken: RC ping-pong passed over a poisoned neighbour entry"
	rn_log "ok: broken: RC ping-pong h0/rxe0 -> h1/rxe0 fails (status $rc)"
	mac=$(neigh_mac 0 0 "$peer")
	[ "$mac" = "$wrong" ] || rn_fail "broken: h0 eth0 entry for $peer is '$mac', expected $wrong"
	rn_log "ok: broken: h0 eth0 neighbour $peer -> $mac (h1 eth1: wrong NIC)"

	t_step "fixed: per-NIC policy routing, arp_ignore=1, arp_announce=2, neighbours flushed"
	B scenario fixed || rn_fail "scenario fixed failed"
	out=$(pingpong 18516 30 2>&1)
	rc=$?
	echo "$out"
	[ $rc -eq 0 ] || rn_fail "fixed: RC ping-pong failed (status $rc)"
	grep -q 'iters in' <<<"$out" || rn_fail "fixed: no ping-pong result printed"
	rn_log "ok: fixed: RC ping-pong h0/rxe0 -> h1/rxe0 passes"
	mac=$(neigh_mac 0 0 "$peer")
	[ "$mac" = "$right" ] || rn_fail "fixed: h0 eth0 entry for $peer is '$mac', expected $right"
	rn_log "ok: fixed: h0 eth0 neighbour $peer -> $mac (h1 eth0: right NIC)"
	mac=$(neigh_mac 1 0 "$(bed_ip 0 0)")
	[ "$mac" = "$(bed_mac 0 0)" ] ||
		rn_fail "fixed: h1 eth0 entry for $(bed_ip 0 0) is '$mac', expected $(bed_mac 0 0)"
	rn_log "ok: fixed: h1 eth0 neighbour $(bed_ip 0 0) -> $mac (h0 eth0: right NIC)"
}

bed_attempt body
