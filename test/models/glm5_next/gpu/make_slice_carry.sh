#!/bin/sh
# Assembles the carry folder for run_slice.sh (docs/GPURun-H200.md "Real-width
# slices"): bin/ (strata-run, strata-bench, strata-write-checkpoint and the
# Debian 12 loader + libraries they need) and art/ (the slice compiled for
# sm_90,cpu with f32 and with bf16 activations; ~1.6 MB each).
# Usage: make_slice_carry.sh BUILD_BIN CARRY [CONFIG_STEM]   (run on this machine)
set -eu
BIN=$1 CARRY=$2 CFG=${3:-glm5-slice-fp8}
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
mkdir -p "$CARRY/art"
sh "$(dirname "$0")/carry_bins.sh" "$BIN" "$CARRY/bin" strata-run strata-bench strata-write-checkpoint
time "$BIN/strata-compile" "$REPO/models/glm5_next/model.dsl" --config "$REPO/models/glm5_next/configs/$CFG.json" \
  --target ${COMPILE_TARGETS:-sm_90,sm_90a,cpu} --activation-type=f32 -o "$CARRY/art/slice-fp8-f32.strata"
time "$BIN/strata-compile" "$REPO/models/glm5_next/model.dsl" --config "$REPO/models/glm5_next/configs/$CFG.json" \
  --target ${COMPILE_TARGETS:-sm_90,sm_90a,cpu} -o "$CARRY/art/slice-fp8.strata"
du -sh "$CARRY"
