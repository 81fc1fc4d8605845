#!/usr/bin/env bash
# The Debian package on a broken Soft-RoCE host, as issue 10's "done when" says:
# `dpkg -i` of the .deb `make deb` built, inside a guest (its root is this host's,
# read-only over 9p under a tmpfs overlay: the install lands in the guest only), then
# with no LD_LIBRARY_PATH `NCCL_NET_PLUGIN=roce NCCL_DEBUG=WARN nccl-net-driver roce`
# finds the installed plugin by its short name and shows, with NCCL_DEBUG_SUBSYS
# unset, the refusal WARN with its cause id (arp-flux) and the fix; the installed
# roce-doctor names the same cause and `man roce-doctor`-style lookups work.
set -u
. "$(dirname "$0")/lib/test.sh"
bed_prereq dpkg-deb dpkg-shlibdeps

cd "$RN_TOP" || exit 1
# build first: the guests cache what they read over 9p
deb=$(make --no-print-directory deb | tail -1)
[ -f "$deb" ] || rn_fail "make deb made no package"
dpkg-query -W nccl-net-roce >/dev/null 2>&1 &&
	rn_skip "skip: nccl-net-roce is installed on this host; the test needs a root without it"

body() {
	local out rc
	B up --hosts 1 --nics 2 --scenario broken --owner "$BED_OWNER" >/dev/null
	echo "bed: 1 host x 2 NICs, scenario broken (kernel defaults, one /24)"

	t_step "dpkg -i $deb in the guest"
	# man-db's trigger would rebuild the whole manual index under TCG, which is not what
	# is tested: its switch is this file (the guest's overlay only)
	SECONDS=0
	out=$(B run --timeout 120 0 -- bash -c "rm -f /var/lib/man-db/auto-update;
		time dpkg -i '$deb' 2>&1 && dpkg -L nccl-net-roce")
	rc=$?
	echo "(dpkg -i took ${SECONDS} s)"
	echo "$out" | sed 's/^/  | /'
	[ $rc -eq 0 ] || rn_fail "dpkg -i exited $rc"
	grep -qx "/usr/lib/x86_64-linux-gnu/libnccl-net-roce.so" <<<"$out" ||
		rn_fail "the plugin is not in the loader's multiarch directory"

	t_step "NCCL_NET_PLUGIN=roce NCCL_DEBUG=WARN nccl-net-driver roce (no LD_LIBRARY_PATH)"
	out=$(B run --timeout 90 0 -- bash -c 'cd / && unset LD_LIBRARY_PATH NCCL_DEBUG_SUBSYS &&
		command -v nccl-net-driver && NCCL_NET_PLUGIN=roce NCCL_DEBUG=WARN nccl-net-driver roce')
	rc=$?
	echo "$out" | sed 's/^/  | /'
	grep -qx "/usr/bin/nccl-net-driver" <<<"$out" || rn_fail "not the installed driver"
	grep -q "loaded net plugin RoCE (v12) from libnccl-net-roce.so" <<<"$out" ||
		rn_fail "the installed plugin was not found by its short name"
	grep -q "NCCL WARN .*refused by the route check: .*arp-flux" <<<"$out" ||
		rn_fail "no refusal WARN naming arp-flux under NCCL_DEBUG=WARN, NCCL_DEBUG_SUBSYS unset"
	grep -q "NCCL WARN .*arp-flux: .*fix: .*arp_ignore" <<<"$out" ||
		grep -q "NCCL WARN .*arp_ignore=1" <<<"$out" || rn_fail "the WARNs give no fix"
	grep -q "NCCL WARN .*roce-policy-routing" <<<"$out" || rn_fail "the summary names no fix"
	rn_log "ok: installed plugin found by name; refusal WARN with cause arp-flux and its fix shown"

	t_step "the installed roce-doctor names the same cause; its man page is found"
	out=$(B run --timeout 90 0 -- bash -c 'cd / && roce-doctor --json; echo "rc=$?";
		man -w nccl-net-roce')
	grep -q '"arp-flux"' <<<"$out" || { echo "$out" | tail -20; rn_fail "doctor: no arp-flux"; }
	grep -q "/usr/share/man/man7/nccl-net-roce.7.gz" <<<"$out" || rn_fail "man -w nccl-net-roce"
	rn_log "ok: roce-doctor (installed) names arp-flux; man page installed"
}

bed_attempt body
