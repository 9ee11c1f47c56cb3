//===- LLMTypes.h - llm dialect types ---------------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The fp8 block-scaled weight type and the cache types of the `llm` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMTYPES_H
#define STRATA_DIALECTS_LLM_IR_LLMTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "dialects/llm/IR/LLMTypes.h.inc"

#endif // STRATA_DIALECTS_LLM_IR_LLMTYPES_H
