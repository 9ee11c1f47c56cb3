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

With --fp8 the pool holds fp8 pages (docs/KVCache.md "fp8 latent pages": per
row R e4m3 bytes, then one f32 scale per 128 lanes, 528-byte rows; pages of
[rows * 528 rounded up to 256] bytes) and the definition's latent rows are
round_bf16(f32(e4m3 value * scale)), the kernel's decode into its bf16 tile.

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

SPLIT_SLOTS = 128       # MlaSplit.h kMlaSplitSlots
SPLIT_MAX_TOKENS = 64   # kMlaSplitMaxTokens


FP8_GROUP = 128          # Fp8PageLayout::rowInterleaved: lanes per scale
PAGE_ALIGNMENT = 256     # kCachePageAlignment


def decode_e4m3(codes):
    """OCP e4m3 (f8E4M3FN) codes as float64 (no NaN codes given)."""
    codes = codes.astype(np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exp, mant = (codes >> 3) & 0xF, codes & 7
    return sign * np.where(exp == 0, mant / 8.0 * 2.0 ** -6,
                           (1 + mant / 8.0) * 2.0 ** (exp - 7.0))


def fp8_pages(rng, num_pages, rows, width):
    """Random fp8 latent pages: (the pool's bytes [pages, page bytes] as
    uint8, each row's latent values as the kernel decodes them, float64)."""
    groups = width // FP8_GROUP
    row_bytes = width + 4 * groups
    page_bytes = -(-rows * row_bytes // PAGE_ALIGNMENT) * PAGE_ALIGNMENT
    codes = rng.integers(0, 256, (num_pages, rows, width))
    codes[(codes & 0x7F) == 0x7F] = 0x3F  # no NaN codes
    scales = (2.0 ** rng.uniform(-12, -4, (num_pages, rows, groups)) *
              rng.uniform(1, 2, (num_pages, rows, groups))).astype(np.float32)
    pages = np.zeros((num_pages, page_bytes), np.uint8)
    record = np.concatenate(
        [codes.astype(np.uint8), scales.view(np.uint8).reshape(
            num_pages, rows, 4 * groups)], axis=2)
    pages[:, :rows * row_bytes] = record.reshape(num_pages, rows * row_bytes)
    per_lane = np.repeat(scales, FP8_GROUP, axis=2)
    values = (decode_e4m3(codes).astype(np.float32) * per_lane).astype(
        np.float32)
    return pages, round_bf16(values)


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
    ap.add_argument("--fp8", action="store_true",
                    help="fp8 latent pages (row-interleaved values, scales)")
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
        if args.fp8:
            lat_bits, lat = fp8_pages(rng, num_pages, args.page, R)
        else:
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
