"""Runs a linear kernel's row tiles with K split over the grid
(MatmulKernel.cpp buildGridSplit) from its GPU-dialect IR on the CPU
(test/Tools/Inputs/gpu_ir_interpreter.py) and checks them:

- y against x W^T in float64 (every element within one bf16 rounding of its
  value plus 1e-5 of the sum of the terms' magnitudes), for steps of the
  split's rows, on the grid the split form launches: (ceil(M / tileM),
  N / tileN, splits) from the function's `strata.tile` and
  `strata.grid_split_k`;
- the arrival counters are all zero again after the dispatch;
- without the last split's blocks (grid z cut to splits - 1) no tile is
  finished: y keeps its initial values, since only the last block of a tile
  to arrive adds the slices and stores.

    run_grid_split.py KERNELS.mlir --kernel NAME --lanes 32 --k 8192 \
        --n 128 --rows 130 [--tiles 2:0,0:1]

KERNELS.mlir is `strata-opt --convert-llm-to-gpu=chip=... \
--mlir-print-op-generic` output.
"""

import argparse
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Tools", "Inputs"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Driver", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from run_linear import bf16  # noqa: E402


def func_attr(text, kernel, name):
    """The i64 array attribute `name` of gpu.func `kernel` in generic form."""
    line = next(l for l in text.splitlines()
                if f'sym_name = "{kernel}"' in l and l.lstrip().startswith("})"))
    m = re.search(rf'"?{re.escape(name)}"? = array<i64: ([\d, ]+)>', line)
    if not m:
        sys.exit(f"gpu.func {kernel} has no {name}")
    return [int(v) for v in m.group(1).split(",")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--rows", required=True, help="M values, comma-separated")
    ap.add_argument("--form", default="tiles",
                    choices=["one-row", "multi-row", "tiles"],
                    help="the form whose split runs: the decode forms "
                    "(16 columns a block, strata.decode_grid_splits) or the "
                    "row tiles (strata.grid_split_k)")
    ap.add_argument("--tiles", default=None,
                    help="run only these tiles (X:Y,...; each with all its "
                    "splits) and check their part of y; default every tile")
    args = ap.parse_args()
    text = open(args.ir).read()
    tile_m, tile_n = func_attr(text, args.kernel, "strata.tile")
    if args.form == "tiles":
        # The first split of the row tiles (sm_90: the only one).
        splits, min_rows, max_rows, tile_m, tile_n = func_attr(
            text, args.kernel, "strata.grid_split_k")[:5]
    else:
        # The decode forms: blocks of 16 columns over the row tiles' rows.
        one_row, multi_row = func_attr(text, args.kernel,
                                       "strata.decode_grid_splits")
        tile_n = 16
        splits, min_rows, max_rows = ((one_row, 1, 16)
                                      if args.form == "one-row" else
                                      (multi_row, 17, 128))
    print(f"{args.form}: blocks of {tile_m}x{tile_n}, {splits} splits for "
          f"{min_rows}..{max_rows} rows")
    kernel = load_kernel(args.ir, args.kernel)
    rng = np.random.default_rng(7)
    ok = True
    for m in [int(v) for v in args.rows.split(",")]:
        if not min_rows <= m <= max_rows:
            sys.exit(f"M = {m} is outside the split's rows")
        grid = (-(-m // tile_m), args.n // tile_n, splits)
        x_bits, x = bf16(rng, (m, args.k))
        w_bits, w = bf16(rng, (args.n, args.k))

        tiles = ([(bx, by) for by in range(grid[1]) for bx in range(grid[0])]
                 if args.tiles is None else
                 [tuple(int(v) for v in t.split(":"))
                  for t in args.tiles.split(",")])
        # The checked part of y: the tiles' rows and columns.
        checked = np.zeros((m, args.n), bool)
        for bx, by in tiles:
            checked[bx * tile_m:(bx + 1) * tile_m,
                    by * tile_n:(by + 1) * tile_n] = True

        def run(z_blocks):
            y = np.full((m, args.n), 0xC0E0, np.uint16)  # -7 in bf16
            counters = np.zeros(grid[0] * grid[1], np.int32)
            scratch = np.zeros(grid[0] * grid[1] * grid[2] * tile_m * tile_n
                               * 4, np.uint8)
            blocks = [(bx, by, bz) for bz in range(z_blocks)
                      for bx, by in tiles]
            kernel.run([x_bits, w_bits, y, counters, scratch], grid=grid,
                       subgroup_size=args.lanes, blocks=blocks)
            return y, counters

        y, counters = run(splits)
        got = (y.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        want = x @ w.T
        bound = 2.0 ** -8 * np.abs(want) + 1e-5 * (np.abs(x) @ np.abs(w).T)
        worst = float((np.abs(got - want) / bound)[checked].max())
        # Tiles not run stay as they were.
        ok &= bool((y[~checked] == 0xC0E0).all())
        zero = not counters.any()
        print(f"M = {m}, grid {grid[0]}x{grid[1]}x{grid[2]}: largest "
              f"difference {'within the bound' if worst <= 1.0 else f'{worst:.3g}x the bound'}"
              f", counters {'zero' if zero else 'left nonzero'}")
        ok &= worst <= 1.0 and zero
        y, counters = run(splits - 1)
        untouched = bool((y == 0xC0E0).all())
        print(f"M = {m} without split {splits - 1}'s blocks: y "
              f"{'untouched' if untouched else 'written'}, the tiles' "
              f"counters at {sorted(set(counters[counters != 0].tolist()))}")
        arrived = [int(counters[bx + grid[0] * by]) for bx, by in tiles]
        ok &= untouched and arrived == [splits - 1] * len(tiles)
    print(f"{args.kernel}:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
