#!/usr/bin/env bash
# Real 802.1Q VLAN and bonding netdevs as the RoCE netdev (the netns field layer has only
# veths with such names: the host kernel there lacks 8021q and bonding; the guests' has both):
#  - vlan: eth0.100 .. eth2.100 (id 100) over the three NICs of each guest, the one /24 on
#    them; rxe stays on ethI (it refuses a VLAN netdev: EPERM) and, as mlx5 does, carries the
#    VLAN's GIDs bound to ethI.100: the NIC is judged as the VLAN; h0 also has the distros'
#    rp_filter=1, so the rp_filter fix names a dotted netdev (sysctl's slash form);
#  - bond: bond0 (active-backup over eth0+eth1) with rxeb0 on it, beside eth2 (rxe2) in the
#    same /24, so ARP flux between the bond and the plain NIC is real.
# Each, on kernel defaults: `roce-doctor --json` names the causes per NIC and the plugin
# refuses every NIC at init; then on h0 the fixes the doctor printed are pasted as printed
# (each through `sh -c`), on h1 `roce-policy-routing` is run (vlan: without names, it finds
# the VLANs through the ports' GID tables; bond: for bond0 and eth2); the doctor
# says good on both (vlan: `roce-doctor peer` too, an RDMA RC ping per NIC pair), and a
# checked nccl-net-driver transfer runs over the VLAN (bond).
# Not here: a transfer across an active-backup failover. On the bed (rxe, kernel 6.1) an RC
# connection does not survive it: after the failover the responder counts the requester's
# retries as duplicate_request and the requester ends in RETRY_EXC_ERR, though ping and a
# new connection over the bond work at once (rxe's retransmission, not the route check;
# not analysed further).
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
plugin_prereq python3
[ -x "$RN_TOP/build/roce-doctor" ] || rn_fail "build/roce-doctor missing: run make first"
DOC=build/roce-doctor
rn_tmpdir tmp

# doctors PREFIX: `roce-doctor --json` on h0 and h1 at once into PREFIX0.json, PREFIX1.json;
# their exit statuses in RC0, RC1 (read as ${!rc} by broken and good)
# shellcheck disable=SC2034
doctors() {
	local j
	j=$(bg --timeout 60 1 -- $DOC --json) || rn_fail "cannot start the doctor on h1"
	B run --timeout 60 0 -- $DOC --json >"${1}0.json"
	RC0=$?
	B wait "$j" >"${1}1.json"
	RC1=$?
}

# causes FILE NETDEV: that NIC's cause ids, sorted, space separated ("-" if absent)
causes() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
n = [x for x in d['nics'] if x['netdev'] == sys.argv[2]]
print(" ".join(sorted(set(f['cause'] for f in n[0]['findings']))) if n else "-")
EOF
}

# fixes FILE: every distinct fix of the report, one per line, in the doctor's order
fixes() {
	python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
seen = []
for n in d['nics']:
    for f in n['findings']:
        if f['fix'] and f['fix'] not in seen:
            seen.append(f['fix'])
print("".join(f + "\n" for f in seen), end="")
EOF
}

# verdict time FILE: "N NICs, X ms to a verdict (snapshot S ms)"
vtime() {
	python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print("%d NICs, %.1f ms to the verdicts (snapshot %.1f ms, verdicts %.2f ms)" % (s["nics"],
      (s["snapshot_us"] + s["verdict_us"]) / 1000.0, s["snapshot_us"] / 1000.0, s["verdict_us"] / 1000.0))' "$1"
}

# broken H "NETDEV=IDS..." : after `doctors $tmp/b`, H's report names exactly these causes
# (exit 1)
broken() {
	local h=$1 kv got rc
	shift
	rc=RC$h
	[ "${!rc}" = 1 ] || { B run "$h" -- $DOC; rn_fail "h$h broken: doctor exit ${!rc}, want 1"; }
	for kv in "$@"; do
		got=$(causes "$tmp/b$h.json" "${kv%%=*}")
		[ "$got" = "${kv#*=}" ] || { B run "$h" -- $DOC; rn_fail "h$h ${kv%%=*}: causes '$got', want '${kv#*=}'"; }
		echo "  h$h ${kv%%=*}: $got"
	done
	echo "  h$h: $(vtime "$tmp/b$h.json")"
}

# refused IBDEV...: the plugin on h0 refuses every NIC at init (strict), each by a cause
refused() {
	local out rc d
	out=$(drv_run 0 NCCL_DEBUG=INFO -- --require-devices probe)
	rc=$?
	[ $rc = 3 ] || { echo "$out" | sed 's/^/  | /'; rn_fail "plugin on broken h0: exit $rc, want 3 (no usable device)"; }
	for d in "$@"; do
		grep -Eq "NET/RoCE : NIC $d:1 .*verdict refused causes ([a-z0-9-]+,)*arp-flux(,|\$)" <<<"$out" ||
			{ echo "$out" | sed 's/^/  | /'; rn_fail "plugin: $d not refused for arp-flux"; }
		grep "NET/RoCE : NIC $d:1 " <<<"$out" | head -n1 | sed 's/^/  /'
	done
	grep -q "refused by the route check" <<<"$out" || { echo "$out" | sed 's/^/  | /'; rn_fail "plugin: no refusal summary"; }
}

# paste H FILE: every fix of the report, as printed, each through sh -c in guest H (one job)
paste_fixes() {
	local fixes=()
	mapfile -t fixes < <(fixes "$2")
	printf "  h$1\$ %s\n" "${fixes[@]}"
	B run --timeout 60 "$1" -- bash -c 'for f; do sh -c "$f" || { echo "failed: $f"; exit 1; }; done' \
		_ "${fixes[@]}" >"$tmp/paste.out" 2>&1 || { cat "$tmp/paste.out"; rn_fail "h$1: a pasted fix failed"; }
}

# good H NETDEV...: after `doctors $tmp/g`, all good on H (exit 0, no cause on any NIC)
good() {
	local h=$1 d rc
	shift
	rc=RC$h
	[ "${!rc}" = 0 ] || { B run "$h" -- $DOC; rn_fail "h$h fixed: doctor exit ${!rc}, want 0"; }
	for d in "$@"; do
		[ -z "$(causes "$tmp/g$h.json" "$d")" ] || rn_fail "h$h $d: causes left: $(causes "$tmp/g$h.json" "$d")"
	done
	echo "  h$h: all good ($(vtime "$tmp/g$h.json"))"
}

# xfer IBDEV NIC PORT: a checked transfer over IBDEV (NCCL_IB_HCA==IBDEV on both ends),
# the handle fetched from h1's NIC address
xfer() {
	local j addr
	addr=$(bed_ip 1 "$2"):$3
	drv_start j 1 NCCL_IB_HCA=="$1" -- --size 1M --iters 10 server "$addr"
	cli_out=$(drv_run 0 NCCL_IB_HCA=="$1" -- client "$addr")
	cli_rc=$?
	srv_out=$(B wait "$j" 2>&1)
	srv_rc=$?
	expect_ok "transfer over $1: 10 x 1 MiB, every byte checked ($(grep -Eo '[0-9.]+ [MG]B/s' <<<"$cli_out" | tail -n1))"
}

# gidnd H IBDEV NETDEV: the RoCE v2 IPv4 GID of IBDEV is bound to NETDEV (shell builtins
# only: rxe's table has 1024 slots, and a fork costs ~40 ms in a TCG guest)
gidnd() {
	B run "$1" -- bash -c 'p=/sys/class/infiniband/$1/ports/1
		for g in $p/gids/*; do
			v="" && read -r v <$g 2>/dev/null
			case $v in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
			n=${g##*/} t="" d=""
			read -r t <$p/gid_attrs/types/$n
			[ "$t" = "RoCE v2" ] || continue
			read -r d <$p/gid_attrs/ndevs/$n
			echo "$1 gid[$n] $v $d"
		done' _ "$2" | tee "$tmp/gid" | sed 's/^/  /'
	grep -q " $3\$" "$tmp/gid" || rn_fail "$2: no RoCE v2 IPv4 GID bound to $3"
}

# peer_ok NETDEV...: `roce-doctor peer` h0 -> h1: every pair of these NICs ok, each with an
# RDMA RC ping that went through
peer_ok() {
	local job cells want l r
	job=$(bg --timeout 90 1 -- $DOC serve --once --timeout 80) || rn_fail "cannot start serve on h1"
	wait_listen 1 18515 || rn_fail "roce-doctor serve did not listen on h1"
	B run --timeout 90 0 -- $DOC peer "$(bed_ip 1 0)" --json >"$tmp/peer.json"
	RC=$?
	B wait --timeout 30 "$job" >/dev/null
	cells=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s>%s=%s/%s" % (p["local"], p["remote"], p["result"], p["rdma"]["status"]) for p in d["pairs"]))' "$tmp/peer.json")
	echo "  peer: $cells"
	want=
	for l in "$@"; do for r in "$@"; do want+="${want:+ }$l>$r=ok/ok"; done; done
	[ "$RC" = 0 ] && [ "$cells" = "$want" ] ||
		{ cat "$tmp/peer.json"; rn_fail "peer over the VLANs: exit $RC, pairs $cells"; }
}

body() {
	local j
	B up --hosts 2 --nics 3 --scenario broken --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 hosts x 3 NICs on one bridge, kernel-default ARP sysctls"

	t_step "vlan: ethI.100 (802.1Q) over the 3 NICs, one /24 on them, rxeI with the VLAN GIDs"
	B layout vlan >/dev/null || rn_fail "layout vlan"
	gidnd 0 rxe0 eth0.100
	gidnd 0 rxe1 eth1.100
	B run 0 -- sysctl -qw net.ipv4.conf.all.rp_filter=1 || rn_fail "rp_filter=1 on h0"
	doctors "$tmp/b"
	broken 0 eth0.100="arp-flux no-rule" eth1.100="arp-flux route-wrong-nic rp-filter" \
		eth2.100="arp-flux route-wrong-nic rp-filter"
	broken 1 eth0.100="arp-flux no-rule" eth1.100="arp-flux route-wrong-nic" \
		eth2.100="arp-flux route-wrong-nic"
	refused rxe0 rxe1 rxe2
	fixes "$tmp/b0.json" | grep -q 'net/ipv4/conf/eth[12]\.100/rp_filter' ||
		{ fixes "$tmp/b0.json"; rn_fail "no rp_filter fix in sysctl's slash form for the dotted netdevs"; }
	# h1 without names: it finds the VLANs through the ports' GID tables
	j=$(bg --timeout 60 1 -- scripts/roce-policy-routing) || rn_fail "cannot start a job on h1"
	paste_fixes 0 "$tmp/b0.json"
	B wait "$j" >"$tmp/prr" 2>&1 || { cat "$tmp/prr"; rn_fail "h1: roce-policy-routing (auto-detect) failed"; }
	echo "  h1\$ scripts/roce-policy-routing"
	for d in eth0.100 eth1.100 eth2.100; do
		grep -q "^# $d: ip " "$tmp/prr" || { cat "$tmp/prr"; rn_fail "h1: roce-policy-routing did not find $d"; }
	done
	grep -E '^# eth[0-9]: ' "$tmp/prr" && rn_fail "h1: roce-policy-routing took a VLAN's port netdev"
	doctors "$tmp/g"
	good 0 eth0.100 eth1.100 eth2.100
	good 1 eth0.100 eth1.100 eth2.100
	peer_ok eth0.100 eth1.100 eth2.100
	xfer rxe1 1 5601
	rn_log "ok: vlan: judged as the VLAN netdevs, named and refused, the pasted fixes and roce-policy-routing make them good, data over eth1.100"

	t_step "bond: bond0 (active-backup, eth0+eth1) with rxeb0, beside eth2 (rxe2) in the /24"
	B layout bond >/dev/null || rn_fail "layout bond"
	gidnd 0 rxeb0 bond0
	doctors "$tmp/b"
	broken 0 bond0="arp-flux no-rule" eth2="arp-flux route-wrong-nic"
	broken 1 bond0="arp-flux no-rule" eth2="arp-flux route-wrong-nic"
	refused rxeb0 rxe2
	j=$(bg --timeout 60 1 -- scripts/roce-policy-routing bond0 eth2) || rn_fail "cannot start a job on h1"
	paste_fixes 0 "$tmp/b0.json"
	B wait "$j" >"$tmp/prr" 2>&1 || { cat "$tmp/prr"; rn_fail "h1: roce-policy-routing bond0 eth2 failed"; }
	echo "  h1\$ scripts/roce-policy-routing bond0 eth2"
	doctors "$tmp/g"
	good 0 bond0 eth2
	good 1 bond0 eth2
	xfer rxeb0 0 5602
	rn_log "ok: bond: arp-flux named and refused, the pasted fixes and roce-policy-routing make it good, data over rxeb0"
}

bed_attempt body
