"""strata-serve's /health when a rank of a sharded server dies.

Usage: serve_rank_death.py STORE_DIR TIMEOUT_MS -- STRATA-SERVE ARGS...
Starts rank 1 (a follower) and rank 0 (the server) of the same command with
--rank R --store file:STORE_DIR --collective-timeout-ms TIMEOUT_MS, waits for
rank 0's port line, prints /health's status, SIGKILLs rank 1, then polls
/health every 0.2 s for up to 3 timeouts and prints the first non-200 answer
(status and body) with the seconds it took; SIGTERMs rank 0 at the end.
"""
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

split = sys.argv.index("--")
store, timeout_ms = sys.argv[1], int(sys.argv[2])
serve = sys.argv[split + 1:]
common = ["--store", "file:" + store, "--collective-timeout-ms", str(timeout_ms)]
follower = subprocess.Popen(serve + ["--rank", "1"] + common,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
leader = subprocess.Popen(serve + ["--rank", "0"] + common,
                          stdout=subprocess.PIPE, text=True)
match = None
while not match:
    line = leader.stdout.readline()
    if not line:
        sys.exit("serve_rank_death.py: rank 0 exited before its port line")
    match = re.search(r"listening on port (\d+)", line)
url = f"http://127.0.0.1:{match.group(1)}/health"


def health():
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


print("before:", health()[0])
follower.send_signal(signal.SIGKILL)
follower.wait()
start = time.monotonic()
answer = None
while time.monotonic() - start < 3 * timeout_ms / 1000:
    code, body = health()
    if code != 200:
        answer = (code, json.loads(body))
        break
    time.sleep(0.2)
elapsed = time.monotonic() - start
leader.send_signal(signal.SIGTERM)
try:
    leader.wait(timeout=30)
except subprocess.TimeoutExpired:
    leader.kill()
if answer is None:
    sys.exit(f"serve_rank_death.py: /health stayed 200 for {elapsed:.1f} s")
print("after:", answer[0], answer[1].get("status"), answer[1].get("error", ""))
print(f"within the timeout: {elapsed <= timeout_ms / 1000 + 1.0}")
