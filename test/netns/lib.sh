# shellcheck shell=bash
# Helpers for network-namespace tests (test/netns/*.t). Source it from a bash test:
#   . "$(dirname "$0")/lib.sh"
#   rn_require_netns                 # exit 77 (skip) unless root with working `ip netns`
#   rn_host_ns 3                     # RN_HOST with nic0..nic2 on RN_PEER's bridge
#   rn_in "$RN_HOST" ip -4 addr
# Everything created here (namespaces, temp dirs) carries this run's pid in its name and is
# removed by the EXIT trap; nothing outside those namespaces is touched. Addresses come
# from 198.18.0.0/15 only.
set -u

# shellcheck disable=SC2034 # used by the tests
RN_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RN_TEST=$(basename "$0" .t)
_rn_netns=()
_rn_tmp=()
_rn_seq=0

rn_log() { echo "[$RN_TEST] $*"; }
rn_skip() { echo "SKIP: $RN_TEST: $*"; exit 77; }
# A layer may look at a failure first and call it its own, exiting otherwise (the bed's
# test/vm/lib/test.sh: a guest NIC that stopped transmitting is the bed's failure, exit 200).
_rn_onfail=()
rn_fail() {
	local i
	for i in "${_rn_onfail[@]}"; do "$i" "$*"; done
	echo "FAIL: $RN_TEST: $*" >&2
	exit 1
}

_rn_atexit=() # a library's own cleanups (route_lib.sh), run first

_rn_cleanup() {
	local rc=$? i
	for i in "${_rn_atexit[@]}"; do "$i"; done
	for ((i = ${#_rn_netns[@]} - 1; i >= 0; i--)); do
		ip netns del "${_rn_netns[i]}" 2>/dev/null
	done
	for i in "${_rn_tmp[@]}"; do rm -rf -- "$i"; done
	exit $rc
}
trap _rn_cleanup EXIT
trap 'exit 130' INT TERM

rn_require_netns() {
	[ "$(id -u)" -eq 0 ] || rn_skip "skip: needs root (network namespaces)"
	command -v ip >/dev/null || rn_skip "skip: iproute2 'ip' not installed"
	local probe="rn-probe-$$"
	ip netns add "$probe" 2>/dev/null || rn_skip "skip: cannot create a network namespace"
	_rn_netns+=("$probe")
	ip netns exec "$probe" true 2>/dev/null || rn_skip "skip: 'ip netns exec' does not work here"
	rn_ns_del "$probe"
}

# rn_ns VAR TAG: create a namespace with a unique name (lo up), stored in VAR
# (the locals are _rn_-named: a caller's VAR of the same name would be the local's)
rn_ns() {
	_rn_seq=$((_rn_seq + 1))
	local _rn_n="rn-$2-$$-$_rn_seq"
	ip netns add "$_rn_n" || rn_fail "ip netns add $_rn_n failed"
	_rn_netns+=("$_rn_n")
	ip -n "$_rn_n" link set lo up
	printf -v "$1" '%s' "$_rn_n"
}
rn_ns_del() {
	local i
	ip netns del "$1" 2>/dev/null
	for i in "${!_rn_netns[@]}"; do [ "${_rn_netns[i]}" = "$1" ] && unset '_rn_netns[i]'; done
	_rn_netns=("${_rn_netns[@]}")
}

# rn_tmpdir VAR: a temp dir removed at exit
rn_tmpdir() {
	local _rn_d
	_rn_d=$(mktemp -d "${TMPDIR:-/tmp}/rn-$RN_TEST-$$-XXXXXX") || rn_fail "mktemp failed"
	_rn_tmp+=("$_rn_d")
	printf -v "$1" '%s' "$_rn_d"
}

rn_in() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

# rn_bridge NS BR [ADDR/PLEN]: a bridge (up) in NS
rn_bridge() {
	ip -n "$1" link add "$2" type bridge || rn_fail "cannot create bridge $2 in $1"
	ip -n "$1" link set "$2" up
	[ $# -lt 3 ] || ip -n "$1" addr add "$3" dev "$2"
}

# rn_veth NS IF PEERNS PEERIF [BR] [ADDR/PLEN]: veth IF in NS <-> PEERIF in PEERNS (both up),
# PEERIF enslaved to bridge BR when given ('' for none), ADDR on IF when given
rn_veth() {
	local ns=$1 ifn=$2 pns=$3 pif=$4 br=${5-} addr=${6-}
	ip -n "$ns" link add "$ifn" type veth peer name "$pif" netns "$pns" ||
		rn_fail "cannot create veth $ifn/$pif"
	[ -z "$br" ] || ip -n "$pns" link set "$pif" master "$br"
	ip -n "$pns" link set "$pif" up
	[ -z "$addr" ] || ip -n "$ns" addr add "$addr" dev "$ifn"
	ip -n "$ns" link set "$ifn" up
}

# rn_host_ns N [MGMT]: the multi-NIC test bed. Sets
#   RN_PEER    namespace holding bridge br0 (RN_PEER_IP 198.18.0.254/24 on it)
#   RN_HOST    namespace with NICs nic0..nic<N-1> (RN_NICS), RN_IP[i] = 198.18.0.<11+i>/24,
#              each a veth whose other end (hp<i>) sits on br0: one L2 segment, one subnet
# With MGMT=1 also a management NIC "mgmt0" 198.19.0.2/24 (peer 198.19.0.1 in RN_PEER)
# holding main's default route, as on a real server.
rn_host_ns() {
	local n=$1 mgmt=${2:-0} i
	rn_ns RN_PEER peer
	rn_ns RN_HOST host
	rn_in "$RN_PEER" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	rn_in "$RN_HOST" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	RN_PEER_IP=198.18.0.254
	rn_bridge "$RN_PEER" br0 "$RN_PEER_IP/24"
	RN_NICS=() RN_IP=()
	for ((i = 0; i < n; i++)); do
		RN_NICS+=("nic$i")
		RN_IP+=("198.18.0.$((11 + i))")
		rn_veth "$RN_HOST" "nic$i" "$RN_PEER" "hp$i" br0 "198.18.0.$((11 + i))/24"
	done
	if [ "$mgmt" = 1 ]; then
		rn_veth "$RN_HOST" mgmt0 "$RN_PEER" mgmtp '' 198.19.0.2/24
		ip -n "$RN_PEER" addr add 198.19.0.1/24 dev mgmtp
		ip -n "$RN_HOST" route add default via 198.19.0.1 dev mgmt0
	fi
}

# Snapshot of what the policy-routing tool may change in NS (rules, routes, ARP sysctls)
rn_snapshot() {
	local ns=$1
	echo "== rules"
	ip -n "$ns" -4 rule show
	echo "== routes"
	ip -n "$ns" -4 route show table all
	echo "== sysctls"
	rn_in "$ns" bash -c 'for f in /proc/sys/net/ipv4/conf/*/{arp_ignore,arp_announce,arp_filter,rp_filter}; do echo "$f=$(<"$f")"; done'
}

# rn_assert_same A B WHAT: files A and B equal, else show the diff and fail
rn_assert_same() {
	diff -u "$1" "$2" >&2 || rn_fail "$3"
}
