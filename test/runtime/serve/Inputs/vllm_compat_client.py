"""vLLM-compatibility requests against strata-serve-test-server, for lit.

Usage: vllm_compat_client.py PORT
The echo engine generates prompt[i % len] (byte-level tokens), so every
expected text below follows from the prompt. Prints one line per check.
"""
import json
import sys
import urllib.error
import urllib.request

base = f"http://127.0.0.1:{sys.argv[1]}"
KEY = {"Authorization": "Bearer sk-test"}


def post(path, body, headers=KEY, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data,
                                 headers=dict(headers, **{"Content-Type": "application/json"}))
    try:
        return urllib.request.urlopen(req, timeout=60)
    except urllib.error.HTTPError as e:
        return e


def sse(response):
    """The data payloads of a server-sent-event stream, as vLLM's and
    SGLang's benchmark clients split them."""
    out = []
    for line in response.read().decode().split("\n\n"):
        line = line.strip()
        if line.startswith(":") or not line:
            continue
        payload = line[len("data: "):]
        out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


# vllm bench serve, completions backend: the exact body of
# vllm/benchmarks/lib/endpoint_request_func.py (async_request_openai_completions)
# with --ignore-eos and its x-request-id header; read as that client reads it.
r = post("/v1/completions", {
    "model": "strata-test", "prompt": "vllm", "repetition_penalty": 1.0,
    "max_tokens": 6, "logprobs": None, "stream": True,
    "stream_options": {"include_usage": True}, "ignore_eos": True},
    dict(KEY, **{"x-request-id": "bench-7"}))
events = sse(r)
text = "".join(e["choices"][0].get("text") or "" for e in events
               if e != "[DONE]" and e.get("choices"))
usage = [e["usage"] for e in events if e != "[DONE]" and e.get("usage")][-1]
print("vllm bench:", r.status, r.headers["X-Request-Id"], json.dumps(text),
      usage["completion_tokens"], events[-1])

# sglang.bench_serving, completions: python/sglang/bench_serving.py's body;
# it reads data["choices"][0]["text"] from every chunk.
r = post("/v1/completions", {
    "model": "strata-test", "prompt": "sgl", "temperature": 0.0, "best_of": 1,
    "max_tokens": 5, "stream": True, "ignore_eos": True})
events = sse(r)
text = "".join(e["choices"][0]["text"] for e in events if e != "[DONE]")
print("sglang bench:", r.status, json.dumps(text))

# n and batched prompts: choice index = prompt index * n + sample index.
r = json.load(post("/v1/completions", {"prompt": ["ab", "xyz"], "n": 2,
                                       "max_tokens": 4}))
print("batch x n:", [(c["index"], c["text"]) for c in r["choices"]],
      r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"])
events = sse(post("/v1/completions", {"prompt": "pq", "n": 2, "max_tokens": 3,
                                      "stream": True}))
per_choice = {}
for e in events[:-1]:
    for c in e["choices"]:
        per_choice[c["index"]] = per_choice.get(c["index"], "") + c["text"]
print("n stream:", sorted(per_choice.items()), events[-1])

# logprobs (synthetic values of the echo engine: token i has -(i % 8) / 8).
r = json.load(post("/v1/completions", {"prompt": "abc", "max_tokens": 3,
                                       "logprobs": 1}))
lp = r["choices"][0]["logprobs"]
print("completion logprobs:", lp["tokens"], lp["token_logprobs"],
      lp["text_offset"], lp["top_logprobs"][1])
r = json.load(post("/v1/chat/completions", {
    "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
    "logprobs": True, "top_logprobs": 2}))
c = r["choices"][0]["logprobs"]["content"]
print("chat logprobs:", [(x["token"], x["logprob"], x["bytes"]) for x in c],
      [a["token"] for a in c[0]["top_logprobs"]])
events = sse(post("/v1/completions", {"prompt": "ab", "max_tokens": 2,
                                      "logprobs": 0, "stream": True}))
print("stream logprobs:", " ".join(
    str(e["choices"][0]["logprobs"]["token_logprobs"])
    for e in events[:-1] if e["choices"][0]["logprobs"]))

# echo, stop strings kept, stop_token_ids, skip_special_tokens, default
# max_tokens (16 for completions).
r = json.load(post("/v1/completions", {"prompt": "hey", "max_tokens": 2, "echo": True}))
print("echo:", json.dumps(r["choices"][0]["text"]))
# echo with logprobs: the prompt's tokens first (the first has no context:
# null), then the generated ones; streamed, the echo chunk carries the
# prompt's. prompt_logprobs (vLLM): null, then per position {id: {logprob,
# rank, decoded_token}} (synthetic: prompt token i has -(i % 4) / 4, rank
# i % 4 + 1, the top list ids 0, 1, ...).
r = json.load(post("/v1/completions", {"prompt": "hey", "max_tokens": 2, "echo": True,
                                       "logprobs": 1}))
lp = r["choices"][0]["logprobs"]
print("echo logprobs:", json.dumps(r["choices"][0]["text"]), lp["tokens"], lp["token_logprobs"],
      lp["text_offset"], lp["top_logprobs"][0], lp["top_logprobs"][1])
events = sse(post("/v1/completions", {"prompt": "hey", "max_tokens": 2, "echo": True,
                                      "logprobs": 0, "stream": True}))
print("echo stream:", [(e["choices"][0]["text"],
                        (e["choices"][0]["logprobs"] or {}).get("token_logprobs"),
                        (e["choices"][0]["logprobs"] or {}).get("text_offset"))
                       for e in events[:-1]])
r = json.load(post("/v1/completions", {"prompt": "hey", "max_tokens": 1, "prompt_logprobs": 1}))
print("prompt_logprobs:", json.dumps(r["choices"][0]["prompt_logprobs"]))
r = json.load(post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}],
                                            "max_tokens": 1, "prompt_logprobs": 0}))
pl = r["prompt_logprobs"]
print("chat prompt_logprobs:", len(pl), r["usage"]["prompt_tokens"], pl[0], json.dumps(pl[1]))
r = json.load(post("/v1/completions", {"prompt": "hello", "max_tokens": 20,
                                       "stop": ["ll"], "include_stop_str_in_output": True}))
print("stop kept:", json.dumps(r["choices"][0]["text"]), r["choices"][0]["finish_reason"])
r = json.load(post("/v1/completions", {"prompt": "abcd", "max_tokens": 20,
                                       "stop_token_ids": [ord("c")]}))
print("stop_token_ids:", json.dumps(r["choices"][0]["text"]), r["choices"][0]["finish_reason"],
      r["usage"]["completion_tokens"])
r = json.load(post("/v1/completions", {"prompt": [256 + 7, ord("a")], "max_tokens": 2,
                                       "skip_special_tokens": False}))
print("specials kept:", json.dumps(r["choices"][0]["text"]))
r = json.load(post("/v1/completions", {"prompt": "0123456789"}))
print("default max_tokens:", r["usage"]["completion_tokens"], r["choices"][0]["finish_reason"])
events = sse(post("/v1/completions", {"prompt": "uv", "max_tokens": 3, "stream": True,
                                      "stream_options": {"continuous_usage_stats": True}}))
print("continuous usage:", [e["usage"]["completion_tokens"] for e in events[:-1]])

# GLM reasoning parser: the echo of "<think>plan</think>answer" (both
# markers are special tokens) splits into reasoning_content and content.
think = {"messages": [{"role": "user", "content": "<think>plan</think>answer"}],
         "max_tokens": 16}
m = json.load(post("/v1/chat/completions", think))["choices"][0]["message"]
print("reasoning:", json.dumps(m["reasoning_content"]), json.dumps(m["content"]))
reasoning, content = "", ""
for e in sse(post("/v1/chat/completions", dict(think, stream=True)))[:-1]:
    for c in e["choices"]:
        reasoning += c["delta"].get("reasoning_content") or ""
        content += c["delta"].get("content") or ""
print("reasoning stream:", json.dumps(reasoning), json.dumps(content))

# Errors: out-of-vocabulary ids in logit_bias and stop_token_ids,
# prompt_logprobs in a stream, too many choices.
for body in ({"prompt": "x", "logit_bias": {"999999": 1}},
             {"prompt": "x", "stop_token_ids": [999999]},
             {"prompt": "x", "prompt_logprobs": 1, "stream": True},
             {"prompt": ["a"] * 40, "n": 2}):
    r = post("/v1/completions", body)
    e = json.load(r)["error"]
    print("error:", r.status, e["param"], e["message"])

# API key: none, wrong, right; /health stays open.
for label, headers in (("none", {}), ("wrong", {"Authorization": "Bearer nope"}),
                       ("right", KEY)):
    r = post("/v1/completions", {"prompt": "k", "max_tokens": 1}, headers)
    body = json.load(r)
    print(f"key {label}:", r.status, body["error"]["code"] if "error" in body else "ok")
r = urllib.request.urlopen(base + "/health")
print("health without key:", r.status)

# CORS: a preflight from an allowed origin, and the header on an answer.
req = urllib.request.Request(base + "/v1/completions", method="OPTIONS",
                             headers={"Origin": "http://app.example",
                                      "Access-Control-Request-Method": "POST"})
r = urllib.request.urlopen(req)
print("preflight:", r.status, r.headers["Access-Control-Allow-Origin"],
      r.headers["Access-Control-Allow-Methods"])
r = post("/v1/completions", {"prompt": "k", "max_tokens": 1},
         dict(KEY, Origin="http://evil.example"))
print("other origin:", r.status, r.headers.get("Access-Control-Allow-Origin"))

# vLLM's /tokenize and /detokenize.
r = json.load(post("/tokenize", {"prompt": "hi", "add_special_tokens": False}))
print("tokenize:", r["tokens"], r["count"], r["max_model_len"])
r = json.load(post("/detokenize", {"tokens": [104, 105, 257]}))
print("detokenize:", json.dumps(r["prompt"]))
r = post("/detokenize", {"tokens": [1, 99999]})
print("detokenize error:", r.status, json.load(r)["error"]["message"])

# /metrics under vLLM's names: the requests above finished.
text = urllib.request.urlopen(base + "/metrics").read().decode()
def metric(name):
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            if name.endswith("}") or "{" not in name:
                return line
    return None
print("metrics:", metric('vllm:request_success_total{model_name="strata-test",engine="0",finished_reason="stop"}') is not None,
      metric("vllm:time_to_first_token_seconds_count") is not None)
ttft = [l for l in text.splitlines() if l.startswith("vllm:time_to_first_token_seconds_count")][0]
e2e = [l for l in text.splitlines() if l.startswith("vllm:e2e_request_latency_seconds_count")][0]
queue = [l for l in text.splitlines() if l.startswith("vllm:request_queue_time_seconds_count")][0]
success = sum(float(l.split()[-1]) for l in text.splitlines()
              if l.startswith("vllm:request_success_total{"))
print("counts:", int(float(ttft.split()[-1])) > 20, float(e2e.split()[-1]) == success,
      float(queue.split()[-1]) >= float(ttft.split()[-1]))
print([l for l in text.splitlines() if l.startswith("vllm:kv_cache_usage_perc")][0])
# The phases and token counts of every finished request that produced a
# token; the tokens-per-step histogram is exported (the test engine has no
# scheduler steps: its count is 0; the scheduler's are checked by
# ServeMetrics and model-serve.test).
def count(name):
    return float([l for l in text.splitlines() if l.startswith(name + "_count")][0].split()[-1])
print("phases:", count("vllm:request_prefill_time_seconds") == count("vllm:request_inference_time_seconds")
      == count("vllm:request_decode_time_seconds") > 20,
      count("vllm:request_prompt_tokens") == count("vllm:request_generation_tokens") == float(e2e.split()[-1]),
      count("vllm:iteration_tokens_total") == 0)

# An engine failure (the test engine fails prompts holding "~"): the
# request gets 500 and /health 503 from then on.
r = post("/v1/completions", {"prompt": "boom~", "max_tokens": 4})
print("engine failure:", r.status, json.load(r)["error"]["code"])
try:
    urllib.request.urlopen(base + "/health")
    print("health after failure: 200")
except urllib.error.HTTPError as e:
    print("health after failure:", e.code, json.dumps(json.load(e)))
