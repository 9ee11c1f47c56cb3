"""Runs the kpool_select kernel (KpoolSelectKernel.cpp) from its GPU-dialect IR
on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares its
selection and counts with the selection's definition (IndexerOps.cpp): per
token the top min(topk / kpool, visible) pools by score (ties to the lowest
pool) in pool order, each expanded to kpool positions, then the open tail,
then -1. The scores are drawn from a few values (ties at the threshold, +0 and
-0, negatives); the tokens cover no pool, every pool selected, one pool more
than topk / kpool, several count steps and several emitting tiles.

    run_kpool_select.py CHIP.gpu.mlir --lanes 32 --topk 64 --kpool 4 --rows 16 --width 128
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402


def reference(positions, scores, topk, kpool, width):
    tokens = len(positions)
    sel = np.full((tokens, width), -1, np.int32)
    counts = np.zeros(tokens, np.int32)
    flat = scores.reshape(tokens, -1)
    for t in range(tokens):
        length = int(positions[t]) + 1
        visible = length // kpool
        num_sel = min(topk // kpool, visible)
        if num_sel >= visible:
            pools = list(range(visible))
        else:
            s = flat[t, :visible].astype(np.float64)
            order = sorted(range(visible), key=lambda p: (-s[p], p))
            pools = sorted(order[:num_sel])
        out = [p * kpool + k for p in pools for k in range(kpool)]
        out += list(range(visible * kpool, length))
        sel[t, :len(out)] = out
        counts[t] = len(out)
    return sel, counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", default="kpool_indexer_0")
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--topk", type=int, required=True)
    ap.add_argument("--kpool", type=int, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--lengths", default="3,64,70,1001,36003,20001")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    lengths = [int(x) for x in args.lengths.split(",")]
    positions = np.array([n - 1 for n in lengths], np.int32)
    pools = max(n // args.kpool for n in lengths)
    pages = -(-pools // args.rows)
    values = np.array([3.0, 2.5, 1.0, 0.0, -0.0, -1.5, 7.25], np.float32)
    scores = values[rng.integers(0, len(values),
                                 (len(lengths), pages, args.rows))]
    # The last token's pools rise, so that no digit run is long.
    scores[-1] = np.arange(pages * args.rows, dtype=np.float32).reshape(
        pages, args.rows) * np.float32(0.37) - 900
    sel = np.full((len(lengths), args.width), 7, np.int32)
    counts = np.full(len(lengths), 7, np.int32)
    kernel = load_kernel(args.ir, args.kernel)
    kernel.run([positions, scores, sel, counts], grid=(len(lengths), 1, 1),
               subgroup_size=args.lanes)
    want_sel, want_counts = reference(positions, scores, args.topk,
                                      args.kpool, args.width)
    ok = True
    for t, n in enumerate(lengths):
        same = (np.array_equal(sel[t], want_sel[t]) and
                counts[t] == want_counts[t])
        ok &= same
        print(f"token {t}: length {n}, count {counts[t]} (expected "
              f"{want_counts[t]}), selection {'equal' if same else 'DIFFERS'}")
        if not same:
            bad = np.nonzero(sel[t] != want_sel[t])[0][:8]
            print("  first differences at", bad.tolist(), sel[t][bad].tolist(),
                  want_sel[t][bad].tolist())
    print("kpool_select:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
