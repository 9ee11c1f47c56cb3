//===- Passes.h - strata conversion passes ----------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Declarations and registration of the passes of lib/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_PASSES_H
#define STRATA_LIB_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

#include "dialects/llm/IR/LLMDialect.h"

namespace mlir::strata {

#define GEN_PASS_DECL
#include "lib/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Conversion/Passes.h.inc"

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_PASSES_H
