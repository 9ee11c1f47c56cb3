#!/bin/sh
# The step matrix on the H200 (docs/Bench.md "Matrix runs"): PyTorch's
# ceilings (device copy, 8192^3 bf16 / fp8 GEMM) and its linears and lm_head
# at every M of the matrix, then strata-bench --matrix on each slice artifact
# named in NAMES with the GEMM rate measured here, then the merged table.
# Usage: run_matrix.sh WRAP ART CK OUT
#   WRAP  folder with the strata-bench wrapper (run_slice.sh's wrap/)
#   ART   folder with slice-fp8.strata ("new") and slice-fp8-NAME.strata
#   CK    the slice checkpoint
#   OUT   results: baselines-matrix.json, matrix-NAME.{md,json,log},
#         matrix.md (the merged table)
# Env: NAMES (default "new"; NAME+copy runs NAME's artifact with
#   --copy-logits; NAME:TARGET runs it on artifact target TARGET instead of
#   GPU_TARGET, default sm_90, and labels it NAME-TARGET), BATCHES (1,8,32,128), CONTEXTS (128,4096),
#   PREFILL (1x2048,4x2048,1x8192), CONFIG (glm5-slice-fp8), PYTHON,
#   BASELINE_TIMEOUT and MATRIX_TIMEOUT (seconds, default 150 each).
# Prints "SKIP: ..." and exits 0 without an NVIDIA GPU.
set -u
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU (nvidia-smi -L failed)"
  exit 0
fi
WRAP=$1 ART=$2 CK=$3 OUT=$4
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
PY=${PYTHON:-python3}
CFG=$REPO/models/glm5_next/configs/${CONFIG:-glm5-slice-fp8}.json
BATCHES=${BATCHES:-1,8,32,128} CONTEXTS=${CONTEXTS:-128,4096}
PREFILL=${PREFILL:-1x2048,4x2048,1x8192}
mkdir -p "$OUT"
# M of every linear in the matrix: the decode batches and the prefill tokens.
PREFILL_M=$(echo "$PREFILL" | tr ',' '\n' | awk -Fx '{print $1 * $2}' | sort -un | paste -sd, -)
timeout ${BASELINE_TIMEOUT:-150} $PY "$REPO/models/glm5_next/bench/bench_baselines.py" --config "$CFG" --skip-modules --ceilings \
  --decode-tokens "$BATCHES" --prefill-tokens "$PREFILL_M" --iters 10 \
  --json "$OUT/baselines-matrix.json" > "$OUT/baselines-matrix.log" 2>&1
echo "baselines: rc $? ($(grep -c . "$OUT/baselines-matrix.log") lines)"
GEMM=$($PY -c "import json,sys; print('%.1f' % (json.load(open(sys.argv[1]))['measured_ceilings']['ceiling.gemm_bf16'] / 1e12))" \
  "$OUT/baselines-matrix.json" 2>/dev/null || echo 780)
echo "GEMM rate (bf16, this run): $GEMM TFLOP/s"
label() { echo "$1" | tr ':' '-'; }
for entry in ${NAMES:-new}; do
  # NAME+copy: NAME's artifact with --copy-logits (the timed steps copy the
  # logits and hidden rows back, not only the greedy tokens).
  name=${entry%%:*} target=${GPU_TARGET:-sm_90}
  [ "$name" != "$entry" ] && target=${entry#*:}
  base=${name%+copy} copy=
  [ "$base" != "$name" ] && copy=--copy-logits
  a=$ART/slice-fp8-$base.strata; [ "$base" = new ] && a=$ART/slice-fp8.strata
  l=$(label "$entry")
  timeout ${MATRIX_TIMEOUT:-150} "$WRAP/strata-bench" --matrix --artifact "$a" --checkpoint "$CK" --target "$target" \
    --batches "$BATCHES" --contexts "$CONTEXTS" --prefill "$PREFILL" --gemm-tflops "$GEMM" $copy \
    --json "$OUT/matrix-$l.json" > "$OUT/matrix-$l.md" 2> "$OUT/matrix-$l.log"
  echo "matrix $l: rc $?"
done
set --
for entry in ${NAMES:-new}; do l=$(label "$entry"); set -- "$@" --strata "$l=$OUT/matrix-$l.json"; done
$PY "$REPO/models/glm5_next/bench/matrix_table.py" "$@" --baselines "$OUT/baselines-matrix.json" \
  --out "$OUT/matrix.md" && echo "table: matrix.md"
