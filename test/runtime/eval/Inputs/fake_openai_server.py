#!/usr/bin/env python3
"""A scripted OpenAI-compatible server for testing strata-eval's client.

It answers each chat (or completion) request from the gold answers of the
--data file: the right answer unless the question contains WRONG (then
"#### 0"), and without the "#### " line when it contains NOHASH (so only
flexible-extract can recover it). /metrics exposes counters that grow with
every request so the client's before/after deltas can be checked.
"""
import argparse, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--data", required=True)
ap.add_argument("--port-file", required=True)
args = ap.parse_args()
gold = {}
for line in open(args.data):
    if line.strip():
        row = json.loads(line)
        gold["Question: " + row["question"] + "\nAnswer:"] = row
lock = threading.Lock()
counters = {"requests": 0}


def reply_for(last_user):
    row = gold.get(last_user)
    if row is None:
        return "I do not know"
    q, a = row["question"], row["answer"]
    if "WRONG" in q:
        return "Let me think.\n#### 0"
    if "NOHASH" in q:
        return a.split("####")[0] + "So the answer is " + a.split("####")[1].strip() + "."
    return a


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, code, body, ctype="application/json"):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self.send(200, json.dumps({"object": "list", "data": [{"id": "fake-model", "object": "model"}]}))
        elif self.path == "/metrics":
            with lock:
                n = counters["requests"]
            text = (
                "# TYPE strata_prefix_cache_queried_tokens_total counter\n"
                f"strata_prefix_cache_queried_tokens_total {100 * n}\n"
                f"strata_prefix_cache_hit_tokens_total {60 * n}\n"
                f"strata_mtp_draft_tokens_total {10 * n}\n"
                f"strata_mtp_accepted_tokens_total {7 * n}\n"
                f'strata_mtp_draft_tokens_by_position_total{{position="1"}} {5 * n}\n'
                f'strata_mtp_accepted_tokens_by_position_total{{position="1"}} {4 * n}\n'
                f'strata_mtp_draft_tokens_by_position_total{{position="2"}} {5 * n}\n'
                f'strata_mtp_accepted_tokens_by_position_total{{position="2"}} {3 * n}\n'
            )
            self.send(200, text, "text/plain; version=0.0.4")
        else:
            self.send(404, json.dumps({"error": {"message": "not found", "type": "invalid_request_error"}}))

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert body["temperature"] == 0 and "Question:" in body["stop"]
        with lock:
            counters["requests"] += 1
        if self.path == "/v1/chat/completions":
            msgs = body["messages"]
            # Few-shot turns alternate user/assistant and end with the test question.
            assert msgs[-1]["role"] == "user"
            assert all(m["role"] == ("user" if i % 2 == 0 else "assistant") for i, m in enumerate(msgs))
            text = reply_for(msgs[-1]["content"])
            self.send(200, json.dumps({"object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}))
        elif self.path == "/v1/completions":
            last = "Question:" + body["prompt"].split("Question:")[-1]
            self.send(200, json.dumps({"object": "text_completion", "choices": [
                {"index": 0, "text": " " + reply_for(last), "finish_reason": "stop"}]}))
        else:
            self.send(404, "{}")


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(args.port_file, "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
