# shellcheck shell=bash
# Helpers for the route-awareness netns tests (sourced by test/netns/route_*.t and
# conn_paste.t), on top of the one test library (lib.sh: rn_skip, rn_fail, the EXIT
# trap). Every namespace is named rnr<pid>-<role> (rn_role_ns: it runs in $(...)) and
# deleted on exit; addresses are from 198.18.0.0/15 only; nothing touches the initial
# namespace.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
RN_PC=$RN_TOP/build/test/rn-pathcheck
RN_ID=rnr$$
RN_FAILS=0

# rn_role_ns runs in $(...), so cleanup finds our namespaces by this run's own prefix.
rn_cleanup() {
	local ns
	for ns in $(ip netns list | awk '{print $1}' | grep "^$RN_ID-"); do
		ip netns del "$ns" 2>/dev/null
	done
}

rn_require() {
	rn_require_netns
	_rn_atexit+=(rn_cleanup)
	if [ ! -x "$RN_PC" ]; then
		make -C "$RN_TOP" -s "build/test/rn-pathcheck" >/dev/null || {
			echo "FAIL: cannot build rn-pathcheck"
			exit 1
		}
	fi
}

# rn_role_ns ROLE: create namespace $RN_ID-ROLE with lo up and kernel-default sysctls.
rn_role_ns() {
	local ns=$RN_ID-$1 k
	ip netns add "$ns" || exit 1
	ip -n "$ns" link set lo up
	for k in arp_ignore arp_announce arp_filter rp_filter accept_local; do
		ip netns exec "$ns" sysctl -qw "net.ipv4.conf.all.$k=0" "net.ipv4.conf.default.$k=0"
	done
	echo "$ns"
}

# rn_switch NS: a bridge br0 in NS.
rn_switch() {
	ip -n "$1" link add br0 type bridge
	ip -n "$1" link set br0 up
}

# rn_nic NS DEV SWNS PORT [CIDR]: veth DEV in NS, its peer PORT on SWNS's br0.
rn_nic() {
	local ns=$1 dev=$2 sw=$3 port=$4 cidr=${5:-}
	ip -n "$ns" link add "$dev" type veth peer name "$port" netns "$sw" || exit 1
	ip -n "$sw" link set "$port" master br0 up
	[ -n "$cidr" ] && ip -n "$ns" addr add "$cidr" dev "$dev"
	ip -n "$ns" link set "$dev" up
}

rn_mac() { ip -n "$1" -o link show dev "$2" | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'; }

# rn_sysctl NS KEY=VAL...: e.g. rn_sysctl $H net.ipv4.conf.all.arp_ignore=1
rn_sysctl() {
	local ns=$1
	shift
	ip netns exec "$ns" sysctl -qw "$@"
}

# rn_policy NS SUBNET DEV:IP...: the seed's per-NIC tables 101.. and rules.
rn_policy() {
	local ns=$1 subnet=$2 t=101 pair
	shift 2
	for pair in "$@"; do
		ip -n "$ns" route replace "$subnet" dev "${pair%%:*}" src "${pair#*:}" table $t
		ip -n "$ns" rule add from "${pair#*:}" lookup $t priority $t
		t=$((t + 1))
	done
}

# rn_unpolicy NS: drop rules 101..120 and flush their tables.
rn_unpolicy() {
	local ns=$1 t
	for t in $(seq 101 120); do
		while ip -n "$ns" rule del priority $t 2>/dev/null; do :; done
		ip -n "$ns" route flush table $t 2>/dev/null
	done
}

# rn_conn_pair: the per-connection layout. Our host $H (eth0/eth1 with policy routing
# and fixed sysctls) and a peer $P whose two NICs p0/p1 share the subnet with kernel
# defaults (ARP flux), on one switch $SW. p0 joins the bridge last, so the bridge floods
# to it first: its (wrong) answer for p1's IP tends to arrive first, which is how flux
# shows up on real switches. Sets SW H P MAC0 MAC1.
rn_conn_pair() {
	SW=$(rn_role_ns sw)
	rn_switch "$SW"
	H=$(rn_role_ns host)
	rn_nic "$H" eth0 "$SW" h0 198.18.0.1/24
	rn_nic "$H" eth1 "$SW" h1 198.18.0.2/24
	rn_policy "$H" 198.18.0.0/24 eth0:198.18.0.1 eth1:198.18.0.2
	rn_sysctl "$H" net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2
	P=$(rn_role_ns peer)
	rn_nic "$P" p1 "$SW" q1 198.18.0.11/24
	rn_nic "$P" p0 "$SW" q0 198.18.0.10/24
	MAC0=$(rn_mac "$P" p0)
	MAC1=$(rn_mac "$P" p1)
}

# rn_pc NS ARGS...: run rn-pathcheck inside NS.
rn_pc() {
	local ns=$1
	shift
	ip netns exec "$ns" "$RN_PC" "$@"
}

# rn_expect NAME OUTPUT DEV FIELD=VALUE...: check one "nic DEV ..." line.
rn_expect() {
	local name=$1 out=$2 dev=$3 line kv
	shift 3
	line=$(printf '%s\n' "$out" | grep "^nic $dev ")
	for kv in "$@"; do
		case " $line " in
		*" $kv "*) ;;
		*)
			echo "FAIL [$name] $dev: expected $kv in: $line"
			RN_FAILS=$((RN_FAILS + 1))
			return 1
			;;
		esac
	done
	echo "ok   [$name] $dev: $*"
}

# rn_expect_cause NAME OUTPUT DEV CAUSE [present|absent]
rn_expect_cause() {
	local name=$1 out=$2 dev=$3 cause=$4 want=${5:-present} line causes
	line=$(printf '%s\n' "$out" | grep "^nic $dev ")
	causes=$(printf '%s\n' "$line" | sed -n 's/.*causes=\([^ ]*\).*/\1/p')
	case ",$causes," in
	*",$cause,"*) [ "$want" = present ] && { echo "ok   [$name] $dev: cause $cause"; return 0; } ;;
	*) [ "$want" = absent ] && { echo "ok   [$name] $dev: no cause $cause"; return 0; } ;;
	esac
	echo "FAIL [$name] $dev: cause $cause expected $want in: $line"
	RN_FAILS=$((RN_FAILS + 1))
	return 1
}

rn_finish() {
	if [ "$RN_FAILS" -ne 0 ]; then
		echo "$RN_FAILS check(s) failed"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}
