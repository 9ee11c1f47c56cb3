#!/usr/bin/env python3
"""Compact, independent PyTorch reference of GLM-5.3-Flash (glm5_next): target model + MTP draft.

Written from ../shared/spec/glm5_next-target.md and glm5_next-indexer-mtp-cache.md (not from
transformers). Full-sequence (prefill) forward for one sequence, request-absolute positions from 0,
fp32 by default (every weight upcast; fp8 weights dequantised q * scale_inv per 128x128 block).

  embedding -> 4 mHC streams -> L x [mHC pre, RMSNorm, KDA | MLA(+kpool indexer), mHC post,
                                     mHC pre, RMSNorm, dense MLP | MoE, mHC post]
  -> mean of streams -> model.norm (= hidden h) -> lm_head
  MTP (layer L): row p takes token t_{p+1} and h_p, embedding zeroed at p == 0 (vLLM convention),
  own MLA latent cache and own kpool indexer, shared_head.norm, target lm_head.

Library use:
  m = Glm5Ref.load(folder, device="cuda")
  logits, hidden = m.forward(ids)                 # [T, V], [T, D]
  draft = m.mtp_forward(next_ids, hidden)         # [T, V]; next_ids[p] = t_{p+1}

Script use (needs torch + safetensors):
  python3 glm5_ref.py --checkpoint DIR --ids 1,2,3 [--device cuda]

Indexer form: "pooled" (the kpool indexer) or "dense" (one index key per token, top index_topk
tokens, no compression gate / position table / tail: strata's --indexer=dense, transformers with
index_kpool = 1); by default the config's index_kpool_compress decides (absent: pooled).

Index-score ties: with the procedural weights the index score is exactly 0 for every pool whose
per-head ReLU terms are all 0, so the top-k boundary often falls inside a tie. `select` chooses the
tie rule: "stable" (default: higher score first, ties -> lower pool index; matched transformers'
torch.topk on CUDA bit for bit in every measured prompt) or "torch" (torch.topk,
whatever order it yields, as transformers does); "reverse" (ties -> higher pool index, to measure
the sensitivity to the tie rule).
"""

import argparse
import json
import math
import os
import sys

if __name__ == "__main__" and ("-h" in sys.argv[1:] or "--help" in sys.argv[1:]):
    print(__doc__)  # --help works without torch installed
    sys.exit(0)

import torch
import torch.nn.functional as F


def load_checkpoint(folder, dtype=torch.float32, device="cpu"):
    """Read config.json + sharded safetensors; dequantise fp8 weights; return (cfg, {name: tensor})."""
    from safetensors.torch import load_file

    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    index_path = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    raw = {}
    for fn in files:
        raw.update(load_file(os.path.join(folder, fn)))
    out = {}
    for name, t in raw.items():
        if name.endswith(".weight_scale_inv"):
            continue
        if t.dtype == torch.float8_e4m3fn:
            s = raw[name[: -len(".weight")] + ".weight_scale_inv"].float()
            full = s.repeat_interleave(128, 0).repeat_interleave(128, 1)[: t.shape[0], : t.shape[1]]
            t = t.float() * full
        out[name] = t.to(device=device, dtype=torch.float32).to(dtype)
    return cfg, out


def rms_norm(x, w, eps):
    """HF order: normalise in fp32, cast to input dtype, multiply by the weight."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * y.to(x.dtype)


class Glm5Ref:
    def __init__(self, cfg, weights, select="stable", indexer=None):
        self.cfg = cfg
        self.t = cfg.get("text_config", cfg)
        self.w = weights
        self.select = select
        t = self.t
        self.D = t["hidden_size"]
        self.L = t["num_hidden_layers"]
        self.hc = t["hc_mult"]
        self.eps = t["rms_norm_eps"]
        self.hc_eps = t["hc_eps"]
        self.root = "model.language_model."
        la = t["linear_attn_config"]
        self.kda_heads, self.kda_dim = la["num_heads"], la["head_dim"]
        self.kda_bound = la.get("gate_lower_bound", -5.0)
        if indexer is None:
            indexer = "pooled" if t.get("index_kpool_compress", True) else "dense"
        assert indexer in ("pooled", "dense"), indexer
        self.dense = indexer == "dense"
        # The dense indexer is the pooled one with pools of one token.
        self.kpool = 1 if self.dense else t["index_kpool"]
        self.last_selection = {}  # layer -> [T, T] bool attend masks (debug/tests)
        self.tie_stats = {}  # layer -> number of queries whose top-k boundary falls inside an exact tie

    @classmethod
    def load(cls, folder, device="cpu", dtype=torch.float32, select="stable", indexer=None):
        cfg, w = load_checkpoint(folder, dtype=dtype, device=device)
        return cls(cfg, w, select=select, indexer=indexer)

    def p(self, name):
        return self.w[name]

    # ------------------------------------------------------------------ mHC
    def hc_pre(self, R, pre):
        """R [T, hc, D] -> (post [T,hc], comb [T,hc,hc] (comb[i,j]: source i -> dest j), x [T, D])."""
        hc, Tn = self.hc, R.shape[0]
        fn = self.p(pre + "_fn").float()
        base = self.p(pre + "_base").float()
        scale = self.p(pre + "_scale").float()
        r = R.reshape(Tn, -1).float()
        rn = r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + self.eps)
        m = rn @ fn.t()
        pre_w = torch.sigmoid(m[:, :hc] * scale[0] + base[:hc]) + self.hc_eps
        post = 2 * torch.sigmoid(m[:, hc:2 * hc] * scale[1] + base[hc:2 * hc])
        c = m[:, 2 * hc:].view(Tn, hc, hc) * scale[2] + base[2 * hc:].view(hc, hc)
        c = torch.softmax(c, dim=-1) + self.hc_eps
        c = c / (c.sum(dim=-2, keepdim=True) + self.hc_eps)
        for _ in range(self.t["hc_sinkhorn_iters"] - 1):
            c = c / (c.sum(dim=-1, keepdim=True) + self.hc_eps)
            c = c / (c.sum(dim=-2, keepdim=True) + self.hc_eps)
        x = (pre_w.unsqueeze(-1) * R.float()).sum(1).to(R.dtype)
        return post, c, x

    def hc_post(self, y, R, post, comb):
        """R'[j] = post_j * y + sum_i comb[i, j] * R[i]."""
        dt = R.dtype
        return post.to(dt).unsqueeze(-1) * y.unsqueeze(1) + torch.einsum("tij,tid->tjd", comb.to(dt), R)

    # ------------------------------------------------------------------ KDA
    def kda(self, x, pre):
        """Kimi delta attention over a full sequence x [T, D]; explicit conv window + recurrent state."""
        H, dk = self.kda_heads, self.kda_dim
        Tn = x.shape[0]
        lin = lambda n, v: v @ self.p(pre + n).t()  # noqa: E731
        outs = []
        for n in ("q", "k", "v"):
            z = lin(n + "_proj.weight", x)  # [T, P]
            w = self.p(pre + n + "_conv1d.weight")[:, 0, :].to(z.dtype)  # [P, K]
            K = w.shape[1]
            zp = torch.cat([torch.zeros(K - 1, z.shape[1], dtype=z.dtype, device=z.device), z], 0)
            # u_t = sum_j w[:, j] * z_{t-K+1+j}; tap K-1 is the current token.
            u = sum(w[:, j] * zp[j:j + Tn] for j in range(K))
            outs.append(F.silu(u).view(Tn, H, dk))
        q, k, v = [o.float() for o in outs]
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) * (dk ** -0.5)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
        f = lin("f_b_proj.weight", lin("f_a_proj.weight", x)).float().view(Tn, H, dk)
        f = f + self.p(pre + "dt_bias").float().view(H, dk)
        a_log = self.p(pre + "A_log").float().view(H, 1)
        g = self.kda_bound * torch.sigmoid(torch.exp(a_log) * f)  # [T, H, dk]
        alpha = torch.exp(g)
        beta = torch.sigmoid(lin("b_proj.weight", x).float())  # [T, H]
        S = torch.zeros(H, dk, dk, dtype=torch.float32, device=x.device)  # rows: key channel
        o = torch.empty(Tn, H, dk, dtype=torch.float32, device=x.device)
        for t in range(Tn):
            S = alpha[t].unsqueeze(-1) * S
            delta = beta[t].unsqueeze(-1) * (v[t] - torch.einsum("hkv,hk->hv", S, k[t]))
            S = S + k[t].unsqueeze(-1) * delta.unsqueeze(-2)
            o[t] = torch.einsum("hkv,hk->hv", S, q[t])
        gate = lin("g_b_proj.weight", lin("g_a_proj.weight", x)).float().view(Tn, H, dk)
        on = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + self.eps)
        on = self.p(pre + "o_norm.weight").float() * on * torch.sigmoid(gate)
        return on.to(x.dtype).reshape(Tn, H * dk) @ self.p(pre + "o_proj.weight").t()

    # ------------------------------------------------------------------ indexer
    def index_select(self, x, cq, pre):
        """kpool indexer (dense: pools of one token, the raw keys): bool mask [T, T] of the key
        positions each query attends to."""
        t = self.t
        Tn = x.shape[0]
        IH, ID, P = t["index_n_heads"], t["index_head_dim"], self.kpool
        q = (cq @ self.p(pre + "wq_b.weight").t()).view(Tn, IH, ID).float()
        kl = (x @ self.p(pre + "wk.weight").t()).float()
        k = F.layer_norm(kl, (ID,), self.p(pre + "k_norm.weight").float(), self.p(pre + "k_norm.bias").float(), 1e-6)
        k = k.to(x.dtype)
        w = (x @ self.p(pre + "weights_proj.weight").t()).float() * IH ** -0.5  # [T, IH]
        n_pools = Tn // P
        dev = x.device
        mask = torch.tril(torch.ones(Tn, Tn, dtype=torch.bool, device=dev))
        pos = torch.arange(Tn, device=dev)
        if n_pools == 0:
            return mask
        if self.dense:
            kbar = k.float()  # one key per token (a softmax over one slot is 1)
        else:
            g = (x @ self.p(pre + "index_kpool_compress_gate").t()).float()  # [T, ID]
            ape = self.p(pre + "index_kpool_compress_ape").float()  # [P, ID]
            gp = g[: n_pools * P].view(n_pools, P, ID) + ape
            alpha = torch.softmax(gp, dim=1)  # per-dimension softmax over the P slots
            kbar = (alpha * k[: n_pools * P].view(n_pools, P, ID).float()).sum(1)  # [n_pools, ID]
        s = F.relu(torch.einsum("thd,pd->thp", q, kbar) * ID ** -0.5)
        score = torch.einsum("th,thp->tp", w, s)  # [T, n_pools]
        visible_pools = (pos + 1) // P  # pools 0..v-1 visible to query t
        kp = min(t["index_topk"] // P, n_pools)
        pool_ids = torch.arange(n_pools, device=dev)
        vis = pool_ids[None, :] < visible_pools[:, None]
        masked = score.masked_fill(~vis, float("-inf"))
        srt = torch.sort(masked, dim=-1, descending=True, stable=True)
        if kp < n_pools:
            kth, nxt = srt.values[:, kp - 1], srt.values[:, kp]
            boundary_tie = (kth == nxt) & torch.isfinite(nxt)
            self.tie_stats[self._cur_layer] = int(boundary_tie.sum())
        if self.select == "torch":
            sel = masked.topk(kp, dim=-1).indices
        elif self.select == "reverse":
            # Ties -> higher pool index first (only used to measure how much tie order matters).
            flipped = torch.sort(masked.flip(-1), dim=-1, descending=True, stable=True).indices[:, :kp]
            sel = n_pools - 1 - flipped
        else:
            # Stable: sort by score descending, ties by lower pool index (stable sort of pool order).
            sel = srt.indices[:, :kp]
        chosen = torch.zeros(Tn, n_pools, dtype=torch.bool, device=dev)
        chosen.scatter_(1, sel, True)
        chosen &= vis
        tok_pool = (pos // P)
        sel_tok = torch.zeros(Tn, Tn, dtype=torch.bool, device=dev)
        full = pos < n_pools * P
        sel_tok[:, full] = chosen[:, tok_pool[full]]
        tail = (pos[None, :] >= (visible_pools * P)[:, None]) & (pos[None, :] <= pos[:, None])
        return (sel_tok | tail) & mask

    # ------------------------------------------------------------------ MLA
    def mla(self, x, pre, layer_key):
        t = self.t
        Tn = x.shape[0]
        nh = t["num_attention_heads"]
        dn, dv = t["qk_nope_head_dim"], t["v_head_dim"]
        cq = rms_norm(x @ self.p(pre + "q_a_proj.weight").t(), self.p(pre + "q_a_layernorm.weight"), self.eps)
        q = (cq @ self.p(pre + "q_b_proj.weight").t()).view(Tn, nh, dn)
        ckv = rms_norm(x @ self.p(pre + "kv_a_proj_with_mqa.weight").t(), self.p(pre + "kv_a_layernorm.weight"), self.eps)
        kv = (ckv @ self.p(pre + "kv_b_proj.weight").t()).view(Tn, nh, dn + dv)
        k, v = kv[..., :dn], kv[..., dn:]
        self._cur_layer = layer_key
        if (pre + "indexer.wk.weight") in self.w:
            allowed = self.index_select(x, cq, pre + "indexer.")
        else:
            allowed = torch.tril(torch.ones(Tn, Tn, dtype=torch.bool, device=x.device))
        self.last_selection[layer_key] = allowed
        s = torch.einsum("thd,jhd->htj", q.float(), k.float()) * (dn + t.get("qk_rope_head_dim", 0)) ** -0.5
        s = s.masked_fill(~allowed[None], float("-inf"))
        pr = torch.softmax(s, dim=-1)
        o = torch.einsum("htj,jhd->thd", pr, v.float()).to(x.dtype).reshape(Tn, nh * dv)
        return o @ self.p(pre + "o_proj.weight").t()

    # ------------------------------------------------------------------ FFN
    def swiglu(self, x, pre):
        lim = self.t["swiglu_limit"]
        gt = (x @ self.p(pre + "gate_proj.weight").t()).clamp(max=lim)
        up = (x @ self.p(pre + "up_proj.weight").t()).clamp(-lim, lim)
        return (F.silu(gt) * up) @ self.p(pre + "down_proj.weight").t()

    def moe(self, x, pre):
        t = self.t
        E, topk = t["n_routed_experts"], t["num_experts_per_tok"]
        logits = x.float() @ self.p(pre + "gate.weight").float().t()
        s = torch.sigmoid(logits)
        choice = s + self.p(pre + "gate.e_score_correction_bias").float()
        idx = torch.topk(choice, topk, dim=-1).indices
        wsel = s.gather(1, idx)
        if t.get("norm_topk_prob", True):
            wsel = wsel / (wsel.sum(-1, keepdim=True) + 1e-20)
        wsel = wsel * t["routed_scaling_factor"]
        out = torch.zeros_like(x)
        for e in range(E):
            hit = (idx == e)
            rows = hit.any(-1).nonzero().squeeze(-1)
            if rows.numel() == 0:
                continue
            we = (wsel * hit).sum(-1)[rows]
            y = self.swiglu(x[rows], pre + "experts.%d." % e)
            out.index_add_(0, rows, (y * we.unsqueeze(-1).to(y.dtype)).to(out.dtype))
        return out + self.swiglu(x, pre + "shared_experts.")

    def is_moe(self, i):
        types = self.t.get("mlp_layer_types")
        if types is not None and i < len(types):
            return types[i] == "sparse"
        return i >= self.t.get("first_k_dense_replace", 0)

    # ------------------------------------------------------------------ target
    @torch.no_grad()
    def forward(self, ids):
        """ids: 1-D LongTensor [T]. Returns (logits [T, V] fp32, hidden after model.norm [T, D])."""
        root = self.root
        e = self.p(root + "embed_tokens.weight")[ids]
        R = e.unsqueeze(1).repeat(1, self.hc, 1)  # [T, hc, D]
        for i in range(self.L):
            pre = root + "layers.%d." % i
            post, comb, x = self.hc_pre(R, pre + "hc_attn")
            xn = rms_norm(x, self.p(pre + "input_layernorm.weight"), self.eps)
            if self.t["layer_types"][i] == "linear_attention":
                y = self.kda(xn, pre + "self_attn.")
            else:
                y = self.mla(xn, pre + "self_attn.", i)
            R = self.hc_post(y, R, post, comb)
            post, comb, x = self.hc_pre(R, pre + "hc_ffn")
            xn = rms_norm(x, self.p(pre + "post_attention_layernorm.weight"), self.eps)
            y = self.moe(xn, pre + "mlp.") if self.is_moe(i) else self.swiglu(xn, pre + "mlp.")
            R = self.hc_post(y, R, post, comb)
        h = rms_norm(R.mean(1), self.p(root + "norm.weight"), self.eps)
        logits = h.float() @ self.p("lm_head.weight").float().t()
        return logits, h

    # ------------------------------------------------------------------ MTP draft
    @torch.no_grad()
    def mtp_forward(self, next_ids, hidden, positions=None):
        """Draft step 0 over all rows. next_ids[p] = t_{p+1}, hidden[p] = h_p (after model.norm).

        Row p keeps position p (vLLM convention); the embedding of the row at position 0 is zeroed.
        Returns (draft logits [T, V], h_out [T, D]).
        """
        Tn = next_ids.shape[0]
        if positions is None:
            positions = torch.arange(Tn, device=next_ids.device)
        pre = self.root + "layers.%d." % self.L
        e = self.p(self.root + "embed_tokens.weight")[next_ids]
        e = e.masked_fill((positions == 0)[:, None], 0.0)
        en = rms_norm(e, self.p(pre + "enorm.weight"), self.eps)
        hn = rms_norm(hidden.to(e.dtype), self.p(pre + "hnorm.weight"), self.eps)
        z = torch.cat([en, hn], -1) @ self.p(pre + "eh_proj.weight").t()
        a = self.mla(rms_norm(z, self.p(pre + "input_layernorm.weight"), self.eps), pre + "self_attn.", "mtp")
        y = z + a
        m = self.moe(rms_norm(y, self.p(pre + "post_attention_layernorm.weight"), self.eps), pre + "mlp.")
        h_out = rms_norm(y + m, self.p(pre + "shared_head.norm.weight"), self.eps)
        return h_out.float() @ self.p("lm_head.weight").float().t(), h_out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="checkpoint folder (config.json + safetensors)")
    ap.add_argument("--ids", required=True, help="comma-separated token ids")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--select", choices=["stable", "torch", "reverse"], default="stable")
    ap.add_argument("--indexer", choices=["pooled", "dense"], default=None,
                    help="indexer form (default: the config's index_kpool_compress)")
    args = ap.parse_args(argv)
    m = Glm5Ref.load(args.checkpoint, device=args.device, select=args.select, indexer=args.indexer)
    ids = torch.tensor([int(s) for s in args.ids.split(",")], device=args.device)
    logits, h = m.forward(ids)
    nxt = torch.cat([ids[1:], logits[-1:].argmax(-1)])
    draft, _ = m.mtp_forward(nxt, h)
    print("target argmax:", logits.argmax(-1).tolist())
    print("draft  argmax:", draft.argmax(-1).tolist())
    return 0


if __name__ == "__main__":
    sys.exit(main())
