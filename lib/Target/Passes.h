//===- Passes.h - strata target passes --------------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_TARGET_PASSES_H
#define STRATA_LIB_TARGET_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::strata {

#define GEN_PASS_DECL
#include "lib/Target/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lib/Target/Passes.h.inc"

} // namespace mlir::strata

#endif // STRATA_LIB_TARGET_PASSES_H
