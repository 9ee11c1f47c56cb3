#!/bin/sh
# Builds the pack that run_parallel.sh takes on the H200 (docs/GPURun-H200.md
# "Sharded artifacts on one GPU"): the tools (carry_bins.sh) plus
# strata-runtime-tests and its testdata (NCCL's one-rank tests), and the tiny
# bf16 / fp8 configs at TP 1, TP 2, EP 2 and TP 2 x EP 2 for sm_90 in f32 mode
# (bf16-*, fp8-*) and with bf16 activations (bf16act-*, fp8act-*: the matrix
# kernels, the expert-parallel MoE's grouped matmuls with the rank's expert
# offset among them), the micro model at TP 1 and TP 2 (micro-tp*);
# xz-packed. The checkpoints are written on the device.
# Usage: make_parallel_carry.sh BUILD_DIR PACK.txz   (run on this machine)
set -eu
BUILD=$(cd "$1" && pwd) PACK=$2
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
M=$REPO/models/glm5_next
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
T=$WORK/parallel
mkdir -p "$T/bin/testdata"
sh "$REPO/test/models/glm5_next/gpu/carry_bins.sh" "$BUILD/bin" "$T/bin" strata-run strata-write-checkpoint \
  strata-bench strata-serve strata-eval strata-dump > /dev/null
strip -o "$T/bin/strata-runtime-tests" "$BUILD/unittests/strata-runtime-tests"
ldd "$BUILD/unittests/strata-runtime-tests" | awk '/=> \//{print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libcuda*|libnvidia*) ;;
    *) [ -f "$T/bin/lib/$(basename "$lib")" ] || cp -L "$lib" "$T/bin/lib/" ;;
  esac
done
cp "$BUILD"/unittests/testdata/* "$T/bin/testdata/"
compile() {  # compile NAME CONFIG FLAGS...
  name=$1 cfg=$2; shift 2
  "$BUILD/bin/strata-compile" -q "$M/model.dsl" --config "$M/configs/glm5-tiny-$cfg.json" --target sm_90 "$@" \
    -o "$T/$name.strata" &
}
for cfg in bf16 fp8; do
  compile $cfg-tp1 $cfg --activation-type=f32
  compile $cfg-tp2 $cfg --activation-type=f32 --tensor-parallel-size 2
  wait
  compile $cfg-ep2 $cfg --activation-type=f32 --expert-parallel-size 2
  compile $cfg-tp2ep2 $cfg --activation-type=f32 --tensor-parallel-size 2 --expert-parallel-size 2
  wait
done
for cfg in bf16 fp8; do
  compile ${cfg}act-tp1 $cfg
  compile ${cfg}act-tp2 $cfg --tensor-parallel-size 2
  wait
  compile ${cfg}act-ep2 $cfg --expert-parallel-size 2
  compile ${cfg}act-tp2ep2 $cfg --tensor-parallel-size 2 --expert-parallel-size 2
  wait
done
for tp in 1 2; do
  "$BUILD/bin/strata-compile" -q "$M/model.dsl" --config "$M/micro/config.json" --target sm_90 \
    --tensor-parallel-size $tp -o "$T/micro-tp$tp.strata" &
done
wait
mkdir -p "$(dirname "$PACK")"
tar cJf "$PACK" -C "$WORK" parallel
ls -la "$PACK"
