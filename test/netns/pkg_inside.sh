# What package.t and package_rpm.t check of an installed package, inside its private root
# (prepended to each test's inside.sh): the plugin found by NCCL's short name and by its
# path, its WARN shown at NCCL's defaults, the tools on PATH, the Prometheus rules. Needs $so, the plugin's path.
installed_checks() {
	echo "--- NCCL_NET_PLUGIN=roce NCCL_DEBUG=WARN nccl-net-driver roce"
	NCCL_NET_PLUGIN=roce NCCL_DEBUG=WARN NCCL_IB_HCA='=rn-no-such-device' \
		nccl-net-driver roce >/tmp/probe.out 2>&1
	rc=$?
	cat /tmp/probe.out
	[ $rc -eq 0 ] || { echo "FAIL: probe exited $rc"; exit 1; }
	grep -q "loaded net plugin RoCE (v12) from libnccl-net-roce.so" /tmp/probe.out ||
		{ echo "FAIL: the plugin was not found by its short name"; exit 1; }
	grep -q "NCCL WARN .*NET/RoCE : no RoCE device: " /tmp/probe.out ||
		{ echo "FAIL: no WARN under NCCL_DEBUG=WARN with NCCL_DEBUG_SUBSYS unset"; exit 1; }
	echo "--- NCCL_NET_PLUGIN=$so (an absolute path)"
	NCCL_DEBUG=WARN NCCL_IB_HCA='=rn-no-such-device' nccl-net-driver --plugin "$so" \
		>/tmp/probe.out 2>&1 || { cat /tmp/probe.out; echo "FAIL: by path"; exit 1; }
	grep -q "loaded net plugin RoCE (v12) from $so" /tmp/probe.out ||
		{ cat /tmp/probe.out; echo "FAIL: not loaded by its path"; exit 1; }
	for t in roce-doctor roce-policy-routing nccl-net-bench; do
		command -v $t >/dev/null || { echo "FAIL: $t not on PATH"; exit 1; }
	done
	# the shipped Prometheus rules where the README names them, valid for promtool
	r=/usr/share/nccl-net-roce/prometheus/nccl-net-roce.rules.yml
	[ -f "$r" ] || { echo "FAIL: no $r"; exit 1; }
	[ -f /usr/share/nccl-net-roce/nhc/roce.nhc ] || { echo "FAIL: no NHC check"; exit 1; }
	if command -v promtool >/dev/null; then
		promtool check rules "$r" || { echo "FAIL: promtool check rules $r"; exit 1; }
	fi
}
