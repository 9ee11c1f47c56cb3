#!/bin/sh
# H200: the trained micro model through strata-serve on the sm_90 target.
C=$(cd "$(dirname "$0")" && pwd); M=models/glm5_next/micro; O=${OUT:-/tmp}
export LD_LIBRARY_PATH="$C/bin/lib"
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== strata-serve --target sm_90 + strata-eval, 32 questions, 2 passes"
timeout 260 python3 "$C/with_server.py" "$C/bin/strata-serve" --target sm_90 --artifact "$C/micro.strata" --checkpoint $M \
  --tokenizer $M/tokenizer.json --port 0 --kv-memory-mb 16384 --max-requests 16 --max-step-tokens 4096 \
  --checkpoint-interval 64 --snapshot-slots 512 -- \
  "$C/bin/strata-eval" gsm8k --url http://127.0.0.1:{port} --data $M/data/gsm/test.jsonl --limit 32 --passes 2 \
  --concurrency 16 --max-tokens 160 --output "$O/h200-eval.jsonl" 2>&1 | tail -6
python3 "$C/compare_eval.py" --eval "$O/h200-eval.jsonl" --reference $M/reference/greedy-gsm.jsonl
