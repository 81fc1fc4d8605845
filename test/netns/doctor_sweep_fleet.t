#!/usr/bin/env bash
# The fleet sweep across hosts that differ: three "hosts", each a network namespace with
# its own hostname (unshare --uts), NICs nic0 and nic1 on one shared L2 segment and subnet
# (198.18.0.0/24, the switch a bridge in a namespace of its own) and a management NIC on
# which mpirun (in a management namespace) reaches its ranks. One host's nic1 has MTU 1400
# (ip link set mtu: its real MTU), another's nic1 arp_announce=2: the report (text, JSON,
# SVG) names exactly those two NICs with the field and both values, and the fix for each.
# Every host reports the plugin version read from the library NCCL_NET_PLUGIN names, the
# kernel and rdma-core of the machine. --min-gbps needs RDMA, which this layer has not: the
# bandwidth check is named as skipped, never passed.
. "$(dirname "$0")/doctor_lib.sh"
SWEEP=$RN_TOP/build/roce-doctor-mpi
[ -x "$SWEEP" ] || rn_skip "skip: build/roce-doctor-mpi not built (Open MPI's libopenmpi-dev missing)"
command -v mpirun >/dev/null || rn_skip "skip: mpirun (openmpi-bin) not installed"
command -v unshare >/dev/null || rn_skip "skip: unshare (util-linux) not installed"
rn_require_netns
rn_tmpdir T
N=3

rn_ns M mgmt                      # mpirun's namespace: the management network's bridge
rn_bridge "$M" mbr 198.19.0.1/24
rn_ns SW sw                       # the RoCE switch
rn_bridge "$SW" br0
: >"$T/hosts"
for ((r = 0; r < N; r++)); do
	rn_ns H "h$r"
	rn_in "$H" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	# the same ARP and reverse-path defaults on every host, whatever this machine's are
	rn_in "$H" sysctl -qw net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.all.arp_announce=0 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
	rn_veth "$H" mgmt0 "$M" "mp$r" mbr "198.19.0.$((10 + r))/24"
	for k in 0 1; do
		rn_veth "$H" "nic$k" "$SW" "sp$r$k" br0 "198.18.0.$((10 * r + 11 + k))/24"
	done
	echo "$H rnh$r-$$" >>"$T/hosts"
done
H1=$(sed -n 2p "$T/hosts" | cut -d' ' -f1)
H2=$(sed -n 3p "$T/hosts" | cut -d' ' -f1)
NAME1=rnh1-$$ NAME2=rnh2-$$
ip -n "$H2" link set nic1 mtu 1400
rn_in "$H1" sysctl -qw net.ipv4.conf.nic1.arp_announce=2
# the kernel's link watch may take its time: a NIC not yet operationally up is link-down
while read -r ns _; do
	for d in nic0 nic1; do
		for ((i = 0; i < 60; i++)); do
			ip -n "$ns" -o link show dev "$d" | grep -q 'state UP' && break
			sleep 0.05
		done
	done
done <"$T/hosts"

# Each rank enters its host: namespace and hostname (line rank+1 of the hosts file).
cat >"$T/rank.sh" <<'SH'
#!/bin/sh
line=$(sed -n "$((OMPI_COMM_WORLD_RANK + 1))p" "$(dirname "$0")/hosts")
exec ip netns exec "${line% *}" unshare --uts sh -c 'hostname "$0" && exec "$@"' "${line#* }" "$@"
SH
chmod +x "$T/rank.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 \
	OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_oob_tcp_if_include=mbr \
	PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=mbr
export NCCL_NET_PLUGIN=$RN_TOP/build/libnccl-net-roce.so
t0=$(date +%s.%N)
rn_in "$M" timeout -k 5 120 mpirun -x NCCL_NET_PLUGIN -np $N "$T/rank.sh" "$SWEEP" \
	--netdev nic0,nic1 --no-rdma --min-gbps 10 --json-file "$T/r.json" --svg "$T/r.svg" \
	>"$T/out" 2>&1
RC=$?
t1=$(date +%s.%N)
cat "$T/out"
[ $RC -eq 1 ] || rn_fail "sweep: exit $RC, want 1 (problems found)"

VERSION=$(cat "$RN_TOP/build/version")
RDMA_CORE=$(dpkg-query -W -f '${Version}' libibverbs1 2>/dev/null | sed 's/-[^-]*$//')
python3 - "$T/r.json" "$NAME1" "$NAME2" "$VERSION" "$(uname -r)" "$RDMA_CORE" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
n1, n2, version, kernel, rdma_core = sys.argv[2:]
s = d['summary']
assert (s['hosts'], s['host_pairs_checked'], s['exit']) == (3, 3, 1), s
got = sorted((x['host'], x['nic'], x['field'], x['value'], x['majority'], x['count'], x['of'])
             for x in d['differences'])
want = sorted([(n2, 'nic1', 'mtu', '1400', '1500', 5, 6),
               (n1, 'nic1', 'arp_announce', '2', '0', 5, 6)])
assert got == want, got
fix = {x['field']: x['findings'][0] for x in d['differences']}
assert fix['mtu']['cause'] == 'fleet-differs', fix
assert fix['mtu']['fix'] == 'ip link set dev nic1 mtu 1500' and fix['mtu']['fix_host'] == n2, fix
assert fix['arp_announce']['fix'] == 'sysctl -w net.ipv4.conf.nic1.arp_announce=0', fix
assert fix['arp_announce']['fix_host'] == n1, fix
f = d['fleet']
assert (f['plugin'], f['kernel'], f['mtu'], f['driver'], f['firmware']) == \
       (version, kernel, '1500', 'none', 'none'), f
assert not rdma_core or f['rdma_core'] == rdma_core, (f['rdma_core'], rdma_core)
for h in d['hosts']:
    assert h['plugin'] == version and h['plugin_path'].endswith('libnccl-net-roce.so'), h
    assert [n['mtu'] for n in h['nics']] == ([1500, 1400] if h['host'] == n2 else [1500, 1500])
    assert h['status'] == 'problem', h
b = d['bandwidth']
assert b['min_gbps'] == 10 and b['measured'] == 0 and b['skipped'], b
PY
	rn_fail "JSON report"
grep -q "^  $NAME2:nic1 *mtu 1400, where 5 of 6 have 1500" "$T/out" ||
	rn_fail "the text report does not name $NAME2:nic1's MTU"
grep -q "^  $NAME1:nic1 *arp_announce 2, where 5 of 6 have 0" "$T/out" ||
	rn_fail "the text report does not name $NAME1:nic1's arp_announce"
grep -q '^skipped: bandwidth: ' "$T/out" || rn_fail "the bandwidth check is not named as skipped"
grep -q "$NAME2:nic1 mtu 1400, where 5 of 6 have 1500" "$T/r.svg" || rn_fail "the SVG does not name it"
if command -v rsvg-convert >/dev/null; then
	rsvg-convert -o "$T/r.png" "$T/r.svg" || rn_fail "the SVG does not render"
fi
echo "3 hosts in namespaces: the MTU and the sysctl that differ named, in" \
	"$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s (mpirun included)"
echo PASS
