"""Runs the kpool_scores kernel (KpoolScoresKernel.cpp) from its GPU-dialect
IR on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py, whose matrix
instructions follow the PTX ISA's and AMD's fragment tables) and compares it
with the indexer's pool scores: for token t of request r at position x, every
visible pool p < (x + 1) / kpool gets scores[t, p / rows, p % rows] =
scale * sum_h w[t, h] relu(q[t, h] . K_p) with K_p the index pool's row p of
the request (through its block table), scale = (dim * heads)^-1/2; within
1e-5 of the sum of the terms' magnitudes; entries past the visible pools are
left as they were.

With --fp8 the pool holds fp8 index pages (Fp8PageLayout::valuesThenScales:
the page's rows' e4m3 values, then one f32 power-of-two scale per row, pages
aligned to 256 bytes) of Hadamard-rotated keys: K_p is row p's decoded values
times its scale, and the queries are rotated, q_h -> H q_h / sqrt(dim) (the
Sylvester Hadamard matrix), in float64, as the generic kernel does in f32.

    run_kpool_scores.py CHIP.gpu.mlir --lanes 32 --heads 20 --contexts 1,37,301
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from run_linear import bf16  # noqa: E402
from run_mla_attend import PAGE_ALIGNMENT, decode_e4m3  # noqa: E402


def fp8_index_pages(rng, num_pages, rows, dim):
    """Random fp8 index pages: (the pool's bytes [pages, page bytes] as
    uint8, each row's key as the kernel decodes it [pages, rows, dim],
    float64)."""
    page_bytes = -(-rows * (dim + 4) // PAGE_ALIGNMENT) * PAGE_ALIGNMENT
    codes = rng.integers(0, 256, (num_pages, rows, dim))
    codes[(codes & 0x7F) == 0x7F] = 0x3F  # no NaN codes
    scales = (2.0 ** rng.integers(-12, -3, (num_pages, rows))).astype(
        np.float32)
    pages = np.zeros((num_pages, page_bytes), np.uint8)
    pages[:, :rows * dim] = codes.astype(np.uint8).reshape(num_pages, -1)
    pages[:, rows * dim:rows * (dim + 4)] = scales.view(np.uint8).reshape(
        num_pages, -1)
    keys = decode_e4m3(codes) * scales.astype(np.float64)[..., None]
    return pages, keys


def hadamard(dim):
    """The orthonormal Sylvester Hadamard matrix of order dim."""
    h = np.ones((1, 1))
    while h.shape[0] < dim:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(dim)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", default="kpool_scores_0")
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--kpool", type=int, default=4)
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--contexts", default="1,37,301",
                    help="context length per request; each request's last "
                         "two positions are the step's tokens")
    ap.add_argument("--grid", type=int, default=8)
    ap.add_argument("--fp8", action="store_true",
                    help="fp8 index pages (values then scales)")
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    contexts = [int(x) for x in args.contexts.split(",")]
    positions, starts, owner = [], [0], []
    for r, length in enumerate(contexts):
        mine = [x for x in (length - 2, length - 1) if x >= 0]
        positions += mine
        owner += [r] * len(mine)
        starts.append(len(positions))
    tokens = len(positions)
    pools_per_request = [(c + args.kpool - 1) // args.kpool for c in contexts]
    pages_per_request = max(-(-p // args.rows) for p in pools_per_request)
    num_pages = pages_per_request * len(contexts) + 3
    table = rng.permutation(num_pages)[:pages_per_request * len(contexts)]
    table = table.reshape(len(contexts), pages_per_request).astype(np.int32)
    if args.fp8:
        pool_bits, pool = fp8_index_pages(rng, num_pages, args.rows, args.dim)
    else:
        pool_bits, pool = bf16(rng, (num_pages, args.rows, args.dim))
    q_bits, q = bf16(rng, (tokens, args.heads, args.dim))
    # The scores' queries: fp8 pages hold rotated keys.
    q_dot = (q.astype(np.float64) @ hadamard(args.dim).T if args.fp8
             else q)
    w = rng.standard_normal((tokens, args.heads)).astype(np.float32)
    sentinel = np.float32(-7.0)
    scores = np.full((tokens, pages_per_request, args.rows), sentinel,
                     np.float32)
    load_kernel(args.ir, args.kernel).run(
        [q_bits, w, pool_bits, np.array(positions, np.int32),
         np.array(starts, np.int32), table, scores],
        grid=(args.grid, 1, 1), subgroup_size=args.lanes)
    scale = (args.dim * args.heads) ** -0.5
    worst, untouched = 0.0, True
    for t in range(tokens):
        visible = (positions[t] + 1) // args.kpool
        keys = pool[table[owner[t]]].reshape(-1, args.dim)[:visible]
        dots = q_dot[t] @ keys.T                  # [heads, visible]
        want = scale * (w[t].astype(np.float64)[:, None] *
                        np.maximum(dots, 0)).sum(0)
        size = scale * (np.abs(w[t]).astype(np.float64)[:, None] *
                        (np.abs(q_dot[t]) @ np.abs(keys).T)).sum(0)
        got = scores[t].reshape(-1)
        if visible:
            worst = max(worst, float((np.abs(got[:visible] - want) /
                                      size).max()))
        untouched &= bool((got[visible:] == sentinel).all())
    ok = worst < 1e-5 and untouched
    print(f"{tokens} tokens, contexts {args.contexts}: largest difference "
          f"{'below 1e-5' if worst < 1e-5 else worst} of the terms' "
          f"magnitudes; entries past the visible pools "
          f"{'untouched' if untouched else 'WRITTEN'}")
    print("kpool_scores:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
