#!/usr/bin/env bash
# The A/A check, calibration measured: K runs of two identical sides on one simulated
# network (seeds 1..K; the seed also draws which side starts first), then, per verdict
# metric, the share of runs whose raw p-value is under 0.05 (calibrated: about 5%), a
# Kolmogorov-Smirnov test of the p-values against uniform, and the share of runs with any
# row flagged after Benjamini-Hochberg (at most about 5%). A benchmark of the statistics,
# not a test: it takes K x (DURATION + about 25 s).
#
#   scripts/aa-check.sh [--pair sv1|sv2-c] [--runs K] [--duration 90s] [--block-interval 5s]
#                       [--recompute] [extra run args...]
#
# --recompute   analyse runs already there again (`report --recompute`) before the tables:
#               after a change to the analysis, the same runs read by the new code.
# --pair sv1    sv1 against sv1-b, the built-in SV1 pool on both (default)
# --pair sv2-c  sv2-c against sv2-c-b: configuration C twice (SRI pool and translator)
# Runs go to $AA_OUT (default runs/aa-check/PAIR); a run already there is read again, not
# run again, so an interrupted check resumes.
set -euo pipefail
PAIR=sv1
K=30
DURATION=90s
BLOCK_INTERVAL=5s
RECOMPUTE=
while [ $# -gt 0 ]; do
  case "$1" in
    --pair) PAIR=$2; shift 2 ;;
    --runs) K=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --block-interval) BLOCK_INTERVAL=$2; shift 2 ;;
    --recompute) RECOMPUTE=1; shift ;;
    *) break ;;
  esac
done
case "$PAIR" in
  sv1) SCENARIO=scenarios/sv1-baseline.toml; SIDES='["sv1", "sv1-b"]'; BASE=sv1; OTHER=sv1-b ;;
  sv2-c) SCENARIO=scenarios/sv1-vs-sv2.toml; SIDES='["sv2-c", "sv2-c-b"]'; BASE=sv2-c; OTHER=sv2-c-b ;;
  *) echo "--pair: $PAIR is not sv1 or sv2-c" >&2; exit 2 ;;
esac
BIN=${STRATUM_BENCH:-${CARGO_TARGET_DIR:-target}/release/stratum-bench}
OUT=${AA_OUT:-runs/aa-check/$PAIR}
[ -x "$BIN" ] || { echo "no $BIN: run 'make build' first (or set STRATUM_BENCH)" >&2; exit 1; }
mkdir -p "$OUT"
for seed in $(seq 1 "$K"); do
  dir="$OUT/seed-$seed"
  if [ -f "$dir/summary.json" ]; then
    [ -n "$RECOMPUTE" ] && { "$BIN" report --recompute "$dir" > /dev/null 2>&1 || echo "seed $seed: recompute failed"; }
    continue
  fi
  rm -rf "$dir"
  # Half the network's hashrate ours; at 5 s blocks about 18 tips in 90 s.
  "$BIN" run "$SCENARIO" --out "$dir" --duration "$DURATION" \
    --set warmup=10s --set seed="$seed" --set "sides=$SIDES" --set "baseline=\"$BASE\"" \
    --set network.block_interval="$BLOCK_INTERVAL" --set network.hashrate_share=0.5 \
    --metrics-bind 127.0.0.1:0 "$@" > "$dir.log" 2>&1 || { echo "seed $seed: run failed (see $dir.log)"; continue; }
  echo "seed $seed: done"
done
python3 - "$OUT" "$K" "$OTHER" <<'PY'
import json, math, sys, pathlib
out, k, other = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def ks_uniform(ps):
    """Kolmogorov-Smirnov distance of p-values from uniform, and its asymptotic p-value."""
    ps = sorted(ps)
    n = len(ps)
    d = max(max((i + 1) / n - p, p - i / n) for i, p in enumerate(ps))
    x = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d
    p = 2 * sum((-1) ** (j - 1) * math.exp(-2 * j * j * x * x) for j in range(1, 101))
    return d, min(max(p, 0.0), 1.0)

by_metric, runs, any_flag = {}, 0, 0
# Rows with at least this many tips on each side: below it a row says little.
MIN_TIPS = 20
enough, enough_low = 0, 0
new_block = []
for seed in range(1, k + 1):
    p = out / f"seed-{seed}" / "summary.json"
    if not p.exists():
        continue
    runs += 1
    rows = json.loads(p.read_text()).get("verdict", {}).get(other, [])
    flagged = [r["metric"] for r in rows if r.get("significant")]
    any_flag += bool(flagged)
    for r in rows:
        if r.get("p_value") is not None:
            by_metric.setdefault(r["metric"], []).append(r["p_value"])
            if min(r.get("units") or [0]) >= MIN_TIPS:
                enough += 1
                enough_low += r["p_value"] < 0.05
    nb = next((r for r in rows if r["metric"] == "new_prevhash_job_ms"), {})
    if nb.get("delta") is not None:
        new_block.append(nb["delta"])
    delta = f"{nb['delta']:+.3f} ms" if nb.get("delta") is not None else "-"
    print(f"seed {seed:2}: new-block job {other} - twin {delta}; flagged after BH: {', '.join(flagged) or 'none'}")
print(f"\n{runs} runs of {other} against its twin")
print(f"{'metric':24} {'tested':>6} {'raw p<0.05':>10} {'KS D':>6} {'KS p':>6}")
for metric, ps in sorted(by_metric.items()):
    low = sum(p < 0.05 for p in ps) / len(ps)
    d, ks_p = ks_uniform(ps)
    print(f"{metric:24} {len(ps):6} {100 * low:9.1f}% {d:6.3f} {ks_p:6.3f}")
if enough:
    print(f"rows with at least {MIN_TIPS} tips a side: {enough}, raw p < 0.05 in {enough_low} ({100 * enough_low / enough:.1f}%)")
if new_block:
    print(f"new-block job differences by seed: {min(new_block):+.3f} to {max(new_block):+.3f} ms")
if runs:
    print(f"runs with any row flagged after BH: {any_flag} of {runs} ({100 * any_flag / runs:.1f}%)")
PY
