"""Greedy requests against a running strata-serve, for lit tests.

Usage: greedy_client.py PORT PROMPT MAX_TOKENS
Sends the same /v1/completions request (temperature 0) twice without
streaming and once streamed, checks that the three texts are equal, prints
the text and usage, then prints the prefix-cache and KV counters and some of
vLLM's request histograms of /metrics once no KV block is in use (or after
30 s).
"""
import json
import sys
import urllib.request

port, prompt, max_tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
base = f"http://127.0.0.1:{port}"
body = {"model": "strata", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}


def post(payload):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(payload).encode(),
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=600)


texts = []
for _ in range(2):
    r = json.load(post(body))
    texts.append(r["choices"][0]["text"])
    usage = r["usage"]
streamed = ""
with post(dict(body, stream=True)) as r:
    for line in r:
        line = line.decode().strip()
        if line.startswith("data: ") and line != "data: [DONE]":
            for c in json.loads(line[6:])["choices"]:
                streamed += c.get("text", "")
texts.append(streamed)
print("text:", json.dumps(texts[0]))
print("usage:", json.dumps(usage, sort_keys=True))
print("all equal:", texts[0] == texts[1] == texts[2])
# /metrics shows the engine as of its last step, which ends just after the
# last delivery: poll (up to 30 s) until no KV block is in use.
import time
for _ in range(300):
    metrics = urllib.request.urlopen(base + "/metrics", timeout=60).read().decode()
    if "strata_kv_blocks_in_use 0" in metrics.splitlines():
        break
    time.sleep(0.1)
for line in metrics.splitlines():
    if line.startswith(("strata_prefix_cache_", "strata_kv_blocks_",
                        "vllm:iteration_tokens_total_sum",
                        "vllm:iteration_tokens_total_count",
                        "vllm:request_prompt_tokens_sum",
                        "vllm:request_generation_tokens_sum",
                        "vllm:request_prefill_time_seconds_count")):
        print(line)
