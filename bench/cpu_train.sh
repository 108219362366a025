#!/usr/bin/env bash
# CPU training-step benchmark: Weft (weftc compile + weft-run) against JAX
# (jit, CPU, from PyPI) on the same GPT, batch, sequence and dtype, in one run.
#
#   bench/cpu_train.sh [build-dir]      (after `make build`)
#
# Prints a table of median step time and tokens/s. JAX goes into a venv in
# the build directory on first use.
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench"
source "$(dirname "$0")/common.sh"
bench_setup "$BUILD" "$OUT"
"$BUILD/bin/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" -o "$OUT/bundle" 2>/dev/null
rm -f "$OUT/weft.jsonl"
"$BUILD/bin/weft-run" "$OUT/bundle" --data "$OUT/data.bin" --tokenizer bytes \
  --steps $((STEPS + 2)) --metrics "$OUT/weft.jsonl" 2>/dev/null
"$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
  --steps "$STEPS" > "$OUT/jax.json"

python3 - "$OUT/weft.jsonl" "$OUT/jax.json" "$BATCH" "$SEQ" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])][2:]   # skip 2 warm-up steps
weft = statistics.median(r["step_s"] for r in rows)
jax = json.load(open(sys.argv[2]))
tokens = int(sys.argv[3]) * int(sys.argv[4])
print(f"GPT 6 layers, d=384, seq {sys.argv[4]}, batch {sys.argv[3]}, fp32, AdamW; "
      f"median of {len(rows)} steps")
print(f"| system | median step (s) | tokens/s | vs JAX |")
print(f"|---|---|---|---|")
print(f"| Weft (weft-run, CPU) | {weft:.3f} | {tokens / weft:.0f} | {jax['median_step_s'] / weft:.2f}x |")
print(f"| JAX {jax['jax']} (jit, CPU) | {jax['median_step_s']:.3f} | {jax['tokens_per_s']:.0f} | 1.00x |")
PY
