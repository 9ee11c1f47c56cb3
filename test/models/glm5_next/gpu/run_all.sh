#!/bin/sh
# The tiny and micro models on sm_90 in ONE device call (docs/GPURun-H200.md):
#   1. goldens   run_goldens.sh on the default artifacts (threads within rows,
#                matrix-unit linears); if it fails, the same cases on the
#                bisecting artifacts (--gpu-block-threads=false
#                --gpu-matrix-units=false), the default ones with
#                --decode-graphs off, and compute-sanitizer memcheck on a
#                short bf16 and f32 run, so that one call says which codegen
#                choice is at fault and where
#   2. pages     pages_past_4gib.sh (bf16, f32 and fp8 latent pages past 4 GiB)
#   3. bench     strata-bench on the tiny bf16 artifact (docs/Bench.md cases)
#   4. micro     the accuracy runs of the micro model (run_eval.sh) on sm_90
#                with the time that is left
# Usage: run_all.sh CARRY OUT
#   CARRY  bin/ (strata-run, strata-write-checkpoint, strata-bench,
#          strata-serve, strata-eval; lib/ with the libraries they need),
#          art/ (run_goldens.sh's five tiny artifacts), art-plain/ (the same
#          five compiled with --gpu-block-threads=false
#          --gpu-matrix-units=false), micro.strata (the micro model,
#          --target sm_90), configs/, compare_goldens.py
#   OUT    results: summary.txt, results.tgz (every log; re-packed after
#          each step, so a call cut short still returns what ran)
# Env: BUDGET (seconds for everything, default 540), MICRO_LIMIT (questions,
#   default 64; 0: all 1319; auto: probe 64, then as many as the time left
#   allows for every config), MICRO_CONFIGS (default "prefix-2pass"),
#   MICRO_MAX_REQUESTS (default 64), MICRO_STEP_TOKENS (default 16384),
#   MICRO_SNAPSHOT_SLOTS (default 16384), MICRO_KV_MB (default 40960),
#   STEPS (default "goldens pages bench micro"), GPU_TARGET (the artifacts'
#   target every step runs: sm_90, default, or sm_90a).
# Prints "SKIP: ..." and exits 0 without an NVIDIA GPU; else exits 1 if a
# step failed.
set -u
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU (nvidia-smi -L failed)"
  exit 0
fi
START=$(date +%s)
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
C=$(cd "$1" && pwd); FINAL=$2
BUDGET=${BUDGET:-540}
G=$REPO/test/models/glm5_next/gpu
GOLD=$REPO/test/models/glm5_next/goldens
W=/tmp/strata-all
OUT=$W/results
mkdir -p "$FINAL" "$OUT"
export LD_LIBRARY_PATH="$C/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$PATH:/usr/local/cuda/bin"
SUMMARY=$FINAL/summary.txt; : > "$SUMMARY"
pack() { (cd "$W" && tar czf "$FINAL/results.tgz" results); }
say() { echo "$*" | tee -a "$SUMMARY"; }
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
say "$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader), budget ${BUDGET}s"
status=0
has() { case " ${STEPS:-goldens pages bench micro} " in *" $1 "*) return 0 ;; esac; return 1; }

if has goldens; then
  t0=$(date +%s)
  sh "$G/run_goldens.sh" "$C/bin" "$C/art" "$GOLD" "$REPO/test/models/glm5_next/cpu/compare_goldens.py" \
    "$REPO/models/glm5_next/configs" "$W/goldens" > "$OUT/goldens.txt" 2>&1
  rc=$?
  grep -E "^(==|PASS|FAIL|prefill|decode|wall)" "$OUT/goldens.txt" | cut -c1-200 >> "$SUMMARY"
  say "goldens: rc $rc in $(( $(date +%s) - t0 ))s"
  if [ $rc != 0 ]; then
    status=1
    t0=$(date +%s)
    CASE_TIMEOUT=120 sh "$G/run_goldens.sh" "$C/bin" "$C/art-plain" "$GOLD" \
      "$REPO/test/models/glm5_next/cpu/compare_goldens.py" "$REPO/models/glm5_next/configs" "$W/plain" \
      > "$OUT/goldens-plain.txt" 2>&1
    say "goldens on the bisecting artifacts (one thread per block, no matrix units): rc $? in $(( $(date +%s) - t0 ))s"
    grep -E "^(==|PASS|FAIL)" "$OUT/goldens-plain.txt" | cut -c1-200 >> "$SUMMARY"
    t0=$(date +%s)
    CASE_TIMEOUT=120 RUN_FLAGS="--decode-graphs off" sh "$G/run_goldens.sh" "$C/bin" "$C/art" "$GOLD" \
      "$REPO/test/models/glm5_next/cpu/compare_goldens.py" "$REPO/models/glm5_next/configs" "$W/nographs" \
      > "$OUT/goldens-nographs.txt" 2>&1
    say "goldens on the default artifacts with --decode-graphs off: rc $? in $(( $(date +%s) - t0 ))s"
    grep -E "^(==|PASS|FAIL)" "$OUT/goldens-nographs.txt" | cut -c1-200 >> "$SUMMARY"
    for a in tiny-bf16 tiny-bf16-f32; do
      timeout 150 compute-sanitizer --tool memcheck --print-limit 20 "$C/bin/strata-run" --target ${GPU_TARGET:-sm_90} \
        --artifact "$C/art/$a.strata" --checkpoint "$W/goldens/ck-bf16" --prompt-ids-file "$W/goldens/bf16.txt" \
        --chunk 64 --max-tokens 2 > "$OUT/sanitizer-$a.txt" 2>&1
      say "compute-sanitizer $a: rc $? ($(grep -c 'Invalid\|ERROR' "$OUT/sanitizer-$a.txt") error lines)"
    done
  fi
  pack
fi

if has pages && [ "$(left)" -gt 200 ]; then
  t0=$(date +%s)
  timeout $(( $(left) - 120 )) sh "$G/pages_past_4gib.sh" "$W/pages" "$GOLD/glm5-tiny-bf16.safetensors" "$C" \
    > "$OUT/pages.txt" 2>&1
  say "pages past 4 GiB: rc $? in $(( $(date +%s) - t0 ))s"
  grep -E "^(==|PASS|FAIL|bf16 page|fp8 cache)" "$OUT/pages.txt" | cut -c1-200 >> "$SUMMARY"
  grep -q FAIL "$OUT/pages.txt" && status=1
  pack
fi

if has bench && [ "$(left)" -gt 150 ]; then
  t0=$(date +%s)
  mkdir -p "$W/bench"
  B="$C/bin/strata-bench --artifact $C/art/tiny-bf16.strata --checkpoint $W/goldens/ck-bf16 --target ${GPU_TARGET:-sm_90}"
  [ -d "$W/goldens/ck-bf16" ] || "$C/bin/strata-write-checkpoint" \
    --config "$REPO/models/glm5_next/configs/glm5-tiny-bf16.json" --out "$W/goldens/ck-bf16" > /dev/null
  timeout 60 $B --step decode --requests 1 --context 128 --repeat 20 --json "$W/bench/decode-b1-c128.json" > "$W/bench/decode-b1-c128.md" 2>&1
  timeout 60 $B --step decode --requests 8 --context 1024 --repeat 20 --json "$W/bench/decode-b8-c1024.json" > "$W/bench/decode-b8-c1024.md" 2>&1
  timeout 60 $B --step prefill --tokens 128 --context 0 --repeat 10 --json "$W/bench/prefill-n128.json" > "$W/bench/prefill-n128.md" 2>&1
  timeout 60 $B --step prefill --requests 4 --tokens 512 --context 0 --repeat 5 --json "$W/bench/prefill-b4-n512.json" > "$W/bench/prefill-b4-n512.md" 2>&1
  cp -r "$W/bench" "$OUT/"
  say "bench in $(( $(date +%s) - t0 ))s"
  grep -h -E "^(strata-bench|step|\| \*\*total)" "$W"/bench/*.md | cut -c1-200 >> "$SUMMARY"
  pack
fi

if has micro && [ "$(left)" -gt 60 ]; then
  t0=$(date +%s)
  # Every prompt prefills in one step (MAX_STEP_TOKENS), every question's
  # KDA snapshots stay (about 10 a question at interval 64: pass 2 hits).
  export SNAPSHOT_SLOTS=${MICRO_SNAPSHOT_SLOTS:-16384} MAX_STEP_TOKENS=${MICRO_STEP_TOKENS:-16384}
  export KV_MB=${MICRO_KV_MB:-40960} MAX_REQUESTS=${MICRO_MAX_REQUESTS:-64} BIN="$C/bin"
  eval_() {  # eval_ CONFIGS LIMIT OUTDIR: run_eval.sh until 20 s before the budget ends
    (cd "$REPO" && DEADLINE=$(( START + BUDGET - 20 )) CONFIGS="$1" \
      bash models/glm5_next/micro/strata-runs/run_eval.sh "$C/micro.strata" ${GPU_TARGET:-sm_90} "$2" "$3")
  }
  limit=${MICRO_LIMIT:-64}
  if [ "$limit" = auto ]; then
    # Probe 64 questions, then take as many as the time left allows for every
    # config (prefix-2pass ~1.3 passes, mtp1 and mtp3 one each; 3.6 passes
    # of the probe's pass-1 rate, with a margin).
    eval_ prefix-2pass 64 "$OUT/micro-probe" > "$OUT/micro-probe.txt" 2>&1
    cat "$OUT/micro-probe.txt" >> "$SUMMARY"
    s=$(grep '^| 1 |' "$OUT/micro-probe/prefix-2pass.txt" | awk -F'|' '{print int($(NF-1) + 1)}')
    limit=$(( ($(left) - 40) * 64 / (${s:-600} * 36 / 10) ))
    [ $limit -lt 8 ] && limit=8
    [ $limit -ge 1319 ] && limit=0
    say "micro: probe pass 1 took ${s}s for 64 questions; limit $limit (0: all 1319)"
  fi
  eval_ "${MICRO_CONFIGS:-prefix-2pass}" "$limit" "$OUT/micro" > "$OUT/micro.txt" 2>&1
  say "micro: rc $? in $(( $(date +%s) - t0 ))s"
  cat "$OUT/micro.txt" >> "$SUMMARY"
fi
cp "$SUMMARY" "$OUT/"; pack
say "total $(( $(date +%s) - START ))s"
exit $status
