"""Runs the matrix-unit sparse MLA attention (MlaAttendKernel.cpp's
mla_attend, then MlaCombineKernel.cpp's mla_combine for steps that split a
token's positions into ranges, MlaSplit.h) from their GPU-dialect IR on the
CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares oh with MlaOps.cpp's
definition in float64: per (token t of request r, head h), the softmax over
the token's count selected positions of scale * qa[t, h] . latent_p (the
latent row of position p through the request's block table), and oh =
sum_p softmax_p latent_p. The kernel's rounding points beyond fp32 (its
header): qa and the unnormalised probabilities enter the matrix unit as bf16.
The definition rounds qa the same way; the probabilities' rounding (at the
running maximum of each chunk) is within 2^-8 of the sum of the terms'
magnitudes, the bound every oh element must meet (a wrong row, position or
softmax is off by far more). Each step size runs on the grids the artifact
launches (strata-dump's formulas).

    run_mla_attend.py CHIP.gpu.mlir --dump DUMP --chip gfx942 --lanes 64 \\
        --heads 2 --scale 0.0625 --tokens 1,3,40
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from run_grouped_experts import round_bf16  # noqa: E402
from run_linear import bf16, launch_grid  # noqa: E402

SPLIT_SLOTS = 64        # MlaSplit.h kMlaSplitSlots
SPLIT_MAX_TOKENS = 32   # kMlaSplitMaxTokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--dump", required=True)
    ap.add_argument("--chip", required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--rank", type=int, default=512)
    ap.add_argument("--page", type=int, default=64)
    ap.add_argument("--width", type=int, default=128,
                    help="selection slots per token")
    ap.add_argument("--scale", type=float, required=True)
    ap.add_argument("--tokens", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(13)
    dump = open(args.dump).read()
    attend = load_kernel(args.ir, "mla_attend_0")
    combine = load_kernel(args.ir, "mla_combine_0")
    H, R = args.heads, args.rank
    ok = True
    for T in [int(v) for v in args.tokens.split(",")]:
        # Two requests; request 1 has a context of 300 positions.
        contexts = [150, 300]
        owner = [t % 2 for t in range(T)]
        order = np.argsort(owner, kind="stable")
        owner = [owner[i] for i in order]
        starts = np.array([0, owner.count(0), T], np.int32)
        pages_per_request = -(-max(contexts) // args.page)
        num_pages = 2 * pages_per_request + 1
        table = rng.permutation(num_pages)[:2 * pages_per_request].reshape(
            2, pages_per_request).astype(np.int32)
        lat_bits, lat = bf16(rng, (num_pages, args.page, R))
        qa = (rng.standard_normal((T, H, R)) * 0.05).astype(np.float32)
        sel = np.full((T, args.width), -1, np.int32)
        counts = np.zeros(T, np.int32)
        for t in range(T):
            # Counts from 0 (an empty selection) to the whole width.
            count = [0, 1, 33, args.width, 70][t % 5]
            counts[t] = count
            sel[t, :count] = rng.choice(contexts[owner[t]], count,
                                        replace=False)
        oh = np.full((T, H, R), -7.0, np.float32)
        parts = np.full((SPLIT_SLOTS, H, R + 2), np.nan, np.float32)
        attend.run([qa, lat_bits, sel, counts, starts, table, oh, parts],
                   grid=launch_grid(dump, args.chip, "mla_attend_0", T),
                   subgroup_size=args.lanes)
        if T <= SPLIT_MAX_TOKENS:
            combine.run([oh, parts],
                        grid=launch_grid(dump, args.chip, "mla_combine_0", T),
                        subgroup_size=args.lanes)
        worst = 0.0
        for t in range(T):
            c = counts[t]
            pos = sel[t, :c]
            rows = lat[table[owner[t]][pos // args.page], pos % args.page]
            for h in range(H):
                if c == 0:
                    want, size = np.zeros(R), np.ones(R)
                else:
                    s = args.scale * (rows @ round_bf16(qa[t, h]))
                    p = np.exp(s - s.max())
                    p /= p.sum()
                    want = p @ rows
                    size = p @ np.abs(rows)
                worst = max(worst, float((np.abs(oh[t, h] - want) /
                                          (size + 1e-30)).max()))
        ok &= worst < 2.0 ** -8
        print(f"T = {T}: largest difference "
              f"{'below 2^-8' if worst < 2.0 ** -8 else worst} of the terms' "
              f"magnitudes")
    print("mla_attend:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
