#!/bin/bash
# Run xfer_pair between h1 (receiver) and h0 (sender), NIC 0 each, on a running
# test/vm bed (BED_NAME set; run from the bed's checkout). Extra args: --env K=V ...
# Prints both sides' output; exit 0 when both passed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# the guests cache files (9p cache=loose): run a fresh copy under a new name
bin=$top/build/e2e/xfer_pair.$$
cp "$top/build/e2e/xfer_pair" "$bin"
trap 'rm -f "$bin"' EXIT
runs=build/vm-runs/$BED_NAME
rm -f "$runs/h1/handle" "$runs/h0/handle"
j=$(test/vm/bed run --bg --timeout 150 "$@" 1 -- "$bin" recv rxe0 /run/bed/handle) || exit 1
for _ in $(seq 1 200); do [ -s "$runs/h1/handle" ] && break; sleep 0.3; done
cp "$runs/h1/handle" "$runs/h0/handle"
test/vm/bed run --timeout 150 "$@" 0 -- "$bin" send rxe0 /run/bed/handle
s=$?
test/vm/bed wait --timeout 60 "$j"
r=$?
echo "send rc=$s recv rc=$r"
[ $s -eq 0 ] && [ $r -eq 0 ]
