#!/usr/bin/env python3
"""Reference outputs of a trained GLM-5.3-Flash-micro checkpoint (plan: accuracy.md section 2).

Computed on the dequantized fp8 weights of the exported checkpoint (glm5_ref.load_checkpoint), in fp32 with
TF32 off, by train.py's batched model (its forward is checked against glm5_ref.Glm5Ref.forward/mtp_forward
by train.py's self-check): the same math as the per-token reference, batched with right padding and no cache
(exact for this causal model: padding after a row never changes the row).

Per task (gsm 5-shot, recall 1, count 1, copy 3, reverse 3; shots as strata-eval chooses them, seed 1234):
* teacher-forced pass over prompt + gold reply: per-token gold log-probabilities (mean NLL), top-1 agreement,
  and the first position where the argmax leaves the gold reply;
* greedy replies: where the argmax never leaves the gold reply, greedy decoding reproduces it exactly (it
  ends in <|user|>, an eos id); otherwise decoding resumes from the first divergent token, batched, one full
  forward per new token, until an eos id (999, 1006, 1008) or --max-new tokens (counted from the reply
  start); argmax ties -> lowest id (torch.argmax);
* strict-match and flexible-extract scores (runtime/eval/gsm8k.cpp rules) of the decoded reply (eos removed);
* the exact greedy MTP speculative loop for k = 1 and k = 3 (spec glm5_next-indexer-mtp-cache.md 4.4-4.5):
  after each verify, draft step 0 runs on the committed rows (so its outputs equal a full-sequence MTP
  forward), d_1 comes from the last committed row; steps 1 and 2 take (previous h_out, previous draft) and
  reuse step 0's selection of that row verbatim (index_share_for_mtp_iteration), attending step 0's MTP
  keys; drafts are accepted while they equal the greedy tokens; drafts for positions past the reply's eos
  are not counted.

  python3 make_reference.py --checkpoint DIR --out DIR [--limit N] [--budget-s S] [--device cuda]
"""

import argparse
import json
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train as tr  # noqa: E402  (sets the paths of generate, export, procedural, glm5_ref)
import generate as gen  # noqa: E402
from glm5_ref import rms_norm  # noqa: E402

TASKS = (("gsm", 5), ("recall", 1), ("count", 1), ("copy", 3), ("reverse", 3))
EOS = (999, 1006, 1008)


# ===--------------------------------------------------------------------=== #
# Scoring (runtime/eval/gsm8k.cpp: lm-eval gsm8k v3 filters)
# ===--------------------------------------------------------------------=== #

def strict_match(s):
    m = re.search(r"#### (\-?[0-9\.\,]+)", s)
    return m.group(1) if m else None


def flexible_extract(s):
    found = re.findall(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", s)
    if not found:
        return None
    a, b = found[-1]
    return (a or b).strip()


def normalize(s):
    s = s.replace(",", "").replace("$", "")
    s = re.sub(r"(?s).*#### ", "", s)
    s = re.sub(r"\.$", "", s)
    return s.lower()


def exact_match(pred, gold):
    return pred is not None and normalize(pred) == normalize(gold)


# ===--------------------------------------------------------------------=== #
# Model
# ===--------------------------------------------------------------------=== #

def load_model(ckpt, device, random_init=False):
    cfg = json.load(open(os.path.join(ckpt if ckpt else HERE, "config.json")))
    model = tr.MicroModel(cfg, seed=1).to(device)
    model.w = {n: model.params[n.replace(".", "/")] for n in model.w}
    if not random_init:
        from glm5_ref import load_checkpoint
        _, w = load_checkpoint(ckpt)
        with torch.no_grad():
            for n, p in model.w.items():
                p.copy_(w[n].to(device))
    for p in model.w.values():
        p.requires_grad_(False)
    return model


def pad_batch(seqs, device):
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), tr.PAD, dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, :len(s)] = torch.tensor(s)
    ids = ids.to(device)
    return ids, torch.ones_like(ids, dtype=torch.bool)


def groups_by_tokens(order, lengths, budget):
    """Consecutive groups of `order` (sorted by length) with rows x max length <= budget."""
    out, cur, tmax = [], [], 0
    for i in order:
        t = max(tmax, lengths[i])
        if cur and t * (len(cur) + 1) > budget:
            out.append(cur)
            cur, t = [], lengths[i]
        cur.append(i)
        tmax = t
    if cur:
        out.append(cur)
    return out


@torch.no_grad()
def mtp_chain(model, ids, h, k):
    """Greedy drafts of the k-step MTP chain started at every row p (row p: hidden h_p, token ids[p+1]):
    [k, B, T] ids, draft i guessing the token at p + 2 + i."""
    B, T = ids.shape
    D, root = model.D, model.root
    t = model.t
    pre = root + "layers.%d." % model.L
    at = pre + "self_attn."
    nh, dn, dv = t["num_attention_heads"], t["qk_nope_head_dim"], t["v_head_dim"]
    P = model.p
    emb = P(root + "embed_tokens.weight")

    def eh(tok, hid, zero_pos0):
        e = emb[tok]
        if zero_pos0:
            e = e * (torch.arange(T, device=ids.device) > 0)[None, :, None]
        return torch.cat([rms_norm(e, P(pre + "enorm.weight"), model.eps),
                          rms_norm(hid, P(pre + "hnorm.weight"), model.eps)], -1) @ P(pre + "eh_proj.weight").t()

    def query(x):
        cq = rms_norm(x @ P(at + "q_a_proj.weight").t(), P(at + "q_a_layernorm.weight"), model.eps)
        return cq, (cq @ P(at + "q_b_proj.weight").t()).view(B, T, nh, dn).transpose(1, 2)

    nxt = torch.cat([ids[:, 1:], ids.new_full((B, 1), tr.PAD)], 1)
    z = eh(nxt, h, True)
    x0 = rms_norm(z, P(pre + "input_layernorm.weight"), model.eps)
    cq0, q = query(x0)
    ckv = rms_norm(x0 @ P(at + "kv_a_proj_with_mqa.weight").t(), P(at + "kv_a_layernorm.weight"), model.eps)
    kv = (ckv @ P(at + "kv_b_proj.weight").t()).view(B, T, nh, dn + dv).transpose(1, 2)
    kk, vv = kv[..., :dn], kv[..., dn:]
    score, vis = model.index_scores(x0, cq0, at + "indexer.")
    allowed = model.selection_mask(score, vis)  # step 0's selection, reused by steps 1.. (shared)
    scale = (dn + t.get("qk_rope_head_dim", 0)) ** -0.5
    drafts = []
    for step in range(k):
        if step:
            z = eh(drafts[-1], hout, False)
            _, q = query(rms_norm(z, P(pre + "input_layernorm.weight"), model.eps))
        o = tr.attention(q, kk, vv, allowed[:, None], scale)
        y = z + o.transpose(1, 2).reshape(B, T, nh * dv) @ P(at + "o_proj.weight").t()
        m = model.moe_train(rms_norm(y, P(pre + "post_attention_layernorm.weight"), model.eps)
                            .reshape(B * T, D), pre + "mlp.").view(B, T, D)
        hout = rms_norm(y + m, P(pre + "shared_head.norm.weight"), model.eps)
        drafts.append((hout @ P("lm_head.weight").t()).argmax(-1))
    return torch.stack(drafts)


def simulate(seq, p0, end, drafts, k):
    """Exact greedy speculative loop over a known greedy sequence; returns accepted counts per step.
    seq: prompt + greedy reply (reply starts at p0, its eos, if any, at `end`); drafts[i][r]: guess of
    draft i + 1 from row r for position r + 2 + i."""
    L, steps = p0, []
    while L < end:
        n_prop = min(k, end - L)
        a = 0
        while a < n_prop and drafts[a][L - 1] == seq[L + 1 + a]:
            a += 1
        steps.append((n_prop, a))
        L += a + 1
    return steps


def acceptance_summary(all_steps, k):
    steps = [s for row in all_steps for s in row]
    prop = sum(n for n, _ in steps)
    acc = sum(a for _, a in steps)
    per = []
    for i in range(1, k + 1):
        reached = sum(1 for n, a in steps if n >= i and a >= i - 1)
        proposed = sum(1 for n, _ in steps if n >= i)
        ok = sum(1 for n, a in steps if n >= i and a >= i)
        per.append({"position": i, "proposed": proposed, "accepted": ok,
                    "rate": ok / max(1, proposed), "conditional_rate": ok / max(1, reached)})
    return {"k": k, "verify_steps": len(steps), "drafts": prop, "accepted": acc,
            "acceptance_rate": acc / max(1, prop),
            "tokens_per_step": (acc + len(steps)) / max(1, len(steps)), "per_position": per}


# ===--------------------------------------------------------------------=== #
# Main
# ===--------------------------------------------------------------------=== #

def run_task(model, tok, task, shots_k, args, deadline, log):
    dev = args.device
    test = gen.read_jsonl(os.path.join(HERE, "data", task, "test.jsonl"))
    if args.limit:
        test = test[:args.limit]
    pool = gen.read_jsonl(os.path.join(HERE, "data", task, "train.jsonl"))
    prompts, replies = [], []
    for i, row in enumerate(test):
        shots = [pool[j] for j in gen.choose_shots(len(pool), shots_k, 1234, i)]
        prompts.append(tok.encode(gen.render_chat(shots, row), add_special_tokens=False).ids)
        replies.append(tok.encode(gen.completion(row), add_special_tokens=False).ids)
    n = len(test)
    full = [p + r for p, r in zip(prompts, replies)]
    lengths = [len(s) for s in full]
    order = sorted(range(n), key=lambda i: lengths[i])

    # Teacher forcing.
    t0 = time.time()
    gold_lp, first_div, pred_at_div = [None] * n, [None] * n, [None] * n
    for g in groups_by_tokens(order, lengths, args.batch_tokens):
        ids, valid = pad_batch([full[i] for i in g], dev)
        logits, _, _ = model.forward_train(ids, True, valid)
        for b, i in enumerate(g):
            P, R = len(prompts[i]), len(replies[i])
            lg = logits[b, P - 1:P + R - 1].float()
            lp = torch.log_softmax(lg, -1)
            tgt = torch.tensor(replies[i], device=dev)
            gold_lp[i] = lp.gather(1, tgt[:, None])[:, 0].tolist()
            pred = lg.argmax(-1)
            bad = (pred != tgt).nonzero()
            if bad.numel():
                j = int(bad[0, 0])
                first_div[i], pred_at_div[i] = j, int(pred[j])
    tf_s = time.time() - t0
    nll = -sum(sum(x) for x in gold_lp) / sum(len(x) for x in gold_lp)

    # Greedy: gold where the argmax never leaves it, else resume from the first divergent token.
    gen_ids = [None] * n
    status = ["gold"] * n
    active = []
    for i in range(n):
        if first_div[i] is None:
            gen_ids[i] = list(replies[i])
        else:
            gen_ids[i] = replies[i][:first_div[i]] + [pred_at_div[i]]
            status[i] = "decoded"
            if pred_at_div[i] not in EOS:
                active.append(i)
    t0 = time.time()
    new_tokens = 0
    while active:
        if time.time() > deadline:
            for i in active:
                status[i] = "cut-by-time"
            log(f"{task}: time budget reached, {len(active)} replies cut")
            break
        lens = {i: len(prompts[i]) + len(gen_ids[i]) for i in active}
        nxt_active = []
        for g in groups_by_tokens(sorted(active, key=lambda i: lens[i]), lens, args.batch_tokens):
            ids, valid = pad_batch([prompts[i] + gen_ids[i] for i in g], dev)
            logits, _, _ = model.forward_train(ids, True, valid)
            last = torch.tensor([lens[i] - 1 for i in g], device=dev)
            nx = logits[torch.arange(len(g), device=dev), last].argmax(-1).tolist()
            for i, t in zip(g, nx):
                gen_ids[i].append(t)
                new_tokens += 1
                if t in EOS:
                    continue
                if len(gen_ids[i]) >= args.max_new:
                    status[i] = "max-new"
                    continue
                nxt_active.append(i)
        active = nxt_active
    dec_s = time.time() - t0

    # Scores.
    rows, strict, flex, exact = [], 0, 0, 0
    for i in range(n):
        body = gen_ids[i][:-1] if gen_ids[i] and gen_ids[i][-1] in EOS else gen_ids[i]
        text = tok.decode(body, skip_special_tokens=False)
        s_ok = exact_match(strict_match(text), test[i]["answer"])
        f_ok = exact_match(flexible_extract(text), test[i]["answer"])
        strict += s_ok
        flex += f_ok
        exact += gen_ids[i] == replies[i]
        rows.append({"index": i, "status": status[i], "strict_correct": s_ok, "flexible_correct": f_ok,
                     "generation": text, "ids": gen_ids[i]})

    # MTP speculative loop (k = 1, 3) over prompt + greedy reply.
    t0 = time.time()
    seqs = [prompts[i] + gen_ids[i] for i in range(n)]
    slen = [len(s) for s in seqs]
    steps = {1: [None] * n, 3: [None] * n}
    agree = [0, 0]
    for g in groups_by_tokens(sorted(range(n), key=lambda i: slen[i]), slen, args.batch_tokens):
        if time.time() > deadline:
            log(f"{task}: time budget reached before the MTP simulation of every row")
            break
        ids, valid = pad_batch([seqs[i] for i in g], dev)
        logits, h, _ = model.forward_train(ids, True, valid)
        d3 = mtp_chain(model, ids, h, 3).tolist()
        if not agree[1]:  # chain step 0 == the training MTP forward (same weights, same math)
            draft, _ = model.mtp_train(ids, h, True, valid)
            agree = [int((draft.argmax(-1) == torch.tensor(d3[0], device=dev)).sum()), ids.numel()]
        tgt = logits.argmax(-1).tolist()
        for b, i in enumerate(g):
            p0 = len(prompts[i])
            end = slen[i] - 1
            # the greedy tokens are the target's own argmax: check it on the batch's numerics
            if tgt[b][p0 - 1:end] != seqs[i][p0:end + 1]:
                log(f"{task} row {i}: batched target argmax differs from the greedy reply (near-tie)")
            for k in (1, 3):
                steps[k][i] = simulate(seqs[i], p0, end, [d3[j][b] for j in range(k)], k)
    mtp_s = time.time() - t0
    done = [i for i in range(n) if steps[1][i] is not None]
    for i in done:
        rows[i]["accept_k1"] = [a for _, a in steps[1][i]]
        rows[i]["accept_k3"] = [a for _, a in steps[3][i]]
    summary = {
        "task": task, "shots": shots_k, "rows": n,
        "strict_match": strict / n, "flexible_extract": flex / n,
        "greedy_equals_gold": exact / n,
        "replies_decoded": sum(1 for s in status if s != "gold"),
        "replies_cut_by_time": status.count("cut-by-time"), "replies_at_max_new": status.count("max-new"),
        "teacher_forced_mean_nll": nll,
        "teacher_forced_prefix_agreement": sum(1 for i in range(n) for j in range(len(replies[i]))
                                   if first_div[i] is None or j < first_div[i]) / sum(map(len, replies)),
        "mtp_rows": len(done),
        "mtp_k1": acceptance_summary([steps[1][i] for i in done], 1),
        "mtp_k3": acceptance_summary([steps[3][i] for i in done], 3),
        "mtp_step0_vs_training_forward_argmax_agree": agree,
        "seconds": {"teacher_forced": round(tf_s, 1), "decode": round(dec_s, 1), "mtp": round(mtp_s, 1),
                    "decode_new_tokens": new_tokens},
    }
    loglik = [{"task": task, "index": i, "prompt_len": len(prompts[i]), "reply_ids": replies[i],
               "gold_logprobs": gold_lp[i]} for i in range(min(n, args.loglik_rows))]
    return summary, rows, loglik


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default="", help="exported checkpoint folder (fp8, HF layout)")
    ap.add_argument("--random-init", action="store_true", help="testing: train.py's initial weights")
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=int, default=0, help="first N test rows per task (0: all)")
    ap.add_argument("--tasks", default=",".join(t for t, _ in TASKS))
    ap.add_argument("--max-new", type=int, default=320, help="reply token budget, eos included")
    ap.add_argument("--batch-tokens", type=int, default=65536)
    ap.add_argument("--loglik-rows", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=1e9, help="wall-clock budget; later work is cut")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    if not args.checkpoint and not args.random_init:
        ap.error("--checkpoint is required")
    deadline = time.time() + args.budget_s
    from tokenizers import Tokenizer

    tr.NO_AUTOCAST["device_type"] = args.device
    if args.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    tok = Tokenizer.from_file(os.path.join(HERE, "tokenizer.json"))
    model = load_model(args.checkpoint, args.device, args.random_init)
    os.makedirs(args.out, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    want = args.tasks.split(",")
    summaries, logliks = [], []
    for task, k in TASKS:
        if task not in want:
            continue
        if time.time() > deadline:
            log(f"{task}: skipped, time budget spent")
            continue
        s, rows, ll = run_task(model, tok, task, k, args, deadline, log)
        summaries.append(s)
        logliks += ll
        log(json.dumps({x: s[x] for x in ("task", "rows", "strict_match", "flexible_extract",
                                           "greedy_equals_gold", "teacher_forced_mean_nll", "seconds")}))
        log(f"  mtp k=1 acceptance {s['mtp_k1']['acceptance_rate']:.4f}, k=3 {s['mtp_k3']['acceptance_rate']:.4f} "
            f"per position {[round(p['rate'], 4) for p in s['mtp_k3']['per_position']]}")
        with open(os.path.join(args.out, f"greedy-{task}.jsonl"), "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    meta = {"weights": "dequantized fp8 checkpoint" if not args.random_init else "random init (test)",
            "precision": "fp32, TF32 off", "device": args.device, "max_new": args.max_new,
            "limit": args.limit, "tasks": summaries}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(args.out, "loglik.json"), "w") as f:
        json.dump(logliks, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
