//===- LLMOps.td - llm dialect ops -------------------------*- tablegen -*-===//
//
// Part of strata. Op definitions of the `llm` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMOPS_TD
#define STRATA_DIALECTS_LLM_IR_LLMOPS_TD

include "dialects/llm/IR/LLMBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def LLM_RmsNormOp : LLM_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square normalization over the last dimension";
  let description = [{
    `y = x * rsqrt(mean(x^2) + eps) * weight`, computed in fp32.

    ```mlir
    %y = llm.rms_norm %x, %w {eps = 1.0e-05 : f32} : (tensor<?x4096xbf16>, tensor<4096xbf16>) -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight, F32Attr:$eps);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
}

#endif // STRATA_DIALECTS_LLM_IR_LLMOPS_TD
