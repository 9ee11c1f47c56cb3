#!/usr/bin/env bash
# The main job on the bundled default model (models/glm5_next, tiny bf16
# config), on the CPU: the most complete real path that exists today (see
# docs/Status.md). Every step is real; steps not built yet are not faked.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
CONFIG=${CONFIG:-models/glm5_next/configs/glm5-tiny-bf16.json}
WORK=${WORK_DIR:-$B/demo}
mkdir -p "$WORK"

echo "== 1. compile the DSL model (target + MTP draft) to llm IR: $CONFIG"
"$B/bin/strata-compile" models/glm5_next/model.dsl --config "$CONFIG" --compile-to=llm > "$WORK/model.llm.mlir"
echo "   kda layers: $(grep -c 'llm.kda_attention' "$WORK/model.llm.mlir"), mla layers (target + draft): $(grep -c 'llm.mla_attention' "$WORK/model.llm.mlir")"

echo "== 2. lower it to CPU kernels (fused -> kernel -> target phases), print the kernel plan"
"$B/bin/strata-opt" --strata-fused --strata-kernel --strata-print-kernel-plan "$WORK/model.llm.mlir" \
  -o "$WORK/model.kernel.mlir" > "$WORK/plan.txt" 2>&1
"$B/bin/strata-opt" --strata-target "$WORK/model.kernel.mlir" -o "$WORK/model.llvm.mlir"
echo "   $(grep -c 'func.func private @\|func.func @' "$WORK/model.kernel.mlir") functions in the kernel phase, $(grep -c 'llvm.func' "$WORK/model.llvm.mlir") LLVM functions -> $WORK/model.llvm.mlir"

echo "== 3. write a procedural checkpoint in the Hugging Face layout and validate it"
rm -rf "$WORK/checkpoint"
"$B/bin/strata-write-checkpoint" --config "$CONFIG" --out "$WORK/checkpoint" --max-shard-bytes 8000000
"$B/bin/strata-write-checkpoint" --check "$WORK/checkpoint" --strict
echo "== done (artifact packaging of the model and strata-run are not built yet: docs/Status.md)"
