#!/usr/bin/env bash
# The mesh agent's systemd unit (doc/systemd/roce-doctor-mesh.service) stays usable:
# `systemd-analyze verify` accepts it (with ExecStart pointed at the built doctor, as the
# unit's /usr/sbin one is not installed here), and the options its ExecStart gives are
# options `roce-doctor mesh` takes: the command, run with them (the host list and the
# textfile directory made in a temporary place), gets past its option checks.
set -u
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; exit 1; }
UNIT=doc/systemd/roce-doctor-mesh.service
[ -x build/roce-doctor ] || fail "build/roce-doctor missing: run make first"
exec_line=$(sed -n 's/^ExecStart=//p' "$UNIT")
[ "${exec_line%% *}" = /usr/sbin/roce-doctor ] || fail "ExecStart is not /usr/sbin/roce-doctor"
read -r -a args <<<"${exec_line#* }"
[ "${args[0]}" = mesh ] || fail "ExecStart does not run mesh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if command -v systemd-analyze >/dev/null; then
	sed -e "s#^ExecStart=/usr/sbin/roce-doctor#ExecStart=$PWD/build/roce-doctor#" \
		-e '/^Documentation=/d' "$UNIT" >"$tmp/roce-doctor-mesh.service"
	out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$tmp/roce-doctor-mesh.service" 2>&1)
	rc=$?
	[ $rc -eq 0 ] || { echo "$out"; fail "systemd-analyze verify: exit $rc"; }
	echo "ok: systemd-analyze verify $UNIT"
else
	echo "note: systemd-analyze not installed: the unit's options alone"
fi
# its options, the files in a temporary place; a NIC that does not exist ends it (exit 2)
# after the option checks, which a bad option would have failed first with "--help"
echo "127.0.0.1" >"$tmp/hosts"
mkdir "$tmp/tf"
set -- "${args[@]}"
for ((i = 1; i <= $#; i++)); do
	case ${!i} in
	--hosts) args[i]=$tmp/hosts ;;
	--textfile-dir) args[i]=$tmp/tf ;;
	esac
done
out=$(build/roce-doctor "${args[@]}" --netdev rn-no-such-nic0 --duration 1 2>&1)
rc=$?
grep -q "mesh --help" <<<"$out" && { echo "$out"; fail "the unit's options are refused"; }
[ $rc -eq 2 ] || { echo "$out"; fail "exit $rc, want 2 (no such NIC)"; }
echo "ok: roce-doctor mesh takes the unit's options ($(wc -w <<<"${args[*]}") words)"
