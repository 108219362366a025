#!/usr/bin/env bash
# The main job on this machine: prepare a text file every machine has as a
# token-shard dataset, compile a small GPT-2 (byte vocabulary) into a
# training bundle with health probes, train it, sample from it, and end with
# a chart of the loss, MFU and gradient norm and a Chrome trace of three
# steps. Before that, import the three model families at full size and show
# a composite op expanded into primitives.
set -euo pipefail
BUILD=${1:-build}
BIN="$BUILD/bin"
OUT="$BUILD/demo"
mkdir -p "$OUT"

echo "== weftc import: Hugging Face configs to weft IR =="
for model in gpt2-124m llama3-8b mixtral-8x7b; do
  start=$(date +%s%N)
  "$BIN/weftc" import --config "examples/configs/$model.json" --batch 8 --seq 1024 \
    --dtype bf16 --summary -o "$OUT/$model.mlir"
  end=$(date +%s%N)
  printf '   %s: %s lines of IR in %d ms -> %s\n' "$model" \
    "$(wc -l < "$OUT/$model.mlir")" "$(( (end - start) / 1000000 ))" "$OUT/$model.mlir"
done


echo
echo "== weft-opt: causal GQA attention expanded by weft-decompose =="
cat > "$OUT/attention.mlir" <<'MLIR'
func.func @attention(%q: tensor<1x4x4x8xf32>, %kv: tensor<1x4x2x8xf32>) -> tensor<1x4x4x8xf32> {
  %0, %lse = weft.attention %q, %kv, %kv scale = 0.35355339 causal : tensor<1x4x4x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>
  return %0 : tensor<1x4x4x8xf32>
}
MLIR
"$BIN/weft-opt" "$OUT/attention.mlir" --pass-pipeline='builtin.module(weft-decompose{ops=weft.attention})'

echo
echo "== weftc compile + weft-run: train a byte-level GPT-2 on the CPU =="
TEXT=/usr/share/common-licenses/GPL-3
[ -f "$TEXT" ] || TEXT=README.md
rm -rf "$OUT/dataset"
"$BIN/weft-data" prepare "$TEXT" -o "$OUT/dataset" --tokenizer bytes
# --topology cpu:1 gives the metrics a peak to take MFU against; --probes
# adds each layer's activation RMS and largest magnitude, attention entropy
# (computed inside the attention's kernel) and gradient norm.
"$BIN/weftc" compile --config examples/configs/gpt2-tiny.json --batch 16 --seq 64 \
  --topology cpu:1 --probes activations,attention,gradients -o "$OUT/bundle"
rm -f "$OUT/metrics.jsonl"
# Tiny GEMMs run faster on one BLAS thread than two.
OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} "$BIN/weft-run" "$OUT/bundle" \
  --data "$OUT/dataset" --steps 1200 --lr 5e-3 --seed 1 \
  --metrics "$OUT/metrics.jsonl" --save "$OUT/weights.safetensors" --sample 200 \
  --trace "$OUT/trace.json" --profile-steps 600:602
python3 - "$OUT/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
first, last = rows[0]["loss"], sum(r["loss"] for r in rows[-50:]) / 50
rate = sorted(r["tokens_per_s"] for r in rows)[len(rows) // 2]
print(f"loss {first:.3f} at step 1 (ln 256 = 5.545) -> {last:.3f} "
      f"(mean of the last 50 steps); median {rate:.0f} tokens/s")
PY
"$BIN/weft-plot" "$OUT/metrics.jsonl" -o "$OUT/chart.svg" \
  --metrics loss,mfu,grad_norm,probes/transformer.h.1/act_rms
echo "   open $OUT/chart.svg in a browser; load $OUT/trace.json in https://ui.perfetto.dev"
