#!/bin/bash
# The accuracy runs of docs/Accuracy.md: strata-serve with the micro model, strata-eval's 5-shot chat GSM
# protocol, compared with the PyTorch reference (compare_eval.py). Three servers, one after the other:
#   prefix-2pass  prefix caching on, the questions twice on one server (pass 2 counts cache hits)
#   mtp1, mtp3    MTP speculative decoding with k = 1 and k = 3 drafts (acceptance from /metrics)
# Usage (from the repository root):
#   models/glm5_next/micro/strata-runs/run_eval.sh ARTIFACT TARGET LIMIT OUTDIR
#       ARTIFACT  a micro-model artifact (strata-compile ... --config models/glm5_next/micro/config.json)
#       TARGET    cpu | sm_90 | ...     LIMIT  first N test questions (0: all 1319)
# Environment: BIN (folder of strata-serve / strata-eval, default build/bin), MAX_REQUESTS (default 4),
# KV_MB (default 1024), RUN_TIMEOUT (seconds per server, default 3600; DEADLINE, epoch seconds,
# instead bounds each server by the time left until then), CONFIGS (default
# "prefix-2pass mtp1 mtp3"), SNAPSHOT_SLOTS (KDA snapshots for prefix reuse, default 256: pass 2 hits
# only while every question's snapshots fit, about prompt tokens / 64 each), MAX_STEP_TOKENS (tokens
# per engine step, default strata-serve's 256; prompts prefill side by side up to it).
# SERVE_FLAGS (more strata-serve flags, e.g. "--collectives gloo" for a sharded artifact on one GPU).
set -u
ART=$1; TARGET=$2; LIMIT=$3; OUT=$4
BIN=${BIN:-build/bin}; MAXREQ=${MAX_REQUESTS:-4}; KV=${KV_MB:-1024}; TMO=${RUN_TIMEOUT:-3600}
SLOTS=${SNAPSHOT_SLOTS:-256}; STEP=${MAX_STEP_TOKENS:-256}
M=models/glm5_next/micro
mkdir -p "$OUT"
for cfg in ${CONFIGS:-prefix-2pass mtp1 mtp3}; do
  case $cfg in
    prefix-2pass) serve=(--prefix-cache on); passes=2; mtp=() ;;
    mtp1) serve=(--mtp 1); passes=1; mtp=(--mtp 1) ;;
    mtp3) serve=(--mtp 3); passes=1; mtp=(--mtp 3) ;;
    *) echo "unknown config $cfg"; exit 2 ;;
  esac
  echo "== $cfg: $TARGET, first $LIMIT questions, $passes pass(es) $(date -u +%H:%M:%S)"
  [ -n "${DEADLINE:-}" ] && TMO=$(( DEADLINE - $(date +%s) ))
  if [ "$TMO" -lt 10 ]; then echo "   SKIP $cfg: no time left"; continue; fi
  timeout "$TMO" python3 test/runtime/serve/Inputs/with_server.py "$BIN/strata-serve" --target "$TARGET" \
    --artifact "$ART" --checkpoint $M --tokenizer $M/tokenizer.json --port 0 --kv-memory-mb "$KV" \
    --max-requests "$MAXREQ" --max-step-tokens "$STEP" --checkpoint-interval 64 --snapshot-slots "$SLOTS" \
    "${serve[@]}" ${SERVE_FLAGS:-} -- \
    "$BIN/strata-eval" gsm8k --url 'http://127.0.0.1:{port}' --data $M/data/gsm/test.jsonl --limit "$LIMIT" \
    --passes $passes --concurrency "$MAXREQ" --max-tokens 160 --output "$OUT/$cfg.jsonl" > "$OUT/$cfg.txt" 2>&1
  echo "   rc $? $(date -u +%H:%M:%S)"
  cat "$OUT/$cfg.txt" | tail -4
  python3 $M/compare_eval.py --eval "$OUT/$cfg.jsonl" --reference $M/reference/greedy-gsm.jsonl "${mtp[@]}" \
    | tee "$OUT/$cfg.compare.txt"
done
