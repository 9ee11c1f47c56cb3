"""Runs the kda_decode kernel (KdaDecodeKernel.cpp) from its GPU-dialect IR on
the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares it with
llm.kda_attention's definition (dialects/llm/IR/LLMOps.td), computed here in
float64 token by token: the short causal conv + SiLU of q, k and v (history
from the source slot's conv state, zero at position 0), the L2 norms, the
decay and beta, the delta rule on the state (from the source slot, zero at
position 0), the read-out and the gated output norm; the state and the last
K-1 pre-conv inputs stored after the request (without per-token slots: to
dst_slots[r]) or after each token (to token_slots[t]).

A step of four requests: one token at position 0, three tokens at position 5
(per-token slots: the first two share a slot), six tokens (past
decode_max_tokens: left to the chunk path, its rows and slots untouched unless
the kernel is recurrent), one token updating its slot in place. The read-out
within 2e-5 of the largest value (f32) or one bf16 step (bf16), the state
within 1e-5, the conv state exactly, every other row and slot untouched.

    run_kda_decode.py IR --kernel kda_decode_tokens --lanes 32 --heads 2 \
        --dim 64 --dtype f32 --token-slots --max-tokens 4
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from kernel_values import to_bf16, from_bf16, sigmoid  # noqa: E402

GATE_LOWER = -5.0
L2_EPS = 1e-6
NORM_EPS = 1e-5


class Step:
    """The step's requests: (tokens, first position, src, dst, token slots)."""

    def __init__(self, heads, dim, taps):
        self.requests = [(1, 0, 1, 1, [1]), (3, 5, 2, 3, [4, 4, 5]),
                         (6, 7, 6, 6, [6] * 6), (1, 9, 7, 7, [7])]
        self.heads, self.dim, self.taps = heads, dim, taps
        self.starts = np.cumsum([0] + [n for n, *_ in self.requests])
        self.tokens = int(self.starts[-1])


def reference(step, a, max_tokens, token_slots):
    """llm.kda_attention's definition for the requests kda_decode takes."""
    H, d, K = step.heads, step.dim, step.taps
    P = H * d
    state = a["state"].astype(np.float64).copy()
    conv = a["conv"].astype(np.float64).copy()
    out = {}
    rate = np.exp(a["alog"].astype(np.float64))
    for r, (n, pos, src, dst, slots) in enumerate(step.requests):
        if max_tokens and n > max_tokens:
            continue
        t0 = int(step.starts[r])
        fresh = pos == 0
        hist = np.zeros((3, K - 1, P)) if fresh else np.stack(
            [conv[src, :, w * P:(w + 1) * P] for w in range(3)])
        raw = [np.concatenate([hist[w], a[m][t0:t0 + n].astype(np.float64)])
               for w, m in enumerate(("q", "k", "v"))]
        S = np.zeros((H, d, d)) if fresh else state[src].copy()
        for i in range(n):
            t = t0 + i
            u = []
            for w, name in enumerate(("qc", "kc", "vc")):
                window = raw[w][i:i + K]  # taps 0..K-1, K-1 the token
                u.append(np.einsum("kc,ck->c", window,
                                   a[name][:, 0, :].astype(np.float64)))
            qv, kv, vv = (x * sigmoid(x) for x in u)
            qv, kv, vv = (x.reshape(H, d) for x in (qv, kv, vv))
            qn = qv / np.sqrt((qv * qv).sum(1, keepdims=True) + L2_EPS)
            qn *= 1.0 / np.sqrt(d)
            kn = kv / np.sqrt((kv * kv).sum(1, keepdims=True) + L2_EPS)
            g = GATE_LOWER * sigmoid(
                rate[:, None] * (a["f"][t].astype(np.float64).reshape(H, d) +
                                 a["dtb"].astype(np.float64).reshape(H, d)))
            alpha = np.exp(g)
            beta = sigmoid(a["b"][t].astype(np.float64))
            S = S * alpha[:, :, None]
            pred = np.einsum("hi,hij->hj", kn, S)
            delta = beta[:, None] * (vv - pred)
            S = S + kn[:, :, None] * delta[:, None, :]
            o = np.einsum("hi,hij->hj", qn, S)
            inv = 1.0 / np.sqrt((o * o).mean(1, keepdims=True) + NORM_EPS)
            y = o * inv * a["onorm"].astype(np.float64)[None, :] * sigmoid(
                a["gate"][t].astype(np.float64).reshape(H, d))
            out[t] = y.reshape(P)
            if token_slots:
                state[slots[i]] = S
                for w in range(3):
                    conv[slots[i], :, w * P:(w + 1) * P] = raw[w][i + 1:i + K]
        if not token_slots:
            state[dst] = S
            for w in range(3):
                conv[dst, :, w * P:(w + 1) * P] = raw[w][n:n + K - 1]
    return out, state, conv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--taps", type=int, default=4)
    ap.add_argument("--dtype", choices=("f32", "bf16"), default="f32")
    ap.add_argument("--token-slots", action="store_true")
    ap.add_argument("--max-tokens", type=int, default=4,
                    help="decode_max_tokens (0: recurrent, every request)")
    args = ap.parse_args()
    H, d, K = args.heads, args.dim, args.taps
    P = H * d
    step = Step(H, d, K)
    T = step.tokens
    rng = np.random.default_rng(7)
    bf16 = args.dtype == "bf16"

    def act(*shape, scale=1.0):
        x = (rng.standard_normal(shape) * scale).astype(np.float32)
        return from_bf16(to_bf16(x)) if bf16 else x

    a = {"q": act(T, P), "k": act(T, P), "v": act(T, P), "f": act(T, P),
         "b": act(T, H), "gate": act(T, P), "qc": act(P, 1, K, scale=0.5),
         "kc": act(P, 1, K, scale=0.5), "vc": act(P, 1, K, scale=0.5),
         "alog": rng.uniform(-1, 1, H).astype(np.float32),
         "dtb": rng.uniform(-1, 1, P).astype(np.float32),
         "onorm": act(d, scale=0.5) + np.float32(1.0),
         "state": (rng.standard_normal((8, H, d, d)) * 0.1).astype(np.float32),
         "conv": act(8, K - 1, 3 * P)}
    if bf16:
        a["onorm"] = from_bf16(to_bf16(a["onorm"]))
    positions = np.concatenate(
        [np.arange(pos, pos + n) for n, pos, *_ in step.requests]).astype(
            np.int32)
    starts = step.starts.astype(np.int32)
    src = np.array([s for *_, s, _, _ in step.requests], np.int32)
    dst = np.array([s for *_, s, _ in step.requests], np.int32)
    slots = np.concatenate([s for *_, s in step.requests]).astype(np.int32)
    sentinel = np.float32(-7.0)
    out = np.full((T, P), sentinel, np.float32)

    def buf(x):
        return to_bf16(x) if bf16 else x.copy()

    state = a["state"].copy()
    conv = buf(a["conv"])
    out_buf = buf(out)
    argv = [buf(a[m]) for m in ("q", "k", "v", "f", "b", "gate", "qc", "kc",
                                "vc")]
    argv += [a["alog"], a["dtb"], buf(a["onorm"]), state, conv, positions,
             starts, src, dst]
    if args.token_slots:
        argv.append(slots)
    argv.append(out_buf)
    load_kernel(args.ir, args.kernel).run(
        argv, grid=(len(step.requests) + 1, H, 1), subgroup_size=args.lanes)

    want_out, want_state, want_conv = reference(step, a, args.max_tokens,
                                                args.token_slots)
    got_out = (from_bf16(out_buf) if bf16 else out_buf).astype(np.float64)
    got_conv = (from_bf16(conv) if bf16 else conv).astype(np.float64)
    scale = max(np.abs(v).max() for v in want_out.values())
    ok = True
    worst = 0.0
    for t in range(T):
        if t in want_out:
            err = np.abs(got_out[t] - want_out[t])
            if bf16:
                # One bf16 step of the value, or 2e-5 of the largest.
                bound = np.maximum(np.abs(want_out[t]) * 2.0 ** -7,
                                   2e-5 * scale)
            else:
                bound = 2e-5 * scale
            worst = max(worst, float((err / bound).max()))
            ok &= bool((err <= bound).all())
        else:
            ok &= bool((got_out[t] == sentinel).all())
    state_err = float(np.abs(state - want_state).max())
    conv_same = bool((got_conv == want_conv).all())
    print(f"read-out: {'within bound' if worst <= 1 else 'DIFFERS'}; "
          f"rows taken {sorted(want_out)}")
    print(f"state: {'within 1e-5' if state_err <= 1e-5 else state_err}")
    print(f"conv state: {'exact' if conv_same else 'DIFFERS'}")
    ok = ok and state_err <= 1e-5 and conv_same
    print("kda_decode:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
