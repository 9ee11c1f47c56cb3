#!/usr/bin/env python3
"""Cross-check procedural checkpoints, glm5_ref.py and transformers' glm5_next (run on a GPU machine).

Steps (each prints a line starting with "CHECK" and PASS/FAIL; the exit code is 1 if any FAIL):
  a. write the tiny bf16 and fp8 checkpoints with write_checkpoint.py (numpy), and verify the
     hand-written bf16 / fp8 e4m3fn rounding against torch's own casts, tensor by tensor;
  b. load each with Glm5NextForConditionalGeneration.from_pretrained(folder, output_loading_info=True):
     no missing and no unexpected keys allowed, except model.visual.* (random vision tower, never used)
     and the MTP layer model.language_model.layers.<num_hidden_layers>.* (HF ignores only layers.45);
     every loaded parameter must equal the checkpoint tensor mapped by our own name map (hf_param_map).
     The vision tower is built with depth 1 (config.vision_config.depth = 1) to keep loading fast.
     fp8: the native FP8 load is attempted and reported; the goldens use an fp32 model built from a
     dequantised copy of the checkpoint (q * scale_inv, written as F32, config without
     quantization_config);
  c. compare glm5_ref.py with transformers in fp32 on identical weights: logits of every position for
     prompts longer than index_topk (so the pooled top-k selects), max relative error (target < 1e-4)
     and argmax agreement; also the cached HF decode path against a full forward.

  python3 check_hf.py --work /tmp/glm5chk [--out DIR] [--device cuda]
"""

import argparse
import json
import os
import sys
import time
import traceback

if __name__ == "__main__" and ("-h" in sys.argv[1:] or "--help" in sys.argv[1:]):
    print(__doc__)  # --help works without torch installed
    sys.exit(0)

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import glm5_ref  # noqa: E402
import procedural as pw  # noqa: E402
import write_checkpoint as wc  # noqa: E402

REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
CONFIGS = {
    "bf16": os.path.join(REPO, "models/glm5_next/configs/glm5-tiny-bf16.json"),
    "fp8": os.path.join(REPO, "models/glm5_next/configs/glm5-tiny-fp8.json"),
}
RESULTS = {"checks": []}


def check(name, ok, detail=""):
    print("CHECK %-50s %s %s" % (name, "PASS" if ok else "FAIL", detail), flush=True)
    RESULTS["checks"].append({"name": name, "ok": bool(ok), "detail": detail})
    return ok


def strict_fp32():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def prompt_ids(seed, length, vocab):
    """Deterministic prompt: numpy PCG64(seed) uniform integers in [2, vocab)."""
    return np.random.default_rng(seed).integers(2, vocab, size=length).astype(np.int64)


# ----------------------------------------------------------------------------------- (a)
def verify_rounding(folder, cfg):
    """Our bf16 / fp8 bytes vs torch's casts of the same fp32 master values."""
    from safetensors.torch import load_file

    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    raw = {}
    for fn in files:
        raw.update(load_file(os.path.join(folder, fn)))
    man = {n: (d, s) for n, d, s in pw.tensor_manifest(cfg)}
    bad, n_bf16, n_fp8, n_neg0 = [], 0, 0, 0
    for name, (dtype, shape) in man.items():
        v = torch.from_numpy(pw.master_values(name, shape))
        t = raw[name]
        if dtype == pw.BF16:
            n_bf16 += 1
            if not torch.equal(v.to(torch.bfloat16).view(torch.int16), t.view(torch.int16)):
                bad.append(name)
        elif dtype == pw.F32:
            if not torch.equal(v, t):
                bad.append(name)
        else:
            n_fp8 += 1
            s = raw[name[: -len(".weight")] + ".weight_scale_inv"]
            full = s.repeat_interleave(128, 0).repeat_interleave(128, 1)[: shape[0], : shape[1]]
            ref = (v / full).to(torch.float8_e4m3fn)
            if not torch.equal(ref.view(torch.uint8), t.view(torch.uint8)):
                bad.append(name)
            n_neg0 += int((t.view(torch.uint8) == 0x80).sum())
    check("rounding vs torch casts (%s)" % os.path.basename(folder), not bad,
          "bf16=%d fp8=%d negative-zero fp8 bytes=%d mismatched=%s" % (n_bf16, n_fp8, n_neg0, bad[:5]))
    return n_neg0


def write_dequantized(src, dst):
    """fp8 checkpoint -> F32 copy with q * scale_inv and no quantization_config (HF-loadable)."""
    from safetensors.torch import save_file

    cfg, w = glm5_ref.load_checkpoint(src, dtype=torch.float32)
    cfg.pop("quantization_config", None)
    cfg.get("text_config", {}).pop("quantization_config", None)
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    save_file({k: v.contiguous() for k, v in w.items()}, os.path.join(dst, "model.safetensors"),
              metadata={"format": "pt"})


# ----------------------------------------------------------------------------------- (b)
def hf_param_map(cfg, w):
    """Our checkpoint tensors under transformers' module names: {hf_name: tensor}."""
    t = cfg.get("text_config", cfg)
    out = {}
    L = t["num_hidden_layers"]
    for name, ten in w.items():
        if not name.startswith("model.language_model.layers."):
            out[name] = ten
            continue
        rest = name[len("model.language_model.layers."):]
        li, sub = rest.split(".", 1)
        if int(li) >= L:
            continue
        p = "model.language_model.layers.%s." % li
        if sub.startswith("hc_"):
            site, what = sub[3:].split("_", 1)
            out[p + "%s_hc.%s" % (site, what)] = ten
        elif sub.startswith("self_attn.") and sub.split(".")[1] in ("q_conv1d", "k_conv1d", "v_conv1d"):
            continue
        elif sub.startswith("self_attn.") and sub.split(".")[1] in ("f_a_proj", "f_b_proj", "dt_bias", "A_log"):
            out[p + "self_attn.forget_gate." + sub[len("self_attn."):]] = ten
        elif ".experts." in sub:
            continue
        else:
            out[name] = ten
    for i in range(L):
        p = "model.language_model.layers.%d." % i
        if t["layer_types"][i] == "linear_attention":
            out[p + "self_attn.conv1d.weight"] = torch.cat(
                [w[p + "self_attn.%s_conv1d.weight" % c] for c in "qkv"], 0)
        ek = p + "mlp.experts.0.gate_proj.weight"
        if ek in w:
            E = t["n_routed_experts"]
            out[p + "mlp.experts.gate_up_proj"] = torch.stack([
                torch.cat([w[p + "mlp.experts.%d.gate_proj.weight" % e], w[p + "mlp.experts.%d.up_proj.weight" % e]], 0)
                for e in range(E)])
            out[p + "mlp.experts.down_proj"] = torch.stack(
                [w[p + "mlp.experts.%d.down_proj.weight" % e] for e in range(E)])
    return out


def fp8_modules_to_not_convert(cfg):
    """Every HF nn.Linear that our fp8 checkpoint keeps unquantised (exact HF module names).

    The tiny fp8 config has no modules_to_not_convert, so transformers' FP8 quantizer would turn every
    nn.Linear (KDA projections, kv_b_proj, the indexer, lm_head) into an FP8Linear without scales.
    """
    L = cfg["text_config"]["num_hidden_layers"]
    out = ["lm_head", "model.visual"]
    for name, dtype, shape in pw.tensor_manifest(cfg):
        if dtype != pw.BF16 or len(shape) != 2 or not name.endswith(".weight"):
            continue
        if name.startswith("model.language_model.layers.%d." % L) or "embed_tokens" in name or name == "lm_head.weight":
            continue
        mod = name[: -len(".weight")]
        for a in ("f_a_proj", "f_b_proj"):
            mod = mod.replace("self_attn." + a, "self_attn.forget_gate." + a)
        out.append(mod)
    return out


def hf_config(folder, not_convert=None):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(folder)
    config.vision_config.depth = 1
    if not_convert is not None:
        q = config.quantization_config
        if isinstance(q, dict):
            q["modules_to_not_convert"] = not_convert
        else:
            q.modules_to_not_convert = not_convert
    return config


def hf_load(folder, dtype, device, tag, L, allow_fallback_from=None, device_map=None, not_convert=None):
    """from_pretrained + key audit. Returns the model (falls back to our name map on failure)."""
    from transformers import Glm5NextForConditionalGeneration

    mtp_prefix = "model.language_model.layers.%d." % L
    model = None
    try:
        t0 = time.time()
        model, info = Glm5NextForConditionalGeneration.from_pretrained(
            folder, config=hf_config(folder, not_convert), dtype=dtype, output_loading_info=True,
            **({"device_map": device_map} if device_map else {}))
        missing = sorted(info.get("missing_keys", []))
        unexpected = sorted(info.get("unexpected_keys", []))
        mism = info.get("mismatched_keys", [])
        ign_m = [k for k in missing if k.startswith("model.visual.")]
        ign_u = [k for k in unexpected if k.startswith(mtp_prefix)]
        bad_m = [k for k in missing if k not in ign_m]
        bad_u = [k for k in unexpected if k not in ign_u]
        print("%s: load %.1fs; ignored %d missing model.visual.* keys and %d unexpected %s* keys"
              % (tag, time.time() - t0, len(ign_m), len(ign_u), mtp_prefix))
        print("%s: ignored unexpected (MTP) sample: %s" % (tag, ign_u[:6]))
        info_prefix = "info: " if tag.endswith("native") else ""
        check(info_prefix + "HF load keys %s" % tag, not bad_m and not bad_u and not mism,
              "missing=%s unexpected=%s mismatched=%s" % (bad_m[:8], bad_u[:8], list(mism)[:4]))
    except Exception:
        traceback.print_exc()
        check(("info: " if tag.endswith("native") else "") + "HF load %s" % tag, False, "from_pretrained raised")
        model = None
    if model is None and allow_fallback_from is not None:
        model = Glm5NextForConditionalGeneration(hf_config(folder)).to(dtype)
        sd = {k: v.to(dtype) for k, v in allow_fallback_from.items()}
        res = model.load_state_dict(sd, strict=False)
        print("%s: fallback load_state_dict missing(non-visual)=%s unexpected=%s" % (
            tag, [k for k in res.missing_keys if not k.startswith("model.visual.")][:8], res.unexpected_keys[:8]))
    if model is not None:
        model = model.to(device).eval()
    return model


def compare_params(model, mapped, tag):
    sd = model.state_dict()
    worst, missing = 0.0, []
    for k, v in mapped.items():
        if k not in sd:
            missing.append(k)
            continue
        d = (sd[k].float().cpu() - v.float().cpu()).abs().max().item() if sd[k].numel() else 0.0
        worst = max(worst, d)
    lang = [k for k in sd if k.startswith("model.language_model.") or k == "lm_head.weight"]
    unmapped = [k for k in lang if k not in mapped]
    check("HF params == checkpoint (%s)" % tag, worst == 0.0 and not missing and not unmapped,
          "max|diff|=%g not-in-HF=%s HF-unmapped=%s" % (worst, missing[:5], unmapped[:5]))


# ----------------------------------------------------------------------------------- (c)
@torch.no_grad()
def hf_logits(model, ids):
    return model(input_ids=ids[None]).logits[0].float()


@torch.no_grad()
def hf_greedy(model, ids, n):
    """Greedy decode with the HF cache: (gen ids [n], decode logits [n, V]).

    gen[0] = argmax(prefill logits[-1]); decode_logits[j] = logits after feeding gen[j] at
    position T + j, so gen[j + 1] = argmax(decode_logits[j]).
    """
    out = model(input_ids=ids[None], use_cache=True)
    past = out.past_key_values
    tok = out.logits[0, -1].float().argmax()
    gen, logits = [], []
    for _ in range(n):
        gen.append(tok)
        out = model(input_ids=tok.view(1, 1), past_key_values=past, use_cache=True)
        past = out.past_key_values
        lg = out.logits[0, -1].float()
        logits.append(lg)
        tok = lg.argmax()
    return torch.stack(gen), torch.stack(logits)


def rel_err(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def row_rel_err(a, b):
    return ((a - b).abs().amax(-1) / b.abs().amax(-1)).max().item()


def compare_ref(model, ref, ids, tag, results):
    hf = hf_logits(model, ids)
    out = {"T": int(ids.numel())}
    for mode in ("stable", "torch", "reverse"):
        ref.select = mode
        ref.tie_stats = {}
        rl, _ = ref.forward(ids)
        e = rel_err(rl, hf)
        out[mode] = {"max_rel_err": e, "max_row_rel_err": row_rel_err(rl, hf),
                     "argmax_agree": (rl.argmax(-1) == hf.argmax(-1)).float().mean().item(),
                     "boundary_ties": dict(ref.tie_stats)}
    ref.select = "stable"
    check("ref vs HF fp32 %s T=%d" % (tag, ids.numel()), out["stable"]["max_rel_err"] < 1e-4, json.dumps(out))
    check("info: index tie order matters %s T=%d" % (tag, ids.numel()), out["reverse"]["max_rel_err"] > 1e-4,
          "reverse-tie-rule rel err %g" % out["reverse"]["max_rel_err"])
    results.append(out)
    return hf


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/glm5chk", help="scratch folder for checkpoints")
    ap.add_argument("--out", default=None, help="write check_hf.json here")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--lengths", default="300,517,1000", help="prompt lengths")
    args = ap.parse_args(argv)
    strict_fp32()
    dev = args.device
    import transformers

    RESULTS["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
    print("torch", torch.__version__, "transformers", transformers.__version__, flush=True)
    try:
        from transformers import conversion_mapping as cm
        import inspect
        src = inspect.getsource(cm)
        i = src.find("glm5_next")
        print("conversion_mapping glm5_next excerpt:\n", src[max(0, i - 200): i + 2500] if i >= 0 else "none")
    except Exception as e:  # informational only
        print("no conversion_mapping:", e)

    lengths = [int(x) for x in args.lengths.split(",")]
    for tag, cfg_path in CONFIGS.items():
        folder = os.path.join(args.work, tag)
        t0 = time.time()
        n_shards, n_t, total = wc.write_checkpoint(cfg_path, folder, max_shard_bytes=4_000_000)
        print("%s: wrote %d tensors in %d shards (%d bytes) in %.1fs" % (tag, n_t, n_shards, total, time.time() - t0))
        with open(cfg_path) as f:
            cfg = json.load(f)
        verify_rounding(folder, cfg)
        L = cfg["text_config"]["num_hidden_layers"]
        _, w = glm5_ref.load_checkpoint(folder, dtype=torch.float32)
        mapped = hf_param_map(cfg, w)
        if tag == "fp8":
            try:
                native = hf_load(folder, torch.bfloat16, dev, "fp8-native", L, device_map=dev,
                                 not_convert=fp8_modules_to_not_convert(cfg))
                if native is not None:
                    RESULTS["fp8_native_modules"] = sorted({type(m).__name__ for m in native.modules()})
                    print("fp8 native module types:", RESULTS["fp8_native_modules"])
                    RESULTS["fp8_native"] = native
            except Exception:
                traceback.print_exc()
            deq = os.path.join(args.work, "fp8-deq")
            write_dequantized(folder, deq)
            folder = deq
        model = hf_load(folder, torch.float32, dev, tag + "-fp32", L, allow_fallback_from=mapped)
        compare_params(model, mapped, tag)
        ref = glm5_ref.Glm5Ref(cfg, {k: v.to(dev) for k, v in w.items()})
        results = []
        V = cfg["text_config"]["vocab_size"]
        for k, n in enumerate(lengths):
            ids = torch.from_numpy(prompt_ids(1000 + k, n, V)).to(dev)
            hf = compare_ref(model, ref, ids, tag, results)
            if tag == "fp8" and RESULTS.get("fp8_native") is not None:
                try:
                    nl = hf_logits(RESULTS["fp8_native"], ids)
                    results[-1]["fp8_native_vs_deq_fp32"] = {
                        "max_rel_err": rel_err(nl, hf), "argmax_agree": (nl.argmax(-1) == hf.argmax(-1)).float().mean().item()}
                    print("fp8 native (bf16) vs dequantised fp32:", results[-1]["fp8_native_vs_deq_fp32"])
                except Exception:
                    traceback.print_exc()
            if k == 0:
                try:  # informational: the same reference run with bf16 weights and activations
                    ref16 = glm5_ref.Glm5Ref(cfg, {kk: vv.to(dev, torch.bfloat16) for kk, vv in w.items()})
                    l16, _ = ref16.forward(ids)
                    d16 = {"max_rel_err": rel_err(l16.float(), hf), "max_row_rel_err": row_rel_err(l16.float(), hf),
                           "argmax_agree": (l16.argmax(-1) == hf.argmax(-1)).float().mean().item()}
                    results[-1]["ref_bf16_vs_hf_fp32"] = d16
                    check("info: ref in bf16 vs HF fp32 %s" % tag, True, json.dumps(d16))
                    del ref16
                except Exception:
                    traceback.print_exc()
                try:
                    gen, dl = hf_greedy(model, ids, 16)
                    full = hf_logits(model, torch.cat([ids, gen]))[n:n + 16]
                    e = rel_err(dl, full)
                    rl, _ = ref.forward(torch.cat([ids, gen]))
                    e2 = rel_err(rl[n:n + 16], dl)
                    check("HF cached decode vs full forward %s" % tag, e < 1e-4, "rel=%g ref-vs-decode rel=%g" % (e, e2))
                except Exception:
                    traceback.print_exc()
                    check("HF cached decode %s" % tag, False, "raised")
        RESULTS[tag] = results
        RESULTS.pop("fp8_native", None)
        del model
        torch.cuda.empty_cache()
    ok = all(c["ok"] for c in RESULTS["checks"] if not c["name"].startswith("info:"))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "check_hf.json"), "w") as f:
            json.dump(RESULTS, f, indent=2, default=str)
    print("check_hf:", "ALL PASS" if ok else "SOME FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
