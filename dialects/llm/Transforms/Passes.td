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
      `_rows` halves and matmul forms) write the streams.

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

#endif // STRATA_DIALECTS_LLM_TRANSFORMS_PASSES_TD
