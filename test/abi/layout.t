#!/usr/bin/env bash
# Struct sizes, field offsets and signatures of plugin/nccl/net_abi.h against NCCL's
# x86-64 layout (numbers in test/abi/layout.c).
set -eu
cd "$(dirname "$0")/../.."
case "$(uname -m)" in
x86_64) ;;
*) echo "skip: layout numbers are for x86-64, this is $(uname -m)"; exit 77 ;;
esac
mkdir -p build/abi
${CC:-cc} -std=gnu11 -Wall -Werror -Iplugin -o build/abi/layout test/abi/layout.c
exec build/abi/layout
