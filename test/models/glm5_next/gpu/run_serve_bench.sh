#!/bin/sh
# Issue 22's serving run on the H200 (docs/BenchServe.md "On the H200"), in
# steps that each fit one device call:
#   bench    strata-bench decode steps of the 12-layer real-width fp8 model
#            (procedural weights) at B = 1 and B = 64, context 1536: the
#            step times TPOT is compared with
#   serve1k  strata-serve (--gpu-memory-utilization sizing) under
#            strata-bench-serve: random 1K in / 1K out, --ignore-eos,
#            concurrency sweep
#   serve8k  the same with 8K in / 1K out
#   mtp      the trained micro model (repo checkpoint), GSM8K prompts, natural
#            stops: output tok/s and TPOT with --mtp 0/1/2/3 at concurrency
#            1 and 32 (MTP_KS, MTP_SWEEP), acceptance and graph counts from
#            /metrics
# Usage: run_serve_bench.sh CARRY OUT   (CARRY from make_serve_carry.sh)
# Env: STEPS (default "bench serve1k"), BUDGET (seconds for all steps,
#   default 560), SWEEP (default 1,8,32,64,128,256), PROMPTS_PER_C (requests
#   per concurrency and run, default 1), TARGET (default sm_90), SERVE_FLAGS
#   (extra strata-serve flags, e.g. "--max-requests 128"), MTP_PROMPTS
#   (default 64 per run), LEN1K / LEN8K (input and output lengths of the
#   serve steps, default "1024 1024" / "8192 1024"), REAL_CONFIG and
#   REAL_ARTIFACT (default the 12-layer config and CARRY/art/real12.strata;
#   a CPU dry run of this script uses the micro model's), VOCAB (the bench
#   tokenizer's size, default 154880), BENCH_BATCHES (default "1 64"),
#   MTP_OUT (GSM8K max_tokens, default 160), MTP_KS (default "0 1 2 3"; an
#   entry K/eager adds --step-graphs off, K/separate
#   --mtp-draft-with-target off, K/nochain --mtp-chain-with-target off,
#   K/passes --mtp-chain-with-target off --mtp-chain-in-one-step off),
#   MTP_SWEEP (default 1,32).
# Prints "SKIP: ..." and exits 0 without an NVIDIA GPU; exits 1 when a step
# failed. OUT gets summary.txt, log.txt, the sweeps' .md/.svg/.json.
set -u
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU (nvidia-smi -L failed)"
  exit 0
fi
START=$(date +%s)
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
CARRY=$(cd "$1" && pwd); OUT=$2
BUDGET=${BUDGET:-560}
TARGET=${TARGET:-sm_90}
SWEEP=${SWEEP:-1,8,32,64,128,256}
PPC=${PROMPTS_PER_C:-1}
CONFIG=${REAL_CONFIG:-$REPO/models/glm5_next/configs/glm5-real-12l-fp8.json}
ART=${REAL_ARTIFACT:-$CARRY/art/real12.strata}
WORK=${WORK:-/tmp/strata-serve-bench}
PY=${PYTHON:-python3}
mkdir -p "$OUT" "$WORK/wrap"
SUMMARY=$OUT/summary.txt; LOG=$OUT/log.txt
touch "$SUMMARY" "$LOG"
say() { echo "$*" | tee -a "$SUMMARY"; }
say "== $(date -u +%H:%M:%S) steps: ${STEPS:-bench serve1k}; $(nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader)"
has() { case " ${STEPS:-bench serve1k} " in *" $1 "*) return 0 ;; esac; return 1; }

# Wrappers (system glibc or the bundled loader), as run_slice.sh.
B=$CARRY/bin
LOADER=0
if [ -e "$B/ld-linux-x86-64.so.2" ] && LD_LIBRARY_PATH="$B/lib" "$B/strata-serve" --help 2>&1 \
    | grep -q -e GLIBC -e "cannot open shared"; then
  LOADER=1
fi
for t in strata-serve strata-bench strata-bench-serve; do
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

status=0
left() { echo $(( BUDGET - ($(date +%s) - START) - 15 )); }
# step NAME CAP CMD...: CMD under timeout min(CAP, time left); output in
# OUT/NAME.log (tail in log.txt), one line in summary.txt.
step() {
  n=$1; cap=$2; shift 2
  l=$(left); [ "$l" -lt "$cap" ] && cap=$l
  if [ "$cap" -lt 30 ]; then say "SKIP $n: no time left"; status=1; return 1; fi
  t0=$(date +%s)
  timeout "$cap" "$@" > "$OUT/$n.log" 2>&1
  rc=$?
  { echo "== $n: rc $rc, $(( $(date +%s) - t0 ))s (limit ${cap}s)"; tail -n 60 "$OUT/$n.log"; } >> "$LOG"
  if [ $rc != 0 ]; then say "FAIL $n: rc $rc after $(( $(date +%s) - t0 ))s"; status=1; return 1; fi
  say "done $n in $(( $(date +%s) - t0 ))s"
}

# A tokenizer with one printable token per id of the real vocabulary.
TOK=$WORK/bench-tokenizer-${VOCAB:-154880}.json
[ -e "$TOK" ] || $PY "$REPO/models/glm5_next/bench/make_bench_tokenizer.py" --vocab-size "${VOCAB:-154880}" --out "$TOK"

if has bench; then
  for b in ${BENCH_BATCHES:-1 64}; do
    step bench-b$b 200 "$W/strata-bench" --artifact "$ART" --checkpoint "procedural:$CONFIG" \
      --target "$TARGET" --step decode --requests $b --context 1536 --repeat 5 --json "$OUT/bench-decode-b$b.json" \
      && grep -E "^step:" "$OUT/bench-b$b.log" | sed "s/^/bench B=$b: /" | tee -a "$SUMMARY"
  done
fi

# serve NAME INPUT OUTPUT: one server, one sweep.
serve() {
  step "$1" "$(left)" $PY "$REPO/test/runtime/serve/Inputs/with_server.py" "$W/strata-serve" --target "$TARGET" \
    --artifact "$ART" --checkpoint "procedural:$CONFIG" --tokenizer "$TOK" --port 0 \
    ${SERVE_FLAGS:-} -- \
    "$W/strata-bench-serve" --base-url 'http://127.0.0.1:{port}' --dataset-name random --tokenizer "$TOK" \
    --random-input-len "$2" --random-output-len "$3" --ignore-eos --sweep-concurrency "$SWEEP" \
    --prompts-per-concurrency "$PPC" --request-timeout 300 --progress-interval 10 \
    --title "GLM-5.3-Flash 12 layers real width fp8, $TARGET, random $2 in / $3 out" \
    --sweep-out "$OUT/$1" --json "$OUT/$1.json"
  grep -E "^strata-serve: (weights|memory)" "$OUT/$1.log" | tee -a "$SUMMARY"
  [ -e "$OUT/$1.md" ] && cat "$OUT/$1.md" >> "$SUMMARY"
}
has serve1k && serve serve1k ${LEN1K:-1024 1024}
has serve8k && serve serve8k ${LEN8K:-8192 1024}

if has mtp; then
  M=$REPO/models/glm5_next/micro
  for entry in ${MTP_KS:-0 1 2 3}; do
    k=${entry%%/*}; n=mtp$k; eager=""
    case "$entry" in
      */eager) n=mtp$k-eager; eager="--step-graphs off" ;;
      */separate) n=mtp$k-separate; eager="--mtp-draft-with-target off" ;;
      */nochain) n=mtp$k-nochain; eager="--mtp-chain-with-target off" ;;
      */passes) n=mtp$k-passes; eager="--mtp-chain-with-target off --mtp-chain-in-one-step off" ;;
    esac
    step "$n" "$(left)" $PY "$REPO/test/runtime/serve/Inputs/with_server.py" "$W/strata-serve" --target "$TARGET" \
      --artifact "$CARRY/art/micro.strata" --checkpoint "$M" --tokenizer "$M/tokenizer.json" --port 0 \
      --mtp $k $eager ${SERVE_FLAGS:-} -- \
      "$W/strata-bench-serve" --base-url 'http://127.0.0.1:{port}' --endpoint /v1/chat/completions \
      --dataset-name gsm8k --dataset-path "$M/data/gsm/test.jsonl" --gsm8k-output-len "${MTP_OUT:-160}" \
      --sweep-concurrency "${MTP_SWEEP:-1,32}" --num-prompts "${MTP_PROMPTS:-64}" --request-timeout 300 --progress-interval 10 \
      --title "micro model, $TARGET, GSM8K chat, --mtp $k $eager" --sweep-out "$OUT/$n" --json "$OUT/$n.json"
    [ -e "$OUT/$n.md" ] && cat "$OUT/$n.md" >> "$SUMMARY"
    grep -E "MTP acceptance|Mean step time|Max concurrency|graph" "$OUT/$n.log" | sed "s/^/$n: /" | tee -a "$SUMMARY"
  done
fi
say "== $(date -u +%H:%M:%S) status $status"
exit $status
