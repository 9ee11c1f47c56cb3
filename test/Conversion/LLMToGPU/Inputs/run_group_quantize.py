"""Runs a group quantisation kernel (GroupQuantizeKernel.cpp) from its
GPU-dialect IR on the CPU (test/Tools/Inputs/gpu_ir_interpreter.py) against
llm.moe_ffn's fp8_expert_activations in numpy (test/e2e/ops/Inputs/opcheck.py's
encoder): per row and 128-wide group s = max(amax, 1e-10) / 448 in f32 and
q = e4m3(clamp(v / s, +-448)) rounded to the nearest, ties to even. Codes and
scales must be equal bit for bit; rows past T untouched. Values span small
and large magnitudes, one group is all zero (s = 1e-10 / 448).

    run_group_quantize.py IR --kernel quantize_x --lanes 32 --shape 5,384
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "Tools", "Inputs"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "e2e", "ops",
                                "Inputs"))
from gpu_ir_interpreter import load_kernel  # noqa: E402
from kernel_values import to_bf16, from_bf16  # noqa: E402
from opcheck import fp8_encode  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ir")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--lanes", type=int, required=True)
    ap.add_argument("--shape", required=True, help="x's shape, e.g. 5,384")
    ap.add_argument("--dtype", choices=("bf16", "f32"), default="bf16")
    args = ap.parse_args()
    shape = tuple(int(s) for s in args.shape.split(","))
    block = 128
    rng = np.random.default_rng(3)
    v = (rng.standard_normal(shape) *
         np.exp(rng.uniform(-6, 6, shape[:-1] + (1,)))).astype(np.float32)
    v[(0,) * (len(shape) - 1)][:block] = 0.0  # an all-zero group
    if args.dtype == "bf16":
        v = from_bf16(to_bf16(v))
    groups = shape[-1] // block
    flat = v.reshape(-1, shape[-1])
    want_codes = np.zeros(flat.shape, np.uint8)
    want_scales = np.zeros((flat.shape[0], groups), np.float32)
    for r in range(flat.shape[0]):
        for g in range(groups):
            part = flat[r, g * block:(g + 1) * block]
            scale = np.float32(max(np.float32(np.abs(part).max()),
                                   np.float32(1e-10)) / np.float32(448.0))
            want_scales[r, g] = scale
            want_codes[r, g * block:(g + 1) * block] = fp8_encode(
                np.clip(part / scale, -448.0, 448.0))
    # One extra row in each buffer: the kernel's grid covers T rows only.
    rows = (shape[0] + 1,) + shape[1:]
    x = np.zeros(rows, np.uint16 if args.dtype == "bf16" else np.float32)
    x[:shape[0]] = to_bf16(v) if args.dtype == "bf16" else v
    codes = np.full(rows, 0x55, np.uint8)
    scales = np.full(rows[:-1] + (groups,), -7.0, np.float32)
    kernel = load_kernel(args.ir, args.kernel)
    blocks_y = -(-int(np.prod(shape[1:-1], dtype=np.int64)) * groups // 16)
    kernel.run([x[:shape[0]], codes[:shape[0]], scales[:shape[0]]],
               grid=(shape[0], blocks_y, 1), subgroup_size=args.lanes)
    got_codes = codes[:shape[0]].reshape(-1, shape[-1])
    got_scales = scales[:shape[0]].reshape(-1, groups)
    codes_ok = bool((got_codes == want_codes).all())
    scales_ok = bool((got_scales.view(np.uint32) ==
                      want_scales.view(np.uint32)).all())
    untouched = bool((codes[shape[0]:] == 0x55).all() and
                     (scales[shape[0]:] == -7.0).all())
    print(f"codes: {'equal' if codes_ok else 'DIFFER'} "
          f"({int((got_codes != want_codes).sum())} differ)")
    print(f"scales: {'equal' if scales_ok else 'DIFFER'}")
    print(f"past T: {'untouched' if untouched else 'WRITTEN'}")
    ok = codes_ok and scales_ok and untouched
    print("group_quantize:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
