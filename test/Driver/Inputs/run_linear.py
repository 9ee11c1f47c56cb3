"""Runs a matrix-unit linear kernel (MatmulKernel.cpp: y = x W^T, bf16 x and
W, bf16 or f32 y) from its GPU-dialect IR on the CPU
(test/Tools/Inputs/gpu_ir_interpreter.py, whose matrix instructions follow
the ISAs' fragment tables) and compares it with the product in float64: every
element within one bf16 rounding (bf16 y) or 1e-5 (f32 y) of the sum of the
terms' magnitudes. Each M runs on the grid the artifact launches for it: the
kernel's grid formula in strata-dump's listing of the chip's target,
evaluated with the step's rows.

    run_linear.py CHIP.gpu.mlir --dump DUMP.txt --chip gfx942 \
        --kernel linear_0 --lanes 64 --k 256 --n 256 --rows 1,130

With --fp8 the weight is e4m3 (OCP) with f32 scales per 128 x 128 block
(arguments x, W, scales, y) and the reference multiplies by its exact
values; steps of more than --quantised-above rows (AMD's row tiles, which
quantise each row of x per 128-wide K block onto the fp8 MFMA) are compared
with the product of the rows as the kernel quantises them
(run_grouped_experts.quantised_rows), the smaller ones (the decode forms,
which decode the weight onto the bf16 MFMA) with x as it is.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402


def bf16(rng, shape):
    """Random bf16 values: (bits as uint16, values as float64)."""
    x = rng.standard_normal(shape).astype(np.float32)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32).astype(
        np.float64)


def split_top(text):
    """`text` split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def launch_grid(dump, chip, kernel, rows):
    """The grid strata-dump lists for `kernel` on `chip`, at `rows` rows."""
    section = dump.split(f"target {chip} ")[1].split("\ntarget ")[0]
    entry = section.split(f"'{kernel}': ")[1]
    grid = entry.split(" grid [")[1]
    depth, end = 1, 0
    for end, ch in enumerate(grid):
        depth += (ch == "[") - (ch == "]")
        if depth == 0:
            break
    names = {"num_tokens": rows, "logit_rows": rows,
             "ceil_div": lambda a, b: -(-a // b)}
    return tuple(int(eval(dim, {"__builtins__": {"max": max, "min": min}},
                          names))
                 for dim in split_top(grid[:end]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--k", type=int, required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--f32-out", action="store_true")
    ap.add_argument("--dump", required=True, help="strata-dump's listing")
    ap.add_argument("--chip", required=True)
    ap.add_argument("--rows", required=True, help="M values, comma-separated")
    ap.add_argument("--fp8", action="store_true",
                    help="e4m3 weight with 128 x 128 block scales")
    ap.add_argument("--quantised-above", type=int, default=None,
                    help="with --fp8: steps of more rows quantise x")
    args = ap.parse_args()
    dump = open(args.dump).read()
    rng = np.random.default_rng(5)
    kernel = load_kernel(args.ir, args.kernel)
    ok = True
    for m in [int(v) for v in args.rows.split(",")]:
        gx, gy, _ = launch_grid(dump, args.chip, args.kernel, m)
        x_bits, x = bf16(rng, (m, args.k))
        if args.fp8:
            from run_grouped_experts import fp8_weights, quantised_rows
            codes, scales, w = fp8_weights(rng, (1, args.n, args.k))
            weight_args, w = [codes[0], scales[0]], w[0]
            if args.quantised_above is not None and m > args.quantised_above:
                x = quantised_rows(x, fnuz=args.chip == "gfx942")
        else:
            w_bits, w = bf16(rng, (args.n, args.k))
            weight_args = [w_bits]
        if args.f32_out:
            y = np.full((m, args.n), np.float32(-7), np.float32)
        else:
            y = np.full((m, args.n), 0xC0E0, np.uint16)  # -7 in bf16
        kernel.run([x_bits, *weight_args, y], grid=(gx, gy, 1),
                   subgroup_size=args.lanes)
        got = (y.astype(np.float64) if args.f32_out else
               (y.astype(np.uint32) << 16).view(np.float32).astype(np.float64))
        want = x @ w.T
        size = np.abs(x) @ np.abs(w).T
        bound = 1e-5 * size if args.f32_out else 2.0 ** -8 * np.abs(want) + \
            1e-5 * size
        worst = float((np.abs(got - want) / (bound + 1e-30)).max())
        ok &= worst <= 1.0
        print(f"M = {m}, grid {gx}x{gy}: largest difference "
              f"{'within the bound' if worst <= 1.0 else f'{worst:.3g}x the bound'}")
    print(f"{args.kernel}:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
