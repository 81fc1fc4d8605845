#!/usr/bin/env bash
# The plugin exports exactly ncclNetPlugin_v6..v12 and ncclRmaPlugin_v14 (NCCL 2.30.7's RMA
# backend, which NCCL looks up in the net plugin's library), plus the linker's own symbols,
# each a data object in a read-only-after-relocation section.
set -eu
cd "$(dirname "$0")/../.."
so=build/libnccl-net-roce.so
[ -f "$so" ] || { echo "FAIL: $so not built (make)"; exit 1; }
command -v nm >/dev/null || { echo "skip: nm (binutils) not installed"; exit 77; }

want=$( (printf 'ncclNetPlugin_v%s\n' 6 7 8 9 10 11 12; echo ncclRmaPlugin_v14) | sort)
got=$(nm -D --defined-only "$so" | awk '{print $3}' |
	grep -vxE '_init|_fini|_edata|_end|__bss_start' | sort)
if [ "$got" != "$want" ]; then
	echo "FAIL: exported symbols differ from the eight tables"
	diff <(echo "$want") <(echo "$got") || true
	exit 1
fi
# Each is an initialised data object (D/R), never a function or BSS.
bad=$(nm -D --defined-only "$so" | awk '$3 ~ /^ncclNetPlugin_v|^ncclRmaPlugin_v/ && $2 !~ /^[DdRr]$/')
[ -z "$bad" ] || { echo "FAIL: not data objects: $bad"; exit 1; }
echo "ok: $(echo "$got" | tr '\n' ' ')"
