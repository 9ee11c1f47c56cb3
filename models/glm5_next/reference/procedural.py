#!/usr/bin/env python3
"""Procedural test weights for glm5_next: a numpy-only twin of docs/ProceduralWeights.md.

Every element of a procedural tensor is a fixed function of the tensor's full
checkpoint name and its flat index, so this module and the C++ writer
(strata-write-checkpoint) produce bit-identical bytes.  The definition lives in
docs/ProceduralWeights.md; this file follows it step by step:

  h = FNV-1a-64(name)                 (fnv1a64)
  z = splitmix64(h + i)               (splitmix64, vectorised over i)
  m = int(z >> 40) - 2^23             exact integer in [-2^23, 2^23)
  v = fp32(fp32(m) * c) + offset      two fp32 operations, c = fp32(amplitude) * 2^-23
  stored: fp32 v | bf16 RNE(v) | fp8 e4m3fn block-quantised (fp8_block_quantize)

It also builds the tensor manifest (names, dtypes, shapes) of a GLM-5.3-Flash
style checkpoint for a given config.json (tensor_manifest), following
glm5_next-target.md section 4 and glm5_next-indexer-mtp-cache.md section 4.1.

Runs under Debian's /usr/bin/python3 with numpy 1.24 (no torch).

Usage as a script prints the manifest of a config:
  python3 procedural.py --config models/glm5_next/configs/glm5-tiny-bf16.json
"""

import argparse
import json
import math
import sys

import numpy as np

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1

# Dtype names as they appear in safetensors headers.
F32 = "F32"
BF16 = "BF16"
F8 = "F8_E4M3"

FP8_MAX = 448.0
FP8_BLOCK = 128


def fnv1a64(name):
    """FNV-1a-64 of the UTF-8 bytes of `name` (Python int in [0, 2^64))."""
    h = FNV_OFFSET
    for b in name.encode("utf-8"):
        h ^= b
        h = (h * FNV_PRIME) & MASK64
    return h


def splitmix64(z):
    """splitmix64 finaliser over a uint64 numpy array (arithmetic mod 2^64)."""
    z = z.astype(np.uint64, copy=True)
    with np.errstate(over="ignore"):
        z += np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z


def role(name, shape):
    """(amplitude, offset) from the role table; first matching rule wins."""
    if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
        return 0.1, 1.0
    if name.endswith("norm.bias"):
        return 0.1, 0.0
    if name.endswith("A_log"):
        return 1.0, 0.0
    if name.endswith("dt_bias"):
        return 1.0, 0.0
    if name.endswith("conv1d.weight"):
        return 0.5, 0.0
    if name.endswith("_base"):
        return 1.0, 0.0
    if name.endswith("_scale"):
        return 0.5, 1.0
    if name.endswith("e_score_correction_bias"):
        return 0.1, 0.0
    if name.endswith("index_kpool_compress_ape"):
        return 1.0, 0.0
    if name.endswith("embed_tokens.weight"):
        return 1.0, 0.0
    if len(shape) == 2:
        # fp32(1 / sqrt(in)): computed in double, then rounded to fp32 below.
        return 1.0 / math.sqrt(shape[1]), 0.0
    return 1.0, 0.0


def master_values(name, shape):
    """The fp32 master values v of tensor `name` with logical shape `shape`."""
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    h = fnv1a64(name)
    with np.errstate(over="ignore"):
        idx = np.uint64(h) + np.arange(n, dtype=np.uint64)
    z = splitmix64(idx)
    m = (z >> np.uint64(40)).astype(np.int64) - (1 << 23)
    amplitude, offset = role(name, shape)
    c = np.float32(np.float32(amplitude) * np.float32(2.0 ** -23))
    v = m.astype(np.float32) * c  # fp32 multiply, RNE
    v = (v + np.float32(offset)).astype(np.float32)  # fp32 add, RNE
    return v.reshape(shape)


def bf16_bits(v):
    """Round fp32 array to bf16 (round-to-nearest-even); returns uint16 bit patterns."""
    u = np.ascontiguousarray(v, dtype=np.float32).view(np.uint32)
    rounding = np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))
    with np.errstate(over="ignore"):
        r = (u + rounding) >> np.uint32(16)
    # NaN stays NaN (quiet); procedural values are finite, kept for completeness.
    nan = np.isnan(v)
    if nan.any():
        r = np.where(nan, (u >> np.uint32(16)) | np.uint32(0x40), r)
    return r.astype(np.uint16)


def bf16_to_f32(bits):
    """uint16 bf16 bit patterns -> fp32 values."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def e4m3fn_bits(x):
    """fp32 array -> float8 e4m3fn bytes: round-to-nearest-even, saturate to +-448.

    Sign is kept (a negative value that rounds to zero becomes 0x80, like
    torch's float8_e4m3fn cast). Subnormals: exponent field 0, step 2^-9.
    """
    x = np.asarray(x, dtype=np.float32).astype(np.float64)  # exact widening
    sign = np.signbit(x)
    a = np.abs(x)
    _, e2 = np.frexp(a)  # a = f * 2^e2, f in [0.5, 1)
    e = e2.astype(np.int64) - 1  # a in [2^e, 2^(e+1))
    e = np.maximum(e, -6)  # below 2^-6: subnormal grid 2^-9
    quantum = np.ldexp(1.0, (e - 3).astype(np.int64))
    r = np.rint(a / quantum) * quantum  # exact division by a power of two; rint = half-to-even
    r = np.minimum(r, FP8_MAX)  # saturate
    # Encode r (a value on the e4m3 grid, |r| <= 448).
    _, re2 = np.frexp(r)
    re = re2.astype(np.int64) - 1
    normal = r >= 2.0 ** -6
    exp_field = np.where(normal, re + 7, 0)
    mant = np.where(normal, r / np.ldexp(1.0, re) * 8.0 - 8.0, r * 512.0)
    bits = (exp_field << 3) | np.rint(mant).astype(np.int64)
    bits = np.where(r == 0, 0, bits)
    bits = bits | np.where(sign, 0x80, 0)
    return bits.astype(np.uint8)


def e4m3fn_to_f32(bits):
    """float8 e4m3fn bytes -> fp32 values (no NaN handling needed here)."""
    b = bits.astype(np.int64)
    s = np.where(b & 0x80, -1.0, 1.0)
    ef = (b >> 3) & 0xF
    mf = b & 0x7
    val = np.where(ef == 0, mf / 8.0 * 2.0 ** -6, (1.0 + mf / 8.0) * np.ldexp(1.0, ef - 7))
    return (s * val).astype(np.float32)


def fp8_block_quantize(v):
    """Per 128x128 block quantisation of fp32 master values v [out, in].

    Returns (q bytes uint8 [out, in], scale_inv fp32 [ceil(out/128), ceil(in/128)]).
    """
    out_dim, in_dim = v.shape
    bo = -(-out_dim // FP8_BLOCK)
    bi = -(-in_dim // FP8_BLOCK)
    pad = np.zeros((bo * FP8_BLOCK, bi * FP8_BLOCK), dtype=np.float32)
    pad[:out_dim, :in_dim] = v
    blocks = np.abs(pad).reshape(bo, FP8_BLOCK, bi, FP8_BLOCK)
    amax = blocks.max(axis=(1, 3)).astype(np.float32)
    scale_inv = (amax / np.float32(FP8_MAX)).astype(np.float32)  # fp32 division
    scale_inv = np.where(amax == 0, np.float32(1.0), scale_inv).astype(np.float32)
    full = np.repeat(np.repeat(scale_inv, FP8_BLOCK, axis=0), FP8_BLOCK, axis=1)[:out_dim, :in_dim]
    x = (v.astype(np.float32) / full).astype(np.float32)  # fp32 division
    return e4m3fn_bits(x), scale_inv


def tensor_bytes(name, shape, dtype):
    """Little-endian bytes of procedural tensor `name` stored as `dtype` (F32 or BF16).

    FP8 tensors come in pairs (q, scale_inv); use fp8_tensors() for them.
    """
    v = master_values(name, shape)
    if dtype == F32:
        return v.astype("<f4").tobytes()
    if dtype == BF16:
        return bf16_bits(v).astype("<u2").tobytes()
    raise ValueError("tensor_bytes: unsupported dtype %s for %s" % (dtype, name))


def fp8_tensors(name, shape):
    """(q bytes, scale_inv name, scale_inv shape, scale_inv bytes) of an fp8 weight."""
    v = master_values(name, shape)
    q, s = fp8_block_quantize(v)
    sname = name[: -len(".weight")] + ".weight_scale_inv"
    return q.tobytes(), sname, list(s.shape), s.astype("<f4").tobytes()


# --------------------------------------------------------------------------------------------
# Manifest


def text_config(cfg):
    """The text config dict of a glm5_next config.json (nested text_config or flat)."""
    return cfg.get("text_config", cfg)


def is_fp8(cfg):
    """True when the config carries an fp8 quantization_config (top level or text_config)."""
    q = cfg.get("quantization_config") or text_config(cfg).get("quantization_config")
    return bool(q) and q.get("quant_method") == "fp8"


def _mla(prefix, t, fp8):
    """MLA (+ indexer) tensors of one attention block. Returns [(name, dtype, shape)]."""
    d = t["hidden_size"]
    nh = t["num_attention_heads"]
    qk = t["qk_nope_head_dim"] + t.get("qk_rope_head_dim", 0)
    w8 = F8 if fp8 else BF16
    out = [
        (prefix + "q_a_proj.weight", w8, [t["q_lora_rank"], d]),
        (prefix + "q_a_layernorm.weight", BF16, [t["q_lora_rank"]]),
        (prefix + "q_b_proj.weight", w8, [nh * qk, t["q_lora_rank"]]),
        (prefix + "kv_a_proj_with_mqa.weight", w8, [t["kv_lora_rank"] + t.get("qk_rope_head_dim", 0), d]),
        (prefix + "kv_a_layernorm.weight", BF16, [t["kv_lora_rank"]]),
        (prefix + "kv_b_proj.weight", BF16, [nh * (t["qk_nope_head_dim"] + t["v_head_dim"]), t["kv_lora_rank"]]),
        (prefix + "o_proj.weight", w8, [d, nh * t["v_head_dim"]]),
    ]
    return out


def _indexer(prefix, t):
    d = t["hidden_size"]
    ih, idim = t["index_n_heads"], t["index_head_dim"]
    p = prefix + "indexer."
    tensors = [
        (p + "wq_b.weight", BF16, [ih * idim, t["q_lora_rank"]]),
        (p + "wk.weight", BF16, [idim, d]),
        (p + "k_norm.weight", BF16, [idim]),
        (p + "k_norm.bias", BF16, [idim]),
        (p + "weights_proj.weight", BF16, [ih, d]),
    ]
    # The dense indexer (index_kpool_compress false) has no compression gate
    # or position table (runtime/checkpoint/glm5_manifest.cpp).
    if t.get("index_kpool_compress", True):
        tensors += [
            (p + "index_kpool_compress_gate", BF16, [idim, d]),
            (p + "index_kpool_compress_ape", BF16, [t["index_kpool"], idim]),
        ]
    return tensors


def _kda(prefix, t):
    d = t["hidden_size"]
    la = t["linear_attn_config"]
    nh, hd, k = la["num_heads"], la["head_dim"], la["short_conv_kernel_size"]
    p = nh * hd
    return [
        (prefix + "q_proj.weight", BF16, [p, d]),
        (prefix + "k_proj.weight", BF16, [p, d]),
        (prefix + "v_proj.weight", BF16, [p, d]),
        (prefix + "q_conv1d.weight", BF16, [p, 1, k]),
        (prefix + "k_conv1d.weight", BF16, [p, 1, k]),
        (prefix + "v_conv1d.weight", BF16, [p, 1, k]),
        (prefix + "f_a_proj.weight", BF16, [hd, d]),
        (prefix + "f_b_proj.weight", BF16, [p, hd]),
        (prefix + "g_a_proj.weight", BF16, [hd, d]),
        (prefix + "g_b_proj.weight", BF16, [p, hd]),
        (prefix + "b_proj.weight", BF16, [nh, d]),
        (prefix + "A_log", F32, [nh]),
        (prefix + "dt_bias", F32, [p]),
        (prefix + "o_norm.weight", BF16, [hd]),
        (prefix + "o_proj.weight", BF16, [d, p]),
    ]


def _swiglu(prefix, d, inter, w8):
    return [
        (prefix + "gate_proj.weight", w8, [inter, d]),
        (prefix + "up_proj.weight", w8, [inter, d]),
        (prefix + "down_proj.weight", w8, [d, inter]),
    ]


def _moe(prefix, t, fp8):
    d = t["hidden_size"]
    e = t["n_routed_experts"]
    mi = t["moe_intermediate_size"]
    w8 = F8 if fp8 else BF16
    out = [
        (prefix + "gate.weight", F32, [e, d]),
        (prefix + "gate.e_score_correction_bias", F32, [e]),
    ]
    for i in range(e):
        out += _swiglu(prefix + "experts.%d." % i, d, mi, w8)
    out += _swiglu(prefix + "shared_experts.", d, mi * t.get("n_shared_experts", 1), w8)
    return out


def layer_is_moe(t, i):
    types = t.get("mlp_layer_types")
    if types is not None and i < len(types):
        return types[i] == "sparse"
    return i >= t.get("first_k_dense_replace", 0)


def tensor_manifest(cfg):
    """[(name, dtype, shape)] of every *logical* weight (fp8 weights listed once, dtype F8_E4M3).

    Target layers 0..L-1 and, when num_nextn_predict_layers > 0, the MTP layer L.
    weight_scale_inv tensors are implied by F8_E4M3 entries (see expand_fp8).
    """
    t = text_config(cfg)
    fp8 = is_fp8(cfg)
    d = t["hidden_size"]
    v = t["vocab_size"]
    hc = t["hc_mult"]
    n_layers = t["num_hidden_layers"]
    root = "model.language_model."
    out = [
        (root + "embed_tokens.weight", BF16, [v, d]),
        (root + "norm.weight", BF16, [d]),
        ("lm_head.weight", BF16, [v, d]),
    ]
    mix = (2 + hc) * hc
    indexer_types = t.get("indexer_types") or ["full"] * n_layers
    for i in range(n_layers):
        p = root + "layers.%d." % i
        for site in ("attn", "ffn"):
            out += [
                (p + "hc_%s_fn" % site, F32, [mix, hc * d]),
                (p + "hc_%s_base" % site, F32, [mix]),
                (p + "hc_%s_scale" % site, F32, [3]),
            ]
        out += [(p + "input_layernorm.weight", BF16, [d]), (p + "post_attention_layernorm.weight", BF16, [d])]
        if t["layer_types"][i] == "linear_attention":
            out += _kda(p + "self_attn.", t)
        else:
            out += _mla(p + "self_attn.", t, fp8)
            if indexer_types[i] == "full":
                out += _indexer(p + "self_attn.", t)
        if layer_is_moe(t, i):
            out += _moe(p + "mlp.", t, fp8)
        else:
            out += _swiglu(p + "mlp.", d, t["intermediate_size"], F8 if fp8 else BF16)
    for j in range(t.get("num_nextn_predict_layers", 0)):
        p = root + "layers.%d." % (n_layers + j)
        out += [
            (p + "enorm.weight", BF16, [d]),
            (p + "hnorm.weight", BF16, [d]),
            (p + "eh_proj.weight", BF16, [d, 2 * d]),
            (p + "shared_head.norm.weight", BF16, [d]),
            (p + "input_layernorm.weight", BF16, [d]),
            (p + "post_attention_layernorm.weight", BF16, [d]),
        ]
        out += _mla(p + "self_attn.", t, fp8)
        out += _indexer(p + "self_attn.", t)
        out += _moe(p + "mlp.", t, fp8)
    return out


def expand_fp8(manifest):
    """Stored tensors: each F8_E4M3 weight adds its F32 weight_scale_inv. [(name, dtype, shape, source)].

    `source` is the logical weight name the bytes derive from.
    """
    out = []
    for name, dtype, shape in manifest:
        out.append((name, dtype, list(shape), name))
        if dtype == F8:
            sname = name[: -len(".weight")] + ".weight_scale_inv"
            sshape = [-(-shape[0] // FP8_BLOCK), -(-shape[1] // FP8_BLOCK)]
            out.append((sname, F32, sshape, name))
    return out


DTYPE_SIZE = {F32: 4, BF16: 2, F8: 1}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="glm5_next config.json")
    ap.add_argument("--values", metavar="NAME", help="print the first 8 master values of tensor NAME")
    args = ap.parse_args(argv)
    with open(args.config) as f:
        cfg = json.load(f)
    man = tensor_manifest(cfg)
    if args.values:
        shape = next((s for n, _, s in man if n == args.values), None)
        if shape is None:
            print("no tensor named %s in the manifest" % args.values, file=sys.stderr)
            return 1
        print(master_values(args.values, shape).reshape(-1)[:8])
        return 0
    total = 0
    for name, dtype, shape, _ in expand_fp8(man):
        nbytes = int(np.prod(shape)) * DTYPE_SIZE[dtype]
        total += nbytes
        print("%-80s %-8s %s" % (name, dtype, shape))
    print("# %d tensors, %d bytes" % (len(expand_fp8(man)), total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
