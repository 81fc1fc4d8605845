# perftest on the bed: server on host 1, client on host 0, one NIC pair (rxe<nic> on both).
# Source after lib/test.sh.
# shellcheck shell=bash

# perf_pair <tool> <port> <nic> <timeout> [tool args...]: prints the client's output.
# PERF_CPU=1: each end's CPU time too, as two last lines "perftest cpu s: client|server U S"
# (user and system seconds of the tool's process, from the guest shell's `times` after it
# exits; the client's includes its few grep/sleep of the retry loop).
perf_pair() {
	local tool=$1 port=$2 nic=$3 tmo=$4 g0 g1 srv rc sout
	shift 4
	g0=$(B gid 0 "$nic") && g1=$(B gid 1 "$nic") || { echo "no RoCE v2 IPv4 GID on rxe$nic"; return 1; }
	# stdbuf -oL into the job's file (no pipe): a killed tool still leaves its lines.
	# (`times` from the shell that ran the tool: its second line is the children's user and
	# system time; a builtin, so nothing of its own is counted)
	srv=$(bg --timeout $((tmo + 30)) 1 -- bash -c 'stdbuf -oL "$@"; rc=$?
		[ -z "'"${PERF_CPU:-}"'" ] || { echo "perftest-cpu-times"; times; }; exit $rc' _ \
		"$tool" -d "rxe$nic" -x "$g1" -p "$port" -F "$@")
	wait_listen 1 "$port" || { B kill "$srv"; return 1; }
	# Retry the client while the server is not accepting yet (a few tries, then give up).
	B run --timeout $((tmo + 20)) 0 -- bash -c '
		for try in 1 2 3 4 5; do
			timeout '"$tmo"' stdbuf -oL "$@" >/tmp/perf.out 2>&1
			rc=$?
			grep -q "Couldn'"'"'t connect" /tmp/perf.out || break
			sleep 0.5
		done
		cat /tmp/perf.out
		[ -z "'"${PERF_CPU:-}"'" ] || { echo "perftest-cpu-times"; times; }
		exit $rc' _ "$tool" -d "rxe$nic" -x "$g0" -p "$port" -F "$@" "$(bed_ip 1 "$nic")" |
		perf_cpu_line client
	rc=${PIPESTATUS[0]}
	[ $rc -eq 0 ] || B kill "$srv"
	sout=$(B wait "$srv" 2>/dev/null)
	[ -z "${PERF_CPU:-}" ] || perf_cpu_line server <<<"$sout" | grep '^perftest cpu'
	return $rc
}

# The output with its `times` lines (after the marker) turned into one line:
# "perftest cpu s: <role> <user> <system>" in seconds.
perf_cpu_line() { # role
	awk -v role="$1" '/^perftest-cpu-times$/ {m = 1; next}
		m && ++n == 2 { for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t[i] = a[1] * 60 + a[2] }
			printf "perftest cpu s: %s %.3f %.3f\n", role, t[1], t[2]; next }
		m {next} {print}'
}

# A figure of perftest's result line (the numeric line after the "#bytes" header; the last one
# when the output holds several runs).
perf_field() { # field-number < output
	awk -v f="$1" '/^ *#bytes/ {h = 1; next} h && $1 ~ /^[0-9]+$/ {v = $f; h = 0} END {print v}'
}

# perf_measure <field> <tool> <port> <nic> <timeout> [tool args...]: like perf_pair, but
# perftest's clock calibration can fail in a busy TCG guest ("Correlation coefficient r^2 ...
# < 0.9": every figure then reads 0). Such a run measured nothing, so it is run again (twice
# at most, on another port) and said so; a failed transfer is returned as is.
perf_measure() {
	local field=$1 tool=$2 port=$3 out rc v
	shift 3
	for _ in 1 2 3; do
		out=$(perf_pair "$tool" "$port" "$@" 2>&1)
		rc=$?
		echo "$out"
		[ $rc -eq 0 ] || return $rc
		v=$(perf_field "$field" <<<"$out")
		if ! grep -q 'r^2' <<<"$out" && awk -v v="$v" 'BEGIN {exit !(v + 0 > 0)}'; then
			return 0
		fi
		echo "(perftest could not calibrate its clock in the busy guest: figures void, measuring again)"
		port=$((port + 1000))
	done
	return 0
}
