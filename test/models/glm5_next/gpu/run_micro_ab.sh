#!/bin/sh
# The micro model's GSM run (run_eval.sh prefix-2pass, concurrency 64) on
# several micro artifacts one after the other, with strata-bench's decode
# step at B = 32 on each: for telling whether a compiler change moved the
# serving speed or the answers (compare_eval.py against the reference).
# Usage: run_micro_ab.sh PACK OUT NAME=ARTIFACT...
#   PACK  the device pack (make_device_pack.sh); its micro.strata is "new"
#   OUT   results folder (one .txt per name)
# Env: LIMIT (questions, default 32), RUN_TIMEOUT (seconds per server,
# default 90). Prints SKIP and exits 0 without an NVIDIA GPU.
set -u
PACK=$1; OUT=$2; shift 2
if ! nvidia-smi -L > /dev/null 2>&1; then echo "SKIP: no NVIDIA GPU"; exit 0; fi
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
mkdir -p /tmp/c "$OUT" && rm -rf /tmp/c/gpu && tar xJf "$PACK" -C /tmp/c || exit 1
C=/tmp/c/gpu M=$REPO/models/glm5_next/micro
export LD_LIBRARY_PATH="$C/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for spec in new=$C/micro.strata "$@"; do
  name=${spec%%=*} art=${spec#*=}
  echo "== $name ($art)"
  (cd "$REPO" && BIN=$C/bin SNAPSHOT_SLOTS=16384 MAX_STEP_TOKENS=16384 KV_MB=40960 MAX_REQUESTS=64 \
    RUN_TIMEOUT=${RUN_TIMEOUT:-90} CONFIGS=prefix-2pass \
    bash models/glm5_next/micro/strata-runs/run_eval.sh "$art" ${GPU_TARGET:-sm_90} "${LIMIT:-32}" "$OUT/$name") 2>&1 | tail -8
  timeout 60 "$C/bin/strata-bench" --artifact "$art" --checkpoint "$M" --target ${GPU_TARGET:-sm_90} --step decode \
    --requests 32 --context 512 --repeat 5 > "$OUT/$name-bench.md" 2>&1
  grep -E "^\| (kernel|[a-z_0-9]+ \|)" "$OUT/$name-bench.md" | head -12
done
