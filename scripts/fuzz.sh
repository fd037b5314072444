#!/usr/bin/env bash
# Runs each fuzz target (fuzz/fuzz_targets/*.rs) for a given time with cargo-fuzz on the
# nightly toolchain, starting from its seeds in fuzz/seeds/<target>, and prints per target
# the executions run and what it found. What the fuzzer learns (new inputs, crashes) goes
# under the build cache, never into the repository: a crash's input is copied into
# fuzz/seeds/<target>/ by hand once fixed, where `make test` replays it for good.
#
#   scripts/fuzz.sh SECONDS CARGO_FUZZ WORK_DIR [TARGET ...]
set -euo pipefail

seconds=$1 cargo_fuzz=$2 work=$3
shift 3
cd "$(dirname "$0")/.."
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi

if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
export PATH="$(dirname "$cargo_fuzz"):$PATH"
# Address sanitizer by default: the crates beneath us (Noise, Cap'n Proto, buffers) have
# unsafe code. FUZZ_SANITIZER=none runs about twice as many inputs a second.
sanitizer=${FUZZ_SANITIZER:-address}

mkdir -p "$work/logs"
cargo +nightly fuzz build --fuzz-dir fuzz --target-dir "$work/target" -s "$sanitizer" "${targets[@]:0:1}" >/dev/null
failed=()
printf '%-24s %12s %8s %s\n' target executions seconds found
for t in "${targets[@]}"; do
  mkdir -p "$work/corpus/$t" "$work/artifacts/$t"
  log="$work/logs/$t.log"
  status=0
  # The first corpus directory gets what the fuzzer learns; the seeds are read only.
  cargo +nightly fuzz run --fuzz-dir fuzz --target-dir "$work/target" -s "$sanitizer" "$t" \
    "$work/corpus/$t" "fuzz/seeds/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=10 -max_len=65536 \
    -artifact_prefix="$work/artifacts/$t/" >"$log" 2>&1 || status=$?
  runs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | grep -oE '[0-9]+' | head -1 || true)
  if [[ $status -eq 0 ]]; then
    found="nothing"
  else
    found="CRASH: $(ls "$work/artifacts/$t" | tail -1) (log: $log)"
    failed+=("$t")
    runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  fi
  printf '%-24s %12s %8s %s\n' "$t" "${runs:-?}" "$seconds" "$found"
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "crashes in: ${failed[*]}; reproduce with: cargo +nightly fuzz run --fuzz-dir fuzz <target> <artifact>" >&2
  exit 1
fi
