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
# Prints a table of median step time and tokens/s.
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

python3 - "$OUT" "$BATCH" "$SEQ" <<'PY'
import json, statistics, sys
out, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def weft(name):
    rows = [json.loads(l) for l in open(f"{out}/{name}.jsonl")][2:]
    return statistics.median(r["step_s"] for r in rows)
jax1 = json.load(open(f"{out}/jax1.json"))["median_step_s"]
rows = [("Weft, 1 rank (OpenBLAS 2 threads)", weft("weft1")),
        ("Weft, cp=2 (2 ranks x 1 thread, Gloo)", weft("weft2")),
        ("JAX, 1 device (jit)", jax1)]
print(f"GPT (bench/gpt-long.json), batch {batch} x seq {seq}, fp32, median step")
print(f"{'':42} {'step ms':>9} {'tokens/s':>10} {'vs JAX':>7}")
for name, s in rows:
    print(f"{name:42} {s * 1e3:9.1f} {batch * seq / s:10.0f} {jax1 / s:7.2f}")
PY
