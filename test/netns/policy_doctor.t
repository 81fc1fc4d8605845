#!/usr/bin/env bash
# One definition of table, priority, source IP and management NIC: on the same broken host,
# `roce-doctor --netdev ... --json` (the library's fixes) and `roce-policy-routing --dry-run`
# name the same table, priority and source for every NIC: on a flat host, when 100 + ifindex
# is taken, when wg-quick-style rules sit ahead of everything (both place the rule ahead of
# them), and with the management NIC in the NICs' subnet (the doctor leaves it out of the
# script's command line, so the command it offers runs; for the management NIC itself it
# offers --force); IPv6-only NICs in one /64 (AF_INET6) need no rule at all.
# After the script, the doctor finds nothing.
. "$(dirname "$0")/policy_lib.sh"
DOC=$RN_TOP/build/roce-doctor
[ -x "$DOC" ] || rn_skip "skip: build/roce-doctor not built (make)"
command -v python3 >/dev/null || rn_skip "skip: python3 not installed"

# doctor NETDEVS -> "ip table prio" per proposed rule (sorted); the script's devs on stdout 3
doctor_rules() {
	rn_in "$H" env ${DOC_ENV-} "$DOC" --netdev "$1" --json >"$T/doc.json" 2>"$T/doc.err"
	python3 - "$T/doc.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
rules = set()
for n in d["nics"]:
    for f in n["findings"]:
        for m in re.finditer(r"ip (?:-6 )?rule add from (\S+) lookup (\d+) priority (\d+)", f["fix"]):
            if m.group(1) != n["ip"]:
                sys.exit("doctor: %s's fix names source %s, its IP is %s" % (n["netdev"], m.group(1), n["ip"]))
            rules.add("%s %s %s" % m.groups())
print("\n".join(sorted(rules)))
PY
}
# the script's argument list the doctor offers for NETDEV ("or roce-policy-routing ...")
doctor_script_args() {
	python3 - "$T/doc.json" "$1" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
for n in d["nics"]:
    if n["netdev"] != sys.argv[2]:
        continue
    for f in n["findings"]:
        m = re.search(r"roce-policy-routing ([^;]*)$", f["fix"])
        if m:
            print(m.group(1)); sys.exit(0)
sys.exit("no script command offered for " + sys.argv[2])
PY
}
script_rules() { # args...
	rn_in "$H" "$TOOL" --state-dir "$T/state" --dry-run "$@" >"$T/dry" 2>&1 ||
		{ cat "$T/dry"; rn_fail "dry run '$*' failed"; }
	sed -n 's/^ip \(-6 \)\{0,1\}rule add from \([^ ]*\) lookup \([0-9]*\) priority \([0-9]*\)$/\2 \3 \4/p' "$T/dry" | sort
}
same() { # what
	doctor_rules "$NICS" >"$T/d" || { cat "$T/doc.err"; rn_fail "$1: doctor output"; }
	script_rules "${SCRIPT_ARGS[@]}" >"$T/s"
	cat "$T/d"
	[ -s "$T/d" ] || rn_fail "$1: the doctor proposed no rule"
	rn_assert_same "$T/d" "$T/s" "$1: doctor and script disagree"
	echo "ok: $1: $(tr '\n' ';' <"$T/d")"
}

# 1. flat: three NICs in one subnet, management NIC elsewhere
rn_host_ns 3 1
H=$RN_HOST NICS=nic0,nic1,nic2,mgmt0 SCRIPT_ARGS=(nic0 nic1 nic2)
same "flat"

# 2. 100 + ifindex of nic0 is taken by a route of mgmt0's; nic1's by a rule's priority
t0=$((100 + $(rn_in "$H" cat /sys/class/net/nic0/ifindex)))
t1=$((100 + $(rn_in "$H" cat /sys/class/net/nic1/ifindex)))
ip -n "$H" route add 198.19.5.0/24 dev mgmt0 table "$t0"
ip -n "$H" rule add fwmark 9 lookup 300 priority "$t1"
same "taken numbers"
grep -q "^198.18.0.11 $t0 " "$T/d" && rn_fail "nic0 got the taken table $t0"

# 3. wg-quick's rules (added after per-NIC rules, so they got priorities 40/41 ahead of them)
ip -n "$H" rule add not fwmark 0xca6c lookup 51820 priority 41
ip -n "$H" rule add lookup main suppress_prefixlength 0 priority 40
ip -n "$H" -6 rule add lookup main suppress_prefixlength 0 priority 40 2>/dev/null
same "wg-quick ahead"
awk '$3 >= 40 { exit 1 }' "$T/d" || rn_fail "a rule behind wg-quick's"

# the fix works: after the script, the doctor finds nothing wrong with nic0..nic2
rn_in "$H" "$TOOL" --state-dir "$T/state" nic0 nic1 nic2 >"$T/out" 2>&1 || { cat "$T/out"; rn_fail "apply failed"; }
rn_in "$H" "$DOC" --netdev nic0,nic1,nic2 --json >"$T/doc.json" 2>/dev/null
python3 - "$T/doc.json" <<'PY' || rn_fail "findings left after the script"
import json, sys
bad = [(n["netdev"], [f["cause"] for f in n["findings"]]) for n in json.load(open(sys.argv[1]))["nics"] if n["findings"]]
print("left:", bad) if bad else None
sys.exit(1 if bad else 0)
PY
echo "ok: after the script the doctor finds nothing on nic0..nic2"

# 4. management NIC in the NICs' subnet, holding main's default route
rn_ns H peer2
rn_bridge "$H" br9
for i in 0 1; do
	ip -n "$H" link add "nic$i" type veth peer name "hq$i"
	ip -n "$H" link set "hq$i" master br9 up
	ip -n "$H" addr add "198.18.1.$((11 + i))/24" dev "nic$i"
	ip -n "$H" link set "nic$i" up
done
ip -n "$H" link add mgmt0 type veth peer name hqm
ip -n "$H" link set hqm master br9 up
ip -n "$H" addr add 198.18.1.2/24 dev mgmt0
ip -n "$H" link set mgmt0 up
ip -n "$H" route add default via 198.18.1.254 dev mgmt0
NICS=nic0,nic1,mgmt0 SCRIPT_ARGS=(nic0 nic1)
doctor_rules "$NICS" >/dev/null || rn_fail "doctor (mgmt in subnet)"
args=$(doctor_script_args nic0) || rn_fail "no script offered for nic0"
[[ " $args " == *" mgmt0 "* ]] && rn_fail "the doctor offers the script for the management NIC: $args"
# shellcheck disable=SC2086
script_rules $args >/dev/null
echo "ok: doctor offers '$args' for nic0; the script takes it"
margs=$(doctor_script_args mgmt0) || rn_fail "no script offered for mgmt0"
[[ $margs == "--force mgmt0"* ]] || rn_fail "for mgmt0 the doctor offers '$margs', want --force mgmt0 ..."
# shellcheck disable=SC2086
script_rules $margs >"$T/s"
doctor_rules "$NICS" >"$T/d"
rn_assert_same "$T/d" "$T/s" "mgmt in subnet: doctor and script disagree"
echo "ok: for mgmt0 the doctor offers '$margs'; same rules as the script"

# 5. IPv6-only NICs in one /64, judged as NCCL_IB_ADDR_FAMILY=AF_INET6: nothing to fix (a
#    RoCE QP's lookup pins oif to the GID's netdev and ND answers only on the owning NIC:
#    issue 9's false refusal), so the doctor proposes no rule; the script's --family 6 runs
rn_ns P6 peer6
rn_ns H host6
rn_bridge "$P6" br0
ip -n "$P6" addr add 2001:db8:18::fe/64 dev br0 nodad
for i in 0 1 2; do
	rn_veth "$H" "nic$i" "$P6" "hp$i" br0
	ip -n "$H" addr add "2001:db8:18::1$i/64" dev "nic$i" nodad
done
DOC_ENV=NCCL_IB_ADDR_FAMILY=AF_INET6
doctor_rules nic0,nic1,nic2 >"$T/d" || { cat "$T/doc.err"; rn_fail "IPv6: doctor output"; }
! grep -q . "$T/d" || { cat "$T/d"; rn_fail "IPv6: the doctor proposes rules for NICs that need none"; }
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["exit"])' "$T/doc.json")" = 0 ] ||
	rn_fail "IPv6 NICs in one /64: the doctor finds problems"
script_rules --family 6 nic0 nic1 nic2 >/dev/null
echo "ok: IPv6: nothing for the doctor to fix; the script's --family 6 still runs"
echo PASS
