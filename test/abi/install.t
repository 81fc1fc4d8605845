#!/usr/bin/env bash
# `make install DESTDIR=...` puts each file where it is used: the plugin in the
# loader's multiarch directory (which /etc/ld.so.conf.d covers for /usr/local too, so
# NCCL's dlopen finds it without LD_LIBRARY_PATH), tools in bin/sbin, every man page
# gzipped under man<section>, the docs; the installed driver loads the installed
# plugin by its path; `make uninstall` with the same variables leaves nothing behind.
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d /tmp/rn-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
d=$tmp/root
triplet=$(${CC:-cc} -print-multiarch)
[ -n "$triplet" ] || { echo "SKIP: skip: no multiarch triplet from the compiler"; exit 77; }

make --no-print-directory install DESTDIR="$d" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "install"; }
grep -q ldconfig "$tmp/log" && fail "ldconfig ran although DESTDIR was set"
p=$d/usr/local
lib=$p/lib/$triplet/libnccl-net-roce.so
[ -f "$lib" ] || fail "plugin not in lib/$triplet"
[ "$(stat -c %a "$lib")" = 644 ] || fail "plugin mode $(stat -c %a "$lib"), want 644"
for f in bin/nccl-net-driver bin/nccl-net-bench sbin/roce-doctor sbin/roce-policy-routing; do
	[ -x "$p/$f" ] || fail "$f not installed"
done
n=0
for m in man/*.[1-8]; do
	[ -f "$m" ] || continue
	s=${m##*.}
	gz=$p/share/man/man$s/${m##*/}.gz
	[ -f "$gz" ] || fail "$m not installed as $gz"
	cmp -s <(gunzip -c "$gz") "$m" || fail "$gz is not $m"
	n=$((n + 1))
done
[ -f "$p/share/doc/nccl-net-roce/README.md" ] || fail "README not in share/doc/nccl-net-roce"
rules=$p/share/nccl-net-roce/prometheus/nccl-net-roce.rules.yml
cmp -s "$rules" doc/prometheus/nccl-net-roce.rules.yml || fail "Prometheus rules not installed as $rules"
[ "$(stat -c %a "$rules")" = 644 ] || fail "rules mode $(stat -c %a "$rules"), want 644"
cmp -s "${rules%/*}/nccl-net-roce-mesh.rules.yml" doc/prometheus/nccl-net-roce-mesh.rules.yml ||
	fail "the mesh's Prometheus rules not installed"
cmp -s "$p/share/nccl-net-roce/nhc/roce.nhc" scripts/roce.nhc || fail "NHC check not installed"
# the installed health check runs the doctor installed beside it (lo: no RoCE GID, exit 1)
out=$(ROCE_HEALTH_CONF=/dev/null "$p/sbin/roce-health-check" --no-drain --netdev lo)
[ $? -eq 1 ] && [[ "$out" == "ERROR: roce-doctor: Health check failed: roce: no-gid lo"* ]] ||
	fail "installed roce-health-check: '$out'"
echo "installed: $(find "$d" -type f | wc -l) files, $n man pages"

# the loader searches this directory for PREFIX=/usr/local (and /usr): Debian's
# multiarch entry in /etc/ld.so.conf.d
if [ -d /etc/ld.so.conf.d ]; then
	cat /etc/ld.so.conf /etc/ld.so.conf.d/*.conf 2>/dev/null | grep -qx "/usr/local/lib/$triplet" ||
		fail "/usr/local/lib/$triplet is not in the loader's configuration"
fi

# the installed tool loads the installed plugin by path (NCCL_NET_PLUGIN=/abs/path)
env -u LD_LIBRARY_PATH NCCL_DEBUG=WARN NCCL_IB_HCA='=rn-no-such-device' NCCL_NET_PLUGIN="$lib" \
	"$p/bin/nccl-net-driver" probe >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "probe by path"; }
grep -q "loaded net plugin RoCE (v12) from $lib" "$tmp/out" || { cat "$tmp/out"; fail "not by path"; }

make --no-print-directory uninstall DESTDIR="$d" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "uninstall"; }
left=$(find "$d" \( -type f -o -type l \) -printf '%P\n')
[ -z "$left" ] || fail "left behind by uninstall: $left"
[ -d "$p/share/doc/nccl-net-roce" ] && fail "doc directory left behind"
[ -d "$p/share/nccl-net-roce" ] && fail "data directory left behind"
echo ok
