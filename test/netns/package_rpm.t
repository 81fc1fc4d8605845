#!/usr/bin/env bash
# The RPM as a user of an RPM distribution gets it: the spec stands on its own (rpmspec -P),
# `make srpm` makes a source RPM (the checkout's files and the spec) that
# `rpmbuild --rebuild` turns into the binary RPM; `make rpm` builds it that way,
# rpmlint (with scripts/rpmlint.toml, the plugin's reasons) finds no error in it, and
# `rpm --root` installs it into a private root (this host's root under a throw-away
# overlay in a private mount namespace: nothing on the host changes) where the plugin is
# in the loader cache, `nccl-net-driver roce` loads it by its short name and by its path,
# its WARN shows under NCCL_DEBUG=WARN with NCCL_DEBUG_SUBSYS unset, its man pages are
# found, and `rpm -e` takes every file away again.
# The root is Debian's, so two things of an RPM distribution are supplied: /usr/lib64 in
# the loader's path (glibc's trusted directory there), and --nodeps, since this root's
# rpmdb knows no package (Debian registers its libraries with dpkg); instead every
# library and file the package requires is checked to be present in the root.
set -u
cd "$(dirname "$0")/../.."
top=$PWD
skip() { echo "SKIP: package_rpm: $*"; exit 77; }
fail() { echo "FAIL: package_rpm: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "skip: needs root (mount namespace, overlay, chroot)"
for t in unshare chroot rpmbuild rpm; do
	command -v $t >/dev/null || skip "skip: $t not installed (scripts/install-deps --test)"
done
command -v rpmlint >/dev/null || fail "rpmlint missing (scripts/install-deps --test)"

# 0. the spec on its own (rpmspec), the source RPM (make srpm), and the binary RPM that
# `rpmbuild --rebuild` makes of it in a tree of its own
ver=$(sed -n 's/^VERSION := //p' Makefile)
spec=scripts/nccl-net-roce.spec
rpmspec -P "$spec" >/dev/null || fail "rpmspec -P $spec"
specver=$(rpmspec -q --srpm --qf '%{version}' "$spec") || fail "rpmspec -q $spec"
[ "$specver" = "$ver" ] || fail "$spec: Version $specver, the Makefile's $ver"
srpm=$(make --no-print-directory srpm | tail -1)
[ "$srpm" = "build/nccl-net-roce-$ver-1.src.rpm" ] || fail "make srpm: $srpm"
echo "--- rpm -qpl $srpm"; rpm -qpl "$srpm"
[ "$(rpm -qpl "$srpm" | sort | tr '\n' ' ')" = "nccl-net-roce-$ver.tar.gz nccl-net-roce.spec " ] ||
	fail "the source RPM does not hold the tarball and the spec"
rpm -qp --qf '[%{REQUIRENAME}\n]' "$srpm" | grep -qx 'pkgconfig(libibverbs)' ||
	fail "the source RPM does not BuildRequire libibverbs"
lint=$(rpmlint -c scripts/rpmlint.toml "$srpm" 2>&1)
echo "$lint"
grep -q ': E: ' <<<"$lint" && fail "rpmlint reports errors in the source RPM"
rtop=$(mktemp -d /tmp/rn-rebuild.XXXXXX)
rpmbuild --rebuild --nodeps --quiet --define "_topdir $rtop" "$srpm" >"$rtop.log" 2>&1 ||
	{ cat "$rtop.log"; rm -rf "$rtop" "$rtop.log"; fail "rpmbuild --rebuild $srpm"; }
rebuilt=$(ls "$rtop"/RPMS/*/nccl-net-roce-"$ver"-1.*.rpm)
echo "rpmbuild --rebuild $srpm: ${rebuilt##*/}"
# (rpm's default build-id links under /usr/lib/.build-id are there, mkrpm turns them off)
rebuilt_files=$(rpm -qpl "$rebuilt" | grep -v '^/usr/lib/\.build-id')
rm -rf "$rtop" "$rtop.log"

# 1. build it (make rpm: the source RPM rebuilt); rpmlint: errors fail, the rest is printed
rpmf=$(make --no-print-directory rpm | tail -1)
[ -f "$rpmf" ] || fail "make rpm made no package ($rpmf)"
[ "$(rpm -qpl "$rpmf")" = "$rebuilt_files" ] || fail "make rpm and rpmbuild --rebuild differ"
[ "$rpmf" = "build/nccl-net-roce-$ver-1.$(rpm --eval '%{_arch}').rpm" ] ||
	fail "unexpected package name $rpmf"
echo "--- rpm -qplv $rpmf"; rpm -qplv "$rpmf"
echo "--- rpm -qpi"; rpm -qpi "$rpmf"
reqs=$(rpm -qp --requires "$rpmf")
echo "--- requires"; echo "$reqs"
for r in 'libibverbs.so.1()(64bit)' 'libnl-3.so.200()(64bit)'; do
	grep -qxF "$r" <<<"$reqs" || fail "Requires lacks $r"
done
rpm -qp --provides "$rpmf" | grep -q 'libnccl-net-roce' &&
	fail "the plugin is provided as a library (nothing links against it)"
[ "$(rpm -qp --qf '%{POSTINPROG}' "$rpmf")" = /sbin/ldconfig ] || fail "no ldconfig after install"
[ "$(rpm -qp --qf '%{POSTUNPROG}' "$rpmf")" = /sbin/ldconfig ] || fail "no ldconfig after removal"
# the same files as the .deb, in the RPM distributions' directories
files=$(rpm -qpl "$rpmf")
for f in /usr/lib64/libnccl-net-roce.so /usr/bin/nccl-net-driver /usr/bin/nccl-net-bench \
	 /usr/sbin/roce-doctor /usr/sbin/roce-policy-routing /usr/share/doc/nccl-net-roce/README.md \
	 /usr/share/doc/nccl-net-roce/roce-doctor.md /usr/share/licenses/nccl-net-roce-$ver/LICENSE \
	 /usr/share/nccl-net-roce/prometheus/nccl-net-roce.rules.yml /usr/share/nccl-net-roce/nhc/roce.nhc; do
	grep -qxF "$f" <<<"$files" || fail "$f not in the package"
done
for m in man/*.[1-8]; do
	grep -qx "/usr/share/man/man${m##*.}/${m##*/}.gz" <<<"$files" || fail "$m not in the package"
done
echo "--- rpmlint"
lint=$(rpmlint -c scripts/rpmlint.toml "$rpmf" 2>&1)
echo "$lint"
grep -q ': E: ' <<<"$lint" && fail "rpmlint reports errors"
grep -q ' 0 errors' <<<"$lint" || fail "rpmlint did not run to its summary"

# 2. install it into a private root and use it there
tmp=$(mktemp -d /tmp/rn-package-rpm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
grep -Ev '^(rpmlib|rtld)\(' <<<"$reqs" >"$tmp/reqs"
{ cat test/netns/pkg_inside.sh; cat <<'IN'; } >"$tmp/inside.sh"
set -u
cd /
unset LD_LIBRARY_PATH
so=/usr/lib64/libnccl-net-roce.so
[ -f "$so" ] || { echo "FAIL: no $so after rpm -i"; exit 1; }
rpm --dbpath /var/lib/rpm -q nccl-net-roce || { echo "FAIL: not in the root's rpmdb"; exit 1; }
ldconfig -p | grep -q "libnccl-net-roce.so .*=> $so\$" ||
	{ echo "FAIL: $so not in the loader cache after install"; exit 1; }
# what --nodeps did not check: every library and file it requires is in this root
while read -r r; do
	case $r in
	/*) [ -e "$r" ] || { echo "FAIL: requires $r, absent"; exit 1; } ;;
	*'(64bit)')
		lib=${r%%(*}
		ldconfig -p | grep -q "^[[:space:]]*$lib (.*x86-64" ||
			{ echo "FAIL: requires $r, not in the loader cache"; exit 1; } ;;
	esac
done </tmp/reqs
installed_checks
roce-policy-routing --help >/dev/null || { echo "FAIL: roce-policy-routing does not run"; exit 1; }
for m in $(rpm --dbpath /var/lib/rpm -ql nccl-net-roce | grep '^/usr/share/man/man./.*\.gz$'); do
	n=$(basename "$m" .gz)
	[ "$(man -w "${n%.*}" 2>/dev/null)" = "$m" ] || { echo "FAIL: man -w ${n%.*}"; exit 1; }
done
rpm --dbpath /var/lib/rpm -ql nccl-net-roce | while read -r f; do [ -f "$f" ] && echo "$f"; done \
	>/tmp/files
echo "inside: ok"
IN
cat >"$tmp/removed.sh" <<'IN'
set -u
while read -r f; do
	[ -e "$f" ] && { echo "FAIL: $f left after rpm -e"; exit 1; }
done </tmp/files
[ -s /tmp/files ] || { echo "FAIL: no file list"; exit 1; }
ldconfig -p | grep -q libnccl-net-roce && { echo "FAIL: still in the loader cache"; exit 1; }
echo "removed: ok"
IN
unshare -m bash -c '
set -e
t=$1/mnt rpmf=$2
mount --make-rprivate /
mkdir "$t"
mount -t tmpfs tmpfs "$t"
mkdir "$t/u" "$t/w" "$t/root"
r=$t/root
mount -t overlay overlay -o lowerdir=/,upperdir="$t/u",workdir="$t/w" "$r"
mount -t proc proc "$r/proc"
mount --rbind /dev "$r/dev"
mount -t tmpfs tmpfs "$r/tmp"
cp "$1/reqs" "$r/tmp/reqs"
# an RPM distribution loads from /usr/lib64 (glibc trusts it there)
echo /usr/lib64 >"$r/etc/ld.so.conf.d/zz-rpm-lib64.conf"
rpm --root "$r" --dbpath /var/lib/rpm --initdb
rpm --root "$r" --dbpath /var/lib/rpm -i --nodeps "$rpmf" || { echo "FAIL: rpm -i"; exit 1; }
chroot "$r" bash -s <"$3"
rpm --root "$r" --dbpath /var/lib/rpm -e nccl-net-roce || { echo "FAIL: rpm -e"; exit 1; }
chroot "$r" bash -s <"$4"
' rn-package-rpm "$tmp" "$top/$rpmf" "$tmp/inside.sh" "$tmp/removed.sh" 2>&1 | tee "$tmp.log"
grep -q "^inside: ok" "$tmp.log" || { rm -f "$tmp.log"; fail "inside the private root"; }
grep -q "^removed: ok" "$tmp.log" || { rm -f "$tmp.log"; fail "after rpm -e"; }
rm -f "$tmp.log"
# nothing leaked onto the host
[ -e /usr/lib64/libnccl-net-roce.so ] && fail "the package landed on the host"
echo ok
