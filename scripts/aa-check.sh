#!/usr/bin/env bash
# The A/A check: K runs, each with two identical SV1 sides (sv1 and sv1-b) on one
# simulated network, seeds 1..K. Prints, per run, the verdict rows called significant, and
# overall the share of tested rows flagged: with the statistics right it is about 5% or
# less (a benchmark of the statistics, not a test: it takes K x ~75 s).
#
#   scripts/aa-check.sh [K] [extra stratum-bench run args...]
set -euo pipefail
K=${1:-20}
shift || true
BIN=${STRATUM_BENCH:-${CARGO_TARGET_DIR:-target}/release/stratum-bench}
OUT=${AA_OUT:-runs/aa-check}
[ -x "$BIN" ] || { echo "no $BIN: run 'make build' first (or set STRATUM_BENCH)" >&2; exit 1; }
mkdir -p "$OUT"
for seed in $(seq 1 "$K"); do
  dir="$OUT/seed-$seed"
  rm -rf "$dir"
  "$BIN" run scenarios/sv1-baseline.toml --out "$dir" --duration 60s \
    --set warmup=10s --set seed="$seed" --set 'sides=["sv1", "sv1-b"]' \
    --set network.block_interval=10s --set network.hashrate_share=0.5 \
    --metrics-bind 127.0.0.1:0 "$@" > "$dir.log" 2>&1 || { echo "seed $seed: run failed (see $dir.log)"; continue; }
done
python3 - "$OUT" "$K" <<'PY'
import json, sys, pathlib
out, k = pathlib.Path(sys.argv[1]), int(sys.argv[2])
tested = flagged = runs = 0
for seed in range(1, k + 1):
    p = out / f"seed-{seed}" / "summary.json"
    if not p.exists():
        continue
    runs += 1
    rows = json.loads(p.read_text()).get("verdict", {}).get("sv1-b", [])
    with_test = [r for r in rows if r.get("p_value") is not None]
    hits = [r["metric"] for r in with_test if r["significant"]]
    tested += len(with_test)
    flagged += len(hits)
    print(f"seed {seed:2}: {len(with_test)} rows tested, significant: {', '.join(hits) or 'none'}")
share = 100 * flagged / tested if tested else float("nan")
print(f"{runs} runs, {tested} rows tested, {flagged} flagged significant: {share:.1f}%"
      f"; runs with any flagged: see above")
PY
