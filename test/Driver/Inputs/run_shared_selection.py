"""Runs the MTP draft chain's shared selection kernels (llm.shared_selection_
write / read, the generic kernels of CacheOps.cpp) from their GPU-dialect IR on
the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares the cache and
the rows read back with the ops' definitions: a step 0 of three requests (5,
1 and 3 tokens) keeps each request's last `rows` rows (the last token in row
rows - 1, the rows of a shorter request before it untouched), then a chain
step of four requests reads rows 3, 0, 2 and an out-of-range -1 (the last
row).

    run_shared_selection.py CHIP.gpu.mlir --lanes 32
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402

FIRST = 64  # SharedSelectionType::kSelectionColumn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    args = ap.parse_args()
    R, W = args.rows, args.width
    rng = np.random.default_rng(5)
    slots_n = 4
    cache = rng.integers(-9, 9, (slots_n, R, FIRST + W)).astype(np.int32)
    starts = np.array([0, 5, 6, 9], np.int32)
    slots = np.array([3, 0, 1], np.int32)
    T = int(starts[-1])
    selection = rng.integers(0, 5000, (T, W)).astype(np.int32)
    counts = rng.integers(1, W + 1, T).astype(np.int32)
    want = cache.copy()
    for r in range(len(slots)):
        end = starts[r + 1]
        for t in range(max(starts[r], end - R), end):
            row = R - (end - t)
            want[slots[r], row, 0] = counts[t]
            want[slots[r], row, FIRST:] = selection[t]
    load_kernel(args.ir, "shared_selection_write_0").run(
        [cache, selection, counts, starts, slots], grid=(T, 1, 1),
        subgroup_size=args.lanes)
    ok = np.array_equal(cache, want)
    print("write:", "equal" if ok else "DIFFERS")

    positions = np.array([11, 7, 20, 4], np.int32)
    rstarts = np.arange(5, dtype=np.int32)
    rslots = np.array([3, 0, 1, 3], np.int32)
    rows = np.array([3, 0, 2, -1], np.int32)
    out_sel = np.full((4, W), -7, np.int32)
    out_counts = np.full(4, -7, np.int32)
    load_kernel(args.ir, "shared_selection_read_0").run(
        [cache, positions, rstarts, rslots, rows, out_sel, out_counts],
        grid=(4, 1, 1), subgroup_size=args.lanes)
    picked = np.where((rows >= 0) & (rows < R), rows, R - 1)
    read_ok = (np.array_equal(out_sel, want[rslots, picked, FIRST:]) and
               np.array_equal(out_counts, want[rslots, picked, 0]))
    print("read:", "equal" if read_ok else "DIFFERS")
    ok &= read_ok
    print("shared_selection:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
