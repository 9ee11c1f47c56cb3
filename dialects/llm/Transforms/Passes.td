//===- Passes.td - llm dialect transforms ------------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Transforms of llm IR that stay in the llm dialect (the `fused` phase).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_TRANSFORMS_PASSES_TD
#define STRATA_DIALECTS_LLM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LLMPromoteActivationsPass : Pass<"llm-promote-activations", "ModuleOp"> {
  let summary = "compute activations and caches in f32 instead of bf16";
  let description = [{
    The precision policy of a compilation, kept out of the model: the DSL
    writes activations and caches in bf16 (what the served model runs);
    this pass rewrites every bf16 element type of an activation value, a
    step-function argument or result and a cache type (latent pool, index
    pool, tail ring, conv state) to f32. Weights (`llm.weight`,
    `llm.expert_weights`) keep their checkpoint type; the kernels widen
    them on load, which is exact. The result is the full-precision mode the
    fp32 goldens are compared in (IREE's `--iree-input-promote-bf16-to-f32`
    does the same for imported programs).

    Before:
    ```mlir
    %w = llm.weight "n.weight" : tensor<64xbf16>
    %y = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32}
        : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
    ```
    After:
    ```mlir
    %w = llm.weight "n.weight" : tensor<64xbf16>
    %y = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32}
        : (tensor<?x64xf32>, tensor<64xbf16>) -> tensor<?x64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def LLMShardModelPass : Pass<"llm-shard-model", "ModuleOp"> {
  let summary = "split the model's work over tensor- and expert-parallel ranks";
  let description = [{
    Rewrites the graph that every one of `T * E` ranks runs
    (`tensor-parallel-size` T, `expert-parallel-size` E; rank `r` has the
    tensor coordinate `r % T` and the expert coordinate `r / T`). One
    program serves every rank: the rank only changes which slice of each
    checkpoint tensor it reads (`shards` on `llm.weight` /
    `llm.expert_weights`, whose offsets the artifact's per-rank manifests
    hold) and which experts and vocabulary rows are its own.

    * KDA and MLA: heads split over the `tp` group. KDA's q/k/v/f_b/g_b/b
      projections, conv taps, A_log and dt_bias and MLA's q_b_proj and
      kv_b_proj take the rank's heads; the recurrent and conv states hold
      them; o_proj reads the rank's input features and an `llm.all_reduce`
      over `tp` sums the partial outputs. MLA's q_a / kv_a projections, the
      latent cache and the kpool indexer (its 32 heads included) stay whole
      on every rank: the indexer's head sum feeds a top-k, so split heads
      would need an all-reduce of every visible pool's score per token.
    * Dense MLP: the intermediate dimension split over `tp`, all-reduce.
    * MoE: routed experts split over the `ep` group (`expert_shard`), each
      expert's intermediate dimension over `tp`, the shared expert's over
      all ranks (`world`); the router stays whole. Every rank holds the
      tokens of the whole batch, so there is no dispatch: one all-reduce
      over `world` combines the partial outputs.
    * Embedding and lm_head: the vocabulary split over `tp`
      (`vocab_shard`; an all-reduce after the lookup, an all-gather of the
      logits).

    The pass runs first in the fused phase, before llm-promote-activations
    and llm-fuse-hyper-connections (which then folds each all-reduce's
    residual write into it). `tensor-parallel-size = expert-parallel-size =
    1` leaves the module untouched. Head counts, the vocabulary and the
    intermediate sizes must divide; fp8 weights must split on 128-blocks or
    inside one block. Errors name the op and the sizes.

    Before (T = 2):
    ```mlir
    %w = llm.weight "l.0.mlp.down_proj.weight" : tensor<256x512xbf16>
    %y = llm.swiglu_mlp %x, %wg, %wu, %w {swiglu_limit = 1.0e+01 : f32} : ...
    ```
    After:
    ```mlir
    %w = llm.weight "l.0.mlp.down_proj.weight" {shards = [#llm.shard<tp, dim = 1, parts = 2>]} : tensor<256x256xbf16>
    %p = llm.swiglu_mlp %x, %wg, %wu, %w {swiglu_limit = 1.0e+01 : f32} : ...
    %y = llm.all_reduce %p {group = #llm.rank_group<tp>, group_size = 2 : i64} : ...
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"tensorParallelSize", "tensor-parallel-size", "int64_t",
           /*default=*/"1", "ranks that split attention heads, the dense "
           "MLP, every expert's and the shared expert's intermediate "
           "dimension, and the vocabulary">,
    Option<"expertParallelSize", "expert-parallel-size", "int64_t",
           /*default=*/"1", "ranks that split the routed experts">,
  ];
}

def LLMFuseHyperConnectionsPass
    : Pass<"llm-fuse-hyper-connections", "ModuleOp"> {
  let summary = "fuse mHC pre and post with the sub-layer's norm and output projection";
  let description = [{
    Every sub-layer of an mHC model sits between `llm.mhc_pre` (collapse of
    the residual streams), an input RMSNorm and, at its end, an output
    projection (`llm.linear`) whose result only `llm.mhc_post` reads. This
    pass folds the two ends into the mHC ops, so each becomes one kernel:

    * `llm.rms_norm(x, w)` of an `llm.mhc_pre` result `x` used nowhere else
      becomes the `x_norm(w)` form of the `llm.mhc_pre` (the collapse and
      the norm of a token in one kernel; the norm's output feeds several
      projections, so it is computed once rather than in each of their
      prologues);
    * `llm.mhc_post(llm.linear(o, W), R, post, comb)` with the linear's
      result used only there (an attention sub-layer's o_proj) becomes
      `llm.mhc_post(o, R, post, comb) projection(W)`: GPU targets run it as
      the projection's matmul kernel with the residual write as its
      epilogue;
    * `llm.mhc_post(ffn, R, post, comb)` of an `llm.swiglu_mlp` or
      `llm.moe_ffn` result used only there becomes the FFN op's `streams(R,
      post, comb)` form: its last kernels (swiglu_down, moe_shared_down, their
      `_rows` halves and matmul forms) write the streams;
    * `llm.mhc_post(llm.all_reduce(p), R, post, comb)` (a tensor-parallel
      sub-layer's output, llm-shard-model) becomes the all-reduce's
      `streams(R, post, comb)` form: the reduction ends in the residual
      write.

    Both forms keep every rounding point of the unfused ops, so a CPU
    artifact computes bit-identical logits with and without the pass
    (`strata-compile --fuse-hyper-connections=false`).

    Before:
    ```mlir
    %x, %post, %comb = llm.mhc_pre %r, %fn, %base, %scale {...}
    %xn = llm.rms_norm %x weight(%w) {eps = 1.0e-05 : f32}
    %o = ...
    %y = llm.linear %o, %wo
    %r2 = llm.mhc_post %y, %r, %post, %comb {hc_mult = 4 : i64}
    ```
    After:
    ```mlir
    %xn, %post, %comb = llm.mhc_pre %r, %fn, %base, %scale x_norm(%w) {..., x_norm_eps = 1.0e-05 : f32}
    %o = ...
    %r2 = llm.mhc_post %o, %r, %post, %comb projection(%wo) {hc_mult = 4 : i64}
    ```
  }];
}

def LLMQuantizeExpertActivationsPass
    : Pass<"llm-quantize-expert-activations", "ModuleOp"> {
  let summary = "the routed experts multiply fp8 activations (per-token-group quantisation)";
  let description = [{
    A precision policy, kept out of the model like llm-promote-activations:
    sets `fp8_expert_activations` on every `llm.moe_ffn`, whose routed
    experts then quantise their inputs (`x` and the SwiGLU activation) per
    row and 128-wide K group to e4m3 with an fp32 scale, as vLLM and SGLang
    run block-fp8 experts. The GPU kernels multiply fp8 by fp8 on the matrix
    units (the weights' bytes as stored, no decode); docs/GPULowering.md
    "fp8 expert activations" gives the accuracy effect. Fails, naming the
    op, when a `llm.moe_ffn`'s experts are not fp8 block-scaled weights.

    Before / after:
    ```mlir
    %y = llm.moe_ffn %x, ... {num_experts = 288 : i64, ...} : ...
    %y = llm.moe_ffn %x, ... {fp8_expert_activations, num_experts = 288 : i64, ...} : ...
    ```
  }];
}

#endif // STRATA_DIALECTS_LLM_TRANSFORMS_PASSES_TD
