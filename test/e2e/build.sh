#!/bin/sh
# Build test/e2e/xfer_pair against build/librn.a (run `make` first). RN_LIB=<path to
# another librn.a> links a merged tree's core instead (with the real route checks).
set -e
cd "$(dirname "$0")/../.."
mkdir -p build/e2e
${CC:-cc} -std=gnu11 -O2 -g -D_GNU_SOURCE -Iinclude -Wall -o build/e2e/xfer_pair \
	test/e2e/xfer_pair.c "${RN_LIB:-build/librn.a}" \
	$(pkg-config --libs libibverbs libnl-3.0 libnl-route-3.0) -pthread
echo build/e2e/xfer_pair
