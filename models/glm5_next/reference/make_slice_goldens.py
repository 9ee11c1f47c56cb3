#!/usr/bin/env python3
"""Goldens for a real-width slice of GLM-5.3-Flash (configs/glm5-slice-*.json; run on the H200).

The tiny goldens (make_goldens.py) write each checkpoint twice (numpy, then an F32 dequantised copy)
and load it with from_pretrained; at real width (hidden 4096, 64 MLA / 64 KDA heads, 288 fp8
experts, vocab 154880) that is ~25 GB of fp8 on disk and ~95 GB in fp32, so this script instead:

  1. reads the procedural checkpoint written by strata-write-checkpoint (--checkpoint) tensor by
     tensor onto the GPU, dequantises fp8 (q * scale_inv per 128x128 block) to fp32 there, and copies
     it straight into the parameters of a transformers Glm5NextForConditionalGeneration built on the
     meta device and materialised with to_empty (fp32, no second copy); every language-model
     parameter must be filled exactly once (else FAIL);
  2. builds glm5_ref.Glm5Ref on views of those same parameters (experts: slices of HF's stacked
     gate_up_proj / down_proj; KDA conv taps: slices of HF's conv1d) plus the MTP layer
     (layer num_hidden_layers, which HF ignores), the only extra fp32 copy;
  3. per prompt k (ids: numpy PCG64(2000 + k) uniform in [2, vocab)), writes to
     <out>/<config stem>.safetensors the keys of make_goldens.py (compare_goldens.py reads them):
       p<k>.ids, p<k>.positions, p<k>.logits (HF fp32 at positions), p<k>.gen_ids (HF fp32 greedy,
       --gen tokens), p<k>.decode_logits, p<k>.mtp_next_ids, p<k>.mtp_logits (glm5_ref draft step 0
       at positions), p<k>.bf16_gen_ids, p<k>.bf16_argmax (HF in bf16: the same model cast);
     and <out>/slice_goldens.json with the measured errors (glm5_ref vs HF fp32, HF bf16 vs fp32,
     index top-k boundary ties), seconds per phase and peak GPU memory.

Prompt lengths (--lengths, default 45,2304): the kpool indexer keeps index_topk / index_kpool = 512
pools of 4 tokens plus the visible tail, i.e. every key while a query sees at most 2048 complete-pool
tokens + its tail; selection is active from position 2051 (512 complete pools + 3 tail tokens: the
513th pool completes at position 2051). 45 tokens (45 mod 4 = 1, a pool completes during decode)
is the prompt strata runs on the H200 within the budget (all keys selected); 2304 tokens puts 253
queries (positions 2051..2303) under real top-512-of-up-to-575-pools selection: reference-side
(glm5_ref vs transformers at real width with selection active) and the optional long strata case.
Stored positions: all of a prompt up to 512 tokens; every 128th plus the last 16 beyond.

GPU memory (fp32, 288 experts): HF target params ~64.5 GB (experts 2 x 29 GB, embedding + lm_head
5.1 GB) + MTP layer ~29.5 GB + activations (T = 2304: MLA scores 64 x T x T x 4 B = 1.4 GB) ~ 96 GB
peak; bf16 phase after dropping the fp32 reference: ~32 GB + the transient cast of the largest tensor.

  python3 make_slice_goldens.py --checkpoint CK --out DIR [--lengths 45,2304] [--gen 4] [--device cuda]
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

if __name__ == "__main__" and ("-h" in sys.argv[1:] or "--help" in sys.argv[1:]):
    print(__doc__)  # --help works without torch installed
    sys.exit(0)

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_hf as ch  # noqa: E402
import glm5_ref  # noqa: E402

ROOT = "model.language_model."


def stored_positions(T):
    if T <= 512:
        return np.arange(T)
    return np.unique(np.concatenate([np.arange(0, T, 128), np.arange(T - 16, T)]))


def read_index(folder):
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        return json.load(f)["weight_map"]


def checkpoint_tensors(folder, device):
    """Yields (name, fp32 tensor on device) for every non-scale tensor in name order; fp8 weights
    dequantised on the device (a weight and its scale may sit in different shards)."""
    import contextlib
    from safetensors import safe_open

    where = read_index(folder)
    with contextlib.ExitStack() as stack:
        files = {fn: stack.enter_context(safe_open(os.path.join(folder, fn), framework="pt", device=device))
                 for fn in sorted(set(where.values()))}
        for name in sorted(where):
            if name.endswith(".weight_scale_inv"):
                continue
            t = files[where[name]].get_tensor(name)
            if t.dtype == torch.float8_e4m3fn:
                sname = name[: -len(".weight")] + ".weight_scale_inv"
                s = files[where[sname]].get_tensor(sname).float()
                full = s.repeat_interleave(128, 0).repeat_interleave(128, 1)[: t.shape[0], : t.shape[1]]
                t = t.float() * full
                del full, s
            yield name, t.float()


def hf_target(name, cfg_t):
    """Checkpoint name of a target layer tensor -> (HF parameter name, slice spec or None).

    Slice spec: ("rows", begin, end) of dim 0 or ("expert", e, begin, end) of dims 0 and 1.
    """
    m = re.match(r"model\.language_model\.layers\.(\d+)\.(.*)$", name)
    if not m:
        return name, None
    li, sub = m.group(1), m.group(2)
    p = ROOT + "layers.%s." % li
    if sub.startswith("hc_"):
        site, what = sub[3:].split("_", 1)
        return p + "%s_hc.%s" % (site, what), None
    mm = re.match(r"self_attn\.([qkv])_conv1d\.weight$", sub)
    if mm:
        P = cfg_t["linear_attn_config"]["num_heads"] * cfg_t["linear_attn_config"]["head_dim"]
        c = "qkv".index(mm.group(1))
        return p + "self_attn.conv1d.weight", ("rows", c * P, (c + 1) * P)
    mm = re.match(r"self_attn\.(f_a_proj|f_b_proj|dt_bias|A_log)(.*)$", sub)
    if mm:
        return p + "self_attn.forget_gate." + mm.group(1) + mm.group(2), None
    mm = re.match(r"mlp\.experts\.(\d+)\.(gate|up|down)_proj\.weight$", sub)
    if mm:
        e, kind = int(mm.group(1)), mm.group(2)
        inter = cfg_t["moe_intermediate_size"]
        if kind == "down":
            return p + "mlp.experts.down_proj", ("expert", e, None, None)
        b = 0 if kind == "gate" else inter
        return p + "mlp.experts.gate_up_proj", ("expert", e, b, b + inter)
    return name, None


def build_models(folder, dev):
    """(cfg, HF fp32 model, glm5_ref weights {checkpoint name: tensor}, fill report)."""
    from transformers import AutoConfig, Glm5NextForConditionalGeneration

    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    t = cfg["text_config"]
    L = t["num_hidden_layers"]
    plain = json.loads(json.dumps(cfg))
    plain.pop("quantization_config", None)
    plain["text_config"].pop("quantization_config", None)
    # The model computes in its config's dtype (from_pretrained(dtype=...) sets it; a model built
    # from the config keeps the checkpoint's bfloat16, and fp32 weights then meet bf16 activations).
    for c in (plain, plain["text_config"]):
        c["dtype"] = "float32"
        c.pop("torch_dtype", None)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(plain, f)
        config = AutoConfig.from_pretrained(tmp)
    config.vision_config.depth = 1
    torch.set_default_dtype(torch.float32)
    with torch.device("meta"):
        model = Glm5NextForConditionalGeneration(config)
    model = model.to_empty(device=dev)
    params = dict(model.named_parameters())
    params.update(dict(model.named_buffers()))
    filled = {}  # HF name -> number of checkpoint tensors (or rows) written into it
    w = {}
    mtp_prefix = ROOT + "layers.%d." % L
    for name, ten in checkpoint_tensors(folder, dev):
        if name.startswith(mtp_prefix):
            w[name] = ten
            continue
        hf_name, sl = hf_target(name, t)
        if hf_name not in params:
            raise RuntimeError("checkpoint tensor %s -> %s: no such HF parameter" % (name, hf_name))
        dst = params[hf_name].data
        if sl is not None and sl[0] == "rows":
            dst = dst[sl[1]:sl[2]]
        elif sl is not None:
            dst = dst[sl[1]] if sl[2] is None else dst[sl[1], sl[2]:sl[3]]
        if tuple(dst.shape) != tuple(ten.shape):
            raise RuntimeError("%s %s -> %s %s: shape mismatch" % (name, tuple(ten.shape), hf_name, tuple(dst.shape)))
        dst.copy_(ten)
        del ten
        w[name] = dst  # a view of the HF parameter: no second copy
        filled[hf_name] = filled.get(hf_name, 0) + (1 if sl is None else (sl[2] - sl[1] if sl[0] == "rows" else 1))
    # Every language-model parameter exactly covered.
    E, P = t["n_routed_experts"], t["linear_attn_config"]["num_heads"] * t["linear_attn_config"]["head_dim"]
    bad = []
    for hf_name, prm in params.items():
        if not (hf_name.startswith(ROOT) or hf_name == "lm_head.weight"):
            continue
        want = 1
        if hf_name.endswith("self_attn.conv1d.weight"):
            want = 3 * P
        elif hf_name.endswith("mlp.experts.gate_up_proj"):
            want = 2 * E
        elif hf_name.endswith("mlp.experts.down_proj"):
            want = E
        if filled.get(hf_name, 0) != want:
            bad.append("%s: %d of %d" % (hf_name, filled.get(hf_name, 0), want))
    report = {"hf_params_filled": len(filled), "hf_params_not_exactly_filled": bad[:20],
              "ref_tensors": len(w)}
    ch.check("HF params filled from the checkpoint", not bad, json.dumps(report))
    return cfg, model.eval(), w, report


def set_config_dtype(config, dtype):
    """dtype on the config and every sub-config (the modules read it when they compute)."""
    for c in [config] + [getattr(config, k, None) for k in ("text_config", "vision_config")]:
        if c is not None and not isinstance(c, dict):
            c.dtype = dtype


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="strata-write-checkpoint output for a slice config")
    ap.add_argument("--out", required=True)
    ap.add_argument("--lengths", default="45,2304")
    ap.add_argument("--gen", type=int, default=4, help="greedy tokens (HF with its cache)")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    from safetensors.torch import save_file
    import transformers

    ch.strict_fp32()
    dev = args.device
    os.makedirs(args.out, exist_ok=True)
    phases = {}
    t0 = time.time()
    cfg, m32, w, fill = build_models(args.checkpoint, dev)
    phases["load"] = round(time.time() - t0, 1)
    print("loaded in %.1fs, GPU memory %.1f GB" % (phases["load"], torch.cuda.memory_allocated() / 1e9), flush=True)
    t = cfg["text_config"]
    V = t["vocab_size"]
    ref = glm5_ref.Glm5Ref(cfg, w)
    lengths = [int(x) for x in args.lengths.split(",")]
    tensors, prompts, prompt_ids = {}, [], []
    i32 = lambda x: x.to(torch.int32).cpu().contiguous()  # noqa: E731
    f32 = lambda x: x.float().cpu().contiguous()  # noqa: E731
    t0 = time.time()
    for k, T in enumerate(lengths):
        ids = torch.from_numpy(ch.prompt_ids(2000 + k, T, V)).to(dev)
        prompt_ids.append(ids)
        pos = torch.from_numpy(stored_positions(T)).to(dev)
        hf = ch.hf_logits(m32, ids)
        gen, dl = ch.hf_greedy(m32, ids, args.gen)
        ref.tie_stats = {}
        rl, h = ref.forward(ids)
        nxt = torch.cat([ids[1:], gen[:1]])
        draft, _ = ref.mtp_forward(nxt, h)
        info = {
            "T": T, "n_positions": int(pos.numel()), "T_mod_4": T % 4,
            "selection_active_queries": max(0, T - 2051) if t["index_topk"] == 2048 else None,
            "ref_vs_hf_prefill_max_rel_err": ch.rel_err(rl, hf),
            "ref_vs_hf_prefill_max_row_rel_err": ch.row_rel_err(rl, hf),
            "ref_vs_hf_prefill_argmax_agree": (rl.argmax(-1) == hf.argmax(-1)).float().mean().item(),
            "index_boundary_ties_per_layer": dict(ref.tie_stats),
            "mtp_draft_argmax_eq_target_next": (draft[:-1].argmax(-1) == hf[1:].argmax(-1)).float().mean().item(),
        }
        ch.check("ref vs HF fp32 slice T=%d" % T, info["ref_vs_hf_prefill_max_row_rel_err"] < 1e-4, json.dumps(info))
        prompts.append(info)
        p = "p%d." % k
        tensors[p + "ids"] = i32(ids)
        tensors[p + "positions"] = i32(pos)
        tensors[p + "logits"] = f32(hf[pos])
        tensors[p + "gen_ids"] = i32(gen)
        tensors[p + "decode_logits"] = f32(dl)
        tensors[p + "mtp_next_ids"] = i32(nxt)
        tensors[p + "mtp_logits"] = f32(draft[pos])
        tensors[p + "_fp32_argmax"] = i32(hf.argmax(-1))  # for the bf16 statistics below only
        del hf, rl, h, draft, dl
        torch.cuda.empty_cache()
    phases["fp32"] = round(time.time() - t0, 1)
    peak32 = torch.cuda.max_memory_allocated() / 1e9
    # bf16: drop the reference (its views pin the fp32 parameters), cast HF in place.
    del ref, w
    torch.cuda.empty_cache()
    t0 = time.time()
    m16 = m32.to(torch.bfloat16)
    set_config_dtype(m16.config, torch.bfloat16)
    for k, ids in enumerate(prompt_ids):
        p = "p%d." % k
        l16 = ch.hf_logits(m16, ids)
        gen16, _ = ch.hf_greedy(m16, ids, args.gen)
        fp32_argmax = tensors.pop(p + "_fp32_argmax")
        a16 = l16.argmax(-1).to(torch.int32).cpu()
        same = (gen16.cpu() == tensors[p + "gen_ids"].long()).int()
        prompts[k].update({
            "bf16_vs_fp32_prefill_argmax_agree": (a16 == fp32_argmax).float().mean().item(),
            "bf16_vs_fp32_greedy_matching_prefix": int(same.cumprod(0).sum()),
        })
        tensors[p + "bf16_gen_ids"] = i32(gen16)
        tensors[p + "bf16_argmax"] = a16.contiguous()
        print("prompt", k, json.dumps(prompts[k]), flush=True)
    phases["bf16"] = round(time.time() - t0, 1)
    fname = "slice-goldens.safetensors"
    save_file(tensors, os.path.join(args.out, fname), metadata={"format": "pt"})
    side = {
        "produced_by": "models/glm5_next/reference/make_slice_goldens.py (docs/GPURun-H200.md)",
        "torch": torch.__version__, "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name(0) if dev.startswith("cuda") else dev,
        "checkpoint": os.path.abspath(args.checkpoint), "file": fname,
        "prompt_rng": "numpy.random.default_rng(2000 + k).integers(2, vocab_size, size=T)",
        "n_gen": args.gen, "fill": fill, "prompts": prompts, "seconds": phases,
        "peak_gpu_gb_fp32": round(peak32, 1), "peak_gpu_gb": round(torch.cuda.max_memory_allocated() / 1e9, 1),
        "checks": ch.RESULTS["checks"],
    }
    with open(os.path.join(args.out, "slice_goldens.json"), "w") as f:
        json.dump(side, f, indent=2)
        f.write("\n")
    ok = all(c["ok"] for c in ch.RESULTS["checks"])
    print("slice goldens written to", args.out, "seconds", json.dumps(phases), "peak GPU %.1f GB" % side["peak_gpu_gb"])
    print("make_slice_goldens:", "ALL PASS" if ok else "SOME FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
