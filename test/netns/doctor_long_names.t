#!/usr/bin/env bash
# Eight mlx5-style NICs (ens1f0np0 .. ens8f0np0) in one subnet with every NIC-level cause
# a netdev-only check can see at once: ARP flux (kernel defaults), no rule, a rule whose
# table routes out of another NIC, strict rp_filter, a link down. roce-doctor --netdev
# must print every message and fix whole (no cut, no '?', no '{key}') in --json and in
# the human report, and every fix it prints must run as pasted in a shell on the host.
# (An MTU mismatch needs an RDMA port: test_findings covers it with the NCCL log.)
. "$(dirname "$0")/doctor_lib.sh"
rn_require_netns
rn_tmpdir T

rn_ns P peer
rn_ns H host
for ns in "$P" "$H"; do
	rn_in "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
done
rn_bridge "$P" br0 198.18.0.254/24
NICS=() IPS=()
for i in 1 2 3 4 5 6 7 8; do
	NICS+=("ens${i}f0np0")
	IPS+=("198.18.0.$((10 + i))")
	rn_veth "$H" "ens${i}f0np0" "$P" "hp$i" br0 "198.18.0.$((10 + i))/24"
done
LIST=$(IFS=,; echo "${NICS[*]}")
# ens2f0np0: a rule whose table routes the subnet out of ens1f0np0
ip -n "$H" rule add from "${IPS[1]}" lookup 202 priority 202
ip -n "$H" route add 198.18.0.0/24 dev ens1f0np0 src "${IPS[0]}" table 202
# ens3f0np0: strict rp_filter while its replies would leave ens1f0np0
rn_in "$H" sysctl -qw net.ipv4.conf.ens3f0np0.rp_filter=1
# ens8f0np0: down
ip -n "$H" link set ens8f0np0 down

ip netns exec "$H" "$DOCTOR" --netdev "$LIST" --json >"$T/all.json"
RC=$?
[ $RC -eq 1 ] || rn_fail "--json: exit $RC, want 1"
for want in "ens1f0np0 arp-flux" "ens1f0np0 no-rule" "ens2f0np0 rule-wrong-nic" \
	"ens3f0np0 rp-filter" "ens5f0np0 route-wrong-nic" "ens8f0np0 link-down"; do
	set -- $want
	has "$2" "$(causes "$T/all.json" "$1")" "$1"
done

# --json: every text whole. The longest message lists the seven NICs that are up three
# times over, far past the old 255-byte cap; the list of the 6 others says how long it is.
python3 - "$T/all.json" <<'EOF' || rn_fail "--json texts are not whole"
import json, sys
d = json.load(open(sys.argv[1]))
names = ["ens%df0np0" % i for i in range(1, 8)]  # ens8f0np0 is down: not a neighbour
bad, longest = [], 0
for n in d["nics"]:
    for f in n["findings"]:
        for k in ("message", "fix"):
            t = f[k]
            longest = max(longest, len(t))
            if "?" in t or "{" in t or "}" in t:
                bad.append("%s %s %s: %r" % (n["netdev"], f["cause"], k, t))
        if f["cause"] == "arp-flux":
            m = f["message"]
            if "6 other NICs: " not in m or any(x not in m for x in names):
                bad.append("arp-flux message of %s lacks a NIC: %r" % (n["netdev"], m))
            if not f["fix"].split("roce-policy-routing ")[1].split() or \
               sorted(f["fix"].split("roce-policy-routing ")[1].split()) != sorted(names):
                bad.append("arp-flux fix of %s does not name the 7 up NICs: %r" % (n["netdev"], f["fix"]))
        if "scripts/" in f["fix"]:
            bad.append("fix names the source tree: %r" % f["fix"])
if longest <= 255:
    bad.append("no text is longer than 255 bytes (%d): the test proves nothing" % longest)
print("longest text: %d bytes" % longest)
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF

# The human report (-v: every fix): each message and fix line is one of the JSON's, whole.
ip netns exec "$H" "$DOCTOR" --netdev "$LIST" -v >"$T/human.txt"
RC=$?
[ $RC -eq 1 ] || rn_fail "human report: exit $RC, want 1"
python3 - "$T/all.json" "$T/human.txt" "$T/fixes.txt" <<'EOF' || rn_fail "human report cuts or invents text"
import json, re, sys
d = json.load(open(sys.argv[1]))
msgs = {f["message"] for n in d["nics"] for f in n["findings"]}
fixes = {f["fix"] for n in d["nics"] for f in n["findings"]}
bad, printed = [], []
section = False
for line in open(sys.argv[2]):
    line = line.rstrip("\n")
    if line.startswith("findings ("):
        section = True
        continue
    if not section:
        continue
    m = re.match(r"^    fix(?: [^:]+)?: (.*)$", line)
    if m:
        if m.group(1) != "as above":
            printed.append(m.group(1))
            if m.group(1) not in fixes:
                bad.append("fix not whole: %r" % m.group(1))
        continue
    m = re.match(r"^    ([^ :]+): (.*)$", line)
    if m and m.group(2) not in msgs:
        bad.append("message not whole: %r" % m.group(2))
    if "?" in line:
        bad.append("'?' in %r" % line)
if not printed:
    bad.append("no fix printed")
open(sys.argv[3], "w").write("\n".join(printed) + "\n")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF

# Paste every printed fix, in order, into a shell on the host: each must run cleanly.
n=0
while IFS= read -r fix; do
	[ -n "$fix" ] || continue
	n=$((n + 1))
	out=$(ip netns exec "$H" bash -ec "$fix" 2>&1) || rn_fail "pasted fix failed (exit $?): $fix: $out"
done <"$T/fixes.txt"
echo "pasted $n fixes, each ran cleanly"
[ $n -ge 4 ] || rn_fail "only $n fixes printed"
# The pasted fixes repaired what they name.
ip netns exec "$H" "$DOCTOR" --netdev "$LIST" --json >"$T/after.json"
for dev in ens3f0np0 ens8f0np0; do
	c=$(causes "$T/after.json" "$dev")
	hasnt rp-filter "$c" "$dev after the pasted fixes"
	hasnt link-down "$c" "$dev after the pasted fixes"
done
hasnt arp-flux "$(causes "$T/after.json" ens1f0np0)" "ens1f0np0 after the pasted fixes"
hasnt rule-wrong-nic "$(causes "$T/after.json" ens2f0np0)" "ens2f0np0 after the pasted fixes"
echo "ok"
