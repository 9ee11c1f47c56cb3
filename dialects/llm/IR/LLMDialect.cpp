//===- LLMDialect.cpp - llm dialect registration ----------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Registers the ops, types and attributes of the `llm` dialect.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMDialect.h"
#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::strata::llm;

#include "dialects/llm/IR/LLMDialect.cpp.inc"
#include "dialects/llm/IR/LLMEnums.cpp.inc"

void LLMDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/llm/IR/LLMOps.cpp.inc"
      >();
  registerTypes();
  registerAttributes();
}
