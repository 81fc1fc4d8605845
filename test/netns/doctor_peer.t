#!/usr/bin/env bash
# roce-doctor peer/serve between two host namespaces (2 NICs each, one subnet, one bridge;
# netdev-only: ARP, route and MTU checks, no RDMA). With kernel defaults the real ARP flux of
# host B (both NICs answer for each other's address) leaves host A's neighbour entry for one of
# B's addresses holding the other NIC's MAC: named neigh-wrong-mac with a fix for host B.
# (A keeps the first answer; the bridge hands each request to B's NICs in one fixed order, so
# the first answer comes from the same B NIC for both addresses: one of them is wrong.)
# Garbage sent to `serve` is rejected with a log line and the next client is served. After
# scripts/roce-policy-routing on both hosts every pair is ok; an MTU mismatch is named with
# its fix; `serve --once` exits after one client.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
doc_bed # host A and host B, two NICs each on one bridge
SRV=
trap '_rc=$?; [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; (exit $_rc); _rn_cleanup' EXIT

# Each end under its own host name (UTS namespace), as two machines would be.
on_a() { ip netns exec "$A" unshare -u sh -c 'hostname hosta && exec "$@"' sh "$@"; }
# In the background: exec, so that $! is the server itself (kill ends exactly it).
serve_bg() { exec ip netns exec "$B" unshare -u sh -c 'hostname hostb-$$ && exec "$@"' sh "$DOCTOR" serve --netdev nic0,nic1 "$@"; }
peer() { # JSON report into $T/$1.json, status in RC
	on_a "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --json --timeout 5 >"$T/$1.json" 2>"$T/$1.err"
	RC=$?
	cat "$T/$1.err"
}
pairs() { jq_py "$T/$1.json" "['%s>%s=%s' % (p['local'], p['remote'], p['result']) for p in d['pairs']]"; }
wait_listen() {
	local i
	for i in $(seq 50); do
		ip netns exec "$B" ss -Hltn 'sport = :18515' | grep -q . && return 0
		sleep 0.1
	done
	cat "$T/serve.log"
	rn_fail "roce-doctor serve did not listen"
}

serve_bg --timeout 60 >"$T/serve.log" 2>&1 &
SRV=$!
wait_listen

echo "== kernel defaults on both hosts"
peer defaults
[ $RC -eq 1 ] || rn_fail "defaults: exit $RC, want 1"
echo "pairs: $(pairs defaults)"
bhost=$(jq_py "$T/defaults.json" "d['remote']['host']")
[[ $bhost == hostb-* ]] || rn_fail "remote host name is '$bhost'"
wrong=$(jq_py "$T/defaults.json" "['%s>%s' % (p['local'], p['remote']) for p in d['pairs'] if any(f['cause'] == 'neigh-wrong-mac' for f in p['local_check']['findings'])]")
echo "neigh-wrong-mac on: $wrong"
[ -n "$wrong" ] || rn_fail "ARP flux of host B not named neigh-wrong-mac on any pair"
# As root the doctor also asks by raw ARP who has each address: both B NICs answer for both.
[ "$(jq_py "$T/defaults.json" "d['summary']['arp_probed']")" -gt 0 ] || rn_fail "no ARP uniqueness probe as root"
[ "$wrong" = "nic0>nic0 nic0>nic1 nic1>nic0 nic1>nic1" ] || rn_fail "ARP uniqueness: flux named on '$wrong', want every pair"
# Two parts, each for one host by name: B's own ARP sysctls (as B's doctor names them), then
# A's stale entry.
fix=$(jq_py "$T/defaults.json" "[(f['pre_host'], f['pre_fix'], f['fix_host'], f['fix']) for p in d['pairs'] for f in p['local_check']['findings'] if f['cause'] == 'neigh-wrong-mac'][0]")
echo "fix: $fix"
[[ $fix == "$bhost sysctl -w "*arp_ignore=1*" hosta ip neigh flush dev nic"[01]" to 198.18.0.2"[12]" nud all" ]] ||
	rn_fail "neigh-wrong-mac: the first part is not for host B, or the second not for A"
# The MAC A held is really B's other NIC's (the neighbour may flip later as B talks).
p=${wrong%% *}
other=nic1
[ "${p#*>}" = nic1 ] && other=nic0
omac=$(ip -n "$B" -o link show dev $other | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
msg=$(jq_py "$T/defaults.json" "[f['message'] for p in d['pairs'] for f in p['local_check']['findings'] if f['cause'] == 'neigh-wrong-mac'][0]")
echo "$msg"
grep -q "$omac" <<<"$msg" || rn_fail "neigh-wrong-mac does not name B $other's MAC $omac"
has arp-flux "$(jq_py "$T/defaults.json" "sorted(set(f['cause'] for n in d['remote']['nics'] for f in n['findings']))")" \
	"host B's own verdict"
# A's nic1 traffic leaves through nic0 without rules: A's own side names it.
has route-wrong-nic "$(jq_py "$T/defaults.json" "[f['cause'] for p in d['pairs'] if p['local'] == 'nic1' for f in p['local_check']['findings']]")" \
	"A nic1's pairs"
# Again from fresh neighbour tables (the first session's ARP traffic fixed some entries),
# in the human format: the matrix names it too.
for n in nic0 nic1; do ip -n "$A" neigh flush dev $n; ip -n "$B" neigh flush dev $n; done
on_a "$DOCTOR" peer 198.18.0.21 --netdev nic0,nic1 --timeout 5 >"$T/human.txt" 2>&1
rc=$?
cat "$T/human.txt"
[ $rc -eq 1 ] || rn_fail "human format: exit $rc, want 1"
grep -q '^nic0 198.18.0.11 .*neigh-wrong-mac' "$T/human.txt" || rn_fail "matrix row nic0 does not show neigh-wrong-mac"
# each part of its fix on the host it names: B's sysctls, then A's flush (here)
grep -q "^    fix.* (on $bhost): sysctl -w .*arp_ignore=1" "$T/human.txt" ||
	rn_fail "human format: the sysctl part is not named for host B"
grep -q '^    then fix[^(]*: ip neigh flush dev nic[01] to ' "$T/human.txt" ||
	rn_fail "human format: the flush is not the part run here"

echo "== garbage to serve"
printf 'junk\n' | ip netns exec "$A" bash -c 'cat >/dev/tcp/198.18.0.21/18515' ||
	rn_fail "could not send garbage"
# right magic, another protocol version
printf 'RNDR\0\11\0\1\0\0\0\0\0\0\0\0' | ip netns exec "$A" bash -c 'cat >/dev/tcp/198.18.0.21/18515'
# right header, length beyond the maximum
printf 'RNDR\0\1\0\1\177\0\0\0\0\0\0\0' | ip netns exec "$A" bash -c 'cat >/dev/tcp/198.18.0.21/18515'
# valid header, inventory cut short
printf 'RNDR\0\1\0\1\0\0\0\10\0\0\0\0hostx\0\0\0' | ip netns exec "$A" bash -c 'cat >/dev/tcp/198.18.0.21/18515'
for i in $(seq 50); do [ "$(grep -c rejected "$T/serve.log")" -ge 1 ] && break; sleep 0.1; done
sleep 0.5
grep rejected "$T/serve.log"
# one line per address per minute: the first garbage is said, the next three are held
[ "$(grep -c rejected "$T/serve.log")" -eq 1 ] || rn_fail "serve did not log 1 rejection for 4 from one address"
grep -q 'rejected 198.18.0.11:[0-9]*: .*(0 more from this address in the last minute' "$T/serve.log" ||
	rn_fail "the rejection does not say it is rate-limited"
kill -0 "$SRV" 2>/dev/null || rn_fail "serve died on garbage"

echo "== scripts/roce-policy-routing on both hosts"
rn_in "$A" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/sa" nic0 nic1 >/dev/null || rn_fail "fix on A"
rn_in "$B" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/sb" nic0 nic1 >/dev/null || rn_fail "fix on B"
peer fixed
echo "pairs: $(pairs fixed)"
[ $RC -eq 0 ] || { cat "$T/fixed.json"; rn_fail "after the fix on both hosts: exit $RC, want 0"; }
[ "$(pairs fixed)" = "nic0>nic0=ok nic0>nic1=ok nic1>nic0=ok nic1>nic1=ok" ] ||
	rn_fail "not every pair is ok after the fix"
for nd in nic0 nic1; do
	ip=$(ip -n "$B" -4 -o addr show dev $nd | awk '{print $4}' | cut -d/ -f1)
	mac=$(ip -n "$B" -o link show dev $nd | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
	got=$(ip -n "$A" neigh show "$ip" dev nic0 | grep -o 'lladdr [0-9a-f:]*' | cut -d' ' -f2)
	[ "$got" = "$mac" ] || rn_fail "after the fix A resolves $ip to $got, want $mac"
done
[ "$(jq_py "$T/fixed.json" "d['summary']['arp_probed']")" = 4 ] || rn_fail "after the fix: not every pair ARP-probed"
echo "pair checks took $(jq_py "$T/fixed.json" "d['summary']['elapsed_us']") us for 4 pairs"
# netdev-only NICs: the RDMA ping could not run, and the report says so instead of "all good"
[ "$(jq_py "$T/fixed.json" "[k['check'] for k in d['skipped']]")" = rdma-probe ] ||
	rn_fail "after the fix as root: skipped is '$(jq_py "$T/fixed.json" "d['skipped']")', want rdma-probe only"

echo "== a PERMANENT entry on A for B's nic1 holding B nic0's MAC (a static-ARP leftover)"
mac0=$(ip -n "$B" -o link show dev nic0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
ip1=$(ip -n "$B" -4 -o addr show dev nic1 | awk '{print $4}' | cut -d/ -f1)
ip -n "$A" neigh replace "$ip1" lladdr "$mac0" nud permanent dev nic1
peer static
echo "pairs: $(pairs static)"
[ $RC -eq 1 ] || rn_fail "static entry: exit $RC, want 1"
fix=$(jq_py "$T/static.json" "sorted(set((f['pre_fix'] or '-', f['fix']) for p in d['pairs'] if p['local'] == 'nic1' and p['remote'] == 'nic1' for f in p['local_check']['findings'] if f['cause'] == 'neigh-wrong-mac'))")
echo "fix: $fix"
[ "$fix" = "('-', 'ip neigh del $ip1 dev nic1')" ] ||
	rn_fail "static entry: the fix is '$fix', want the entry's deletion alone"
rn_in "$A" bash -c "set -e; ip neigh del $ip1 dev nic1" || rn_fail "static entry: the pasted fix failed"
peer static_fixed
[ $RC -eq 0 ] || { cat "$T/static_fixed.json"; rn_fail "static entry deleted: exit $RC, want 0"; }

echo "== without CAP_NET_RAW: the ARP probe is skipped, and said so"
on_a setpriv --bounding-set=-net_raw --inh-caps=-net_raw "$DOCTOR" peer 198.18.0.21 \
	--netdev nic0,nic1 --json --timeout 5 >"$T/nocap.json" 2>"$T/nocap.err"
RC=$?
cat "$T/nocap.err"
[ $RC -eq 0 ] || { cat "$T/nocap.json"; rn_fail "without CAP_NET_RAW: exit $RC, want 0"; }
[ "$(jq_py "$T/nocap.json" "d['summary']['arp_probed']")" = 0 ] || rn_fail "ARP probed without CAP_NET_RAW?"
[ "$(jq_py "$T/nocap.json" "sorted(k['check'] for k in d['skipped'])")" = "arp-probe rdma-probe" ] ||
	rn_fail "without CAP_NET_RAW: skipped is '$(jq_py "$T/nocap.json" "d['skipped']")'"
jq_py "$T/nocap.json" "[k['why'] for k in d['skipped'] if k['check'] == 'arp-probe']" | grep -q CAP_NET_RAW ||
	rn_fail "the ARP skip does not name CAP_NET_RAW"
[ "$(jq_py "$T/nocap.json" "d['summary']['checks_skipped']")" = 2 ] || rn_fail "summary.checks_skipped"
on_a setpriv --bounding-set=-net_raw --inh-caps=-net_raw "$DOCTOR" peer 198.18.0.21 \
	--netdev nic0,nic1 --timeout 5 >"$T/nocap.txt" 2>&1
RC=$?
cat "$T/nocap.txt"
[ $RC -eq 0 ] || rn_fail "without CAP_NET_RAW (human): exit $RC, want 0"
grep -q '^skipped: arp-probe: needs CAP_NET_RAW' "$T/nocap.txt" || rn_fail "human output does not name the ARP skip"
grep -q '^verdict: no problems found; 2 checks skipped' "$T/nocap.txt" ||
	rn_fail "the verdict does not say checks were skipped"
grep -q 'all good' "$T/nocap.txt" && rn_fail "'all good' with checks skipped"

echo "== MTU mismatch"
ip -n "$B" link set dev nic0 mtu 9000
peer mtu
echo "pairs: $(pairs mtu)"
[ $RC -eq 1 ] || rn_fail "MTU mismatch: exit $RC, want 1"
m=$(jq_py "$T/mtu.json" "[f['fix'] for p in d['pairs'] if p['remote'] == 'nic0' for f in p['local_check']['findings'] if f['cause'] == 'mtu-mismatch']")
echo "fix: $m"
grep -q 'ip link set dev nic[01] mtu 9000' <<<"$m" || rn_fail "mtu-mismatch not named with its fix"
[ "$(jq_py "$T/mtu.json" "[p['result'] for p in d['pairs'] if p['remote'] == 'nic1']")" = "ok ok" ] ||
	rn_fail "pairs without the mismatch are not ok"
ip -n "$B" link set dev nic0 mtu 1500
kill "$SRV"
wait "$SRV" 2>/dev/null
SRV=

echo "== nobody serving: exit 2, and --json still prints JSON (the error object)"
peer noserver
[ $RC -eq 2 ] || rn_fail "no serve: exit $RC, want 2"
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["error"]; assert e["code"] == 2 and e["kind"] == "system" and "198.18.0.21" in e["message"], e' \
	"$T/noserver.json" || { cat "$T/noserver.json"; rn_fail "no serve: no JSON error object naming the peer"; }

echo "== serve --once"
serve_bg --once --timeout 30 >"$T/once.log" 2>&1 &
SRV=$!
wait_listen
peer once
[ $RC -eq 0 ] || rn_fail "peer against serve --once: exit $RC"
for i in $(seq 50); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SRV" 2>/dev/null && rn_fail "serve --once still runs after its client"
wait "$SRV"
rc=$?
SRV=
cat "$T/once.log"
[ $rc -eq 0 ] || rn_fail "serve --once exit $rc after an all-good session"
echo PASS
