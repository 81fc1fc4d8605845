#!/usr/bin/env bash
# The Debian source package (debian/): `dpkg-buildpackage -us -uc` in a checkout (here its
# files, tracked and new, copied as a user's checkout has them, without build/) makes the
# source package (.dsc, native .tar.xz) and the .deb with debhelper and the project's
# Makefile; lintian finds neither an error nor a warning in the source or the binary
# package (pedantic and informational tags are printed for the log); debian/changelog's
# version is the Makefile's; the .deb holds the plugin in the multiarch directory, the
# tools, the man pages, the Prometheus rules and the NHC check, depends on libibverbs1 and
# libnl-3-200, refreshes the loader cache, and its driver loads its plugin.
set -u
cd "$(dirname "$0")/../.." || exit 1
skip() { echo "SKIP: package_debian: $*"; exit 77; }
fail() { echo "FAIL: package_debian: $*"; exit 1; }
for t in dpkg-buildpackage dh lintian git; do
	command -v $t >/dev/null || skip "skip: $t not installed (scripts/install-deps --test)"
done
ver=$(sed -n 's/^VERSION := //p' Makefile)
debver=$(dpkg-parsechangelog -S Version)
[ "$debver" = "$ver" ] || fail "debian/changelog says $debver, the Makefile $ver"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rn-package-debian-$$.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# lintian and dpkg-deb leave temp files behind (lintian's mldbm-elf-*, a dpkg-deb stopped
# early by grep -q): theirs go into ours
mkdir "$tmp/tmp"
export TMPDIR=$tmp/tmp
src=$tmp/nccl-net-roce-$ver
mkdir "$src"
# shellcheck disable=SC2016 # $f is the inner shell's
git ls-files -z --cached --others --exclude-standard |
	xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	xargs -0 cp --parents -t "$src"

(cd "$src" && dpkg-buildpackage -us -uc) >"$tmp/build.log" 2>&1 ||
	{ tail -n 40 "$tmp/build.log"; fail "dpkg-buildpackage -us -uc"; }
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb=$tmp/nccl-net-roce_${ver}_$arch.deb
for f in "nccl-net-roce_$ver.dsc" "nccl-net-roce_$ver.tar.xz" "${deb##*/}" \
	"nccl-net-roce_${ver}_$arch.changes"; do
	[ -f "$tmp/$f" ] || fail "dpkg-buildpackage made no $f"
done
tar -tJf "$tmp/nccl-net-roce_$ver.tar.xz" | grep -q "^nccl-net-roce-$ver/debian/rules$" ||
	fail "the source tarball lacks debian/rules"
tar -tJf "$tmp/nccl-net-roce_$ver.tar.xz" | grep -q "^nccl-net-roce-$ver/build/" &&
	fail "the source tarball holds build/"
echo "--- dpkg-buildpackage made: $(cd "$tmp" && echo *.dsc *.tar.xz *.deb *.changes)"

echo "--- lintian (source and binary)"
lint=$(lintian -I -E --pedantic "$tmp/nccl-net-roce_${ver}_$arch.changes" 2>&1 |
	grep -v '^running with root privileges')
echo "$lint"
grep -E '^[EW]: ' <<<"$lint" && fail "lintian reports errors or warnings"
# the source package alone as well: lintian's status says whether it found an error
lint=$(lintian -E --pedantic "$tmp/nccl-net-roce_$ver.dsc" 2>&1)
rc=$?
echo "--- lintian $ver.dsc: exit $rc"
echo "$lint" | grep -v '^running with root privileges'
[ $rc -eq 0 ] || fail "lintian on the source package: exit $rc"
grep -E '^[EW]: ' <<<"$lint" && fail "lintian reports errors or warnings in the source package"

echo "--- dpkg -c"
files=$(dpkg -c "$deb" | awk '{print $6}' | sed 's,^\.,,')
echo "$files"
for f in "/usr/lib/$triplet/libnccl-net-roce.so" /usr/bin/nccl-net-driver /usr/bin/nccl-net-bench \
	/usr/sbin/roce-doctor /usr/sbin/roce-policy-routing /usr/sbin/roce-health-check \
	/usr/share/nccl-net-roce/prometheus/nccl-net-roce.rules.yml \
	/usr/share/nccl-net-roce/nhc/roce.nhc /usr/share/doc/nccl-net-roce/copyright \
	/usr/share/doc/nccl-net-roce/changelog.gz; do
	grep -qxF "$f" <<<"$files" || fail "$f not in the package"
done
for m in man/*.[1-8]; do
	grep -qx "/usr/share/man/man${m##*.}/${m##*/}.gz" <<<"$files" || fail "$m not in the package"
done
grep -q LICENSE <<<"$files" && fail "LICENSE in the package (debian/copyright holds it)"
dpkg -I "$deb" | grep -q '^ Depends: .*libibverbs1' || fail "Depends lacks libibverbs1"
dpkg -I "$deb" | grep -q '^ Depends: .*libnl-3-200' || fail "Depends lacks libnl-3-200"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./triggers | grep -qx 'activate-noawait ldconfig' ||
	fail "no ldconfig trigger"

# its driver loads its plugin, by path
dpkg-deb -x "$deb" "$tmp/x"
out=$(NCCL_DEBUG=WARN NCCL_IB_HCA='=rn-no-such-device' "$tmp/x/usr/bin/nccl-net-driver" \
	--plugin "$tmp/x/usr/lib/$triplet/libnccl-net-roce.so" 2>&1) || { echo "$out"; fail "driver"; }
grep -q "loaded net plugin RoCE (v12) from $tmp/x/usr/lib/$triplet/libnccl-net-roce.so" <<<"$out" ||
	{ echo "$out"; fail "the packaged driver does not load the packaged plugin"; }
echo ok
