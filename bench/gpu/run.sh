#!/usr/bin/env bash
# The prepared run for a lent GPU (H200). The device image has CUDA, PyTorch
# and CuPy but not Weft's build dependencies, so everything is built here and
# carried; the device only replays.
#
#   here:   build/bench-venv/bin/python bench/gpu/prepare_kernels.py \
#               build/bin/weftc bench/gpu/data        # needs numpy, no GPU
#   device: bash bench/gpu/run.sh                     # carry: bench/gpu/data
#
# Today (issue 5, first slice) it checks every fused kernel of the
# GPT-2-tiny and Llama-tiny training steps (the bundle's sm_90 cubin, run
# with the launch shapes the runtime uses, against the CPU kernels' outputs
# on the same inputs) and the fused attention kernels
# (runtime/gpu/kernels/attention.cu: forward, dq, dk/dv) against float64
# references, GQA and causal, head dims 64 and 128. The end-to-end parity, attention, GEMM and MFU
# measurements the issue asks for join here as the GPU runtime lands; until
# then this script claims nothing else.
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=${1:-bench/gpu/data}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
if [ ! -f "$DATA/gpt2-tiny/kernels.json" ]; then
  echo "gpu/run.sh: no prepared kernels in $DATA; run prepare_kernels.py first" >&2
  exit 1
fi
echo "== generated kernels: GPU vs CPU =="
python3 bench/gpu/check_kernels.py "$DATA"
echo "== attention: Weft vs PyTorch SDPA =="
python3 bench/gpu/bench_attention.py "$DATA"
