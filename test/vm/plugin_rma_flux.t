#!/usr/bin/env bash
# The RMA backend on a host whose second NIC the route check refuses (2 hosts x 2 NICs in one
# subnet with the fix applied, then h0's rule for eth1's address removed: its replies would
# leave through eth0). NCCL's
# RMA proxy takes its NICs from the backend's devices(): the refused NIC is not offered, so
# device-API traffic never uses it, and the group runs on the NIC that passes, checked.
set -u
. "$(dirname "$0")/lib/test.sh"
. "$(dirname "$0")/lib/plugin.sh"
plugin_prereq

body() {
	local j1 o0 o1 r0 r1 port=18951
	B up --hosts 2 --nics 2 --scenario fixed --owner "$BED_OWNER" >/dev/null
	B fault 0 no-rule --nic 1 >/dev/null || rn_fail "fault no-rule"
	echo "bed: 2 hosts x 2 NICs, one subnet, policy routing but h0 has no rule for eth1"

	t_step "2 ranks on the NIC that passes"
	drv_start j1 1 NCCL_DEBUG_SUBSYS=INIT,NET -- -v --ranks 2 --rank 1 --size 64K --rounds 2 \
		rma "$(bed_ip 0 0):$port"
	o0=$(drv_run 0 NCCL_DEBUG_SUBSYS=INIT,NET -- -v --ranks 2 --rank 0 --size 64K --rounds 2 \
		--iters 1 rma "$(bed_ip 0 0):$port"); r0=$?
	o1=$(B wait "$j1" 2>&1); r1=$?
	grep -E "rma rank|refused|WARN" <<<"$o0" | cut -c1-240 | sed 's/^/  r0| /'
	[ $r0 -eq 0 ] && [ $r1 -eq 0 ] || rn_fail "exit $r0 and $r1, want 0 and 0"
	grep -q "NCCL WARN .*1 RoCE NIC refused by the route check: rxe1:1 eth1" <<<"$o0" ||
		rn_fail "h0's init did not refuse rxe1 by name"
	grep -q "RMA context on rxe0:1" <<<"$o0" || rn_fail "the context is not on rxe0"
	grep -q "4 puts, 4 gets, 8 signals and 4 flushes checked over 2 rounds" <<<"$o0$o1" ||
		rn_fail "not every put, get, signal and flush was checked"
	rn_log "ok: the group ran on rxe0, every byte and signal checked; rxe1 refused at init"

	t_step "the refused NIC is not an RMA device"
	o0=$(drv_run 0 -- --ranks 1 --rank 0 --dev 1 rma "$(bed_ip 0 0):$((port + 1))"); r0=$?
	grep "rma rank" <<<"$o0" | sed 's/^/  r0| /'
	[ $r0 -eq 1 ] || rn_fail "--dev 1: exit $r0, want 1"
	grep -q "devices: ncclSuccess, 1 (want device 1)" <<<"$o0" ||
		rn_fail "the RMA backend offered the refused NIC"
	rn_log "ok: devices() offers 1 NIC: the refused one is not among them"
}

bed_attempt body
