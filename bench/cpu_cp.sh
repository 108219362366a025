#!/usr/bin/env bash
# Context parallelism on the CPU: a long-sequence GPT (bench/gpt-long.json,
# 4 layers of width 256, sequence CP_SEQ, default 1024, where attention is a
# large share of the step) trained by Weft on one rank and with cp=2 (two
# ranks over Gloo: each holds 2 of the 4 load-balanced chunks of every
# sequence, attention runs as a ring), against the same model in JAX on one
# device (jit), same global batch, sequence and dtype, in one run.
#
#   bench/cpu_cp.sh [build-dir]       (after `make build`; JAX as cpu_train.sh;
#                                     CP_SEQ and CP_BATCH set the sizes)
#
# Prints a table of median step time and tokens/s (bench/compare.py).
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench-cp"
source "$(dirname "$0")/common.sh"
CONFIG=bench/gpt-long.json
SEQ=${CP_SEQ:-1024}
BATCH=${CP_BATCH:-2}
bench_setup "$BUILD" "$OUT"

weft_bench "" 1 2 weft1
weft_bench "cp=2" 2 1 weft2
"$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" \
  --seq "$SEQ" --steps "$STEPS" > "$OUT/jax1.json"

python3 bench/compare.py "$OUT" "$BATCH" "$SEQ" \
  "GPT (bench/gpt-long.json), batch $BATCH x seq $SEQ, fp32, median step" \
  "Weft, 1 rank (OpenBLAS 2 threads)=weft1.jsonl" \
  "Weft, cp=2 (2 ranks x 1 thread, Gloo)=weft2.jsonl" \
  "JAX, 1 device (jit)=jax1.json"
