"""Runs the mhc_mix kernel (MhcMixKernel.cpp) from its GPU-dialect IR on the
CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares it with MhcMix.h's
contract: for slice s of token t's flattened bf16 streams r (h d values in 16
slices), parts[t, s, j] = the slice's dot product with fn row j (j < mix) and
parts[t, s, mix] its sum of squares, in f32 (the kernel sums over its lanes:
within 1e-6 of the sum of the terms' magnitudes).

    run_mhc_mix.py CHIP.gpu.mlir --lanes 64 --tokens 1,11
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", default="mhc_mix_0")
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--hc", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--mix", type=int, default=24)
    ap.add_argument("--slices", type=int, default=16)
    ap.add_argument("--tokens", default="1,11")
    args = ap.parse_args()
    rng = np.random.default_rng(9)
    flat = args.hc * args.width
    per = flat // args.slices
    ok = True
    for tokens in [int(x) for x in args.tokens.split(",")]:
        # bf16 streams: the top halves of f32 values (exactly representable).
        r32 = rng.standard_normal((tokens, args.hc, args.width)).astype(
            np.float32)
        streams = (r32.view(np.uint32) >> 16).astype(np.uint16)
        r = (streams.astype(np.uint32) << 16).view(np.float32).astype(
            np.float64).reshape(tokens, flat)
        fn = rng.standard_normal((args.mix, flat)).astype(np.float32)
        parts = np.full((tokens, args.slices, args.mix + 1), -7, np.float32)
        tiles = -(-tokens // 8)
        load_kernel(args.ir, args.kernel).run(
            [streams, fn, parts], grid=(tiles, args.slices, 1),
            subgroup_size=args.lanes)
        worst = 0.0
        for s in range(args.slices):
            x = r[:, s * per:(s + 1) * per]
            w = fn[:, s * per:(s + 1) * per].astype(np.float64)
            want = np.concatenate([x @ w.T, (x * x).sum(1, keepdims=True)], 1)
            scale = np.concatenate([np.abs(x) @ np.abs(w).T,
                                    (x * x).sum(1, keepdims=True)], 1)
            worst = max(worst, float((np.abs(parts[:, s] - want) / scale).max()))
        ok &= worst < 1e-6
        print(f"T = {tokens}: largest difference "
              f"{'below 1e-6' if worst < 1e-6 else worst} of the terms' magnitudes")
    print("mhc_mix:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
