#!/usr/bin/env bash
# Every man page in man/ renders with man -l at 80 columns without a single groff or
# man warning, and nccl-net-roce(7) documents, as an entry of its own, every
# environment variable the plugin reads (its parameter table, read from the code
# itself, plus any getenv of the core or the plugin) and every cause id of the
# verdict catalogue (also read from the code).
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d /tmp/rn-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v man >/dev/null || fail "man missing (scripts/install-deps --test: man-db)"
[ -f build/librn.a ] || fail "run make first"
page=man/nccl-net-roce.7
[ -f "$page" ] || fail "$page missing"

# 1. each page renders, silently
n=0
for m in man/*.[1-8]; do
	[ -f "$m" ] || continue
	MANWIDTH=80 MAN_KEEP_FORMATTING= LC_ALL=C.UTF-8 man --warnings=w -E UTF-8 -l "$m" \
		>"$tmp/out" 2>"$tmp/err" </dev/null || fail "$m: man exited $?: $(cat "$tmp/err")"
	[ -s "$tmp/err" ] && { cat "$tmp/err"; fail "$m: warnings while rendering"; }
	grep -q '^NAME' "$tmp/out" || fail "$m: no NAME section"
	# wide no-fill examples are no groff warning: said, not failed
	MANWIDTH=80 LC_ALL=C man -E ascii -l "$m" 2>/dev/null | col -bx | awk 'length > 80 { exit 1 }' ||
		echo "note: $m: lines wider than 80 columns"
	n=$((n + 1))
done
echo "rendered $n man pages"
MANWIDTH=80 LC_ALL=C.UTF-8 man -E UTF-8 -l "$page" 2>/dev/null | col -b >"$tmp/page"

# 2. what the code knows, from the code: the parameter table and the cause catalogue
cat >"$tmp/dump.c" <<'C'
#include <stdio.h>
#include "rn_param.h"
#include "rn_verdict.h"
int main(int argc, char **argv)
{
	size_t n, i;
	const struct rn_param_desc *d = rn_param_table(&n);
	int c;

	if (argc > 1 && argv[1][0] == 'e')
		for (i = 0; i < n; i++)
			printf("%s\n", d[i].name);
	else
		for (c = 1; c < RN_CAUSE__MAX; c++)
			printf("%s\n", rn_cause_id((enum rn_cause)c));
	return 0;
}
C
# shellcheck disable=SC2046
${CC:-cc} -std=gnu11 -D_GNU_SOURCE -Iinclude -o "$tmp/dump" "$tmp/dump.c" build/librn.a \
	$(pkg-config --libs libibverbs libnl-3.0 libnl-route-3.0) -pthread -ldl ||
	fail "cannot build the catalogue dump against build/librn.a"
"$tmp/dump" env >"$tmp/vars"
grep -ho 'getenv("[A-Z][A-Z0-9_]*")' src/*.c plugin/*.c | sed 's/getenv("\(.*\)")/\1/' >>"$tmp/vars"
"$tmp/dump" causes >"$tmp/causes"
[ "$(wc -l <"$tmp/vars")" -ge 10 ] || fail "parameter table looks empty: $(cat "$tmp/vars")"
[ "$(wc -l <"$tmp/causes")" -ge 10 ] || fail "cause catalogue looks empty"

# 3. each is an entry of the page (a tag at the start of an indented paragraph)
missing=()
for v in $(sort -u "$tmp/vars") $(cat "$tmp/causes"); do
	grep -Eq "^ {7}$v( |\$)" "$tmp/page" || missing+=("$v")
done
[ ${#missing[@]} -eq 0 ] || fail "$page does not document: ${missing[*]}"
echo "$(sort -u "$tmp/vars" | wc -l) variables and $(wc -l <"$tmp/causes") cause ids documented"
echo ok
