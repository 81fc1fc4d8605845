#!/usr/bin/env bash
# roce-doctor serve --listen ADDR binds that address alone: with B's NICs on 198.18.0.21 and
# .22, `serve --listen 198.18.0.22` has one listening socket, 198.18.0.22:18515; a peer that
# connects to .21 is refused and one to .22 is served. An address that is not this host's, or
# not an address (inet_aton's 127.1 and 0x7fffffff included), is an error before anything
# listens (exit 2); --listen 0.0.0.0 says it is every IPv4 address.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
doc_bed

serve_start "$T/serve.log" --listen 198.18.0.22 --timeout 60
cat "$T/serve.log"
socks=$(ip netns exec "$B" ss -Hltn 'sport = :18515' | awk '{print $4}' | sort | paste -sd' ')
echo "listening: $socks"
[ "$socks" = 198.18.0.22:18515 ] || rn_fail "serve --listen 198.18.0.22 listens on '$socks'"
grep -q 'listening on 198.18.0.22 port 18515' "$T/serve.log" || rn_fail "serve does not log the address"

doc "$A" peer 198.18.0.21 --netdev nic0,nic1 --timeout 5
echo "$OUT"
expect_rc 2 "peer to the address serve does not listen on"
grep -q 'Connection refused' <<<"$OUT" || rn_fail "peer to .21 was not refused"
doc "$A" peer 198.18.0.22 --netdev nic0,nic1 --timeout 5
[ "$RC" -eq 0 ] || [ "$RC" -eq 1 ] || { echo "$OUT"; rn_fail "peer to .22: exit $RC"; }
grep -q '^roce-doctor .* <-> .* via 198.18.0.22' <<<"$OUT" || { echo "$OUT"; rn_fail "peer to .22: no report"; }
grep -q 'pairs checked here' "$T/serve.log" || rn_fail "serve logged no session"

doc "$B" serve --netdev nic0,nic1 --listen 198.18.0.99 --port 18516 --timeout 1
echo "$OUT"
expect_rc 2 "--listen on an address B does not have"
grep -q 'cannot listen on 198.18.0.99 port 18516: .*not an address of this host' <<<"$OUT" ||
	rn_fail "--listen 198.18.0.99: the error does not say why"
doc "$B" serve --listen nowhere --timeout 1
expect_rc 2 "--listen nowhere"
grep -q "^roce-doctor: --listen: 'nowhere' is not an IP address" <<<"$OUT" || { echo "$OUT"; rn_fail "--listen nowhere: no usage error"; }
# inet_aton's forms are no addresses an operator means: refused, not bound
for a in 127.1 0x7fffffff 0 198.18.22; do
	doc "$B" serve --listen "$a" --timeout 1
	expect_rc 2 "--listen $a"
	grep -q "^roce-doctor: --listen: '$a' is not an IP address (dotted quad or IPv6)" <<<"$OUT" ||
		{ echo "$OUT"; rn_fail "--listen $a: taken, or no usage error"; }
done
# the wildcard, asked for by name, is said to be every address
doc "$B" serve --netdev nic0,nic1 --listen 0.0.0.0 --port 18517 --timeout 1
[ "$RC" -eq 0 ] || { echo "$OUT"; rn_fail "--listen 0.0.0.0: exit $RC"; }
grep -q 'listening on 0.0.0.0 port 18517 (every IPv4 address)' <<<"$OUT" ||
	{ echo "$OUT"; rn_fail "--listen 0.0.0.0 is not said to be every address"; }
doc "$A" peer 198.18.0.22 --listen 198.18.0.11
expect_rc 2 "peer --listen"
grep -q 'peer does not take --listen' <<<"$OUT" || { echo "$OUT"; rn_fail "peer --listen is not refused"; }
echo PASS
