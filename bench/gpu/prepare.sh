#!/usr/bin/env bash
# Prepares, here (no GPU needed), everything bench/gpu/run.sh needs on a lent
# GPU, whose image has CUDA, PyTorch and CuPy but none of Weft's build
# dependencies (MLIR, Abseil, Gloo, OpenBLAS):
#   - the generated-kernel and attention replay data (prepare_kernels.py);
#   - GPU bundles (--target cuda): GPT-2-tiny f32 and bf16 for parity (and
#     f32 without GEMM epilogues), Mixtral-tiny f32 for parity, and a
#     ~1B GPT (examples/configs/gpt-1b.json, bf16, batch 8 x 1024) to time;
#   - 1 MiB of random bytes to train on;
#   - runtime.tar.xz: weft-run and weft-gpu-bench with
#     the shared libraries they need that are not the C/C++ runtime (which
#     the image has).
#
#   bench/gpu/prepare.sh [build-dir] [out-dir]     (after `make build`)
# then run bench/gpu/run.sh there with `bench/gpu/data` carried.
set -euo pipefail
BUILD=${1:-build}
DATA=${2:-bench/gpu/data}
cd "$(dirname "$0")/../.."
source bench/common.sh
rm -rf "$DATA"
bench_setup "$BUILD" "$DATA" # VENV (numpy), $DATA/data.bin
"$VENV/bin/pip" install -q numpy >/dev/null
"$VENV/bin/python" bench/gpu/prepare_kernels.py "$BUILD/bin/weftc" "$DATA"

WEFTC="$BUILD/bin/weftc"
# Each model twice, for the GPU (--target cuda) and for the CPU it is
# compared with: a bundle holds what its target executes (GPU scratch, bf16
# read as stored), so the CPU runs its own compilation of the same model and
# seed. Adam eps 1e-4, as the CPU parity tests: with 1e-8 a gradient that
# cancels to ~1e-10 turns a summation-order difference into a full step.
for dtype in f32 bf16; do
  "$WEFTC" compile --config examples/configs/gpt2-tiny.json --batch 2 --seq 16 \
    --dtype "$dtype" --adam-eps 1e-4 --target cuda -o "$DATA/parity-$dtype-cuda"
  "$WEFTC" compile --config examples/configs/gpt2-tiny.json --batch 2 --seq 16 \
    --dtype "$dtype" --adam-eps 1e-4 -o "$DATA/parity-$dtype-cpu"
done
# The same f32 model with plain GEMMs: if cuBLASLt's epilogues (GELU) and
# Weft's ops disagree, parity fails above and passes here.
"$WEFTC" compile --config examples/configs/gpt2-tiny.json --batch 2 --seq 16 \
  --adam-eps 1e-4 --target cuda --gemm-epilogues=false -o "$DATA/parity-f32-plain-cuda"
cp -r "$DATA/parity-f32-cpu" "$DATA/parity-f32-plain-cpu"
# Mixtral-tiny: the experts' grouped matmuls through cuBLAS's grouped GEMM.
for target in cuda cpu; do
  "$WEFTC" compile --config examples/configs/mixtral-tiny.json --batch 2 --seq 16 \
    --adam-eps 1e-4 --target "$target" -o "$DATA/parity-moe-f32-$target"
done
# Per-tensor FP8 weight GEMMs: the GPU multiplies FP8 codes through
# cuBLASLt's scale pointers (--fp8-storage auto), the CPU the dequantized
# f32 values.
# Row-wise: per-row scales as cuBLASLt's outer vectors.
for target in cuda cpu; do
  "$WEFTC" compile --config examples/configs/gpt2-tiny.json --batch 2 --seq 16 \
    --adam-eps 1e-4 --fp8 tensorwise --target "$target" -o "$DATA/parity-fp8-f32-$target"
  "$WEFTC" compile --config examples/configs/gpt2-tiny.json --batch 2 --seq 16 \
    --adam-eps 1e-4 --fp8 rowwise --target "$target" -o "$DATA/parity-fp8-rows-f32-$target"
done
"$WEFTC" compile --config examples/configs/gpt-1b.json --batch 8 --seq 1024 \
  --dtype bf16 --target cuda -o "$DATA/gpt-1b"

RT=$(mktemp -d)
mkdir -p "$RT/lib"
BINS="$BUILD/bin/weft-run $BUILD/bin/weft-gpu-bench"
cp $BINS "$RT/"
ldd $BINS | awk '/=>/ {print $3}' |
  sort -u | grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  xargs -I{} cp -L {} "$RT/lib/"
tar -C "$RT" -cJf "$DATA/runtime.tar.xz" .
rm -rf "$RT"
du -sh "$DATA"
echo "prepared $DATA: carry it to the GPU and run bench/gpu/run.sh"
