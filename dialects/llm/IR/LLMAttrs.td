//===- LLMAttrs.td - llm dialect attributes ----------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Enum attributes of the `llm` dialect. Numeric hyperparameters are plain
// builtin attributes on each op (I64Attr, F32Attr); only choices between
// algorithms get an enum here.
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

#endif // STRATA_DIALECTS_LLM_IR_LLMATTRS_TD
