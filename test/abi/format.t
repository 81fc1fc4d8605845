#!/usr/bin/env bash
# The C files as .clang-format writes them (scripts/format-check: clang-format 19): a file
# that differs fails, named with its count of lines; `make format` rewrites it. Skipped when
# no clang-format 19 is installed (scripts/install-deps --test installs clang-format-19).
set -u
cd "$(dirname "$0")/../.."
out=$(scripts/format-check 2>&1)
rc=$?
echo "$out"
case $out in "format-check: skipped"*) exit 77 ;; esac
exit $rc
