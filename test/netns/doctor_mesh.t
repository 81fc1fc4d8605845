#!/usr/bin/env bash
# roce-doctor mesh on four "hosts" (namespaces with their own hostnames; mesh_lib.sh): two
# NICs each in one subnet, hosts 0-1 on one bridge (group a), 2-3 on another (group b), the
# two bridges joined by one veth pair (the link between the groups); each host fixed by
# roce-policy-routing, each running the agent (serve, pair checks every 3 s a round, UDP
# probes from each NIC's address), a real Prometheus (Debian's) scraping the four agents'
# /metrics with the shipped mesh rules. Three faults, one after the other, each undone:
#   nic   host 1's 'from <nic1's address>' rule removed: its pair checks find
#         route-wrong-nic (the UDP probes still get through: the main table's route);
#   link  the link between the groups down: the pairs across lose every probe;
#   host  both of host 3's NICs down.
# Each time `roce-doctor localize` over the agents' textfiles and over Prometheus'
# /federate, and Prometheus' own recording rules, name exactly that NIC, that link, that
# host, and nothing else; the time from the fault to localize's verdict is printed. Then
# `promtool test rules` runs the shipped rules' alerts over the agents' own textfiles of
# each phase (a clean phase between faults): each alert fires for its fault alone.
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/prom_lib.sh"
. "$(dirname "$0")/mesh_lib.sh"
rn_require_netns
prom_require
command -v unshare >/dev/null || rn_skip "skip: unshare (util-linux) not installed"
RULES=$RN_TOP/doc/prometheus/nccl-net-roce-mesh.rules.yml
rn_tmpdir T

out=$(promtool check rules "$RULES" 2>&1) || { echo "$out"; rn_fail "promtool check rules"; }
grep -q 'SUCCESS: 15 rules found' <<<"$out" || { echo "$out"; rn_fail "not the 15 rules"; }

mesh_bed 4
for h in 0 1 2 3; do mesh_start $h --check-interval 3; done
N1=${HNAME[1]} N3=${HNAME[3]}

# Prometheus in the management namespace, scraping the four agents every second
MON=$MGMT
rn_tmpdir _prom_dir
mkdir -p "$_prom_dir/data"
{
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n'
	printf 'rule_files:\n  - %s\nscrape_configs:\n  - job_name: mesh\n' "$RULES"
	printf '    static_configs:\n      - targets: ['
	for h in 0 1 2 3; do printf "'%s:9100'%s" "${MGMT_IP[h]}" "$([ $h -lt 3 ] && echo ,)"; done
	printf ']\n'
} >"$_prom_dir/prometheus.yml"
promtool check config "$_prom_dir/prometheus.yml" >/dev/null || rn_fail "promtool check config"
_prom_bg prometheus --config.file="$_prom_dir/prometheus.yml" \
	--storage.tsdb.path="$_prom_dir/data" --web.listen-address=127.0.0.1:9090 \
	--log.level=warn >"$_prom_dir/prometheus.log" 2>&1

# localize over the four textfiles: its verdict lines (the summary line left out); with
# HEADS, only what each names (what follows " (" left out)
verdicts() {
	"$DOCTOR" localize "$T"/tf[0-3]/roce-mesh.prom 2>&1 | sed '$d' |
		if [ "${HEADS:-}" ]; then sed 's/ (.*//'; else cat; fi
}
# until_loc WANT WHAT: until localize prints exactly WANT (60 s); the seconds it took in SECS
until_loc() {
	local got t0 i
	t0=$(date +%s.%N)
	for ((i = 0; i < 120; i++)); do
		got=$(verdicts)
		[ "$got" = "$1" ] && break
		sleep 0.5
	done
	SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
	[ "$got" = "$1" ] && return 0
	echo "--- localize:"; "$DOCTOR" localize "$T"/tf[0-3]/roce-mesh.prom
	echo "--- want:"; echo "$1"
	tail -n 5 "$T"/agent*.log
	rn_fail "$2"
}
# fault WHAT HEAD FULL: localize names HEAD (timed from now), then says FULL; Prometheus'
# rules and localize over Prometheus agree; the textfiles kept as WHAT-<host>.prom
fault() {
	HEADS=1 until_loc "$2" "$1: not named"
	echo "$1: named by localize $SECS s after the fault"
	FIGS+=("$1 fault -> verdict: $SECS s")
	until_loc "$3" "$1: not the whole verdict"
	snap "$1"
}
# until_all_up WHAT: every host sees its 12 pairs and none fails
until_all_up() {
	local i
	for ((i = 0; i < 120; i++)); do
		"$DOCTOR" localize "$T"/tf[0-3]/roce-mesh.prom 2>/dev/null |
			grep -qx 'nothing to blame: 48 pairs, 0 failing' && return 0
		sleep 0.5
	done
	"$DOCTOR" localize "$T"/tf[0-3]/roce-mesh.prom
	rn_fail "$1: not every pair up"
}
# snap NAME: the four textfiles as they are now
snap() {
	local h
	for h in 0 1 2 3; do cp "$T/tf$h/roce-mesh.prom" "$T/$1-$h.prom"; done
}
# prom_names NIC HOST LINK WHAT: Prometheus' recording rules name exactly these
prom_names() {
	until_q 'count by (end_host, end_nic) (roce_mesh:nic_fault)' "$1" "$4: nic_fault"
	until_q 'count by (end_host) (roce_mesh:host_fault)' "$2" "$4: host_fault"
	until_q 'count by (group, peer_group) (roce_mesh:link_fault)' "$3" "$4: link_fault"
}
# prom_localize WANT WHAT: localize over Prometheus' /federate prints exactly WANT
prom_localize() {
	local got i
	for ((i = 0; i < 20; i++)); do
		got=$(rn_in "$MGMT" "$DOCTOR" localize --prometheus http://127.0.0.1:9090 2>&1 |
		      sed '$d')
		[ "$got" = "$1" ] && return 0
		sleep 0.5
	done
	echo "$got"
	rn_fail "$2: localize --prometheus"
}
FIGS=()

until_all_up "start"
echo "all 48 pairs up"
# every agent's /metrics passes promtool's lint and carries the journal's metric
for h in 0 1 2 3; do
	rn_in "$MGMT" curl -sf --max-time 5 "http://${MGMT_IP[h]}:9100/metrics" >"$T/m$h" ||
		rn_fail "host $h: GET /metrics"
	grep -q '^# TYPE roce_comm_failures_total counter' "$T/m$h" ||
		rn_fail "host $h: no roce_comm_failures_total"
done
prom_check_file "$T/m0" "host 0's /metrics"
until_q 'count(up{job="mesh"} == 1)' '{} 4' "Prometheus does not scrape the four agents"
until_q 'count(roce_mesh_pair_up)' '{} 48' "Prometheus has not the 48 pairs"
prom_names '' '' '' "clean"
prom_localize "" "clean"
snap ok0

# 1. one NIC: host 1's rule for nic1 removed
rule=$(ip -n "${HOSTNS[1]}" -4 rule show | grep 'from 198.18.0.22 ') || rn_fail "no rule for nic1"
pref=${rule%%:*} table=${rule##* }
ip -n "${HOSTNS[1]}" rule del pref "$pref"
fault nic "nic $N1:nic1: fails with most of its peers" \
	"nic $N1:nic1: fails with most of its peers (12 of 12 pairs; cause route-wrong-nic)"
prom_names "{end_host=$N1,end_nic=nic1} 1" '' '' "nic"
until_q 'count by (peer_host, peer_nic, cause) (roce_mesh_pair_cause{host!="'"$N1"'"})' \
	"{cause=route-wrong-nic,peer_host=$N1,peer_nic=nic1} 6" "nic: the peers' causes"
prom_localize "nic $N1:nic1: fails with most of its peers (12 of 12 pairs; cause route-wrong-nic)" nic
ip -n "${HOSTNS[1]}" rule add pref "$pref" from 198.18.0.22 lookup "$table"
until_all_up "after the nic's rule came back"
prom_names '' '' '' "after the nic"
snap ok1

# 2. the link between the groups
ip -n "$SW" link set trunka down
fault link "link a <-> b: pairs across fail" "link a <-> b: pairs across fail (32 of 32), pairs inside both groups pass: the link or switch between them; cause no-reply"
prom_names '' '' "{group=a,peer_group=b} 1
{group=b,peer_group=a} 1" "link"
prom_localize "link a <-> b: pairs across fail (32 of 32), pairs inside both groups pass: the link or switch between them; cause no-reply" link
# the RTT baselines are there (a link down keeps them); with groups given, --rtt-groups
# leaves them as they are (grouping by RTT itself: test_doctor_mesh, no sch_netem here)
grep -q '^roce_mesh_pair_rtt_baseline_seconds{host="'"${HNAME[0]}"'".*peer_group="b".*} 0\.0' \
	"$T/link-0.prom" || rn_fail "link: no RTT baseline across the link that is down"
out=$("$DOCTOR" localize --rtt-groups "$T"/link-[0-3].prom 2>&1 >/dev/null)
grep -q 'carry groups (a, b): --rtt-groups not applied' <<<"$out" ||
	{ echo "$out"; rn_fail "--rtt-groups over grouped series"; }
ip -n "$SW" link set trunka up
until_all_up "after the link came back"
prom_names '' '' '' "after the link"
snap ok2

# 3. one host: both of host 3's NICs down
ip -n "${HOSTNS[3]}" link set nic0 down
ip -n "${HOSTNS[3]}" link set nic1 down
fault host "host $N3: every NIC fails with most of its peers" \
	"host $N3: every NIC fails with most of its peers (24 of 24 pairs; cause link-down)"
prom_names '' "{end_host=$N3} 1" '' "host"
prom_localize "host $N3: every NIC fails with most of its peers (24 of 24 pairs; cause link-down)" host

# each agent's own figures
for h in 0 1 2 3; do
	grep -E '^roce_mesh_(probes_sent|echoes_sent|checks)_total' "$T/tf$h/roce-mesh.prom" |
		sed "s/^/host $h: /"
done

# the alerts over the agents' own textfiles, 5 min a phase
{
	printf 'rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n' "$RULES"
	printf -- '- interval: 1m\n  input_series:\n'
	args=()
	for h in 0 1 2 3; do
		args+=("h$h=$T/ok0-$h.prom:5,$T/nic-$h.prom:5,$T/ok1-$h.prom:5,$T/link-$h.prom:5,$T/ok2-$h.prom:5,$T/host-$h.prom:5")
	done
	python3 "$RN_TOP/test/netns/prom_series.py" "${args[@]}" || rn_fail "prom_series.py"
	cat <<YML
  alert_rule_test:
    - {eval_time: 4m, alertname: RoceMeshNicBad}
    - {eval_time: 4m, alertname: RoceMeshHostBad}
    - {eval_time: 4m, alertname: RoceMeshLinkBad}
    - eval_time: 9m
      alertname: RoceMeshNicBad
      exp_alerts:
        - exp_labels: {severity: critical, end_host: $N1, end_nic: nic1}
          exp_annotations:
            summary: "RoCE NIC $N1:nic1 fails with most of its peers"
            description: "nic1 on $N1 fails 100% of its NIC pairs in the mesh while its host's other NICs pass: that NIC (its link, its rule, its ARP). roce_mesh_pair_cause names the cause; \`roce-doctor localize --prometheus <this server>\` prints it."
    - {eval_time: 9m, alertname: RoceMeshHostBad}
    - {eval_time: 9m, alertname: RoceMeshLinkBad}
    - {eval_time: 14m, alertname: RoceMeshNicBad}
    - {eval_time: 19m, alertname: RoceMeshNicBad}
    - {eval_time: 19m, alertname: RoceMeshHostBad}
    - eval_time: 19m
      alertname: RoceMeshLinkBad
      exp_alerts:
        - exp_labels: {severity: critical, group: a, peer_group: b}
          exp_annotations:
            summary: "RoCE pairs from group a to b fail"
            description: "100% of the NIC pairs from group a to group b fail while the pairs inside both groups pass: the link or switch between them."
        - exp_labels: {severity: critical, group: b, peer_group: a}
          exp_annotations:
            summary: "RoCE pairs from group b to a fail"
            description: "100% of the NIC pairs from group b to group a fail while the pairs inside both groups pass: the link or switch between them."
    - {eval_time: 24m, alertname: RoceMeshLinkBad}
    - {eval_time: 29m, alertname: RoceMeshNicBad}
    - {eval_time: 29m, alertname: RoceMeshLinkBad}
    - eval_time: 29m
      alertname: RoceMeshHostBad
      exp_alerts:
        - exp_labels: {severity: critical, end_host: $N3}
          exp_annotations:
            summary: "RoCE host $N3: every NIC fails with most of its peers"
            description: "Every RoCE NIC of $N3 fails with most of its peers: the host (its links, its routing, its agent's view). roce_mesh_pair_cause names the cause; \`roce-doctor localize\` prints it."
YML
} >"$T/test.yml"
out=$(cd "$T" && promtool test rules test.yml 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || rn_fail "promtool test rules failed"
printf '%s\n' "${FIGS[@]}"
echo PASS
