#!/usr/bin/env bash
# A GID that moves under a running job (NCCL#1333): one nccl-net-driver process, three rounds of
# connect + checked transfer. Between rounds 1 and 2 h0's eth0 address is re-added behind
# another one, so its GID comes back at another index and the old index holds the other
# address; on the accepting side (h1) a VLAN's entries take the old slot and the address
# comes back higher. Round 2 must follow both (and carry checked data): each comm resolves
# its GID by address when it is made, connect and accept alike. Between rounds 2 and 3 the address
# is removed: round 3's connect is refused with gid-gone. Then a live comm whose address is
# removed mid-transfer fails naming gid-gone too. One NIC per host: no flux, no policy tables.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
plugin_prereq

body() {
	local a b other srv cli out rc bidx
	B up --hosts 2 --nics 1 --scenario broken --owner "$BED_OWNER" >/dev/null
	a=$(bed_ip 0 0)
	b=$(bed_ip 1 0)
	other=198.18.0.99
	echo "bed: 2 hosts x 1 NIC; h0 eth0 $a (GID index $(B gid 0 0)), h1 eth0 $b (GID index $(B gid 1 0))"

	t_step "one job, three rounds: the address re-added between 1 and 2, removed between 2 and 3"
	drv_start srv 1 "${FAULT_ENV[@]}" NCCL_DEBUG_SUBSYS=INIT,NET -- -v --dev 0 --size 65537 \
		--iters 4 --rounds 3 --between "test/vm/lib/gid-vlan-between $b 198.18.1.2 24" \
		server "$b:18801"
	out=$(drv_run 0 "${FAULT_ENV[@]}" NCCL_DEBUG_SUBSYS=INIT,NET -- -v --dev 0 --rounds 3 \
		--between "test/vm/lib/gid-between $a $other 24" client "$(bed_ip 1 0):18801")
	rc=$?
	srv_out=$(B wait "$srv" 2>&1)
	grep -E "round|gid-between|moved|checksums|WARN" <<<"$out" | sed 's/^/  client| /'
	[ "$(grep -c 'checksums match' <<<"$out")" -eq 2 ] || {
		echo "$out" | sed 's/^/  client| /'
		echo "$srv_out" | sed 's/^/  server| /'
		rn_fail "rounds 1 and 2 did not both carry checked data"
	}
	grep -q "gid-between: $a is at index 2" <<<"$out" ||
		rn_fail "the re-added address did not come back at index 2 (the bed changed?)"
	grep -q "INFO .*rxe0:1: the GID of .* moved from index 1 to 2" <<<"$out" ||
		rn_fail "round 2's connect did not say it followed the GID from index 1 to 2"
	grep -q "NCCL WARN .*new comm refused \[gid-gone\]: .*address $a is no longer in the port's GID table (it was at index 2" <<<"$out" ||
		rn_fail "round 3 was not refused by name (gid-gone, old index 2)"
	grep -q "\[gid-gone\].*idx1 $other v2 on eth0.*fix: ip addr add $a/24 dev eth0" <<<"$out" ||
		rn_fail "the refusal does not say what the table holds now and the fix"
	[ $rc -eq 1 ] || rn_fail "client exit $rc, want 1 (round 3 refused)"
	rn_log "ok: GID followed from index 1 to 2 between two connects (checked data), then gid-gone refused"

	t_step "the accepting side: its GID moved behind a VLAN's entries between rounds 1 and 2"
	grep -E "round|gid-vlan-between|moved|up:|WARN" <<<"$srv_out" | sed 's/^/  server| /'
	bidx=$(sed -n "s/^gid-vlan-between: $b is at index \([0-9]*\)$/\1/p" <<<"$srv_out")
	[ -n "$bidx" ] && [ "$bidx" -gt 1 ] ||
		rn_fail "h1's address did not come back at a higher index (the bed changed?)"
	grep -q "recv comm rxe0:1 .* up: .*, GID index 1$" <<<"$srv_out" ||
		rn_fail "round 1's accepted comm did not use index 1"
	grep -q "INFO .*rxe0:1: the GID of $b moved from index 1 to $bidx" <<<"$srv_out" ||
		rn_fail "round 2's accept did not say it followed the GID from index 1 to $bidx"
	grep -q "recv comm rxe0:1 .* up: .*, GID index $bidx$" <<<"$srv_out" ||
		rn_fail "round 2's accepted comm did not make its QPs with index $bidx"
	rn_log "ok: the accepted comm of round 2 used index $bidx (the VLAN's entry holds 1), and said so"

	t_step "a live comm whose address is removed mid-transfer"
	B run 0 -- bash -c "ip addr del $other/24 dev eth0 && ip addr add $a/24 dev eth0" ||
		rn_fail "could not restore $a as eth0's only address"
	drv_start srv 1 "${FAULT_ENV[@]}" -- --dev 0 --size 256K --iters 100000 \
		server "$(bed_ip 1 0):18802"
	wait_server 1 18802 "$srv" || rn_fail "server did not listen"
	drv_start cli 0 "${FAULT_ENV[@]}" -- --dev 0 client "$(bed_ip 1 0):18802"
	wait_out "$cli" "connected [0-9]+ connection" 60 || rn_fail "the client never connected"
	sleep 1
	B run 0 -- ip addr del "$a/24" dev eth0 || rn_fail "could not remove $a"
	out=$(B wait --timeout 60 "$cli" 2>&1)
	rc=$?
	B kill "$srv" >/dev/null 2>&1
	B wait "$srv" >/dev/null 2>&1
	grep WARN <<<"$out" | sed 's/^/  client| /'
	[ $rc -eq 1 ] || rn_fail "client exit $rc, want 1 (a plugin error)"
	grep -q "NCCL WARN .*\[gid-gone\]: rxe0:1 (eth0): address $a is no longer in the port's GID table" <<<"$out" ||
		rn_fail "the live comm's failure does not name gid-gone"
	rn_log "ok: live comm failed naming gid-gone"
}

bed_attempt body
