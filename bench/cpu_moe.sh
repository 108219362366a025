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
# Prints a table of median step time and tokens/s.
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

python3 - "$OUT" "$BATCH" "$SEQ" <<'PY'
import json, statistics, sys
out, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def weft(name):
    rows = [json.loads(l) for l in open(f"{out}/{name}.jsonl")][2:]
    return statistics.median(r["step_s"] for r in rows)
jax1 = json.load(open(f"{out}/jax1.json"))["median_step_s"]
rows = [("Weft, 1 rank (OpenBLAS 2 threads)", weft("weft1")),
        ("Weft, ep=2 (2 ranks x 1 thread, Gloo)", weft("weft2")),
        ("JAX, 1 device (jit, ragged_dot)", jax1)]
print(f"Mixtral-tiny, batch {batch} x seq {seq}, fp32, median step")
print(f"{'':42} {'step ms':>9} {'tokens/s':>10} {'vs JAX':>7}")
for name, s in rows:
    print(f"{name:42} {s * 1e3:9.1f} {batch * seq / s:10.0f} {jax1 / s:7.2f}")
PY
