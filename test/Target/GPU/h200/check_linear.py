#!/usr/bin/env python3
"""Runs strata's sm_90 linear kernels (convert-llm-to-gpu, mma.sync) on an NVIDIA GPU against torch.

  strata-opt test/Target/GPU/Inputs/linear.mlir --strata-lower='target=sm_90 toolkit=/usr/local/cuda' \
      --strata-write-gpu-binaries=dir=SMALL
  strata-opt test/Target/GPU/Inputs/linear_real.mlir --strata-lower='target=sm_90 toolkit=/usr/local/cuda' \
      --strata-write-gpu-binaries=dir=REAL
  python3 check_linear.py --small SMALL/strata_kernels.sm_90.cubin --real REAL/strata_kernels.sm_90.cubin \
      [--json out.json]

For every kernel and several row counts M it checks the result against torch (fp32 math on the same bf16 /
dequantised fp8 inputs: max |y - ref| / max |ref| must be below 1e-2, i.e. bf16 output rounding), then times
the kernel and torch's bf16 matmul (cuBLAS) with CUDA events (median of 50 after 10 warm-up launches).
Exits 0 with "SKIP" when there is no CUDA device (this machine has none; the H200 does).
"""
import argparse
import ctypes
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", required=True)
    ap.add_argument("--real", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: no torch")
        return 0
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 0
    cuda = ctypes.CDLL("libcuda.so.1")
    torch.zeros(1, device="cuda")  # primary context

    def load(path):
        mod = ctypes.c_void_p()
        image = open(path, "rb").read()
        rc = cuda.cuModuleLoadData(ctypes.byref(mod), image)
        assert rc == 0, f"cuModuleLoadData({path}) = {rc}"
        return mod

    def function(mod, name):
        fn = ctypes.c_void_p()
        rc = cuda.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode())
        assert rc == 0, f"cuModuleGetFunction({name}) = {rc}"
        return fn

    def desc(t):
        p = ctypes.c_void_p(t.data_ptr())
        return [p, p, ctypes.c_int64(0), ctypes.c_int64(t.shape[0]), ctypes.c_int64(t.shape[1]),
                ctypes.c_int64(t.stride(0)), ctypes.c_int64(1)]

    def launcher(fn, tensors, M, N, tile_n=64):
        vals = [v for t in tensors for v in desc(t)]
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        grid = ((M + 63) // 64, N // tile_n, 1)

        def go():
            rc = cuda.cuLaunchKernel(fn, grid[0], grid[1], grid[2], 128, 1, 1, 0,
                                     ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), params, None)
            assert rc == 0, f"cuLaunchKernel = {rc}"
        go.keep = (vals, params)
        return go

    def timeit(f):
        for _ in range(10):
            f()
        times = []
        for _ in range(50):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            f()
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
        times.sort()
        return times[len(times) // 2]

    torch.manual_seed(0)
    small, real = load(args.small), load(args.real)
    kernels = [
        (small, "linear_bf16_128x256_bf16", 128, 256, False),
        (small, "linear_fp8_128x256_bf16", 128, 256, True),
        (real, "linear_bf16_1536x4096_bf16", 1536, 4096, False),
        (real, "linear_fp8_1536x4096_bf16", 1536, 4096, True),
        (real, "linear_bf16_512x4096_bf16", 512, 4096, False),
    ]
    results = []
    ok = True
    print(f"{'kernel':32} {'M':>5} {'rel err':>9} {'strata us':>10} {'torch us':>9} {'strata TFLOP/s':>15} {'ratio':>6}")
    for mod, name, N, K, fp8 in kernels:
        fn = function(mod, name)
        for M in (1, 7, 64, 100, 2048):
            x = torch.randn(M, K, device="cuda").bfloat16()
            y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            if fp8:
                q = (torch.randn(N, K, device="cuda") * 100).clamp(-448, 448).to(torch.float8_e4m3fn)
                s = torch.rand((N + 127) // 128, (K + 127) // 128, device="cuda") * 0.01 + 1e-3
                wd = (q.float() * s.repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)[:, :K])
                tensors = [x, q, s, y]
            else:
                wd = torch.randn(N, K, device="cuda").bfloat16().float()
                tensors = [x, wd.bfloat16(), y]
            go = launcher(fn, tensors, M, N)
            go()
            torch.cuda.synchronize()
            ref = x.float() @ wd.T
            err = ((y.float() - ref).abs().max() / ref.abs().max()).item()
            t_strata = timeit(go)
            wb = wd.bfloat16()
            t_torch = timeit(lambda: torch.matmul(x, wb.T))
            tflops = 2 * M * N * K / (t_strata * 1e-6) / 1e12
            good = err < 1e-2
            ok &= good
            print(f"{name:32} {M:5d} {err:9.2e} {t_strata:10.1f} {t_torch:9.1f} {tflops:15.2f} {t_torch / t_strata:6.2f}"
                  + ("" if good else "  FAIL"))
            results.append(dict(kernel=name, M=M, N=N, K=K, rel_err=err, strata_us=t_strata, torch_us=t_torch,
                                strata_tflops=tflops, torch_over_strata=t_torch / t_strata))
    print("device:", torch.cuda.get_device_name(), "torch", torch.__version__)
    if args.json:
        json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, results=results),
                  open(args.json, "w"), indent=1)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
