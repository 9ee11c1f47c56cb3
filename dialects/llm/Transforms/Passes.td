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

#endif // STRATA_DIALECTS_LLM_TRANSFORMS_PASSES_TD
