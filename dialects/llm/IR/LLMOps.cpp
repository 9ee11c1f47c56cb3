//===- LLMOps.cpp - llm dialect op verifiers and builders -------*- C++ -*-===//
//
// Part of strata.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::strata::llm;

#define GET_OP_CLASSES
#include "dialects/llm/IR/LLMOps.cpp.inc"
