//===- LLMBase.td - llm dialect definition -----------------*- tablegen -*-===//
//
// Part of strata. The `llm` dialect: graph-level ops of GLM-5.3-Flash.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMBASE_TD
#define STRATA_DIALECTS_LLM_IR_LLMBASE_TD

include "mlir/IR/OpBase.td"

def LLM_Dialect : Dialect {
  let name = "llm";
  let cppNamespace = "::mlir::strata::llm";
  let summary = "graph-level ops for hybrid KDA/MLA language models";
  let description = [{
    The `llm` dialect expresses the GLM-5.3-Flash target model and its MTP
    draft at graph level: embeddings, norms, linears (bf16 and fp8
    block-scaled), mHC residual mixing, Kimi Delta Attention, NoPE MLA over a
    selected token set, the pooled (kpool) sparse-attention indexer, paged
    cache reads and writes, the MoE FFN and the LM head.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

class LLM_Op<string mnemonic, list<Trait> traits = []>
    : Op<LLM_Dialect, mnemonic, traits>;

#endif // STRATA_DIALECTS_LLM_IR_LLMBASE_TD
