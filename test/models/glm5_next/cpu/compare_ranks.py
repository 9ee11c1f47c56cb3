#!/usr/bin/env python3
"""Compares the dumps of a sharded run with those of one rank.

Usage: compare_ranks.py NAME REF_LOGITS LOGITS [--ref-ids F --ids F] [--rtol R]
                        [--median-rtol M]

A row's error is its largest absolute difference over its largest absolute
reference logit. Logits match when every row's error is at most R (default
1e-6: fp32 mode sums in f64, so the ranks' other order of additions
shows only in the last bits, measured at most 4.5e-7); with --median-rtol,
when the median row's is at most M instead (bf16
activations: rounding flips make a few rows of the tiny random models differ
by up to 0.3 between two correct runs, while the median row stays below 0.01;
a run with the wrong experts is near 0.5). Ids must be equal. Prints one PASS
or FAIL line per check with the worst (and median) row's error.
"""
import argparse
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("ref_logits")
    parser.add_argument("logits")
    parser.add_argument("--ref-ids")
    parser.add_argument("--ids")
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--median-rtol", type=float)
    args = parser.parse_args()

    ok = True
    ref, got = np.load(args.ref_logits), np.load(args.logits)
    if ref.shape != got.shape:
        print(f"FAIL {args.name} logits: shape {got.shape}, expected {ref.shape}")
        return 1
    scale = np.maximum(np.abs(ref).max(axis=1), np.finfo(np.float32).tiny)
    error = np.abs(got - ref).max(axis=1) / scale
    worst = float(error.max())
    if args.median_rtol is None:
        verdict = "PASS" if worst <= args.rtol else "FAIL"
        measured = f"worst relative error {worst:.2e} (bound {args.rtol:.0e})"
    else:
        median = float(np.median(error))
        verdict = "PASS" if median <= args.median_rtol else "FAIL"
        measured = (f"median relative error {median:.2e} (bound "
                    f"{args.median_rtol:.0e}), worst {worst:.2e}")
    ok &= verdict == "PASS"
    print(f"{verdict} {args.name} logits: {ref.shape[0]} rows, {measured}")
    if args.ref_ids:
        ref_ids, ids = np.load(args.ref_ids), np.load(args.ids)
        same = ref_ids.shape == ids.shape and np.array_equal(ref_ids, ids)
        ok &= same
        print(f"{'PASS' if same else 'FAIL'} {args.name} greedy ids: "
              f"{int(np.sum(ref_ids == ids)) if ref_ids.shape == ids.shape else 0}"
              f" of {ref_ids.size} equal")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
