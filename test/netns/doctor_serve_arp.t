#!/usr/bin/env bash
# A client cannot make roce-doctor serve ARP for addresses it chooses: a session claiming 32
# NICs, 12 at addresses outside B's subnet (198.19.7.x, on-link through an extra route, so
# that a neighbour check would ARP for them) and 20 inside it (198.18.0.101-120, nobody's),
# gets neighbour and ARP work only for the first 16 of its addresses inside B's NICs' subnets:
# no ARP request and no neighbour entry on B for the others (counted on the bridge, in the
# kernel's table). Prints the ARP requests per target.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
doc_bed
ip -n "$B" route add 198.19.0.0/16 dev nic0
serve_start "$T/serve.log" --timeout 60

out=$(seq -f '198.19.7.%g' 1 12 | paste -sd,)
in=$(seq -f '198.18.0.%g' 101 120 | paste -sd,)
bg_start SN ip netns exec "$RN_PEER" python3 "$HOSTILE" arpcount br0 --seconds 8 --ready "$T/sn.ready" >"$T/arp.out" 2>&1
wait_file "$T/sn.ready" "the ARP counter did not start"
ip netns exec "$A" python3 "$HOSTILE" session 198.18.0.21 18515 --ips "$out,$in" >"$T/s.out" 2>&1
cat "$T/s.out"
grep -q '^session: 0 of 0 probe requests answered.*all sent' "$T/s.out" || rn_fail "the session did not run to DONE"
ip -n "$B" neigh show >"$T/neigh.txt"
wait "$SN"
echo "== ARP requests seen on the bridge, per target"
cat "$T/arp.out"
grep 'addresses got no neighbour' "$T/serve.log"

grep -q '^arp 198\.19\.7\.' "$T/arp.out" && rn_fail "B sent ARP requests for addresses outside its subnets"
grep '198\.19\.7\.' "$T/neigh.txt" && rn_fail "B has neighbour entries for addresses outside its subnets"
asked=$(awk '$1 == "arp" && $2 ~ /^198\.18\.0\.1[0-2][0-9]$/ { n++ } END { print n + 0 }' "$T/arp.out")
echo "in-subnet addresses ARPed: $asked of 20 claimed (cap 16)"
[ "$asked" -ge 1 ] || rn_fail "no ARP work at all for the in-subnet addresses (the check did not run)"
[ "$asked" -le 16 ] || rn_fail "$asked in-subnet addresses ARPed, over the cap of 16"
for a in 117 118 119 120; do
	grep -q "^arp 198\.18\.0\.$a " "$T/arp.out" && rn_fail "198.18.0.$a, past the first 16, was ARPed"
done
grep -q '16 of its 32 addresses got no neighbour or ARP work here' "$T/serve.log" ||
	rn_fail "serve does not log the addresses it left out"
echo PASS
