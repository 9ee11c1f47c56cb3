#!/bin/sh
# Sharded artifacts on one H200 (docs/GPURun-H200.md "Sharded artifacts on one
# GPU"), from make_parallel_carry.sh's pack: NCCL's one-rank tests
# (strata-runtime-tests: the real library, each collective and a captured
# all-reduce); the tiny bf16 and fp8 models in f32 mode at TP 2, EP 2 and
# TP 2 x EP 2 (2-4 ranks sharing GPU 0 through host-staged Gloo,
# --collectives gloo) against TP 1 on the GPU: logits within 1e-5 relative,
# greedy ids equal, the MTP draft too (compare_ranks.py); bf16 activations
# (the matrix kernels) for both models: the expert-parallel MoE's grouped
# matmuls shown as matrix kernels (strata-dump), EP 2 against TP 1 and TP 2
# x EP 2 against TP 2 with the median row's relative error within
# EP_MEDIAN_RTOL (default 0.05) and greedy ids equal, the MTP draft's median
# too (the only difference is each rank's bf16 rounding of its MoE partial
# sum; on the CPU the medians are 0.005-0.009, a run with the other rank's
# experts 0.52 with 2 of 16 ids equal), TP 2 against TP 1 reported;
# strata-bench at TP 2 (the collectives as rows);
# strata-serve + strata-eval with the micro model at TP 1 and TP 2 (GSM
# questions, MICRO_LIMIT default 32, against the PyTorch reference's greedy
# generations); NCCL with two ranks on one GPU, which NCCL refuses (the
# error is shown). Prints one line per step; exits 1 if one failed.
# Usage: run_parallel.sh PACK.txz OUT   (on the device machine)
set -u
PACK=$1 OUT=$2
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
C=/tmp/strata-parallel/parallel D=/tmp/strata-parallel/out
rm -rf /tmp/strata-parallel && mkdir -p /tmp/strata-parallel "$D" "$OUT"
tar xJf "$PACK" -C /tmp/strata-parallel || exit 1
export LD_LIBRARY_PATH="$C/bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
B=$C/bin P=$REPO/test/models/glm5_next/cpu/compare_ranks.py status=0
for cfg in bf16 fp8; do
  "$B/strata-write-checkpoint" --config "$REPO/models/glm5_next/configs/glm5-tiny-$cfg.json" --out "$C/ck-$cfg" > /dev/null ||
    { echo "FAIL checkpoint $cfg"; exit 1; }
done
printf '%s\n' 5,17,300,42,9,111,250,3,77,460,12,64,200,201,33,8,99,150,7,412,18,27,36,45,54,63,72,81,90,108,117,126,135,144,153,162,171 \
  400,2,19,88,301,45,6,222,13,131,77,500,64,32,16,8,4,2,1,311,123 > "$C/prompts.txt"
timeout 180 "$B/strata-runtime-tests" --gtest_filter='*OneRankOnTheGpu*:*ProbesTheInstalledLibrary*' > "$OUT/unit.txt" 2>&1 ||
  status=1
grep -E "OK \]|FAILED  \]" "$OUT/unit.txt"
run() {  # run NAME ARTIFACT CHECKPOINT FLAGS...
  rn=$1 art=$2 ck=$3; shift 3
  t0=$(date +%s%N)
  timeout 150 "$B/strata-run" --target sm_90 --artifact "$C/$art.strata" --checkpoint "$C/$ck" \
    --prompt-ids-file "$C/prompts.txt" --chunk 16 --max-tokens 8 --dump-logits "$D/$rn.npy" \
    --dump-ids "$D/$rn-ids.npy" --dump-mtp-logits "$D/$rn-mtp.npy" "$@" > "$OUT/$rn.log" 2>&1
  rc=$?
  echo "$rn: rc $rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms, $(tail -1 "$OUT/$rn.log" | cut -c1-120)"
  return $rc
}
compare() {  # compare REF NAME RTOL
  python3 "$P" "$2" "$D/$1.npy" "$D/$2.npy" --ref-ids "$D/$1-ids.npy" --ids "$D/$2-ids.npy" --rtol "$3"
}
for cfg in bf16 fp8; do
  run $cfg-tp1 $cfg-tp1 ck-$cfg || status=1
  for n in tp2 ep2 tp2ep2; do
    run $cfg-$n $cfg-$n ck-$cfg --collectives gloo || status=1
    compare $cfg-tp1 $cfg-$n 1e-5 || status=1
    python3 "$P" $cfg-$n-mtp "$D/$cfg-tp1-mtp.npy" "$D/$cfg-$n-mtp.npy" || status=1
  done
done
for cfg in bf16 fp8; do
  a=${cfg}act
  # moe_up_0 / moe_down_0 of the EP artifacts: "matrix <instruction>".
  for n in ep2 tp2ep2; do
    "$B/strata-dump" "$C/$a-$n.strata" | awk -v n="$a-$n" '
      /^target / { target = $2 }
      /^  kernel [0-9]+ .moe_(up|down)_0.:/ { kernel = $3 }
      kernel && /^    launch / { m = match($0, /matrix [^ ]+/)
        print n, target, kernel, (m ? substr($0, RSTART, RLENGTH) : "generic"); kernel = "" }'
  done
  run $a-tp1 $a-tp1 ck-$cfg || status=1
  for n in tp2 ep2 tp2ep2; do
    run $a-$n $a-$n ck-$cfg --collectives gloo || status=1
  done
  compare $a-tp1 $a-tp2 0.3
  for pair in tp1:ep2 tp2:tp2ep2; do
    ref=$a-${pair%:*} n=$a-${pair#*:}
    python3 "$P" $n "$D/$ref.npy" "$D/$n.npy" --ref-ids "$D/$ref-ids.npy" --ids "$D/$n-ids.npy" \
      --median-rtol "${EP_MEDIAN_RTOL:-0.05}" || status=1
    python3 "$P" $n-mtp "$D/$ref-mtp.npy" "$D/$n-mtp.npy" --median-rtol "${EP_MEDIAN_RTOL:-0.05}" || status=1
  done
done
# strata-bench on the sharded tiny model: both ranks, the collectives as rows.
timeout 120 "$B/strata-bench" --target sm_90 --artifact "$C/bf16act-tp2.strata" --checkpoint "$C/ck-bf16" \
  --step decode --requests 8 --context 256 --repeat 3 --collectives gloo --quiet > "$OUT/bench-tp2.md" 2>&1 ||
  status=1
grep -E "^strata-bench|over (tp|world)|^step:" "$OUT/bench-tp2.md" | cut -c1-160
# strata-serve with one scheduler driving both ranks (the micro model, the
# GSM questions against the PyTorch reference), TP 1 then TP 2.
for tp in 1 2; do
  (cd "$REPO" && BIN=$B CONFIGS="${MICRO_CONFIGS:-prefix-2pass mtp3}" SERVE_FLAGS="--collectives gloo" \
    RUN_TIMEOUT=150 bash models/glm5_next/micro/strata-runs/run_eval.sh "$C/micro-tp$tp.strata" sm_90 \
    "${MICRO_LIMIT:-32}" "$OUT/micro-tp$tp") > "$OUT/micro-tp$tp.txt" 2>&1 || status=1
  echo "micro TP $tp:"; grep -E "^==|^\| [12] \| |same greedy|acceptance|rc " "$OUT/micro-tp$tp.txt" | cut -c1-160
done
run nccl-two-ranks-one-gpu bf16-tp2 ck-bf16 --collectives nccl --collective-timeout-ms 20000
grep -m1 "joining group" "$OUT/nccl-two-ranks-one-gpu.log" | cut -c1-200
echo "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
