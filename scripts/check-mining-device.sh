#!/usr/bin/env bash
# Optional check, not part of `make test`: SRI's own CPU miner (`mining_device` from
# integration_tests_sv2 0.6.0) mines through configuration D as a second, independent SV2
# miner, beside our SV2 fleet, and the SRI pool accepts its shares.
#
# It is a separate install: integration_tests_sv2 brings SRI's monitoring stack and
# test helpers, which the normal build leaves out (about 15-20 minutes cold on 2 cores).
# The binary goes to $STRATUM_BENCH_TOOLS (default ~/.cache/stratum-bench/tools).
set -euo pipefail
cd "$(dirname "$0")/.."

tools="${STRATUM_BENCH_TOOLS:-$HOME/.cache/stratum-bench/tools}"
device="$tools/bin/mining_device"
if [[ ! -x "$device" ]]; then
  echo "check-mining-device: installing mining_device (integration_tests_sv2 0.6.0) into $tools"
  cargo install integration_tests_sv2 --version =0.6.0 --locked --bin mining_device --root "$tools"
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/stratum-bench/target}"
cargo build --release --locked --quiet --bin stratum-bench
bench="$CARGO_TARGET_DIR/release/stratum-bench"

work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
metrics=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bench" run scenarios/config-d.toml --duration 60s --set warmup=10s \
  --set 'sides=["sv2-d"]' --set miners.count=1 --set "link.farm_port=$port" \
  --metrics-bind "127.0.0.1:$metrics" --out "$work/run" >"$work/run.log" 2>&1 &
run=$!
trap 'kill $run 2>/dev/null || true; kill ${miner:-0} 2>/dev/null || true' EXIT

# The run prints the farm-side address and the pool's authority key once the pool serves.
key=""
for _ in $(seq 1 60); do
  key=$(sed -n 's/.*pool key \([1-9A-HJ-NP-Za-km-z]*\)).*/\1/p' "$work/run.log" | head -n1)
  [[ -n "$key" ]] && break
  sleep 1
done
[[ -n "$key" ]] || { echo "check-mining-device: the run did not start:"; cat "$work/run.log"; exit 1; }

# A slowed-down device (1 ms between hashes, one core) on the same farm-side link. It
# measures its hashrate unslowed, so it advertises a thousandth of that, which is about
# what it hashes.
"$device" --address-pool "127.0.0.1:$port" --pubkey-pool "$key" --handicap 1000 --cores 1 \
  --nominal-hashrate-multiplier 0.001 --id-user sri-mining-device >"$work/mining_device.log" 2>&1 &
miner=$!
wait "$run"
kill "$miner" 2>/dev/null || true

ours=$(grep -c '"kind":"share_submitted"' "$work/run/events/miners-sv2-d.jsonl" || true)
accepted=$(grep '"kind":"share_judged"' "$work/run/events/tap-sv2-d.jsonl" | grep -c '"verdict":"accepted"' || true)
echo "check-mining-device: our SV2 miner submitted $ours shares; the SRI pool accepted $accepted in all"
if (( accepted > ours )); then
  echo "check-mining-device: OK, SRI's mining_device mined through configuration D ($((accepted - ours)) or more of its shares accepted)"
else
  echo "check-mining-device: FAILED, no share of mining_device was accepted (logs in $work)"
  exit 1
fi
