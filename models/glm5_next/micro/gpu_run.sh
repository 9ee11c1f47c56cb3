#!/bin/bash
# The device calls that produce the committed checkpoint and reference outputs. A device call lasts at
# most 10 minutes, so training spans two calls on the same (still warm) machine: the training state
# (fp32 weights, AdamW moments, clock) waits in /tmp between them.
#
#   bash micro/gpu_run.sh OUTDIR first  TOTAL_MIN CALL_MIN  # self-checks + smoke, then train CALL_MIN of
#                                                           # TOTAL_MIN; checkpoint + log to OUTDIR
#   bash micro/gpu_run.sh OUTDIR resume TOTAL_MIN CALL_MIN  # resume, finish the schedule, then the
#                                                           # reference outputs (OUTDIR/ref.tgz)
# If the state is gone (the machine was given back between the calls), `resume` skips training and
# makes the reference outputs of the checkpoint in the tree (the first call's, copied there).
set -u
OUT=$1; PHASE=$2; TOTAL=$3; CALL=$4; T0=$(date +%s)
STATE=/tmp/micro-train-state.pt
LOG=$OUT/run.log
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
left() { echo $((${CALL_S:-600} - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader | tee -a $LOG
export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
if [ "$PHASE" = first ]; then
  rm -f $STATE
fi
if [ "$PHASE" = first ] && [ -z "${SKIP_SMOKE:-}" ]; then
  echo "== smoke" | tee -a $LOG
  timeout 110 python3 train.py --out /tmp/smoke --weights-only --minutes 0.4 --max-steps 8 --log-every 1 \
    --eval-rows 1 --pool-scale 0.03 --warmup 5 --tokens-per-batch 65536 >> $LOG 2>&1 &&
  timeout 40 python3 make_reference.py --checkpoint /tmp/smoke --out /tmp/sref --limit 2 --tasks gsm,recall \
    --max-new 16 --budget-s 25 >> $LOG 2>&1
  rc=$?
  tail -25 $LOG
  [ $rc = 0 ] || { echo "smoke failed rc=$rc"; exit 1; }
  echo "== smoke done at $(( $(date +%s) - T0 )) s" | tee -a $LOG
fi
if [ "$PHASE" = first ] || [ -f $STATE ]; then
  echo "== train $CALL of $TOTAL minutes" | tee -a $LOG
  python3 train.py --out $OUT/ckpt --weights-only --minutes $TOTAL --stop-after $CALL --state $STATE \
    --no-self-check --eval-rows 100 --warmup 60 --log-every 25 >> $LOG 2>&1
  echo "== train rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $LOG
  grep -E "resumed|^step [0-9]*0 |trained|saved|wrote|eval " $LOG | tail -40
  CKPT=$OUT/ckpt
else
  echo "== no training state in $STATE: reference outputs of the checkpoint in the tree" | tee -a $LOG
  CKPT=.
fi
if [ "$PHASE" = resume ]; then
  timeout $(( $(left) - 8 )) python3 make_reference.py --checkpoint $CKPT --out /tmp/ref \
    --budget-s $(( $(left) - 30 )) >> $LOG 2>&1
  echo "== reference rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $LOG
  tar czf $OUT/ref.tgz -C /tmp ref
  grep -A1 '"task"' $LOG | tail -20
fi
rm -f $OUT/ckpt/config.json
