//===- LLMAttrs.td - llm dialect attributes ----------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Attributes of the `llm` dialect. Numeric hyperparameters are plain
// builtin attributes on each op (I64Attr, F32Attr); only choices between
// algorithms get an enum here, plus the sharding vocabulary of tensor and
// expert parallelism (`#llm.rank_group`, `#llm.shard`).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMATTRS_TD
#define STRATA_DIALECTS_LLM_IR_LLMATTRS_TD

include "dialects/llm/IR/LLMBase.td"
include "mlir/IR/EnumAttr.td"

def LLM_KdaModeChunked : I32EnumAttrCase<"Chunked", 0, "chunked">;
def LLM_KdaModeRecurrent : I32EnumAttrCase<"Recurrent", 1, "recurrent">;

def LLM_KdaMode : I32EnumAttr<"KdaMode",
    "how llm.kda_attention evaluates the delta-rule recurrence",
    [LLM_KdaModeChunked, LLM_KdaModeRecurrent]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_KdaModeAttr : EnumAttr<LLM_Dialect, LLM_KdaMode, "kda_mode"> {
  let summary = "chunked (prefill, WY form) or recurrent (decode) KDA evaluation";
  let description = [{
    `chunked`: the recurrence is re-associated into chunks of `chunk_size`
    tokens (WY representation), the prefill algorithm. `recurrent`: one token
    at a time, the decode algorithm. Both compute the same function up to
    fp32 rounding.
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Tensor and expert parallelism
//===----------------------------------------------------------------------===//

def LLM_RankGroupTensor : I32EnumAttrCase<"Tensor", 0, "tp">;
def LLM_RankGroupExpert : I32EnumAttrCase<"Expert", 1, "ep">;
def LLM_RankGroupWorld : I32EnumAttrCase<"World", 2, "world">;

def LLM_RankGroup : I32EnumAttr<"RankGroup",
    "a group of ranks of a tensor- and expert-parallel layout",
    [LLM_RankGroupTensor, LLM_RankGroupExpert, LLM_RankGroupWorld]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_RankGroupAttr : EnumAttr<LLM_Dialect, LLM_RankGroup, "rank_group"> {
  let summary = "the ranks a collective or a shard spans";
  let description = [{
    With tensor-parallel size `T` and expert-parallel size `E` there are
    `T * E` ranks; rank `r` has the tensor coordinate `r % T` and the
    expert coordinate `r / T`. `tp`: the `T` ranks of one expert
    coordinate (attention heads, dense MLP, vocabulary); `ep`: the `E`
    ranks of one tensor coordinate (routed experts); `world`: all `T * E`
    ranks, whose coordinate is `r` (the MoE output, the shared expert).
    docs/Parallel.md "Sharding".
  }];
  let assemblyFormat = "`<` $value `>`";
}

def LLM_ShardAttr : LLM_Attr<"Shard", "shard"> {
  let summary = "one dimension of a value split into equal parts over a rank group";
  let description = [{
    The value holds part `k` of `parts` equal parts of dimension `dim` of
    the unsplit value, where `k` is the rank's coordinate in `group`
    (`#llm.rank_group`); its extent along `dim` is the unsplit extent
    divided by `parts`, and part `k` starts at `k * extent`. On
    `llm.weight` / `llm.expert_weights` the shards name the slice of the
    checkpoint tensor each rank reads; the artifact's per-rank manifest
    holds the resulting offsets.

    ```mlir
    #llm.shard<tp, dim = 0, parts = 4>
    ```
  }];
  let parameters = (ins EnumParameter<LLM_RankGroup>:$group, "int64_t":$dim,
                        "int64_t":$parts);
  let assemblyFormat = "`<` $group `,` `dim` `=` $dim `,` `parts` `=` $parts `>`";
  let genVerifyDecl = 1;
}

def LLM_ShardArrayAttr : TypedArrayAttrBase<LLM_ShardAttr,
    "array of #llm.shard">;

#endif // STRATA_DIALECTS_LLM_IR_LLMATTRS_TD
