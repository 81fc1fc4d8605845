#!/usr/bin/env bash
# The Debian package as a user gets it: `make deb` builds it, lintian finds no error
# in it, and `dpkg -i` into a fresh root (this host's root under a throw-away
# overlay in a private mount namespace, entered with chroot: nothing on the host
# changes) gives a plugin that `nccl-net-driver roce` loads with no LD_LIBRARY_PATH,
# whose WARN shows under NCCL_DEBUG=WARN with NCCL_DEBUG_SUBSYS unset; its man pages
# are found; `dpkg -r` takes every file away again.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
skip() { echo "SKIP: package: $*"; exit 77; }
fail() { echo "FAIL: package: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "skip: needs root (mount namespace, overlay, chroot)"
for t in unshare chroot dpkg-deb dpkg-shlibdeps; do
	command -v $t >/dev/null || skip "skip: $t not installed"
done
command -v lintian >/dev/null || fail "lintian missing (scripts/install-deps --test)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rn-package-$$.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# dpkg-deb (under dpkg -c/-I) and lintian keep temp files in TMPDIR and leave them when
# their reader stops early (grep -q): theirs go into ours
pkgtool() { TMPDIR=$tmp "$@"; }

# 1. build it; lintian: errors fail, the rest is printed for the log
deb=$(make --no-print-directory deb | tail -1)
[ -f "$deb" ] || fail "make deb made no package ($deb)"
case $deb in build/nccl-net-roce_*_*.deb) ;; *) fail "unexpected package name $deb" ;; esac
echo "--- dpkg -c $deb"; pkgtool dpkg -c "$deb"
echo "--- dpkg -I"; pkgtool dpkg -I "$deb" | sed -n '/Package:/,/Description:/p'
pkgtool dpkg -I "$deb" | grep -q '^ Depends: .*libibverbs1' || fail "Depends lacks libibverbs1"
pkgtool dpkg -I "$deb" | grep -q '^ Depends: .*libnl-3-200' || fail "Depends lacks libnl-3-200"
pkgtool dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./triggers | grep -qx 'activate-noawait ldconfig' ||
	fail "no ldconfig trigger"
echo "--- lintian"
lint=$(pkgtool lintian -I -E --pedantic "$deb" 2>&1)
echo "$lint"
grep -q '^E:' <<<"$lint" && fail "lintian reports errors"

# 2. install it into a fresh root and use it there
{ cat test/netns/pkg_inside.sh; cat <<'IN'; } >"$tmp/inside.sh"
set -u
cd /
deb=$1
unset LD_LIBRARY_PATH
dpkg -i "$deb" >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; echo "FAIL: dpkg -i"; exit 1; }
so=$(dpkg -L nccl-net-roce | grep '/libnccl-net-roce\.so$')
[ -f "$so" ] || { echo "FAIL: no plugin in the package's file list"; exit 1; }
ldconfig -p | grep -q "libnccl-net-roce.so .*=> $so\$" ||
	ldconfig -p | grep -q "libnccl-net-roce.so .*=> /lib/${so#/usr/lib/}\$" ||
	{ echo "FAIL: $so not in the loader cache after install"; exit 1; }
installed_checks
# every man page the package carries is found by name
for m in $(dpkg -L nccl-net-roce | grep '^/usr/share/man/man./.*\.gz$'); do
	n=$(basename "$m" .gz)
	[ "$(man -w "${n%.*}" 2>/dev/null)" = "$m" ] || { echo "FAIL: man -w ${n%.*}"; exit 1; }
done
files=$(dpkg -L nccl-net-roce | while read -r f; do [ -f "$f" ] && echo "$f"; done)
dpkg -r nccl-net-roce >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; echo "FAIL: dpkg -r"; exit 1; }
for f in $files; do
	[ -e "$f" ] && { echo "FAIL: $f left after dpkg -r"; exit 1; }
done
ldconfig -p | grep -q libnccl-net-roce && { echo "FAIL: still in the loader cache"; exit 1; }
echo "inside: ok"
IN
unshare -m bash -c '
set -e
t=$1/mnt deb=$2
mount --make-rprivate /
mkdir "$t"
mount -t tmpfs tmpfs "$t"
mkdir "$t/u" "$t/w" "$t/root"
mount -t overlay overlay -o lowerdir=/,upperdir="$t/u",workdir="$t/w" "$t/root"
mount -t proc proc "$t/root/proc"
mount --rbind /dev "$t/root/dev"
mount -t tmpfs tmpfs "$t/root/tmp"
cp "$deb" "$t/root/tmp/pkg.deb"
chroot "$t/root" bash -s /tmp/pkg.deb <"$3"
' rn-package "$tmp" "$top/$deb" "$tmp/inside.sh" 2>&1 | tee "$tmp.log"
grep -q "^inside: ok" "$tmp.log" || { rm -f "$tmp.log"; fail "inside the fresh root"; }
rm -f "$tmp.log"
# nothing leaked onto the host
dpkg-query -W nccl-net-roce >/dev/null 2>&1 && fail "the package landed on the host"
echo ok
