#!/bin/sh
# Assembles the carry folder for run_all.sh (docs/GPURun-H200.md): bin/ (the
# tools, carry_bins.sh), art/ (run_goldens.sh's five tiny artifacts,
# COMPILE_TARGETS, default sm_90,sm_90a,cpu),
# art-plain/ (the same with --gpu-block-threads=false --gpu-matrix-units=false,
# the bisecting set), micro.strata (the trained micro model, sm_90 and sm_90a), configs/
# and compare_goldens.py (pages_past_4gib.sh reads them from the carry).
# Usage: make_gpu_carry.sh BUILD_BIN CARRY   (run on this machine)
set -eu
BIN=$1 CARRY=$2
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
M=$REPO/models/glm5_next
mkdir -p "$CARRY/art" "$CARRY/art-plain" "$CARRY/configs"
sh "$(dirname "$0")/carry_bins.sh" "$BIN" "$CARRY/bin" strata-run strata-bench strata-write-checkpoint \
  strata-serve strata-eval
cp "$M/configs/glm5-tiny-bf16.json" "$M/configs/glm5-tiny-fp8.json" "$CARRY/configs/"
cp "$REPO/test/models/glm5_next/cpu/compare_goldens.py" "$CARRY/"
compile() {  # compile OUT CONFIG FLAGS...
  out=$1 cfg=$2; shift 2
  "$BIN/strata-compile" "$M/model.dsl" --config "$M/configs/$cfg.json" --target ${COMPILE_TARGETS:-sm_90,sm_90a,cpu} "$@" -o "$out" &
}
for dir in art art-plain; do
  extra=""; [ $dir = art-plain ] && extra="--gpu-block-threads=false --gpu-matrix-units=false"
  compile "$CARRY/$dir/tiny-bf16-f32.strata" glm5-tiny-bf16 --activation-type=f32 $extra
  compile "$CARRY/$dir/tiny-fp8-f32.strata" glm5-tiny-fp8 --activation-type=f32 $extra
  wait
  compile "$CARRY/$dir/tiny-bf16.strata" glm5-tiny-bf16 $extra
  compile "$CARRY/$dir/tiny-bf16-f32-kvfp8.strata" glm5-tiny-bf16 --activation-type=f32 --kv-cache-dtype=fp8 $extra
  wait
  compile "$CARRY/$dir/tiny-bf16-kvfp8.strata" glm5-tiny-bf16 --kv-cache-dtype=fp8 $extra
done
"$BIN/strata-compile" "$M/model.dsl" --config "$M/micro/config.json" --target ${COMPILE_GPU_TARGETS:-sm_90,sm_90a} -o "$CARRY/micro.strata" &
wait
du -sh "$CARRY" "$CARRY"/*
