#!/usr/bin/env python3
"""Golden files for strata's C++ runtime tests on the tiny glm5_next configs (run on a GPU machine).

For each tiny config (bf16 and fp8) writes <out>/<config stem>.safetensors with, per prompt k:

  p<k>.ids               int32 [T]      prompt token ids (numpy PCG64(1000 + k) uniform in [2, vocab))
  p<k>.positions         int32 [n]      positions whose logits are stored (all of them for the shorter
                                        prompts; every 16th plus the last 32 for the long one)
  p<k>.logits            f32 [n, V]     transformers fp32 logits at those positions (prefill, no cache)
  p<k>.gen_ids           int32 [64]     fp32 greedy continuation (transformers, with its cache)
  p<k>.decode_logits     f32 [64, V]    logits after feeding gen_ids[j] at position T + j
  p<k>.mtp_next_ids      int32 [T]      draft input ids: t_1 .. t_{T-1}, gen_ids[0]
  p<k>.mtp_logits        f32 [n, V]     glm5_ref.py MTP draft step-0 logits of the rows at `positions`
                                        (row p: token t_{p+1}, target hidden h_p, position p)
  p<k>.bf16_gen_ids      int32 [64]     greedy continuation of the same transformers model run in bf16
  p<k>.bf16_argmax       int32 [T]      argmax of the bf16 prefill logits at every position

fp8 config: the fp32 model is the dequantised checkpoint (q * scale_inv per 128x128 block); the bf16 run
loads the same dequantised weights in bf16. A JSON sidecar <out>/goldens.json records the configs,
prompt lengths, measured errors (ref vs HF, bf16 vs fp32) and how the files were produced (an existing
sidecar keeps the entries of the files this run does not write).

dense config (glm5-tiny-dense-bf16.json, index_kpool_compress false: one index key per token, top
index_topk tokens, no tail): transformers has no index_kpool_compress switch, but its indexer with
index_kpool = 1 is exactly the dense one (a softmax over one slot is 1, so each pooled key is the
token's key; no tail). The transformers model therefore loads a copy of the checkpoint whose config
says index_kpool 1, with zero index_kpool_compress_gate [d, D] / index_kpool_compress_ape [1, d]
tensors added (values unread); glm5_ref.py runs its dense indexer on the checkpoint itself.

  python3 make_goldens.py --work /tmp/glm5chk --out test/models/glm5_next/goldens [--device cuda]
  python3 make_goldens.py --work /tmp/glm5chk --out test/models/glm5_next/goldens --configs dense
"""

import argparse
import json
import os
import sys
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
import write_checkpoint as wc  # noqa: E402

LENGTHS = [300, 389, 1000]
CONFIGS = dict(ch.CONFIGS, dense=os.path.join(ch.REPO, "models/glm5_next/configs/glm5-tiny-dense-bf16.json"))
N_GEN = 64


def stored_positions(T):
    if T <= 512:
        return np.arange(T)
    return np.unique(np.concatenate([np.arange(0, T, 16), np.arange(T - 32, T)]))


def bf16_run(model, ids, n):
    lg = ch.hf_logits(model, ids)
    gen, _ = ch.hf_greedy(model, ids, n)
    return lg, gen


def write_hf_dense(src, dst):
    """A dense-indexer checkpoint -> a copy transformers loads as its index_kpool = 1 indexer:
    config index_kpool 1, zero compression gate and position table per indexer (unread)."""
    from safetensors.torch import load_file, save_file

    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    t = cfg.get("text_config", cfg)
    t["index_kpool"] = 1
    with open(os.path.join(src, "model.safetensors.index.json")) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    w = {}
    for fn in files:
        w.update(load_file(os.path.join(src, fn)))
    idim, d = t["index_head_dim"], t["hidden_size"]
    for name in [n for n in w if n.endswith(".indexer.wk.weight")]:
        p = name[: -len("wk.weight")]
        w[p + "index_kpool_compress_gate"] = torch.zeros(idim, d, dtype=torch.bfloat16)
        w[p + "index_kpool_compress_ape"] = torch.zeros(1, idim, dtype=torch.bfloat16)
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    save_file({k: v.contiguous() for k, v in w.items()}, os.path.join(dst, "model.safetensors"),
              metadata={"format": "pt"})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/glm5chk", help="scratch folder (checkpoints are (re)written here)")
    ap.add_argument("--out", required=True, help="output folder for the golden files")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--configs", default="bf16,fp8",
                    help="comma-separated subset of %s (default bf16,fp8)" % ",".join(CONFIGS))
    args = ap.parse_args(argv)
    from safetensors.torch import save_file
    import transformers

    ch.strict_fp32()
    dev = args.device
    os.makedirs(args.out, exist_ok=True)
    side = {
        "produced_by": "models/glm5_next/reference/make_goldens.py (see docs/Reference.md)",
        "torch": torch.__version__, "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name(0) if dev.startswith("cuda") else dev,
        "prompt_rng": "numpy.random.default_rng(1000 + k).integers(2, vocab_size, size=T)",
        "n_gen": N_GEN, "files": {},
    }
    sidecar = os.path.join(args.out, "goldens.json")
    if os.path.exists(sidecar):
        with open(sidecar) as f:
            side["files"] = json.load(f).get("files", {})
    for tag in args.configs.split(","):
        cfg_path = CONFIGS[tag]
        t0 = time.time()
        folder = os.path.join(args.work, tag)
        wc.write_checkpoint(cfg_path, folder, max_shard_bytes=4_000_000)
        with open(cfg_path) as f:
            cfg = json.load(f)
        t = cfg["text_config"]
        L, V = t["num_hidden_layers"], t["vocab_size"]
        _, w = glm5_ref.load_checkpoint(folder, dtype=torch.float32, device=dev)
        hf_folder = folder
        hf_cfg, hf_w = cfg, w
        if tag == "fp8":
            hf_folder = os.path.join(args.work, "fp8-deq")
            ch.write_dequantized(folder, hf_folder)
        if tag == "dense":
            hf_folder = os.path.join(args.work, "dense-kpool1")
            write_hf_dense(folder, hf_folder)
            hf_cfg, hf_w = glm5_ref.load_checkpoint(hf_folder, dtype=torch.float32, device=dev)
        m32 = ch.hf_load(hf_folder, torch.float32, dev, tag + "-fp32", L,
                         allow_fallback_from=ch.hf_param_map(hf_cfg, hf_w))
        m16 = ch.hf_load(hf_folder, torch.bfloat16, dev, tag + "-bf16", L,
                         allow_fallback_from=ch.hf_param_map(hf_cfg, hf_w))
        ref = glm5_ref.Glm5Ref(cfg, w)
        tensors, prompts = {}, []
        for k, T in enumerate(LENGTHS):
            ids = torch.from_numpy(ch.prompt_ids(1000 + k, T, V)).to(dev)
            pos = torch.from_numpy(stored_positions(T)).to(dev)
            hf = ch.hf_logits(m32, ids)
            gen, dl = ch.hf_greedy(m32, ids, N_GEN)
            rl_full, _ = ref.forward(torch.cat([ids, gen]))
            ref.tie_stats = {}
            rl, h = ref.forward(ids)
            nxt = torch.cat([ids[1:], gen[:1]])
            draft, _ = ref.mtp_forward(nxt, h)
            l16, gen16 = bf16_run(m16, ids, N_GEN)
            same = (gen16 == gen).int()
            prefix = int(same.cumprod(0).sum())
            info = {
                "T": T, "n_positions": int(pos.numel()), "T_mod_4": T % 4,
                "ref_vs_hf_prefill_max_rel_err": ch.rel_err(rl, hf),
                "ref_vs_hf_prefill_max_row_rel_err": ch.row_rel_err(rl, hf),
                "ref_vs_hf_prefill_argmax_agree": (rl.argmax(-1) == hf.argmax(-1)).float().mean().item(),
                "ref_vs_hf_decode_max_rel_err": ch.rel_err(rl_full[T:T + N_GEN], dl),
                "ref_vs_hf_decode_argmax_agree": (rl_full[T:T + N_GEN].argmax(-1) == dl.argmax(-1)).float().mean().item(),
                "index_boundary_ties_per_layer": dict(ref.tie_stats),
                "bf16_vs_fp32_prefill_max_rel_err": ch.rel_err(l16, hf),
                "bf16_vs_fp32_prefill_max_row_rel_err": ch.row_rel_err(l16, hf),
                "bf16_vs_fp32_prefill_argmax_agree": (l16.argmax(-1) == hf.argmax(-1)).float().mean().item(),
                "bf16_vs_fp32_greedy_matching_prefix": prefix,
                "bf16_vs_fp32_greedy_matching_tokens": int(same.sum()),
                "mtp_draft_argmax_eq_target_next": (draft[:-1].argmax(-1) == hf[1:].argmax(-1)).float().mean().item(),
            }
            print(tag, json.dumps(info), flush=True)
            prompts.append(info)
            p = "p%d." % k
            i32 = lambda x: x.to(torch.int32).cpu().contiguous()  # noqa: E731
            f32 = lambda x: x.float().cpu().contiguous()  # noqa: E731
            tensors[p + "ids"] = i32(ids)
            tensors[p + "positions"] = i32(pos)
            tensors[p + "logits"] = f32(hf[pos])
            tensors[p + "gen_ids"] = i32(gen)
            tensors[p + "decode_logits"] = f32(dl)
            tensors[p + "mtp_next_ids"] = i32(nxt)
            tensors[p + "mtp_logits"] = f32(draft[pos])
            tensors[p + "bf16_gen_ids"] = i32(gen16)
            tensors[p + "bf16_argmax"] = i32(l16.argmax(-1))
        stem = os.path.splitext(os.path.basename(cfg_path))[0]
        fname = stem + ".safetensors"
        save_file(tensors, os.path.join(args.out, fname), metadata={"format": "pt", "config": os.path.basename(cfg_path)})
        side["files"][fname] = {
            "config": "models/glm5_next/configs/" + os.path.basename(cfg_path),
            "checkpoint": "write_checkpoint.py --config <config> (procedural weights; shard size irrelevant)",
            "fp32_model": "transformers Glm5NextForConditionalGeneration, fp32" +
                          (", dequantised fp8 weights" if tag == "fp8" else "") +
                          (", index_kpool 1 (the dense indexer; zero compression gate and position table"
                           " added)" if tag == "dense" else ""),
            "prompts": prompts,
            "seconds": round(time.time() - t0, 1),
        }
        del m32, m16
        torch.cuda.empty_cache()
    with open(sidecar, "w") as f:
        json.dump(side, f, indent=2)
        f.write("\n")
    print("goldens written to", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
