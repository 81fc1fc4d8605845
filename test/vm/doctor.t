#!/usr/bin/env bash
# roce-doctor on the Soft-RoCE bed (2 guests x 2 rxe NICs in one /24), the demo story:
#   broken (kernel defaults): the host check names ARP flux and the missing rules on both hosts
#     (exit 1); `peer` across the hosts names them too (exit 1).
#   scripts/roce-policy-routing in each guest: the host check says all good on both (exit 0);
#     `peer` with the RDMA RC probe (the library's transport) gives an all-ok matrix (exit 0).
#   RoCE v2 dropped at h1 eth0 (nftables): the probes to h1 eth0 fail within seconds
#     (rdma-timeout) and the doctor names a firewall on h1:eth0; each failed probe carries
#     h0's counters around it (rxe's names, sent_pkts among them) and no-reply from them.
#   mesh (the fault undone): `roce-doctor mesh` agents on both guests keep RC connections
#     between every NIC pair and ping over them (kind="rc"): all 4 of h0's RC pairs up with
#     RTT p50/p99 beside the UDP ones; RoCE v2 dropped at h1 eth0 again: h0's RC pairs to
#     h1 eth0 go down with no-reply while their UDP pairs stay up (the fault is RoCE's
#     alone), and the time from the fault to that verdict in h0's textfile is printed.
set -u
. "$(dirname "$0")/lib/test.sh"
bed_prereq python3
[ -x "$RN_TOP/build/roce-doctor" ] || rn_fail "build/roce-doctor missing: run make first"
DOC=build/roce-doctor
rn_tmpdir tmp

jq_py() { python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = eval(sys.argv[2])
print(" ".join(str(x) for x in r) if isinstance(r, (list, tuple)) else r)' "$1" "$2"; }

host_check() { # h file: --json host report of guest h into file; prints the exit status
	B run --timeout 60 "$1" -- $DOC --json >"$2"
	echo $?
}

peer() { # file [peer args...]: h0 -> h1 (serve --once on h1); exit status in RC
	local out=$1 job
	shift
	job=$(bg --timeout 90 1 -- $DOC serve --once --timeout 80) || rn_fail "cannot start serve on h1"
	wait_listen 1 18515 || rn_fail "roce-doctor serve did not listen on h1"
	B run --timeout 90 0 -- $DOC peer "$(bed_ip 1 0)" --json "$@" >"$out"
	RC=$?
	B wait --timeout 30 "$job" | sed 's/^/  h1| /'
}

cells() { jq_py "$1" "['%s>%s=%s' % (p['local'], p['remote'], p['result']) for p in d['pairs']]"; }

body() {
	local h rc c t0 t1 want
	B up --hosts 2 --nics 2 --scenario broken --owner "$BED_OWNER" >/dev/null

	t_step "broken: kernel defaults"
	for h in 0 1; do
		rc=$(host_check $h "$tmp/b$h.json")
		[ "$rc" = 1 ] || rn_fail "h$h broken: exit $rc, want 1"
		for n in 0 1; do
			c=$(jq_py "$tmp/b$h.json" "sorted(set(f['cause'] for f in d['nics'][$n]['findings']))")
			# the first NIC of the subnet has main's route (no rule for it); the other's
			# route leaves through the first (no-rule is not repeated beside it: same fix)
			want="arp-flux no-rule"
			[ $n = 1 ] && want="arp-flux route-wrong-nic"
			[ "$c" = "$want" ] || rn_fail "h$h eth$n: causes $c, want $want ($(jq_py \
				"$tmp/b$h.json" "[d['nics'][$n]['link_up']] + [f['message'] for f in d['nics'][$n]['findings']]"))"
			[ "$(jq_py "$tmp/b$h.json" "d['nics'][$n]['ibdev']")" = "rxe$n" ] ||
				rn_fail "h$h: NIC $n is not rxe$n"
		done
		rn_log "ok: h$h: arp-flux + no-rule on eth0, arp-flux + route-wrong-nic on eth1 (exit 1), $(jq_py "$tmp/b$h.json" "d['summary']['elapsed_us']") us"
	done
	peer "$tmp/pb.json" --no-rdma
	[ $RC = 1 ] || rn_fail "broken peer: exit $RC, want 1"
	[ "$(jq_py "$tmp/pb.json" "[k['check'] for k in d['skipped']]")" = rdma-probe ] ||
		rn_fail "broken peer --no-rdma: the skipped RDMA ping is not named"
	rn_log "ok: broken peer: $(cells "$tmp/pb.json") (exit 1), rdma-probe named as skipped"

	t_step "scripts/roce-policy-routing in each guest"
	for h in 0 1; do
		B run --timeout 60 $h -- scripts/roce-policy-routing eth0 eth1 >/dev/null ||
			rn_fail "roce-policy-routing failed on h$h"
		rc=$(host_check $h "$tmp/f$h.json")
		[ "$rc" = 0 ] || { cat "$tmp/f$h.json"; rn_fail "h$h fixed: exit $rc, want 0"; }
		[ -z "$(jq_py "$tmp/f$h.json" "d['summary']['causes']")" ] || rn_fail "h$h fixed: causes left"
		rn_log "ok: h$h: all good (exit 0)"
	done
	t0=$(date +%s.%N)
	peer "$tmp/pf.json"
	t1=$(date +%s.%N)
	[ $RC = 0 ] || { cat "$tmp/pf.json"; rn_fail "fixed peer: exit $RC, want 0"; }
	[ "$(cells "$tmp/pf.json")" = "eth0>eth0=ok eth0>eth1=ok eth1>eth0=ok eth1>eth1=ok" ] ||
		rn_fail "fixed peer matrix: $(cells "$tmp/pf.json")"
	[ "$(jq_py "$tmp/pf.json" "[p['rdma']['status'] for p in d['pairs']]")" = "ok ok ok ok" ] ||
		rn_fail "fixed peer: RDMA probes $(jq_py "$tmp/pf.json" "[p['rdma']['status'] for p in d['pairs']]")"
	# as root with RDMA on both ends every check ran: nothing skipped, so "all good" is earned
	[ "$(jq_py "$tmp/pf.json" "d['summary']['checks_skipped']")" = 0 ] ||
		rn_fail "fixed peer: checks skipped: $(jq_py "$tmp/pf.json" "d['skipped']")"
	rn_log "ok: fixed peer: 4 pairs ok, RDMA RC ping ok on each ($(jq_py "$tmp/pf.json" "[p['rdma']['elapsed_us'] // 1000 for p in d['pairs']]") ms), whole run $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s"

	t_step "the plugin's knobs: NCCL_IB_HCA, NCCL_IB_GID_INDEX"
	B run --timeout 60 --env NCCL_IB_HCA==rxe1 0 -- $DOC --json >"$tmp/hca.json"
	rc=$?
	[ $rc = 0 ] || rn_fail "NCCL_IB_HCA==rxe1: exit $rc, want 0"
	[ "$(jq_py "$tmp/hca.json" "[n['ibdev'] for n in d['nics']]")" = rxe1 ] ||
		rn_fail "NCCL_IB_HCA==rxe1 checked $(jq_py "$tmp/hca.json" "[n['ibdev'] for n in d['nics']]")"
	rn_log "ok: NCCL_IB_HCA==rxe1: only rxe1 checked, rxe0 left out by choice (exit 0)"
	B run --timeout 60 --env NCCL_IB_GID_INDEX=0 0 -- $DOC --json >"$tmp/gid0.json"
	rc=$?
	[ $rc = 1 ] || rn_fail "NCCL_IB_GID_INDEX=0: exit $rc, want 1"
	c=$(jq_py "$tmp/gid0.json" "sorted(set(f['cause'] for n in d['nics'] for f in n['findings']))")
	# a forced link-local GID reaches no other host: the library refuses it by name (no-gid)
	case " $c " in *" no-gid "*) ;; *) rn_fail "NCCL_IB_GID_INDEX=0 (link-local): $c" ;; esac
	rn_log "ok: NCCL_IB_GID_INDEX=0 (the link-local GID): no-gid (exit 1)"

	t_step "RoCE v2 dropped at h1 eth0"
	B fault 1 drop-4791 --nic 0 >/dev/null || rn_fail "fault drop-4791"
	t0=$(date +%s.%N)
	peer "$tmp/pd.json"
	t1=$(date +%s.%N)
	[ $RC = 1 ] || rn_fail "dropped: exit $RC, want 1"
	[ "$(cells "$tmp/pd.json")" = "eth0>eth0=rdma-timeout eth0>eth1=ok eth1>eth0=rdma-timeout eth1>eth1=ok" ] ||
		rn_fail "dropped matrix: $(cells "$tmp/pd.json")"
	[ "$(jq_py "$tmp/pd.json" "['%s:%s=%s' % (x['host'], x['netdev'], x['findings'][0]['cause']) for x in d['drops']]")" = "h1:eth0=firewall" ] ||
		rn_fail "drops: $(jq_py "$tmp/pd.json" "d['drops']")"
	# the local NIC's counters around each failed probe: what moved, and what they show
	c=$(jq_py "$tmp/pd.json" "['%s>%s=%s:%s' % (p['local'], p['remote'], ','.join(sorted(x['counter'] for x in p['rdma']['counters']['deltas'] if x['counter'] == 'sent_pkts')), ','.join(f['cause'] for f in p['rdma']['counters']['shows'])) for p in d['pairs'] if p['result'] == 'rdma-timeout']")
	[ "$c" = "eth0>eth0=sent_pkts:no-reply eth1>eth0=sent_pkts:no-reply" ] ||
		rn_fail "dropped: counters around the probes: $c ($(jq_py "$tmp/pd.json" "[p['rdma'].get('counters') for p in d['pairs']]"))"
	rn_log "ok: dropped: $(cells "$tmp/pd.json"), firewall named on h1:eth0, counters show no-reply, whole run $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s"

	mesh_rc
}

# The mesh's RC probes. prom h: h's textfile; rc_pairs h: "nic>peer_nic=up" of its RC pairs.
prom() { B run --timeout 20 "$1" -- cat /tmp/roce-mesh.prom 2>/dev/null; }
rc_pairs() {
	prom "$1" | sed -n 's/^roce_mesh_pair_up{host="[^"]*",nic="\([^"]*\)",peer_host="[^"]*",peer_nic="\([^"]*\)",.*kind="rc"} \(.*\)$/\1>\2=\3/p' | sort | tr '\n' ' '
}
mesh_rc() {
	local h jobs=() i got t0 t1 want hosts
	t_step "mesh: RC probes between the agents, then RoCE v2 dropped at h1 eth0"
	B run --timeout 20 1 -- nft delete table inet bedfault || rn_fail "cannot undo drop-4791"
	hosts="printf '%s\\n' $(bed_ip 0 0) $(bed_ip 1 0)"
	for h in 0 1; do
		jobs[$h]=$(bg --timeout 200 $h -- $DOC mesh --hosts-cmd "$hosts" --check-interval 5 \
			--textfile-dir /tmp --interval 500 --duration 180 -v) || rn_fail "cannot start mesh on h$h"
	done
	want="eth0>eth0=1 eth0>eth1=1 eth1>eth0=1 eth1>eth1=1 "
	for ((i = 0; i < 60; i++)); do
		got=$(rc_pairs 0)
		[ "$got" = "$want" ] && [ "$(prom 0 | grep -c '^roce_mesh_pair_probes_total{.*kind="rc"} [3-9]')" = 4 ] && break
		sleep 2
	done
	[ "$got" = "$want" ] || { prom 0; B peek "${jobs[0]}"; rn_fail "mesh: h0's RC pairs: '$got', want '$want'"; }
	prom 0 >"$tmp/m0.prom"
	grep -q '^roce_mesh_rc_nics{host="[^"]*"} 2$' "$tmp/m0.prom" || rn_fail "mesh: h0 RC NICs not 2"
	rn_log "ok: mesh: h0's 4 RC pairs up; RTT p50/p99 (us) by pair: $(awk -F'[{}",= ]+' '
		/^roce_mesh_pair_rtt_p(50|99)_seconds\{.*kind="rc"/ { k = $5 ">" $9; v[k] = v[k] (v[k] == "" ? "" : "/") int($NF * 1e6) }
		END { for (k in v) printf "%s=%s ", k, v[k] }' "$tmp/m0.prom"); RC pings sent by h0: $(awk '/^roce_mesh_rc_probes_sent_total/ {print $2}' "$tmp/m0.prom"), answered by h1: $(prom 1 | awk '/^roce_mesh_rc_answered_total/ {print $2}')"
	B fault 1 drop-4791 --nic 0 >/dev/null || rn_fail "fault drop-4791"
	t0=$(date +%s.%N)
	want="eth0>eth0=0 eth0>eth1=1 eth1>eth0=0 eth1>eth1=1 "
	for ((i = 0; i < 60; i++)); do
		got=$(rc_pairs 0)
		[ "$got" = "$want" ] && break
		sleep 1
	done
	t1=$(date +%s.%N)
	[ "$got" = "$want" ] || { prom 0; rn_fail "mesh: after the fault h0's RC pairs: '$got', want '$want'"; }
	prom 0 >"$tmp/m1.prom"
	got=$(sed -n 's/^roce_mesh_pair_cause{.*peer_nic="\([^"]*\)",.*kind="\([^"]*\)",cause="\([^"]*\)"} 1$/\1:\2:\3/p' "$tmp/m1.prom" | sort | uniq -c | awk '{print $1 "x" $2}' | tr '\n' ' ')
	[ "$got" = "2xeth0:rc:no-reply " ] || { cat "$tmp/m1.prom"; rn_fail "mesh: causes after the fault: '$got', want 2xeth0:rc:no-reply (UDP pairs up)"; }
	rn_log "ok: mesh: RoCE dropped at h1 eth0: h0's RC pairs to it down with no-reply, UDP pairs up; $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s from the fault to the textfile's verdict"
	for h in 0 1; do
		B run --timeout 20 $h -- sh -c 'ps -o rss=,time= -C roce-doctor 2>/dev/null || ps' | sed "s/^/  h$h ps| /"
		B kill "${jobs[$h]}" >/dev/null 2>&1
	done
}

bed_attempt body
