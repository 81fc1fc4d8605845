#!/usr/bin/env bash
# Field layouts through the plugin itself, on a real kernel with Soft-RoCE GIDs (the
# netns field layer, test/netns/field_*.t, has every layout; these need verbs):
#  - one subnet per NIC, both NICs on the bed's one bridge (one L2 segment): refused with
#    shared-l2 (found by the ARP probe); arp_ignore=1/arp_announce=2 make both good;
#  - L3 /31 per NIC, main's default via eth0's gateway only: rxe1 refused with no-gateway;
#    per-NIC tables with their own default routes make both good.
# The bed has no router, so the L3 case is judged, not carried.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
plugin_prereq

probe() { probe_out=$(drv_run 0 NCCL_DEBUG=INFO "$@" -- probe); }
vline() { grep -m1 "NET/RoCE : NIC $1:1 " <<<"$probe_out"; }
ndevs() { grep -m1 -o 'devices: [0-9]*' <<<"$probe_out" | awk '{print $2}'; }

# renumber "ADDR0" "ADDR1": new addresses on h0's eth0/eth1, then wait for rxe's GIDs
renumber() {
	B run 0 -- bash -c "
		ip addr flush dev eth0; ip addr flush dev eth1
		ip addr add $1 dev eth0; ip addr add $2 dev eth1
		for i in \$(seq 100); do
			n=0
			for d in rxe0:${1%/*} rxe1:${2%/*}; do
				IFS=. read -r a b c e <<<\"\${d#*:}\"
				want=\$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \$a \$b \$c \$e)
				cat /sys/class/infiniband/\${d%%:*}/ports/1/gids/* 2>/dev/null | grep -qx \$want && n=\$((n + 1))
			done
			[ \$n = 2 ] && exit 0
			sleep 0.1
		done
		echo 'GIDs for the new addresses never appeared'; exit 1" || rn_fail "renumber $*"
}

# expect DEV CAUSE|ok: the verdict line of DEV under warn names CAUSE (or is ok)
expect() {
	local line
	line=$(vline "$1")
	echo "  $line"
	if [ "$2" = ok ]; then
		grep -q "verdict ok" <<<"$line" || rn_fail "$1: not ok: $line"
	else
		grep -Eq "verdict (warn|refused) causes ([a-z0-9-]+,)*$2(,|\$)" <<<"$line" ||
			{ echo "$probe_out" | sed 's/^/  | /'; rn_fail "$1: verdict does not name $2"; }
	fi
}

body() {
	local t0 t1
	B up --hosts 1 --nics 2 --scenario broken --owner "$BED_OWNER" >/dev/null
	echo "bed: 1 host x 2 NICs on one bridge, kernel-default ARP sysctls"

	t_step "one subnet per NIC on one L2 segment"
	renumber 198.18.1.10/24 198.18.2.10/24
	t0=$(date +%s%N)
	probe NCCL_ROCE_ROUTE_CHECK=warn
	t1=$(date +%s%N)
	expect rxe0 shared-l2
	expect rxe1 shared-l2
	echo "  (init with the ARP probe: $(((t1 - t0) / 1000000)) ms for the whole probe run)"
	probe
	[ "$(ndevs)" != 2 ] || rn_fail "shared L2: both NICs offered under strict"
	B run 0 -- sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 ||
		rn_fail "sysctl"
	probe
	expect rxe0 ok
	expect rxe1 ok
	[ "$(ndevs)" = 2 ] || rn_fail "shared L2 fixed: $(ndevs) devices offered, want 2"
	rn_log "ok: shared L2 across subnets: shared-l2 refused, arp_ignore=1/arp_announce=2 accepted"

	t_step "L3: a /31 per NIC, main's default via eth0's gateway only"
	renumber 198.18.0.0/31 198.18.0.2/31
	B run 0 -- ip route replace default via 198.18.0.1 dev eth0 || rn_fail "default route"
	probe NCCL_ROCE_ROUTE_CHECK=warn
	expect rxe0 ok
	expect rxe1 no-gateway
	probe
	[ "$(ndevs)" = 1 ] || rn_fail "L3 without tables: $(ndevs) devices offered, want 1"
	B run 0 -- bash -c '
		ip route add 198.18.0.0/31 dev eth0 src 198.18.0.0 table 101
		ip route add default via 198.18.0.1 dev eth0 table 101
		ip rule add from 198.18.0.0 lookup 101 priority 101
		ip route add 198.18.0.2/31 dev eth1 src 198.18.0.2 table 102
		ip route add default via 198.18.0.3 dev eth1 table 102
		ip rule add from 198.18.0.2 lookup 102 priority 102' || rn_fail "per-NIC tables"
	probe
	expect rxe0 ok
	expect rxe1 ok
	[ "$(ndevs)" = 2 ] || rn_fail "L3 with per-NIC tables: $(ndevs) devices offered, want 2"
	rn_log "ok: L3 /31: no-gateway without per-NIC tables, both accepted with them"
}

bed_attempt body
