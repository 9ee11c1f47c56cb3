//===- LLMDialect.cpp - llm dialect registration ----------------*- C++ -*-===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMDialect.h"
#include "dialects/llm/IR/LLMOps.h"

using namespace mlir;
using namespace mlir::strata::llm;

#include "dialects/llm/IR/LLMDialect.cpp.inc"

void LLMDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/llm/IR/LLMOps.cpp.inc"
      >();
}
