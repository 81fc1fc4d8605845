#!/usr/bin/env bash
# roce-doctor mesh's bounds: the agent of host 0 with a 64-host list, 8 hosts present (each
# running its agent, two NICs: 28 NIC pairs from host 0) and 56 absent (addresses nobody
# holds: their checks back off, they get no probes), --rate 20 (under the 28 pairs' 1 a
# second each: the cap decides). Over 20 s it prints its probes a second, CPU and RSS; the
# rate must keep under the cap (and above 0), RSS under 64 MiB, CPU under half a core
# (generous bounds: the figures are the point, not a timing). Then 10 s of flood at once:
#   UDP   fake probes to host 0's NIC (valid requests, forged answers that match no probe
#         of its own, garbage) as fast as one Python socket sends them;
#   TCP   200 idle + 50 slow-loris connections to its serve port, 50 + 20 to its metrics
#         port (test/netns/flood.py);
# and meanwhile its /metrics answers and `roce-doctor peer` from host 1 gets its session
# through the agent's serve side; after, the agent lives, it answered no more requests
# than --echo-rate allows (the rest counted as dropped), counted the forged answers as bad
# packets and believed none of them, and its own 28 pairs are all still up. A 65th entry
# lies: a server there trickles its inventory a byte a second; host 0's check of it gives up
# by its deadline (30 s at most). Last, peers
# that go and come: host 0 reads its list through --hosts-cmd (as `scontrol show hostnames`
# would give it) every 2 s; host 7 taken out of the list loses its pairs there and gets
# them back when it returns; host 6's agent stopped makes its pairs fail (no-reply), and
# once it runs again they are up.
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/mesh_lib.sh"
rn_require_netns
command -v unshare >/dev/null || rn_skip "skip: unshare (util-linux) not installed"
command -v curl >/dev/null || rn_skip "skip: curl not installed"
rn_tmpdir T
NH=8 RATE=20 ECHO=500 WIN=20

mesh_bed $NH
for ((a = 100; a < 156; a++)); do echo "198.19.0.$a"; done >>"$T/hosts"
[ "$(wc -l <"$T/hosts")" -eq 64 ] || rn_fail "not a 64-host list"
for ((h = 1; h < NH; h++)); do mesh_start $h --check-interval 5; done
# and one that lies: the management bridge's address, where a server trickles one byte of
# an inventory's header a second (doctor_hostile.py trickle-server); last in the list
{ cat "$T/hosts"; echo 198.19.0.1; } >"$T/hosts0"
bg_start TR ip netns exec "$MGMT" python3 "$HOSTILE" trickle-server 18515 --interval 1 \
	--seconds 60 --ready "$T/trickle.ready" >"$T/trickle.out" 2>&1
wait_file "$T/trickle.ready" "the trickling server did not start"
HOSTS_CMD="cat $T/hosts0" mesh_start 0 --check-interval 5 --rate $RATE --echo-rate $ECHO \
	--reload 2
P=${AGENT[0]}

metric() { # NAME: host 0's value of its own series NAME
	rn_in "$MGMT" curl -sf --max-time 5 "http://${MGMT_IP[0]}:9100/metrics" |
		awk -v n="$1" 'index($0, n "{") == 1 { print $2 }'
}
ups() { # host 0's pairs up
	rn_in "$MGMT" curl -sf --max-time 5 "http://${MGMT_IP[0]}:9100/metrics" |
		grep -c '^roce_mesh_pair_up{host="'"${HNAME[0]}"'".*} 1$'
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$P/stat"; }
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$P/status"; }

for ((i = 0; i < 120; i++)); do
	[ "$(ups)" = 28 ] && break
	sleep 0.5
done
[ "$(ups)" = 28 ] || { tail "$T/agent0.log"; rn_fail "host 0 does not see its 28 pairs up"; }

c0=$(cpu_ticks) p0=$(metric roce_mesh_probes_sent_total) t0=$(date +%s.%N)
sleep $WIN
c1=$(cpu_ticks) p1=$(metric roce_mesh_probes_sent_total) t1=$(date +%s.%N)
HZ=$(getconf CLK_TCK)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')
rate=$(awk -v a="$p0" -v b="$p1" -v s="$secs" 'BEGIN{printf "%.1f", (b-a)/s}')
cpu=$(awk -v a="$c0" -v b="$c1" -v s="$secs" -v hz="$HZ" 'BEGIN{printf "%.2f", 100*(b-a)/hz/s}')
rss=$(kb VmRSS) hwm=$(kb VmHWM)
echo "64-host list (8 present, 56 absent) and a liar, 28 NIC pairs, --rate $RATE: $rate probes/s," \
	"CPU $cpu% of a core, RSS $rss kB (peak $hwm kB) over ${secs%.*} s"
awk -v r="$rate" -v c="$RATE" 'BEGIN{exit !(r > 0 && r <= c * 1.1)}' ||
	rn_fail "probe rate $rate/s not within (0, $RATE]"
awk -v c="$cpu" 'BEGIN{exit !(c < 50)}' || rn_fail "CPU $cpu% of a core"
[ "$rss" -lt 65536 ] || rn_fail "RSS $rss kB"
echo "peers reached: $(metric roce_mesh_peers_reached) of $(metric roce_mesh_peers)"
[ "$(metric roce_mesh_peers_reached)" = 7 ] || rn_fail "not the 7 present peers reached"
[ "$(metric roce_mesh_peers)" = 64 ] || rn_fail "not 64 peers (63 and the liar)"
# the absent hosts were all tried: a scout's connections at once, not 3 s each in turn
failed=$(metric roce_mesh_checks_failed_total)
echo "checks failed so far: $failed (56 absent hosts)"
[ "${failed%.*}" -ge 56 ] || rn_fail "only $failed failed checks: the absent hosts not all tried"

# ---- the flood ----
b0=$(metric roce_mesh_bad_packets_total) e0=$(metric roce_mesh_echoes_sent_total)
d0=$(metric roce_mesh_echoes_dropped_total) c0=$(cpu_ticks) t0=$(date +%s.%N)
cat >"$T/udpflood.py" <<'PY'
import os, socket, struct, sys, time
dst, secs = (sys.argv[1], 18516), float(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setblocking(False)
magic = 0x524e4d50
kinds = [struct.pack(">IBBHII", magic, 1, 1, 0, 7, 42) + b"\0" * 8,          # a request
         struct.pack(">IBBHII", magic, 1, 2, 0, 3, 12345) + b"\0" * 8,       # a forged answer
         struct.pack(">IBBHII", magic, 1, 2, 0, 0xffffffff, 1) + b"\0" * 8,  # out of range
         os.urandom(24), b"x" * 3, struct.pack(">IBBHII", magic, 9, 1, 0, 0, 0) + b"\0" * 8]
sent, end, i = {}, time.time() + secs, 0
while time.time() < end:
    k = i % len(kinds)
    try:
        s.sendto(kinds[k], dst)
        sent[k] = sent.get(k, 0) + 1
    except BlockingIOError:
        time.sleep(0.0005)
    i += 1
print("udpflood: %d datagrams, %d requests" % (sum(sent.values()), sent.get(0, 0)))
PY
rn_in "${HOSTNS[1]}" python3 "$T/udpflood.py" 198.18.0.11 10 >"$T/udp.out" 2>&1 &
U=$!
rn_in "$MGMT" python3 "$RN_TOP/test/netns/flood.py" "${MGMT_IP[0]}" 18515 --idle 200 --slow 50 \
	--prefix 524e44520001000100000044 --seconds 10 >"$T/tcp.out" 2>&1 &
F1=$!
rn_in "$MGMT" python3 "$RN_TOP/test/netns/flood.py" "${MGMT_IP[0]}" 9100 --idle 50 --slow 20 \
	--prefix 474554 --seconds 10 >"$T/http.out" 2>&1 &
F2=$!
_doc_pids+=("$U" "$F1" "$F2")
sleep 3
ok=0
for i in 1 2 3; do
	rn_in "$MGMT" curl -sf --max-time 3 "http://${MGMT_IP[0]}:9100/metrics" >"$T/under" &&
		grep -q '^roce_mesh_pair_up{' "$T/under" && { ok=1; break; }
done
[ $ok = 1 ] || rn_fail "/metrics did not answer under the flood"
echo "under the flood: /metrics answered (try $i)"
rn_in "${HOSTNS[1]}" "$DOCTOR" peer "${MGMT_IP[0]}" --netdev nic0,nic1 --timeout 20 \
	>"$T/peer.out" 2>&1
rc=$?
[ $rc -le 1 ] || { cat "$T/peer.out"; rn_fail "peer against the agent under the flood: exit $rc"; }
echo "under the flood: roce-doctor peer got its session (exit $rc)"
wait "$U" "$F1" "$F2"
c1=$(cpu_ticks) t1=$(date +%s.%N)
cat "$T/udp.out" "$T/tcp.out" "$T/http.out"
kill -0 "$P" 2>/dev/null || rn_fail "the agent died under the flood"
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}')
b1=$(metric roce_mesh_bad_packets_total) e1=$(metric roce_mesh_echoes_sent_total)
d1=$(metric roce_mesh_echoes_dropped_total)
reqs=$(sed -n 's/.*, \([0-9]*\) requests/\1/p' "$T/udp.out")
echo "flood: CPU $(awk -v a="$c0" -v b="$c1" -v s="$secs" -v hz="$HZ" \
	'BEGIN{printf "%.0f", 100*(b-a)/hz/s}')% of a core over ${secs%.*} s;" \
	"$((e1 - e0)) requests answered, $((d1 - d0)) dropped over --echo-rate $ECHO/s," \
	"$((b1 - b0)) bad or forged packets counted; RSS $(kb VmRSS) kB (peak $(kb VmHWM) kB)"
[ $((b1 - b0)) -gt 0 ] || rn_fail "no bad packet counted"
[ $((d1 - d0)) -gt 0 ] || rn_fail "no request dropped: the flood was under --echo-rate?"
# answered: the rate for the time it lasted, the burst, and host 0's peers' own probes
awk -v e=$((e1 - e0)) -v r=$ECHO -v s="$secs" 'BEGIN{exit !(e <= r * (s + 1) + 200)}' ||
	rn_fail "$((e1 - e0)) answered in $secs s: more than --echo-rate $ECHO/s"
[ "$(kb VmRSS)" -lt 65536 ] || rn_fail "RSS $(kb VmRSS) kB after the flood"
for ((i = 0; i < 40; i++)); do
	[ "$(ups)" = 28 ] && break
	sleep 0.5
done
[ "$(ups)" = 28 ] || rn_fail "host 0's pairs are not all up after the flood"
echo "after the flood: host 0's 28 pairs up"

wait "$TR"
cat "$T/trickle.out"
t=$(sed -n 's/.*client hung up after \([0-9.]*\) s/\1/p' "$T/trickle.out")
[ -n "$t" ] && awk -v t="$t" 'BEGIN{exit !(t <= 31)}' ||
	rn_fail "the lying server held host 0's pair check past its 30 s"
echo "a server that trickles its inventory: host 0's check gave up after $t s"

# ---- peers that go and come ----
pairs_with() { # HOST: host 0's pair series with that peer, and how many are up
	rn_in "$MGMT" curl -sf --max-time 5 "http://${MGMT_IP[0]}:9100/metrics" |
		awk -v h="peer_host=\"$1\"" '/^roce_mesh_pair_up\{/ && index($0, h) {
			n++; up += $2 } END { printf "%d %d\n", n, up }'
}
until_pairs() { # HOST WANT WHAT
	local i got
	for ((i = 0; i < 60; i++)); do
		got=$(pairs_with "$1")
		[ "$got" = "$2" ] && return 0
		sleep 0.5
	done
	rn_fail "$3: host 0 has '$got' (pairs, up) with $1, want '$2'"
}
grep -v "^${MGMT_IP[7]} " "$T/hosts" >"$T/hosts0"
until_pairs "${HNAME[7]}" "0 0" "host 7 out of the list"
cp "$T/hosts" "$T/hosts0"
until_pairs "${HNAME[7]}" "4 4" "host 7 back in the list"
echo "host 7 left the list and came back: its pairs went and came"
kill "${AGENT[6]}"
wait "${AGENT[6]}" 2>/dev/null
until_pairs "${HNAME[6]}" "4 0" "host 6's agent stopped"
rn_in "$MGMT" curl -sf --max-time 5 "http://${MGMT_IP[0]}:9100/metrics" |
	grep -q "^roce_mesh_pair_cause{.*peer_host=\"${HNAME[6]}\".*cause=\"no-reply\"} 1$" ||
	rn_fail "host 6's pairs without the cause no-reply"
mesh_start 6 --check-interval 5
until_pairs "${HNAME[6]}" "4 4" "host 6's agent back"
echo "host 6's agent stopped and started again: its pairs failed (no-reply) and came back"
kill -0 "$P" 2>/dev/null || rn_fail "host 0's agent died"
echo PASS
