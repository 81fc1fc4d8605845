#!/usr/bin/env bash
# `roce-doctor localize` over a sweep's JSON report (localize_sweep.json: the shape
# roce-doctor-mpi --json-file writes, 4 hosts, h2's eth1 failing with every peer NIC by
# no-rule, h3 missing): the NIC and the host are named and nothing else (exit 1); the
# report with the faults taken out blames nothing (exit 0); a file that is not a sweep's
# report, or not JSON, is refused with the reason (exit 2).
set -u
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; exit 1; }
DOC=build/roce-doctor
FIX=test/abi/localize_sweep.json
[ -x $DOC ] || fail "$DOC missing: run make first"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$($DOC localize "$FIX")
rc=$?
echo "$out"
[ $rc = 1 ] || fail "faults: exit $rc, want 1"
[ "$(grep -c '^nic \|^host \|^link ' <<<"$out")" = 2 ] || fail "not two verdicts"
grep -q '^nic h2:eth1: fails with most of its peers (5 of 5 pairs; cause no-rule)$' <<<"$out" ||
	fail "h2:eth1 not named"
grep -q '^host h3: every NIC fails' <<<"$out" || fail "h3 not named"
echo "ok: h2:eth1 (no-rule) and host h3 (missing) named, nothing else"

python3 - "$FIX" "$tmp/clean.json" <<'PY' || fail "python3"
import json, sys
d = json.load(open(sys.argv[1]))
d['bad_pairs'] = []
d['missing'] = []
for h in d['hosts']:
    h['status'] = 'ok'
json.dump(d, open(sys.argv[2], 'w'))
PY
out=$($DOC localize "$tmp/clean.json")
rc=$?
[ $rc = 0 ] || fail "clean: exit $rc, want 0 ($out)"
grep -q '^nothing to blame: 18 pairs, 0 failing$' <<<"$out" || fail "clean: $out"
echo "ok: clean report: $out"

echo '{"schema": "roce-doctor-mesh/9", "hosts": []}' >"$tmp/other.json"
out=$($DOC localize "$tmp/other.json" 2>&1)
[ $? = 2 ] || fail "another schema: not exit 2"
grep -q 'not a sweep report' <<<"$out" || fail "another schema: $out"
head -c 300 "$FIX" >"$tmp/cut.json"
out=$($DOC localize "$tmp/cut.json" 2>&1)
[ $? = 2 ] || fail "a cut report: not exit 2"
grep -q 'offset [0-9]*: ' <<<"$out" || fail "a cut report: $out"
echo "ok: another schema and a cut file refused (exit 2)"
echo PASS
