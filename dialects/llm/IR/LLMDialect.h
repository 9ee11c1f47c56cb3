//===- LLMDialect.h - llm dialect declaration -------------------*- C++ -*-===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMDIALECT_H
#define STRATA_DIALECTS_LLM_IR_LLMDIALECT_H

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dialects/llm/IR/LLMDialect.h.inc"

#endif // STRATA_DIALECTS_LLM_IR_LLMDIALECT_H
