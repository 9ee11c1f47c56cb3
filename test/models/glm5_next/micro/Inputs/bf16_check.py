#!/usr/bin/env python3
"""bf16 mode on a trained model: strata vs the PyTorch reference's greedy outputs (micro model).

  bf16_check.py prepare --micro DIR --tokenize STRATA_TOKENIZE --questions N --out WORK
      writes WORK/prompts.txt (rendered 5-shot chat prompts, as ids, one per line) and
      WORK/forced.txt (each prompt followed by the reference's greedy generation)
  bf16_check.py check --micro DIR --questions N --out WORK --run RUN.npy [--forced FORCED.npy --min-top1 F]

check: (1) strata's greedy ids (strata-run --dump-ids on prompts.txt) equal the reference's up to the
reference's end (its last id is an end-of-sequence token or the max_new cut); (2) teacher-forced on
prompt + reference generation (strata-run --dump-logits on forced.txt), strata's top-1 at every generated
position equals the reference's next token at >= F of the positions (skipped without --forced).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np


def reference(micro, n):
    rows = [json.loads(l) for l in open(os.path.join(micro, "reference", "greedy-gsm.jsonl"))]
    return {r["index"]: r for r in rows if r["index"] < n}


def prompts(micro, n):
    out = subprocess.run(
        [sys.executable, os.path.join(micro, "data", "generate.py"), "prompts",
         "--data", os.path.join(micro, "data", "gsm", "test.jsonl"),
         "--shots-data", os.path.join(micro, "data", "gsm", "train.jsonl"), "--limit", str(n)],
        check=True, capture_output=True, text=True).stdout
    return [json.loads(l)["question"] for l in out.splitlines() if l.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prepare", "check"])
    ap.add_argument("--micro", required=True)
    ap.add_argument("--questions", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenize")
    ap.add_argument("--run")
    ap.add_argument("--forced")
    ap.add_argument("--max-tokens", type=int, default=0)
    ap.add_argument("--min-top1", type=float, default=0.99)
    a = ap.parse_args()
    ref = reference(a.micro, a.questions)
    if a.mode == "prepare":
        tok = os.path.join(a.micro, "tokenizer.json")
        with open(os.path.join(a.out, "prompts.txt"), "w") as p, \
                open(os.path.join(a.out, "forced.txt"), "w") as f, \
                open(os.path.join(a.out, "lengths.json"), "w") as lengths:
            lens = []
            for k, text in enumerate(prompts(a.micro, a.questions)):
                ids = subprocess.run([a.tokenize, "encode", tok, text], check=True,
                                     capture_output=True, text=True).stdout.split()
                gen = [str(i) for i in ref[k]["ids"]]
                p.write(",".join(ids) + "\n")
                f.write(",".join(ids + gen[:-1]) + "\n")
                lens.append([len(ids), len(gen)])
            json.dump(lens, lengths)
        return 0
    lens = json.load(open(os.path.join(a.out, "lengths.json")))
    run = np.load(a.run)
    forced = np.load(a.forced) if a.forced else None
    row = 0
    agree = total = 0
    ok = True
    for k, (t, g) in enumerate(lens):
        want = ref[k]["ids"]
        got = [int(x) for x in run[k]]
        # strata-run --ignore-eos keeps going after the end token; compare up to the reference's length.
        same = got[:g] == want[:g]
        ok &= same
        print(f"q{k} greedy: {'equal' if same else 'DIFFERENT'} to the reference ({g} tokens)")
        if forced is None:
            continue
        logits = forced[row:row + t + g - 1]
        row += t + g - 1 + a.max_tokens
        pred = logits[t - 1:t - 1 + g].argmax(axis=1)
        agree += int((pred == np.array(want)).sum())
        total += g
    if forced is not None:
        frac = agree / total
        ok &= frac >= a.min_top1
        print(f"teacher-forced top-1: {agree} of {total} generated positions ({frac:.4f}, need >= {a.min_top1})")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
