# The bed's layer over test/netns/lib.sh (rn_fail, rn_skip, rn_log, rn_tmpdir, RN_TOP; one
# dialect for every shell test). Source it, then:
#   bed_attempt <function>   run <function> on a fresh bed (BED_NAME set, torn down after);
#                            a BED failure (not a product failure) is retried once, and said so.
#   B <bed args...>          call test/vm/bed; a bed failure ends the attempt (exit 200)
#   rn_fail <msg>            product failure, exit 1 (never retried), unless a guest NIC has
#                            stopped transmitting: then the bed's (exit 200)
# shellcheck shell=bash
# shellcheck source=../../netns/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../netns/lib.sh"
bed=$RN_TOP/test/vm/bed
# shellcheck source=addr.sh
. "$RN_TOP/test/vm/lib/addr.sh"
BED_OWNER=$$

# a product check failed; on a bed whose guest NIC has stopped transmitting it is the bed's
bed_fail_check() { # what failed
	local w
	w=$(bed_tx_wedged) || return 0
	echo "bed: a check failed ($*), but $w: a bed failure, not the product's"
	[ -n "${BED_FAILFILE:-}" ] && echo "a guest NIC stopped transmitting ($w)" >>"$BED_FAILFILE"
	exit 200
}
_rn_onfail+=(bed_fail_check)

# A guest NIC with its carrier up and an IPv4 address that transmits nothing at all, not even
# two ARP probes: the guest's virtio-net TX has stopped (seen under TCG after a few 100k
# packets, 0.3.0 too: tx_packets frozen while the qdisc hands packets on, and the skbs never
# freed, so rxe stops as well). Prints "hH ethN sent nothing ..." for the first such NIC.
# A NIC shaped by `bed fault rate` (tbf, 3 Mbit/s and up in the tests) is looked at too: its
# queue drains at that rate, so a healthy one sends its backlog or the probes within the
# seconds below (plugin_recovery shapes all of h0's NICs; once there, after 250k packets, the
# receiver's CTS and the side channel timed out on every NIC of h0 at once, and this check
# could not say whether h0 had wedged).
bed_tx_wedged() {
	local h out
	[ -n "${BED_NAME:-}" ] && "$bed" list 2>/dev/null | grep -qx "$BED_NAME" || return 1
	for h in 0 1 2 3; do
		out=$("$bed" run --timeout 20 "$h" -- bash -c 'for d in /sys/class/net/eth*; do
			n=${d##*/}; [ "$(cat "$d/carrier" 2>/dev/null)" = 1 ] || continue
			[ "$(cat "$d/operstate")" = up ] || continue
			ip=$(ip -4 -o addr show dev "$n" | awk "{print \$4; exit}")
			[ -n "$ip" ] || continue
			a=$(cat "$d/statistics/tx_packets")
			arping -D -c 2 -w 3 -I "$n" "${ip%/*}" >/dev/null 2>&1; sleep 1
			b=$(cat "$d/statistics/tx_packets")
			[ "$a" = "$b" ] && { echo "h'"$h"' $n sent nothing (tx_packets $a before and after two ARP probes)"; exit 0; }
		done; exit 1' 2>/dev/null) && [ -n "$out" ] && { echo "$out"; return 0; }
	done
	return 1
}
# Each step says when it began (seconds since the test started): where a test spends its time.
t_step() { printf '\n=== [%3ds] %s\n' "$SECONDS" "$*"; }

B() {
	"$bed" "$@"
	local rc=$?
	if [ $rc -eq 200 ] && [ -s "$BED_FAILFILE" ]; then exit 200; fi
	[ $rc -eq 77 ] && [ "$1" = up ] && exit 77
	return $rc
}

# `bed fault H clear` on each listed host at once (each re-applies its scenario in its own
# guest); a bed failure in either still ends the attempt as one (exit 200).
clear_hosts() { # host...
	local h pid=() rc bad=''
	for h in "$@"; do
		"$bed" fault "$h" clear >/dev/null &
		pid[h]=$!
	done
	for h in "$@"; do
		wait "${pid[h]}"
		rc=$?
		if [ $rc -eq 200 ] && [ -s "$BED_FAILFILE" ]; then exit 200; fi
		[ $rc -eq 0 ] || bad+=" h$h"
	done
	[ -z "$bad" ] || rn_fail "could not clear the faults of$bad"
}

# Prerequisites a test can check before booting anything: exit 77 with a reason.
bed_prereq() {
	[ "$(id -u)" -eq 0 ] || rn_skip "skip: the Soft-RoCE bed needs root"
	[ -c /dev/net/tun ] || rn_skip "skip: no /dev/net/tun"
	command -v qemu-system-x86_64 >/dev/null || rn_skip "skip: qemu-system-x86 not installed"
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || rn_skip "skip: $t not installed"
	done
	local out
	out=$("$RN_TOP/test/vm/lib/kernel" 2>&1) || rn_skip "${out##*$'\n'}"
}

bed_attempt() {
	local a rc tmp
	rn_tmpdir tmp
	# three tries: 6.1's rxe panics a guest now and then (test/vm/README, "bed failures")
	for a in 1 2 3; do
		export BED_NAME=rnbed-$$-$a BED_FAILFILE=$tmp/bedfail.$a
		( "$@" )
		rc=$?
		"$bed" down >/dev/null 2>&1
		if [ $rc -eq 200 ] && [ -s "$BED_FAILFILE" ]; then
			if [ $a -lt 3 ]; then
				echo "bed: BED FAILURE ($(head -n1 "$BED_FAILFILE")): retrying on a fresh bed"
				continue
			fi
			echo "FAIL: BED FAILURE three times ($(head -n1 "$BED_FAILFILE")): the bed, not the product"
		fi
		break
	done
	rm -rf "$tmp"
	return $rc
}

# Start a job and print its id (bed run --bg).
bg() { B run --bg "$@"; }

# Wait (<secs>, default 30) until job <job>'s output so far matches the extended regex <re>:
# 1 if the job ended or the time ran out first. Replaces a fixed sleep before a fault, which a
# loaded machine can outlast.
wait_out() { # job re [secs]
	local i n=$((${3:-30} * 5))
	for ((i = 0; i < n; i++)); do
		B peek "$1" | grep -Eq -- "$2" && return 0
		[ "$(B status "$1")" = running ] || return 1
		sleep 0.2
	done
	return 1
}

# lladdr of <ip> in host <h>'s neighbour table on eth<nic> ("" if none).
neigh_mac() { # h nic ip
	B run "$1" -- ip -4 neigh show "$3" dev "eth$2" | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}'
}

# Wait (10 s at most) until host <h> has a TCP listener on <port>: perftest and
# ibv_*_pingpong servers must listen before their client connects.
wait_listen() { # h port
	B run --timeout 15 "$1" -- bash -c "for i in \$(seq 100); do
		ss -Hltn 'sport = :$2' | grep -q . && exit 0; sleep 0.1; done; exit 1" ||
		{ echo "server on h$1 never listened on port $2"; return 1; }
}

# Wait (15 s at most) until server job <job> on host <h> listens on TCP <port>, or has ended
# (then its own output says why). For servers whose client does not retry.
wait_server() { # h port job
	local i
	for ((i = 0; i < 40; i++)); do
		[ "$(B status "$3")" = running ] || return 1
		B run --timeout 10 "$1" -- ss -Hltn "sport = :$2" | grep -q . && return 0
		sleep 0.3
	done
	return 1
}
