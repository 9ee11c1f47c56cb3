#!/bin/sh
# Assembles the carry folder for run_serve_bench.sh (issue 22's serving run,
# docs/BenchServe.md "On the H200"): bin/ (strata-serve, strata-bench,
# strata-bench-serve and the Debian 12 loader + libraries they need) and
# art/ (the 12-layer real-width fp8 model and the micro model, compiled for
# sm_90). No checkpoint: the real-width weights are procedural
# (--checkpoint procedural:CONFIG.json), the micro model's are in the repo.
# Usage: make_serve_carry.sh BUILD_BIN CARRY   (run on this machine)
#   TARGETS (default sm_90): the artifacts' --target list.
set -eu
BIN=$1 CARRY=$2
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
T=${TARGETS:-sm_90}
mkdir -p "$CARRY/art"
sh "$(dirname "$0")/carry_bins.sh" "$BIN" "$CARRY/bin" strata-serve strata-bench strata-bench-serve
time "$BIN/strata-compile" "$REPO/models/glm5_next/model.dsl" \
  --config "$REPO/models/glm5_next/configs/glm5-real-12l-fp8.json" --target "$T" -o "$CARRY/art/real12.strata"
time "$BIN/strata-compile" "$REPO/models/glm5_next/model.dsl" \
  --config "$REPO/models/glm5_next/micro/config.json" --target "$T" -o "$CARRY/art/micro.strata"
du -sh "$CARRY"
