#!/usr/bin/env bash
# The main job on the bundled default model (models/glm5_next, tiny bf16
# config), on the CPU: the most complete real path that exists today. Each
# step below is real; steps that do not exist yet are not faked.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
CONFIG=models/glm5_next/configs/glm5-tiny-bf16.json
WORK=${WORK_DIR:-$B/demo}
mkdir -p "$WORK"

echo "== the llm dialect: round-trip the op catalogue"
"$B/bin/strata-opt" test/Dialect/llm/ops.mlir > "$WORK/ops.roundtrip.mlir"
echo "   $(grep -c 'llm\.' "$WORK/ops.roundtrip.mlir") llm op lines round-tripped -> $WORK/ops.roundtrip.mlir"
