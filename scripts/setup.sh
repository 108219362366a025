#!/usr/bin/env bash
# Installs the Debian packages Weft builds against, when any is missing.
# apt-get runs through sudo only when we are not root.
set -euo pipefail

PACKAGES=(
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
  libclang-rt-22-dev
  libabsl-dev nlohmann-json3-dev libxxhash-dev libgtest-dev libopenblas-dev libgloo-dev
  libsentencepiece-dev openmpi-bin chromium iproute2
  ninja-build ccache cmake python3 clang-format git
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
