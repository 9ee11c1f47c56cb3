"""Runs the kda_prepare kernel (KdaPrepareKernel.cpp) from its GPU-dialect IR
on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares it with
llm.kda_attention's definition of the key side (dialects/llm/IR/LLMOps.td),
computed here in float64: per token of a request of more than
decode_max_tokens tokens, the short causal conv + SiLU of q, k and v (history
from the source slot's conv state, zero at position 0), the L2 norms (q times
q_scale), the log-decay g = lower * sigmoid(exp(A_log) (f + dt_bias)) and beta
= sigmoid(b).

A step of four requests: six tokens at position 0, three tokens at position 5
(at most decode_max_tokens: kda_decode's, its rows untouched), seven tokens at
position 9 (history from slot 2) and one token (untouched). Every value within
2e-6 of the largest of its buffer, untouched rows exactly as they were; with
bf16 operands the prepared q, k and v rows are bf16 (KdaOps.cpp), each value
the reference's rounded to bf16 (within one bf16 step of it: the kernel
rounds its f32 value).

    run_kda_prepare.py IR --kernel kda_prepare_f32 --lanes 32 --heads 5 \
        --dim 128 --dtype f32
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

GATE_LOWER = -5.0
L2_EPS = 1e-6
Q_SCALE = 0.125
MAX_TOKENS = 4
HEADS_PER_BLOCK = 4
REQUESTS = [(6, 0, 1), (3, 5, 3), (7, 9, 2), (1, 4, 4)]  # tokens, pos, src


def reference(a, heads, dim, taps):
    """The prepared rows {t: (q, k, v, g, beta)} of the long requests."""
    P = heads * dim
    conv = a["conv"].astype(np.float64)
    rate = np.exp(a["alog"].astype(np.float64))
    starts = np.cumsum([0] + [n for n, *_ in REQUESTS])
    rows = {}
    for r, (n, pos, src) in enumerate(REQUESTS):
        if n <= MAX_TOKENS:
            continue
        t0 = int(starts[r])
        hist = (np.zeros((3, taps - 1, P)) if pos == 0 else
                np.stack([conv[src, :, w * P:(w + 1) * P] for w in range(3)]))
        raw = [np.concatenate([hist[w], a[m][t0:t0 + n].astype(np.float64)])
               for w, m in enumerate(("q", "k", "v"))]
        for i in range(n):
            t = t0 + i
            u = []
            for w, name in enumerate(("qc", "kc", "vc")):
                window = raw[w][i:i + taps]
                u.append(np.einsum("kc,ck->c", window,
                                   a[name][:, 0, :].astype(np.float64)))
            qv, kv, vv = (x * sigmoid(x) for x in u)
            qv, kv = (x.reshape(heads, dim) for x in (qv, kv))
            qn = Q_SCALE * qv / np.sqrt((qv * qv).sum(1, keepdims=True) +
                                        L2_EPS)
            kn = kv / np.sqrt((kv * kv).sum(1, keepdims=True) + L2_EPS)
            g = GATE_LOWER * sigmoid(
                np.repeat(rate, dim) * (a["f"][t].astype(np.float64) +
                                        a["dtb"].astype(np.float64)))
            beta = sigmoid(a["b"][t].astype(np.float64))
            rows[t] = (qn.reshape(P), kn.reshape(P), vv, g, beta)
    return rows


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
    rng = np.random.default_rng(11)
    bf16 = args.dtype == "bf16"

    def act(*shape, scale=1.0):
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        return from_bf16(to_bf16(x)) if bf16 else x

    a = {"q": act(T, P), "k": act(T, P), "v": act(T, P), "f": act(T, P),
         "b": act(T, H), "qc": act(P, 1, K, scale=0.5),
         "kc": act(P, 1, K, scale=0.5), "vc": act(P, 1, K, scale=0.5),
         "alog": rng.uniform(-1, 1, H).astype(np.float32),
         "dtb": rng.uniform(-1, 1, P).astype(np.float32),
         "conv": act(6, K - 1, 3 * P)}
    positions, starts, src, _ = step_arrays(REQUESTS)
    sentinel = np.float32(-7.0)
    outs = [np.full((T, P), sentinel, np.float32) for _ in range(4)]
    # The bf16 model's prepared q, k and v rows are bf16.
    rounded = 3 if bf16 else 0
    outs = [to_bf16(o) for o in outs[:rounded]] + outs[rounded:]
    beta_out = np.full((T, H), sentinel, np.float32)

    def buf(x):
        return to_bf16(x) if bf16 else x.copy()

    argv = [buf(a[m]) for m in ("q", "k", "v", "f", "b", "qc", "kc", "vc")]
    argv += [a["alog"], a["dtb"], buf(a["conv"]), positions, starts, src]
    argv += outs + [beta_out]
    blocks = (H + HEADS_PER_BLOCK - 1) // HEADS_PER_BLOCK
    load_kernel(args.ir, args.kernel).run(argv, grid=(T, blocks, 1),
                                          subgroup_size=args.lanes)

    want = reference(a, H, d, K)
    names = ("q", "k", "v", "g", "beta")
    got = [from_bf16(o) for o in outs[:rounded]] + outs[rounded:] + [beta_out]
    ok = True
    for n, name in enumerate(names):
        scale = max(np.abs(want[t][n]).max() for t in want)
        worst = 0.0
        untouched = True
        for t in range(T):
            if t in want:
                err = np.abs(got[n][t].astype(np.float64) - want[t][n])
                if n < rounded:
                    # One bf16 rounding (half a step) of the value, then
                    # the f32 bound.
                    err = np.maximum(err - np.abs(want[t][n]) * 2.0**-8, 0)
                worst = max(worst, float(err.max()) / scale)
            else:
                untouched &= bool((got[n][t] == sentinel).all())
        good = worst <= 2e-6 and untouched
        ok &= good
        print(f"{name}: {'within 2e-6' if worst <= 2e-6 else worst}"
              f"{'' if untouched else ', rows of short requests written'}")
    print(f"rows taken {sorted(want)}")
    print("kda_prepare:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
