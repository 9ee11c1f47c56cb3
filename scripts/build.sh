#!/usr/bin/env bash
# Configures and builds strata in ./build (clang-22 + lld, Release, libMLIR.so).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# Share ccache hits between worktrees checked out side by side.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
# Always (re)configure: subsystems join the build when their folder appears.
cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld >/dev/null
ninja -C "$BUILD_DIR" ${NINJA_TARGETS:-}
