"""Checks strata-serve's prompt log-probabilities against strata-run's logits.

Usage: prompt_logprobs_client.py PORT IDS_FILE LOGITS_NPY

IDS_FILE holds the prompt's token ids (comma-separated), LOGITS_NPY the
logits strata-run dumped for that prompt in one step (row j predicts token
j + 1). Asks /v1/completions for vLLM's prompt_logprobs (top 3) twice (the
second would be a prefix-cache hit for any other request) and for echo with
logprobs (top 2), and prints what agrees with the log-softmax of the rows.
"""

import json
import sys
import urllib.request

import numpy as np

port, ids_path, logits_path = sys.argv[1], sys.argv[2], sys.argv[3]
ids = [int(x) for x in open(ids_path).read().strip().split(",")]
logits = np.load(logits_path).astype(np.float64)
rows = logits[: len(ids)]
log_z = rows.max(axis=1) + np.log(np.exp(rows - rows.max(axis=1, keepdims=True)).sum(axis=1))
ref = rows - log_z[:, None]


def post(body):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))


def check_prompt_logprobs(served, top):
    """Max |served - reference| over the prompt tokens; ranks and top ids equal."""
    diff, ranks_equal, tops_equal = 0.0, True, True
    for j in range(1, len(ids)):
        row = ref[j - 1]
        entry = served[j]
        own = entry[str(ids[j])]
        diff = max(diff, abs(own["logprob"] - row[ids[j]]))
        rank = 1 + int((logits[j - 1] > logits[j - 1][ids[j]]).sum())
        ranks_equal &= own["rank"] == rank
        best = [int(i) for i in np.argsort(-logits[j - 1], kind="stable")[:top]]
        listed = {int(k) for k in entry}
        tops_equal &= set(best) | {ids[j]} == listed
        for i in best:
            diff = max(diff, abs(entry[str(i)]["logprob"] - row[i]))
    return diff, ranks_equal, tops_equal


body = {"prompt": ids, "max_tokens": 1, "temperature": 0, "prompt_logprobs": 3}
runs = [post(body), post(body)]
for n, r in enumerate(runs):
    served = r["choices"][0]["prompt_logprobs"]
    diff, ranks_equal, tops_equal = check_prompt_logprobs(served, 3)
    print(f"prompt_logprobs {n}: positions {len(served)} first {served[0]} "
          f"max diff below 1e-4: {diff < 1e-4} ranks equal: {ranks_equal} "
          f"top 3 equal: {tops_equal} cached tokens: "
          f"{r['usage']['prompt_tokens_details']['cached_tokens']}")
print("repeat equal:", runs[0]["choices"][0]["prompt_logprobs"] ==
      runs[1]["choices"][0]["prompt_logprobs"])

r = post({"prompt": ids, "max_tokens": 2, "temperature": 0, "echo": True, "logprobs": 2})
lp = r["choices"][0]["logprobs"]
prompt_lp = lp["token_logprobs"][: len(ids)]
diff = max(abs(prompt_lp[j] - ref[j - 1][ids[j]]) for j in range(1, len(ids)))
# The first generated token (greedy) is row len(ids) - 1's best.
first = lp["token_logprobs"][len(ids)]
print(f"echo: tokens {len(lp['tokens'])} first null: {prompt_lp[0] is None and lp['top_logprobs'][0] is None} "
      f"max diff below 1e-4: {diff < 1e-4} "
      f"generated matches: {abs(first - ref[len(ids) - 1].max()) < 1e-4} "
      f"top 2 per position: {all(len(t) == 2 for t in lp['top_logprobs'][1:])} "
      f"offsets from 0: {lp['text_offset'][0] == 0}")
