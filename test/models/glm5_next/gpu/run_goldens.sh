#!/bin/sh
# Runs the CPU golden comparisons (test/models/glm5_next/cpu) on the sm_90
# target of multi-target artifacts, on an NVIDIA GPU (the H200 runner):
#   fp32-batch    bf16 config, f32 activations: 3 prompts in chunks of 64 + 64 decode steps
#   fp32-mtp      bf16 config, f32 activations: one 1000-token chunk + 16 decode + MTP draft
#   fp8-fp32      fp8 config, f32 activations: chunks of 4 + 64 decode + MTP draft
#   bf16          bf16 config, bf16 activations: teacher-forced top-1 >= 0.94
#   kv-fp8-f32    bf16 config, f32 activations, fp8 latent cache: median row rel err < 5e-3,
#                 top-1 >= 0.98, decode on the golden path < 1e-2 (cpu/kv-fp8.test)
#   kv-fp8-bf16   bf16 config, bf16 activations, fp8 latent cache: top-1 vs transformers bf16 >= 0.94
# Usage: run_goldens.sh BIN ART GOLDENS COMPARE CONFIGS WORK
#   BIN      strata-run and strata-write-checkpoint (optionally with a bundled
#            Debian 12 loader: ld-linux-x86-64.so.2, glibc/, lib/)
#   ART      tiny-bf16-f32.strata, tiny-fp8-f32.strata, tiny-bf16.strata,
#            tiny-bf16-f32-kvfp8.strata, tiny-bf16-kvfp8.strata
#            (strata-compile --target sm_90,cpu [--kv-cache-dtype=fp8];
#            docs/GPURun-H200.md)
#   GOLDENS  test/models/glm5_next/goldens (glm5-tiny-{bf16,fp8}.safetensors)
#   COMPARE  test/models/glm5_next/cpu/compare_goldens.py
#   CONFIGS  models/glm5_next/configs
#   WORK     scratch folder
# CASE_TIMEOUT (seconds, default 600) bounds each strata-run; RUN_FLAGS are
# added to every strata-run (e.g. "--decode-graphs off").
# Prints "SKIP: ..." and exits 0 when there is no NVIDIA GPU; else exits 1 if
# any comparison printed FAIL or a run failed.
set -u
BIN=$1 ART=$2 GOLD=$3 COMPARE=$4 CONFIGS=$5 WORK=$6
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU (nvidia-smi -L failed)"
  exit 0
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# Binaries built on Debian 12 load directly where the glibc is new enough,
# else through the bundled loader.
LOADER=0
if [ -e "$BIN/ld-linux-x86-64.so.2" ] && LD_LIBRARY_PATH="$BIN/lib" "$BIN/strata-run" 2>&1 \
    | grep -q -e GLIBC -e "cannot open shared"; then
  LOADER=1
fi
tool() {  # tool NAME ARGS... (functions share variables: only tool_*)
  tool_name=$1; shift
  if [ $LOADER = 1 ]; then
    ${T:-} "$BIN/ld-linux-x86-64.so.2" --library-path "$BIN/glibc:$BIN/lib" "$BIN/$tool_name" "$@"
  else
    LD_LIBRARY_PATH="$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ${T:-} "$BIN/$tool_name" "$@"
  fi
}
PY=${PYTHON:-python3}
mkdir -p "$WORK"
status=0
tool strata-write-checkpoint --config "$CONFIGS/glm5-tiny-bf16.json" --out "$WORK/ck-bf16" >/dev/null || status=1
tool strata-write-checkpoint --config "$CONFIGS/glm5-tiny-fp8.json" --out "$WORK/ck-fp8" >/dev/null || status=1

# case NAME ARTIFACT CHECKPOINT GOLDEN PROMPTS "RUN FLAGS" "COMPARE FLAGS"
case_() {
  name=$1 art=$2 ck=$3 gold=$4 prompts=$5 runflags=$6 cmpflags=$7
  echo "== $name"
  $PY "$COMPARE" "$GOLD/$gold" --prompts "$prompts" --write-prompts "$WORK/$name.txt" >/dev/null
  start=$(date +%s%N)
  if ! T="timeout ${CASE_TIMEOUT:-600}" tool strata-run --target ${GPU_TARGET:-sm_90} --artifact "$ART/$art" --checkpoint "$WORK/$ck" \
      --prompt-ids-file "$WORK/$name.txt" $runflags ${RUN_FLAGS:-} --dump-logits "$WORK/$name.logits.npy" \
      --dump-ids "$WORK/$name.ids.npy" > "$WORK/$name.run.txt" 2>&1; then
    cat "$WORK/$name.run.txt"; echo "FAIL $name: strata-run failed"; status=1; return
  fi
  end=$(date +%s%N)
  grep -E "^(load|prefill|decode|mtp)" "$WORK/$name.run.txt"
  echo "wall: $(( (end - start) / 1000000 )) ms"
  $PY "$COMPARE" "$GOLD/$gold" --prompts "$prompts" --logits "$WORK/$name.logits.npy" \
      --ids "$WORK/$name.ids.npy" $cmpflags > "$WORK/$name.cmp.txt" 2>&1
  cat "$WORK/$name.cmp.txt"
  if grep -q FAIL "$WORK/$name.cmp.txt" || ! grep -q PASS "$WORK/$name.cmp.txt"; then status=1; fi
}
case_ fp32-batch tiny-bf16-f32.strata ck-bf16 glm5-tiny-bf16.safetensors 0,1,2 \
  "--chunk 64 --max-tokens 64" "--max-tokens 64"
case_ fp32-mtp tiny-bf16-f32.strata ck-bf16 glm5-tiny-bf16.safetensors 2 \
  "--max-tokens 16 --dump-mtp-logits $WORK/fp32-mtp.mtp.npy" "--max-tokens 16 --mtp $WORK/fp32-mtp.mtp.npy"
case_ fp8-fp32 tiny-fp8-f32.strata ck-fp8 glm5-tiny-fp8.safetensors 1 \
  "--chunk 4 --max-tokens 64 --dump-mtp-logits $WORK/fp8-fp32.mtp.npy" "--max-tokens 64 --mtp $WORK/fp8-fp32.mtp.npy"
case_ bf16 tiny-bf16.strata ck-bf16 glm5-tiny-bf16.safetensors 0,1 \
  "--chunk 64 --max-tokens 16" "--max-tokens 16 --bf16 --min-top1 0.94"
case_ kv-fp8-f32 tiny-bf16-f32-kvfp8.strata ck-bf16 glm5-tiny-bf16.safetensors 0,1 \
  "--chunk 64 --max-tokens 16" "--max-tokens 16 --kv-fp8 --median-tol 5e-3 --rel-tol 1e-2 --min-top1 0.98"
case_ kv-fp8-bf16 tiny-bf16-kvfp8.strata ck-bf16 glm5-tiny-bf16.safetensors 0,1 \
  "--chunk 64 --max-tokens 16" "--max-tokens 16 --bf16 --min-top1 0.94"
echo "loader: $([ $LOADER = 1 ] && echo bundled glibc || echo system)"
echo "== overall: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
