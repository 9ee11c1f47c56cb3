#!/usr/bin/env python3
"""Compares a strata-eval run (--output JSONL) with the reference's greedy outputs.

  compare_eval.py --eval EVAL.jsonl --reference models/glm5_next/micro/reference/greedy-gsm.jsonl

For every pass of the eval: the questions run, strata's strict-match and flexible-extract accuracy, the
reference's accuracy on the same questions, and how many generations equal the reference's greedy
generation (compared after dropping the empty <think></think> block the server's detokenizer skips).
The form of the upstream gate: accuracy per pass, plus the agreement the issue asks for (>= 97%).
"""
import argparse
import collections
import json
import re


def norm(text):
    return re.sub(r"<think></think>", "", text).strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval", required=True)
    ap.add_argument("--reference", required=True)
    ap.add_argument("--mtp", type=int, choices=[1, 3],
                    help="also print the reference greedy speculative loop's acceptance with k drafts "
                         "on the eval's questions (accept_k1 / accept_k3: accepted drafts per verify)")
    args = ap.parse_args()
    ref = {r["index"]: r for r in map(json.loads, open(args.reference))}
    passes = collections.defaultdict(list)
    for row in map(json.loads, open(args.eval)):
        passes[row["pass"]].append(row)
    print("| pass | questions | strict | flexible | reference strict | reference flexible | same greedy |")
    print("|---|---|---|---|---|---|---|")
    for p in sorted(passes):
        rows = passes[p]
        n = len(rows)
        same = sum(norm(r["generation"]) == norm(ref[r["index"]]["generation"]) for r in rows)
        print(f"| {p} | {n} | {sum(r['strict_correct'] for r in rows) / n:.4f} "
              f"| {sum(r['flexible_correct'] for r in rows) / n:.4f} "
              f"| {sum(ref[r['index']]['strict_correct'] for r in rows) / n:.4f} "
              f"| {sum(ref[r['index']]['flexible_correct'] for r in rows) / n:.4f} "
              f"| {same} of {n} |")
    if args.mtp:
        counts = [c for i in sorted({r["index"] for rows in passes.values() for r in rows})
                  for c in ref[i][f"accept_k{args.mtp}"]]
        overall = sum(counts) / (args.mtp * len(counts))
        per = " ".join(f"{p}:{sum(c >= p for c in counts) / len(counts):.4f}" for p in range(1, args.mtp + 1))
        print(f"reference MTP k={args.mtp}: {len(counts)} verifies, acceptance {overall:.4f}, per position {per}")


if __name__ == "__main__":
    main()
