//===- LLMOps.td - llm dialect ops -------------------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Op definitions of the `llm` dialect: every op GLM-5.3-Flash (target and
// MTP draft) needs at graph level. Each op states its math, the shape and
// layout of every operand and an IR example; LLMOps.cpp verifies every shape
// and attribute rule. Adds, concatenations and reshapes come from upstream
// (arith.addf, tensor.concat, tensor.expand_shape / collapse_shape).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMOPS_TD
#define STRATA_DIALECTS_LLM_IR_LLMOPS_TD

include "dialects/llm/IR/LLMBase.td"
include "dialects/llm/IR/LLMAttrs.td"
include "dialects/llm/IR/LLMTypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def LLM_WeightGroup : OpDocGroup {
  let summary = "Weights";
  let description = "Ops that name checkpoint tensors.";
}
def LLM_ElementwiseGroup : OpDocGroup {
  let summary = "Embedding, norms, linears";
  let description = "Token embedding, normalisations, projections, LM head.";
}
def LLM_HyperConnectionGroup : OpDocGroup {
  let summary = "Hyper-connections (mHC)";
  let description = "The four-stream residual of GLM-5.3-Flash.";
}
def LLM_AttentionGroup : OpDocGroup {
  let summary = "Attention";
  let description = "Kimi Delta Attention and sparse NoPE MLA.";
}
def LLM_IndexerGroup : OpDocGroup {
  let summary = "Indexer";
  let description = "The pooled (kpool) sparse-attention indexer.";
}
def LLM_CacheGroup : OpDocGroup {
  let summary = "Paged caches";
  let description = "Writes and gathers of the MLA latent pool, the pooled index pool and the tail ring.";
}
def LLM_CollectiveGroup : OpDocGroup {
  let summary = "Collectives";
  let description = "Communication between the ranks of a tensor- and expert-parallel layout.";
}
def LLM_FfnGroup : OpDocGroup {
  let summary = "Feed-forward";
  let description = "The dense SwiGLU MLP and the MoE FFN.";
}

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

let opDocGroup = LLM_WeightGroup in {

def LLM_WeightOp : LLM_Op<"weight", [Pure]> {
  let summary = "a named checkpoint tensor";
  let description = [{
    The checkpoint tensor called `name`, with the static type of the result.
    For an `!llm.fp8_weight` result the checkpoint also holds the block
    scales under the same name with the final `weight` replaced by
    `weight_scale_inv` (`...q_a_proj.weight` -> `...q_a_proj.weight_scale_inv`);
    a name that does not end in `weight` keeps the scales under
    `<name>_scale_inv`. The loader checks the checkpoint's dtype and shape
    against the result type.

    ```mlir
    %w = llm.weight "model.language_model.layers.3.self_attn.q_a_proj.weight"
        : !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>
    %n = llm.weight "model.language_model.norm.weight" : tensor<4096xbf16>
    ```

    With `shards` (written by llm-shard-model) the result is the slice of
    the checkpoint tensor one rank reads: each `#llm.shard<group, dim = d,
    parts = n>` divides dimension `d` into `n` parts (at most one shard per
    dimension) and the result type has the part's extent. An fp8 weight's
    scales are sliced with it: a sharded extent of one of the two block
    dimensions must be a multiple of the block size or divide it, so each
    part reads whole scale rows (a part inside one block reads that block's
    scale).

    ```mlir
    %wo = llm.weight "model.language_model.layers.3.self_attn.o_proj.weight"
        {shards = [#llm.shard<tp, dim = 1, parts = 4>]} : tensor<4096x4096xbf16>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<LLM_ShardArrayAttr>:$shards);
  let results = (outs LLM_CheckpointValue:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def LLM_ExpertWeightsOp : LLM_Op<"expert_weights", [Pure]> {
  let summary = "the per-expert checkpoint tensors stacked along a new leading dimension";
  let description = [{
    Stacks the `num_experts` checkpoint tensors named by `pattern` with `{e}`
    replaced by `0 .. num_experts - 1` along a new leading dimension. With an
    `!llm.fp8_weight` result the scales are stacked the same way (names as in
    `llm.weight`). The leading dimension of the result equals `num_experts`.

    ```mlir
    %gate = llm.expert_weights "model.language_model.layers.3.mlp.experts.{e}.gate_proj.weight" {num_experts = 288 : i64}
        : !llm.fp8_weight<tensor<288x2048x4096xf8E4M3FN>, tensor<288x16x32xf32>, block = [128, 128]>
    ```

    `shards` as on `llm.weight`, over the stacked shape: a shard of
    dimension 0 selects the experts `k * num_experts .. (k + 1) *
    num_experts - 1` of the checkpoint (`num_experts` is then the per-rank
    count), a shard of dimension 1 or 2 slices every expert's tensor.

    ```mlir
    %down = llm.expert_weights "model.language_model.layers.3.mlp.experts.{e}.down_proj.weight"
        {num_experts = 144 : i64, shards = [#llm.shard<ep, dim = 0, parts = 2>, #llm.shard<tp, dim = 2, parts = 4>]}
        : !llm.fp8_weight<tensor<144x4096x512xf8E4M3FN>, tensor<144x32x4xf32>, block = [128, 128]>
    ```
  }];
  let arguments = (ins StrAttr:$pattern, I64Attr:$num_experts,
                       OptionalAttr<LLM_ShardArrayAttr>:$shards);
  let results = (outs LLM_AnyWeight:$result);
  let assemblyFormat = "$pattern attr-dict `:` type($result)";
  let hasVerifier = 1;
}

} // LLM_WeightGroup

//===----------------------------------------------------------------------===//
// Embedding, norms, linears, LM head
//===----------------------------------------------------------------------===//

let opDocGroup = LLM_ElementwiseGroup in {

def LLM_EmbeddingOp : LLM_Op<"embedding", [Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    `y[t, :] = table[ids[t], :]`, no scaling. `ids : [T]` (i32 or i64),
    `table : [vocab, hidden]`, `y : [T, hidden]` with the element type of the
    table or f32 (exact widening). An id outside `[0, vocab)` gets a zero
    row: the tokenizer never produces one, but ids computed on the device can
    (the -1 of `llm.argmax` for a row without a finite maximum, which a fused
    MTP draft step embeds before the host sees it).

    ```mlir
    %e = llm.embedding %ids, %table : (tensor<?xi32>, tensor<154880x4096xbf16>) -> tensor<?x4096xbf16>
    ```

    Vocabulary-parallel form: with `vocab_shard = #llm.shard<group, dim =
    0, parts = n>` the table holds rows `k * V .. (k + 1) * V - 1` of the
    vocabulary (`V` its row count, `k` the rank's coordinate in `group`);
    ids stay global, and a token whose id lies outside the rank's rows gets
    a zero row. An `llm.all_reduce` over `group` completes the lookup
    (exactly one rank contributes each row, so the sum is exact).

    ```mlir
    %p = llm.embedding %ids, %table {vocab_shard = #llm.shard<tp, dim = 0, parts = 4>}
        : (tensor<?xi32>, tensor<38720x4096xbf16>) -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins LLM_IdTensor:$ids, LLM_ActTensor:$table,
                       OptionalAttr<LLM_ShardAttr>:$vocab_shard);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = "$ids `,` $table attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_PositionMaskOp : LLM_Op<"position_mask", [Pure]> {
  let summary = "zero the rows whose position equals a given position";
  let description = [{
    `y[t, ...] = positions[t] == position ? 0 : x[t, ...]`. The MTP draft
    zeroes the embedding of the row at position 0 (vLLM convention, see
    RationaleLLM.md). `x : [T, ...]`, `positions : [T]`, `y` has the type of
    `x`.

    ```mlir
    %m = llm.position_mask %e, %pos {position = 0 : i64} : (tensor<?x4096xbf16>, tensor<?xi32>) -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, LLM_I32Tensor:$positions,
                       I64Attr:$position);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = "$input `,` $positions attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_RmsNormOp : LLM_Op<"rms_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "root-mean-square normalization over the last dimension, optionally weighted and gated";
  let description = [{
    Over the last dimension `d` of `x`, in fp32:

        n = x * rsqrt(mean(x^2) + eps)
        y = round(n)                                  unweighted
        y = round(n) * weight                         weighted (HF order: round, then scale)
        y = round(n * weight * sigmoid(gate))         gated (KDA o_norm, all fp32, one rounding)

    `x : [..., d]`; `weight : [d]`; `gate` has the shape of `x` and needs a
    `weight`. The result has the shape of `x`. A per-head norm (KDA o_norm)
    is a rank-3 `x : [T, heads, head_dim]` with a `[head_dim]` weight.

    ```mlir
    %y = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32} : (tensor<?x4096xbf16>, tensor<4096xbf16>) -> tensor<?x4096xbf16>
    %g = llm.rms_norm %o weight(%wn) gate(%gate) {eps = 1.0e-05 : f32}
        : (tensor<?x64x128xf32>, tensor<128xbf16>, tensor<?x64x128xf32>) -> tensor<?x64x128xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input,
                       Optional<LLM_ActTensor>:$weight,
                       Optional<LLM_ActTensor>:$gate,
                       F32Attr:$eps);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = [{
    $input (`weight` `(` $weight^ `)`)? (`gate` `(` $gate^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_LayerNormOp : LLM_Op<"layer_norm", [Pure]> {
  let summary = "layer normalization over the last dimension with weight and bias";
  let description = [{
    `y = (x - mean(x)) * rsqrt(var(x) + eps) * weight + bias` over the last
    dimension `d`, in fp32 (biased variance), rounded once. `x : [..., d]`,
    `weight, bias : [d]`, `y` has the shape of `x`. The indexer's `k_norm`
    uses eps 1e-6.

    ```mlir
    %k = llm.layer_norm %kr, %w, %b {eps = 1.0e-06 : f32}
        : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, LLM_ActTensor:$weight,
                       LLM_ActTensor:$bias, F32Attr:$eps);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = "$input `,` $weight `,` $bias attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_LinearOp : LLM_Op<"linear", [Pure]> {
  let summary = "matrix product with a bf16 or fp8 block-scaled weight";
  let description = [{
    `y[..., o] = sum_i x[..., i] * W[o, i]`, fp32 accumulation, rounded once
    to the result element type (`bf16`, or `f32` for router and indexer
    head-weight logits). `x : [..., in]`, `weight : [out, in]` as a bf16/f32
    tensor or an `!llm.fp8_weight` (dequantised per 128x128 block, `W[o, i] =
    fp8(W[o, i]) * scale_inv[o / 128, i / 128]`; a kernel may instead quantise
    `x` per token per 128-channel group to e4m3 and apply both scales on the
    fp32 accumulator). No bias. `y : [..., out]`, leading dimensions of `x`.

    ```mlir
    %q = llm.linear %x, %wqa : (tensor<?x4096xbf16>,
        !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>) -> tensor<?x1536xbf16>
    %k = llm.linear %x, %wk : (tensor<?x4096xbf16>, tensor<8192x4096xbf16>) -> tensor<?x8192xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, LLM_AnyWeight:$weight);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_LmHeadOp : LLM_Op<"lm_head", [Pure]> {
  let summary = "vocabulary logits of selected token rows";
  let description = [{
    `logits[n, v] = sum_d h[rows[n], d] * W[v, d]` in fp32, result fp32.
    `h : [T, hidden]` (the output of the final norm), `weight : [vocab,
    hidden]`, `rows : [N]` i32 row indices into `h` (e.g. the last token of
    every request; all rows for verification), `logits : [N, vocab]` f32.

    ```mlir
    %l = llm.lm_head %z, %w rows(%last) : (tensor<?x4096xbf16>, tensor<154880x4096xbf16>, tensor<?xi32>) -> tensor<?x154880xf32>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, LLM_AnyWeight:$weight,
                       LLM_I32Tensor:$rows);
  let results = (outs LLM_F32Tensor:$result);
  let assemblyFormat = "$input `,` $weight `rows` `(` $rows `)` attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_ArgmaxOp : LLM_Op<"argmax", [Pure]> {
  let summary = "each row's greedy token: the index of its first maximum";
  let description = [{
    `g[n] = min { v : logits[n, v] = max_u logits[n, u] }` (ties go to the
    lowest index, as the host sampler's greedy rule), `-1` for a row whose
    maximum is not finite (a NaN, a +inf or every entry -inf: the rows the
    host sampler refuses). `logits : [N, vocab]` f32 (`vocab < 2^24`),
    `g : [N]` i32. A step
    that returns it lets the caller take greedy tokens without copying the
    logits to the host.

    ```mlir
    %g = llm.argmax %l : (tensor<?x154880xf32>) -> tensor<?xi32>
    ```
  }];
  let arguments = (ins LLM_F32Tensor:$input);
  let results = (outs LLM_I32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

} // LLM_ElementwiseGroup

//===----------------------------------------------------------------------===//
// Hyper-connections
//===----------------------------------------------------------------------===//

let opDocGroup = LLM_HyperConnectionGroup in {

def LLM_HcExpandOp : LLM_Op<"hc_expand", [Pure]> {
  let summary = "copy the embedding into hc_mult residual streams";
  let description = [{
    `R[t, s, :] = e[t, :]` for `s = 0 .. hc_mult - 1` (contiguous copies).
    `e : [T, hidden]`, `R : [T, hc_mult, hidden]`.

    ```mlir
    %r = llm.hc_expand %e {hc_mult = 4 : i64} : (tensor<?x4096xbf16>) -> tensor<?x4x4096xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, I64Attr:$hc_mult);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_HcCollapseOp : LLM_Op<"hc_collapse", [Pure]> {
  let summary = "mean of the residual streams";
  let description = [{
    `h[t, :] = (1 / hc_mult) * sum_s R[t, s, :]`, fp32 accumulate (GLM ships
    no learned head mixing). `R : [T, hc_mult, hidden]`, `h : [T, hidden]`.

    ```mlir
    %h = llm.hc_collapse %r {hc_mult = 4 : i64} : (tensor<?x4x4096xbf16>) -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, I64Attr:$hc_mult);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_MhcPreOp : LLM_Op<"mhc_pre", [Pure]> {
  let summary = "mHC pre-mixing: stream collapse, post weights and Sinkhorn comb matrix";
  let description = [{
    With `H = hc_mult`, `D = hidden`, per token, all fp32:

        r      = flatten(R[t])                         [H*D], stream-major (s*D + d)
        m      = (fn . r) * rsqrt(mean(r^2) + norm_eps)             [(2+H)*H]
        pre_s  = sigmoid(m[s] * scale[0] + base[s]) + hc_eps                 s < H
        post_s = post_mult * sigmoid(m[H+s] * scale[1] + base[H+s])
        C0[i,j] = m[2H + H*i + j] * scale[2] + base[2H + H*i + j]
        C = softmax_j(C0) + hc_eps;  C = C / (sum_i C[i,j] + hc_eps)
        repeat sinkhorn_iters - 1 times:
          C = C / (sum_j C[i,j] + hc_eps);  C = C / (sum_i C[i,j] + hc_eps)
        x[t] = sum_s pre_s * R[t, s]

    With `x_norm(w)` (and `x_norm_eps`) the sub-layer's input RMSNorm is part
    of the op (llm-fuse-hyper-connections makes this form from an
    `llm.rms_norm` of `x`), with the rounding points of the two ops:

        x[t] = round(round(n) * w),  n = round(x0) * rsqrt(mean(round(x0)^2) + x_norm_eps),
        x0   = sum_s pre_s * R[t, s]

    Operands: `R : [T, H, D]`, `fn : [(2+H)*H, H*D]` f32, `base : [(2+H)*H]`
    f32, `scale : [3]` f32, optional `w : [D]`. Results: `x : [T, D]` (element type of `R`),
    `post : [T, H]` f32, `comb : [T, H, H]` f32 (`comb[t, i, j]` is the
    weight from source stream `i` to destination stream `j`). GLM-5.3-Flash:
    `hc_mult = 4`, `hc_eps = 1e-6`, `norm_eps = 1e-5` (rms_norm_eps, not
    hc_eps), `sinkhorn_iters = 20`, `post_mult = 2.0`.

    ```mlir
    %x, %post, %comb = llm.mhc_pre %r, %fn, %base, %scale
        {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32,
         sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32}
        : (tensor<?x4x4096xbf16>, tensor<24x16384xf32>, tensor<24xf32>, tensor<3xf32>)
        -> (tensor<?x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
    %xn, %post2, %comb2 = llm.mhc_pre %r, %fn, %base, %scale x_norm(%w)
        {hc_mult = 4 : i64, hc_eps = 1.0e-06 : f32, norm_eps = 1.0e-05 : f32,
         sinkhorn_iters = 20 : i64, post_mult = 2.0 : f32, x_norm_eps = 1.0e-05 : f32}
        : (tensor<?x4x4096xbf16>, tensor<24x16384xf32>, tensor<24xf32>, tensor<3xf32>, tensor<4096xbf16>)
        -> (tensor<?x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
    ```
  }];
  let arguments = (ins LLM_ActTensor:$residual, LLM_F32Tensor:$fn,
                       LLM_F32Tensor:$base, LLM_F32Tensor:$scale,
                       Optional<LLM_ActTensor>:$x_norm_weight,
                       I64Attr:$hc_mult, F32Attr:$hc_eps, F32Attr:$norm_eps,
                       I64Attr:$sinkhorn_iters, F32Attr:$post_mult,
                       OptionalAttr<F32Attr>:$x_norm_eps);
  let results = (outs LLM_ActTensor:$result, LLM_F32Tensor:$post,
                      LLM_F32Tensor:$comb);
  let assemblyFormat = [{
    $residual `,` $fn `,` $base `,` $scale (`x_norm` `(` $x_norm_weight^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_MhcPostOp : LLM_Op<"mhc_post", [Pure]> {
  let summary = "mHC post-mixing: write the sub-layer output back into the streams";
  let description = [{
    `R'[t, j] = post[t, j] * y[t] + sum_i comb[t, i, j] * R[t, i]` for every
    destination stream `j`, fp32 accumulate, rounded to the element type of
    `R`. This is the whole residual connection of the layer. Operands: `y :
    [T, D]`, `R : [T, H, D]`, `post : [T, H]` f32, `comb : [T, H, H]` f32 from
    the matching `llm.mhc_pre`. Result: `[T, H, D]`.

    With `projection(W)` the sub-layer's output projection is part of the op
    (llm-fuse-hyper-connections makes this form from an `llm.linear` whose
    only use is `y`): `input : [T, K]`, `W : [D, K]` bf16/f32 or
    `!llm.fp8_weight`, and `y = round(input . W^T)` (fp32 accumulation, the
    rounding of `llm.linear`) before the residual write. A GPU target runs it
    as the projection's matmul kernel with this write as its epilogue.

    ```mlir
    %r2 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64}
        : (tensor<?x4096xbf16>, tensor<?x4x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x4096xbf16>
    %r3 = llm.mhc_post %o, %r, %post, %comb projection(%wo) {hc_mult = 4 : i64}
        : (tensor<?x8192xbf16>, tensor<?x4x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<4096x8192xbf16>) -> tensor<?x4x4096xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, LLM_ActTensor:$residual,
                       LLM_F32Tensor:$post, LLM_F32Tensor:$comb,
                       Optional<LLM_AnyWeight>:$projection,
                       I64Attr:$hc_mult);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = [{
    $input `,` $residual `,` $post `,` $comb (`projection` `(` $projection^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

} // LLM_HyperConnectionGroup

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

let opDocGroup = LLM_AttentionGroup in {

def LLM_KdaAttentionOp : LLM_Op<"kda_attention", [Pure]> {
  let summary = "kimi delta attention with short causal conv, delta-rule recurrence and gated output norm";
  let description = [{
    One KDA layer between its input projections and `o_proj`. `H = heads`,
    `d = head_dim`, `P = H*d`, `K = conv_kernel`. Per request (tokens
    `seq_starts[r] .. seq_starts[r+1]`), all in fp32:

    1. Short causal depthwise conv + SiLU on each of q, k, v (`[P]` each):
       `u_t[c] = silu(sum_{j<K} w[c, 0, j] * z_{t-K+1+j}[c])`, tap `K-1` is the
       current token; the `K-1` inputs before the batch come from
       `conv_state[src_slots[r]]` (zero when the request's first position is 0).
    2. Per head: `q <- q / sqrt(sum q^2 + l2_eps) * q_scale`,
       `k <- k / sqrt(sum k^2 + l2_eps)`.
    3. Decay `g[h,c] = gate_lower_bound * sigmoid(exp(a_log[h]) * (f[h*d+c] + dt_bias[h*d+c]))`,
       `alpha = exp(g)`; write strength `beta[h] = sigmoid(b[h])`.
    4. Delta rule per head, `S : [d_k, d_v]`, initial `S` from
       `state[src_slots[r]]` (zero when the first position is 0):
       `S' = diag(alpha) S; delta = beta (v - S'^T k); S = S' + k delta^T;
       o = S^T q`.
    5. `o <- rmsnorm(o, eps = norm_eps) * o_norm * sigmoid(gate)` per head.

    The final `S` and the last `K-1` pre-conv inputs are stored to slot
    `dst_slots[r]` of the returned `state` / `conv_state` (source and
    destination differ when a prefix-cache snapshot forks). `mode` picks the
    algorithm (`chunked` with `chunk_size`, or `recurrent`); both are the same
    function up to rounding.

    With the optional `token_slots : [T]`, a request of at most 4 tokens (an
    MTP verification of up to 3 drafts; every request in `recurrent` mode)
    keeps the state after each of its tokens: `S` and the conv inputs after
    token `t` go to slot `token_slots[t]`, and token `t + 1` starts from that
    slot (the first from `src_slots[r]`). Consecutive tokens with the same
    slot update it in place, so `token_slots[t] = dst_slots[r]` for every
    token is the plain form. Longer requests use `dst_slots[r]`. Accepting
    `j` of `k` drafts then selects slot `token_slots[t0 + j]` instead of
    re-running the accepted tokens.

    Operands: `q, k, v : [T, P]` pre-conv projections; `f : [T, P]` forget
    logits (f_b_proj output); `b : [T, H]` beta logits; `gate : [T, P]`
    output-gate logits; `q_conv, k_conv, v_conv : [P, 1, K]`; `a_log : [H]`
    f32; `dt_bias : [P]` f32; `o_norm : [d]`; `state : !llm.kda_state`;
    `conv_state : !llm.conv_state` (channels `3P`, width `K-1`);
    `positions : [T]`, `seq_starts : [N+1]`, `src_slots, dst_slots : [N]`,
    optionally `token_slots : [T]`. Results: `o : [T, P]` (input of o_proj), updated `state` and
    `conv_state`.

    ```mlir
    %o, %s1, %c1 = llm.kda_attention %q, %k, %v, %f, %b, %g, %qc, %kc, %vc, %alog, %dtb, %on,
        %s0, %c0, %pos, %starts, %slots, %slots
        {heads = 64 : i64, head_dim = 128 : i64, conv_kernel = 4 : i64,
         gate_lower_bound = -5.0 : f32, l2_eps = 1.0e-06 : f32, q_scale = 0.0883883461 : f32,
         norm_eps = 1.0e-05 : f32, mode = #llm.kda_mode<chunked>, chunk_size = 64 : i64}
        : (tensor<?x8192xbf16>, tensor<?x8192xbf16>, tensor<?x8192xbf16>, tensor<?x8192xbf16>,
           tensor<?x64xbf16>, tensor<?x8192xbf16>, tensor<8192x1x4xbf16>, tensor<8192x1x4xbf16>,
           tensor<8192x1x4xbf16>, tensor<64xf32>, tensor<8192xf32>, tensor<128xbf16>,
           !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>,
           !llm.conv_state<channels = 24576, width = 3, bf16>,
           tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        -> (tensor<?x8192xbf16>, !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>,
            !llm.conv_state<channels = 24576, width = 3, bf16>)
    ```
  }];
  let arguments = (ins
    LLM_ActTensor:$q, LLM_ActTensor:$k, LLM_ActTensor:$v,
    LLM_ActTensor:$forget, LLM_ActTensor:$beta, LLM_ActTensor:$gate,
    LLM_ActTensor:$q_conv, LLM_ActTensor:$k_conv, LLM_ActTensor:$v_conv,
    LLM_F32Tensor:$a_log, LLM_F32Tensor:$dt_bias, LLM_ActTensor:$o_norm,
    LLM_KdaStateType:$state, LLM_ConvStateType:$conv_state,
    LLM_I32Tensor:$positions, LLM_I32Tensor:$seq_starts,
    LLM_I32Tensor:$src_slots, LLM_I32Tensor:$dst_slots,
    Optional<LLM_I32Tensor>:$token_slots,
    I64Attr:$heads, I64Attr:$head_dim, I64Attr:$conv_kernel,
    F32Attr:$gate_lower_bound, F32Attr:$l2_eps, F32Attr:$q_scale,
    F32Attr:$norm_eps, LLM_KdaModeAttr:$mode, I64Attr:$chunk_size);
  let results = (outs LLM_ActTensor:$result,
                      LLM_KdaStateType:$state_out,
                      LLM_ConvStateType:$conv_state_out);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $forget `,` $beta `,` $gate `,` $q_conv `,` $k_conv `,`
    $v_conv `,` $a_log `,` $dt_bias `,` $o_norm `,` $state `,` $conv_state `,`
    $positions `,` $seq_starts `,` $src_slots `,` $dst_slots
    (`,` $token_slots^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_MlaAttentionOp : LLM_Op<"mla_attention", [Pure]> {
  let summary = "absorbed nope multi-head latent attention over selected cached positions";
  let description = [{
    Sparse NoPE MLA in absorbed form. `H = heads`, `dq = qk_head_dim`,
    `dv = v_head_dim`, `R = kv_lora_rank`; `kv_b` rows `[h*(dq+dv), h*(dq+dv)+dq)`
    are `W_UK^h` and the next `dv` rows `W_UV^h`. For each token `t` of
    request `r` and head `h`, in fp32:

        qa   = W_UK^h^T q[t, h]                                   [R]
        s_j  = (qa . c_j) * softmax_scale       j in Sel(t)
        p    = softmax_j(s)
        o[t, h] = W_UV^h (sum_j p_j c_j)                          [dv]

    `c_j` is the latent row of position `j` of request `r` in `cache` (page
    `block_table[r][j / page_size]`, row `j % page_size`, first `R` lanes).
    `Sel(t)` is the first `counts[t]` entries of `selection[t]` (request-
    absolute positions; entries past `counts[t]` are -1 and never read), as
    produced by `llm.kpool_indexer`. K and V share the latent row. The
    current batch's latents must already be written (`llm.latent_cache_write`
    feeds `cache`). `softmax_scale` must be `qk_head_dim^-1/2` (1/16 for
    GLM-5.3-Flash), never derived from a padded width.

    Operands: `q : [T, H, dq]`; `kv_b : [H*(dq+dv), R]` (bf16); `cache :
    !llm.latent_pool` with `width = R`; `selection : [T, S]` i32; `counts :
    [T]` i32; `seq_starts : [N+1]`; `block_table : [N, pages]`. Result `[T,
    H, dv]` (input of o_proj after a reshape).

    ```mlir
    %o = llm.mla_attention %q, %kvb, %cache, %sel, %cnt, %starts, %bt
        {heads = 64 : i64, qk_head_dim = 256 : i64, v_head_dim = 256 : i64,
         kv_lora_rank = 512 : i64, softmax_scale = 6.250000e-02 : f32}
        : (tensor<?x64x256xbf16>, tensor<32768x512xbf16>,
           !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>,
           tensor<?x2176xi32>, tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x64x256xbf16>
    ```
  }];
  let arguments = (ins
    LLM_ActTensor:$q, LLM_AnyWeight:$kv_b, LLM_LatentPoolType:$cache,
    LLM_I32Tensor:$selection, LLM_I32Tensor:$counts,
    LLM_I32Tensor:$seq_starts, LLM_I32Tensor:$block_table,
    I64Attr:$heads, I64Attr:$qk_head_dim, I64Attr:$v_head_dim,
    I64Attr:$kv_lora_rank, F32Attr:$softmax_scale);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = [{
    $q `,` $kv_b `,` $cache `,` $selection `,` $counts `,` $seq_starts `,`
    $block_table attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

} // LLM_AttentionGroup

//===----------------------------------------------------------------------===//
// Indexer
//===----------------------------------------------------------------------===//

let opDocGroup = LLM_IndexerGroup in {

def LLM_KpoolCompressOp : LLM_Op<"kpool_compress", [Pure]> {
  let summary = "pooled index keys by per-dimension softmax over the kpool slots";
  let description = [{
    For every token `t` at position `x` with `x % kpool == kpool - 1` (the
    token that closes pool `p = x / kpool`), in fp32, for every dimension `d`:

        a[s, d] = softmax_s(g[kpool*p + s, d] + ape[s, d])        s < kpool
        pooled[t, d] = sum_s a[s, d] * k[kpool*p + s, d]

    The softmax runs over the slots independently per dimension. Slot tokens
    inside this batch of the request come from `k` / `g`; slot tokens before
    the request's first batch position come from the tail ring
    (`ring[slots[r]]`, row `pos % depth`), so pools that straddle chunks or
    decode steps are finished correctly. Rows of tokens that close no pool
    are zero. Read the ring before `llm.tail_ring_write` updates it.

    Operands: `k, g : [T, W]` (post-LayerNorm index key, pooling gate),
    `ape : [kpool, W]`, `ring : !llm.tail_ring` (width `W`), `positions :
    [T]`, `seq_starts : [N+1]`, `slots : [N]`. Result `[T, W]` f32.

    ```mlir
    %pk = llm.kpool_compress %k, %g, %ape, %ring, %pos, %starts, %slots {kpool = 4 : i64}
        : (tensor<?x128xbf16>, tensor<?x128xbf16>, tensor<4x128xbf16>,
           !llm.tail_ring<depth = 16, width = 128, bf16>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>)
        -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$k, LLM_ActTensor:$g, LLM_ActTensor:$ape,
                       LLM_TailRingType:$ring, LLM_I32Tensor:$positions,
                       LLM_I32Tensor:$seq_starts, LLM_I32Tensor:$slots,
                       I64Attr:$kpool);
  let results = (outs LLM_F32Tensor:$result);
  let assemblyFormat = [{
    $k `,` $g `,` $ape `,` $ring `,` $positions `,` $seq_starts `,` $slots
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_KpoolIndexerOp : LLM_Op<"kpool_indexer", [Pure]> {
  let summary = "top-k token selection over pooled (kpool = 1: per-token) index keys, expanded, with the open tail";
  let description = [{
    The selection of the DSA indexer at pool granularity. For token `t` of
    request `r` at position `x`, `L = x + 1`, visible pools `V = {0 ..
    L/kpool - 1}` (complete pools only), in fp32:

        I[p] = sum_h w[t, h] * relu(q[t, h] . K[p]) * scale        p in V
        S    = top-(min(topk / kpool, |V|)) of I                    (ties arbitrary)
        Sel  = {kpool*p .. kpool*p + kpool - 1 : p in S}  u  {kpool*(L/kpool) .. x}

    `K[p]` is pooled row `p` of the request in `pool` (dequantised; both
    sides Hadamard-rotated for an fp8 pool, which leaves dot products
    unchanged). `scale = (head_dim * heads)^-1/2` folds both constant factors
    of the spec. `selection[t]` lists `Sel` as request-absolute positions,
    the open tail written right after the last pooled entry, then -1
    padding; `counts[t] = |Sel| = min(L/kpool, topk/kpool)*kpool + L % kpool`.
    When `L <= topk` every pool is selected, i.e. `Sel = {0 .. x}`.

    `kpool = 1` is the dense (DeepSeek-V3.2 lightning) indexer: one key per
    token (the `wk` + `k_norm` output, no pooling), `V = {0 .. x}` (the
    token's own key included), the top `min(topk, L)` tokens, no open tail,
    `counts[t] = min(L, topk)`; the pool has `kpool = 1` and selection
    width `S >= topk`.

    Operands: `q : [T, heads, head_dim]` (wq_b output), `w : [T, heads]` f32
    (weights_proj output), `pool : !llm.index_pool` (already holding this
    batch's pools), `positions : [T]`, `seq_starts : [N+1]`, `block_table :
    [N, pages]`. Results: `selection : [T, S]` i32 with `S >= topk + kpool -
    1` (2176 = 2051 rounded up to 128), `counts : [T]` i32.

    ```mlir
    %sel, %cnt = llm.kpool_indexer %iq, %iw, %ipool, %pos, %starts, %bt
        {topk = 2048 : i64, kpool = 4 : i64, heads = 32 : i64, head_dim = 128 : i64,
         scale = 0.015625 : f32}
        : (tensor<?x32x128xbf16>, tensor<?x32xf32>,
           !llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>,
           tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x2176xi32>, tensor<?xi32>)
    ```
  }];
  let arguments = (ins LLM_ActTensor:$q, LLM_F32Tensor:$weights,
                       LLM_IndexPoolType:$pool, LLM_I32Tensor:$positions,
                       LLM_I32Tensor:$seq_starts, LLM_I32Tensor:$block_table,
                       I64Attr:$topk, I64Attr:$kpool, I64Attr:$heads,
                       I64Attr:$head_dim, F32Attr:$scale);
  let results = (outs LLM_I32Tensor:$selection, LLM_I32Tensor:$counts);
  let assemblyFormat = [{
    $q `,` $weights `,` $pool `,` $positions `,` $seq_starts `,` $block_table
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

} // LLM_IndexerGroup

//===----------------------------------------------------------------------===//
// Paged caches
//===----------------------------------------------------------------------===//

let opDocGroup = LLM_CacheGroup in {

def LLM_LatentCacheWriteOp : LLM_Op<"latent_cache_write", [Pure]> {
  let summary = "store the batch's MLA latent rows into the latent page pool";
  let description = [{
    For token `t` of request `r` at position `x`: page
    `block_table[r][x / page_size]`, row `x % page_size` gets `latent[t]`
    (converted to the pool element type; an fp8 pool stores one fp32 scale
    per 128 lanes) followed by `pad` zero lanes. Returns the updated pool.

    Operands: `cache : !llm.latent_pool`, `latent : [T, width]` (c_kv after
    kv_a_layernorm), `positions : [T]`, `seq_starts : [N+1]`, `block_table :
    [N, pages]`.

    ```mlir
    %c1 = llm.latent_cache_write %c0, %ckv, %pos, %starts, %bt
        : (!llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>, tensor<?x512xbf16>,
           tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>
    ```
  }];
  let arguments = (ins LLM_LatentPoolType:$cache, LLM_ActTensor:$latent,
                       LLM_I32Tensor:$positions, LLM_I32Tensor:$seq_starts,
                       LLM_I32Tensor:$block_table);
  let results = (outs LLM_LatentPoolType:$result);
  let assemblyFormat = [{
    $cache `,` $latent `,` $positions `,` $seq_starts `,` $block_table attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_LatentCacheGatherOp : LLM_Op<"latent_cache_gather", [Pure]> {
  let summary = "read latent rows of selected positions from the latent page pool";
  let description = [{
    `y[t, i, :] = row(positions[t, i])` of the request owning token `t`
    (dequantised, pad lanes dropped), or zeros where the entry is -1. Used by
    the expanded (prefill) MLA form and by reference lowerings; absorbed
    kernels read the pool directly in `llm.mla_attention`.

    Operands: `cache`, `ids : [T, S]` i32 request-absolute positions,
    `seq_starts : [N+1]`, `block_table : [N, pages]`. Result `[T, S, width]`.

    ```mlir
    %rows = llm.latent_cache_gather %c, %sel, %starts, %bt
        : (!llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>, tensor<?x2176xi32>,
           tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x2176x512xbf16>
    ```
  }];
  let arguments = (ins LLM_LatentPoolType:$cache, LLM_I32Tensor:$ids,
                       LLM_I32Tensor:$seq_starts, LLM_I32Tensor:$block_table);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = [{
    $cache `,` $ids `,` $seq_starts `,` $block_table attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_IndexCacheWriteOp : LLM_Op<"index_cache_write", [Pure]> {
  let summary = "store the index keys closed by the batch into the index page pool";
  let description = [{
    For every token `t` of request `r` at position `x` with `x % kpool ==
    kpool - 1`, pool `p = x / kpool` is stored at page
    `block_table[r][p / (page_size / kpool)]`, row `p % (page_size / kpool)`:
    `keys[t]` as is for a bf16 pool (rounded to bf16 when `keys` is f32);
    for an f8E4M3FN pool rounded to bf16, rotated by the orthonormal
    128-point Hadamard matrix, rounded to bf16 and quantised with `s =
    2^ceil(log2(max(|v|_inf, 1e-4) / 448))` (one fp32 scale per row). Other
    tokens write nothing. Returns the updated pool. With `kpool = 1` (the
    dense indexer) every token writes its own key at page
    `block_table[r][x / page_size]`, row `x % page_size`.

    Operands: `pool : !llm.index_pool`, `keys : [T, width]`: the pooled
    keys (f32, from `llm.kpool_compress`) or, with `kpool = 1`, the
    per-token keys (the `k_norm` output, bf16 or f32); `positions : [T]`,
    `seq_starts : [N+1]`, `block_table : [N, pages]`.

    ```mlir
    %p1 = llm.index_cache_write %p0, %pk, %pos, %starts, %bt
        : (!llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>, tensor<?x128xf32>,
           tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>
    %d1 = llm.index_cache_write %d0, %k, %pos, %starts, %bt
        : (!llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>, tensor<?x128xbf16>,
           tensor<?xi32>, tensor<?xi32>, tensor<?x?xi32>) -> !llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>
    ```
  }];
  let arguments = (ins LLM_IndexPoolType:$pool, LLM_ActTensor:$keys,
                       LLM_I32Tensor:$positions, LLM_I32Tensor:$seq_starts,
                       LLM_I32Tensor:$block_table);
  let results = (outs LLM_IndexPoolType:$result);
  let assemblyFormat = [{
    $pool `,` $keys `,` $positions `,` $seq_starts `,` $block_table attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_IndexCacheGatherOp : LLM_Op<"index_cache_gather", [Pure]> {
  let summary = "read pooled index rows of selected pools from the index page pool";
  let description = [{
    `y[t, i, :] = row(pool_ids[t, i])` of the request owning token `t`,
    dequantised to f32 (scale applied; an fp8 pool's rows stay in the
    Hadamard-rotated basis), or zeros where the entry is -1. Used by the
    prefill scoring path (gather of a request's complete pools) and by
    reference lowerings.

    Operands: `pool`, `pool_ids : [T, S]` i32 request-local pool indices,
    `seq_starts : [N+1]`, `block_table : [N, pages]`. Result `[T, S, width]`
    f32.

    ```mlir
    %rows = llm.index_cache_gather %p, %ids, %starts, %bt
        : (!llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>, tensor<?x?xi32>,
           tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x?x128xf32>
    ```
  }];
  let arguments = (ins LLM_IndexPoolType:$pool, LLM_I32Tensor:$pool_ids,
                       LLM_I32Tensor:$seq_starts, LLM_I32Tensor:$block_table);
  let results = (outs LLM_F32Tensor:$result);
  let assemblyFormat = [{
    $pool `,` $pool_ids `,` $seq_starts `,` $block_table attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_TailRingWriteOp : LLM_Op<"tail_ring_write", [Pure]> {
  let summary = "stash the batch's raw index keys and gates in the per-request tail ring";
  let description = [{
    For token `t` of request `r` at position `x`, in position order: row
    `x % depth` of slot `slots[r]` gets `k[t]` (plane K) and `g[t]` (plane
    G). When a request has more than `depth` tokens in the batch the ring
    keeps the last `depth`. Returns the updated ring.

    Operands: `ring : !llm.tail_ring`, `k, g : [T, width]`, `positions :
    [T]`, `seq_starts : [N+1]`, `slots : [N]`.

    ```mlir
    %r1 = llm.tail_ring_write %r0, %k, %g, %pos, %starts, %slots
        : (!llm.tail_ring<depth = 16, width = 128, bf16>, tensor<?x128xbf16>, tensor<?x128xbf16>,
           tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) -> !llm.tail_ring<depth = 16, width = 128, bf16>
    ```
  }];
  let arguments = (ins LLM_TailRingType:$ring, LLM_ActTensor:$k,
                       LLM_ActTensor:$g, LLM_I32Tensor:$positions,
                       LLM_I32Tensor:$seq_starts, LLM_I32Tensor:$slots);
  let results = (outs LLM_TailRingType:$result);
  let assemblyFormat = [{
    $ring `,` $k `,` $g `,` $positions `,` $seq_starts `,` $slots attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_SharedSelectionWriteOp
    : LLM_Op<"shared_selection_write", [Pure]> {
  let summary = "keep the last rows' indexer selections of each request for the MTP draft chain";
  let description = [{
    For request `r` with tokens `[seq_starts[r], seq_starts[r + 1])`, the
    selection and count of each of its last `rows` tokens go to slot
    `slots[r]`: token `t` to row `rows - (seq_starts[r + 1] - t)` (the last
    token to row `rows - 1`). Rows of a request with fewer tokens keep what
    they held. Returns the updated cache (`index_share_for_mtp_iteration`:
    the MTP draft's step 0 writes it, the chain reads it with
    `llm.shared_selection_read`).

    Operands: `cache : !llm.shared_selection`, `selection : [T, width]` i32,
    `counts : [T]` i32 (`llm.kpool_indexer`'s results), `seq_starts :
    [N+1]`, `slots : [N]`.

    ```mlir
    %c1 = llm.shared_selection_write %c0, %sel, %counts, %starts, %slots
        : (!llm.shared_selection<rows = 4, width = 2176>, tensor<?x2176xi32>, tensor<?xi32>,
           tensor<?xi32>, tensor<?xi32>) -> !llm.shared_selection<rows = 4, width = 2176>
    ```
  }];
  let arguments = (ins LLM_SharedSelectionType:$cache,
                       LLM_I32Tensor:$selection, LLM_I32Tensor:$counts,
                       LLM_I32Tensor:$seq_starts, LLM_I32Tensor:$slots);
  let results = (outs LLM_SharedSelectionType:$result);
  let assemblyFormat = [{
    $cache `,` $selection `,` $counts `,` $seq_starts `,` $slots attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_SharedSelectionReadOp : LLM_Op<"shared_selection_read", [Pure]> {
  let summary = "the kept selection of each request's chosen row, for every token of the request";
  let description = [{
    Every token `t` of request `r` gets row `rows[r]` of slot `slots[r]`:
    `selection[t] = its width selected positions`, `counts[t] = its count`
    (what `llm.mla_attention` takes from an indexer). A row index outside
    `[0, rows)` reads the last row.

    Operands: `cache : !llm.shared_selection`, `positions : [T]` (the
    tokens, for their number), `seq_starts : [N+1]`, `slots : [N]`, `rows :
    [N]` i32. Results: `selection : [T, width]` i32, `counts : [T]` i32.

    ```mlir
    %sel, %counts = llm.shared_selection_read %c, %pos, %starts, %slots, %rows
        : (!llm.shared_selection<rows = 4, width = 2176>, tensor<?xi32>, tensor<?xi32>, tensor<?xi32>,
           tensor<?xi32>) -> (tensor<?x2176xi32>, tensor<?xi32>)
    ```
  }];
  let arguments = (ins LLM_SharedSelectionType:$cache,
                       LLM_I32Tensor:$positions, LLM_I32Tensor:$seq_starts,
                       LLM_I32Tensor:$slots, LLM_I32Tensor:$rows);
  let results = (outs LLM_I32Tensor:$selection, LLM_I32Tensor:$counts);
  let assemblyFormat = [{
    $cache `,` $positions `,` $seq_starts `,` $slots `,` $rows attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_TailRingGatherOp : LLM_Op<"tail_ring_gather", [Pure]> {
  let summary = "read the tail-ring rows of a set of request slots";
  let description = [{
    `y[n, 0, i, :]` = plane K row `i` and `y[n, 1, i, :]` = plane G row `i`
    of slot `slots[n]`. Used by reference lowerings and by the state copy of
    a forked request.

    Operands: `ring : !llm.tail_ring`, `slots : [N]`. Result `[N, 2, depth,
    width]` with the ring element type.

    ```mlir
    %rows = llm.tail_ring_gather %r, %slots
        : (!llm.tail_ring<depth = 16, width = 128, bf16>, tensor<?xi32>) -> tensor<?x2x16x128xbf16>
    ```
  }];
  let arguments = (ins LLM_TailRingType:$ring, LLM_I32Tensor:$slots);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = "$ring `,` $slots attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

} // LLM_CacheGroup

//===----------------------------------------------------------------------===//
// Feed-forward
//===----------------------------------------------------------------------===//

let opDocGroup = LLM_FfnGroup in {

def LLM_SwigluMlpOp : LLM_Op<"swiglu_mlp", [Pure]> {
  let summary = "dense mlp with clamped swiglu";
  let description = [{
    With `L = swiglu_limit`, fp32 accumulate:

        y = W_down (silu(min(W_gate x, L)) * clamp(W_up x, -L, L))

    (gate clamped from above only, up on both sides, clamp before SiLU; the
    intermediate is rounded to bf16 before `W_down`). `x : [T, D]`, `gate, up
    : [I, D]`, `down : [D, I]`, each a bf16 tensor or `!llm.fp8_weight`.
    Result `[T, D]`.

    With `streams(R, post, comb)` the op ends in mHC's residual write (an
    `llm.mhc_post` of its result, which llm-fuse-hyper-connections folds in):
    the result is `R'[t, j] = round(post[t, j] * y[t] + sum_i comb[t, i, j] *
    R[t, i])`, `[T, H, D]` like `R`, with `post : [T, H]` and `comb : [T, H,
    H]` f32 (the sums of `llm.mhc_post`); `y` keeps its own rounding.

    ```mlir
    %y = llm.swiglu_mlp %x, %wg, %wu, %wd {swiglu_limit = 10.0 : f32}
        : (tensor<?x4096xbf16>, tensor<12288x4096xbf16>, tensor<12288x4096xbf16>, tensor<4096x12288xbf16>)
        -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, LLM_AnyWeight:$gate,
                       LLM_AnyWeight:$up, LLM_AnyWeight:$down,
                       Variadic<AnyRankedTensor>:$streams,
                       F32Attr:$swiglu_limit);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = [{
    $input `,` $gate `,` $up `,` $down (`streams` `(` $streams^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_MoeFfnOp : LLM_Op<"moe_ffn", [Pure]> {
  let summary = "sigmoid-routed mixture of clamped swiglu experts plus a shared expert";
  let description = [{
    Router in fp32, `E = num_experts`:

        s    = sigmoid(W_router x)                         [E]
        I    = top_k of (s + correction_bias)               bias used for selection only
               (with n_group groups: keep the topk_group groups with the
               largest sum of their top-2 biased scores, then top_k inside)
        w_i  = routed_scaling_factor * s_i / (sum_{j in I} s_j + renorm_eps)   (norm_topk_prob)
        w_i  = routed_scaling_factor * s_i                                     (otherwise)
        y    = sum_{i in I} w_i E_i(x) + E_shared(x)

    Each expert `E_i` and the shared expert is the clamped SwiGLU of
    `llm.swiglu_mlp` with `swiglu_limit`. Operands: `x : [T, D]`; `router :
    [E, D]`; `correction_bias : [E]` f32; `gate, up : [E, I, D]`; `down : [E,
    D, I]` (stacked experts, bf16 or `!llm.fp8_weight`); `shared_gate,
    shared_up : [Is, D]`; `shared_down : [D, Is]`. Result `[T, D]`.
    `streams(R, post, comb)`: the residual write of `llm.swiglu_mlp`'s
    `streams`, result `[T, H, D]`.

    Expert-parallel form: with `expert_shard = #llm.shard<group, dim = 0,
    parts = n>` the stacked `gate, up, down` hold the `num_experts / n`
    experts `k * num_experts / n ..` of the rank (`k` its coordinate in
    `group`). Routing still scores all `num_experts` experts (the router is
    whole), but only the rank's experts contribute to `y`, so `y` is a
    partial sum that an `llm.all_reduce` completes; llm-shard-model also
    splits the shared expert's intermediate dimension so that its part is a
    partial sum over the same ranks.

    `fp8_expert_activations` (fp8 experts only, the precision policy of
    llm-quantize-expert-activations): the routed experts' inputs, `x` and
    each slot's SwiGLU activation `a`, are quantised per row and per
    `block_cols`-wide group of their K dimension as the serving engines do
    for block-fp8 GEMMs, and the experts multiply the quantised values:

        s[r, g] = max(amax(v[r, g * bk .. (g + 1) * bk]), 1e-10) / 448
        q[r, c] = e4m3(clamp(v[r, c] / s[r, c / bk], -448, 448))   (nearest even)
        E_i(x)  = W_down (q_a * s_a) with a = SwiGLU(W_gate (q_x * s_x), W_up (q_x * s_x))

    (vLLM's and SGLang's per-token-group quantisation; `bk` is the weights'
    `block_cols`, 128 for GLM-5.3-Flash). The router and the shared expert
    read `x` unquantised.

    ```mlir
    %y = llm.moe_ffn %x, %router, %bias, %eg, %eu, %ed, %sg, %su, %sd
        {num_experts = 288 : i64, top_k = 8 : i64, n_group = 1 : i64, topk_group = 1 : i64,
         norm_topk_prob = true, renorm_eps = 1.0e-20 : f32, routed_scaling_factor = 2.5 : f32,
         swiglu_limit = 10.0 : f32}
        : (tensor<?x4096xbf16>, tensor<288x4096xf32>, tensor<288xf32>,
           tensor<288x2048x4096xbf16>, tensor<288x2048x4096xbf16>, tensor<288x4096x2048xbf16>,
           tensor<2048x4096xbf16>, tensor<2048x4096xbf16>, tensor<4096x2048xbf16>) -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, LLM_AnyWeight:$router,
                       LLM_F32Tensor:$correction_bias,
                       LLM_AnyWeight:$gate, LLM_AnyWeight:$up,
                       LLM_AnyWeight:$down, LLM_AnyWeight:$shared_gate,
                       LLM_AnyWeight:$shared_up, LLM_AnyWeight:$shared_down,
                       Variadic<AnyRankedTensor>:$streams,
                       I64Attr:$num_experts, I64Attr:$top_k, I64Attr:$n_group,
                       I64Attr:$topk_group, BoolAttr:$norm_topk_prob,
                       F32Attr:$renorm_eps, F32Attr:$routed_scaling_factor,
                       F32Attr:$swiglu_limit,
                       OptionalAttr<LLM_ShardAttr>:$expert_shard,
                       UnitAttr:$fp8_expert_activations);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = [{
    $input `,` $router `,` $correction_bias `,` $gate `,` $up `,` $down `,`
    $shared_gate `,` $shared_up `,` $shared_down
    (`streams` `(` $streams^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

} // LLM_FfnGroup

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

let opDocGroup = LLM_CollectiveGroup in {

def LLM_AllReduceOp : LLM_Op<"all_reduce", [Pure]> {
  let summary = "sum of a value over the ranks of a group, optionally written into the mHC streams";
  let description = [{
    `y = sum over the group_size ranks of group of input`, added in fp32
    and rounded to the element type; every rank gets the same bits. The
    order of addition is the communicator's, and for bf16 so are the
    intermediate roundings (NCCL's ring rounds each partial sum that
    travels between ranks to bf16; docs/Parallel.md). The
    input of each rank is a partial sum: a row-parallel projection
    (attention o_proj, an FFN's down projection), a vocabulary-parallel
    embedding or an expert-parallel `llm.moe_ffn`. `input : [T, ...]`,
    result of the same type.

    With `streams(R, post, comb)` the reduction ends in mHC's residual write
    (an `llm.mhc_post` of its result, which llm-fuse-hyper-connections folds
    in): the result is `R'[t, j] = round(post[t, j] * y[t] + sum_i comb[t,
    i, j] * R[t, i])`, `[T, H, D]` like `R`, with `input : [T, D]`, `post :
    [T, H]` and `comb : [T, H, H]` f32; `y` keeps its own rounding.

    All ranks run the same program, so a collective that a rewrite removes
    or merges is removed or merged on every rank alike (the op is `Pure`
    for the graph, like every llm op).

    ```mlir
    %y = llm.all_reduce %p {group = #llm.rank_group<tp>, group_size = 4 : i64}
        : (tensor<?x4096xbf16>) -> tensor<?x4096xbf16>
    %r = llm.all_reduce %p streams(%r0, %post, %comb) {group = #llm.rank_group<tp>, group_size = 4 : i64}
        : (tensor<?x4096xbf16>, tensor<?x4x4096xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>)
        -> tensor<?x4x4096xbf16>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input,
                       Variadic<AnyRankedTensor>:$streams,
                       LLM_RankGroupAttr:$group, I64Attr:$group_size);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = [{
    $input (`streams` `(` $streams^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_AllGatherOp : LLM_Op<"all_gather", [Pure]> {
  let summary = "concatenation of a value of every rank of a group along one dimension";
  let description = [{
    `y = concat(input of rank 0, ..., input of rank group_size - 1)` along
    dimension `dim`, ranks in the order of their coordinate in `group`.
    The result has the input's element type and shape except that `dim` is
    `group_size` times larger. The vocabulary-parallel `llm.lm_head` ends
    in one (`dim = 1`): every rank then holds all logits.

    ```mlir
    %l = llm.all_gather %part {group = #llm.rank_group<tp>, group_size = 4 : i64, dim = 1 : i64}
        : (tensor<?x38720xf32>) -> tensor<?x154880xf32>
    ```
  }];
  let arguments = (ins LLM_ActTensor:$input, LLM_RankGroupAttr:$group,
                       I64Attr:$group_size, I64Attr:$dim);
  let results = (outs LLM_ActTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

} // LLM_CollectiveGroup

#endif // STRATA_DIALECTS_LLM_IR_LLMOPS_TD
