#!/usr/bin/env bash
# Data parallelism on the CPU: Weft with one rank and with dp=2 (two ranks
# over Gloo, weft-run --nproc 2) against JAX with one device and with the
# batch split over two host devices (jit/GSPMD), on the same GPT, global
# batch, sequence and dtype, in one run.
#
#   bench/cpu_dp.sh [build-dir]      (after `make build`; JAX as cpu_train.sh)
#
# Prints a table of median step time and tokens/s.
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench-dp"
source "$(dirname "$0")/common.sh"
bench_setup "$BUILD" "$OUT"

weft_bench "" 1 2 weft1
weft_bench "dp=2" 2 1 weft2
"$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
  --steps "$STEPS" > "$OUT/jax1.json"
XLA_FLAGS=--xla_force_host_platform_device_count=2 "$VENV/bin/python" bench/jax_gpt.py \
  --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" --steps "$STEPS" --dp 2 > "$OUT/jax2.json"

python3 - "$OUT" "$BATCH" "$SEQ" <<'PY'
import json, statistics, sys
out, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def weft(name):
    rows = [json.loads(l) for l in open(f"{out}/{name}.jsonl")][2:]
    return statistics.median(r["step_s"] for r in rows)
jax = {n: json.load(open(f"{out}/{n}.json"))["median_step_s"] for n in ("jax1", "jax2")}
rows = [("Weft, 1 rank (OpenBLAS 2 threads)", weft("weft1")),
        ("Weft, dp=2 (2 ranks x 1 thread, Gloo)", weft("weft2")),
        ("JAX, 1 CPU device", jax["jax1"]),
        ("JAX, dp=2 (2 host devices, GSPMD)", jax["jax2"])]
print(f"GPT 6 layers, d=384, seq {seq}, global batch {batch}, fp32, AdamW; median of steps")
print("| system | median step (s) | tokens/s |")
print("|---|---|---|")
for name, s in rows:
    print(f"| {name} | {s:.3f} | {batch * seq / s:.0f} |")
PY
