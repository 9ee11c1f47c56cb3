#!/bin/sh
# Pages past 4 GiB on sm_90. Usage: pages_past_4gib.sh WORK GOLDEN [CARRY], CARRY (default: this
# script's folder) holding bin/, art/, configs/, compare_goldens.py: the 389-token golden prompt with its KV pages
# placed at page 40000 (f32 latent pages of 128 KiB: 5.0 GiB into each latent
# pool) and page 70000 (bf16, 64 KiB pages: 4.3 GiB), compared with the goldens.
C=${3:-$(dirname "$0")}; C=$(cd "$C" && pwd); W=$1; G=$2
run() {
  if LD_LIBRARY_PATH="$C/bin/lib" "$C/bin/$1" --help 2>&1 | grep -q -e GLIBC -e "cannot open shared"; then
    n=$1; shift; "$C/bin/ld-linux-x86-64.so.2" --library-path "$C/bin/glibc:$C/bin/lib" "$C/bin/$n" "$@"
  else n=$1; shift; LD_LIBRARY_PATH="$C/bin/lib" "$C/bin/$n" "$@"; fi
}
mkdir -p $W
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
run strata-write-checkpoint --config "$C/configs/glm5-tiny-bf16.json" --out "$W/ck" > /dev/null
python3 "$C/compare_goldens.py" "$G" --prompts 1 --write-prompts "$W/p1.txt"
echo "== f32, pages from 40000 (5.0 GiB offset)"
run strata-run --target ${GPU_TARGET:-sm_90} --artifact "$C/art/tiny-bf16-f32.strata" --checkpoint "$W/ck" --prompt-ids-file "$W/p1.txt" \
  --first-page 40000 --max-tokens 8 --chunk 64 --dump-logits "$W/f32.npy" --dump-ids "$W/f32i.npy" 2>&1 | tail -3
python3 "$C/compare_goldens.py" "$G" --prompts 1 --logits "$W/f32.npy" --ids "$W/f32i.npy" --max-tokens 8
echo "== bf16, pages from 70000 (4.27 GiB offset)"
run strata-run --target ${GPU_TARGET:-sm_90} --artifact "$C/art/tiny-bf16.strata" --checkpoint "$W/ck" --prompt-ids-file "$W/p1.txt" \
  --first-page 70000 --max-tokens 8 --chunk 64 --dump-logits "$W/bf16.npy" --dump-ids "$W/bf16i.npy" 2>&1 | tail -3
python3 "$C/compare_goldens.py" "$G" --prompts 1 --logits "$W/bf16.npy" --ids "$W/bf16i.npy" --max-tokens 8 --bf16 --min-top1 0.94
echo "== bf16, same prompt from page 0 (reference for identity)"
run strata-run --target ${GPU_TARGET:-sm_90} --artifact "$C/art/tiny-bf16.strata" --checkpoint "$W/ck" --prompt-ids-file "$W/p1.txt" \
  --max-tokens 8 --chunk 64 --dump-logits "$W/bf16-0.npy" 2>&1 | tail -1
python3 -c "import numpy as np, sys; a=np.load(sys.argv[1]); b=np.load(sys.argv[2]); print('bf16 page 70000 vs page 0: bit-identical', np.array_equal(a, b), 'max abs diff', float(np.abs(a-b).max()))" "$W/bf16.npy" "$W/bf16-0.npy"
echo "== fp8 latent cache (f32 activations), pages from 140000 (4.4 GiB offset, 33,792-byte pages)"
run strata-run --target ${GPU_TARGET:-sm_90} --artifact "$C/art/tiny-bf16-f32-kvfp8.strata" --checkpoint "$W/ck" --prompt-ids-file "$W/p1.txt" \
  --first-page 140000 --max-tokens 8 --chunk 64 --dump-logits "$W/kvfp8.npy" --dump-ids "$W/kvfp8i.npy" 2>&1 | tail -3
python3 "$C/compare_goldens.py" "$G" --prompts 1 --logits "$W/kvfp8.npy" --ids "$W/kvfp8i.npy" --max-tokens 8 --kv-fp8 --median-tol 5e-3 --rel-tol 1e-2 --min-top1 0.98
run strata-run --target ${GPU_TARGET:-sm_90} --artifact "$C/art/tiny-bf16-f32-kvfp8.strata" --checkpoint "$W/ck" --prompt-ids-file "$W/p1.txt" \
  --max-tokens 8 --chunk 64 --dump-logits "$W/kvfp8-0.npy" 2>&1 | tail -1
python3 -c "import numpy as np, sys; a=np.load(sys.argv[1]); b=np.load(sys.argv[2]); print('fp8 cache page 140000 vs page 0: bit-identical', np.array_equal(a, b), 'max abs diff', float(np.abs(a-b).max()))" "$W/kvfp8.npy" "$W/kvfp8-0.npy"
