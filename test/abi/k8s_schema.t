#!/usr/bin/env bash
# Every object of doc/k8s validated against Kubernetes' API schemas (test/abi/k8s_schema.mjs):
# the DaemonSet and the pod with kubernetes-models' validators (npm, generated from
# Kubernetes' OpenAPI spec; scripts/install-deps --test puts them in build/npm), each
# NetworkAttachmentDefinition with its CRD's schema and its config with the CNI spec's.
# Every object kustomization.yaml lists is validated, and nothing else is there. The
# validator is shown to refuse: a restartPolicy that is not one, a DaemonSet without its
# selector, a container without a name, a NAD whose config is not JSON, one whose plugin has
# no type, and a field a NAD does not have.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail() { echo "FAIL: $*"; exit 1; }
nm=$PWD/build/npm/node_modules
command -v node >/dev/null || { echo "skip: node (Debian's nodejs) not installed"; exit 77; }
if [ ! -d "$nm/kubernetes-models" ] || [ ! -d "$nm/ajv" ]; then
	echo "skip: build/npm not installed (scripts/install-deps --test; needs npm)"
	exit 77
fi
python3 -c 'import yaml' 2>/dev/null || { echo "skip: python3-yaml not installed"; exit 77; }
tmp=$(mktemp -d /tmp/rn-k8s-schema.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "kubernetes-models $(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$nm/kubernetes-models/package.json")"

# every document of every file kustomization.yaml lists, one JSON file each; then the broken
# copies (bad-*.json), each with one thing wrong
python3 - "$tmp" <<'PY' || fail "could not read doc/k8s"
import copy, json, sys, yaml
out = sys.argv[1]
files = yaml.safe_load(open("doc/k8s/kustomization.yaml"))["resources"]
docs = [d for f in files for d in yaml.safe_load_all(open("doc/k8s/" + f)) if d]
for i, d in enumerate(docs):
    json.dump(d, open("%s/%d.json" % (out, i), "w"))
by = {d["kind"]: d for d in docs}
def bad(name, kind, change):
    d = copy.deepcopy(by[kind])
    change(d)
    json.dump(d, open("%s/bad-%s.json" % (out, name), "w"))
bad("restart", "Pod", lambda d: d["spec"].update(restartPolicy="Sometimes"))
bad("selector", "DaemonSet", lambda d: d["spec"].pop("selector"))
bad("container", "Pod", lambda d: d["spec"]["containers"][0].pop("name"))
bad("config", "NetworkAttachmentDefinition", lambda d: d["spec"].update(config="{macvlan"))
def notype(d):
    c = json.loads(d["spec"]["config"])
    c["plugins"][1].pop("type")
    d["spec"]["config"] = json.dumps(c)
bad("type", "NetworkAttachmentDefinition", notype)
bad("field", "NetworkAttachmentDefinition", lambda d: d["spec"].update(master="ens1f0np0"))
print("%d objects in %s" % (len(docs), ", ".join(files)))
PY
good=$(find "$tmp" -name '[0-9]*.json' | sort)
# shellcheck disable=SC2086 # file names without spaces
out=$(node test/abi/k8s_schema.mjs "$nm" $good 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "doc/k8s does not validate"
[ "$(grep -c '^ok ' <<<"$out")" = 6 ] || fail "not 6 objects validated"
for k in "DaemonSet roce-doctor" "NetworkAttachmentDefinition roce-net1" \
	"NetworkAttachmentDefinition roce-net2" "Pod nccl-job" "Service roce-doctor-mesh" \
	"DaemonSet roce-doctor-mesh"; do
	grep -q "^ok .* $k\$" <<<"$out" || fail "$k not validated"
done

for b in restart selector container config type field; do
	out=$(node test/abi/k8s_schema.mjs "$nm" "$tmp/bad-$b.json" 2>&1)
	rc=$?
	echo "$out"
	[ $rc -eq 1 ] || fail "bad-$b: not refused (exit $rc)"
	grep -q '^invalid ' <<<"$out" || fail "bad-$b: no 'invalid' line"
done
echo ok
