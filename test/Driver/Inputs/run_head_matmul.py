"""Runs a head-batched matrix-unit matmul (MLA's mla_absorb / mla_project,
MatmulKernel.cpp's DenseMatmul with heads) from its GPU-dialect IR on the
CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares what the chosen
blocks wrote with the product in float64:

    y[t, h, n] = sum_k x[t, h, k] * B_h[k, n]

where B_h is W[h * stride + offset + k, n] with --transposed (W_UK read as
[K, N] rows: absorb) and W[h * stride + offset + n, k] without (project).
x is bf16 (or f32 with --f32-in, rounded to bf16 by the kernel), y f32 (or
bf16 with --bf16-out). The grid is the staged tiles' (ceil(M / tile rows),
N / tile columns, heads); only the blocks of --blocks run (the interpreter
is slow), so the check is that every element they wrote is within 1e-5 of
the sum of the terms' magnitudes (one bf16 rounding more for bf16 y), and
that each block wrote one whole tile (its rows within the step).

    run_head_matmul.py KERNEL.gpu.mlir --kernel mla_absorb_0 --lanes 64 \\
        --heads 2 --k 256 --n 512 --rows 4096 --stride 512 --offset 0 \\
        --transposed --tile 128,128 --blocks 0,0,0:31,3,1
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from run_linear import bf16  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--rows", type=int, required=True)
    ap.add_argument("--stride", type=int, required=True)
    ap.add_argument("--offset", type=int, required=True)
    ap.add_argument("--weight-rows", type=int, required=True)
    ap.add_argument("--weight-cols", type=int, required=True)
    ap.add_argument("--transposed", action="store_true")
    ap.add_argument("--f32-in", action="store_true")
    ap.add_argument("--bf16-out", action="store_true")
    ap.add_argument("--tile", required=True, help="rows,columns of a block")
    ap.add_argument("--blocks", required=True,
                    help="x,y,z block ids separated by ':'")
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    kernel = load_kernel(args.ir, args.kernel)
    m, h, k, n = args.rows, args.heads, args.k, args.n
    x_bits, x = bf16(rng, (m, h, k))
    x_arg = x.astype(np.float32) if args.f32_in else x_bits
    w_bits, w = bf16(rng, (args.weight_rows, args.weight_cols))
    tile_m, tile_n = (int(v) for v in args.tile.split(","))
    grid = (-(-m // tile_m), n // tile_n, h)
    blocks = [tuple(int(v) for v in b.split(",")) for b in
              args.blocks.split(":")]
    nan_bits = 0x7FC0
    y = (np.full((m, h, n), nan_bits, np.uint16) if args.bf16_out else
         np.full((m, h, n), np.nan, np.float32))
    kernel.run([x_arg, w_bits, y], grid=grid, subgroup_size=args.lanes,
               blocks=blocks)
    got = ((y.astype(np.uint32) << 16).view(np.float32) if args.bf16_out
           else y).astype(np.float64)
    want = np.empty((m, h, n))
    size = np.empty((m, h, n))
    for head in range(h):
        base = head * args.stride + args.offset
        b = (w[base:base + k, :n] if args.transposed else
             w[base:base + n, :k].T)
        want[:, head] = x[:, head] @ b
        size[:, head] = np.abs(x[:, head]) @ np.abs(b)
    written = ~np.isnan(got)
    bound = 1e-5 * size + (2.0 ** -8 * np.abs(want) if args.bf16_out else 0)
    worst = float((np.abs(got - want)[written] /
                   (bound[written] + 1e-30)).max()) if written.any() else 0
    # The tiles the blocks wrote (a block's tile follows the kernel's block
    # order): each one whole (its rows within the step), one per block.
    t_idx, h_idx, n_idx = np.nonzero(written)
    tiles = set(zip(t_idx // tile_m, n_idx // tile_n, h_idx))
    whole = len(tiles) == len(blocks) and all(
        written[r * tile_m:(r + 1) * tile_m, head,
                c * tile_n:(c + 1) * tile_n].all() for r, c, head in tiles)
    print(f"{args.kernel}: {len(blocks)} of the grid {grid}'s blocks wrote "
          f"{int(written.sum())} values ({'whole tiles' if whole else 'NOT whole tiles'}); "
          f"largest difference "
          f"{'within the bound' if worst <= 1.0 else f'{worst:.3g}x the bound'}")
    ok = whole and worst <= 1.0
    print(f"{args.kernel}:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
