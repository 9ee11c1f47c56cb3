#!/bin/sh
# Nsight Compute on strata-bench steps of the real-width slice (after
# run_slice.sh, which leaves the tool wrappers and the checkpoint): speed of
# light, occupancy, launch statistics, warp stalls and memory workload of the
# matrix-unit kernels (the first NCU_LAUNCHES launches matching KERNELS) at
# decode B = 128 and prefill 1 x 2048, one text report per step in OUT.
# Usage: run_ncu.sh WRAP ARTIFACT CK OUT
# Env: KERNELS (an ncu -k filter), NCU_LAUNCHES (default 8), NCU_TIMEOUT
#   (seconds per step, default 120). The clocks are left alone
#   (--clock-control none, /work/.library/device/METHOD.md).
#   SOURCE_KERNELS (kernel names, e.g. "moe_up_0 moe_down_0"): also each
#   one's SASS source counters (stall samples per instruction) at prefill
#   1 x 8192, the CSV (ncu-source-NAME.csv) and its summary
#   (ncu-source-NAME.md, models/glm5_next/bench/ncu_source_summary.py).
# Prints "SKIP: ..." and exits 0 without ncu.
set -u
WRAP=$1 ART=$2 CK=$3 OUT=$4
command -v ncu > /dev/null 2>&1 || { echo "SKIP: no ncu"; exit 0; }
mkdir -p "$OUT"
K=${KERNELS:-'regex:^(moe_up|moe_down|lm_head_0|linear_0|mhc_post_linear_1|moe_shared_up_0|argmax)'}
profile() {  # profile NAME STRATA-BENCH-FLAGS...
  name=$1; shift
  timeout "${NCU_TIMEOUT:-120}" ncu --clock-control none --target-processes all -k "$K" \
    --launch-count "${NCU_LAUNCHES:-8}" --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    "$WRAP/strata-bench" --artifact "$ART" --checkpoint "$CK" --target ${GPU_TARGET:-sm_90} --repeat 1 "$@" \
    > "$OUT/ncu-$name.txt" 2>&1
  echo "ncu $name: rc $? ($(grep -c 'Section: SpeedOfLight\|GPU Speed Of Light' "$OUT/ncu-$name.txt") kernels)"
}
profile decode128 --step decode --requests 128 --context 128
profile prefill2048 --step prefill --requests 1 --tokens 2048
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
for kernel in ${SOURCE_KERNELS:-}; do
  timeout "${NCU_TIMEOUT:-120}" ncu --clock-control none --target-processes all -k "regex:^$kernel\$" \
    --launch-count 1 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    "$WRAP/strata-bench" --artifact "$ART" --checkpoint "$CK" --target ${GPU_TARGET:-sm_90} --repeat 1 \
    --step prefill --requests 1 --tokens 8192 > "$OUT/ncu-source-$kernel.csv" 2>&1
  echo "ncu source $kernel: rc $?"
  ${PYTHON:-python3} "$REPO/models/glm5_next/bench/ncu_source_summary.py" "$OUT/ncu-source-$kernel.csv" \
    > "$OUT/ncu-source-$kernel.md" && echo "summary: ncu-source-$kernel.md"
done
