#!/usr/bin/env bash
# The main job on the bundled default model (models/glm5_next, tiny bf16
# config with procedural weights), on the CPU: compile the DSL model to an
# artifact, write and validate its checkpoint, generate with strata-run, and
# check the numbers against the transformers goldens (fp32 mode).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
CONFIG=${CONFIG:-models/glm5_next/configs/glm5-tiny-bf16.json}
GOLDENS=test/models/glm5_next/goldens/glm5-tiny-bf16.safetensors
WORK=${WORK_DIR:-$B/demo}
PY=/usr/bin/python3
mkdir -p "$WORK"

echo "== 1. compile the DSL model (target + MTP draft) for the CPU: $CONFIG"
"$B/bin/strata-compile" models/glm5_next/model.dsl --config "$CONFIG" --target cpu -o "$WORK/model.strata"
"$B/bin/strata-compile" models/glm5_next/model.dsl --config "$CONFIG" --target cpu --activation-type=f32 -o "$WORK/model-f32.strata"
"$B/bin/strata-dump" "$WORK/model.strata" | grep -E "^model|^target|plan |^cache_layout|^weights"

echo "== 2. write a procedural checkpoint in the Hugging Face layout and validate it"
rm -rf "$WORK/checkpoint"
"$B/bin/strata-write-checkpoint" --config "$CONFIG" --out "$WORK/checkpoint" --max-shard-bytes 8000000
"$B/bin/strata-write-checkpoint" --check "$WORK/checkpoint" --strict

echo "== 3. generate (bf16, greedy): two prompts of different lengths in one batch, prefill in chunks of 5"
"$B/bin/strata-run" --artifact "$WORK/model.strata" --checkpoint "$WORK/checkpoint" \
  --prompt-ids 17,200,3,99,41,7,300,12 --prompt-ids 5,6,7 --chunk 5 --max-tokens 24

echo "== 4. fp32 mode against the transformers goldens (389-token prompt, 16 decode steps, MTP draft)"
$PY test/models/glm5_next/cpu/compare_goldens.py "$GOLDENS" --prompts 1 --write-prompts "$WORK/prompt.txt"
"$B/bin/strata-run" --artifact "$WORK/model-f32.strata" --checkpoint "$WORK/checkpoint" \
  --prompt-ids-file "$WORK/prompt.txt" --chunk 64 --max-tokens 16 \
  --dump-logits "$WORK/logits.npy" --dump-ids "$WORK/ids.npy" --dump-mtp-logits "$WORK/mtp.npy" | tail -3
$PY test/models/glm5_next/cpu/compare_goldens.py "$GOLDENS" --prompts 1 \
  --logits "$WORK/logits.npy" --ids "$WORK/ids.npy" --mtp "$WORK/mtp.npy" --max-tokens 16
echo "== 5. the trained micro model (models/glm5_next/micro: the same architecture, trained on GSM8K-style"
echo "   problems): compile, validate its fp8 checkpoint, answer a test question from a 5-shot chat prompt"
MICRO=models/glm5_next/micro
"$B/bin/strata-compile" models/glm5_next/model.dsl --config $MICRO/config.json --target cpu -o "$WORK/micro.strata"
"$B/bin/strata-write-checkpoint" --check $MICRO --strict
$PY $MICRO/data/generate.py prompts --data $MICRO/data/gsm/test.jsonl --shots-data $MICRO/data/gsm/train.jsonl --limit 1 \
  | $PY -c "import json, sys; print(json.loads(sys.stdin.readline())['question'], end='')" > "$WORK/micro-prompt.txt"
echo "   question: $($PY -c "import json; print(json.loads(open('$MICRO/data/gsm/test.jsonl').readline())['question'])")"
"$B/bin/strata-run" --artifact "$WORK/micro.strata" --checkpoint $MICRO --tokenizer $MICRO/tokenizer.json \
  --prompt "$(cat "$WORK/micro-prompt.txt")" --max-tokens 160 | sed -n '/^text 0:/,$p'
echo "   reference answer: $($PY -c "import json; print(json.loads(open('$MICRO/data/gsm/test.jsonl').readline())['answer'].split('####')[-1].strip())")"
echo "== done: artifacts and dumps in $WORK (docs/Run.md)"
