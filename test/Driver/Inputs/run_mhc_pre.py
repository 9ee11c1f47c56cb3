"""Runs the mhc_pre kernel (MhcPreKernel.cpp, the x_norm form the fused model
uses) from its GPU-dialect IR on the CPU (test/Tools/Inputs/
gpu_ir_interpreter.py) and compares it with llm.mhc_pre's definition
(dialects/llm/IR/LLMOps.td), computed here in float64 from the same mhc_mix
partial sums (MhcMix.h): m = (sum of the slices' dots) * rsqrt(sum of squares
/ (h d) + norm_eps); pre, post by sigmoids; comb by softmax and Sinkhorn;
x0 = sum_s pre_s R[s], rounded to bf16, normalised, rounded, times w, rounded.
post and comb within 1e-5; x within one bf16 step (the float64 reference and
the kernel's f32 may round a value on either side).

    run_mhc_pre.py CHIP.gpu.mlir --lanes 64 --tokens 3
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from kernel_values import to_bf16, from_bf16, sigmoid  # noqa: E402


def reference(r, parts, base, scale, w, hc, iters, hc_eps, norm_eps,
              post_mult, x_eps):
    tokens, _, width = r.shape
    mix = (2 + hc) * hc
    sums = parts.astype(np.float64).sum(1)  # [T, mix + 1]
    inv = 1.0 / np.sqrt(sums[:, mix] / (hc * width) + norm_eps)
    m = sums[:, :mix] * inv[:, None]
    pre = sigmoid(m[:, :hc] * scale[0] + base[:hc]) + hc_eps
    post = post_mult * sigmoid(m[:, hc:2 * hc] * scale[1] + base[hc:2 * hc])
    c = (m[:, 2 * hc:] * scale[2] + base[2 * hc:]).reshape(tokens, hc, hc)
    c = np.exp(c - c.max(2, keepdims=True))
    c = c / c.sum(2, keepdims=True) + hc_eps
    c = c / (c.sum(1, keepdims=True) + hc_eps)
    for _ in range(iters - 1):
        c = c / (c.sum(2, keepdims=True) + hc_eps)
        c = c / (c.sum(1, keepdims=True) + hc_eps)
    x0 = (pre[:, :, None] * r.astype(np.float64)).sum(1)
    x0 = from_bf16(to_bf16(x0.astype(np.float32))).astype(np.float64)
    n = x0 / np.sqrt((x0 * x0).mean(1, keepdims=True) + x_eps)
    n = from_bf16(to_bf16(n.astype(np.float32))).astype(np.float64)
    x = from_bf16(to_bf16((n * w).astype(np.float32))).astype(np.float64)
    return x, post, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", default="mhc_pre_0")
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--hc", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--slices", type=int, default=16)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(4)
    hc, width, tokens = args.hc, args.width, args.tokens
    mix = (2 + hc) * hc
    r_bits = to_bf16(rng.standard_normal((tokens, hc, width)))
    r = from_bf16(r_bits)
    fn = (rng.standard_normal((mix, hc * width)) * 0.05).astype(np.float32)
    flat = r.reshape(tokens, hc * width).astype(np.float64)
    per = hc * width // args.slices
    parts = np.zeros((tokens, args.slices, mix + 1), np.float32)
    for s in range(args.slices):
        x = flat[:, s * per:(s + 1) * per]
        parts[:, s, :mix] = x @ fn[:, s * per:(s + 1) * per].T
        parts[:, s, mix] = (x * x).sum(1)
    base = rng.uniform(-1, 1, mix).astype(np.float32)
    scale = np.array([0.7, 1.3, 0.9], np.float32)
    w_bits = to_bf16(rng.uniform(0.5, 1.5, width))
    x = np.zeros((tokens, width), np.uint16)
    post = np.full((tokens, hc), -7, np.float32)
    comb = np.full((tokens, hc, hc), -7, np.float32)
    load_kernel(args.ir, args.kernel).run(
        [r_bits, parts, base, scale, w_bits, x, post, comb],
        grid=(tokens, 1, 1), subgroup_size=args.lanes)
    want_x, want_post, want_comb = reference(
        r, parts, base.astype(np.float64), scale.astype(np.float64),
        from_bf16(w_bits).astype(np.float64), hc, args.iters, 1e-6, 1e-5,
        2.0, 1e-5)
    got_x = from_bf16(x).astype(np.float64)
    # One bf16 step of the reference's value: at most 2^-7 of its magnitude.
    steps = np.abs(got_x - want_x) / np.maximum(np.abs(want_x), 1e-30)
    x_ok = bool((steps <= 2.0 ** -7 * 1.01).all())
    post_err = float(np.abs(post - want_post).max())
    comb_err = float(np.abs(comb - want_comb).max())
    print(f"x: {'within one bf16 step' if x_ok else 'DIFFERS'} "
          f"({int((steps > 0).sum())} of {steps.size} values differ)")
    print(f"post: {'within 1e-5' if post_err < 1e-5 else post_err}")
    print(f"comb: {'within 1e-5' if comb_err < 1e-5 else comb_err}")
    ok = x_ok and post_err < 1e-5 and comb_err < 1e-5
    print("mhc_pre:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
