//===- LLMBase.td - llm dialect definition -----------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The `llm` dialect and the base classes of its ops, types and attributes.
// Types live in LLMTypes.td, attributes in LLMAttrs.td, ops in LLMOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMBASE_TD
#define STRATA_DIALECTS_LLM_IR_LLMBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def LLM_Dialect : Dialect {
  let name = "llm";
  let cppNamespace = "::mlir::strata::llm";
  let summary = "graph-level ops for hybrid KDA/MLA language models";
  let description = [{
    The `llm` dialect expresses the GLM-5.3-Flash target model and its MTP
    draft at graph level: checkpoint weights (bf16 and fp8 128x128
    block-scaled), embeddings, norms, linears, mHC residual-stream mixing,
    Kimi Delta Attention, NoPE MLA over a selected token set, the pooled
    (kpool) sparse-attention indexer, paged cache reads and writes, the MoE
    FFN and the LM head.

    Conventions shared by every op:

    * Activations are ranked tensors whose leading dimension is the packed
      token count `T` of the batch (dynamic, `?`); requests are laid out one
      after the other. Every hyperparameter is an explicit attribute; ops
      never read a model config.
    * Weights use the checkpoint (PyTorch) layout `[out, in]`; a linear
      computes `y = x W^T`.
    * All reductions and matmuls accumulate in fp32; results are rounded once
      to the result element type.
    * Batch metadata operands are `i32` tensors with one meaning throughout:
      `positions : tensor<?xi32>` (request-absolute position of each token),
      `seq_starts : tensor<?xi32>` (`N + 1` cumulative token offsets of the
      `N` requests, `seq_starts[0] = 0`, `seq_starts[N] = T`), `slots :
      tensor<?xi32>` (per-request state slot of the recurrent caches and the
      tail ring) and `block_table : tensor<?x?xi32>` (per-request page ids of
      the paged caches, `[N, max_pages]`).
    * Caches are SSA values of the cache types (`!llm.latent_pool`, ...).
      An op that writes a cache returns the updated cache value; the graph
      threads cache values explicitly, so write-before-read order is a data
      dependence (see docs/Dialects/RationaleLLM.md).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // `llm.kernel` and `llm.gpu_strategy` on kernel functions (LLMAttrs.cpp).
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Registers the types of LLMTypes.td (defined in LLMTypes.cpp, where
    /// the type storage classes are complete).
    void registerTypes();
    /// Registers the attributes of LLMAttrs.td (defined in LLMAttrs.cpp,
    /// where the attribute storage classes are complete).
    void registerAttributes();
  }];
}

class LLM_Op<string mnemonic, list<Trait> traits = []>
    : Op<LLM_Dialect, mnemonic, traits>;

class LLM_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<LLM_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

class LLM_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<LLM_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // STRATA_DIALECTS_LLM_IR_LLMBASE_TD
