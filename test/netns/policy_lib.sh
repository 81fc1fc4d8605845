# shellcheck shell=bash
# The preamble of the policy_*.t tests (scripts/roce-policy-routing), sourced in lib.sh's
# place: the test dialect of lib.sh, root and `ip netns` (else skip), and
#   TOOL   the script under test
#   T      a temp dir of the test's own
#   st     the script's --state-dir arguments, in T
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rn_require_netns
# shellcheck disable=SC2034 # used by the tests
TOOL=$RN_TOP/scripts/roce-policy-routing
rn_tmpdir T
# shellcheck disable=SC2034
st=(--state-dir "$T/state")
