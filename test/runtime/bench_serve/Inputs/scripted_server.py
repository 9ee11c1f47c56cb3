#!/usr/bin/env python3
"""A scripted OpenAI-compatible streaming server with known delays.

Every /v1/completions or /v1/chat/completions request is streamed (chunked
SSE): after --ttft seconds one chunk with text "t", then one more every --itl
seconds until max_tokens chunks were sent, then a usage chunk
(prompt_tokens = the prompt's length in ids or characters, completion_tokens
= max_tokens) and [DONE]. So a client must measure TTFT ~ --ttft, every ITL
and TPOT ~ --itl. Faults, counted over generation requests in arrival order
(1-based request number n):
  --fail-every K    requests with n % K == 0 get HTTP 500 and an error body
  --error-every K   ... send two chunks, then an error event
  --stall-every K   ... send headers and a keep-alive comment every 0.2 s,
                    never an answer
  --die-after N     the server process exits when request N + 1 arrives
Prints "listening on port P" and stops when stdin closes (with_server.py).
/metrics counts prompt and generation tokens like strata-serve's.
"""
import argparse, json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ap = argparse.ArgumentParser()
ap.add_argument("--ttft", type=float, default=0.2)
ap.add_argument("--itl", type=float, default=0.05)
ap.add_argument("--fail-every", type=int, default=0)
ap.add_argument("--error-every", type=int, default=0)
ap.add_argument("--stall-every", type=int, default=0)
ap.add_argument("--die-after", type=int, default=0)
args = ap.parse_args()

lock = threading.Lock()
state = {"n": 0, "prompt": 0, "generation": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, obj):
        self.chunk("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n")

    def do_GET(self):
        if self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
        elif self.path == "/metrics":
            with lock:
                text = (f"strata_prompt_tokens_total {state['prompt']}\n"
                        f"strata_generation_tokens_total {state['generation']}\n")
            data = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self.send_json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with lock:
            state["n"] += 1
            n = state["n"]
        if args.die_after and n > args.die_after:
            os._exit(0)
        chat = "chat" in self.path
        prompt = body["messages"][0]["content"] if chat else body["prompt"]
        tokens = int(body["max_tokens"])
        if args.fail_every and n % args.fail_every == 0:
            self.send_json(500, {"error": {"message": f"scripted failure of request {n}", "type": "server_error"}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if args.stall_every and n % args.stall_every == 0:
            try:
                while True:
                    self.chunk(": keep-alive\n\n")
                    time.sleep(0.2)
            except OSError:
                return
        time.sleep(args.ttft)
        for i in range(tokens):
            if i:
                time.sleep(args.itl)
            if args.error_every and n % args.error_every == 0 and i == 2:
                self.event({"error": {"message": f"scripted error event in request {n}"}})
                self.event("[DONE]")
                self.chunk("")
                return
            if chat:
                self.event({"choices": [{"index": 0, "delta": {"content": "t"}, "finish_reason": None}]})
            else:
                self.event({"choices": [{"index": 0, "text": "t", "finish_reason": None}]})
        with lock:
            state["prompt"] += len(prompt)
            state["generation"] += tokens
        self.event({"choices": [], "usage": {"prompt_tokens": len(prompt), "completion_tokens": tokens,
                                             "total_tokens": len(prompt) + tokens}})
        self.event("[DONE]")
        self.chunk("")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print(f"listening on port {server.server_address[1]}", flush=True)
sys.stdin.read()
server.shutdown()
