#!/usr/bin/env bash
# PyPI's PyTorch in a venv in the build directory, for the test that runs
# weft-run under a real torchrun (test/tools/weft-run/torchrun-real.test):
# torchrun's elastic agent, its TCPStore and its restarts are PyTorch's
# own, which Inputs/torchrun_agent.py only stands in for.
#
#   scripts/setup-torch.sh BUILD
#
# Never fatal: without PyPI (or with WEFT_NO_TORCH=1) the test is reported
# unsupported, and this says why. PyPI's Linux wheel pulls the CUDA
# libraries (about 5 GB installed); pip's cache makes a second install quick.
set -uo pipefail
BUILD=${1:-build}
VENV="$BUILD/torch-venv"
if [ "${WEFT_NO_TORCH:-0}" = 1 ]; then
  echo "setup-torch: WEFT_NO_TORCH=1: the real-torchrun test will be unsupported"
  exit 0
fi
if [ -x "$VENV/bin/torchrun" ] && "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  exit 0
fi
echo "setup-torch: installing PyTorch from PyPI into $VENV (for torchrun-real.test)"
rm -rf "$VENV"
if python3 -m venv "$VENV" && "$VENV/bin/pip" install -q --timeout 60 torch \
    && "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  exit 0
fi
echo "setup-torch: warning: could not install PyTorch; torchrun-real.test will be unsupported" >&2
rm -rf "$VENV"
exit 0
