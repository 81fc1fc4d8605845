#!/usr/bin/env bash
# A routed peer through the plugin (issue #31): two RoCE subnets joined by a router (the
# bed's namespace, forwarding between addresses of its bridge), each guest's eth0 the RoCE
# NIC in its own subnet with a per-NIC table holding only the subnet route, eth1 a
# management NIC holding main's default. Told where the peers are and the gateway
# (NCCL_ROCE_PEER_SUBNETS, NCCL_ROCE_GATEWAYS), the plugin refuses rxe0 at init with
# no-gateway and the per-NIC default as its fix; roce-doctor --peer-subnet --gateway prints
# the same fix, pasted on each guest; then the plugin carries checked data across the
# router (its forwarded-datagram counter grows), each end's QP route via its gateway.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
plugin_prereq
[ -x "$RN_TOP/build/roce-doctor" ] || rn_fail "build/roce-doctor missing: run make first"

IP0=198.18.1.10 GW0=198.18.1.1 NET0=198.18.1.0/24
IP1=198.18.2.20 GW1=198.18.2.1 NET1=198.18.2.0/24
ONE=(NCCL_IB_HCA=rxe0) # the RoCE NIC alone: eth1/rxe1 is the management NIC here

# layout h ip gw mgmt_ip: eth0 the RoCE NIC (per-NIC table 101, no default), eth1 mgmt
layout() {
	B run "$1" -- bash -c "
		set -e
		ip addr flush dev eth0; ip addr flush dev eth1
		ip addr add $2/24 dev eth0; ip addr add $4/24 dev eth1
		ip route add default via 198.19.0.1 dev eth1
		ip route add ${2%.*}.0/24 dev eth0 src $2 table 101
		ip rule add from $2 lookup 101 priority 101
		sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
		IFS=. read -r a b c e <<<'$2'
		want=\$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \$a \$b \$c \$e)
		for i in \$(seq 100); do
			cat /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | grep -qx \$want && exit 0
			sleep 0.1
		done
		echo 'rxe0 never got a GID for $2'; exit 1" || rn_fail "layout on h$1"
}

probe() { # h env...: the plugin's init on host h
	local h=$1
	shift
	probe_out=$(drv_run "$h" NCCL_DEBUG=INFO "${ONE[@]}" "$@" -- probe)
}
ndevs() { grep -m1 -o 'devices: [0-9]*' <<<"$probe_out" | awk '{print $2}'; }
fwd() { ip netns exec "$BED_NAME" awk '/^Ip: [0-9]/ { print $7 }' /proc/net/snmp; }

body() {
	local h f0 fixes out n0 n1
	B up --hosts 2 --nics 2 --scenario broken --owner "$BED_OWNER" >/dev/null
	# the router: the bed's namespace, an address in each subnet on its bridge; no
	# redirects (every subnet is on the one bridge: a redirect would make the path flat)
	ip -n "$BED_NAME" addr add $GW0/24 dev br0 &&
		ip -n "$BED_NAME" addr add $GW1/24 dev br0 &&
		ip -n "$BED_NAME" addr add 198.19.0.1/24 dev br0 &&
		ip netns exec "$BED_NAME" sysctl -qw net.ipv4.ip_forward=1 \
			net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.br0.send_redirects=0 \
			net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.br0.rp_filter=0 ||
		rn_fail "the router"
	layout 0 $IP0 $GW0 198.19.0.10
	layout 1 $IP1 $GW1 198.19.0.20
	echo "bed: h0 eth0 $IP0 -- router $GW0|$GW1 -- h1 eth0 $IP1; mgmt eth1 198.19.0.0/24"

	t_step "per-NIC tables without a default: refused at init with the fix"
	probe 0 NCCL_ROCE_ROUTE_CHECK=warn NCCL_ROCE_PEER_SUBNETS=$NET1 NCCL_ROCE_GATEWAYS=$GW0
	grep -m1 "NET/RoCE : NIC rxe0:1 " <<<"$probe_out" | sed 's/^/  /'
	grep -Eq "NIC rxe0:1 .*verdict (warn|refused) causes ([a-z-]+,)*no-gateway" <<<"$probe_out" ||
		{ echo "$probe_out" | sed 's/^/  | /'; rn_fail "rxe0 not judged no-gateway"; }
	grep -q "ip route replace default via $GW0 dev eth0 table 101" <<<"$probe_out" ||
		{ echo "$probe_out" | sed 's/^/  | /'; rn_fail "the WARN does not print the per-NIC default"; }
	grep -q "leaves through eth1 (the management NIC: main's default route)" <<<"$probe_out" ||
		rn_fail "the management NIC holding main's default is not named"
	probe 0 NCCL_ROCE_PEER_SUBNETS=$NET1 NCCL_ROCE_GATEWAYS=$GW0
	# no NIC left: init fails (no "devices: N" line), NCCL would fall back to its own
	[ "$(ndevs)" != 1 ] || rn_fail "strict: rxe0 offered"
	rn_log "ok: no-gateway at init, fix printed, refused under strict"

	t_step "roce-doctor --peer-subnet --gateway on each guest; its fixes pasted"
	for h in 0 1; do
		if [ $h = 0 ]; then set -- $NET1 $GW0; else set -- $NET0 $GW1; fi
		B run --timeout 60 $h -- env "${ONE[@]}" build/roce-doctor --json --peer-subnet "$1" \
			--gateway "$2" >"$tmp/h$h.json"
		[ $? = 1 ] || { cat "$tmp/h$h.json"; rn_fail "h$h: doctor did not find the fault"; }
		fixes=$(jq_py "$tmp/h$h.json" "sorted(set(f['fix'] for n in d['nics'] for f in n['findings'] if f['fix']))")
		jq_py "$tmp/h$h.json" "['%s %s' % (n['netdev'], f['cause']) for n in d['nics'] for f in n['findings']]" |
			sed "s/^/  h$h: /"
		out=$(jq_py "$tmp/h$h.json" "'\n'.join(f['fix'] for n in d['nics'] for f in n['findings'] if f['fix'])")
		echo "$out" | sed "s/^/  h$h \$ /"
		[ -n "$fixes" ] || rn_fail "h$h: no fix printed"
		B run $h -- bash -c "set -e; $out" || rn_fail "h$h: the pasted fix failed"
		B run --timeout 60 $h -- env "${ONE[@]}" build/roce-doctor --json --peer-subnet "$1" \
			--gateway "$2" >"$tmp/h$h.after.json" || { cat "$tmp/h$h.after.json"; rn_fail "h$h: not all good after the fix"; }
	done
	probe 0 NCCL_ROCE_PEER_SUBNETS=$NET1 NCCL_ROCE_GATEWAYS=$GW0
	[ "$(ndevs)" = 1 ] || rn_fail "after the fix: $(ndevs) devices offered, want 1"
	B run 0 -- ip route get $IP1 from $IP0 oif eth0 | sed 's/^/  h0: /'
	B run 0 -- ip route get $IP1 from $IP0 oif eth0 | grep -q "via $GW0 dev eth0" ||
		rn_fail "h0's QP route to $IP1 is not via the gateway"
	rn_log "ok: doctor's fixes pasted: all good on both"

	t_step "checked data across the router"
	f0=$(fwd)
	drv_start j 1 "${ONE[@]}" NCCL_ROCE_PEER_SUBNETS=$NET0 -- --dev 0 \
		--sizes 0,4095,65537,1048579 --iters 4 server $IP1:18641
	cli_out=$(drv_run 0 "${ONE[@]}" NCCL_ROCE_PEER_SUBNETS=$NET1 -- --dev 0 client $IP1:18641)
	cli_rc=$?
	srv_out=$(B wait "$j" 2>&1)
	srv_rc=$?
	expect_ok "routed transfer"
	n0=$f0 n1=$(fwd)
	echo "  router: $((n1 - n0)) datagrams forwarded during the transfer"
	[ $((n1 - n0)) -gt 100 ] || rn_fail "the transfer did not cross the router ($((n1 - n0)) forwarded)"
	rn_log "ok: a routed peer: refused with the fix, then checked data through the router"
}

rn_tmpdir tmp
jq_py() { python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = eval(sys.argv[2])
print(" ".join(str(x) for x in r) if isinstance(r, (list, tuple)) else r)' "$1" "$2"; }
bed_attempt body
