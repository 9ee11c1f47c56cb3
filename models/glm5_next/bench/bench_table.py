#!/usr/bin/env python3
"""Merges a strata-bench JSON (docs/Bench.md) with PyTorch baselines (bench_baselines.py) into one table.

  bench_table.py --strata STRATA.json --baselines BASE.json [--step decode] [--out TABLE.md]

Rows are kernel families: a strata kernel name without its trailing `_<n>` (linear_0 .. linear_6 ->
linear), the kernels one op lowers to under the op's name (moe_router .. moe_shared_down -> moe_ffn,
swiglu_up/down -> swiglu_mlp), its time per step summed over its kernels. A baseline op names the family it stands for
(`strata`) and how often it runs per step of the benched plan (`per_step`); its time per step is
seconds x per_step, summed over the family's ops of the same `step` (decode / prefill). Columns:

  family | strata us/step | baseline us/step | strata / baseline | strata GB/s (bound bytes) |
  baseline achieved | baseline of ceiling | baseline ops

"baseline achieved" is the family's bytes / time and FLOP / time over its ops; "of ceiling" is the
larger of bytes/s over the memory ceiling and FLOP/s over the op's compute ceiling (the binding one
of the roofline), ceilings from the baselines JSON (shared/docs/performance.md: 4.1 TB/s, 0.78 PF
bf16, 1.4 PF fp8). Families only one side has get "-" on the other. A last row compares the whole
step: strata's summed dispatch time with the baseline op whose family is "step" (if any).
Exit status 1 with a message on unreadable or malformed input.
"""

import argparse
import json
import re
import sys


# Kernels of ops that lower to several (lib/Conversion/LLMToKernel/{FfnOps,MlaOps,KdaOps}.cpp), by op.
OP_OF_KERNEL = {
    "moe_router": "moe_ffn", "moe_select": "moe_ffn", "moe_group": "moe_ffn", "moe_up": "moe_ffn",
    "moe_up_rows": "moe_ffn", "moe_down": "moe_ffn", "moe_down_rows": "moe_ffn",
    "moe_shared_up": "moe_ffn", "moe_shared_up_rows": "moe_ffn",
    "moe_shared_down": "moe_ffn", "moe_shared_down_rows": "moe_ffn",
    "swiglu_up": "swiglu_mlp", "swiglu_up_rows": "swiglu_mlp",
    "swiglu_down": "swiglu_mlp", "swiglu_down_rows": "swiglu_mlp",
    "mla_absorb": "mla_attention", "mla_attend": "mla_attention",
    "mla_project": "mla_attention", "kda_output": "kda_attention",
    "kda_prepare": "kda_attention", "kda_decode": "kda_attention",
    "kpool_scores": "kpool_indexer",
    # An attention o_proj with the mHC residual write as its epilogue.
    "mhc_post_linear": "linear",
}


def family(name):
    kernel = re.sub(r"_\d+$", "", name)
    return OP_OF_KERNEL.get(kernel, kernel)


def fmt_us(s):
    return "-" if s is None else "%.1f" % (s * 1e6)


def fmt_rate(b, f, t):
    if not t:
        return "-"
    parts = []
    if b:
        parts.append("%.1f GB/s" % (b / t / 1e9))
    if f:
        parts.append("%.2f TFLOP/s" % (f / t / 1e12))
    return ", ".join(parts) or "-"


def load(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit("bench_table: cannot read %s %s: %s" % (what, path, e))


def table(strata, base, step):
    try:
        kernels = strata["kernels"]
        ceil = base["ceilings"]
        mem = float(ceil["bytes_per_second"])
        ops = [o for o in base["ops"] if o.get("step", step) == step and "error" not in o]
    except (KeyError, TypeError, ValueError) as e:
        raise SystemExit("bench_table: malformed input: missing %s" % e)
    fam = {}
    for k in kernels:
        f = fam.setdefault(family(k["name"]), {"s": 0.0, "bytes": 0.0})
        f["s"] += k["seconds"]
        f["bytes"] += k["bytes_per_dispatch"] * k["dispatches"]
    bfam = {}
    for o in ops:
        n = o.get("per_step", 1)
        b = bfam.setdefault(o["strata"], {"s": 0.0, "bytes": 0.0, "flops": 0.0, "frac": 0.0, "peak": 0.0,
                                          "names": []})
        b["peak"] = max(b["peak"], float(ceil.get(o.get("compute", "bf16"), 0)))
        b["s"] += o["seconds"] * n
        b["bytes"] += o.get("bytes", 0) * n
        b["flops"] += o.get("flops", 0) * n
        b["names"].append(o["name"] + ("" if n == 1 else " x%g" % n))
    for b in bfam.values():
        if b["s"] > 0:
            b["frac"] = max(b["bytes"] / b["s"] / mem, (b["flops"] / b["s"] / b["peak"]) if b["peak"] else 0.0)
    lines = [
        "| family | strata us/step | baseline us/step | strata / baseline | strata GB/s (bound bytes) "
        "| baseline achieved | baseline of ceiling | baseline ops |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    names = sorted(set(fam) | (set(bfam) - {"step"}),
                   key=lambda n: -(fam.get(n, {}).get("s", 0.0) or bfam.get(n, {}).get("s", 0.0)))
    for n in names:
        s, b = fam.get(n), bfam.get(n)
        ratio = "%.1fx" % (s["s"] / b["s"]) if s and b and b["s"] > 0 else "-"
        sg = "%.2f" % (s["bytes"] / s["s"] / 1e9) if s and s["s"] > 0 else "-"
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            n, fmt_us(s and s["s"]), fmt_us(b and b["s"]), ratio, sg,
            fmt_rate(b["bytes"], b["flops"], b["s"]) if b else "-",
            "%.1f%%" % (100 * b["frac"]) if b and b["frac"] else "-", ", ".join(b["names"]) if b else "-"))
    total = strata.get("dispatch_seconds")
    st = bfam.get("step")
    lines.append("| **step** | %s | %s | %s | | %s | %s | %s |" % (
        fmt_us(total), fmt_us(st and st["s"]),
        "%.1fx" % (total / st["s"]) if total and st and st["s"] > 0 else "-",
        fmt_rate(st["bytes"], st["flops"], st["s"]) if st else "-",
        "%.1f%%" % (100 * st["frac"]) if st and st["frac"] else "-", ", ".join(st["names"]) if st else "-"))
    head = "strata: %s step, %s, %s; baselines: %s, torch %s. Memory ceiling %.1f TB/s." % (
        step, strata.get("target", "?"), strata.get("device", "?"), base.get("device", "?"),
        base.get("torch", "?"), mem / 1e12)
    return head + "\n\n" + "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strata", required=True)
    ap.add_argument("--baselines", required=True)
    ap.add_argument("--step", default=None, help="decode or prefill (default: the strata JSON's step)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    strata = load(args.strata, "strata-bench JSON")
    base = load(args.baselines, "baselines JSON")
    step = args.step or strata.get("step", "decode")
    text = table(strata, base, step)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
