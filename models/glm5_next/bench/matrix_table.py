#!/usr/bin/env python3
"""Merges strata-bench --matrix runs and bench_baselines.py (M lists, --ceilings) into one markdown page.

  matrix_table.py --strata old=matrix-old.json --strata new=matrix-new.json \\
      --baselines baselines-matrix.json --out matrix.md

Tables (docs/Bench.md "Matrix runs"):
  steps     per case: the roofline floor and, per strata run, wall time, wall / floor, summed dispatches
  kernels   per case and run: lm_head (the logits matmul) and the dense linears against PyTorch at the
            same M (cuBLAS bf16; fp8 weights as torch._scaled_mm), the routed experts' rate on the bytes
            the routing touched, routing + grouping (moe_router, moe_select, moe_group) as a share of the
            summed step
The ceilings are the ones measured in the same device call.
"""
import argparse
import json
import re
import sys


def case_key(c):
    return (c["step"], c["requests"], c["tokens"], c["context"])


def case_label(c):
    if c["step"] == "decode":
        return "decode B=%d ctx %d" % (c["requests"], c["context"])
    return "prefill %d x %d" % (c["requests"], c["tokens"])


def kernel_seconds(case, pattern):
    rx = re.compile(pattern)
    return sum(k["seconds"] for k in case["kernels"] if rx.fullmatch(k["name"]))


def torch_seconds(baselines, family, m, variants=("bf16", "blockwise", "rowwise")):
    """Sum over the family's shapes at M = m of seconds x per_step (one variant per shape: bf16, else the
    first fp8 _scaled_mm that ran)."""
    total, shapes = 0.0, {}
    for op in baselines.get("ops", []):
        if op.get("strata") != family or "seconds" not in op:
            continue
        mm = re.search(r"M=(\d+)$", op["name"])
        if not mm or int(mm.group(1)) != m:
            continue
        variant = op.get("variant", "bf16")
        if variant not in variants:
            continue
        shape = op["name"].split()[0]
        if shape in shapes and variants.index(shapes[shape][0]) <= variants.index(variant):
            continue
        shapes[shape] = (variant, op["seconds"] * op["per_step"])
    for _, seconds in shapes.values():
        total += seconds
    return total if shapes else None


def torch_linear_ops(baselines, m):
    """{(N, K): (name, seconds of one call)} of PyTorch's linears at M = m (bf16, else fp8 _scaled_mm)."""
    out = {}
    for op in baselines.get("ops", []):
        if "seconds" not in op or op.get("variant", "bf16") not in ("bf16", "blockwise", "rowwise"):
            continue
        mm = re.search(r"\[(\d+),(\d+)\] M=(\d+)$", op["name"])
        if not mm or int(mm.group(3)) != m:
            continue
        key = (int(mm.group(1)), int(mm.group(2)))
        if key not in out or op["seconds"] < out[key][1]:
            out[key] = (op["name"].rsplit(" M=", 1)[0], op["seconds"])
    return out


def linear_table(run, keys, baselines):
    """Per case, every strata kernel whose first two buffers are x [M, K] and a weight [N, K] of a shape
    PyTorch timed at the same M: time per dispatch side by side."""
    name, cases = run
    out = ["## Linears per shape against PyTorch (run %s, per dispatch)" % name, "",
           "| case | shape (PyTorch op) | strata kernel | strata (us) | torch (us) | ratio |",
           "|---|---|---|---:|---:|---:|"]
    for k in keys:
        c = cases.get(k)
        if not c:
            continue
        for kernel in c["kernels"]:
            shapes = [s for s in kernel.get("arg_shapes", []) if s]
            if len(shapes) < 2 or len(shapes[0]) != 2 or len(shapes[1]) != 2 or shapes[0][1] != shapes[1][1]:
                continue
            m = shapes[0][0]
            torch_ops = torch_linear_ops(baselines, m)
            match = torch_ops.get((shapes[1][0], shapes[1][1]))
            if not match:
                continue
            per = kernel["seconds"] / max(kernel["dispatches"], 1)
            out.append("| %s | %s M=%d | %s | %.1f | %.1f | %.2fx |" % (
                case_label(c), match[0], m, kernel["name"], per * 1e6, match[1] * 1e6, per / match[1]))
    return out + [""]


def fmt_us(s):
    return "-" if s is None else "%.1f" % (s * 1e6)


def ratio(a, b):
    return "-" if not a or not b else "%.2fx" % (a / b)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strata", action="append", required=True, help="NAME=matrix.json (strata-bench --matrix)")
    ap.add_argument("--baselines", help="bench_baselines.py JSON with --ceilings and M lists")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    runs = []
    for spec in args.strata:
        name, _, path = spec.partition("=")
        if not path:
            sys.exit("matrix_table.py: --strata wants NAME=FILE, got '%s'" % spec)
        try:
            with open(path) as f:
                runs.append((name, {case_key(c): c for c in json.load(f)["cases"]}))
        except (OSError, ValueError, KeyError) as e:
            print("matrix_table.py: skipping %s: %s" % (path, e), file=sys.stderr)
    if not runs:
        sys.exit("matrix_table.py: no strata run could be read")
    baselines = {}
    if args.baselines:
        try:
            with open(args.baselines) as f:
                baselines = json.load(f)
        except (OSError, ValueError) as e:
            print("matrix_table.py: no baselines: %s" % e, file=sys.stderr)
    keys = []
    for _, cases in runs:
        keys += [k for k in cases if k not in keys]
    first = next(iter(runs[-1][1].values()))
    out = ["# strata-bench matrix: %s" % first["device"], ""]
    ceil = baselines.get("measured_ceilings", {})
    out.append("Same device call: strata's device copy %.0f GB/s (read + write); PyTorch copy %s, bf16 GEMM %s, "
               "fp8 GEMM %s; the floor uses strata's copy rate and the bf16 GEMM rate (%.0f TFLOP/s)." % (
                   first["copy_bytes_per_second"] / 1e9,
                   "%.0f GB/s" % (ceil["ceiling.copy"] / 1e9) if "ceiling.copy" in ceil else "-",
                   "%.0f TFLOP/s" % (ceil["ceiling.gemm_bf16"] / 1e12) if "ceiling.gemm_bf16" in ceil else "-",
                   "%.0f TFLOP/s" % (ceil["ceiling.gemm_fp8"] / 1e12) if "ceiling.gemm_fp8" in ceil else "-",
                   first["roofline"]["gemm_flops_per_second"] / 1e12))
    out += ["", "## Steps", ""]
    head = "| case | GB to move | TFLOP | floor (ms) |"
    sep = "|---|---:|---:|---:|"
    for name, _ in runs:
        head += " %s wall (ms) | %s wall / floor | %s summed (ms) |" % (name, name, name)
        sep += "---:|---:|---:|"
    out += [head, sep]
    for k in keys:
        ref = next(cases[k] for _, cases in reversed(runs) if k in cases)
        r = ref["roofline"]
        row = "| %s | %.2f | %.2f | %.3f |" % (case_label(ref), r["bytes"] / 1e9, r["flops"] / 1e12,
                                               r["floor_seconds"] * 1e3)
        for _, cases in runs:
            c = cases.get(k)
            if not c:
                row += " - | - | - |"
                continue
            row += " %.3f | %.2fx | %.3f |" % (c["step_wall_seconds"] * 1e3, c["roofline"]["wall_over_floor"],
                                               c["dispatch_seconds"] * 1e3)
        out.append(row)
    out += ["", "wall: an unobserved step (decode replays its captured graph); summed: every dispatch timed "
            "alone. floor: max(bytes / copy rate, FLOPs / GEMM rate) (runtime/bench/roofline.h).", ""]

    out += ["## Kernels against PyTorch and the acceptance rates", ""]
    out += ["| case | run | lm_head (us) | torch lm_head (us) | ratio | linears (us) | torch linears (us) | ratio |"
            " experts (us) | experts TB/s (touched) | routing + grouping |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in keys:
        for name, cases in runs:
            c = cases.get(k)
            if not c:
                continue
            m_logits = c["requests"]
            m_linear = c["requests"] * c["tokens"]
            head = kernel_seconds(c, r"lm_head(_rows)?_\d+")
            t_head = torch_seconds(baselines, "lm_head(cuBLAS)", m_logits)
            lin = kernel_seconds(c, r"linear_\d+")
            t_lin = torch_seconds(baselines, "linear", m_linear)
            experts = kernel_seconds(c, r"moe_(up|down)(_rows)?_\d+")
            rate = c["roofline"]["expert_bytes"] / experts / 1e12 if experts else 0
            routing = kernel_seconds(c, r"moe_(router|select|group)_\d+")
            share = routing / c["dispatch_seconds"] if c["dispatch_seconds"] else 0
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.1f%% |" % (
                case_label(c), name, fmt_us(head), fmt_us(t_head), ratio(head, t_head), fmt_us(lin),
                fmt_us(t_lin), ratio(lin, t_lin), fmt_us(experts), rate, 100 * share))
    out += ["", "lm_head: the gather of the logits rows and their matmul (M = requests); torch: F.linear bf16 "
            "at the same M. linears: every `linear_N` dispatch of the step (MLA q_a/q_b/kv_a/kv_b, KDA q/k/v, "
            "the plain o_proj; the mHC-fused o_proj and the FFN projections are other kernels) against the same "
            "shapes x their count in PyTorch at M = tokens of the step. experts: moe_up/moe_down "
            "(matrix and `_rows` forms) over the routed experts' bytes the step's routing touched.", ""]
    out += linear_table(runs[-1], keys, baselines)
    with open(args.out, "w") as f:
        f.write("\n".join(out))
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
