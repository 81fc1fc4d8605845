#!/usr/bin/env bash
# roce-policy-routing --persist --root: for each network manager, starting from the tree in
# golden/<manager>/in, the files written equal golden/<manager>/out (reviewed by hand); a
# rerun writes nothing; --undo gives back the input tree exactly. netplan's YAML is also fed
# to `netplan generate` (when installed) and the networkd files it renders are inspected.
# RN_UPDATE_GOLDEN=1 rewrites the out/ trees (then review them with git diff).
. "$(dirname "$0")/policy_lib.sh"
GOLD=$RN_TOP/test/netns/golden
rn_host_ns 2 1
H=$RN_HOST
# the golden files hold tables 102/103: nic0 and nic1 are ifindex 2 and 3 in a fresh namespace
T0=$((100 + $(rn_in "$H" cat /sys/class/net/nic0/ifindex)))
T1=$((100 + $(rn_in "$H" cat /sys/class/net/nic1/ifindex)))
[ $T0 = 102 ] && [ $T1 = 103 ] || rn_skip "skip: nic0/nic1 are not ifindex 2/3 here; the golden files assume so"
args=(--persist --no-apply --rp-filter 2 --gateway=nic1=198.18.0.254 nic0 nic1)

tree() { (cd "$1" && find . -mindepth 1 | sort); }
for m in netplan networkmanager networkd ifupdown network-scripts; do
	R=$T/root-$m S=$T/state-$m
	cp -a "$GOLD/$m/in" "$R"
	rn_in "$H" "$TOOL" --root "$R" --state-dir "$S" "${args[@]}" >"$T/out" 2>&1 ||
		{ cat "$T/out"; rn_fail "$m: persist failed"; }
	cat "$T/out"
	grep -qx "# persist: network manager $m (detected)" "$T/out" || rn_fail "$m not detected"
	grep -v '^#' "$T/out" && rn_fail "$m: --no-apply ran commands"
	if [ "${RN_UPDATE_GOLDEN:-0}" = 1 ]; then
		rm -rf "$GOLD/$m/out"
		cp -a "$R" "$GOLD/$m/out"
	fi
	diff -ru "$GOLD/$m/out" "$R" >&2 || rn_fail "$m: written files differ from golden/$m/out"
	# created files that may hold secrets for their manager are private
	for f in "$R"/etc/netplan/90-roce-* "$R"/etc/NetworkManager/system-connections/roce-*; do
		[ -e "$f" ] || continue
		[ "$(stat -c %a "$f")" = 600 ] || rn_fail "$f mode $(stat -c %a "$f"), want 600"
	done

	# rerun: nothing to write
	tree "$R" >"$T/tree1"
	rn_in "$H" "$TOOL" --root "$R" --state-dir "$S" "${args[@]}" >"$T/out2" 2>&1 || rn_fail "$m: rerun failed"
	grep -qx '# nothing to change' "$T/out2" || { cat "$T/out2"; rn_fail "$m: rerun changed something"; }
	diff -ru "$GOLD/$m/out" "$R" >&2 || rn_fail "$m: rerun altered files"

	if [ $m = netplan ]; then
		if command -v netplan >/dev/null; then
			G=$T/netplan-gen
			cp -a "$R" "$G"
			netplan generate --root-dir "$G" 2>"$T/np.err" || { cat "$T/np.err"; rn_fail "netplan generate rejected our YAML"; }
			# one line per section, keys sorted, for order-independent checks
			sections() { local s="" l; while IFS= read -r l || [ -n "$s" ]; do
				if [ -z "$l" ]; then [ -n "$s" ] && echo "$s"; s=""; continue; fi
				case $l in '['*) [ -n "$s" ] && echo "$s"; s=$l ;; *) s+=" $l" ;; esac
				done <"$1"; }
			norm() { sections "$1" | while read -r h rest; do echo "$h $(tr ' ' '\n' <<<"$rest" | sort | tr '\n' ' ')"; done; }
			n0=$(norm "$G/run/systemd/network/10-netplan-nic0.network")
			n1=$(norm "$G/run/systemd/network/10-netplan-nic1.network")
			printf '%s\n' "== nic0 (netplan generate)" "$n0" "== nic1" "$n1"
			grep -qx '\[Network\] .*Address=198.18.0.11/24 .*' <<<"$n0" || rn_fail "netplan: nic0 lost its address"
			grep -qx '\[Route\] Destination=198.18.0.0/24 PreferredSource=198.18.0.11 Scope=link Table='$T0' ' <<<"$n0" || rn_fail "netplan: nic0 table route"
			grep -qx '\[RoutingPolicyRule\] From=198.18.0.11 Priority='$T0' Table='$T0' ' <<<"$n0" || rn_fail "netplan: nic0 rule"
			grep -qx '\[Link\] MTUBytes=9000 ' <<<"$n0" || rn_fail "netplan: nic0 lost its other settings"
			grep -qx '\[Network\] .*Address=198.18.0.12/24 .*' <<<"$n1" || rn_fail "netplan: nic1 address"
			grep -qx '\[Route\] Destination=0.0.0.0/0 Gateway=198.18.0.254 Table='$T1' ' <<<"$n1" || rn_fail "netplan: nic1 default"
			grep -qx '\[RoutingPolicyRule\] From=198.18.0.12 Priority='$T1' Table='$T1' ' <<<"$n1" || rn_fail "netplan: nic1 rule"
		else
			echo "netplan not installed: YAML checked against the golden file only"
		fi
	fi

	# undo: the input tree, exactly
	rn_in "$H" "$TOOL" --undo --state-dir "$S" >"$T/out3" 2>&1 || { cat "$T/out3"; rn_fail "$m: undo failed"; }
	diff -ru "$GOLD/$m/in" "$R" >&2 || rn_fail "$m: undo did not restore the input tree"
	[ "$(tree "$R")" = "$(tree "$GOLD/$m/in")" ] || rn_fail "$m: undo left files or dirs behind"
	echo "== $m: golden ok, rerun idempotent, undo exact"
done

# --manager forces a writer; apply + persist, then one undo reverts both
R=$T/root-forced S=$T/state-forced
mkdir -p "$R/etc/network"
rn_snapshot "$H" >"$T/before"
rn_in "$H" "$TOOL" --root "$R" --state-dir "$S" --persist --manager networkd nic0 >"$T/out" 2>&1 ||
	{ cat "$T/out"; rn_fail "forced manager failed"; }
grep -q '^ip rule add from 198.18.0.11' "$T/out" || rn_fail "runtime not applied with --persist"
[ -f "$R/etc/systemd/network/10-roce-nic0.network" ] || rn_fail "--manager networkd ignored"
[ -f "$R/etc/sysctl.d/90-roce-multinic.conf" ] || rn_fail "no sysctl.d file"
rn_in "$H" "$TOOL" --undo --state-dir "$S" >/dev/null || rn_fail "undo failed"
rn_snapshot "$H" >"$T/after"
rn_assert_same "$T/before" "$T/after" "undo after apply+persist"
[ "$(tree "$R")" = "./etc
./etc/network" ] || rn_fail "undo left: $(tree "$R")"
echo PASS
