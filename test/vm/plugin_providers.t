#!/usr/bin/env bash
# The plugin loads only the libibverbs providers the host's devices need (rn_provider.h): the
# dynamic linker's own record (LD_DEBUG=files) shows which provider libraries a probe opened.
# Soft-RoCE devices: rxe alone, also for one renamed by `rdma link add` (found by its parent
# netdev); with RDMAV_DRIVERS set, libibverbs does its own full scan and every device is still
# found. 1 host x 2 NICs.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
plugin_prereq

probe() { # env... -> the probe's output, with the linker's file lines
	drv_run 0 LD_DEBUG=files NCCL_DEBUG_SUBSYS=INIT "$@" -- -v probe
}

providers_opened() { # output -> the provider libraries the process opened, one per line
	grep -oE 'file=[^ ]*-rdmav[0-9]+\.so \[0\];  dynamically loaded' <<<"$1" |
		sed -E 's/^file=//; s/ .*//; s|.*/||' | sort -u
}

body() {
	local out libs
	B up --hosts 1 --nics 2 --scenario fixed --owner "$BED_OWNER" >/dev/null
	echo "bed: 1 host x 2 NICs (rxe0, rxe1)"

	t_step "a probe opens the rxe provider and no other"
	out=$(probe) || { echo "$out" | tail -20; rn_fail "the probe failed"; }
	libs=$(providers_opened "$out")
	echo "  providers opened: $(tr '\n' ' ' <<<"$libs")"
	grep -q "nccl-net-driver: devices: 2" <<<"$out" || rn_fail "the probe did not find both devices"
	[ "$libs" = "librxe-rdmav34.so" ] || rn_fail "opened $(wc -l <<<"$libs") provider libraries, want librxe only"
	grep -q "INFO NET/RoCE : libibverbs providers: rxe loaded for 2 devices; the other [0-9]* configured are left unloaded" <<<"$out" ||
		rn_fail "no INFO line says which providers were loaded"
	rn_log "ok: one provider library opened, both devices found"

	t_step "a Soft-RoCE device renamed by rdma link add is still rxe's"
	B run 0 -- sh -c 'rdma link delete rxe1 && rdma link add soft1 type rxe netdev eth1' ||
		rn_fail "could not rename rxe1"
	out=$(probe) || { echo "$out" | tail -20; rn_fail "the probe failed"; }
	libs=$(providers_opened "$out")
	echo "  providers opened: $(tr '\n' ' ' <<<"$libs")"
	grep -q "found soft1:1 netdev eth1" <<<"$out" || rn_fail "soft1 was not found"
	grep -q "nccl-net-driver: devices: 2" <<<"$out" || rn_fail "the probe did not find both devices"
	[ "$libs" = "librxe-rdmav34.so" ] || rn_fail "opened $(wc -l <<<"$libs") provider libraries, want librxe only"
	rn_log "ok: soft1 found with the rxe provider alone"

	t_step "RDMAV_DRIVERS set: libibverbs loads its providers itself"
	out=$(probe RDMAV_DRIVERS=rxe) || { echo "$out" | tail -20; rn_fail "the probe failed"; }
	libs=$(providers_opened "$out")
	echo "  providers opened: $(wc -l <<<"$libs")"
	grep -q "nccl-net-driver: devices: 2" <<<"$out" || rn_fail "the probe did not find both devices"
	[ "$(wc -l <<<"$libs")" -gt 5 ] || rn_fail "libibverbs opened only $(tr '\n' ' ' <<<"$libs"): our preload was not left out"
	grep -q "libibverbs providers: libibverbs loads all it has configured (RDMAV_DRIVERS is set)" <<<"$out" ||
		rn_fail "no INFO line says why the providers were left to libibverbs"
	rn_log "ok: libibverbs' own scan, both devices found"
}

bed_attempt body
