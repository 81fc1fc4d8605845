#!/usr/bin/env bash
# roce-doctor --textfile's link history read by a real node-exporter and scraped by a real
# Prometheus (test/netns/prom_lib.sh): a host with 2 NICs whose nic1 loses its carrier
# (the switch side of its veth goes down and up) often enough for the link-flapping rule
# (more than 5 lost carriers in 24 h; past a day of uptime the library averages over it,
# so the flaps are as many as that takes). Prometheus' HTTP API gives each NIC's
# roce_nic_carrier_changes_total and roce_nic_carrier_down_total as sysfs counts them,
# roce_nic_link_flapping 1 on nic1 and 0 on nic0, and the link-flapping finding on nic1
# only; after two more flaps and a rewritten textfile, the counters Prometheus holds grow
# by exactly those. The textfile passes `promtool check metrics`.
# The port counters (roce_nic_hw_counters_total, roce_nic_link_downed_total) need an RDMA
# device, which network namespaces do not have, and the doctor has no way (test-only or
# other) to read a fake sysfs root: they are absent here (asserted) and checked over a
# sysfs fixture by test/unit/test_doctor_prom.c.
. "$(dirname "$0")/doctor_lib.sh"
. "$(dirname "$0")/prom_lib.sh"
rn_require_netns
prom_require
rn_tmpdir T

rn_host_ns 2
H=$RN_HOST
mkdir -p "$T/tf"

# flap N: nic1's carrier lost and back N times (its veth's other end, on the switch)
flap() {
	local i
	for ((i = 0; i < $1; i++)); do
		echo "link set hp1 down"
		echo "link set hp1 up"
	done | ip -n "$RN_PEER" -batch - || rn_fail "cannot flap hp1"
	for _ in $(seq 50); do
		[ "$(rn_in "$H" cat /sys/class/net/nic1/carrier 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	rn_fail "nic1 has no carrier after the flaps"
}
# sysfs NIC FILE: what the kernel counts for NIC in the host's namespace
sysfs() { rn_in "$H" cat "/sys/class/net/$1/$2"; }

# more than 5 lost carriers, and more than 5 per 24 h averaged over the uptime past a day
up=$(cut -d' ' -f1 /proc/uptime)
n=$(awk -v up="$up" -v d="$(sysfs nic1 carrier_down_count)" 'BEGIN {
	n = 6 - d; if (up > 86400) { m = int(5 * up / 86400) + 2 - d; if (m > n) n = m }
	print n < 1 ? 1 : n }')
flap "$n"
echo "nic1: $n flaps, uptime $up s: $(sysfs nic1 carrier_down_count) lost carriers"

ip netns exec "$H" "$DOCTOR" --netdev nic0,nic1 --textfile "$T/tf/roce.prom"
RC=$?
[ $RC -eq 1 ] || rn_fail "--textfile exit $RC, want 1 (kernel defaults, a flapping link)"
prom_check_file "$T/tf/roce.prom" "the textfile"
echo "promtool check metrics: clean"

prom_start host="$T/tf"
until_q 'up{job="roce"}' 'up{node=host} 1' "Prometheus does not scrape node-exporter"
until_q 'node_textfile_scrape_error' 'node_textfile_scrape_error{node=host} 0' \
	"node-exporter reports a textfile error"

# want METRIC FILE: the series Prometheus should hold for both NICs, from sysfs
want() {
	echo "$1{netdev=nic0,node=host} $(sysfs nic0 "$2")"
	echo "$1{netdev=nic1,node=host} $(sysfs nic1 "$2")"
}
until_q roce_nic_carrier_changes_total "$(want roce_nic_carrier_changes_total carrier_changes)" \
	"carrier changes"
until_q roce_nic_carrier_down_total "$(want roce_nic_carrier_down_total carrier_down_count)" \
	"lost carriers"
until_q roce_nic_link_flapping 'roce_nic_link_flapping{netdev=nic0,node=host} 0
roce_nic_link_flapping{netdev=nic1,node=host} 1' "the link-flapping gauge"
until_q 'roce_nic_finding{cause="link-flapping"}' \
	'roce_nic_finding{cause=link-flapping,netdev=nic1,node=host,severity=warn} 1' \
	"the link-flapping finding series"
# no RDMA device in a namespace: no port counters (test_doctor_prom reads a fixture's)
until_q '{__name__=~"roce_nic_hw_counters_.*|roce_nic_link_downed_total"}' '' \
	"port counters without an RDMA device"
q '{__name__=~"roce_nic_carrier_.*|roce_nic_link_flapping"}'
before=$(sysfs nic1 carrier_changes)

# two more flaps: the rewritten textfile's counters grow by exactly those in Prometheus
flap 2
[ "$(sysfs nic1 carrier_changes)" -eq $((before + 4)) ] ||
	rn_fail "two flaps: carrier_changes $before -> $(sysfs nic1 carrier_changes), want +4"
ip netns exec "$H" "$DOCTOR" --netdev nic0,nic1 --textfile "$T/tf/roce.prom"
until_q 'roce_nic_carrier_changes_total{netdev="nic1"}' \
	"roce_nic_carrier_changes_total{netdev=nic1,node=host} $((before + 4))" \
	"carrier changes after two more flaps"
until_q roce_nic_carrier_down_total "$(want roce_nic_carrier_down_total carrier_down_count)" \
	"lost carriers after two more flaps"
echo "after two more flaps: nic1's carrier changes $before -> $((before + 4)) in Prometheus"
echo "PASS"
