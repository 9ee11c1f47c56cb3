//===- Passes.h - llm dialect transforms ------------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_TRANSFORMS_PASSES_H
#define STRATA_DIALECTS_LLM_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::strata::llm {

#define GEN_PASS_DECL
#include "dialects/llm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/llm/Transforms/Passes.h.inc"

} // namespace mlir::strata::llm

#endif // STRATA_DIALECTS_LLM_TRANSFORMS_PASSES_H
