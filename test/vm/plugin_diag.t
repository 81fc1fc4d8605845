#!/usr/bin/env bash
# A path that goes bad in the middle of a transfer (what a late ARP flux does): the plugin's
# QP fails with completion status 12, and its WARN carries the route diagnosis for that peer
# (the neighbour entry holds the wrong NIC's MAC, and the fix) instead of a bare status.
# rxe re-reads the neighbour table for every packet, so poisoning h0's entry for h1/eth0 with
# h1/eth1's MAC mid-transfer sends the QP's packets to a NIC that drops them.
# Then the causes only the NIC's counters and the port history tell (issue #17): h0 eth0's
# carrier pulled for 3 s mid-transfer (link-flap: when, for how long, advice, no command), and
# h1's entry for h0/eth0 poisoned with h0/eth1's MAC (the peer's replies land on h0 eth1:
# replies-elsewhere, with the packet counts).
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
# The fixed scenario from plain ip rules and sysctls: the script costs seconds per boot and per
# reset under TCG; doctor.t and plugin_pods.t run scripts/roce-policy-routing itself.
export BED_POLICY=${BED_POLICY:-plain}
plugin_prereq

body() {
	local wrong right srv cli out rc t0 secs
	B up --hosts 2 --nics 2 --scenario fixed --owner "$BED_OWNER" >/dev/null
	wrong=$(bed_mac 1 1)
	right=$(bed_mac 1 0)
	echo "bed: 2 hosts x 2 NICs, scenario fixed; h1/eth0 is $right, h1/eth1 is $wrong"

	t_step "a long transfer h0/rxe0 -> h1/rxe0, poisoned after it started"
	drv_start srv 1 "${FAULT_ENV[@]}" "${NOFO_ENV[@]}" -- --dev 0 --size 256K --iters 100000 \
		server "$(bed_ip 1 0):18661"
	wait_server 1 18661 "$srv"
	drv_start cli 0 "${FAULT_ENV[@]}" "${NOFO_ENV[@]}" -- --dev 0 client "$(bed_ip 1 0):18661"
	wait_out "$cli" "connected [0-9]+ connection" 60 || rn_fail "the client never connected"
	sleep 1
	B run 0 -- bash -c 'pgrep -x nccl-net-driver >/dev/null' || {
		B peek "$cli" | sed 's/^/  client| /'
		rn_fail "the client was not running any more when the path was to be broken"
	}
	t0=$(date +%s.%N)
	B fault 0 arp-poison --nic 0 --peer 1:0 --mac "$wrong" || rn_fail "could not poison"
	out=$(B wait --timeout 60 "$cli" 2>&1)
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
	echo "$out" | sed 's/^/  client| /'
	echo "(client ended ${secs} s after the poisoning)"
	B kill "$srv" >/dev/null 2>&1
	B wait "$srv" >/dev/null 2>&1

	[ $rc -eq 1 ] || rn_fail "client exit $rc, want 1 (a plugin error)"
	grep -q "NCCL WARN.*RETRY_EXC_ERR" <<<"$out" ||
		rn_fail "no WARN naming the completion status RETRY_EXC_ERR"
	grep -q "NCCL WARN.*RETRY_EXC_ERR.*neigh-wrong-mac" <<<"$out" ||
		rn_fail "the completion error's WARN carries no route diagnosis (neigh-wrong-mac)"
	grep -q "NCCL WARN.*RETRY_EXC_ERR.*$wrong" <<<"$out" ||
		rn_fail "the diagnosis does not name the wrong MAC $wrong"
	# "Fix: CMD" when it all runs here, "Fix (on h1): ...; then fix (on h0): ..." when the
	# peer has a part (ARP flux there is one cause of a wrong MAC)
	grep -qE "NCCL WARN.*RETRY_EXC_ERR.*Fix( \(on [^)]+\))?: " <<<"$out" ||
		rn_fail "the diagnosis names no fix"
	grep -Eq "NCCL WARN.*counters of rxe0:1 over the last [0-9.]+ s: " <<<"$out" ||
		rn_fail "the completion error's WARN carries no counter figures"
	rn_log "ok: mid-transfer: status 12 reported with the cause (wrong MAC) and the fix, in ${secs} s"
	B run 0 -- ip neigh del "$(bed_ip 1 0)" dev eth0 || rn_fail "could not undo the poisoning"

	t_step "h0 eth0's carrier pulled for 3 s mid-transfer (the retry budget is ~0.5 s)"
	long_pair 18662
	B carrier 0 0 off || rn_fail "carrier off"
	sleep 3
	B carrier 0 0 on || rn_fail "carrier on"
	end_pair
	grep -Eq "NCCL WARN .*\[link-flap\]: rxe0:1 \(eth0\): the port went down at [0-9:.]+ UTC for [0-9]+ ms.*longer than the QP retry budget of [0-9]+ ms.*eth0 is administratively up: its carrier was lost.*[Ww]hat to do: check the cable" <<<"$out" ||
		rn_fail "the flap is not named link-flap with its time, length and advice"
	grep -q "ip link set dev eth0 up" <<<"$out" &&
		rn_fail "an admin-up netdev with its carrier lost was given 'ip link set dev eth0 up'"
	grep -Eq "NCCL WARN .*counters of rxe0:1 over the last [0-9.]+ s: .*link downs 1" <<<"$out" ||
		rn_fail "the counters do not show the link down"
	rn_log "ok: carrier lost for 3 s: link-flap with when and how long, advice instead of a command"

	t_step "h1's entry for h0/eth0 poisoned with h0/eth1's MAC mid-transfer: replies land on eth1"
	long_pair 18663
	B fault 1 arp-poison --nic 0 --peer 0:0 --mac "$(bed_mac 0 1)" || rn_fail "could not poison"
	end_pair
	grep -Eq "NCCL WARN .*\[replies-elsewhere\]: rxe0:1 \(eth0\): the peer's packets land on another NIC of this host: eth1 \(rxe1\) received [0-9]+ packets addressed to no address of its own.*rxe0 sent [0-9]+, received [0-9]+ and timed out [0-9]+ times" <<<"$out" ||
		rn_fail "h0's WARN does not name replies-elsewhere with the packet counts"
	grep -qi "replies-elsewhere.*fix (on h1): sysctl -w net.ipv4.conf.all.arp_ignore=1 .*; ip neigh flush dev eth0 to $(bed_ip 0 0) nud all" <<<"$out" ||
		rn_fail "replies-elsewhere does not name the fix on h1"
	rn_log "ok: runtime ARP flux at the peer: replies-elsewhere, named from the counters"
}

# A long transfer h0/rxe0 -> h1/rxe0 (client output in $cli), until the fault ends it.
long_pair() { # port
	drv_start srv 1 "${FAULT_ENV[@]}" "${NOFO_ENV[@]}" -- --dev 0 --size 256K --iters 100000 \
		server "$(bed_ip 1 0):$1"
	wait_server 1 "$1" "$srv" || rn_fail "the server did not listen"
	drv_start cli 0 "${FAULT_ENV[@]}" "${NOFO_ENV[@]}" -- --dev 0 client "$(bed_ip 1 0):$1"
	wait_out "$cli" "connected [0-9]+ connection" 60 || rn_fail "the client never connected"
	sleep 1
}

# The client's end (into $out, shown), the server stopped.
end_pair() {
	local rc
	out=$(B wait --timeout 60 "$cli" 2>&1)
	rc=$?
	B kill "$srv" >/dev/null 2>&1
	B wait "$srv" >/dev/null 2>&1
	grep WARN <<<"$out" | sed 's/^/  client| /'
	[ $rc -eq 1 ] || rn_fail "client exit $rc, want 1 (a plugin error)"
}

bed_attempt body
