#!/bin/bash
# One device call: smoke run (a few steps, self-checks, export, reference on a handful of rows), then,
# only if it passed, the real training run sized to the time left and the reference outputs.
# Usage (from the folder holding micro/ and reference/): bash micro/gpu_run.sh OUTDIR [CALL_SECONDS]
set -u
OUT=$1; CALL=${2:-590}; T0=$(date +%s)
LOG=$OUT/run.log
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
left() { echo $((CALL - ($(date +%s) - T0))); }
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader | tee $LOG
echo "== smoke" | tee -a $LOG
timeout 110 python3 train.py --out /tmp/smoke --weights-only --minutes 0.4 --max-steps 12 --log-every 1 \
  --eval-rows 1 --pool-scale 0.03 --warmup 5 >> $LOG 2>&1 &&
timeout 40 python3 make_reference.py --checkpoint /tmp/smoke --out /tmp/sref --limit 2 --tasks gsm,recall \
  --max-new 16 --budget-s 25 >> $LOG 2>&1
rc=$?
tail -30 $LOG
[ $rc = 0 ] || { echo "smoke failed rc=$rc"; exit 1; }
echo "== smoke done at $(( $(date +%s) - T0 )) s" | tee -a $LOG
REF=${REF_S:-140}
MIN=$(python3 -c "print(round(($(left) - 60 - $REF - 15) / 60, 2))")
echo "== train for $MIN minutes" | tee -a $LOG
timeout $(( $(left) - REF - 10 )) python3 train.py --out $OUT/ckpt --weights-only --minutes $MIN \
  --no-self-check --eval-rows 0 --warmup 60 --log-every 25 >> $LOG 2>&1
echo "== train rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $LOG
grep -E "calibrated|^step [0-9]*0 |trained|wrote|exported" $LOG | tail -30
timeout $(( $(left) - 8 )) python3 make_reference.py --checkpoint $OUT/ckpt --out /tmp/ref \
  --budget-s $(( $(left) - 30 )) >> $LOG 2>&1
echo "== reference rc=$? at $(( $(date +%s) - T0 )) s" | tee -a $LOG
tar czf $OUT/ref.tgz -C /tmp ref
grep -A1 '"task"' $LOG | tail -20
rm -f $OUT/ckpt/config.json
