#!/usr/bin/env bash
# bf16 on the CPU: the benchmark GPT (bench/gpt-bench.json) trained by Weft
# in f32 and in bf16 with f32 master weights, against JAX (jit) in f32 and
# in bf16 (f32 parameters cast to bf16 for the forward and backward), same
# batch, sequence and AdamW, in one run. Issue 15 asks the bf16 step to stay
# within 1.5x of the f32 step.
#
#   bench/cpu_bf16.sh [build-dir]    (after `make build`; JAX as cpu_train.sh)
#
# Prints a table of median step time and tokens/s (bench/compare.py).
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench-bf16"
source "$(dirname "$0")/common.sh"
bench_setup "$BUILD" "$OUT"

weft_bench "" 1 2 f32
weft_bench "" 1 2 bf16 "--dtype bf16"
for dtype in f32 bf16; do
  "$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" \
    --seq "$SEQ" --steps "$STEPS" --dtype "$dtype" > "$OUT/jax-$dtype.json"
done

python3 bench/compare.py "$OUT" "$BATCH" "$SEQ" \
  "GPT (bench/gpt-bench.json), batch $BATCH x seq $SEQ, AdamW, median step" \
  "JAX f32 (jit)=jax-f32.json" \
  "Weft f32=f32.jsonl" \
  "Weft bf16 (f32 masters)=bf16.jsonl" \
  "JAX bf16 (jit, f32 masters)=jax-bf16.json"
