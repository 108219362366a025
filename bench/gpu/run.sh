#!/usr/bin/env bash
# One prepared run for a lent GPU (H200), under 8 minutes: build, then check
# what the GPU backend has so far against the CPU.
#
#   bash bench/gpu/run.sh [build-dir]
#
# Today (issue 5, first slice) that is every fused kernel of the GPT-2-tiny
# and Llama-tiny training steps, run from the bundle's cubin and compared
# with the CPU kernels (test/runtime/gpu_kernels_test.cpp). The end-to-end
# parity, attention, GEMM and MFU measurements the issue asks for join here
# as the GPU runtime lands; until then this script claims nothing else.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
make build BUILD="$BUILD"
echo "== generated kernels: GPU vs CPU =="
"$BUILD/test/weft-gpu-tests" --gtest_brief=0 2>&1 | tee "$BUILD/gpu-kernels.log"
if grep -q "SKIPPED" "$BUILD/gpu-kernels.log"; then
  echo "gpu/run.sh: the GPU tests were skipped (no usable device)" >&2
  exit 1
fi
echo "gpu/run.sh: every fused kernel matches the CPU on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
