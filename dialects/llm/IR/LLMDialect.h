//===- LLMDialect.h - llm dialect declaration -------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Declares the `llm` dialect class and its enum attributes. Types are in
// LLMTypes.h, ops in LLMOps.h.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMDIALECT_H
#define STRATA_DIALECTS_LLM_IR_LLMDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dialects/llm/IR/LLMDialect.h.inc"
#include "dialects/llm/IR/LLMEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/llm/IR/LLMAttrs.h.inc"

#endif // STRATA_DIALECTS_LLM_IR_LLMDIALECT_H
