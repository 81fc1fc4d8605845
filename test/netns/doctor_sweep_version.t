#!/usr/bin/env bash
# The fleet sweep's plugin version check, one rank on another build and one without the
# plugin: four "hosts" (network namespaces with their own hostname, one NIC each on one
# segment, mpirun over a management network, as doctor_sweep_fleet.t). Ranks 0 and 2 load
# build/libnccl-net-roce.so; rank 1 a plugin built here with VERSION=0.2.9 (the objects of
# build/ but plugin.c, the one that holds the version tag, compiled again: make with
# BUILD= a copy of build/obj); rank 3's NCCL_NET_PLUGIN names no library. The report: rank
# 1's plugin is fleet-differs (0.2.9 where 2 of 3 have this version), rank 3 is
# plugin-missing, fatal, on one line of its own, and the sweep exits 1; the JSON says the same.
. "$(dirname "$0")/doctor_lib.sh"
SWEEP=$RN_TOP/build/roce-doctor-mpi
[ -x "$SWEEP" ] || rn_skip "skip: build/roce-doctor-mpi not built (Open MPI's libopenmpi-dev missing)"
command -v mpirun >/dev/null || rn_skip "skip: mpirun (openmpi-bin) not installed"
command -v unshare >/dev/null || rn_skip "skip: unshare (util-linux) not installed"
rn_require_netns
rn_tmpdir T
N=4
VERSION=$(cat "$RN_TOP/build/version")
OLD=0.2.9
[ "$VERSION" != "$OLD" ] || rn_fail "this build is $OLD already"

# another build of the plugin: only plugin.c (the version tag) compiled again
B=$T/b
mkdir -p "$B"
cp -a "$RN_TOP/build/obj" "$B/"
echo "$OLD" >"$B/version"
touch -d '2000-01-01' "$B/version"
rm -f "$B/obj/plugin/plugin.o"
make -C "$RN_TOP" --no-print-directory BUILD="$B" VERSION="$OLD" "$B/libnccl-net-roce.so" \
	>"$T/make.log" 2>&1 || { cat "$T/make.log"; rn_fail "could not build the $OLD plugin"; }
grep -q "plugin/plugin.c" "$T/make.log" || { cat "$T/make.log"; rn_fail "plugin.c not compiled again"; }
grep -q "src/" "$T/make.log" && { cat "$T/make.log"; rn_fail "the library was compiled again"; }
grep -qa "@(#)nccl-net-roce $OLD" "$B/libnccl-net-roce.so" || rn_fail "the $OLD build has no $OLD tag"

rn_ns M mgmt
rn_bridge "$M" mbr 198.19.0.1/24
rn_ns SW sw
rn_bridge "$SW" br0
plugin=("$RN_TOP/build/libnccl-net-roce.so" "$B/libnccl-net-roce.so" \
	"$RN_TOP/build/libnccl-net-roce.so" "$T/nowhere/libnccl-net-roce.so")
: >"$T/hosts"
for ((r = 0; r < N; r++)); do
	rn_ns H "h$r"
	rn_in "$H" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	rn_veth "$H" mgmt0 "$M" "mp$r" mbr "198.19.0.$((10 + r))/24"
	rn_veth "$H" nic0 "$SW" "sp$r" br0 "198.18.0.$((11 + r))/24"
	echo "$H rnv$r-$$ ${plugin[r]}" >>"$T/hosts"
done
while read -r ns _; do
	for ((i = 0; i < 60; i++)); do
		ip -n "$ns" -o link show dev nic0 | grep -q 'state UP' && break
		sleep 0.05
	done
done <"$T/hosts"

# Each rank enters its host (namespace, hostname) with its own NCCL_NET_PLUGIN.
cat >"$T/rank.sh" <<'SH'
#!/bin/sh
set -- "$(sed -n "$((OMPI_COMM_WORLD_RANK + 1))p" "$(dirname "$0")/hosts")" "$@"
ns=${1%% *} rest=${1#* } && shift
NCCL_NET_PLUGIN=${rest#* } && export NCCL_NET_PLUGIN
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec "$@"' "${rest%% *}" "$@"
SH
chmod +x "$T/rank.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 \
	OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_oob_tcp_if_include=mbr \
	PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include=mbr
rn_in "$M" timeout -k 5 120 mpirun -np $N "$T/rank.sh" "$SWEEP" --netdev nic0 --no-rdma \
	--json-file "$T/r.json" >"$T/out" 2>&1
RC=$?
cat "$T/out"
[ $RC -eq 1 ] || rn_fail "sweep: exit $RC, want 1 (problems found)"

N1=rnv1-$$ N3=rnv3-$$
python3 - "$T/r.json" "$N1" "$N3" "$VERSION" "$OLD" <<'PY' || rn_fail "JSON report"
import json, sys
d = json.load(open(sys.argv[1]))
n1, n3, version, old = sys.argv[2:]
got = sorted((x['host'], x['field'], x['value'], x['majority'], x['count'], x['of'],
              x['findings'][0]['cause'], x['findings'][0]['severity']) for x in d['differences'])
want = sorted([(n1, 'plugin', old, version, 2, 3, 'fleet-differs', 'warn'),
               (n3, 'plugin', 'not found', version, 2, 4, 'plugin-missing', 'fatal')])
assert got == want, got
assert d['fleet']['plugin'] == version, d['fleet']
plugins = {h['host']: h['plugin'] for h in d['hosts']}
assert plugins[n1] == old and plugins[n3] == 'not found', plugins
assert d['summary']['exit'] == 1, d['summary']
PY
grep -q "^  $N1 *plugin $OLD, where 2 of 3 have $VERSION\$" "$T/out" ||
	rn_fail "the text report does not name $N1's plugin version"
# one line in the fleet's differences, and the finding (with what to do) below
line=$(grep "^  $N3 *plugin-missing (fatal): " "$T/out")
[ "$(grep -c . <<<"$line")" = 1 ] || rn_fail "not one plugin-missing line: $line"
grep -q "(fatal): no NCCL net plugin: NCCL_NET_PLUGIN finds no library on $N3, so NCCL" <<<"$line" ||
	rn_fail "the plugin-missing line does not say so: $line"
grep -q "^  plugin-missing \[fatal\] on $N3\$" "$T/out" || rn_fail "no plugin-missing finding"
echo "PASS"
