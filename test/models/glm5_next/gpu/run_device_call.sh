#!/bin/sh
# One device call of session 7 (docs/GPURun-H200.md "One device call per job"):
# the tiny goldens, tiny strata-bench and the micro model (run_all.sh), the
# real-width slice (run_slice.sh with SLICE_PREFILL=1), then strata-bench on
# two slice artifacts back to back on the same checkpoint (before / after a
# change, same run), everything packed into $OUT/results.tgz (the device tool
# returns a handful of files).
#
#   PACK  a .txz of the gpu carry (make_gpu_carry.sh) with slice-art/ holding
#         slice-fp8.strata, slice-fp8-f32.strata and, for the comparison,
#         slice-fp8-<name>.strata for each name of AB (default "old")
#   OUT   output folder
# Env: STEPS, MICRO_LIMIT (default 256), SLICE_LONG (default 1), SLICE_PREFILL
# (default 1), SLICE_BUDGET (default 300; run_slice.sh reads SLICE_BENCH and
# SLICE_LONG_F32 too), AB (names,
# "new" = slice-fp8.strata; default "old new"), SKIP_ALL=1 skips run_all.sh,
# MATRIX=1 runs the step matrix of each AB artifact (run_matrix.sh: decode
# B x ctx, prefill shapes, PyTorch's linears and ceilings) instead of one
# decode and one prefill step each; GPU_TARGET (sm_90 or sm_90a, default
# sm_90) is the artifact target every step runs; an AB name NAME:TARGET runs
# NAME's artifact on TARGET (e.g. AB="new:sm_90 new:sm_90a").
# Prints SKIP and exits 0 without an NVIDIA GPU.
set -u
PACK=$1; OUT=$2
if ! nvidia-smi -L > /dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU"; exit 0
fi
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
R=/tmp/strata-call; rm -rf $R; mkdir -p $R
mkdir -p /tmp/c /tmp/s && rm -rf /tmp/c/gpu /tmp/strata-all && tar xJf "$PACK" -C /tmp/c &&
  ln -sfn /tmp/c/gpu/bin /tmp/s/bin && ln -sfn /tmp/c/gpu/slice-art /tmp/s/art || exit 1
if [ "${SKIP_ALL:-0}" != 1 ]; then
  STEPS="${STEPS:-goldens bench micro}" BUDGET=200 MICRO_LIMIT=${MICRO_LIMIT:-256} \
    sh "$REPO/test/models/glm5_next/gpu/run_all.sh" /tmp/c/gpu $R/all > $R/all.log 2>&1
fi
SLICE_BUDGET=${SLICE_BUDGET:-300} SLICE_PREFILL=${SLICE_PREFILL:-1} SLICE_LONG=${SLICE_LONG:-1} \
  sh "$REPO/test/models/glm5_next/gpu/run_slice.sh" /tmp/s $R/slice > $R/slice.log 2>&1
# run_slice.sh leaves its tool wrappers and the checkpoint in /tmp/strata-slice.
W=/tmp/strata-slice/wrap; CK=/tmp/strata-slice/ck
if [ "${MATRIX:-0}" = 1 ]; then
  # The step matrix of every artifact in AB (run_matrix.sh) instead of the
  # two single steps below.
  # two single steps below; its files come back as one matrix.tgz (the
  # device tool returns a handful of files) beside results.tgz.
  mkdir -p "$OUT" && tar czf "$OUT/results.tgz" -C $R .
  tail -20 $R/all/summary.txt 2>/dev/null; tail -25 $R/slice/summary.txt
  NAMES="${AB:-old new}" sh "$REPO/test/models/glm5_next/gpu/run_matrix.sh" $W /tmp/s/art $CK $R/matrix \
    | tail -40
  tar czf "$OUT/matrix.tgz" -C $R matrix
  exit 0
fi
mkdir -p $R/ab
for entry in ${AB:-old new}; do
  v=${entry%%:*} target=${GPU_TARGET:-sm_90}
  [ "$v" != "$entry" ] && target=${entry#*:} && v=$v-$target
  a=/tmp/s/art/slice-fp8-${entry%%:*}.strata; [ "${entry%%:*}" = new ] && a=/tmp/s/art/slice-fp8.strata
  timeout 100 $W/strata-bench --artifact $a --checkpoint $CK --target $target --step decode --requests 1 \
    --context 128 --repeat 3 --json $R/ab/$v-decode.json > $R/ab/$v-decode.log 2>&1
  timeout 150 $W/strata-bench --artifact $a --checkpoint $CK --target $target --step prefill --requests 1 \
    --tokens 2048 --repeat 2 --json $R/ab/$v-prefill.json > $R/ab/$v-prefill.log 2>&1
done
mkdir -p "$OUT" && tar czf "$OUT/results.tgz" -C $R .
tail -20 $R/all/summary.txt 2>/dev/null; tail -25 $R/slice/summary.txt
