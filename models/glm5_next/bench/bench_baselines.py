#!/usr/bin/env python3
"""PyTorch baselines of GLM-5.3-Flash's hot ops at real shapes (run on the H200), as JSON for bench_table.py.

Times (CUDA events, median of --iters after warm-up) what PyTorch does for the ops strata's kernels do:

  linears   F.linear in bf16 (cuBLAS) and fp8 e4m3 weights three ways: torch._scaled_mm with 128x128
            block scales (weights) and 1x128 scales (activations, dynamic) when this torch supports
            it, else row-wise scales (same bytes and FLOPs); and dequantise-then-bf16-matmul (what a
            plain fp8 checkpoint costs without fp8 kernels). Shapes: MLA q_a [1536, 4096], q_b
            [16384, 1536], kv_a [512, 4096], kv_b [32768, 512] (bf16), o_proj [4096, 16384]; KDA q/k/v
            [8192, 4096], o_proj [4096, 8192] (bf16); expert gate/up [2048, 4096], down [4096, 2048];
            lm_head [154880, 4096] (bf16); M = --decode-tokens (decode) and --prefill-tokens (prefill).
  modules   a 2-layer transformers Glm5NextForConditionalGeneration of the slice config (random bf16
            weights, fp32 router), prefill of --prefill-tokens then one decode step with its cache;
            forward hooks time each layer's self_attn (KDA layer 0, MLA + indexer layer 1), mlp (MoE)
            and lm_head; plus the whole step.

Each op records seconds, bytes moved (weights + activations in and out), FLOPs, the compute ceiling
it is held to (bf16 or fp8), the strata kernel family it stands for (`strata`) and how many times it
runs per step of the slice (`per_step`). Ceilings (shared/docs/performance.md, measured on the
H200): 4.1 TB/s, 0.78 PFLOP/s bf16, 1.4 PFLOP/s fp8. Ops that fail record `error` and are skipped
by bench_table.py.

  python3 bench_baselines.py --config models/glm5_next/configs/glm5-slice-fp8.json --json out.json
"""

import argparse
import json
import sys
import time
import traceback

if __name__ == "__main__" and ("-h" in sys.argv[1:] or "--help" in sys.argv[1:]):
    print(__doc__)  # --help works without torch installed
    sys.exit(0)

import torch
import torch.nn.functional as F

CEILINGS = {"bytes_per_second": 4.1e12, "bf16": 0.78e15, "fp8": 1.4e15}
RESULTS = {"ops": []}


def timed(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    times.sort()
    return times[len(times) // 2]


def record(name, step, strata, per_step, fn, iters, bytes_=0, flops=0, compute="bf16", **extra):
    op = {"name": name, "step": step, "strata": strata, "per_step": per_step, "bytes": bytes_,
          "flops": flops, "compute": compute}
    op.update(extra)
    try:
        op["seconds"] = timed(fn, iters)
        s = op["seconds"]
        op["bytes_per_second"] = bytes_ / s
        op["flops_per_second"] = flops / s
        op["of_ceiling"] = max(bytes_ / s / CEILINGS["bytes_per_second"], flops / s / CEILINGS[compute])
        print("%-40s %-7s %10.1f us  %8.1f GB/s  %8.2f TFLOP/s  %5.1f%% of ceiling" % (
            name, step, s * 1e6, bytes_ / s / 1e9, flops / s / 1e12, 100 * op["of_ceiling"]), flush=True)
    except Exception as e:  # recorded, not fatal: other ops still run
        op["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        print("%-40s %-7s ERROR %s" % (name, step, op["error"]), flush=True)
    RESULTS["ops"].append(op)
    return op


def fp8_block_quant(w):
    """[N, K] fp32 -> (e4m3 [N, K], scale_inv [ceil(N/128), ceil(K/128)]), as the checkpoint stores it."""
    N, K = w.shape
    nb, kb = (N + 127) // 128, (K + 127) // 128
    pad = torch.zeros(nb * 128, kb * 128, device=w.device)
    pad[:N, :K] = w
    blocks = pad.view(nb, 128, kb, 128)
    amax = blocks.abs().amax(dim=(1, 3)).clamp(min=1e-12)
    s = amax / 448.0
    q = (blocks / s[:, None, :, None]).view(nb * 128, kb * 128)[:N, :K].to(torch.float8_e4m3fn)
    return q, s


def ceilings(args):
    """The device copy (read + write) and large GEMM rates, measured in this run: the ceilings
    strata-bench --matrix holds a step to (--gemm-tflops)."""
    dev = "cuda"
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    record("ceiling.copy 1 GiB", "ceiling", "ceiling", 1, lambda: dst.copy_(src), args.iters, 2 * n, 0)
    del src, dst
    S = 8192
    a = torch.randn(S, S, device=dev, dtype=torch.bfloat16)
    b = torch.randn(S, S, device=dev, dtype=torch.bfloat16)
    record("ceiling.gemm bf16 8192^3", "ceiling", "ceiling", 1, lambda: a @ b, args.iters, 3 * S * S * 2,
           2 * S ** 3, "bf16")
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    one = torch.ones((), device=dev)
    record("ceiling.gemm fp8 8192^3", "ceiling", "ceiling", 1,
           lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
           args.iters, 3 * S * S, 2 * S ** 3, "fp8")
    del a, b, a8, b8
    torch.cuda.empty_cache()
    measured = {}
    for op in RESULTS["ops"]:
        if op["step"] == "ceiling" and "seconds" in op:
            key = op["name"].split()[0] + ("_" + op["name"].split()[1] if "gemm" in op["name"] else "")
            measured[key] = op["flops_per_second"] if op["flops"] else op["bytes_per_second"]
    RESULTS["measured_ceilings"] = measured


def token_list(text):
    return [int(v) for v in str(text).split(",") if v]


def linears(args, shapes):
    dev = "cuda"
    steps = [("decode", m) for m in token_list(args.decode_tokens)] + \
        [("prefill", m) for m in token_list(args.prefill_tokens)]
    for step, M_step in steps:
        for name, N, K, kind, family, per_step, routed in shapes:
            M = M_step
            if routed and step == "prefill":
                # Routed experts in prefill: every expert gets about T * top-k / E tokens.
                M, per_step = routed(M_step)
            w = torch.randn(N, K, device=dev) / K ** 0.5
            x = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
            flops = 2 * M * N * K
            act = M * K * 2 + M * N * 2
            if kind == "bf16":
                wb = w.to(torch.bfloat16)
                record("%s bf16 [%d,%d] M=%d" % (name, N, K, M), step, family, per_step,
                       lambda: F.linear(x, wb), args.iters, N * K * 2 + act, flops, "bf16")
                del wb
                continue
            q, s = fp8_block_quant(w)
            full = s.repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]
            # (a) block-scaled _scaled_mm: activations 1x128 (dynamic), weights 128x128.
            xs = x.float().view(M, K // 128, 128).abs().amax(-1).clamp(min=1e-12) / 448.0  # [M, K/128]
            xq = (x.float().view(M, K // 128, 128) / xs[..., None]).view(M, K).to(torch.float8_e4m3fn)

            def block_mm():
                return torch._scaled_mm(xq, q.t(), scale_a=xs.t().contiguous().t(), scale_b=s.t(),
                                        out_dtype=torch.bfloat16)

            op = record("%s fp8 block _scaled_mm [%d,%d] M=%d" % (name, N, K, M), step, family, per_step,
                        block_mm, args.iters, N * K + N * K // 16384 * 4 + act, flops, "fp8", variant="blockwise")
            if "error" in op:
                # (b) row-wise scales: same bytes and FLOPs, coarser scaling.
                ra = x.float().abs().amax(-1, keepdim=True).clamp(min=1e-12) / 448.0
                xr = (x.float() / ra).to(torch.float8_e4m3fn)
                rb = w.abs().amax(-1, keepdim=True).clamp(min=1e-12) / 448.0
                qr = (w / rb).to(torch.float8_e4m3fn)
                record("%s fp8 rowwise _scaled_mm [%d,%d] M=%d" % (name, N, K, M), step, family, per_step,
                       lambda: torch._scaled_mm(xr, qr.t(), scale_a=ra, scale_b=rb.t(), out_dtype=torch.bfloat16),
                       args.iters, N * K + N * 4 + act, flops, "fp8", variant="rowwise")
                del xr, qr
            # (c) dequantise + bf16 matmul every call (not the family's comparison: informational).
            sb = full.to(torch.bfloat16)
            record("%s fp8 dequant+bf16 [%d,%d] M=%d" % (name, N, K, M), step, family + "(dequant)", per_step,
                   lambda: F.linear(x, q.to(torch.bfloat16) * sb), args.iters,
                   N * K + N * K // 16384 * 4 + act, flops, "bf16", variant="dequant")
            del q, s, full, sb, w
        torch.cuda.empty_cache()


def modules(args, cfg):
    """Time the transformers slice model's modules by forward hooks, prefill then one decode step."""
    from transformers import AutoConfig, Glm5NextForConditionalGeneration
    import os
    import tempfile

    plain = json.loads(json.dumps(cfg))
    plain.pop("quantization_config", None)
    plain["text_config"].pop("quantization_config", None)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(plain, f)
        config = AutoConfig.from_pretrained(tmp)
    config.vision_config.depth = 1
    with torch.device("meta"):
        model = Glm5NextForConditionalGeneration(config)
    model = model.to_empty(device="cuda")
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n or n.endswith("_scale"):
                p.fill_(1.0)
            elif p.dim() >= 2:
                p.normal_(0.0, p.shape[-1] ** -0.5)
            else:
                p.uniform_(-0.1, 0.1)
        for n, b in model.named_buffers():
            if b.is_floating_point():
                b.zero_()
    model = model.to(torch.bfloat16).eval()
    for n, p in model.named_parameters():
        if n.endswith("mlp.gate.weight"):
            p.data = p.data.float()  # fp32 router as in the checkpoint
    t = cfg["text_config"]
    lm = model.model.language_model
    events = {}

    def hook(key):
        def pre(_m, _a, *rest):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            events.setdefault(key, []).append([e, None])

        def post(_m, _a, _o, *rest):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            events[key][-1][1] = e
        return pre, post

    handles = []
    for i, layer in enumerate(lm.layers):
        kind = "kda_attention" if t["layer_types"][i] == "linear_attention" else "mla_attention"
        for key, mod in (("%s (layer %d self_attn)" % (kind, i), layer.self_attn),
                         ("moe_ffn (layer %d mlp)" % i, layer.mlp)):
            pre, post = hook(key)
            handles.append(mod.register_forward_pre_hook(pre))
            handles.append(mod.register_forward_hook(post))
    pre, post = hook("lm_head")
    handles.append(model.lm_head.register_forward_pre_hook(pre))
    handles.append(model.lm_head.register_forward_hook(post))
    V = t["vocab_size"]
    T = token_list(args.prefill_tokens)[0]
    ids = torch.randint(2, V, (1, T), device="cuda")
    results = {"prefill": {}, "decode": {}}
    with torch.no_grad():
        for rep in range(1 + args.module_iters):
            events.clear()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            out = model(input_ids=ids, use_cache=True)
            b.record()
            c = torch.cuda.Event(enable_timing=True)
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
            d = torch.cuda.Event(enable_timing=True)
            pre_dec = {k: list(v) for k, v in events.items()}
            events.clear()
            c.record()
            model(input_ids=tok, past_key_values=out.past_key_values, use_cache=True)
            d.record()
            torch.cuda.synchronize()
            if rep == 0:
                continue  # warm-up
            for step, evs, total in (("prefill", pre_dec, a.elapsed_time(b)), ("decode", events, c.elapsed_time(d))):
                r = results[step]
                r.setdefault("step", []).append(total / 1e3)
                for k, v in evs.items():
                    r.setdefault(k, []).append(sum(x.elapsed_time(y) for x, y in v if y is not None) / 1e3)
    for h in handles:
        h.remove()
    ebytes = 3 * t["moe_intermediate_size"] * t["hidden_size"]  # one fp8 expert's bytes... in bf16 here: x2
    for step, r in results.items():
        for k, v in r.items():
            v.sort()
            s = v[len(v) // 2]
            family = "step" if k == "step" else k.split(" ")[0]
            bytes_ = 0
            if family == "moe_ffn" and step == "decode":
                bytes_ = 2 * ebytes * (t["num_experts_per_tok"] + t["n_shared_experts"])  # bf16 weights read
            if family == "lm_head":
                bytes_ = 2 * V * t["hidden_size"]
            op = {"name": "transformers %s (%s, T=%d)" % (k, step, T if step == "prefill" else 1), "step": step,
                  "strata": family, "per_step": 1, "seconds": s, "bytes": bytes_, "flops": 0, "compute": "bf16",
                  "note": "transformers bf16 module incl. its own projections; strata splits them into linear_*"}
            op["bytes_per_second"] = bytes_ / s
            op["of_ceiling"] = bytes_ / s / CEILINGS["bytes_per_second"]
            RESULTS["ops"].append(op)
            print("%-55s %10.1f us" % (op["name"], s * 1e6), flush=True)
    del model
    torch.cuda.empty_cache()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="a glm5_next config (the slice's: shapes and layer kinds)")
    ap.add_argument("--json", required=True)
    ap.add_argument("--decode-tokens", default="1", help="M of the decode linears (a comma list: 1,8,32,128)")
    ap.add_argument("--prefill-tokens", default="2048", help="M of the prefill linears (a comma list)")
    ap.add_argument("--ceilings", action="store_true", help="also measure the copy and 8192^3 GEMM rates")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--module-iters", type=int, default=3)
    ap.add_argument("--skip-modules", action="store_true")
    args = ap.parse_args(argv)
    with open(args.config) as f:
        cfg = json.load(f)
    t = cfg["text_config"]
    H, la = t["hidden_size"], t["linear_attn_config"]
    nh, dn, dv, R, KV = (t["num_attention_heads"], t["qk_nope_head_dim"], t["v_head_dim"], t["q_lora_rank"],
                         t["kv_lora_rank"])
    P = la["num_heads"] * la["head_dim"]
    I = t["moe_intermediate_size"]
    n_mla = sum(1 for x in t["layer_types"] if x != "linear_attention") + t["num_nextn_predict_layers"]
    n_kda = sum(1 for x in t["layer_types"] if x == "linear_attention")
    n_moe = sum(1 for x in t["mlp_layer_types"] if x == "sparse")  # target step (the draft is its own plan)
    k_act = t["num_experts_per_tok"] + t["n_shared_experts"]
    n_mla_target = n_mla - t["num_nextn_predict_layers"]
    E, topk = t["n_routed_experts"], t["num_experts_per_tok"]

    def routed(n_gemms):
        return lambda T: (max(1, -(-T * topk // E)), n_gemms * E * n_moe)

    experts = "moe_ffn(cuBLAS experts)"  # a floor for strata's moe_ffn: the expert GEMMs alone
    shapes = [  # name, N, K, kind, family, per step of the target plan (decode), prefill routing
        ("mla.q_a_proj", R, H, "fp8", "linear", n_mla_target, None),
        ("mla.q_b_proj", nh * dn, R, "fp8", "linear", n_mla_target, None),
        ("mla.kv_a_proj", KV + t["qk_rope_head_dim"], H, "fp8", "linear", n_mla_target, None),
        ("mla.kv_b_proj", nh * (dn + dv), KV, "bf16", "linear", n_mla_target, None),
        ("mla.o_proj", H, nh * dv, "fp8", "linear", n_mla_target, None),
        ("kda.qkv_proj", P, H, "bf16", "linear", 3 * n_kda, None),
        ("kda.o_proj", H, P, "bf16", "linear", n_kda, None),
        ("expert.gate_up", I, H, "fp8", experts, 2 * k_act * n_moe, routed(2)),
        ("expert.down", H, I, "fp8", experts, k_act * n_moe, routed(1)),
        ("lm_head", t["vocab_size"], H, "bf16", "lm_head(cuBLAS)", 1, None),
    ]
    import transformers

    RESULTS.update({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                    "transformers": transformers.__version__, "ceilings": CEILINGS, "config": args.config,
                    "decode_tokens": token_list(args.decode_tokens)[0],
                    "prefill_tokens": token_list(args.prefill_tokens)[0],
                    "decode_token_list": token_list(args.decode_tokens),
                    "prefill_token_list": token_list(args.prefill_tokens)})
    t0 = time.time()
    if args.ceilings:
        try:
            ceilings(args)
        except Exception:
            traceback.print_exc()
    try:
        linears(args, shapes)
    except Exception:
        traceback.print_exc()
    RESULTS["linears_seconds"] = round(time.time() - t0, 1)
    if not args.skip_modules:
        t0 = time.time()
        try:
            modules(args, cfg)
        except Exception as e:
            traceback.print_exc()
            RESULTS["modules_error"] = "%s: %s" % (type(e).__name__, e)
        RESULTS["modules_seconds"] = round(time.time() - t0, 1)
    with open(args.json, "w") as f:
        json.dump(RESULTS, f, indent=2)
        f.write("\n")
    print("baselines written to", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
