"""Runs a grouped routed-expert kernel (MatmulKernel.cpp's grouped form:
`moe_up` with its SwiGLU epilogue, `moe_down` with the routing weight) from
its GPU-dialect IR on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and
compares it with FfnOps.cpp's definition in float64, bf16 rounding at the
same points:
  moe_up:   a[t, j] = round(round(silu(min(g, L))) * clamp(u, -L, L)),
            g = round(W_gate[e] x[t]), u = round(W_up[e] x[t])
  moe_down: y[t, j] = round(w[t, j] * round(W_down[e] a[t, j]))
for slot j of token t routed to expert e = chosen[t, j], the slots grouped by
expert as moe_group leaves them (order: flat slot ids expert by expert,
token order within; starts [E + 1]). The kernel's sums run in its own order,
so each value may differ by one rounding of a rounded input: within 2^-6 of
its magnitude plus 1e-5 of the terms' (a slot of the wrong expert or row is
off by far more). Each token count runs on the grid the artifact launches for
it (strata-dump's formula, evaluated with num_tokens).

With --x-codes (fp8 expert activations, strata-compile
--expert-activations=fp8) the experts are fp8 as with --fp8 and the kernel
takes x (moe_up) or the activation (moe_down) as e4m3 (OCP) codes with one
f32 scale per row and 128-wide K block (the x_scales argument after it): the
definition's products are the codes' values times their scale against the
weights'.

With --fp8-decoded the experts are e4m3 (OCP) with f32 scales per 128 x 128
block and the kernel decodes them (sm_90, sm_90a): each weight is
round_bf16(f32(q * scale)), the reference's dequantised weight, against bf16
rows of x.

With --fp8 the experts are e4m3 (OCP) with f32 scales per 128 x 128 block and
the kernel is AMD's fp8 MFMA form: each row of x is quantised per 128-wide K
block as the kernel documents it (amax of the block, q = fp8(x * M / amax)
in f32, nearest, ties to even; FNUZ with M = 240 on gfx942, OCP with M = 448
on gfx950), so the definition's products are q * amax / M against the
weight's e4m3 value times its block scale.

    run_grouped_experts.py CHIP.gpu.mlir --dump DUMP --chip gfx942 \\
        --kind up --lanes 64 --tokens 1,20
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from run_linear import bf16, launch_grid  # noqa: E402


def round_bf16(x):
    """float64 values rounded to bf16 (ties to even), as float64."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def to_bits(x):
    """float64 values that are bf16 values, as bf16 bits."""
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def fp8_weights(rng, shape, block=128):
    """Random e4m3 (OCP) weights with f32 block scales: (codes as uint8,
    scales [E, N / block, K / block], values as float64)."""
    from gpu_ir_interpreter import _FP8_FN
    codes = rng.integers(0, 256, shape).astype(np.uint8)
    codes[np.isnan(_FP8_FN[codes])] = 0x38           # NaN codes -> 1.0
    e, n, k = shape
    scales = (rng.random((e, -(-n // block), -(-k // block))) * 0.02 +
              0.01).astype(np.float32)
    full = np.repeat(np.repeat(scales, block, 1), block, 2)[:, :n, :k]
    return codes, scales, _FP8_FN[codes] * full.astype(np.float64)


def quantised_rows(x, fnuz, block=128):
    """x [..., K] as the kernel's fp8 A operand sees it, dequantised: per
    row and K block, fp8(x * max / amax) * amax / max (FNUZ, max 240, on
    gfx942; OCP, max 448, on gfx950)."""
    from gpu_ir_interpreter import _FP8_FN, _FP8_FNUZ, _to_fp8
    table = _FP8_FNUZ if fnuz else _FP8_FN
    fp8_max = 240.0 if fnuz else 448.0
    x32 = x.astype(np.float32)
    out = np.empty(x.shape)
    for k0 in range(0, x.shape[-1], block):
        part = x32[..., k0:k0 + block]
        amax = np.maximum(np.abs(part).max(-1, keepdims=True),
                          np.float32(1e-12))
        inv = np.float32(fp8_max) / amax
        q = np.clip(part * inv, -fp8_max, fp8_max).astype(np.float32)
        codes = _to_fp8(q.reshape(-1), table).reshape(q.shape)
        out[..., k0:k0 + block] = table[codes] * (amax / np.float32(
            fp8_max)).astype(np.float64)
    return out


def coded_rows(rng, shape, block=128):
    """Random e4m3 (OCP) codes of rows [..., K] with f32 scales per row and
    K block: (codes as uint8, scales [..., K / block], values as float64)."""
    from gpu_ir_interpreter import _FP8_FN
    codes = rng.integers(0, 256, shape).astype(np.uint8)
    codes[np.isnan(_FP8_FN[codes])] = 0x38
    scales = (rng.random(shape[:-1] + (-(-shape[-1] // block),)) * 0.01 +
              0.001).astype(np.float32)
    full = np.repeat(scales, block, -1)[..., :shape[-1]].astype(np.float64)
    return codes, scales, _FP8_FN[codes] * full


def routing(rng, tokens, experts, top_k):
    chosen = np.stack([rng.choice(experts, top_k, replace=False)
                       for _ in range(tokens)]).astype(np.int32)
    flat = chosen.reshape(-1)
    order = np.argsort(flat, kind="stable").astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(np.bincount(
        flat, minlength=experts))]).astype(np.int32)
    return chosen, order.reshape(tokens, top_k), starts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--dump", required=True)
    ap.add_argument("--chip", required=True)
    ap.add_argument("--kind", choices=("up", "down"), required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--inter", type=int, default=128)
    ap.add_argument("--experts", type=int, default=16)
    ap.add_argument("--top-k", type=int, default=4)
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--fp8", action="store_true")
    ap.add_argument("--fp8-decoded", action="store_true")
    ap.add_argument("--x-codes", action="store_true")
    args = ap.parse_args()
    decoded = args.fp8_decoded
    args.fp8 = args.fp8 or args.x_codes or decoded
    rng = np.random.default_rng(3)
    name = f"moe_{args.kind}_0"
    kernel = load_kernel(args.ir, name)
    dump = open(args.dump).read()
    E, K, D, I, L = (args.experts, args.top_k, args.hidden, args.inter,
                     args.limit)
    ok = True
    for T in [int(v) for v in args.tokens.split(",")]:
        grid = launch_grid(dump, args.chip, name, T)
        chosen, order, starts = routing(rng, T, E, K)
        if args.kind == "up":
            if args.x_codes:
                x_codes, x_scales, x = coded_rows(rng, (T, D))
                x_args = [x_codes, x_scales]
            else:
                x_bits, x = bf16(rng, (T, D))
                x_args = [x_bits]
            out = np.full((T, K, I), 0xC0E0, np.uint16)
            if args.fp8:
                g_bits, g_scale, gw = fp8_weights(rng, (E, I, D))
                u_bits, u_scale, uw = fp8_weights(rng, (E, I, D))
                operands = [g_bits, g_scale, u_bits, u_scale]
                if decoded:
                    gw, uw = round_bf16(gw), round_bf16(uw)
                xq = x if args.x_codes or decoded else quantised_rows(
                    x, args.chip == "gfx942")
            else:
                g_bits, gw = bf16(rng, (E, I, D))
                u_bits, uw = bf16(rng, (E, I, D))
                operands = [g_bits, u_bits]
                xq = x
            kernel.run([*x_args, chosen, order, starts, *operands, out],
                       grid=grid, subgroup_size=args.lanes)
            g = np.einsum("tjid,td->tji", gw[chosen], xq)
            u = np.einsum("tjid,td->tji", uw[chosen], xq)
            size = np.einsum("tjid,td->tji", np.abs(gw[chosen]), np.abs(x)) \
                + np.einsum("tjid,td->tji", np.abs(uw[chosen]), np.abs(x))
            g = np.minimum(round_bf16(g), L)
            u = np.clip(round_bf16(u), -L, L)
            want = round_bf16(round_bf16(g / (1 + np.exp(-g))) * u)
        else:
            if args.x_codes:
                a_codes, a_scales, a = coded_rows(rng, (T, K, I))
                a_args = [a_codes, a_scales]
            else:
                a_bits, a = bf16(rng, (T, K, I))
                a_args = [a_bits]
            w = rng.random((T, K)).astype(np.float32)
            out = np.full((T, K, D), 0xC0E0, np.uint16)
            if args.fp8:
                d_bits, d_scale, dw = fp8_weights(rng, (E, D, I))
                operands = [d_bits, d_scale]
                if decoded:
                    dw = round_bf16(dw)
                aq = a if args.x_codes or decoded else quantised_rows(
                    a, args.chip == "gfx942")
            else:
                d_bits, dw = bf16(rng, (E, D, I))
                operands = [d_bits]
                aq = a
            kernel.run([*a_args, chosen, w, order, starts, *operands, out],
                       grid=grid, subgroup_size=args.lanes)
            dot = np.einsum("tjoi,tji->tjo", dw[chosen], aq)
            size = np.einsum("tjoi,tji->tjo", np.abs(dw[chosen]), np.abs(a))
            want = round_bf16(w[..., None].astype(np.float64) *
                              round_bf16(dot))
            size = size * w[..., None]
        got = from_bits(out)
        bound = 2.0 ** -6 * np.abs(want) + 1e-5 * size + 1e-30
        worst = float((np.abs(got - want) / bound).max())
        ok &= worst <= 1.0
        print(f"T = {T} ({T * K} slots), grid {grid[0]}x{grid[1]}x{grid[2]}: "
              f"largest difference "
              f"{'within the bound' if worst <= 1.0 else f'{worst:.3g}x the bound'}")
    print(f"{name}:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
