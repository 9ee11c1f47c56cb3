//===- LLMOps.h - llm dialect ops -------------------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The ops of the `llm` dialect (definitions in LLMOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMOPS_H
#define STRATA_DIALECTS_LLM_IR_LLMOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/llm/IR/LLMDialect.h"
#include "dialects/llm/IR/LLMTypes.h"

#define GET_OP_CLASSES
#include "dialects/llm/IR/LLMOps.h.inc"

#endif // STRATA_DIALECTS_LLM_IR_LLMOPS_H
