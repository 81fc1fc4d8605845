# shellcheck shell=bash
# Helpers for the roce-doctor netns tests (test/netns/doctor_*.t), on top of lib.sh.
#   doc NS ARGS...           run build/roce-doctor in NS; output in $OUT, status in $RC
#   causes FILE NETDEV       sorted cause ids of NETDEV's findings in a --json host report
#   jq_py FILE EXPR          evaluate a Python expression over the JSON in FILE (as d)
. "$(dirname "$0")/lib.sh"
DOCTOR=${RN_DOCTOR:-$RN_TOP/build/roce-doctor}
[ -x "$DOCTOR" ] || rn_fail "build/roce-doctor missing: run make first"
command -v python3 >/dev/null || rn_skip "skip: python3 (JSON checks) not installed"

doc() {
	local ns=$1
	shift
	OUT=$(ip netns exec "$ns" "$DOCTOR" "$@" 2>&1)
	RC=$?
}

jq_py() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
r = eval(sys.argv[2])
print(" ".join(str(x) for x in r) if isinstance(r, (list, tuple)) else r)' "$1" "$2"
}

causes() {
	jq_py "$1" "sorted(set(f['cause'] for n in d['nics'] if n['netdev'] == '$2' for f in n['findings']))"
}

# expect_rc WANT WHAT: the last doc call exited WANT
expect_rc() {
	[ "$RC" -eq "$1" ] || { echo "$OUT"; rn_fail "$2: exit $RC, want $1"; }
}

# has WORD LIST WHAT
has() {
	case " $2 " in *" $1 "*) ;; *) rn_fail "$3: '$1' not in '$2'" ;; esac
}
hasnt() {
	case " $2 " in *" $1 "*) rn_fail "$3: '$1' in '$2'" ;; esac
}

# Two hosts for peer/serve tests:
#   doc_bed                 A (RN_HOST: nic0 198.18.0.11, nic1 .12) and B (nic0 198.18.0.21,
#                           nic1 .22), one bridge (RN_PEER's br0), one subnet, IPv6 off
#   serve_start LOG ARGS... roce-doctor serve --netdev nic0,nic1 ARGS in B, in the background;
#                           its pid in SRV (the doctor itself); returns once it listens
#   bg_start VAR CMD...     any other background process, its pid in VAR
# Everything started here is killed at exit (before the namespaces go).
HOSTILE=$RN_TOP/test/netns/doctor_hostile.py
_doc_pids=()
_doc_kill() {
	local p
	for p in "${_doc_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${_doc_pids[@]}"; do wait "$p" 2>/dev/null; done
	return 0
}
_rn_atexit+=(_doc_kill)

doc_bed() {
	rn_host_ns 2
	A=$RN_HOST
	rn_ns B hostb
	rn_in "$B" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	rn_veth "$B" nic0 "$RN_PEER" bp0 br0 198.18.0.21/24
	rn_veth "$B" nic1 "$RN_PEER" bp1 br0 198.18.0.22/24
}

bg_start() {
	local var=$1
	shift
	"$@" &
	printf -v "$var" '%s' "$!"
	_doc_pids+=("$!")
}

serve_start() {
	local log=$1
	shift
	# `ip netns exec` execs the doctor: $! is serve itself (its /proc, its kill)
	bg_start SRV ip netns exec "$B" "$DOCTOR" serve --netdev nic0,nic1 "$@" >"$log" 2>&1
	wait_log "$SRV" "$log" 'listening on' "roce-doctor serve did not start listening"
}

# wait_log PID LOG PATTERN WHAT: until LOG holds PATTERN (10 s; sooner when PID ends), else
# the log and WHAT as the failure
wait_log() {
	local i
	for i in $(seq 100); do
		grep -q "$3" "$2" && return 0
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	cat "$2"
	rn_fail "$4"
}

# wait_file FILE WHAT: until FILE is non-empty (10 s)
wait_file() {
	local i
	for i in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
	rn_fail "$2"
}
