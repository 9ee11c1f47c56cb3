#!/usr/bin/env python3
"""The CPU's GEMM rate for strata-bench's roofline (--gemm-tflops), measured with numpy's BLAS.

On the GPU the compute ceiling is PyTorch's bf16 GEMM measured in the same device call
(bench_baselines.py --ceilings); on the CPU its counterpart is the host BLAS: numpy's float32 matmul of
square matrices (best of the sizes, median of --reps runs each, after one warm-up). On Debian numpy
takes whichever BLAS the alternatives system points at: the reference BLAS of libblas3 is a loop nest, not
the machine's rate, so the script names the BLAS it measured and refuses the reference one unless
--allow-reference-blas (install libopenblas0 for OpenBLAS).

  python3 cpu_ceilings.py                 JSON: gemm_flops_per_second, blas, sizes
  python3 cpu_ceilings.py --tflops        the rate alone, in TFLOP/s, for strata-bench --gemm-tflops
"""

import argparse
import json
import statistics
import sys
import time


def loaded_blas():
    """The BLAS shared object numpy's matmul runs in (from this process's mappings)."""
    names = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = path.rsplit("/", 1)[-1]
            if "blas" in base or "mkl" in base or "blis" in base:
                names.add(path)
    return sorted(names)


def gemm_rate(np, n, reps):
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    b = np.random.default_rng(1).random((n, n), dtype=np.float32)
    a @ b  # warm-up: threads started, pages touched
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return 2.0 * n ** 3 / statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,2048,3072", help="square matrix sizes")
    parser.add_argument("--reps", type=int, default=5, help="timed runs per size (median)")
    parser.add_argument("--tflops", action="store_true", help="print the rate in TFLOP/s only")
    parser.add_argument("--allow-reference-blas", action="store_true",
                        help="measure even numpy's reference BLAS (libblas3)")
    args = parser.parse_args()
    try:
        import numpy as np
    except ImportError:
        sys.exit("cpu_ceilings.py: numpy is missing (Debian: apt-get install python3-numpy libopenblas0)")
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        sys.exit("cpu_ceilings.py: --sizes takes integers separated by commas")
    if not sizes or min(sizes) < 64 or args.reps < 1:
        sys.exit("cpu_ceilings.py: sizes of at least 64 and --reps of at least 1")
    rates = {n: gemm_rate(np, n, args.reps) for n in sizes}
    blas = loaded_blas()
    if not args.allow_reference_blas and not any("openblas" in p or "mkl" in p or "blis" in p
                                                 for p in blas):
        sys.exit("cpu_ceilings.py: numpy runs the reference BLAS (%s), not the machine's rate; install "
                 "libopenblas0 or pass --allow-reference-blas" % ", ".join(blas))
    best = max(rates.values())
    if args.tflops:
        print("%.6f" % (best * 1e-12))
        return
    print(json.dumps({"gemm_flops_per_second": best, "dtype": "float32", "blas": blas,
                      "sizes": {str(n): r for n, r in rates.items()}}, indent=1))


if __name__ == "__main__":
    main()
