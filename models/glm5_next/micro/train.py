#!/usr/bin/env python3
"""Trains GLM-5.3-Flash-micro on one GPU (plan: README.md "Training plan", accuracy.md section 2).

Trained once (2026-12-01, one H200, 406 steps in 324 s, train.log; results in README.md "Trained checkpoint"):
the self-checks passed on the GPU too (target logits 1.9e-6, MTP 2.2e-6 vs the per-token reference). The
training schedule follows wall-clock progress (--minutes), not a step count.

Reuse: the model subclasses glm5_ref.Glm5Ref with trainable parameters under the checkpoint names, so the
per-token parts (rms_norm, hc_pre/hc_post with Sinkhorn, clamped SwiGLU) are the reference code itself;
the sequence parts (KDA, MLA + kpool indexer, MoE with load statistics, MTP) are batched, differentiable
re-writes of the same math. Data come from data/generate.py (train keys only), tokens from tokenizer.json
(Python `tokenizers`), the export from export.py (fp8 blocks, 10 MiB shards).

  python3 train.py --out /tmp/micro-ckpt [--minutes 7] [--tokens-per-batch 65536] [--check-only]
  bash gpu_run.sh OUTDIR   # the device call that produced the committed checkpoint (smoke, train, reference)
"""

import argparse
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, os.path.join(HERE, "data"))
sys.path.insert(0, HERE)
import export  # noqa: E402
import generate as gen  # noqa: E402
import procedural as pw  # noqa: E402
from glm5_ref import Glm5Ref, rms_norm  # noqa: E402

NO_AUTOCAST = dict(device_type="cuda", enabled=False)  # device_type follows --device (main)

# Special token ids of tokenizer.json (checked against the file at start-up).
SPECIALS = {"<|endoftext|>": 999, "[gMASK]": 1001, "<sop>": 1003, "<|user|>": 1006,
            "<|assistant|>": 1007, "<think>": 1013, "</think>": 1014}
PAD = 999

# Sequence mixture: task -> (probability, shot counts), matching the eval protocol.
MIXTURE = {"gsm": (0.80, [3, 5]), "recall": (0.08, [0, 1]), "count": (0.06, [0, 1]),
           "copy": (0.03, [3]), "reverse": (0.03, [3])}
POOL_ROWS = {"gsm": 100_000, "recall": 20_000, "count": 20_000, "copy": 20_000, "reverse": 20_000}


# ===--------------------------------------------------------------------=== #
# Data
# ===--------------------------------------------------------------------=== #

def _gen_chunk(args):
    task, n, seed = args
    return gen.rows(task, "train", n, seed)


def build_pools(seed, workers, scale=1.0):
    """Train rows per task from independent generator streams (never a test key)."""
    jobs = []
    for task, n in POOL_ROWS.items():
        n = max(workers, int(n * scale))
        per = -(-n // workers)
        jobs += [(task, per, seed + 7919 * (j + 1) + len(jobs)) for j in range(workers)]
    with mp.Pool(workers) as pool:
        parts = pool.map(_gen_chunk, jobs)
    pools = {t: [] for t in POOL_ROWS}
    for (task, _, _), rows in zip(jobs, parts):
        pools[task] += rows
    return pools


class Conversations:
    """Token ids of chat conversations rendered like strata-eval's prompts + the assistant replies."""

    def __init__(self, tokenizer, pools, seed, max_len):
        self.pools, self.max_len = pools, max_len
        self.rng = random.Random(seed)
        self.nl = tokenizer.encode("\n", add_special_tokens=False).ids
        self.enc = {}
        for task, rows in pools.items():
            users = tokenizer.encode_batch(["\n" + gen.render_question(r) for r in rows],
                                           add_special_tokens=False)
            answers = tokenizer.encode_batch(["\n" + r["answer"].strip() for r in rows],
                                             add_special_tokens=False)
            self.enc[task] = [(u.ids, a.ids) for u, a in zip(users, answers)]
        self.tasks = list(MIXTURE)
        self.weights = [MIXTURE[t][0] for t in self.tasks]

    def assemble(self, task, picks):
        """(ids, loss mask) of [gMASK]<sop> + turns + closing <|user|>; loss on assistant turns."""
        S = SPECIALS
        ids, mask = [S["[gMASK]"], S["<sop>"]], [0, 0]
        for j in picks:
            u, a = self.enc[task][j]
            ids += [S["<|user|>"]] + u + [S["<|assistant|>"]]
            mask += [0] * (len(u) + 2)
            reply = self.nl + [S["<think>"], S["</think>"]] + a
            ids += reply
            mask += [1] * len(reply)
        ids.append(S["<|user|>"])  # end of the last assistant turn (GLM's eos ids include it)
        mask.append(1)
        return ids, mask

    def sample(self):
        while True:
            task = self.rng.choices(self.tasks, self.weights)[0]
            k = self.rng.choice(MIXTURE[task][1])
            picks = [self.rng.randrange(len(self.enc[task])) for _ in range(k + 1)]
            ids, mask = self.assemble(task, picks)
            if len(ids) <= self.max_len:
                return ids, mask

    def batches(self, tokens_per_batch, device):
        """Length-grouped, right-padded batches of about tokens_per_batch tokens (padded size)."""
        while True:
            seqs = sorted((self.sample() for _ in range(2048)), key=lambda s: len(s[0]))
            groups, cur = [], []
            for s in seqs:
                if cur and (len(cur) + 1) * len(s[0]) > tokens_per_batch:
                    groups.append(cur)
                    cur = []
                cur.append(s)
            groups.append(cur)
            self.rng.shuffle(groups)
            for g in groups:
                T = max(len(s[0]) for s in g)
                ids = torch.full((len(g), T), PAD, dtype=torch.long)
                mask = torch.zeros((len(g), T), dtype=torch.bool)
                for b, (i, m) in enumerate(g):
                    ids[b, :len(i)] = torch.tensor(i)
                    mask[b, :len(m)] = torch.tensor(m, dtype=torch.bool)
                yield ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)


def check_tokenization(tokenizer, conv, pools, n=100):
    """Assembled piece ids == encoding the rendered conversation text (specials split the text)."""
    vocab = tokenizer.get_vocab()
    for name, i in SPECIALS.items():
        assert vocab[name] == i, f"{name} has id {vocab[name]}, expected {i}"
    rng = random.Random(1)
    for _ in range(n):
        task = rng.choice(list(pools))
        picks = [rng.randrange(len(pools[task])) for _ in range(3)]
        rows = [pools[task][j] for j in picks]
        text = gen.render_chat(rows[:-1], rows[-1]) + gen.completion(rows[-1])
        want = tokenizer.encode(text, add_special_tokens=False).ids
        got, _ = conv.assemble(task, picks)
        assert got == want, f"piece-wise ids differ from the rendered text for {task}"


# ===--------------------------------------------------------------------=== #
# Model
# ===--------------------------------------------------------------------=== #

def init_value(name, shape, n_layers, gen_):
    """Initial fp32 value of a checkpoint tensor (see README: mHC starts as identity mixing)."""
    t = torch.empty(shape)
    if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
        return t.fill_(1.0)
    if name.endswith("norm.bias") or name.endswith("e_score_correction_bias") or \
            name.endswith("index_kpool_compress_ape") or name.endswith("A_log"):
        return t.zero_()
    if name.endswith("dt_bias"):
        return t.uniform_(-8.0, -2.0, generator=gen_)  # per-step log decay -5*sigmoid(..) in ~[-0.6, 0]
    if name.endswith("conv1d.weight"):
        return t.uniform_(-0.5, 0.5, generator=gen_)
    if name.endswith("_scale"):
        return t.fill_(1.0)
    if name.endswith("_base"):
        hc = int(round((-2 + math.sqrt(4 + 4 * shape[0])) / 2))  # mix = (2 + hc) * hc
        t.zero_()
        t[:hc] = math.log(1.0 / (hc - 1))               # pre weights sigmoid = 1/hc: x = stream mean
        t[2 * hc:] = (4.0 * torch.eye(hc)).flatten()    # comb ~ identity after Sinkhorn
        return t
    if name.endswith("_fn"):
        return t.normal_(0.0, 1e-3, generator=gen_)
    std = 0.02
    if name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
        std = 0.02 / math.sqrt(2 * n_layers)
    return t.normal_(0.0, std, generator=gen_)


class MicroModel(Glm5Ref, nn.Module):
    def __init__(self, cfg, seed=0):
        nn.Module.__init__(self)
        t = cfg["text_config"]
        g = torch.Generator().manual_seed(seed)
        params = {}
        for name, _, shape in pw.tensor_manifest(cfg):
            params[name] = nn.Parameter(init_value(name, shape, t["num_hidden_layers"], g),
                                        requires_grad=not name.endswith("e_score_correction_bias"))
        Glm5Ref.__init__(self, cfg, params, select="stable")
        self.params = nn.ParameterDict({n.replace(".", "/"): p for n, p in params.items()})
        self.loads = {}  # MoE prefix -> routed-assignment fractions of the last forward [E]

    # ------------------------------------------------------------------ KDA
    def kda_batched(self, x, pre, chunk=16):
        """x [B, T, D] -> [B, T, D]; the math of Glm5Ref.kda, chunked (fp32)."""
        H, dk = self.kda_heads, self.kda_dim
        B, T, _ = x.shape
        with torch.autocast(**NO_AUTOCAST):
            x = x.float()
            qkv = []
            for n in ("q", "k", "v"):
                z = x @ self.p(pre + n + "_proj.weight").t()                  # [B, T, P]
                w = self.p(pre + n + "_conv1d.weight").float()                 # [P, 1, K]
                u = F.conv1d(F.pad(z.transpose(1, 2), (w.shape[-1] - 1, 0)), w, groups=w.shape[0])
                qkv.append(F.silu(u).transpose(1, 2).reshape(B, T, H, dk))
            q, k, v = qkv
            q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) * (dk ** -0.5)
            k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
            f = (x @ self.p(pre + "f_a_proj.weight").t()) @ self.p(pre + "f_b_proj.weight").t()
            f = f.view(B, T, H, dk) + self.p(pre + "dt_bias").view(H, dk)
            a = torch.exp(self.p(pre + "A_log")).view(H, 1)
            g = self.kda_bound * torch.sigmoid(a * f)                          # log decay [B, T, H, dk]
            beta = torch.sigmoid(x @ self.p(pre + "b_proj.weight").t())       # [B, T, H]
            o = chunk_kda(q, k, v, g, beta, chunk)                             # [B, T, H, dk]
            gate = (x @ self.p(pre + "g_a_proj.weight").t()) @ self.p(pre + "g_b_proj.weight").t()
            on = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + self.eps)
            on = self.p(pre + "o_norm.weight") * on * torch.sigmoid(gate.view(B, T, H, dk))
        return on.reshape(B, T, H * dk) @ self.p(pre + "o_proj.weight").t()

    # ------------------------------------------------------------------ indexer + MLA
    def index_scores(self, x, cq, pre):
        """Pool scores [B, T, NP] (-inf where not visible), as Glm5Ref.index_select computes them."""
        t, P = self.t, self.kpool
        B, T, _ = x.shape
        IH, ID = t["index_n_heads"], t["index_head_dim"]
        NP = T // P
        with torch.autocast(**NO_AUTOCAST):
            x, cq = x.float(), cq.float()
            q = (cq @ self.p(pre + "wq_b.weight").t()).view(B, T, IH, ID)
            k = F.layer_norm(x @ self.p(pre + "wk.weight").t(), (ID,), self.p(pre + "k_norm.weight"),
                             self.p(pre + "k_norm.bias"), 1e-6)
            gt = x @ self.p(pre + "index_kpool_compress_gate").t()
            w = (x @ self.p(pre + "weights_proj.weight").t()) * IH ** -0.5
            gp = gt[:, :NP * P].view(B, NP, P, ID) + self.p(pre + "index_kpool_compress_ape")
            kbar = (torch.softmax(gp, dim=2) * k[:, :NP * P].view(B, NP, P, ID)).sum(2)  # [B, NP, ID]
            s = F.relu(torch.einsum("bthd,bpd->bthp", q, kbar) * ID ** -0.5)
            score = torch.einsum("bth,bthp->btp", w, s)
        pos = torch.arange(T, device=x.device)
        vis = torch.arange(NP, device=x.device)[None, :] < ((pos + 1) // P)[:, None]  # [T, NP]
        return score.masked_fill(~vis, float("-inf")), vis

    def selection_mask(self, score, vis):
        """[B, T, T] keys each query attends: the top-k visible pools (stable: ties -> lower pool id)
        plus the tail (positions past the last full visible pool), causal."""
        B, T, NP = score.shape
        P = self.kpool
        dev = score.device
        pos = torch.arange(T, device=dev)
        causal = pos[None, :] <= pos[:, None]
        if NP == 0:
            return causal.expand(B, T, T)
        kp = min(self.t["index_topk"] // P, NP)
        sel = torch.sort(score, dim=-1, descending=True, stable=True).indices[..., :kp]
        chosen = torch.zeros(B, T, NP, dtype=torch.bool, device=dev).scatter_(2, sel, True) & vis
        tok = torch.zeros(B, T, T, dtype=torch.bool, device=dev)
        tok[:, :, :NP * P] = chosen.repeat_interleave(P, dim=2)
        tail = (pos[None, :] >= (((pos + 1) // P) * P)[:, None]) & causal
        return (tok | tail) & causal

    def mla_batched(self, x, pre, sparse, valid):
        """x [B, T, D] normed -> (out [B, T, D], indexer KL loss)."""
        t = self.t
        B, T, _ = x.shape
        nh, dn, dv = t["num_attention_heads"], t["qk_nope_head_dim"], t["v_head_dim"]
        cq = rms_norm(x @ self.p(pre + "q_a_proj.weight").t(), self.p(pre + "q_a_layernorm.weight"), self.eps)
        q = (cq @ self.p(pre + "q_b_proj.weight").t()).view(B, T, nh, dn).transpose(1, 2)
        ckv = rms_norm(x @ self.p(pre + "kv_a_proj_with_mqa.weight").t(),
                       self.p(pre + "kv_a_layernorm.weight"), self.eps)
        kv = (ckv @ self.p(pre + "kv_b_proj.weight").t()).view(B, T, nh, dn + dv).transpose(1, 2)
        k, v = kv[..., :dn], kv[..., dn:]
        # The indexer trains only through its KL loss (DeepSeek-V3.2): detached inputs.
        score, vis = self.index_scores(x.detach(), cq.detach(), pre + "indexer.")
        pos = torch.arange(T, device=x.device)
        causal = (pos[None, :] <= pos[:, None]).expand(B, T, T)
        allowed = self.selection_mask(score.detach(), vis) if sparse else causal
        scale = (dn + t.get("qk_rope_head_dim", 0)) ** -0.5
        o = attention(q, k, v, allowed[:, None], scale)
        out = o.transpose(1, 2).reshape(B, T, nh * dv) @ self.p(pre + "o_proj.weight").t()
        if not torch.is_grad_enabled():  # evaluation: the KL is a training signal only
            return out, out.new_zeros(())
        kl = self.indexer_kl(q.detach(), k.detach(), allowed, score, vis, scale, valid)
        return out, kl

    def indexer_kl(self, q, k, allowed, score, vis, scale, valid):
        """KL(pooled MLA attention || softmax of pool scores) over visible pools, mean over rows."""
        P = self.kpool
        B, nh, T, _ = q.shape
        NP = score.shape[-1]
        if NP == 0:
            return score.new_zeros(())
        with torch.no_grad(), torch.autocast(**NO_AUTOCAST):
            a = torch.einsum("bhtd,bhjd->bhtj", q.float(), k.float()) * scale
            a = torch.softmax(a.masked_fill(~allowed[:, None], float("-inf")), -1).sum(1) / nh
            target = a[..., :NP * P].reshape(B, T, NP, P).sum(-1).masked_fill(~vis, 0.0)
            mass = target.sum(-1, keepdim=True)
            rows = (vis.any(-1)[None] & valid & (mass.squeeze(-1) > 0))
            target = target / mass.clamp_min(1e-12)
        logq = torch.log_softmax(score.masked_fill(~vis, -1e30), -1)
        kl = (target * (torch.log(target.clamp_min(1e-12)) - logq)).masked_fill(~vis, 0.0).sum(-1)
        return (kl * rows).sum() / rows.sum().clamp_min(1)

    # ------------------------------------------------------------------ MoE
    def moe_train(self, x, pre):
        """x [N, D] -> [N, D]; Glm5Ref.moe plus the routed-assignment fractions.

        Computed densely: every expert runs on every row and is weighted by its routing weight, which is
        exactly 0 for the experts a row did not select (same function as the reference's per-expert loop;
        no host synchronisation, two GEMMs over the stacked experts instead of 16 gathers)."""
        t = self.t
        E, topk, lim = t["n_routed_experts"], t["num_experts_per_tok"], t["swiglu_limit"]
        N = x.shape[0]
        with torch.autocast(**NO_AUTOCAST):
            s = torch.sigmoid(x.float() @ self.p(pre + "gate.weight").t())
            idx = torch.topk(s + self.p(pre + "gate.e_score_correction_bias"), topk, dim=-1).indices
            wsel = s.gather(1, idx)
            if t.get("norm_topk_prob", True):
                wsel = wsel / (wsel.sum(-1, keepdim=True) + 1e-20)
            wsel = wsel * t["routed_scaling_factor"]
            dense_w = torch.zeros(N, E, device=x.device, dtype=wsel.dtype).scatter(1, idx, wsel)
        ex = pre + "experts.%d."
        w_gu = torch.cat([torch.stack([self.p(ex % e + "gate_proj.weight") for e in range(E)]),
                          torch.stack([self.p(ex % e + "up_proj.weight") for e in range(E)])])  # [2E, I, D]
        I = w_gu.shape[1]
        gu = (x @ w_gu.reshape(2 * E * I, -1).t()).view(N, 2, E, I)
        h = F.silu(gu[:, 0].clamp(max=lim)) * gu[:, 1].clamp(-lim, lim)          # [N, E, I]
        h = h * dense_w.unsqueeze(-1).to(h.dtype)
        w_d = torch.stack([self.p(ex % e + "down_proj.weight") for e in range(E)])  # [E, D, I]
        out = h.reshape(N, E * I) @ w_d.transpose(1, 2).reshape(E * I, -1)
        self.loads[pre] = torch.bincount(idx.flatten(), minlength=E).float() / idx.numel()
        return out + self.swiglu(x, pre + "shared_experts.")

    # ------------------------------------------------------------------ target + MTP
    def forward_train(self, ids, sparse, valid):
        """ids [B, T] -> (logits [B, T, V], hidden [B, T, D], indexer KL summed over MLA layers)."""
        root, hc = self.root, self.hc
        B, T = ids.shape
        D = self.D
        e = self.p(root + "embed_tokens.weight")[ids]
        R = e.reshape(B * T, 1, D).expand(B * T, hc, D).contiguous()
        kl = e.new_zeros(())
        for i in range(self.L):
            pre = root + "layers.%d." % i
            with torch.autocast(**NO_AUTOCAST):
                post, comb, x = self.hc_pre(R.float(), pre + "hc_attn")
            xn = rms_norm(x, self.p(pre + "input_layernorm.weight"), self.eps).view(B, T, D)
            if self.t["layer_types"][i] == "linear_attention":
                y = self.kda_batched(xn, pre + "self_attn.")
            else:
                y, l = self.mla_batched(xn, pre + "self_attn.", sparse, valid)
                kl = kl + l
            with torch.autocast(**NO_AUTOCAST):
                R = self.hc_post(y.reshape(B * T, D).float(), R.float(), post, comb)
                post, comb, x = self.hc_pre(R, pre + "hc_ffn")
            xn = rms_norm(x, self.p(pre + "post_attention_layernorm.weight"), self.eps)
            y = self.moe_train(xn, pre + "mlp.") if self.is_moe(i) else self.swiglu(xn, pre + "mlp.")
            with torch.autocast(**NO_AUTOCAST):
                R = self.hc_post(y.float(), R, post, comb)
        h = rms_norm(R.view(B, T, hc, D).mean(2), self.p(root + "norm.weight"), self.eps)
        return h @ self.p("lm_head.weight").t(), h, kl

    def mtp_train(self, ids, h, sparse, valid):
        """Row p takes t_{p+1} and h_p (embedding zeroed at position 0) and predicts t_{p+2}."""
        B, T = ids.shape
        D = self.D
        pre = self.root + "layers.%d." % self.L
        nxt = torch.cat([ids[:, 1:], ids.new_full((B, 1), PAD)], 1)
        e = self.p(self.root + "embed_tokens.weight")[nxt]
        e = e * (torch.arange(T, device=ids.device) > 0)[None, :, None]
        en = rms_norm(e, self.p(pre + "enorm.weight"), self.eps)
        hn = rms_norm(h, self.p(pre + "hnorm.weight"), self.eps)
        z = torch.cat([en, hn], -1) @ self.p(pre + "eh_proj.weight").t()
        a, kl = self.mla_batched(rms_norm(z, self.p(pre + "input_layernorm.weight"), self.eps),
                                 pre + "self_attn.", sparse, valid)
        y = z + a
        m = self.moe_train(rms_norm(y, self.p(pre + "post_attention_layernorm.weight"), self.eps)
                           .reshape(B * T, D), pre + "mlp.").view(B, T, D)
        h_out = rms_norm(y + m, self.p(pre + "shared_head.norm.weight"), self.eps)
        return h_out @ self.p("lm_head.weight").t(), kl

    @torch.no_grad()
    def update_router_bias(self, gamma):
        """Aux-loss-free balancing (DeepSeek-V3): raise under-loaded experts' bias, lower over-loaded."""
        for pre, load in self.loads.items():
            b = self.p(pre + "gate.e_score_correction_bias")
            b += gamma * torch.sign(load.mean() - load)


def attention(q, k, v, mask, scale):
    """Masked softmax attention; torch < 2.1 (Debian's CPU 1.13) has no scaled_dot_product_attention
    with `scale`, so spell it out there."""
    if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 1):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    return (torch.softmax(s.masked_fill(~mask, float("-inf")), -1) @ v.float()).to(v.dtype)


def chunk_kda(q, k, v, g, beta, C):
    """Gated delta rule with per-key-channel decay, chunked (exact in exact arithmetic):
        S_t = Diag(exp g_t) S_{t-1};  u_t = beta_t (v_t - S_t^T k_t);  S_t += k_t u_t^T;  o_t = S_t^T q_t
    q, k, g [B, T, H, dk], v [B, T, H, dv], beta [B, T, H]; returns o [B, T, H, dv]. Within a chunk the
    u_t solve (I + A) u = beta v - (beta k exp G) S_0 is a unit-lower-triangular system; decays are taken
    relative to the chunk middle so no exponent exceeds 5 * C / 2 = 40 (gate lower bound -5, C = 16)."""
    B, T, H, dk = q.shape
    dv = v.shape[-1]
    N = -(-T // C)
    pad = N * C - T
    if pad:
        q, k, v, g = (F.pad(z, (0, 0, 0, 0, 0, pad)) for z in (q, k, v, g))
        beta = F.pad(beta, (0, 0, 0, pad))
    shp = lambda z: z.reshape(B, N, C, H, -1).permute(0, 3, 1, 2, 4)  # noqa: E731  [B, H, N, C, .]
    q, k, v, g = shp(q), shp(k), shp(v), shp(g)
    beta = beta.reshape(B, N, C, H).permute(0, 3, 1, 2).unsqueeze(-1)  # [B, H, N, C, 1]
    G = g.cumsum(-2)
    Gm = G[..., C // 2 - 1:C // 2, :]
    kc, kic, qc = k * torch.exp(G - Gm), k * torch.exp(Gm - G), q * torch.exp(G - Gm)
    strict = torch.tril(torch.ones(C, C, dtype=torch.bool, device=q.device), -1)
    incl = torch.tril(torch.ones(C, C, dtype=torch.bool, device=q.device))
    A = ((beta * kc) @ kic.transpose(-1, -2)).masked_fill(~strict, 0.0)
    eye = torch.eye(C, device=q.device, dtype=q.dtype)
    Tinv = torch.linalg.solve_triangular(eye + A, eye.expand_as(A), upper=False, unitriangular=True)
    W = Tinv @ (beta * k * torch.exp(G))       # [B, H, N, C, dk]
    U0 = Tinv @ (beta * v)                     # [B, H, N, C, dv]
    Aqk = (qc @ kic.transpose(-1, -2)).masked_fill(~incl, 0.0)
    qg = q * torch.exp(G)
    kdec = k * torch.exp(G[..., -1:, :] - G)   # k_j * gamma_C / gamma_j
    gC = torch.exp(G[..., -1, :]).unsqueeze(-1)  # [B, H, N, dk, 1]
    S = q.new_zeros(B, H, dk, dv)
    outs = []
    for n in range(N):
        u = U0[:, :, n] - W[:, :, n] @ S
        outs.append(qg[:, :, n] @ S + Aqk[:, :, n] @ u)
        S = gC[:, :, n] * S + kdec[:, :, n].transpose(-1, -2) @ u
    o = torch.stack(outs, 2).reshape(B, H, N * C, dv)[:, :, :T]
    return o.transpose(1, 2)


# ===--------------------------------------------------------------------=== #
# Self-checks against the reference
# ===--------------------------------------------------------------------=== #

def recurrent_kda(q, k, v, g, beta):
    B, T, H, dk = q.shape
    S = q.new_zeros(B, H, dk, v.shape[-1])
    out = []
    for t in range(T):
        S = torch.exp(g[:, t]).unsqueeze(-1) * S
        delta = beta[:, t].unsqueeze(-1) * (v[:, t] - torch.einsum("bhkv,bhk->bhv", S, k[:, t]))
        S = S + k[:, t].unsqueeze(-1) * delta.unsqueeze(-2)
        out.append(torch.einsum("bhkv,bhk->bhv", S, q[:, t]))
    return torch.stack(out, 1)


def self_check(model, device, vocab):
    """Batched training code vs the per-token reference, then one backward pass.

    The forward comparisons run on the procedural weights of docs/ProceduralWeights.md (larger than the
    training init, so the sparse selection visibly changes the output: the dense forward must differ
    from the reference by far more than the sparse one); the model's own initial values are restored
    for the backward pass, which must give finite gradients to every trainable tensor that took part
    (routed experts may see no token) and non-zero ones to every indexer (its only signal is the KL)."""
    g = torch.Generator(device="cpu").manual_seed(3)
    B, T, H, dk = 2, 150, 2, 128
    with torch.no_grad():
        q = F.normalize(torch.randn(B, T, H, dk, generator=g), dim=-1) * dk ** -0.5
        k = F.normalize(torch.randn(B, T, H, dk, generator=g), dim=-1)
        v = torch.randn(B, T, H, dk, generator=g)
        gl = -5.0 * torch.rand(B, T, H, dk, generator=g)
        beta = torch.rand(B, T, H, generator=g)
        args = [z.to(device) for z in (q, k, v, gl, beta)]
        d = (chunk_kda(*args, 16) - recurrent_kda(*args)).abs().max().item()
    print(f"self-check: chunked vs recurrent KDA max abs diff {d:.2e}")
    assert d < 1e-4, "chunked KDA differs from the recurrence"

    saved = {n: p.detach().clone() for n, p in model.w.items()}
    with torch.no_grad():
        for n, p in model.w.items():
            p.copy_(torch.from_numpy(pw.master_values(n, list(p.shape))))
        ids = torch.randint(0, vocab, (1, 200), generator=g).to(device)  # 50 pools, 16 selected
        valid = torch.ones(1, 200, dtype=torch.bool, device=device)
        logits, h, _ = model.forward_train(ids, True, valid)
        dense, _, _ = model.forward_train(ids, False, valid)
        ref_logits, ref_h = Glm5Ref.forward(model, ids[0])
        d = (logits[0] - ref_logits).abs().max().item()
        dd = (dense[0] - ref_logits).abs().max().item()
        print(f"self-check: target logits vs Glm5Ref.forward max abs diff {d:.2e} "
              f"(dense attention instead of the selection: {dd:.2e})")
        assert d < 1e-3 * max(1.0, ref_logits.abs().max().item()), "target forward differs from the reference"
        assert dd > 100 * d, "the sparse selection does not change the output: the check is blind"
        draft, _ = model.mtp_train(ids, h, True, valid)
        nxt = torch.cat([ids[0, 1:], ids.new_full((1,), PAD)])
        ref_draft, _ = Glm5Ref.mtp_forward(model, nxt, ref_h)
        d = (draft[0] - ref_draft).abs().max().item()
        print(f"self-check: MTP logits vs Glm5Ref.mtp_forward max abs diff {d:.2e}")
        assert d < 1e-3 * max(1.0, ref_draft.abs().max().item()), "MTP forward differs from the reference"
        for n, p in model.w.items():
            p.copy_(saved[n])

    ids = torch.randint(0, vocab, (2, 120), generator=g).to(device)
    valid = torch.ones(2, 120, dtype=torch.bool, device=device)
    logits, h, kl = model.forward_train(ids, True, valid)
    draft, kl_mtp = model.mtp_train(ids, h, True, valid)
    loss = (masked_ce(logits[:, :-1], ids[:, 1:], valid[:, 1:]) +
            0.3 * masked_ce(draft[:, :-2], ids[:, 2:], valid[:, 2:]) + kl + kl_mtp)
    loss.backward()
    trainable = {n: p for n, p in model.w.items() if p.requires_grad}
    bad = [n for n, p in trainable.items() if p.grad is not None and not torch.isfinite(p.grad).all()]
    unused = [n for n, p in trainable.items() if p.grad is None]
    dead_indexer = [n for n, p in trainable.items() if "indexer" in n and
                    (p.grad is None or p.grad.abs().max().item() == 0.0)]
    print(f"self-check: loss {loss.item():.3f}, {len(trainable) - len(unused)} of {len(trainable)} "
          f"trainable tensors got gradients, {len(bad)} non-finite, {len(dead_indexer)} dead indexer")
    assert not bad and not dead_indexer, bad[:5] + dead_indexer[:5]
    assert all(".experts." in n for n in unused), unused[:5]
    model.update_router_bias(1e-3)
    assert any(p.abs().max().item() > 0 for n, p in model.w.items() if "correction_bias" in n)
    for p in model.w.values():
        p.grad = None
        if not p.requires_grad:
            p.data.zero_()  # the router biases start at zero for training


# ===--------------------------------------------------------------------=== #
# Training
# ===--------------------------------------------------------------------=== #

def masked_ce(logits, targets, mask):
    ce = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1),
                         reduction="none").view(targets.shape)
    return (ce * mask).sum() / mask.sum().clamp_min(1)


def param_groups(model, wd):
    decay, no_decay = [], []
    for name, p in model.w.items():
        if not p.requires_grad:
            continue
        (decay if p.dim() >= 2 and ".hc_" not in name else no_decay).append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


@torch.no_grad()
def teacher_forced_exact(model, tokenizer, rows, shots_pool, k, device, sparse=True):
    """Fraction of test conversations whose every reply token is the argmax given the gold prefix
    (= greedy decoding reproduces the gold reply exactly)."""
    ok = 0
    for i, row in enumerate(rows):
        shots = [shots_pool[j] for j in gen.choose_shots(len(shots_pool), k, 1234, i)]
        prompt = tokenizer.encode(gen.render_chat(shots, row), add_special_tokens=False).ids
        reply = tokenizer.encode(gen.completion(row), add_special_tokens=False).ids
        ids = torch.tensor([prompt + reply], device=device)
        valid = torch.ones_like(ids, dtype=torch.bool)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits, _, _ = model.forward_train(ids, sparse, valid)
        pred = logits[0, len(prompt) - 1:-1].argmax(-1).tolist()
        ok += pred == reply
    return ok / max(1, len(rows))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=7.0, help="training wall-clock budget")
    ap.add_argument("--tokens-per-batch", type=int, default=131072,
                    help="padded tokens per step (the step is launch-bound: larger batches cost little; 262144 runs out of the H200's memory)")
    ap.add_argument("--max-len", type=int, default=1536)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=3e-4)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--dense-frac", type=float, default=0.15, help="dense-MLA warm-up fraction")
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--kl-weight", type=float, default=1.0)
    ap.add_argument("--bias-gamma", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    ap.add_argument("--pool-scale", type=float, default=1.0, help="fraction of POOL_ROWS to generate")
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: budget only)")
    ap.add_argument("--stop-after", type=float, default=0.0,
                    help="minutes of this invocation; with --state, a later run resumes the schedule")
    ap.add_argument("--state", default="",
                    help="resume from this file if it exists; save weights, optimizer and clock there "
                         "when --stop-after ends the run early")
    ap.add_argument("--export-at", type=float, default=0.6, help="budget fraction of the intermediate export")
    ap.add_argument("--eval-rows", type=int, default=100, help="test rows per task of the final check")
    ap.add_argument("--log-every", type=int, default=25)
    ap.add_argument("--fp32-out", default="", help="also save the unquantized weights here (torch.save)")
    ap.add_argument("--weights-only", action="store_true",
                    help="write only the shards, index and config.json (no tokenizer files)")
    ap.add_argument("--no-self-check", action="store_true", help="skip the start-up self-checks")
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--device", default="cuda", help="cuda; cpu only for --check-only")
    args = ap.parse_args(argv)
    if args.device != "cuda" and not args.check_only:
        ap.error("training needs --device cuda")

    torch.manual_seed(args.seed)
    device = args.device
    NO_AUTOCAST["device_type"] = device
    if args.check_only:
        model = MicroModel(json.load(open(os.path.join(HERE, "config.json"))), seed=args.seed).to(device)
        model.w = {n: model.params[n.replace(".", "/")] for n in model.w}
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
        self_check(model, device, model.t["vocab_size"])
        return 0

    from tokenizers import Tokenizer  # Python tokenizers on the GPU machine

    cfg_path = os.path.join(HERE, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    tokenizer = Tokenizer.from_file(os.path.join(HERE, "tokenizer.json"))
    t0 = time.time()  # generate data first: fork the workers before CUDA starts
    pools = build_pools(args.seed, args.workers, args.pool_scale)
    conv = Conversations(tokenizer, pools, args.seed, args.max_len)
    check_tokenization(tokenizer, conv, pools)
    print(f"data: {sum(map(len, pools.values()))} train rows in {time.time() - t0:.0f} s")

    model = MicroModel(cfg, seed=args.seed).to(device)
    model.w = {n: model.params[n.replace(".", "/")] for n in model.w}  # the moved parameters
    # The self-checks compare fp32 with fp32: no TF32 in matmuls or (cuDNN) convolutions.
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    if not args.no_self_check:
        self_check(model, device, cfg["text_config"]["vocab_size"])
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True

    opt = torch.optim.AdamW(param_groups(model, 0.1), lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    step, done_s, tokens = 0, 0.0, 0  # done_s: training seconds of earlier invocations
    if args.state and os.path.exists(args.state):
        st = torch.load(args.state, map_location=device)
        with torch.no_grad():
            for n, p in model.w.items():
                p.copy_(st["weights"][n])
        opt.load_state_dict(st["optimizer"])
        step, done_s, tokens = st["step"], st["seconds"], st["tokens"]
        conv.rng.seed(args.seed * 1000003 + step)  # fresh batches, not a replay of the first run's
        print(f"resumed {args.state}: step {step}, {done_s:.0f} s trained", flush=True)
    batches = conv.batches(args.tokens_per_batch, device)
    # The schedule follows wall-clock progress (elapsed / budget), so the run ends on time whatever the
    # step time: linear warm-up over --warmup steps, cosine from --lr to --min-lr over the budget,
    # dense MLA for the first --dense-frac of the budget, sparse after.
    budget = args.minutes * 60.0
    start, exported, first_step, stopped_early = time.time(), done_s > 0, step, False
    skipped = 0
    while True:
        if step % 10 == 0:
            torch.cuda.synchronize()  # the clock must see finished steps, not queued ones
        prog = (done_s + time.time() - start) / budget
        if prog >= 1.0 or (args.max_steps and step >= args.max_steps):
            break
        if args.stop_after and time.time() - start >= args.stop_after * 60.0:
            stopped_early = True
            break
        lr = args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * min(1.0, prog)))
        lr *= min(1.0, (step + 1) / args.warmup)
        for grp in opt.param_groups:
            grp["lr"] = lr
        sparse = prog >= args.dense_frac
        ids, mask = next(batches)
        valid = ids != PAD
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits, h, kl = model.forward_train(ids, sparse, valid)
            loss_lm = masked_ce(logits[:, :-1], ids[:, 1:], mask[:, 1:])
            draft, kl_mtp = model.mtp_train(ids, h, sparse, valid)
            loss_mtp = masked_ce(draft[:, :-2], ids[:, 2:], mask[:, 2:])
            loss = loss_lm + args.mtp_weight * loss_mtp + args.kl_weight * (kl + kl_mtp)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_([p for p in model.w.values() if p.requires_grad], 1.0)
        if torch.isfinite(gnorm):
            opt.step()
        else:  # a non-finite loss or gradient (seen once at 131k-token batches): drop the update
            skipped += 1
            print(f"step {step + 1}: non-finite gradient norm, update skipped ({skipped} so far)", flush=True)
        model.update_router_bias(args.bias_gamma)
        tokens += ids.numel()
        step += 1
        if step % args.log_every == 0 or step - first_step <= 5:
            el = done_s + time.time() - start
            print(f"step {step} t {el:.0f}s lr {lr:.2e} {'sparse' if sparse else 'dense'} "
                  f"B {ids.shape[0]} T {ids.shape[1]} lm {loss_lm.item():.4f} mtp {loss_mtp.item():.4f} "
                  f"kl {(kl + kl_mtp).item():.4f} gnorm {gnorm.item():.2f} "
                  f"{tokens / el:.0f} tok/s {el / step:.3f} s/step "
                  f"{torch.cuda.max_memory_allocated() / 2**30:.0f} GiB", flush=True)
        if not exported and args.export_at and prog >= args.export_at:
            exported = True  # insurance: a run killed later still returns these weights
            t1 = time.time()
            export.export_checkpoint(cfg_path, {n: p.detach().float().cpu().numpy()
                                                for n, p in model.w.items()}, args.out)
            print(f"step {step}: exported an intermediate checkpoint in {time.time() - t1:.1f} s",
                  flush=True)
    trained_s = done_s + time.time() - start
    print(f"trained {step} steps, {tokens} tokens (padded) in {trained_s:.0f} s"
          f"{' (stopped early: --stop-after)' if stopped_early else ''}", flush=True)
    if stopped_early and args.state:
        t1 = time.time()
        torch.save({"weights": {n: p.detach() for n, p in model.w.items()}, "optimizer": opt.state_dict(),
                    "step": step, "seconds": trained_s, "tokens": tokens}, args.state)
        print(f"saved the training state to {args.state} in {time.time() - t1:.1f} s", flush=True)

    model.eval()
    for task, k in (("gsm", 5), ("recall", 1), ("count", 1), ("copy", 3), ("reverse", 3)):
        test = gen.read_jsonl(os.path.join(HERE, "data", task, "test.jsonl"))[:args.eval_rows]
        pool = gen.read_jsonl(os.path.join(HERE, "data", task, "train.jsonl"))
        acc = teacher_forced_exact(model, tokenizer, test, pool, k, device)
        print(f"eval {task} ({k}-shot, first {len(test)}, bf16): greedy reproduces the gold reply "
              f"on {acc:.2f}", flush=True)

    values = {n: p.detach().float().cpu().numpy() for n, p in model.w.items()}
    n_shards, n_tensors, total = export.export_checkpoint(cfg_path, values, args.out)
    for name in () if args.weights_only else ("tokenizer.json", "tokenizer_config.json",
                                               "generation_config.json"):
        shutil.copyfile(os.path.join(HERE, name), os.path.join(args.out, name))
    if args.fp32_out:
        torch.save({n: p.detach().cpu() for n, p in model.w.items()}, args.fp32_out)
    print(f"wrote {args.out}: {n_tensors} tensors in {n_shards} shards, {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
