#!/usr/bin/env bash
# Installs what strata needs on Debian 12 (bookworm + bookworm-security):
# LLVM/MLIR/clang/lld 22 and the runtime's libraries. Idempotent; skips apt
# when every package is already installed.
set -euo pipefail

PACKAGES=(
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools lld-22 clang-22
  libclang-rt-22-dev
  libflatbuffers-dev flatbuffers-compiler libfmt-dev nlohmann-json3-dev
  libcpp-httplib-dev libgtest-dev libgmock-dev
  ninja-build cmake g++ ccache python3 python3-numpy
  rocm-device-libs libamdhip64-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
