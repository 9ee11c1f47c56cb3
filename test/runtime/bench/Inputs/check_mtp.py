"""Checks a strata-bench --step mtp JSON report: per batch size the phases in
order (no save, restore and re-run with per-token KDA states), every wall
positive, and the two speculative steps the sums of their phases (every draft
accepted: chain + save + verify + draft 0; first draft rejected: chain + save
+ verify + restore + re-run + draft 0 (1 row); with per-token states also
chain + verify with draft 0, or with k >= 3 the chain in one step + verify
with draft 0; with k >= 2 and an mtp_chain plan the verify with draft 0 and
the candidate chains in one graph alone).

usage: check_mtp.py REPORT.json
"""
import json
import sys

PHASES = ["chain", "chain in one step", "save", "verify", "draft 0", "restore", "re-run",
          "draft 0 (1 row)", "verify with draft 0", "verify with draft 0 and chain"]

for r in json.load(open(sys.argv[1])):
    t = {p["name"]: p["seconds"] for p in r["phases"]}
    one_step = r["draft_tokens"] >= 3
    expected = [p for p in PHASES if not (r["token_states"] and p in ("save", "restore", "re-run"))
                and not (not r["token_states"] and p == "verify with draft 0")
                and not (not one_step and p == "chain in one step")
                and not (not (r["token_states"] and r["draft_tokens"] >= 2)
                         and p == "verify with draft 0 and chain")]
    ok = [p["name"] for p in r["phases"]] == expected and all(v > 0 for v in t.values())
    t.setdefault("save", 0.0)
    t.setdefault("restore", 0.0)
    t.setdefault("re-run", 0.0)
    accepted = t["chain"] + t["save"] + t["verify"] + t["draft 0"]
    rejected = t["chain"] + t["save"] + t["verify"] + t["restore"] + t["re-run"] + t["draft 0 (1 row)"]
    ok = ok and abs(accepted - r["accepted_seconds"]) <= 1e-9 * max(1, accepted)
    ok = ok and abs(rejected - r["rejected_seconds"]) <= 1e-9 * max(1, rejected)
    chain = t["chain in one step"] if one_step else t["chain"]
    with_draft = chain + t["verify with draft 0"] if r["token_states"] else 0.0
    if "verify with draft 0 and chain" in t:
        with_draft = t["verify with draft 0 and chain"]
    ok = ok and abs(with_draft - r["with_draft_seconds"]) <= 1e-9 * max(1, with_draft)
    ok = ok and r["decode_seconds"] > 0 and r["graph_replays"] == r["timed_steps"]
    slots = "per-token states" if r["token_states"] else "saved state"
    print(f"B={r['requests']} k={r['draft_tokens']} {slots}: {'ok' if ok else 'MISMATCH'}")
