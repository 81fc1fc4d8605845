#!/bin/sh
# Build test/e2e/xfer_pair against build/librn.a (run `make` first).
set -e
cd "$(dirname "$0")/../.."
mkdir -p build/e2e
${CC:-cc} -std=gnu11 -O2 -g -D_GNU_SOURCE -Iinclude -Wall -o build/e2e/xfer_pair \
	test/e2e/xfer_pair.c build/librn.a $(pkg-config --libs libibverbs libnl-3.0 libnl-route-3.0) -pthread
echo build/e2e/xfer_pair
