"""Runs the mla_combine kernel (MlaCombineKernel.cpp) from its GPU-dialect IR on
the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares it with
MlaSplit.h's contract: a step of T <= 64 tokens has S = min(64, 128 / T)
ranges per token, range s of token t in row t S + s of parts [128, H, R + 2] (its
normalised latent sum, maximum m_s, sum l_s; empty ranges m = -inf, l = 0), and
oh[t, h] = sum_s (w_s / sum w) o_s with w_s = exp(m_s - max m) l_s. The kernel
sums the weights in a tree, so the comparison is relative (1e-6).

    run_mla_combine.py CHIP.gpu.mlir --lanes 64 --heads 2 --width 512 --tokens 1,3
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402

SLOTS = 128       # MlaSplit.h kMlaSplitSlots
MAX_RANGES = 64   # kMlaSplitMaxRanges
MAX_TOKENS = 64   # kMlaSplitMaxTokens
NARROW_MAX_TOKENS = 2  # kMlaCombineNarrowMaxTokens


def ranges_per_token(tokens):
    return min(MAX_RANGES, SLOTS // tokens)


def reference(parts, tokens, heads, width):
    splits = ranges_per_token(tokens)
    oh = np.zeros((tokens, heads, width))
    for t in range(tokens):
        for h in range(heads):
            rows = parts[t * splits:(t + 1) * splits, h].astype(np.float64)
            m, l = rows[:, width], rows[:, width + 1]
            w = np.where(l > 0, np.exp(m - m.max()) * l, 0.0)
            oh[t, h] = (w[:, None] * np.nan_to_num(rows[:, :width])).sum(0) / w.sum()
    return oh


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", default="mla_combine_0")
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--tokens", default="1,3,32")
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    ok = True
    for tokens in [int(x) for x in args.tokens.split(",")]:
        splits = ranges_per_token(tokens)
        parts = rng.standard_normal((SLOTS, args.heads, args.width + 2)).astype(
            np.float32)
        parts[:, :, args.width + 1] = rng.uniform(0.5, 40, (SLOTS, args.heads))
        # A third of the ranges empty (the first of each token among them):
        # nothing to read (NaN here), -inf maximum, zero sum.
        empty = rng.random(SLOTS) < 0.35
        empty[::splits] = True
        empty[1::splits] = False
        parts[empty, :, :args.width] = np.nan
        parts[empty, :, args.width] = -np.inf
        parts[empty, :, args.width + 1] = 0
        oh = np.full((tokens, args.heads, args.width), -7, np.float32)
        kernel = load_kernel(args.ir, args.kernel)
        # One block per (token, head, column block): a column per thread in
        # steps of at most NARROW_MAX_TOKENS tokens, else one block.
        blocks = args.width // kernel.block[0] if tokens <= NARROW_MAX_TOKENS else 1
        kernel.run([oh, parts],
                   grid=(min(tokens, MAX_TOKENS), args.heads, blocks),
                   subgroup_size=args.lanes)
        want = reference(parts, tokens, args.heads, args.width)
        err = np.abs(oh - want).max() / np.abs(want).max()
        ok &= bool(err < 1e-6)
        print(f"T = {tokens}: {splits} ranges per token, largest "
              f"relative difference {'below 1e-6' if err < 1e-6 else err}")
    print("mla_combine:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
