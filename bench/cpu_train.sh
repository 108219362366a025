#!/usr/bin/env bash
# CPU training-step benchmark: Weft (weftc compile + weft-run) against JAX
# (jit, CPU, from PyPI) on the same GPT, batch, sequence and dtype, in one run.
#
#   bench/cpu_train.sh [build-dir] [baseline-build-dir]   (after `make build`)
#
# Prints a table of median step time and tokens/s. JAX goes into a venv in
# the build directory on first use. With a baseline build directory (another
# checkout's build, e.g. of the commit before a change), its weftc and
# weft-run train the same model on the same data in the same command, as a
# "before" row.
set -euo pipefail
BUILD=${1:-build}
BASELINE=${2:-}
OUT="$BUILD/bench"
source "$(dirname "$0")/common.sh"
bench_setup "$BUILD" "$OUT"
# One Weft run: weftc and weft-run of build $1, metrics to $2.
weft() {
  "$1/bin/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" -o "$OUT/bundle-$3" 2>/dev/null
  rm -f "$2"
  "$1/bin/weft-run" "$OUT/bundle-$3" --data "$OUT/data.bin" --tokenizer bytes \
    --steps $((STEPS + 2)) --metrics "$2" 2>/dev/null
}
weft "$BUILD" "$OUT/weft.jsonl" new
if [ -n "$BASELINE" ]; then
  weft "$BASELINE" "$OUT/baseline.jsonl" baseline
else
  rm -f "$OUT/baseline.jsonl"
fi
"$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
  --steps "$STEPS" > "$OUT/jax.json"

python3 - "$OUT/weft.jsonl" "$OUT/jax.json" "$BATCH" "$SEQ" "$OUT/baseline.jsonl" "$BASELINE" <<'PY'
import json, os, statistics, sys
def median(path):
    rows = [json.loads(l) for l in open(path)][2:]   # skip 2 warm-up steps
    return statistics.median(r["step_s"] for r in rows), len(rows)
weft, steps = median(sys.argv[1])
jax = json.load(open(sys.argv[2]))
tokens = int(sys.argv[3]) * int(sys.argv[4])
print(f"GPT 6 layers, d=384, seq {sys.argv[4]}, batch {sys.argv[3]}, fp32, AdamW; "
      f"median of {steps} steps")
print(f"| system | median step (s) | tokens/s | vs JAX |")
print(f"|---|---|---|---|")
print(f"| Weft (weft-run, CPU) | {weft:.3f} | {tokens / weft:.0f} | {jax['median_step_s'] / weft:.2f}x |")
if os.path.exists(sys.argv[5]):
    base, _ = median(sys.argv[5])
    print(f"| Weft baseline ({sys.argv[6]}) | {base:.3f} | {tokens / base:.0f} | {jax['median_step_s'] / base:.2f}x |")
print(f"| JAX {jax['jax']} (jit, CPU) | {jax['median_step_s']:.3f} | {jax['tokens_per_s']:.0f} | 1.00x |")
PY
