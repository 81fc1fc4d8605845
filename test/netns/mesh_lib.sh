# shellcheck shell=bash
# The mesh's hosts for test/netns/doctor_mesh*.t, on top of doctor_lib.sh:
#   mesh_bed N                 N "hosts" (namespaces, each its own hostname through
#                              unshare --uts when its agent starts): nic0, nic1 on the RoCE
#                              switch (namespace SW): hosts 0..N/2-1 on bridge bra (group a),
#                              the others on brb (group b), the two bridges joined by the
#                              veth pair trunka/trunkb (the link between the groups);
#                              198.18.0.<10h+11+k>/24 on nic<k>; mgmt0 198.19.0.<10+h>/24 on
#                              the management bridge in MGMT (where Prometheus runs too);
#                              every host fixed by scripts/roce-policy-routing. Sets HOSTNS[h],
#                              HNAME[h], MGMT_IP[h]; the hosts list in $T/hosts.
#   mesh_start H ARGS...       roce-doctor mesh in host H (serve and metrics on its mgmt
#                              address, port 9100), its pid in AGENT[H], log $T/agent$H.log;
#                              the hosts from $T/hosts, or from the command in HOSTS_CMD
# Needs T (rn_tmpdir) set.
HOSTNS=() HNAME=() MGMT_IP=() AGENT=()

mesh_bed() {
	local n=$1 h k br
	rn_ns MGMT mgmt
	rn_bridge "$MGMT" mbr 198.19.0.1/24
	rn_ns SW sw
	rn_bridge "$SW" bra
	rn_bridge "$SW" brb
	ip -n "$SW" link add trunka type veth peer name trunkb || rn_fail "trunk veth"
	ip -n "$SW" link set trunka master bra up
	ip -n "$SW" link set trunkb master brb up
	: >"$T/hosts"
	for ((h = 0; h < n; h++)); do
		rn_ns HOSTNS[h] "h$h"
		local ns=${HOSTNS[h]}
		HNAME[h]=rnm$h-$$
		MGMT_IP[h]=198.19.0.$((10 + h))
		br=bra
		[ $h -ge $((n / 2)) ] && br=brb
		rn_in "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 net.ipv4.conf.all.rp_filter=0 \
			net.ipv4.conf.default.rp_filter=0
		rn_veth "$ns" mgmt0 "$MGMT" "mp$h" mbr "${MGMT_IP[h]}/24"
		for k in 0 1; do
			rn_veth "$ns" "nic$k" "$SW" "sp$h$k" $br "198.18.0.$((10 * h + 11 + k))/24"
		done
		rn_in "$ns" "$RN_TOP/scripts/roce-policy-routing" --state-dir "$T/pr$h" nic0 nic1 \
			>/dev/null || rn_fail "roce-policy-routing on host $h"
		echo "${MGMT_IP[h]} $([ $br = bra ] && echo a || echo b)" >>"$T/hosts"
	done
}

mesh_start() {
	local h=$1 src=(--hosts "$T/hosts")
	shift
	[ -z "${HOSTS_CMD:-}" ] || src=(--hosts-cmd "$HOSTS_CMD")
	mkdir -p "$T/tf$h"
	bg_start "AGENT[$h]" ip netns exec "${HOSTNS[h]}" unshare --uts sh -c \
		'hostname "$0" && exec "$@"' "${HNAME[h]}" "$DOCTOR" mesh "${src[@]}" \
		--netdev nic0,nic1 --listen "${MGMT_IP[h]}" \
		--listen-metrics "${MGMT_IP[h]}:9100" --textfile-dir "$T/tf$h" "$@" \
		>"$T/agent$h.log" 2>&1
	wait_log "${AGENT[h]}" "$T/agent$h.log" 'probes on UDP port' \
		"the agent of host $h did not start"
}
