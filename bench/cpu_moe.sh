#!/usr/bin/env bash
# Expert parallelism on the CPU: Mixtral-tiny (4 experts, top-2, dropless)
# trained by Weft on one rank and with ep=2 (two ranks over Gloo: each holds
# 2 experts, tokens go to their experts' ranks by all-to-all and back),
# against the same model in JAX on one device (jit, experts as
# jax.lax.ragged_dot), same global batch, sequence and dtype, in one run.
#
#   bench/cpu_moe.sh [build-dir]      (after `make build`; JAX as cpu_train.sh;
#                                     MOE_SEQ sets the sequence, default 128)
#
# Prints a table of median step time and tokens/s (bench/compare.py).
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench-moe"
source "$(dirname "$0")/common.sh"
CONFIG=examples/configs/mixtral-tiny.json
SEQ=${MOE_SEQ:-128} # Mixtral-tiny has 128 positions.
bench_setup "$BUILD" "$OUT"

weft_bench "" 1 2 weft1
weft_bench "ep=2" 2 1 weft2
"$VENV/bin/python" bench/jax_moe.py --config "$CONFIG" --batch "$BATCH" \
  --seq "$SEQ" --steps "$STEPS" > "$OUT/jax1.json"

python3 bench/compare.py "$OUT" "$BATCH" "$SEQ" \
  "Mixtral-tiny, batch $BATCH x seq $SEQ, fp32, median step" \
  "Weft, 1 rank (OpenBLAS 2 threads)=weft1.jsonl" \
  "Weft, ep=2 (2 ranks x 1 thread, Gloo)=weft2.jsonl" \
  "JAX, 1 device (jit, ragged_dot)=jax1.json"
