#!/usr/bin/env bash
# The Kubernetes manifests of doc/k8s stay usable: `kubectl kustomize doc/k8s` renders them
# offline (kubectl's own parsing; skipped without kubectl, the field checks still run), and
# their fields are what the README and the doctor say: the DaemonSet on the host network
# writing roce-doctor's node_exporter textfile and NFD feature file into the hostPath
# directories those collectors read; the NAD's chain macvlan -> tuning (ARP sysctls of
# IFNAME) -> sbr, as `roce-doctor --cni` prints it, one per NIC (each on its own master);
# the pod with the RDMA resource, IPC_LOCK, NCCL_NET_PLUGIN=roce, and every NAD it names
# defined in doc/k8s. (test/abi/k8s_schema.t validates them against Kubernetes' schemas.)
set -u
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; exit 1; }
command -v python3 >/dev/null || { echo "skip: python3 not installed"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3-yaml not installed"; exit 77; }
if command -v kubectl >/dev/null; then
	out=$(kubectl kustomize doc/k8s 2>&1) || { echo "$out"; fail "kubectl kustomize doc/k8s"; }
	n=$(grep -c '^kind: ' <<<"$out")
	[ "$n" = 6 ] || fail "kubectl kustomize rendered $n objects, want 6"
	echo "ok: kubectl kustomize doc/k8s renders the DaemonSets, the mesh's Service, the two NADs and the pod"
else
	echo "note: kubectl not installed: fields only"
fi
python3 - <<'PY' || fail "doc/k8s fields"
import json, re, yaml

def load(f):
    return yaml.safe_load(open("doc/k8s/" + f))

ds = load("roce-doctor-daemonset.yaml")
assert ds["apiVersion"] == "apps/v1" and ds["kind"] == "DaemonSet"
spec = ds["spec"]["template"]["spec"]
assert spec["hostNetwork"] is True
assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
c = spec["containers"][0]
script = " ".join(c["command"] + c["args"])
vols = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
assert vols["textfile"] == "/var/lib/prometheus/node-exporter", vols
assert vols["features"] == "/etc/kubernetes/node-feature-discovery/features.d", vols
m = re.search(r"roce-doctor --textfile (\S+)", script)
assert m and m.group(1).startswith(mounts["textfile"] + "/") and m.group(1).endswith(".prom"), script
m = re.search(r"roce-doctor --nfd (\S+)", script)
assert m and m.group(1).startswith(mounts["features"] + "/"), script
assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]

nads = list(yaml.safe_load_all(open("doc/k8s/roce-nad.yaml")))
assert len(nads) == 2, len(nads)
masters = set()
for nad in nads:
    assert nad["apiVersion"] == "k8s.cni.cncf.io/v1" and nad["kind"] == "NetworkAttachmentDefinition"
    conf = json.loads(nad["spec"]["config"])
    assert conf["name"] == nad["metadata"]["name"] and conf["cniVersion"]
    types = [p["type"] for p in conf["plugins"]]
    assert types == ["macvlan", "tuning", "sbr"], types
    assert conf["plugins"][0]["master"]
    masters.add(conf["plugins"][0]["master"])
    assert conf["plugins"][1]["sysctl"] == {"net.ipv4.conf.IFNAME.arp_ignore": "1",
                                           "net.ipv4.conf.IFNAME.arp_announce": "2"}
assert len(masters) == len(nads), masters
nad = nads[0]

pod = load("nccl-pod.yaml")
nets = json.loads(pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"])
defined = {n["metadata"]["name"] for n in nads}
assert {n["name"] for n in nets} <= defined, (nets, defined)
assert len({n["interface"] for n in nets}) == len(nets), nets
pc = pod["spec"]["containers"][0]
env = {e["name"]: e["value"] for e in pc["env"]}
assert env["NCCL_NET_PLUGIN"] == "roce" and env["NCCL_NET"] == "RoCE", env
assert "IPC_LOCK" in pc["securityContext"]["capabilities"]["add"]
for nad in nads:
    res = nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]
    assert res in pc["resources"]["limits"] and res in c["resources"]["limits"], res
assert not pod["spec"].get("hostNetwork")
# the mesh: its peers are the DaemonSet's endpoints through the headless Service, which
# selects its pods; its ports are the agent's defaults and the metrics port it is given
svc, mds = list(yaml.safe_load_all(open("doc/k8s/roce-doctor-mesh-daemonset.yaml")))
assert svc["kind"] == "Service" and svc["spec"]["clusterIP"] == "None"
assert svc["spec"]["selector"].items() <= mds["spec"]["template"]["metadata"]["labels"].items()
ms = mds["spec"]["template"]["spec"]
assert ms["hostNetwork"] is True
mc = ms["containers"][0]
cmd = mc["command"]
assert cmd[:2] == ["/usr/sbin/roce-doctor", "mesh"], cmd
hc = cmd[cmd.index("--hosts-cmd") + 1]
assert "%s.%s.svc" % (svc["metadata"]["name"], svc["metadata"]["namespace"]) in hc, hc
mport = cmd[cmd.index("--listen-metrics") + 1]
ports = {p["name"]: (p["containerPort"], p["protocol"]) for p in mc["ports"]}
assert ports == {"pair": (18515, "TCP"), "probe": (18516, "UDP"), "metrics": (int(mport), "TCP")}, ports
assert mds["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"] == mport
print("ok: doc/k8s fields: DaemonSet (hostNetwork, textfile + NFD paths), NADs %s (chain %s), pod attaching them"
      % (", ".join(sorted(defined)), " -> ".join(types)))
PY
