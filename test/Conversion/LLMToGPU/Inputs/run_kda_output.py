"""Runs the kda_output kernel (KdaTokenKernels.cpp) from its GPU-dialect IR on
the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares it with
llm.kda_attention's definition of the output side (dialects/llm/IR/LLMOps.td),
computed here in float64: per token of a request of more than
decode_max_tokens tokens, the gated output RMSNorm of the read-out, y = x /
sqrt(mean(x^2) + eps) * o_norm * sigmoid(gate), and after the request's last
token its last K - 1 pre-conv inputs of q, k and v in the conv state of slot
dst_slots[r] (rows before the request from the source slot's conv state, zero
at position 0).

A step of four requests: six tokens at position 0 (slot 1), three tokens at
position 5 (at most decode_max_tokens: kda_decode's, untouched), seven tokens
at position 9 reading and writing slot 2 in place, one token (untouched).
Outputs within 2e-6 of the largest (f32) or one bf16 step (bf16), the conv
state exact, everything else untouched.

    run_kda_output.py IR --kernel kda_output_f32 --lanes 32 --dtype f32
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from kernel_values import (  # noqa: E402
    from_bf16, sigmoid, step_arrays, to_bf16)

NORM_EPS = 1e-5
MAX_TOKENS = 4
HEADS_PER_BLOCK = 4
# tokens, position, source slot, destination slot
REQUESTS = [(6, 0, 1, 1), (3, 5, 3, 3), (7, 9, 2, 2), (1, 4, 4, 4)]


def reference(a, heads, dim, taps):
    """({t: o row} of the long requests, the conv state after the step)."""
    P = heads * dim
    conv = a["conv"].astype(np.float64).copy()
    starts = np.cumsum([0] + [n for n, *_ in REQUESTS])
    rows = {}
    for r, (n, pos, src, dst) in enumerate(REQUESTS):
        if n <= MAX_TOKENS:
            continue
        t0 = int(starts[r])
        for t in range(t0, t0 + n):
            x = a["raw"][t].astype(np.float64).reshape(heads, dim)
            inv = 1.0 / np.sqrt((x * x).mean(1, keepdims=True) + NORM_EPS)
            y = x * inv * a["onorm"].astype(np.float64)[None, :] * sigmoid(
                a["gate"][t].astype(np.float64).reshape(heads, dim))
            rows[t] = y.reshape(P)
        hist = (np.zeros((3, taps - 1, P)) if pos == 0 else
                np.stack([conv[src, :, w * P:(w + 1) * P] for w in range(3)]))
        for w, m in enumerate(("q", "k", "v")):
            raw = np.concatenate([hist[w], a[m][t0:t0 + n].astype(np.float64)])
            conv[dst, :, w * P:(w + 1) * P] = raw[n:n + taps - 1]
    return rows, conv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--heads", type=int, default=5)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--taps", type=int, default=4)
    ap.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    args = ap.parse_args()
    H, d, K = args.heads, args.dim, args.taps
    P = H * d
    T = sum(n for n, *_ in REQUESTS)
    rng = np.random.default_rng(13)
    bf16 = args.dtype == "bf16"

    def act(*shape, scale=1.0):
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        return from_bf16(to_bf16(x)) if bf16 else x

    a = {"raw": rng.standard_normal((T, P)).astype(np.float32),
         "gate": act(T, P), "onorm": act(d, scale=0.5) + np.float32(1.0),
         "q": act(T, P), "k": act(T, P), "v": act(T, P),
         "conv": act(6, K - 1, 3 * P)}
    if bf16:
        a["onorm"] = from_bf16(to_bf16(a["onorm"]))
    positions, starts, src, dst = step_arrays(REQUESTS)
    sentinel = np.float32(-7.0)

    def buf(x):
        return to_bf16(x) if bf16 else x.copy()

    conv = buf(a["conv"])
    out = buf(np.full((T, P), sentinel, np.float32))
    argv = [a["raw"].copy(), buf(a["gate"]), buf(a["onorm"]), buf(a["q"]),
            buf(a["k"]), buf(a["v"]), conv, positions, starts, src, dst, out]
    blocks = (H + HEADS_PER_BLOCK - 1) // HEADS_PER_BLOCK
    load_kernel(args.ir, args.kernel).run(argv, grid=(T, blocks, 1),
                                          subgroup_size=args.lanes)

    want, want_conv = reference(a, H, d, K)
    got = (from_bf16(out) if bf16 else out).astype(np.float64)
    got_conv = (from_bf16(conv) if bf16 else conv).astype(np.float64)
    scale = max(np.abs(v).max() for v in want.values())
    ok = True
    worst = 0.0
    for t in range(T):
        if t in want:
            err = np.abs(got[t] - want[t])
            bound = (np.maximum(np.abs(want[t]) * 2.0 ** -8, 2e-6 * scale)
                     if bf16 else 2e-6 * scale)
            worst = max(worst, float((err / bound).max()))
            ok &= bool((err <= bound).all())
        else:
            ok &= bool((got[t] == sentinel).all())
    conv_same = bool((got_conv == want_conv).all())
    print(f"o: {'within bound' if worst <= 1 else 'DIFFERS'}; "
          f"rows taken {sorted(want)}")
    print(f"conv state: {'exact' if conv_same else 'DIFFERS'}")
    ok = ok and conv_same
    print("kda_output:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
