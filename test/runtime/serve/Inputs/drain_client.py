"""Graceful shutdown of a server with streams in flight, for lit tests.

Usage: drain_client.py (--sigterm | --close-stdin) MAX_TOKENS SERVER [ARGS...]
Starts SERVER (it prints "listening on port N"), opens three streaming
completions, and once each has sent a chunk asks the server to stop
(SIGTERM, or closing its stdin for strata-serve-test-server --drain-ms).
Then: a new request and /health must get 503 while the streams finish with
[DONE]; the server must exit. Prints what it saw.
"""
import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

mode, max_tokens, server_cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
server = subprocess.Popen(server_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
port = None
while port is None:
    line = server.stdout.readline()
    if not line:
        sys.exit("drain_client.py: the server exited before its port line")
    if "listening on port" in line:
        port = int(line.split()[-1])
base = f"http://127.0.0.1:{port}"
BODY = {"prompt": "drain me please", "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
        "stream": True, "stream_options": {"include_usage": True}}

first_chunk = threading.Barrier(4)
results = [None] * 3


def stream(i):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(BODY).encode(),
                                 headers={"Content-Type": "application/json"})
    events, signalled = [], False
    with urllib.request.urlopen(req, timeout=120) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            events.append(line[6:])
            if not signalled:
                signalled = True
                first_chunk.wait()
    tokens = sum(1 for e in events if e != "[DONE]" and json.loads(e)["choices"])
    usage = [json.loads(e)["usage"] for e in events if e != "[DONE]" and json.loads(e).get("usage")]
    results[i] = (events[-1] == "[DONE]", usage[0]["completion_tokens"] if usage else None)


threads = [threading.Thread(target=stream, args=(i,)) for i in range(3)]
for t in threads:
    t.start()
first_chunk.wait()
stop_time = time.time()
if mode == "--sigterm":
    server.send_signal(signal.SIGTERM)
else:
    server.stdin.close()
time.sleep(0.3)
try:
    urllib.request.urlopen(urllib.request.Request(
        base + "/v1/completions", data=json.dumps({"prompt": "late", "max_tokens": 2}).encode(),
        headers={"Content-Type": "application/json"}), timeout=30)
    print("new request: accepted")
except urllib.error.HTTPError as e:
    print("new request:", e.code, json.load(e)["error"]["code"])
except OSError as e:
    print("new request: no answer (the streams ended first?)", e)
try:
    urllib.request.urlopen(base + "/health", timeout=30)
    print("health: 200")
except urllib.error.HTTPError as e:
    print("health:", e.code, json.load(e)["status"])
for t in threads:
    t.join()
for done, tokens in results:
    print("stream: [DONE]" if done else "stream: cut", "completion_tokens", tokens)
server.wait(timeout=60)
print("server exited:", server.returncode, "within timeout:", time.time() - stop_time < 60)
for line in server.stdout:
    if "drained" in line or "every request finished" in line or "kv" in line:
        print("server:", line.strip())
