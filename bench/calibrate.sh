#!/usr/bin/env bash
# The cost model against measured steps on this machine: weft-calibrate
# measures GEMM, elementwise, attention, library-kernel and Gloo rates into
# a topology file per placement (N ranks of T OpenBLAS threads, all at work
# at once), `weftc compile --topology FILE --report=json` predicts the
# benchmark GPT's step from it, and weft-run measures the same step.
#
#   bench/calibrate.sh [build-dir]   (after `make build`)
#
# Prints, per placement, the predicted step (the train schedule's programs
# as they run: the step program once), the measured median step (STEPS
# steps after two warm-up ones) and their ratio. The profiles are left in
# the build directory (bench/cpu-calibrated-<placement>.json) for
# `weftc compile --topology`.
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench"
source "$(dirname "$0")/common.sh"
mkdir -p "$OUT"
python3 -c "import os; open('$OUT/data.bin','wb').write(os.urandom(1 << 20))"
PLACEMENTS=${PLACEMENTS:-"one:1:2: dp2:2:1:dp=2 tp2:2:1:tp=2"}
for p in $PLACEMENTS; do
  IFS=: read -r label ranks threads plan <<< "$p"
  profile="$OUT/cpu-calibrated-$label.json"
  OPENBLAS_NUM_THREADS=$threads "$BUILD/bin/weft-calibrate" --ranks "$ranks" \
    --threads "$threads" > "$profile"
  "$BUILD/bin/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
    ${plan:+--plan $plan} --topology "$profile" --report=json \
    > "$OUT/predicted-$label.json" 2>/dev/null
  weft_bench "$plan" "$ranks" "$threads" "measured-$label"
done
python3 - "$OUT" $PLACEMENTS <<'PY'
import json, statistics, sys
out, placements = sys.argv[1], sys.argv[2:]
print("| placement | predicted step (s) | measured median step (s) | predicted / measured |")
print("|---|---|---|---|")
for p in placements:
    label, ranks, threads, plan = p.split(":")
    report = json.load(open(f"{out}/predicted-{label}.json"))
    predicted = next(x["seconds"] for x in report["programs"] if x["program"] == "step")
    steps = [json.loads(l)["step_s"] for l in open(f"{out}/measured-{label}.jsonl")][2:]
    measured = statistics.median(steps)
    name = plan or "one rank"
    print(f"| {name}, {ranks} rank(s) x {threads} thread(s) | {predicted:.3f} | {measured:.3f} | {predicted / measured:.2f} |")
PY
