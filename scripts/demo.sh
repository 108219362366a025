#!/usr/bin/env bash
# The main job on this machine: import the three model families at full size,
# then evaluate a randomly initialised small GPT-2 on a text file with the
# reference evaluator, and show a composite op expanded into primitives.
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
echo "== weftc eval: random GPT-2 (byte vocabulary) on a text file =="
TEXT=/usr/share/common-licenses/GPL-3
[ -f "$TEXT" ] || TEXT=README.md
"$BIN/weftc" eval --config examples/configs/gpt2-tiny.json --tokens "$TEXT" \
  --tokenizer bytes --batch 4 --seq 128 --logits "$OUT/logits.safetensors"
echo "   (a random model predicts about uniformly: the loss is near ln(256))"
echo "   logits written to $OUT/logits.safetensors"

echo
echo "== weft-opt: causal GQA attention expanded by weft-decompose =="
cat > "$OUT/attention.mlir" <<'MLIR'
func.func @attention(%q: tensor<1x4x4x8xf32>, %kv: tensor<1x4x2x8xf32>) -> tensor<1x4x4x8xf32> {
  %0, %lse = weft.attention %q, %kv, %kv scale = 0.35355339 causal : tensor<1x4x4x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>
  return %0 : tensor<1x4x4x8xf32>
}
MLIR
"$BIN/weft-opt" "$OUT/attention.mlir" --pass-pipeline='builtin.module(weft-decompose{ops=weft.attention})'
