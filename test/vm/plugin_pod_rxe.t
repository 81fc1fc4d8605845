#!/usr/bin/env bash
# Pods with RDMA devices of their own, pod to pod, on kernel 7.3 (BED_KERNEL=7.3: rxe with
# per-namespace sockets and links). In each guest, pods are network namespaces whose
# interfaces the real CNI plugins make (lib/pod, lib/cni-run: macvlan + static IPAM, then
# tuning and sbr as `roce-doctor --cni` prints them); each pod also makes its own Soft-RoCE
# devices inside its namespace (`rdma link add … type rxe netdev net1`: the shape of SR-IOV's
# exclusive mode). Every pod has a primary eth0 (macvlan + tuning, 198.18.2.0/24) for the
# tools' own TCP side channel, as a Kubernetes pod has its cluster network beside its RDMA
# NICs (sbr moves net1's routes out of main).
#  - exclusive netns mode (`rdma system set netns exclusive`; the link made in the pod is
#    registered in the initial namespace, then moved: `rdma dev set rxxH netns podX`): a pod's
#    device is seen in that pod only (two pods of h0: each sees its own alone), the guest's
#    rxe0/rxe1 not at all; the plugin in the pod, with no device named, offers exactly its
#    pod's device and carries checked data to a pod on the other guest; then the guests go
#    back to shared mode;
#  - shared mode: h0 podA (net1, net2 on kernel defaults; rxa0, rxa1), podB (net1 with sbr +
#    tuning; rxb0), h1 podC (net1, net2 with sbr + tuning; rxc0, rxc1). podA is refused by
#    the plugin and the doctor alike (same GIDs, verdicts and causes), `roce-doctor --cni`'s
#    NADs applied through the CNI plugins (DEL + ADD; the pod's rxe made again on the new
#    net1/net2) make it pass; then checked data podA -> podC on NIC 1, NIC 2 and a vNIC of
#    both (each NIC carries a quarter at least: rxe's sent_bytes); podA and podB use their
#    own devices and GIDs and leave each other's out (no netdev of their namespace).
# In shared mode the guest's rxe0/rxe1 are visible in every pod and hold the pods' macvlan
# GIDs too (the shared-device model: plugin_pods.t). The plugin and the doctor leave out
# one reached through an interface that has a device of its own (rxe1 through podA's net2,
# which has rxa1); one reached through another interface (the pod's eth0) is offered with
# the plugin's WARN, so the jobs here name the pod's own devices (NCCL_IB_HCA), as a job
# given SR-IOV devices does.
set -u
export BED_KERNEL=7.3
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
pod_prereq python3
DOC=build/roce-doctor
POD=test/vm/lib/pod
rn_tmpdir tmp

# probe H POD NAME [env...]: the plugin's device list in POD (nccl-net-driver probe, INFO)
# into $tmp/NAME.probe, its exit status in RC
probe() {
	local h=$1 p=$2 n=$3
	shift 3
	B run --timeout 300 "$h" -- ip netns exec "$p" env "${PLUG_ENV[@]}" "$@" NCCL_DEBUG=INFO \
		build/nccl-net-driver --require-devices probe >"$tmp/$n.probe" 2>&1
	RC=$?
}

# nics NAME: the plugin's "dev:port netdev gid verdict causes" per NIC, sorted
nics() {
	sed -n 's/.*NET\/RoCE : NIC \([^ ]*\) netdev \([^ ]*\) GID \([0-9]*\) IP [^ ]* .*verdict \([a-z]*\)\( causes \([^ ]*\)\)\{0,1\}.*/\1 \2 \3 \4 \6/p' \
		"$tmp/$1.probe" | while read -r d n g v c; do
		echo "$d $n $g $v $(tr ',' '\n' <<<"${c:--}" | sort | paste -sd, -)"; done | sort
}

# doc H POD NAME: `roce-doctor --json` in POD into $tmp/NAME.json, its exit status in RC,
# and its NICs as nics prints the plugin's (NAME.doc)
doc() {
	B run --timeout 300 "$1" -- bash -c "ip netns exec $2 $DOC --json; echo \"@@ \$?\"" >"$tmp/$3.raw"
	RC=$(sed -n 's/^@@ //p' "$tmp/$3.raw")
	sed '/^@@ /d' "$tmp/$3.raw" >"$tmp/$3.json"
	python3 - "$tmp/$3.json" <<'EOF' >"$tmp/$3.doc" || rn_fail "$3: the doctor's JSON does not parse"
import json, sys
for n in json.load(open(sys.argv[1]))["nics"]:
    c = ",".join(sorted(set(f["cause"] for f in n["findings"]))) or "-"
    print("%s:%s %s %s %s %s" % (n["ibdev"], n.get("port", 1), n["netdev"], n["gid_index"], n["verdict"], c))
EOF
	sort -o "$tmp/$3.doc" "$tmp/$3.doc"
}

# agree NAME IBDEV-REGEX: the doctor (NAME.doc) and the plugin (NAME.probe) say the same of
# the NICs on the pod's own devices
agree() {
	local d p
	d=$(grep -E "^($2):" "$tmp/$1.doc")
	p=$(nics "$1" | grep -E "^($2):")
	[ -n "$p" ] && [ "$d" = "$p" ] ||
		{ echo "doctor: $d"; echo "plugin: $p"; rn_fail "$1: the doctor and the plugin disagree"; }
	sed "s/^/  $1 doctor = plugin| /" <<<"$p"
}

# gid_of H IBDEV IP [POD]: the index of IP's RoCE v2 GID in IBDEV's table on H, read in POD's
# namespace (exclusive mode: a pod's device is in its /sys only) ("" if none)
gid_of() {
	local want ns=()
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${3//./ })
	[ -n "${4:-}" ] && ns=(ip netns exec "$4")
	B run "$1" -- "${ns[@]}" bash -c 'p=/sys/class/infiniband/$1/ports/1; for g in $p/gids/*; do
		read -r v <$g 2>/dev/null; [ "$v" = "$2" ] || continue
		read -r t <$p/gid_attrs/types/${g##*/} 2>/dev/null; [ "$t" = "RoCE v2" ] && echo ${g##*/}
		done; true' _ "$2" "$want" 2>/dev/null | head -n1
}

# sent H DEV...: each device's hw_counters/sent_bytes on H, one line
sent() {
	local h=$1
	shift
	B run "$h" -- bash -c 'for d; do read -r v </sys/class/infiniband/$d/ports/1/hw_counters/sent_bytes; printf "%s " $v; done' _ "$@"
}

# xfer NAME SERVER-HCA CLIENT-HCA BYTES ITERS [bench opts]: nccl-net-bench --check from podA
# (h0) to podC (h1), the server on podC; the client's checked CSV line required; sets out and
# gbps
xfer() {
	local n=$1 sh=$2 ch=$3 sz=$4 it=$5 j
	shift 5
	j=$(bg --timeout 200 1 -- ip netns exec podC env "${PLUG_ENV[@]}" NCCL_IB_HCA="$sh" stdbuf -oL \
		build/nccl-net-bench -p 18720 --timeout 120 "$@") || rn_fail "cannot start a job on h1"
	B run --timeout 20 1 -- ip netns exec podC bash -c 'for i in $(seq 100); do ss -Hltn "sport = :18720" | grep -q . && exit 0; sleep 0.1; done; exit 1' ||
		{ B wait "$j"; rn_fail "$n: the server in podC never listened"; }
	out=$(B run --timeout 200 0 -- ip netns exec podA env "${PLUG_ENV[@]}" NCCL_IB_HCA="$ch" stdbuf -oL \
		build/nccl-net-bench -p 18720 --timeout 120 -c --csv -s "$sz" -n "$it" "$@" 198.18.2.120 2>&1)
	local rc=$? srv
	srv=$(B wait "$j" 2>&1)
	local src=$?
	if [ $rc != 0 ] || [ $src != 0 ] || ! grep -q "^client,bw,$sz,$it,[0-9.]*,[0-9.]*,[0-9]*,[0-9]*,1$" <<<"$out"; then
		echo "$srv" | sed 's/^/  server| /'
		echo "$out" | sed 's/^/  client| /'
		bed_net_counters
		rn_fail "$n: client exit $rc, server exit $src (or no checked result)"
	fi
	gbps=$(sed -n "s/^client,bw,$sz,$it,\([0-9.]*\),.*/\1/p" <<<"$out")
}

body() {
	local out rc j g a b a0 a1 c0 c1 i y
	B up --hosts 2 --nics 2 --scenario broken --owner "$BED_OWNER" >/dev/null
	echo "bed: 2 guests x 2 NICs (eth0, eth1; the guests' rxe0, rxe1) on one bridge, kernel $(B run 0 -- uname -r), kernel defaults"

	t_step "exclusive netns mode: a pod's own rxe is seen in that pod only"
	for h in 0 1; do
		a=$((110 + 10 * h + 9))
		j=$(bg --timeout 300 "$h" -- bash -c "rdma system set netns exclusive && rdma system show | grep -q 'netns exclusive' &&
			$POD add podX && $POD net podX eth0 eth0 198.18.2.$a/24 tuning &&
			$POD net podX net1 eth0 198.18.0.$a/24 sbr-tuning &&
			ip netns exec podX rdma link add rxx$h type rxe netdev net1 &&
			rdma dev set rxx$h netns podX") ||
			rn_fail "cannot start a job on h$h"
		eval "jx$h=$j"
	done
	for h in 0 1; do
		eval "j=\$jx$h"
		out=$(B wait "$j" 2>&1) || { echo "$out"; rn_fail "h$h: exclusive mode, podX or its rxe failed"; }
	done
	# a second pod on h0 with its own device: neither pod sees the other's
	B run --timeout 300 0 -- bash -c "$POD add podY && $POD net podY net1 eth0 198.18.0.118/24 sbr-tuning &&
		ip netns exec podY rdma link add rxy0 type rxe netdev net1 && rdma dev set rxy0 netns podY" ||
		rn_fail "h0: podY or its rxe failed"
	out=$(B run 0 -- bash -c 'echo "guest: $(ls /sys/class/infiniband | paste -sd" ")"
		for p in podX podY; do echo "$p: $(ip netns exec $p ls /sys/class/infiniband | paste -sd" ")"; done
		rdma -d link show')
	sed 's/^/  h0 /' <<<"$out"
	grep -qx 'guest: rxe0 rxe1' <<<"$out" || rn_fail "h0: a pod's rxe visible outside its pod (or the guest's rxe gone)"
	grep -qx 'podX: rxx0' <<<"$out" || rn_fail "h0: podX does not see exactly its own rxx0"
	grep -qx 'podY: rxy0' <<<"$out" || rn_fail "h0: podY does not see exactly its own rxy0"
	probe 0 podX X0
	[ $RC = 0 ] || { cat "$tmp/X0.probe"; rn_fail "plugin in podX: exit $RC"; }
	g=$(gid_of 0 rxx0 198.18.0.119 podX)
	[ "$(grep -c 'NET/RoCE : NIC ' "$tmp/X0.probe")" = 1 ] &&
		grep -q "NIC rxx0:1 netdev net1 GID $g IP 198.18.0.119/24 .*verdict ok" "$tmp/X0.probe" ||
		{ cat "$tmp/X0.probe"; rn_fail "plugin in podX: not exactly rxx0 on net1 with GID $g"; }
	echo "  plugin in podX, no device named: $(sed -n 's/.*NET\/RoCE : \(NIC .*\)/\1/p' "$tmp/X0.probe")"
	j=$(bg --timeout 200 1 -- ip netns exec podX env "${PLUG_ENV[@]}" stdbuf -oL build/nccl-net-bench \
		-p 18721 --timeout 120) || rn_fail "cannot start a job on h1"
	B run --timeout 20 1 -- ip netns exec podX bash -c 'for i in $(seq 100); do ss -Hltn "sport = :18721" | grep -q . && exit 0; sleep 0.1; done; exit 1' ||
		{ B wait "$j"; rn_fail "the server in h1 podX never listened"; }
	out=$(B run --timeout 200 0 -- ip netns exec podX env "${PLUG_ENV[@]}" stdbuf -oL build/nccl-net-bench \
		-p 18721 --timeout 120 -c --csv -s 4194304 -n 4 198.18.2.129 2>&1)
	rc=$?
	b=$(B wait "$j" 2>&1) && [ $rc = 0 ] && grep -q '^client,bw,4194304,4,[0-9.]*,[0-9.]*,[0-9]*,[0-9]*,1$' <<<"$out" ||
		{ echo "$b" | sed 's/^/  server| /'; echo "$out" | sed 's/^/  client| /'; rn_fail "exclusive mode: podX -> podX: exit $rc"; }
	rn_log "ok: exclusive mode: h0 podX rxx0 -> h1 podX rxx1, checked, 4 x 4 MiB = 16 MiB ($(sed -n 's/^client,bw,4194304,4,\([0-9.]*\),.*/\1/p' <<<"$out") Gb/s)"
	for h in 0 1; do
		y=''
		[ "$h" = 0 ] && y="ip netns exec podY rdma link del rxy0; $POD rm podY &&"
		j=$(bg --timeout 300 "$h" -- bash -c "$y ip netns exec podX rdma link del rxx$h; $POD rm podX &&
			rdma system set netns shared && rdma system show | grep -q 'netns shared'") || rn_fail "cannot start a job on h$h"
		eval "jx$h=$j"
	done
	for h in 0 1; do eval "j=\$jx$h"; B wait "$j" >/dev/null 2>&1 || rn_fail "h$h: podX removed, back to shared mode: failed"; done
	echo "  podX (and h0's podY) removed, both guests back in shared mode"

	t_step "shared mode: pods made by the CNI plugins, each with its own rxe (rdma link add in the pod)"
	j=$(bg --timeout 300 1 -- bash -c "$POD add podC && $POD net podC eth0 eth0 198.18.2.120/24 tuning &&
		$POD net podC net1 eth0 198.18.0.120/24 sbr-tuning && $POD net podC net2 eth1 198.18.0.121/24 sbr-tuning &&
		ip netns exec podC rdma link add rxc0 type rxe netdev net1 &&
		ip netns exec podC rdma link add rxc1 type rxe netdev net2") || rn_fail "cannot start a job on h1"
	B run --timeout 300 0 -- bash -c "$POD add podA && $POD net podA eth0 eth0 198.18.2.110/24 tuning &&
		$POD net podA net1 eth0 198.18.0.110/24 && $POD net podA net2 eth1 198.18.0.111/24 &&
		ip netns exec podA rdma link add rxa0 type rxe netdev net1 &&
		ip netns exec podA rdma link add rxa1 type rxe netdev net2 &&
		$POD add podB && $POD net podB eth0 eth0 198.18.2.112/24 tuning &&
		$POD net podB net1 eth0 198.18.0.112/24 sbr-tuning &&
		ip netns exec podB rdma link add rxb0 type rxe netdev net1" || rn_fail "h0: the pods or their rxe failed"
	B wait "$j" >/dev/null || rn_fail "h1: podC or its rxe failed"
	B run 0 -- ip netns exec podA rdma link show | sed 's/^/  h0 podA| /'

	t_step "podA on kernel defaults: refused by the plugin and the doctor alike"
	probe 0 podA A0
	[ $RC = 3 ] || { cat "$tmp/A0.probe"; rn_fail "plugin in podA (defaults): exit $RC, want 3 (refused)"; }
	grep 'NET/RoCE : NIC rxa' "$tmp/A0.probe" | sed 's/.*NET\/RoCE : /  podA plugin| /'
	grep -q 'not using rxb0:1: no netdev of this network namespace' "$tmp/A0.probe" ||
		{ cat "$tmp/A0.probe"; rn_fail "plugin in podA: podB's rxb0 not left out"; }
	grep -m1 'WARN .*no RoCE device' "$tmp/A0.probe" | sed 's/.*NET\/RoCE : /  podA plugin refuses| /'
	# the guest's rxe1 reaches podA through net2's GID, and net2 has a device of its own
	grep -q 'not using rxe1:1: net2 has an RDMA device of its own, rxa1:1' "$tmp/A0.probe" &&
		! grep -q 'WARN .*rxe1:1' "$tmp/A0.probe" ||
		{ cat "$tmp/A0.probe"; rn_fail "plugin in podA: the guest's rxe1 (on net2, which has rxa1) not left out"; }
	grep -m1 'not using rxe1:1' "$tmp/A0.probe" | sed 's/.*NET\/RoCE : /  podA plugin| /'
	doc 0 podA A0
	[ "$RC" = 1 ] || { cat "$tmp/A0.json"; rn_fail "doctor in podA: exit $RC, want 1"; }
	grep -q '^rxe1:' "$tmp/A0.doc" && { cat "$tmp/A0.json"; rn_fail "doctor in podA: judges the guest's rxe1 (net2 has rxa1)"; }
	grep -q 'rxe1:1 (net2 has an RDMA device of its own: rxa1:1)' "$tmp/A0.json" ||
		{ cat "$tmp/A0.json"; rn_fail "doctor in podA: rxe1 not among the ports left out, with why"; }
	agree A0 'rxa[01]'
	grep -Eq '^rxa0:1 net1 [0-9]+ refused .*arp-flux' "$tmp/A0.doc" && grep -Eq '^rxa1:1 net2 [0-9]+ refused' "$tmp/A0.doc" ||
		rn_fail "podA: not both own NICs refused"

	t_step "the fix: roce-doctor --cni in podA, applied through the CNI plugins"
	B run --timeout 240 0 -- bash -c "ip netns exec podA $DOC --cni >/run/bed/nadA.json 2>/run/bed/nadA.err; echo \$?" >"$tmp/rc"
	[ "$(cat "$tmp/rc")" = 1 ] || rn_fail "--cni in podA: exit $(cat "$tmp/rc"), want 1"
	cp "$RN_TOP/build/vm-runs/$BED_NAME/h0/nadA.json" "$RN_TOP/build/vm-runs/$BED_NAME/h0/nadA.err" "$tmp/"
	sed 's/^/  --cni stderr| /' "$tmp/nadA.err"
	# --cni judges every NIC the pod sees (in shared mode also the guest's rxe0/rxe1,
	# through the pod's net1 and net2 on them) and prints one NAD an interface: the pod's
	# own device's. Its macvlan master is the node's link under net1, which a pod cannot
	# name: --cni leaves "MASTER" and says which link (its ifindex on the node); IPAM is the
	# pod's address. What is applied: --cni's NADs with that link's name filled in.
	B run --timeout 60 0 -- ip -o link show >"$tmp/h0.links" || rn_fail "h0: ip link"
	python3 - "$tmp/nadA.json" "$tmp/nadA.err" "$tmp/h0.links" "$tmp/nadA.fixed.json" <<'EOF' || rn_fail "--cni: not one NAD an interface (the pod's own device's), macvlan (its master to fill) + tuning + sbr"
import json, re, sys
d = json.load(open(sys.argv[1]))
err = open(sys.argv[2]).read()
links = dict(re.findall(r"^(\d+): ([^:@ ]+)", open(sys.argv[3]).read(), re.M))
out = {"apiVersion": "v1", "kind": "List", "items": []}
for ifn, dev, master, ip in (("net1", "rxa0", "eth0", "198.18.0.110/24"), ("net2", "rxa1", "eth1", "198.18.0.111/24")):
    items = [i for i in d["items"] if i["metadata"].get("annotations", {}).get("roce-doctor/interface") == ifn]
    assert len(items) == 1, "%d NADs for %s" % (len(items), ifn)
    i = items[0]
    c = json.loads(i["spec"]["config"])
    print("  --cni NAD %s: %s (rdma device %s, macvlan master %s, ipam %s %s)" % (i["metadata"]["name"],
          " + ".join(p["type"] for p in c["plugins"]), i["metadata"]["annotations"]["roce-doctor/rdma-device"],
          c["plugins"][0].get("master"), c["plugins"][0]["ipam"]["type"],
          c["plugins"][0]["ipam"].get("addresses")))
    assert i["metadata"]["annotations"]["roce-doctor/rdma-device"] == dev, i["metadata"]
    assert [p["type"] for p in c["plugins"]] == ["macvlan", "tuning", "sbr"], c
    assert c["plugins"][0]["master"] == "MASTER", c
    assert c["plugins"][0]["ipam"] == {"type": "static", "addresses": [{"address": ip}]}, c
    s = c["plugins"][1]["sysctl"]
    assert s["net.ipv4.conf.IFNAME.arp_ignore"] == "1" and s["net.ipv4.conf.IFNAME.arp_announce"] == "2", s
    m = re.search(r"# roce-%s: %s is this pod's own interface \(%s is on it\) over the node's link (\d+)," % (ifn, ifn, dev), err)
    assert m, "no note naming the node's link under " + ifn
    assert links.get(m.group(1)) == master, "link %s is %s on the node, want %s" % (m.group(1), links.get(m.group(1)), master)
    c["plugins"][0]["master"] = links[m.group(1)]
    i["spec"]["config"] = json.dumps(c)
    out["items"].append(i)
json.dump(out, open(sys.argv[4], "w"))
EOF
	cp "$tmp/nadA.fixed.json" "$RN_TOP/build/vm-runs/$BED_NAME/h0/nadA.fixed.json"
	# DEL + ADD replaces net1/net2, and a netdev's removal takes its rxe with it: the pod
	# makes its devices again (a device plugin hands a pod its VF again)
	B run --timeout 300 0 -- bash -c "$POD renet podA net1 /run/bed/nadA.fixed.json && $POD renet podA net2 /run/bed/nadA.fixed.json &&
		ip netns exec podA rdma link add rxa0 type rxe netdev net1 &&
		ip netns exec podA rdma link add rxa1 type rxe netdev net2" || rn_fail "podA: DEL + ADD with --cni's NADs, or the new rxe, failed"
	echo "  podA: net1, net2 DEL + ADD through macvlan, static, tuning, sbr; rxa0, rxa1 made again"
	probe 0 podA A1 NCCL_IB_HCA==rxa0,rxa1
	[ $RC = 0 ] || { cat "$tmp/A1.probe"; rn_fail "plugin in podA after the fix: exit $RC"; }
	doc 0 podA A1
	[ "$RC" = 0 ] || grep -Eq '^rxa[01]:1 .* ok -$' "$tmp/A1.doc" || { cat "$tmp/A1.json"; rn_fail "doctor in podA after the fix: exit $RC"; }
	agree A1 'rxa[01]'
	a0=$(gid_of 0 rxa0 198.18.0.110) a1=$(gid_of 0 rxa1 198.18.0.111)
	grep -q "^rxa0:1 net1 $a0 ok -$" "$tmp/A1.doc" && grep -q "^rxa1:1 net2 $a1 ok -$" "$tmp/A1.doc" ||
		rn_fail "podA after the fix: not rxa0 GID $a0 / rxa1 GID $a1 ok"
	rn_log "ok: podA: refused on defaults, the --cni fix through the CNI plugins makes it pass (doctor = plugin)"

	t_step "podC (sbr + tuning from the start): the doctor and the plugin agree"
	probe 1 podC C0 NCCL_IB_HCA==rxc0,rxc1
	[ $RC = 0 ] || { cat "$tmp/C0.probe"; rn_fail "plugin in podC: exit $RC"; }
	doc 1 podC C0
	agree C0 'rxc[01]'

	t_step "data: podA (h0) -> podC (h1), checked, on NIC 1, NIC 2 and a vNIC of both"
	xfer nic1 =rxc0 =rxa0 8388608 8
	rn_log "ok: NIC 1: podA rxa0 (net1 198.18.0.110) -> podC rxc0 (198.18.0.120): 8 x 8 MiB = 64 MiB checked ($gbps Gb/s)"
	xfer nic2 =rxc1 =rxa1 8388608 8
	rn_log "ok: NIC 2: podA rxa1 (net2 198.18.0.111) -> podC rxc1 (198.18.0.121): 8 x 8 MiB = 64 MiB checked ($gbps Gb/s)"
	read -r c0 c1 <<<"$(sent 0 rxa0 rxa1)"
	xfer vnic =rxc0,rxc1 =rxa0,rxa1 8388608 8 --merge
	read -r a0 a1 <<<"$(sent 0 rxa0 rxa1)"
	a0=$((a0 - c0)) a1=$((a1 - c1))
	echo "  vNIC: rxa0 sent $a0 B, rxa1 sent $a1 B"
	[ $a0 -ge $((64 << 20 >> 2)) ] && [ $a1 -ge $((64 << 20 >> 2)) ] ||
		rn_fail "vNIC: not a quarter of 64 MiB over each NIC (rxa0 $a0 B, rxa1 $a1 B)"
	rn_log "ok: vNIC rxa0+rxa1 -> rxc0+rxc1: 8 x 8 MiB = 64 MiB checked ($gbps Gb/s), each NIC a quarter at least"

	t_step "two pods of h0, each on its own device and GID"
	probe 0 podB B0 NCCL_IB_HCA==rxb0
	g=$(gid_of 0 rxb0 198.18.0.112)
	[ $RC = 0 ] && grep -q "NIC rxb0:1 netdev net1 GID $g IP 198.18.0.112/24 .*verdict ok" "$tmp/B0.probe" ||
		{ cat "$tmp/B0.probe"; rn_fail "plugin in podB: not rxb0 GID $g (198.18.0.112)"; }
	probe 0 podB B1
	for i in rxa0 rxa1; do
		grep -q "not using $i:1: no netdev of this network namespace" "$tmp/B1.probe" ||
			{ cat "$tmp/B1.probe"; rn_fail "plugin in podB: podA's $i not left out"; }
	done
	[ -z "$(gid_of 0 rxb0 198.18.0.110)" ] && [ -z "$(gid_of 0 rxa0 198.18.0.112)" ] ||
		rn_fail "a pod's device holds the other pod's address"
	echo "  podA: rxa0 GID $(gid_of 0 rxa0 198.18.0.110) = 198.18.0.110; podB: rxb0 GID $g = 198.18.0.112; each leaves the other's devices out (no netdev of its namespace)"
	# the shared-device model beside it: the guest's rxe0 holds both pods' addresses
	# where it reaches a pod through an interface with a device of its own, it is left out
	echo "  the guest's shared rxe0 (eth0): 198.18.0.110 at GID $(gid_of 0 rxe0 198.18.0.110), 198.18.0.112 at GID $(gid_of 0 rxe0 198.18.0.112); in podB: $(grep -o 'not using rxe0:1: [^(]*' "$tmp/B1.probe" || echo "offered, $(grep -c 'WARN .*is Soft-RoCE (rxe) on eth0' "$tmp/B1.probe") WARN")"
	rn_log "ok: pods with RDMA devices of their own: exclusive and shared mode, refused then fixed through the CNI plugins, checked data pod to pod over both NICs and a vNIC"
}

bed_attempt body
