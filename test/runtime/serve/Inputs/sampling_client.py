"""Seeds, n, logprobs and penalties against strata-serve on a model.

Usage: sampling_client.py PORT
Prints one line per property, each a comparison the server must satisfy.
"""
import json
import math
import sys
import urllib.request

base = f"http://127.0.0.1:{sys.argv[1]}"
PROMPT = "Tom has 3 apples and buys 4 more. How many apples does he have?"


def post(body):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=600))


def texts(r):
    return [c["text"] for c in sorted(r["choices"], key=lambda c: c["index"])]


sampled = {"prompt": PROMPT, "max_tokens": 8, "temperature": 1.0, "ignore_eos": True}
two = texts(post(dict(sampled, n=2, seed=11)))
again = texts(post(dict(sampled, n=2, seed=11)))
first = texts(post(dict(sampled, seed=11)))
second = texts(post(dict(sampled, seed=12)))
print("n=2 reproducible:", two == again)
print("sample i uses seed + i:", two[0] == first[0], two[1] == second[0])
print("samples differ:", two[0] != two[1])

# Greedy with logprobs: the sampled token is the most likely one, its
# logprob is the first of the top list, and the top list is sorted.
r = post({"prompt": PROMPT, "max_tokens": 6, "temperature": 0, "logprobs": 3, "ignore_eos": True})
lp = r["choices"][0]["logprobs"]
ok = all(abs(tl - max(top.values())) < 1e-6 for tl, top in zip(lp["token_logprobs"], lp["top_logprobs"]))
print("greedy logprob is the top one:", ok, len(lp["tokens"]))
print("logprobs <= 0 and normalized-looking:",
      all(x <= 0 for x in lp["token_logprobs"]),
      all(sum(math.exp(v) for v in top.values()) <= 1 + 1e-6 for top in lp["top_logprobs"]))

# Penalties change greedy decoding: a huge presence penalty forbids repeats.
plain = post({"prompt": PROMPT, "max_tokens": 24, "temperature": 0, "ignore_eos": True})
pen = post({"prompt": PROMPT, "max_tokens": 24, "temperature": 0, "ignore_eos": True,
            "presence_penalty": 2.0, "frequency_penalty": 2.0, "logprobs": 0})
toks = pen["choices"][0]["logprobs"]["tokens"]
print("completion tokens:", plain["usage"]["completion_tokens"], pen["usage"]["completion_tokens"])
# logit_bias +100 on one token makes greedy pick it every time.
biased = post({"prompt": PROMPT, "max_tokens": 4, "temperature": 0, "ignore_eos": True,
               "logit_bias": {"42": 100}, "logprobs": 0})
print("logit_bias forces the token:", len(set(biased["choices"][0]["logprobs"]["tokens"])) == 1)
# min_p 1.0 leaves only the most likely token: sampling equals greedy.
greedy = post({"prompt": PROMPT, "max_tokens": 8, "temperature": 0, "ignore_eos": True})
minp = post({"prompt": PROMPT, "max_tokens": 8, "temperature": 1.5, "min_p": 1.0, "seed": 5,
             "ignore_eos": True})
print("min_p 1 equals greedy:", texts(minp) == texts(greedy))
