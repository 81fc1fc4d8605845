#!/usr/bin/env bash
# roce-doctor --cni where no NetworkAttachmentDefinition can be made (network namespaces
# have no RDMA device): nothing on stdout (an empty List would apply cleanly and attach
# nothing), why on stderr, exit 1. Named netdevs: each one named with its reason; none
# named: the namespace's lack of an RDMA device.
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T
rn_host_ns 2
H=$RN_HOST

ip netns exec "$H" "$DOCTOR" --netdev nic0,nic1 --cni >"$T/out" 2>"$T/err"
RC=$?
cat "$T/err"
[ $RC -eq 1 ] || rn_fail "--netdev nic0,nic1 --cni: exit $RC, want 1"
[ -s "$T/out" ] && rn_fail "--cni printed on stdout: $(cat "$T/out")"
for n in nic0 nic1; do
	grep -qx "roce-doctor: --cni: $n: no RDMA device behind it (no RoCE GID holds its address)" \
		"$T/err" || rn_fail "$n: no reason on stderr"
done
grep -q 'none of the 2 NICs is a RoCE NIC a pod can be given' "$T/err" || rn_fail "no summary line"

ip netns exec "$H" "$DOCTOR" --cni >"$T/out" 2>"$T/err"
RC=$?
cat "$T/err"
[ $RC -eq 1 ] || rn_fail "--cni: exit $RC, want 1"
[ -s "$T/out" ] && rn_fail "--cni printed on stdout: $(cat "$T/out")"
grep -q '^roce-doctor: --cni: no RDMA device in this network namespace' "$T/err" ||
	rn_fail "no reason on stderr"
echo "PASS"
