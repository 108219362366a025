#!/usr/bin/env bash
# FP8 recipes on the CPU: a 4-layer, d=256 byte-level GPT (bench/gpt-fp8.json)
# trained 300 steps on real text (the GPL-3 text every Debian machine has)
# from one seed in bf16 (f32 master weights), in f32, and with each FP8
# recipe (f32 masters, FP8 weight GEMMs emulated exactly; tensorwise also
# with FP8 storage, the GPU's FP8 GEMMs decoded), then the final
# loss of each against bf16's: issue 15 asks for 0.25 % (DeepSeek-V3's
# bar). Step times are the emulation's (f32 GEMMs plus quantization), not
# FP8 speed; JAX bf16 (jit) at the same sizes is the timing peer.
#
#   bench/cpu_fp8.sh [build-dir]    (after `make build`; JAX as cpu_train.sh)
#
# Env: STEPS (300), BATCH (4), SEQ (128), LR (3e-3); ONLY="label ..." reruns
# just those runs (the table reads every run's metrics); BIN (the build's
# bin/) the weftc and weft-run to use.
set -euo pipefail
BUILD=${1:-build}
OUT="$BUILD/bench-fp8"
STEPS=${STEPS:-300}
BATCH=${BATCH:-4}
SEQ=${SEQ:-128}
LR=${LR:-3e-3}
CONFIG=bench/gpt-fp8.json
BIN=${BIN:-$BUILD/bin}
source "$(dirname "$0")/common.sh"
bench_setup "$BUILD" "$OUT"
TEXT=/usr/share/common-licenses/GPL-3
[ -f "$TEXT" ] || TEXT=README.md

# run LABEL [weftc compile flags]
run() {
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $1 "* ]]; then return; fi
  local bundle="$OUT/bundle-$1"
  "$BIN/weftc" compile --config "$CONFIG" --batch "$BATCH" --seq "$SEQ" \
    ${2:-} -o "$bundle" 2>/dev/null
  rm -f "$OUT/$1.jsonl"
  OPENBLAS_NUM_THREADS=2 "$BIN/weft-run" "$bundle" --data "$TEXT" \
    --tokenizer bytes --steps "$STEPS" --lr "$LR" --seed 1 \
    --metrics "$OUT/$1.jsonl" 2>/dev/null
}
run bf16 "--dtype bf16"
run f32
for recipe in tensorwise tensorwise-delayed rowwise blockwise mxfp8; do
  run "fp8-$recipe" "--fp8 $recipe"
done
# Per-tensor FP8 GEMMs proper: FP8 codes in the arena and FP8 GEMMs (the
# CPU decodes the codes for OpenBLAS), as a GPU bundle runs them.
run fp8-tensorwise-stored "--fp8 tensorwise --fp8-storage on"
"$VENV/bin/python" bench/jax_gpt.py --config "$CONFIG" --batch "$BATCH" \
  --seq "$SEQ" --steps 5 --dtype bf16 > "$OUT/jax-bf16.json"

python3 - "$OUT" "$BATCH" "$SEQ" <<'PY'
import json, os, statistics, sys
out, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def rows(label):
    return [json.loads(l) for l in open(os.path.join(out, label + ".jsonl"))]
def final(rs):  # The last 20 steps' mean: one batch's loss is noisy.
    return sum(r["loss"] for r in rs[-20:]) / 20
base = final(rows("bf16"))
print(f"GPT 4 x 256 (bench/gpt-fp8.json), batch {batch} x seq {seq}, "
      f"{len(rows('bf16'))} steps on GPL-3 text, seed 1")
print(f"{'run':<22}{'final loss':>12}{'vs bf16':>10}{'step ms':>10}")
for label in ["bf16", "f32", "fp8-tensorwise", "fp8-tensorwise-delayed",
              "fp8-rowwise", "fp8-blockwise", "fp8-mxfp8",
              "fp8-tensorwise-stored"]:
    rs = rows(label)
    loss = final(rs)
    ms = 1000 * statistics.median(r["step_s"] for r in rs[2:])
    print(f"{label:<22}{loss:>12.4f}{100 * (loss / base - 1):>+9.2f}%{ms:>10.1f}")
jax = json.load(open(os.path.join(out, "jax-bf16.json")))
print(f"{'JAX bf16 (jit)':<22}{'':>12}{'':>10}{1000 * jax['median_step_s']:>10.1f}")
PY
