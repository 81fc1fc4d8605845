#!/usr/bin/env bash
# RoCE inside Kubernetes-style pods: in each guest, "pods" are network namespaces whose
# interfaces the real CNI plugins make (Debian's containernetworking-plugins: macvlan on
# the guest's NICs, static IPAM, tuning, sbr), invoked as a container runtime does
# (lib/cni-run: CNI_COMMAND=ADD/DEL, CNI_NETNS, CNI_IFNAME, CNI_CONTAINERID, CNI_PATH, the
# config on stdin, each plugin's result the next one's prevResult). rxe0/rxe1 stay on the
# guests' eth0/eth1 and are shared by every pod: their GID tables hold every pod's GIDs,
# bound to net1/net2 in each pod (same names, same ifindexes). Layouts:
#  - h0 podA: net1, net2 in one /24 on kernel defaults: refused by the doctor and the plugin
#    in the pod, causes by id; `roce-doctor --cni`'s NetworkAttachmentDefinitions (checked
#    by `kubectl kustomize`, offline) applied through the CNI plugins (DEL + ADD): good;
#  - h0 podB (net1) and podF (net1, net2) share rxe0 with podA: each pod's chosen GID is
#    its own address, never another's; podF is made good by `roce-policy-routing` run
#    without names inside it (it finds net1/net2 through the shared tables, not the other
#    pods' net1);
#  - h1 podC: made with sbr + tuning: good at once (its rules and sysctls, not the guest's);
#  - h1 podE: kernel defaults, made good by the NET_ADMIN commands --cni prints, pasted;
#  - data: pods of two guests (podF -> podC) connect, each side's GID its pod's address;
#    rxe in this kernel (6.1) sends and receives only in the initial namespace, so the first
#    RDMA write fails (LOC_QP_OP_ERR) and the plugin said so at init: asserted as such (a
#    kernel where rxe follows the namespace passes the checked transfer instead); a checked
#    transfer between the guests' own namespaces over rxe0 with all the pods' GIDs in its
#    table (bound to ifindexes that are the guests' eth0's too) picks the guests' GIDs;
#  - the exclusive netns mode: `rdma dev set rxe1 netns ...` is tried first; rxe cannot
#    move (EOPNOTSUPP), so that layout is covered by test_gid's fakes (test_pod_exclusive_vf).
# Every doctor run in a pod is also run through nsenter --net (no /sys of the pod mounted):
# same verdicts and causes, so the checks read the caller's namespace, not /sys's.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
pod_prereq python3 nsenter
DOC=build/roce-doctor
POD=test/vm/lib/pod
rn_tmpdir tmp

# doc H POD NAME [ns]: `roce-doctor --json` in POD on guest H into $tmp/NAME.json (with ns,
# also through nsenter --net into NAME.ns.json, which must agree); its exit status in RC
doc() {
	B run --timeout 300 "$1" -- bash -c 'ip netns exec "$1" '$DOC' --json >/run/bed/d.json; rc=$?
		if [ "$2" = ns ]; then nsenter --net=/run/netns/"$1" '$DOC' --json >/run/bed/d.ns.json
		else cp /run/bed/d.json /run/bed/d.ns.json; (exit $rc); fi; echo $rc $?
		cat /run/bed/d.json; echo "@@"; cat /run/bed/d.ns.json' _ "$2" "${4-}" >"$tmp/$3.raw"
	read -r RC RCNS <"$tmp/$3.raw"
	sed -n '2,/^@@$/p' "$tmp/$3.raw" | sed '$d' >"$tmp/$3.json"
	sed '1,/^@@$/d' "$tmp/$3.raw" >"$tmp/$3.ns.json"
	[ "$RC" = "$RCNS" ] || rn_fail "$2: doctor exit $RC in ip netns exec, $RCNS through nsenter"
	[ "$(summary "$tmp/$3.json")" = "$(summary "$tmp/$3.ns.json")" ] ||
		rn_fail "$2: the doctor's verdicts differ without the pod's /sys: $(summary "$tmp/$3.json") / $(summary "$tmp/$3.ns.json")"
}

# summary FILE: "netdev=verdict:cause,cause gid=N ip=IP" per NIC
summary() {
	python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s=%s:%s gid=%s ip=%s" % (n["netdev"], n["verdict"],
      ",".join(sorted(set(f["cause"] for f in n["findings"]))) or "-", n["gid_index"], n["ip"])
      for n in d["nics"]))
EOF
}

# field FILE NETDEV KEY: one NIC's field (python expression on n, the NIC object)
field() {
	python3 -c 'import json, sys
n = [x for x in json.load(open(sys.argv[1]))["nics"] if x["netdev"] == sys.argv[2]][0]
print(eval(sys.argv[3]))' "$@"
}

# vtime FILE: the figure for the note: the whole check and per NIC
vtime() {
	python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print("%d NIC%s, %.0f ms to the verdicts, %.0f ms per pod NIC" % (s["nics"], "" if s["nics"] == 1 else "s",
      s["elapsed_us"] / 1000.0, s["elapsed_us"] / 1000.0 / max(1, s["nics"])))' "$1"
}

# expect NAME EXIT "netdev=verdict:causes gid=.. ip=.." : the doctor's report on a pod
expect() {
	local got
	got=$(summary "$tmp/$1.json")
	[ "$RC" = "$2" ] && [[ $got == $3 ]] || { cat "$tmp/$1.json"; rn_fail "$1: doctor exit $RC, '$got'; want exit $2, '$3'"; }
	echo "  $1: $got (exit $RC; $(vtime "$tmp/$1.json"))"
}

# gid_is H IBDEV INDEX IP: that slot of IBDEV's table on H holds IP (IPv4-mapped)
gid_is() {
	local want got
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${4//./ })
	got=$(B run "$1" -- cat "/sys/class/infiniband/$2/ports/1/gids/$3")
	[ "$got" = "$want" ] || rn_fail "h$1 $2 gid[$3] is $got, not $4's"
}

body() {
	local j out rc f i g0 g1 cmds=()
	B up --hosts 2 --nics 2 --scenario broken --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 guests x 2 NICs (eth0, eth1: rxe0, rxe1) on one bridge, kernel defaults"

	t_step "exclusive netns: can rxe1 move into a namespace?"
	out=$(B run 1 -- bash -c 'rdma system set netns exclusive || exit 9; ip netns add xprobe
		rdma dev set rxe1 netns xprobe 2>&1; rc=$?; rdma -n xprobe dev 2>/dev/null | grep -q rxe1 &&
		ip netns exec xprobe rdma dev set rxe1 netns 1 2>/dev/null
		ip netns del xprobe; rdma system set netns shared; exit $rc' 2>&1)
	rc=$?
	[ $rc = 9 ] && rn_fail "rdma system set netns exclusive failed: $out"
	if [ $rc = 0 ]; then
		echo "  rxe1 moved into a namespace: this kernel's rxe supports it (not covered here yet)"
	else
		echo "  no: ${out:-exit $rc} (rxe has no namespace move here): covered by test_gid's fakes"
	fi

	t_step "pods made by the CNI plugins (macvlan + static; podC with tuning + sbr)"
	j=$(bg --timeout 300 1 -- bash -c "$POD add podC && $POD net podC net1 eth0 198.18.0.120/24 sbr-tuning &&
		$POD net podC net2 eth1 198.18.0.121/24 sbr-tuning && $POD add podE &&
		$POD net podE net1 eth0 198.18.0.122/24 && $POD net podE net2 eth1 198.18.0.123/24") ||
		rn_fail "cannot start a job on h1"
	B run --timeout 300 0 -- bash -c "$POD add podA && $POD net podA net1 eth0 198.18.0.110/24 &&
		$POD net podA net2 eth1 198.18.0.111/24 && $POD add podB &&
		$POD net podB net1 eth0 198.18.0.112/24 && $POD add podF &&
		$POD net podF net1 eth0 198.18.0.113/24 && $POD net podF net2 eth1 198.18.0.114/24" ||
		rn_fail "h0: the CNI plugins did not make the pods (exit $?)"
	B wait "$j" >/dev/null || rn_fail "h1: the CNI plugins did not make the pods"
	B run 0 -- ip -n podA -br addr | sed 's/^/  h0 podA| /'
	B run 1 -- ip -n podC rule | sed 's/^/  h1 podC| /'

	t_step "the doctor in each pod (ip netns exec, and nsenter --net without the pod's /sys)"
	doc 0 podA A0 ns
	expect A0 1 "net1=refused:arp-flux,no-rule gid=* ip=198.18.0.110 net2=refused:arp-flux,route-wrong-nic gid=* ip=198.18.0.111"
	# --netdev with the pod's own name: the shared port under net1 is judged (in /sys it is
	# named after the guest's eth0), not net1 alone without its RDMA device
	B run --timeout 300 0 -- bash -c "ip netns exec podA $DOC --netdev net1 --json; true" >"$tmp/A0n.json"
	[ "$(field "$tmp/A0n.json" net1 'n["ibdev"]') $(field "$tmp/A0n.json" net1 'n["gid_index"]')" = \
		"rxe0 $(field "$tmp/A0.json" net1 'n["gid_index"]')" ] ||
		{ cat "$tmp/A0n.json"; rn_fail "podA --netdev net1: not judged on rxe0 with its own GID"; }
	echo "  A0 --netdev net1: rxe0 gid $(field "$tmp/A0n.json" net1 'n["gid_index"]'), as without --netdev"
	doc 0 podB B0
	expect B0 0 "net1=ok:- gid=* ip=198.18.0.112"
	grep -q '"skipped": "rxe1:1 (no netdev of this network namespace on it)"' "$tmp/B0.json" ||
		rn_fail "podB: rxe1 (none of podB's netdevs on it) not left out as another's"
	doc 1 podC C0 ns
	expect C0 0 "net1=ok:- gid=* ip=198.18.0.120 net2=ok:- gid=* ip=198.18.0.121"
	doc 1 podE E0
	expect E0 1 "net1=refused:arp-flux,no-rule gid=* ip=198.18.0.122 net2=refused:arp-flux,route-wrong-nic gid=* ip=198.18.0.123"
	# the pod's own sysctls and rules, not the guest's
	[ "$(field "$tmp/C0.json" net1 'n["sysctl"]["dev"]["arp_ignore"]')" = 1 ] ||
		rn_fail "podC net1: tuning's arp_ignore=1 not seen"
	[ "$(B run 1 -- cat /proc/sys/net/ipv4/conf/eth0/arp_ignore)" = 0 ] || rn_fail "h1 eth0 arp_ignore changed"
	python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["rules"]
sys.exit(0 if any(x["from"] == "198.18.0.120/32" and x["table"] >= 100 for x in r) else 1)' "$tmp/C0.json" ||
		rn_fail "podC: sbr's rule for 198.18.0.120 not in the report"
	[ "$(field "$tmp/C0.json" net1 'n["table"]')" != 254 ] || rn_fail "podC net1 judged on main, not sbr's table"

	t_step "one RDMA device, three pods: each pod's GID is its own address"
	doc 0 podF F0
	expect F0 1 "net1=refused:arp-flux,no-rule gid=* ip=198.18.0.113 net2=refused:arp-flux,route-wrong-nic gid=* ip=198.18.0.114"
	gid_is 0 rxe0 "$(field "$tmp/A0.json" net1 'n["gid_index"]')" 198.18.0.110
	gid_is 0 rxe0 "$(field "$tmp/B0.json" net1 'n["gid_index"]')" 198.18.0.112
	gid_is 0 rxe0 "$(field "$tmp/F0.json" net1 'n["gid_index"]')" 198.18.0.113
	gid_is 0 rxe1 "$(field "$tmp/A0.json" net2 'n["gid_index"]')" 198.18.0.111
	gid_is 0 rxe1 "$(field "$tmp/F0.json" net2 'n["gid_index"]')" 198.18.0.114
	echo "  rxe0 GIDs: podA net1 $(field "$tmp/A0.json" net1 'n["gid_index"]'), podB net1 $(field "$tmp/B0.json" net1 'n["gid_index"]'), podF net1 $(field "$tmp/F0.json" net1 'n["gid_index"]') (each its own address; all three net1 are ifindex $(B run 0 -- ip -n podB -o link show net1 | cut -d: -f1) in their pods)"
	out=$(B run --timeout 300 0 -- ip netns exec podB env "${PLUG_ENV[@]}" NCCL_DEBUG=INFO \
		build/nccl-net-driver --require-devices probe 2>&1)
	rc=$?
	[ $rc = 0 ] || { echo "$out"; rn_fail "plugin in podB: exit $rc"; }
	grep -q "NIC rxe0:1 netdev net1 GID $(field "$tmp/B0.json" net1 'n["gid_index"]') IP 198.18.0.112/24 .*verdict ok" <<<"$out" ||
		{ echo "$out"; rn_fail "plugin in podB: not its own GID on rxe0"; }
	grep -q "not using rxe1:1: no netdev of this network namespace" <<<"$out" ||
		{ echo "$out"; rn_fail "plugin in podB: rxe1 not left out"; }
	grep -q "WARN .*rxe0:1 is Soft-RoCE (rxe) on eth0, and net1 is in this pod's network namespace" <<<"$out" ||
		{ echo "$out"; rn_fail "plugin in podB: no WARN for rxe in a pod"; }
	grep "NIC rxe0:1 " <<<"$out" | sed 's/^/  podB plugin| /'
	out=$(B run --timeout 300 0 -- ip netns exec podA env "${PLUG_ENV[@]}" NCCL_DEBUG=INFO \
		build/nccl-net-driver --require-devices probe 2>&1)
	rc=$?
	[ $rc = 3 ] || { echo "$out"; rn_fail "plugin in podA (defaults): exit $rc, want 3 (refused)"; }
	for i in "rxe0:1 netdev net1 .*verdict refused causes arp-flux" "rxe1:1 netdev net2 .*verdict refused causes route-wrong-nic,arp-flux"; do
		grep -Eq "NIC $i" <<<"$out" || { echo "$out"; rn_fail "plugin in podA: not 'NIC $i'"; }
	done
	echo "  podA plugin: both NICs refused (arp-flux, no-rule / route-wrong-nic)"

	t_step "the fix for a pod: roce-doctor --cni, applied through the CNI plugins"
	B run --timeout 240 0 -- bash -c "ip netns exec podA $DOC --cni >/run/bed/nadA.json 2>/run/bed/nadA.err; echo \$?" >"$tmp/rc"
	[ "$(cat "$tmp/rc")" = 1 ] || rn_fail "--cni in podA: exit $(cat "$tmp/rc"), want 1 (needs fixing)"
	f=$RN_TOP/build/vm-runs/$BED_NAME/h0
	cp "$f/nadA.json" "$f/nadA.err" "$tmp/"
	sed 's/^/  stderr| /' "$tmp/nadA.err"
	python3 - "$tmp/nadA.json" <<'EOF' || rn_fail "--cni: not the NetworkAttachmentDefinitions wanted"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "List" and len(d["items"]) == 2, d
for item, (ifn, master, ip) in zip(d["items"], [("net1", "eth0", "198.18.0.110/24"),
                                               ("net2", "eth1", "198.18.0.111/24")]):
    assert item["apiVersion"] == "k8s.cni.cncf.io/v1" and item["kind"] == "NetworkAttachmentDefinition"
    assert item["metadata"]["name"] == "roce-" + ifn
    c = json.loads(item["spec"]["config"])
    t = [p["type"] for p in c["plugins"]]
    assert t == ["macvlan", "tuning", "sbr"], t
    assert c["plugins"][0]["master"] == master, c
    assert c["plugins"][0]["ipam"]["addresses"][0]["address"] == ip, c
    s = c["plugins"][1]["sysctl"]
    assert s["net.ipv4.conf.IFNAME.arp_ignore"] == "1" and s["net.ipv4.conf.IFNAME.arp_announce"] == "2", s
    print("  %s: %s on %s, %s" % (item["metadata"]["name"], " + ".join(t), master, ip))
EOF
	if command -v kubectl >/dev/null; then
		mkdir -p "$tmp/kz" && cp "$tmp/nadA.json" "$tmp/kz/" &&
			printf 'resources:\n- nadA.json\n' >"$tmp/kz/kustomization.yaml"
		kubectl kustomize "$tmp/kz" >"$tmp/kz.out" 2>&1 || { cat "$tmp/kz.out"; rn_fail "kubectl kustomize refuses --cni's output"; }
		[ "$(grep -c '^kind: NetworkAttachmentDefinition' "$tmp/kz.out")" = 2 ] || rn_fail "kubectl kustomize: not 2 NADs"
		echo "  kubectl kustomize (offline): 2 NetworkAttachmentDefinitions"
	fi
	B run --timeout 300 0 -- bash -c "$POD renet podA net1 /run/bed/nadA.json && $POD renet podA net2 /run/bed/nadA.json" ||
		rn_fail "podA: DEL + ADD with --cni's configuration failed"
	echo "  podA: net1, net2 DEL + ADD through macvlan, static, tuning, sbr"
	doc 0 podA A1
	expect A1 0 "net1=ok:- gid=* ip=198.18.0.110 net2=ok:- gid=* ip=198.18.0.111"

	t_step "a pod with NET_ADMIN: --cni's commands pasted (podE); roce-policy-routing in a pod (podF)"
	B run --timeout 240 1 -- bash -c "ip netns exec podE $DOC --cni 2>&1 >/dev/null" >"$tmp/cniE.err"
	mapfile -t cmds < <(grep -v '^#' "$tmp/cniE.err")
	[ ${#cmds[@]} -gt 0 ] || { cat "$tmp/cniE.err"; rn_fail "--cni in podE printed no command"; }
	printf '  podE# %s\n' "${cmds[@]}"
	j=$(bg --timeout 240 0 -- ip netns exec podF scripts/roce-policy-routing) || rn_fail "cannot start a job on h0"
	B run --timeout 60 1 -- ip netns exec podE bash -c 'for c; do sh -c "$c" >/dev/null || { echo "failed: $c"; exit 1; }; done' _ "${cmds[@]}" ||
		rn_fail "podE: a pasted command failed"
	B wait "$j" >"$tmp/prr" 2>&1 || { cat "$tmp/prr"; rn_fail "podF: roce-policy-routing failed"; }
	grep -q '^# net1: ip 198.18.0.113/24' "$tmp/prr" && grep -q '^# net2: ip 198.18.0.114/24' "$tmp/prr" ||
		{ cat "$tmp/prr"; rn_fail "podF: roce-policy-routing did not find net1 and net2"; }
	echo "  podF# scripts/roce-policy-routing   (found: $(grep -Eo '^# net[0-9]: ip [0-9./]+' "$tmp/prr" | tr '\n' ' '))"
	doc 1 podE E1
	expect E1 0 "net1=ok:- gid=* ip=198.18.0.122 net2=ok:- gid=* ip=198.18.0.123"
	doc 0 podF F1
	expect F1 0 "net1=ok:- gid=* ip=198.18.0.113 net2=ok:- gid=* ip=198.18.0.114"

	# podF, not podA: sbr moved the subnet's routes out of main, so the tool's own side
	# channel (an unbound TCP socket) has no route from podA; podC only listens
	t_step "data: podF (h0) -> podC (h1) through the plugin"
	j=$(bg --timeout 300 1 -- ip netns exec podC env "${PLUG_ENV[@]}" "${FAULT_ENV[@]}" NCCL_IB_HCA==rxe0 \
		stdbuf -oL build/nccl-net-driver "${PLUG_DRV[@]}" --size 1M --iters 10 server 198.18.0.120:5611) ||
		rn_fail "cannot start a job on h1"
	B run --timeout 20 1 -- ip netns exec podC bash -c 'for i in $(seq 100); do ss -Hltn "sport = :5611" | grep -q . && exit 0; sleep 0.1; done; exit 1' ||
		rn_fail "the driver in podC never listened"
	cli_out=$(B run --timeout 300 0 -- ip netns exec podF env "${PLUG_ENV[@]}" "${FAULT_ENV[@]}" NCCL_IB_HCA==rxe0 \
		NCCL_DEBUG=INFO stdbuf -oL build/nccl-net-driver "${PLUG_DRV[@]}" client 198.18.0.120:5611 2>&1)
	cli_rc=$?
	srv_out=$(B wait "$j" 2>&1)
	srv_rc=$?
	if [ $cli_rc = 0 ] && [ $srv_rc = 0 ]; then
		rn_log "ok: pods of two guests: checked transfer, 10 x 1 MiB ($(grep -Eo '[0-9.]+ [MG]B/s' <<<"$cli_out" | tail -n1))"
	else
		grep -q "connected 1 connection" <<<"$cli_out" || { show_pair; rn_fail "podF -> podC: no connection"; }
		g0=0000:0000:0000:0000:0000:ffff:c612:0071 g1=0000:0000:0000:0000:0000:ffff:c612:0078
		grep -Eq "LOC_QP_OP_ERR.*(localGid $g1 remoteGid $g0|localGid $g0 remoteGid $g1)" <<<"$srv_out$cli_out" ||
			{ show_pair; rn_fail "podF -> podC: failed otherwise than rxe's initial-namespace sockets (LOC_QP_OP_ERR)"; }
		grep -q "WARN .*is Soft-RoCE (rxe) on eth0, and net1 is in this pod's network namespace" <<<"$cli_out" ||
			{ show_pair; rn_fail "podF: the plugin did not warn at init"; }
		echo "  connected: podC's GID 198.18.0.120, podF's 198.18.0.113 (each its pod's address, both ends);"
		echo "  then LOC_QP_OP_ERR at the first RDMA write: rxe (kernel $(B run 0 -- uname -r)) sends and"
		echo "  receives only in the initial namespace, as the plugin warned at init"
	fi
	t_step "data: the guests' own namespaces over rxe0, all the pods' GIDs in its table"
	# the guests' own NICs share the /24 on kernel defaults: fixed as a node would be
	j=$(bg --timeout 240 1 -- scripts/roce-policy-routing eth0 eth1) || rn_fail "cannot start a job on h1"
	B run --timeout 240 0 -- scripts/roce-policy-routing eth0 eth1 >/dev/null || rn_fail "h0: roce-policy-routing eth0 eth1"
	B wait "$j" >/dev/null || rn_fail "h1: roce-policy-routing eth0 eth1"
	echo "  h0, h1 (their own namespaces)# scripts/roce-policy-routing eth0 eth1"
	echo "  h0 eth0 is ifindex $(B run 0 -- cat /sys/class/net/eth0/ifindex), as each pod's net1 in its pod"
	drv_start j 1 NCCL_IB_HCA==rxe0 -- --size 1M --iters 10 server "$(bed_ip 1 0):5612"
	cli_out=$(drv_run 0 NCCL_IB_HCA==rxe0 NCCL_DEBUG=INFO -- client "$(bed_ip 1 0):5612")
	cli_rc=$?
	srv_out=$(B wait "$j" 2>&1)
	srv_rc=$?
	expect_ok "guests' namespaces: checked transfer over rxe0, 10 x 1 MiB ($(grep -Eo '[0-9.]+ [MG]B/s' <<<"$cli_out" | tail -n1))"
	grep -q "NIC rxe0:1 netdev eth0 GID [0-9]* IP 198.18.0.10/24 .*verdict ok" <<<"$cli_out" ||
		{ show_pair; rn_fail "h0: the guest's rxe0 not on its own GID (198.18.0.10)"; }

	t_step "DEL: the pods' interfaces removed through the plugins, their GIDs gone"
	# both guests at once (each DEL is a chain of CNI plugin runs: seconds under TCG)
	j=$(bg --timeout 300 1 -- bash -c "$POD rm podC && $POD rm podE") || rn_fail "cannot start a job on h1"
	B run --timeout 300 0 -- bash -c "$POD rm podA && $POD rm podB && $POD rm podF" || rn_fail "h0: DEL failed"
	B wait "$j" >/dev/null || rn_fail "h1: DEL failed"
	out=$(B run 0 -- bash -c 'for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do read -r v <$g 2>/dev/null; echo $v; done' | grep -c ':c612:00[67]')
	[ "$out" = 0 ] || rn_fail "h0 rxe0 still holds $out pod GIDs after DEL"
	rn_log "ok: pods: defaults refused by cause, --cni's NADs through the CNI plugins and the NET_ADMIN commands and roce-policy-routing make them good, each pod on its own GID"
}

bed_attempt body
