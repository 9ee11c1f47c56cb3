#!/usr/bin/env python3
"""Compares the dumps of a sharded run with those of one rank.

Usage: compare_ranks.py NAME REF_LOGITS LOGITS [--ref-ids F --ids F] [--rtol R]

Logits match when every row's largest absolute difference is at most R
(default 1e-5) times the row's largest absolute reference logit; ids must be
equal. Prints one PASS or FAIL line per check with the worst row's error.
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
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()

    ok = True
    ref, got = np.load(args.ref_logits), np.load(args.logits)
    if ref.shape != got.shape:
        print(f"FAIL {args.name} logits: shape {got.shape}, expected {ref.shape}")
        return 1
    scale = np.maximum(np.abs(ref).max(axis=1), np.finfo(np.float32).tiny)
    error = np.abs(got - ref).max(axis=1) / scale
    worst = float(error.max())
    verdict = "PASS" if worst <= args.rtol else "FAIL"
    ok &= verdict == "PASS"
    print(f"{verdict} {args.name} logits: {ref.shape[0]} rows, worst relative "
          f"error {worst:.2e} (bound {args.rtol:.0e})")
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
