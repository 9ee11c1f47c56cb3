#!/usr/bin/env python3
"""Checks a strata-bench-serve JSON result (written with --save-detailed).

1. Recomputes every aggregate from the per-request records, independently of
   the C++ code: counts, token totals, throughputs over the duration (the end
   of the last request), and mean / median / p90 / p99 / std / min / max of
   TTFT, TPOT = (E2E - TTFT) / (tokens - 1), pooled ITL and E2E, percentiles
   interpolated linearly between order statistics (numpy's default). Prints
   "math: exact" when all agree to 1e-9 relative.
2. With --tokens N: every completed request generated N tokens.
3. With --ttft T --itl G [--slack S]: every completed request's TTFT is in
   [T, T + S] and (with --tokens) its E2E in [T + (N - 1) G, ... + S] with
   N - 1 gaps; the median ITL and the median TPOT are in [G - 0.005, G + S];
   prints "timings: as scripted". (The lower bounds of TTFT and E2E are
   causal; single ITLs are not checked: two chunks read together on a
   loaded machine give one gap near 0.)
A run file with "runs" (a sweep) is checked run by run.
"""
import argparse, json, math, sys

ap = argparse.ArgumentParser()
ap.add_argument("result")
ap.add_argument("--ttft", type=float)
ap.add_argument("--itl", type=float)
ap.add_argument("--slack", type=float, default=0.15)
ap.add_argument("--tokens", type=int)
args = ap.parse_args()


def percentile(values, q):
    if not values:
        return 0.0
    v = sorted(values)
    rank = q / 100 * (len(v) - 1)
    lo = math.floor(rank)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (rank - lo)


def stats(values):
    if not values:
        return dict(mean=0, median=0, p90=0, p99=0, std=0, min=0, max=0)
    mean = sum(values) / len(values)
    return dict(mean=mean, median=percentile(values, 50), p90=percentile(values, 90),
                p99=percentile(values, 99),
                std=math.sqrt(sum((x - mean) ** 2 for x in values) / len(values)),
                min=min(values), max=max(values))


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def check(run):
    bad = []
    reqs = run["requests"]
    ok = [r for r in reqs if r["ok"]]
    duration = max((r["start"] + r["e2e"] for r in reqs), default=0)
    expect = {
        "completed": len(ok), "failed": len(reqs) - len(ok),
        "total_input_tokens": sum(r["prompt_tokens"] for r in ok),
        "total_output_tokens": sum(r["output_tokens"] for r in ok),
        "duration": duration,
    }
    if duration > 0:
        expect["request_throughput"] = len(ok) / duration
        expect["input_throughput"] = expect["total_input_tokens"] / duration
        expect["output_throughput"] = expect["total_output_tokens"] / duration
        expect["total_token_throughput"] = expect["input_throughput"] + expect["output_throughput"]
    series = {
        "ttft": [r["ttft"] for r in ok],
        "tpot": [(r["e2e"] - r["ttft"]) / (r["output_tokens"] - 1) for r in ok if r["output_tokens"] > 1],
        "itl": [x for r in ok for x in r["itl"]],
        "e2el": [r["e2e"] for r in ok],
    }
    for name, values in series.items():
        for stat, value in stats(values).items():
            expect[f"{stat}_{name}_ms"] = value * 1e3
    for key, value in expect.items():
        if not close(run[key], value):
            bad.append(f"{key}: reported {run[key]}, recomputed {value}")
    if args.tokens is not None:
        for i, r in enumerate(ok):
            if r["output_tokens"] != args.tokens:
                bad.append(f"request {i}: {r['output_tokens']} output tokens, expected {args.tokens}")
    if args.ttft is not None:
        # Causal bounds per request (nothing can arrive before it is sent),
        # slack above; the ITL and TPOT of the run by their medians, which a
        # few chunks read together on a loaded machine cannot move.
        first, gap, n = args.ttft, args.itl, args.tokens
        for i, r in enumerate(ok):
            if not first <= r["ttft"] <= first + args.slack:
                bad.append(f"request {i}: ttft {r['ttft']:.4f} outside [{first}, {first + args.slack}]")
            if n is not None:
                least = first + (n - 1) * gap - 0.002
                if not least <= r["e2e"] <= least + args.slack:
                    bad.append(f"request {i}: e2e {r['e2e']:.4f} outside [{least}, {least + args.slack}]")
                if len(r["itl"]) != n - 1:
                    bad.append(f"request {i}: {len(r['itl'])} gaps for {n} tokens")
        lo, hi = gap - 0.005, gap + args.slack
        itl = percentile([x for r in ok for x in r["itl"]], 50)
        tpot = percentile([(r["e2e"] - r["ttft"]) / (r["output_tokens"] - 1) for r in ok if r["output_tokens"] > 1], 50)
        for name, value in (("median itl", itl), ("median tpot", tpot)):
            if not lo <= value <= hi:
                bad.append(f"{name} {value:.4f} outside [{lo}, {hi}]")
    return bad


result = json.load(open(args.result))
runs = result["runs"] if "runs" in result else [result]
problems = [p for run in runs for p in check(run)]
for p in problems:
    print("FAIL", p)
if problems:
    sys.exit(1)
print(f"math: exact ({len(runs)} run(s), {sum(len(r['requests']) for r in runs)} requests)")
if args.ttft is not None:
    print("timings: as scripted")
