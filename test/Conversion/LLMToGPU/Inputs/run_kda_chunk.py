"""Runs chosen blocks of KDA's chunk kernels (KdaChunkKernel.cpp) from their
GPU-dialect IR on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py):
kda_coefficients, whose A_q and T rows are compared with their definition in
float64, then kda_attention on them, compared with the delta rule token by
token in float64 on the prepared rows (dialects/llm/IR/LLMOps.td,
llm.kda_attention): per token, S = diag(exp(g)) S, delta = beta (v - S^T k),
S = S + k delta^T, o = S^T q; the state from the source slot (zero at
position 0), the final state to the destination slot.

A step of three requests: 40 tokens at position 0 (a chunk of 32 and one of
8), 3 tokens (at most decode_max_tokens: kda_decode's, untouched) and 9
tokens at position 20 from slot 2. Each block is one (request, head, 32
value columns); the chosen blocks are run and their columns checked: the
read-out within `--bound` of the largest read-out value, the final state
within the same bound of its largest, every other element untouched. The
coefficient kernel's blocks are (32-token window, head): those of the
chosen blocks' chunks run, and each of those chunks' A_q and T rows is
checked within the bound of its largest value (the second window holds the
40-token request's second chunk, the 3-token request, skipped, and the
9-token one's chunk); every other row stays untouched.

With `--rows bf16` the prepared q, k and v rows are bf16 (a bf16 model's,
KdaOps.cpp): the kernels read them as given, the references take the same
values.

    run_kda_chunk.py IR --coefficients kda_coefficients_0 \
        --kernel kda_attention_0 --lanes 32 --bound 2e-5
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from kernel_values import from_bf16, step_arrays, to_bf16  # noqa: E402

HEADS, DIM, PART, CHUNK = 2, 128, 32, 32
# tokens, first position, source slot, destination slot
REQUESTS = [(40, 0, 1, 1), (3, 5, 3, 3), (9, 20, 2, 4)]
# (request, head, part) blocks run
BLOCKS = [(0, 1, 2), (2, 0, 1), (1, 0, 0)]
# (window, head) blocks of kda_coefficients run: the chunks of the long
# requests' blocks above
WINDOWS = [(0, 1), (1, 1), (1, 0)]


def chunks_of(r):
    """The chunks (first token, length) of request r."""
    n = REQUESTS[r][0]
    t0 = sum(m for m, *_ in REQUESTS[:r])
    return [(t0 + c, min(CHUNK, n - c)) for c in range(0, n, CHUNK)]


def coefficients(a, tc, n, h):
    """(A_q, T) [n, CHUNK] of the chunk of n tokens from tc, head h."""
    cols = slice(h * DIM, (h + 1) * DIM)
    q, k, g = (a[m][tc:tc + n, cols].astype(np.float64)
               for m in ("q", "k", "g"))
    beta = a["beta"][tc:tc + n, h].astype(np.float64)
    B = np.cumsum(g, axis=0)
    decay = np.exp(B[:, None, :] - B[None, :, :])  # [i, j, c]
    aq = np.tril(np.einsum("ic,jc,ijc->ij", q, k, decay))
    ak = np.tril(np.einsum("ic,jc,ijc->ij", k, k, decay), -1)
    t = np.linalg.solve(np.eye(n) + beta[:, None] * ak, np.diag(beta))
    pad = np.zeros((n, CHUNK - n))
    return np.hstack([aq, pad]), np.hstack([t, pad])


def reference(a, r):
    """(read-out rows [n, H, d], final state [H, d, d]) of request r."""
    n, pos, src, _ = REQUESTS[r]
    t0 = sum(m for m, *_ in REQUESTS[:r])
    S = (np.zeros((HEADS, DIM, DIM)) if pos == 0 else
         a["state"][src].astype(np.float64))
    out = np.zeros((n, HEADS, DIM))
    for i in range(n):
        t = t0 + i
        q, k, v, g = (a[m][t].astype(np.float64).reshape(HEADS, DIM)
                      for m in ("q", "k", "v", "g"))
        beta = a["beta"][t].astype(np.float64)
        S = S * np.exp(g)[:, :, None]
        delta = beta[:, None] * (v - np.einsum("hi,hij->hj", k, S))
        S = S + k[:, :, None] * delta[:, None, :]
        out[i] = np.einsum("hi,hij->hj", q, S)
    return out, S


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--coefficients", required=True)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--bound", type=float, required=True)
    ap.add_argument("--rows", choices=("f32", "bf16"), default="f32")
    args = ap.parse_args()
    T = sum(n for n, *_ in REQUESTS)
    P = HEADS * DIM
    rng = np.random.default_rng(5)

    def unit_rows(x):
        x = x.reshape(T, HEADS, DIM)
        return (x / np.linalg.norm(x, axis=2, keepdims=True)).reshape(T, P)

    a = {"q": (unit_rows(rng.standard_normal((T, P))) * DIM ** -0.5),
         "k": unit_rows(rng.standard_normal((T, P))),
         "v": rng.standard_normal((T, P)),
         # log decays in (-5, 0): the model's gate bound
         "g": -5.0 / (1.0 + np.exp(-rng.standard_normal((T, P)) - 2.0)),
         "beta": 1.0 / (1.0 + np.exp(-rng.standard_normal((T, HEADS)))),
         "state": rng.standard_normal((6, HEADS, DIM, DIM)) * 0.1}
    a = {name: x.astype(np.float32) for name, x in a.items()}
    rows = {}
    for m in ("q", "k", "v"):
        if args.rows == "bf16":
            rows[m] = to_bf16(a[m])
            a[m] = from_bf16(rows[m])
        else:
            rows[m] = a[m]
    positions, starts, src, dst = step_arrays(REQUESTS)
    sentinel = np.float32(-7.0)
    ok = True
    aq = np.full((T, HEADS * CHUNK), sentinel, np.float32)
    tw = np.full((T, HEADS * CHUNK), sentinel, np.float32)
    load_kernel(args.ir, args.coefficients).run(
        [rows["q"], rows["k"], a["g"], a["beta"], starts, aq, tw],
        grid=((T + CHUNK - 1) // CHUNK, HEADS), subgroup_size=args.lanes,
        blocks=WINDOWS)
    written = np.zeros(aq.shape, bool)
    worst = 0.0
    for r in range(len(REQUESTS)):
        if REQUESTS[r][0] <= 4:
            continue
        for tc, n in chunks_of(r):
            for h in range(HEADS):
                if (tc // CHUNK, h) not in WINDOWS:
                    continue
                cols = slice(h * CHUNK, (h + 1) * CHUNK)
                for name, got, want in zip(("A_q", "T"), (aq, tw),
                                           coefficients(a, tc, n, h)):
                    err = (np.abs(got[tc:tc + n, cols] - want).max() /
                           np.abs(want).max())
                    worst = max(worst, err)
                    ok &= bool(err <= args.bound)
                written[tc:tc + n, cols] = True
    coefficients_untouched = bool((aq[~written] == sentinel).all() and
                                  (tw[~written] == sentinel).all())
    print(f"coefficients: {'within bound' if worst <= args.bound else worst}, "
          f"the rest {'untouched' if coefficients_untouched else 'WRITTEN'}")
    ok &= coefficients_untouched

    state = a["state"].copy()
    out = np.full((T, P), sentinel, np.float32)
    argv = [rows["q"], rows["k"], rows["v"], a["g"], aq, tw, state, positions,
            starts, src, dst, out]
    grid = (len(REQUESTS) + 1, HEADS, DIM // PART)
    load_kernel(args.ir, args.kernel).run(argv, grid=grid,
                                          subgroup_size=args.lanes,
                                          blocks=BLOCKS)

    touched_out = np.zeros((T, P), bool)
    touched_state = np.zeros(state.shape, bool)
    for r, h, part in BLOCKS:
        n, _, _, d_slot = REQUESTS[r]
        t0 = sum(m for m, *_ in REQUESTS[:r])
        cols = slice(h * DIM + part * PART, h * DIM + (part + 1) * PART)
        if n <= 4:
            continue
        want_out, want_state = reference(a, r)
        got = out[t0:t0 + n, cols].astype(np.float64)
        want = want_out[:, h, part * PART:(part + 1) * PART]
        err_out = np.abs(got - want).max() / np.abs(want_out).max()
        got_s = state[d_slot, h, :, part * PART:(part + 1) * PART]
        want_s = want_state[h, :, part * PART:(part + 1) * PART]
        err_state = np.abs(got_s - want_s).max() / np.abs(want_state).max()
        worst = max(worst, err_out, err_state)
        touched_out[t0:t0 + n, cols] = True
        touched_state[d_slot, h, :, part * PART:(part + 1) * PART] = True
        print(f"request {r} head {h} part {part}: read-out "
              f"{'within bound' if err_out <= args.bound else err_out}, "
              f"state {'within bound' if err_state <= args.bound else err_state}")
        ok &= err_out <= args.bound and err_state <= args.bound
    untouched = (bool((out[~touched_out] == sentinel).all()) and
                 bool((state[~touched_state] == a["state"][~touched_state])
                      .all()))
    print(f"the rest: {'untouched' if untouched else 'WRITTEN'}")
    ok &= untouched
    print("kda_attention:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
