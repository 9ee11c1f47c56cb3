"""Runs a moe_group kernel from its GPU-dialect IR on the CPU
(test/Tools/Inputs/gpu_ir_interpreter.py) and compares it with its
definition: starts[e] = the slots routed to experts below e (starts[E] = all
slots), order = the flat slot ids t * k + j expert by expert, in slot order
within an expert. The kernel is the moe_group strategy's (one block,
lib/Conversion/LLMToGPU/MoeGroupKernel.cpp: --grid 1) or the generic kernel
of llm.moe_ffn's grouping (lib/Conversion/LLMToKernel/FfnOps.cpp, threads
mapped by convert-kernels-to-gpu: a block per expert, --grid E). 0 tokens
is an empty step (starts all 0).

    run_moe_group.py CHIP.gpu.mlir --lanes 32 --experts 16 --top-k 4 --tokens 0,1,3,300 --grid 1
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402


def reference(chosen, experts):
    flat = chosen.reshape(-1)
    order = np.concatenate([np.flatnonzero(flat == e) for e in range(experts)])
    counts = np.bincount(flat, minlength=experts)
    starts = np.concatenate([[0], np.cumsum(counts)])
    return order.astype(np.int32).reshape(chosen.shape), starts.astype(np.int32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", default="moe_group_0")
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--experts", type=int, required=True)
    ap.add_argument("--top-k", type=int, required=True)
    ap.add_argument("--tokens", required=True)
    ap.add_argument("--grid", type=int, required=True,
                    help="blocks of the launch (1, or E for the generic "
                    "kernel)")
    args = ap.parse_args()
    kernel = load_kernel(args.ir, args.kernel)
    rng = np.random.default_rng(5)
    # Each token routes to top_k distinct experts; the experts' loads are
    # uneven (low experts more often).
    load = np.linspace(2, 1, args.experts)
    load /= load.sum()
    ok = True
    for tokens in map(int, args.tokens.split(",")):
        chosen = np.array([rng.choice(args.experts, args.top_k, replace=False,
                                      p=load)
                           for _ in range(tokens)],
                          np.int32).reshape(tokens, args.top_k)
        order = np.full(chosen.shape, -7, np.int32)
        starts = np.full(args.experts + 1, -7, np.int32)
        kernel.run([chosen, order, starts], grid=(args.grid, 1, 1),
                   subgroup_size=args.lanes)
        want_order, want_starts = reference(chosen, args.experts)
        same = (np.array_equal(order, want_order) and
                np.array_equal(starts, want_starts))
        ok &= same
        print(f"{tokens} tokens: starts {starts[:4].tolist()}... "
              f"{'equal' if same else 'DIFFER'}")
    print("moe_group:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
