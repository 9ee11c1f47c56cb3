#!/usr/bin/env python3
"""An independent model of vLLM's V1 sampling rules (plain Python, float64).

    vllm_sampling_reference.py cases OUT.json      writes the test cases
    vllm_sampling_reference.py check CASES RESULTS compares strata's results

The rules, from vllm/v1/sample/sampler.py and
vllm/model_executor/layers/utils.py (apply_penalties):
  1. min_tokens: fewer than min_tokens generated -> stop ids get -inf
  2. logit_bias: logit[id] += bias
  3. repetition_penalty r over prompt and output tokens:
     l > 0 -> l / r, else l * r
  4. frequency f, presence p over output tokens:
     l -= f * count + p * (count > 0)
  greedy = argmax (first maximum);
  sampling: l / T, softmax, min_p (p < min_p * p_max dropped), top-k (ties
  at the k-th kept), top-p (by decreasing probability, lower id first on
  ties, keep while the mass before < top_p), renormalized;
  logprobs: log_softmax of the raw logits (vLLM's default raw_logprobs).
"""

import json
import math
import random
import sys

NEG_INF = float("-inf")


def process(case):
    logits = [float(x) for x in case["logits"]]
    prompt = case.get("prompt", [])
    output = case.get("output", []) + case.get("drafts", [])
    p = case.get("params", {})
    if len(output) < p.get("min_tokens", 0):
        for i in p.get("stop_token_ids", []):
            logits[i] = NEG_INF
    for i, b in p.get("logit_bias", {}).items():
        logits[int(i)] += b
    r = p.get("repetition_penalty", 1.0)
    f = p.get("frequency_penalty", 0.0)
    pres = p.get("presence_penalty", 0.0)
    counts = {}
    for t in output:
        counts[t] = counts.get(t, 0) + 1
    seen = set(prompt) | set(output)
    for i in range(len(logits)):
        if i in seen and logits[i] != NEG_INF:
            logits[i] = logits[i] / r if logits[i] > 0 else logits[i] * r
        c = counts.get(i, 0)
        logits[i] -= f * c + pres * (1 if c > 0 else 0)
    return logits


def distribution(logits, p):
    t = p.get("temperature", 1.0)
    m = max(logits)
    w = [math.exp((x - m) / t) if x != NEG_INF else 0.0 for x in logits]
    total = sum(w)
    probs = [x / total for x in w]
    pmax = max(probs)
    keep = [pr > 0 and pr >= p.get("min_p", 0.0) * pmax for pr in probs]
    k = p.get("top_k", 0)
    if k > 0:
        vals = sorted((logits[i] for i in range(len(logits)) if keep[i]),
                      reverse=True)
        if k < len(vals):
            thr = vals[k - 1]
            keep = [keep[i] and logits[i] >= thr for i in range(len(logits))]
    top_p = p.get("top_p", 1.0)
    if top_p < 1.0:
        ids = sorted((i for i in range(len(logits)) if keep[i]),
                     key=lambda i: (-logits[i], i))
        mass = sum(probs[i] for i in ids)
        before = 0.0
        nucleus = set()
        for i in ids:
            if before >= top_p * mass:
                break
            nucleus.add(i)
            before += probs[i]
        keep = [i in nucleus for i in range(len(logits))]
    total = sum(probs[i] for i in range(len(logits)) if keep[i])
    return {i: probs[i] / total for i in range(len(logits)) if keep[i]}


def logprobs(raw, token, n):
    m = max(raw)
    log_z = m + math.log(sum(math.exp(x - m) for x in raw))
    order = sorted(range(len(raw)), key=lambda i: (-raw[i], i))[:n]
    return raw[token] - log_z, [(i, raw[i] - log_z) for i in order]


def make_cases():
    rng = random.Random(23)
    cases = []
    # Hand-written: each rule alone, on logits of both signs.
    base = [2.0, -1.0, 0.5, 3.0, -2.5, 1.0, 0.0, -0.5]
    cases.append({"logits": base, "prompt": [0, 1], "output": [3, 3, 5],
                  "params": {"repetition_penalty": 1.3}})
    cases.append({"logits": base, "prompt": [0, 1], "output": [3, 3, 5],
                  "params": {"frequency_penalty": 0.7}})
    cases.append({"logits": base, "prompt": [0, 1], "output": [3, 3, 5],
                  "params": {"presence_penalty": 1.5}})
    cases.append({"logits": base, "prompt": [0, 1], "output": [3, 3, 5],
                  "params": {"presence_penalty": -0.5,
                             "frequency_penalty": -0.25,
                             "repetition_penalty": 0.8}})
    cases.append({"logits": base, "params": {"logit_bias": {"4": 100.0,
                                                           "3": -100.0}}})
    cases.append({"logits": base, "output": [1],
                  "params": {"min_tokens": 2, "stop_token_ids": [3, 0]}})
    cases.append({"logits": base, "output": [1, 2],
                  "params": {"min_tokens": 2, "stop_token_ids": [3, 0]}})
    cases.append({"logits": base, "params": {"temperature": 0.7,
                                            "min_p": 0.2}})
    cases.append({"logits": base, "params": {"temperature": 1.5,
                                            "min_p": 0.05, "top_k": 3,
                                            "top_p": 0.9}})
    # MTP verify rows: drafts count as output after the committed tokens.
    cases.append({"logits": base, "prompt": [7], "output": [3],
                  "drafts": [3, 5],
                  "params": {"frequency_penalty": 0.4,
                             "repetition_penalty": 1.2,
                             "min_tokens": 3, "stop_token_ids": [0]}})
    # Random: every rule together.
    for _ in range(40):
        v = rng.randint(4, 64)
        logits = [round(rng.gauss(0, 3), 3) for _ in range(v)]
        params = {
            "temperature": rng.choice([0.3, 0.7, 1.0, 1.8]),
            "top_k": rng.choice([0, 0, 1, 5, v + 3]),
            "top_p": rng.choice([1.0, 0.95, 0.5, 0.1]),
            "min_p": rng.choice([0.0, 0.0, 0.05, 0.3]),
            "repetition_penalty": rng.choice([1.0, 1.1, 1.7, 0.6]),
            "presence_penalty": rng.choice([0.0, 0.5, -1.0, 2.0]),
            "frequency_penalty": rng.choice([0.0, 0.3, -0.7, 1.9]),
            "min_tokens": rng.choice([0, 0, 5]),
            "stop_token_ids": rng.sample(range(v), 2),
            "logit_bias": {str(rng.randrange(v)): round(rng.uniform(-5, 5), 2)
                           for _ in range(rng.randint(0, 3))},
        }
        cases.append({
            "logits": logits,
            "prompt": [rng.randrange(v) for _ in range(rng.randint(0, 10))],
            "output": [rng.randrange(v) for _ in range(rng.randint(0, 10))],
            "drafts": [rng.randrange(v) for _ in range(rng.randint(0, 3))],
            "params": params,
            "logprobs": rng.randint(0, 5),
        })
    return cases


def close(a, b, tol):
    if a in ("-inf", NEG_INF) or b in ("-inf", NEG_INF):
        return a in ("-inf", NEG_INF) and b in ("-inf", NEG_INF)
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(b)))


def check(cases_path, results_path):
    cases = json.load(open(cases_path))
    results = [json.loads(line) for line in open(results_path) if line.strip()]
    if len(cases) != len(results):
        print(f"FAIL: {len(cases)} cases, {len(results)} results")
        return 1
    failures = 0
    for n, (case, got) in enumerate(zip(cases, results)):
        p = case.get("params", {})
        want = process(case)
        problems = []
        if not all(close(g, w, 1e-5) for g, w in zip(got["processed"], want)):
            problems.append(f"processed {got['processed']} != {want}")
        greedy = max(range(len(want)), key=lambda i: (want[i], -i))
        if got["greedy"] != greedy:
            problems.append(f"greedy {got['greedy']} != {greedy}")
        if p.get("temperature", 1.0) > 0:
            dist = distribution(want, p)
            got_dist = {int(k): v for k, v in got["dist"].items()}
            if set(got_dist) != set(dist) or not all(
                    close(got_dist[i], dist[i], 1e-5) for i in dist):
                problems.append(f"dist {got_dist} != {dist}")
        lp, top = logprobs([float(x) for x in case["logits"]], greedy,
                           case.get("logprobs", 0))
        if not close(got["logprobs"]["logprob"], lp, 1e-5):
            problems.append(f"logprob {got['logprobs']['logprob']} != {lp}")
        got_top = got["logprobs"]["top"]
        if [t[0] for t in got_top] != [t[0] for t in top] or not all(
                close(g[1], w[1], 1e-5) for g, w in zip(got_top, top)):
            problems.append(f"top {got_top} != {top}")
        if problems:
            failures += 1
            print(f"FAIL case {n}: " + "; ".join(problems))
    print(f"{len(cases) - failures} of {len(cases)} cases match the reference")
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "cases":
        json.dump(make_cases(), open(sys.argv[2], "w"))
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
