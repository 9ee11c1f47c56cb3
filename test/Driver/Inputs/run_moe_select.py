"""Runs the moe_select kernel (MoeSelectKernel.cpp) from its GPU-dialect IR on
the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) and compares the chosen
experts and weights with moe_select's definition (llm.moe_select, one expert
group): s_e = sigmoid(l_e); the top_k of s_e + bias_e, the first index on
ties; w = s_e / (sum of the chosen s in the chosen order + eps) * scaling, in
f32. The logits repeat values within a token (ties) and across experts.

    run_moe_select.py CHIP.gpu.mlir --lanes 32 --top-k 4 --scaling 2.5
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Tools", "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402


def reference(logits, bias, top_k, eps, scaling):
    f = np.float32
    chosen = np.zeros((len(logits), top_k), np.int32)
    weights = np.zeros((len(logits), top_k), np.float32)
    for t, row in enumerate(logits):
        s = [f(1.0) / (f(1.0) + np.exp(f(-x))) for x in row]
        biased = [s[e] + bias[e] for e in range(len(row))]
        picks = []
        for _ in range(top_k):
            best = max((e for e in range(len(row)) if e not in picks),
                       key=lambda e: (biased[e], -e))
            picks.append(best)
        total = f(0.0)
        for e in picks:
            total = f(total + s[e])
        denom = f(total + f(eps))
        chosen[t] = picks
        weights[t] = [f(f(s[e] / denom) * f(scaling)) for e in picks]
    return chosen, weights


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", default="moe_select_0")
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--experts", type=int, default=16)
    ap.add_argument("--top-k", type=int, required=True)
    ap.add_argument("--scaling", type=float, required=True)
    ap.add_argument("--eps", type=float, default=1e-20)
    ap.add_argument("--tokens", type=int, default=6)
    args = ap.parse_args()
    rng = np.random.default_rng(11)
    logits = rng.choice(np.array([-2.0, -0.5, 0.0, 0.25, 1.5, 3.0],
                                 np.float32), (args.tokens, args.experts))
    logits[0] = 0.75  # every expert tied
    bias = rng.choice(np.array([0.0, 0.125, -0.25], np.float32),
                      args.experts)
    chosen = np.full((args.tokens, args.top_k), -7, np.int32)
    weights = np.full((args.tokens, args.top_k), -7, np.float32)
    load_kernel(args.ir, args.kernel).run(
        [logits, bias, chosen, weights], grid=(args.tokens, 1, 1),
        subgroup_size=args.lanes)
    want_chosen, want_weights = reference(logits, bias, args.top_k, args.eps,
                                          args.scaling)
    ok = True
    for t in range(args.tokens):
        same = (np.array_equal(chosen[t], want_chosen[t]) and
                np.array_equal(weights[t].view(np.int32),
                               want_weights[t].view(np.int32)))
        ok &= same
        print(f"token {t}: experts {chosen[t].tolist()} "
              f"{'equal' if same else 'DIFFER from ' + str(want_chosen[t].tolist())}")
    print("moe_select:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
