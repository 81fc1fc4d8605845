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
