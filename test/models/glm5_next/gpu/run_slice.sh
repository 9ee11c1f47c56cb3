#!/bin/sh
# Real-width slice of GLM-5.3-Flash on the H200 in ONE device call
# (docs/GPURun-H200.md "Real-width slices"): writes the procedural checkpoint,
# makes the transformers goldens, runs strata-run --target $GPU_TARGET (default sm_90) on the
# sm_90,cpu slice artifacts and compares, times the PyTorch baselines and
# strata-bench and merges them into one table.
# Usage: run_slice.sh CARRY OUT
#   CARRY  bin/ (strata-run, strata-bench, strata-write-checkpoint; optionally
#          the bundled Debian 12 loader: ld-linux-x86-64.so.2, glibc/, lib/)
#          and art/ (slice-fp8-f32.strata, slice-fp8.strata: strata-compile
#          --target sm_90,cpu [--activation-type=f32] of SLICE_CONFIG)
#   OUT    results (few files: summary.txt, log.txt, bench.md, results.tgz)
# Env: SLICE_CONFIG (glm5-slice-fp8), SLICE_BUDGET (seconds for everything,
#   default 560), SLICE_WORK (scratch, default /tmp/strata-slice: ~25 GB),
#   SLICE_PREFILL=1 adds a strata-bench prefill step (1 request x 2048 tokens) and its
#   table against the baselines' prefill ops (bench-prefill.md),
#   SLICE_LONG=1 adds the 2304-token cases (selection active; run last, with the time left):
#   bf16 in chunks of 256 and in one step (teacher-forced top-1), then fp32
#   (logits; SLICE_LONG_F32=0 leaves it out),
#   SLICE_BENCH=0 leaves out the PyTorch baselines and the decode bench,
#   SLICE_WAIT_FOR (a file: the timed steps, baselines and bench, wait until
#   it is gone, so that other GPU work started beside this script does not
#   disturb the timings; the wait counts against the budget).
# Memory: the goldens step (transformers' fp32 reference of the slice) needs more
# than 80 GB: on an 80 GB H100 it fails with CUDA out of memory and every
# comparison is skipped; ask for an H200 (device run with needs_h200).
# Steps, in priority order, each bounded by min(its cap, time left): ckpt,
# goldens, fp32, baselines, bench, bf16 [, long]. A step without time left is
# reported as SKIP. Prints "SKIP: ..." and exits 0 without an NVIDIA GPU;
# else exits 1 if a step failed or a comparison printed FAIL.
set -u
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU (nvidia-smi -L failed)"
  exit 0
fi
START=$(date +%s)
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
CARRY=$(cd "$1" && pwd); OUT=$2
CFG=${SLICE_CONFIG:-glm5-slice-fp8}
BUDGET=${SLICE_BUDGET:-560}
WORK=${SLICE_WORK:-/tmp/strata-slice}
PY=${PYTHON:-python3}
COMPARE=$REPO/test/models/glm5_next/cpu/compare_goldens.py
mkdir -p "$OUT" "$WORK/logs" "$WORK/wrap"
SUMMARY=$OUT/summary.txt; LOG=$OUT/log.txt
: > "$SUMMARY"; : > "$LOG"
say() { echo "$*" | tee -a "$SUMMARY"; }
say "slice $CFG, budget ${BUDGET}s, $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"

# Wrappers so that `timeout` can run the tools (system glibc or bundled loader).
B=$CARRY/bin
LOADER=0
if [ -e "$B/ld-linux-x86-64.so.2" ] && LD_LIBRARY_PATH="$B/lib" "$B/strata-run" 2>&1 \
    | grep -q -e GLIBC -e "cannot open shared"; then
  LOADER=1
fi
for t in strata-run strata-bench strata-write-checkpoint; do
  if [ $LOADER = 1 ]; then
    printf '#!/bin/sh\nexec "%s/ld-linux-x86-64.so.2" --library-path "%s/glibc:%s/lib" "%s/%s" "$@"\n' \
      "$B" "$B" "$B" "$B" "$t" > "$WORK/wrap/$t"
  else
    printf '#!/bin/sh\nLD_LIBRARY_PATH="%s/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/%s" "$@"\n' \
      "$B" "$B" "$t" > "$WORK/wrap/$t"
  fi
  chmod +x "$WORK/wrap/$t"
done
W=$WORK/wrap
say "loader: $([ $LOADER = 1 ] && echo bundled glibc || echo system)"

status=0
# step NAME CAP CMD...: runs CMD under timeout min(CAP, time left - 20 s),
# output in $WORK/logs/NAME.log, its tail in log.txt, one line in summary.txt.
step() {
  step_name=$1; step_cap=$2; shift 2
  step_left=$(( BUDGET - ($(date +%s) - START) - 20 ))
  [ $step_left -lt $step_cap ] && step_cap=$step_left
  if [ $step_cap -lt 15 ]; then
    say "SKIP $step_name: no time left"; status=1; return 1
  fi
  step_t0=$(date +%s)
  timeout "$step_cap" "$@" > "$WORK/logs/$step_name.log" 2>&1
  step_rc=$?
  step_s=$(( $(date +%s) - step_t0 ))
  { echo "== $step_name: rc $step_rc, ${step_s}s (limit ${step_cap}s)"; tail -n 80 "$WORK/logs/$step_name.log"; } >> "$LOG"
  if [ $step_rc = 124 ]; then say "TIMEOUT $step_name after ${step_s}s"; status=1; return 1; fi
  if [ $step_rc != 0 ]; then say "FAIL $step_name: rc $step_rc after ${step_s}s"; status=1; return 1; fi
  say "done $step_name in ${step_s}s"
}
# compare NAME ARGS...: compare_goldens.py on the slice goldens; PASS/FAIL lines to the summary.
compare() {
  cmp_name=$1; shift
  $PY "$COMPARE" "$WORK/goldens/slice-goldens.safetensors" "$@" > "$WORK/logs/$cmp_name.cmp.txt" 2>&1
  sed "s/^/$cmp_name: /" "$WORK/logs/$cmp_name.cmp.txt" | tee -a "$SUMMARY"
  if grep -q FAIL "$WORK/logs/$cmp_name.cmp.txt" || ! grep -q PASS "$WORK/logs/$cmp_name.cmp.txt"; then status=1; fi
}
run_times() { grep -E "^(load|prefill|decode)" "$WORK/logs/$1.log" | sed "s/^/$1: /" | tee -a "$SUMMARY"; }

CK=$WORK/ck
step ckpt 150 "$W/strata-write-checkpoint" --config "$REPO/models/glm5_next/configs/$CFG.json" --out "$CK" \
  && du -sh "$CK" | tee -a "$SUMMARY"
step goldens 240 $PY "$REPO/models/glm5_next/reference/make_slice_goldens.py" --checkpoint "$CK" \
  --out "$WORK/goldens" --lengths 45,2304 --gen 4
grep -E "^(CHECK|prompt|loaded|slice goldens)" "$WORK/logs/goldens.log" 2>/dev/null | cut -c1-400 >> "$SUMMARY"
if [ -e "$WORK/goldens/slice-goldens.safetensors" ]; then
  $PY "$COMPARE" "$WORK/goldens/slice-goldens.safetensors" --prompts 0 --write-prompts "$WORK/p0.txt"
  $PY "$COMPARE" "$WORK/goldens/slice-goldens.safetensors" --prompts 1 --write-prompts "$WORK/p1.txt"
  # fp32: 45-token prompt in one chunk, 4 greedy steps, MTP draft over the prompt rows.
  # Bound: row relative error < 1e-4 (the CPU/GPU tiny tests' bound; fp32 reordering over
  # K <= 16384 gives ~1e-5 at most), greedy ids equal, argmax printed.
  step fp32 200 "$W/strata-run" --target ${GPU_TARGET:-sm_90} --artifact "$CARRY/art/slice-fp8-f32.strata" --checkpoint "$CK" \
    --prompt-ids-file "$WORK/p0.txt" --max-tokens 4 --dump-logits "$WORK/fp32.logits.npy" \
    --dump-ids "$WORK/fp32.ids.npy" --dump-mtp-logits "$WORK/fp32.mtp.npy" \
    && { run_times fp32; compare fp32 --prompts 0 --logits "$WORK/fp32.logits.npy" --ids "$WORK/fp32.ids.npy" \
           --mtp "$WORK/fp32.mtp.npy" --max-tokens 4; }
else
  say "FAIL: no goldens; strata comparisons skipped"; status=1
fi
if [ -n "${SLICE_WAIT_FOR:-}" ]; then
  while [ -e "$SLICE_WAIT_FOR" ] && [ $(( BUDGET - ($(date +%s) - START) )) -gt 60 ]; do sleep 2; done
  say "timed steps start at $(( $(date +%s) - START ))s$([ -e "$SLICE_WAIT_FOR" ] && echo ", $SLICE_WAIT_FOR still there")"
fi
if [ "${SLICE_BENCH:-1}" = 1 ]; then
  step baselines 120 $PY "$REPO/models/glm5_next/bench/bench_baselines.py" \
    --config "$REPO/models/glm5_next/configs/$CFG.json" --json "$WORK/baselines.json" --prefill-tokens 2048
  step bench 100 "$W/strata-bench" --artifact "$CARRY/art/slice-fp8.strata" --checkpoint "$CK" --target ${GPU_TARGET:-sm_90} \
    --step decode --requests 1 --context 128 --repeat 1 --json "$WORK/bench-decode.json"
fi
if [ -e "$WORK/bench-decode.json" ] && [ -e "$WORK/baselines.json" ]; then
  $PY "$REPO/models/glm5_next/bench/bench_table.py" --strata "$WORK/bench-decode.json" \
    --baselines "$WORK/baselines.json" --out "$OUT/bench.md" >/dev/null && say "table: bench.md"
fi
if [ "${SLICE_PREFILL:-0}" = 1 ]; then
  # One request of 2048 tokens in one step, against the baselines' prefill ops (same T).
  step bench_prefill 200 "$W/strata-bench" --artifact "$CARRY/art/slice-fp8.strata" --checkpoint "$CK" \
    --target ${GPU_TARGET:-sm_90} --step prefill --requests 1 --tokens 2048 --repeat 1 --json "$WORK/bench-prefill.json"
  if [ -e "$WORK/bench-prefill.json" ] && [ -e "$WORK/baselines.json" ]; then
    $PY "$REPO/models/glm5_next/bench/bench_table.py" --strata "$WORK/bench-prefill.json" --step prefill \
      --baselines "$WORK/baselines.json" --out "$OUT/bench-prefill.md" >/dev/null && say "table: bench-prefill.md"
  fi
fi
if [ -e "$WORK/goldens/slice_goldens.json" ]; then
  # bf16: teacher-forced top-1 vs transformers bf16 >= min(0.94, a - 0.05), a = transformers'
  # own bf16-vs-fp32 top-1 on this prompt (two bf16 implementations cannot be held closer to
  # each other than either is to fp32; 0.94 is the tiny tests' bound).
  BOUND=$($PY -c "import json,sys; a=json.load(open(sys.argv[1]))['prompts'][0]['bf16_vs_fp32_prefill_argmax_agree']; print('%.3f' % max(0.5, min(0.94, a - 0.05)))" "$WORK/goldens/slice_goldens.json" 2>/dev/null || echo 0.94)
  say "bf16 bound: $BOUND"
  step bf16 150 "$W/strata-run" --target ${GPU_TARGET:-sm_90} --artifact "$CARRY/art/slice-fp8.strata" --checkpoint "$CK" \
    --prompt-ids-file "$WORK/p0.txt" --max-tokens 4 --dump-logits "$WORK/bf16.logits.npy" --dump-ids "$WORK/bf16.ids.npy" \
    && { run_times bf16; compare bf16 --prompts 0 --logits "$WORK/bf16.logits.npy" --ids "$WORK/bf16.ids.npy" \
           --max-tokens 4 --bf16 --min-top1 "$BOUND"; }
  if [ "${SLICE_LONG:-0}" = 1 ]; then
    # The same 2304 tokens in bf16, chunks of 256: steps of >= 64 tokens run MLA as
    # absorb / attend / project (the matrix-unit mla_attend), past 2048 positions with
    # the indexer's selection; bound as for p0, from p1's own bf16-vs-fp32 agreement.
    BOUND1=$($PY -c "import json,sys; a=json.load(open(sys.argv[1]))['prompts'][1]['bf16_vs_fp32_prefill_argmax_agree']; print('%.3f' % max(0.5, min(0.94, a - 0.05)))" "$WORK/goldens/slice_goldens.json" 2>/dev/null || echo 0.94)
    say "long bf16 bound: $BOUND1"
    step long_bf16 200 "$W/strata-run" --target ${GPU_TARGET:-sm_90} --artifact "$CARRY/art/slice-fp8.strata" --checkpoint "$CK" \
      --prompt-ids-file "$WORK/p1.txt" --chunk 256 --max-tokens 1 --dump-logits "$WORK/long16.logits.npy" \
      --dump-ids "$WORK/long16.ids.npy" \
      && { run_times long_bf16; compare long_bf16 --prompts 1 --logits "$WORK/long16.logits.npy" \
             --ids "$WORK/long16.ids.npy" --max-tokens 1 --bf16 --min-top1 "$BOUND1"; }
    # The same in one step of 2304 rows: the staged row tiles of the linears
    # (from stagedMinRows rows) and of the grouped experts (18432 slots).
    step long_bf16_whole 200 "$W/strata-run" --target ${GPU_TARGET:-sm_90} --artifact "$CARRY/art/slice-fp8.strata" \
      --checkpoint "$CK" --prompt-ids-file "$WORK/p1.txt" --chunk 0 --max-tokens 1 \
      --dump-logits "$WORK/long16w.logits.npy" --dump-ids "$WORK/long16w.ids.npy" \
      && { run_times long_bf16_whole; compare long_bf16_whole --prompts 1 --logits "$WORK/long16w.logits.npy" \
             --ids "$WORK/long16w.ids.npy" --max-tokens 1 --bf16 --min-top1 "$BOUND1"; }
    [ "${SLICE_LONG_F32:-1}" = 1 ] && step long 600 "$W/strata-run" --target ${GPU_TARGET:-sm_90} --artifact "$CARRY/art/slice-fp8-f32.strata" --checkpoint "$CK" \
      --prompt-ids-file "$WORK/p1.txt" --chunk 256 --max-tokens 1 --dump-logits "$WORK/long.logits.npy" \
      --dump-ids "$WORK/long.ids.npy" \
      && { run_times long; compare long --prompts 1 --logits "$WORK/long.logits.npy" --ids "$WORK/long.ids.npy" --max-tokens 1; }
  fi
fi
# Small files back in one tarball (the big checkpoint, goldens and dumps stay in $WORK).
( cd "$WORK" && tar czf "$OUT/results.tgz" logs goldens/slice_goldens.json baselines.json bench-decode.json \
  bench-prefill.json 2>/dev/null )
say "total $(( $(date +%s) - START ))s"
say "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
