#!/usr/bin/env bash
# What the health probes cost: the benchmark GPT trained without probes and
# with each kind (weftc compile --probes activations, attention, gradients,
# all), ROUNDS rounds interleaved (alternately reversed) so drift on the
# host hits every variant alike. There is no peer here: the comparison is the same bundle without
# probes (PyTorch and JAX users add such probes as forward hooks or extra
# outputs, whose cost depends on how they are written).
#
#   bench/probes.sh [build-dir]   (after `make build`)
#
# Prints each variant's median step over every round's steps 3 and on,
# and its overhead against no probes (STEPS, default 5, steps a run after
# two warm-up steps).
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench"
source "$(dirname "$0")/common.sh"

ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
python3 -c "import os; open('$OUT/data.bin','wb').write(os.urandom(1 << 20))"
VARIANTS="none activations attention gradients all"
for v in $VARIANTS; do
  flag=""
  [ "$v" = none ] || flag="--probes $v"
  "$BUILD/bin/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
    $flag -o "$OUT/bundle-probes-$v" 2>/dev/null
done
REVERSED=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
for r in $(seq "$ROUNDS"); do
  # Odd rounds run the variants in order, even rounds in reverse, so a
  # host that drifts during a round weighs on every variant alike.
  order=$VARIANTS
  [ $((r % 2)) -eq 0 ] && order=$REVERSED
  for v in $order; do
    rm -f "$OUT/probes-$v-$r.jsonl" # weft-run appends to its metrics.
    OPENBLAS_NUM_THREADS=2 "$BUILD/bin/weft-run" "$OUT/bundle-probes-$v" \
      --data "$OUT/data.bin" --tokenizer bytes --steps $((STEPS + 2)) \
      --metrics "$OUT/probes-$v-$r.jsonl" 2>/dev/null
  done
done
python3 - "$OUT" "$ROUNDS" $VARIANTS <<'PY'
import json, statistics, sys
out, rounds, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def median(v):
    steps = []
    for r in range(1, rounds + 1):
        steps += [json.loads(l)["step_s"] for l in open(f"{out}/probes-{v}-{r}.jsonl")][2:]
    return statistics.median(steps), len(steps)
base, _ = median("none")
print("| probes | median step (s) | steps | overhead |")
print("|---|---|---|---|")
for v in variants:
    m, n = median(v)
    print(f"| {v} | {m:.3f} | {n} | {'—' if v == 'none' else f'{100 * (m / base - 1):+.1f}%'} |")
PY
