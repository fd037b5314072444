#!/usr/bin/env bash
# Runs the tests with cargo-nextest (.config/nextest.toml) in the release profile, names
# the tests the profile leaves out and what they need, and ends with one line of counts
# (run, skipped, failed) from the run's JUnit record. Every test runs whatever fails first;
# the exit status is nextest's.
#   scripts/run-tests.sh NEXTEST PROFILE [NEXTEST ARGS...]
# NEXTEST: the cargo-nextest binary; PROFILE: default (`make test`) or core (`make test-core`).
set -uo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 NEXTEST PROFILE [NEXTEST ARGS...]" >&2; exit 64; }
nextest=$1
profile=$2
shift 2
# nextest keeps its records under the workspace's own target/, whatever CARGO_TARGET_DIR is.
junit="$(cd "$(dirname "$0")/.." && pwd)/target/nextest/$profile/junit.xml"
rm -f "$junit"

"$nextest" nextest run --release --locked --profile "$profile" "$@"
status=$?

# The tests the profile's filter left out of this selection (listed with and without it),
# named by what they need: the filter itself lives in .config/nextest.toml alone. A listing
# that fails is said, not counted as none.
list() {
  "$nextest" nextest list --release --locked --profile "$profile" --message-format oneline "$@" ||
    echo "tests: cannot list the tests ($*)" >&2
}
skipped=0
if [[ $profile == default ]]; then
  left_out=$(comm -23 <(list --ignore-default-filter "$@" | sort) <(list "$@" | sort))
  skipped=$(grep -c . <<<"$left_out" || true)
  core=$(grep -c ' bitcoin_core::' <<<"$left_out" || true)
  tp=$(grep -c ' template_provider::' <<<"$left_out" || true)
  other=$((skipped - core - tp))
  [[ $core -eq 0 ]] || echo "skipped: $core tests need STRATUM_BENCH_BITCOIN_NODE (make test-core builds a Bitcoin Core and runs them)"
  [[ $tp -eq 0 ]] || echo "skipped: $tp tests need STRATUM_BENCH_SV2_TP (a build of sv2-tp; docs/testing.md)"
  [[ $other -eq 0 ]] || echo "skipped: $other other tests the default filter leaves out (.config/nextest.toml)"
fi

if [[ -f $junit ]]; then
  # <testsuites name="nextest-run" tests="N" failures="F" errors="E" ...>
  head=$(grep -m1 -o '<testsuites [^>]*>' "$junit")
  attr() { sed -n "s/.* $1=\"\([0-9]*\)\".*/\1/p" <<<"$head"; }
  run=$(attr tests)
  failed=$(($(attr failures) + $(attr errors)))
  echo "the run's record of every test and its time: $junit (scripts/test-times.sh reads it)"
  echo "tests: $((run - failed)) passed, $failed failed, $skipped skipped"
else
  echo "tests: no JUnit record at $junit: the build or nextest failed before any test ran" >&2
  [[ $status -ne 0 ]] || status=1
fi
exit $status
