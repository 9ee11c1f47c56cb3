//===- InitAll.h - register strata dialects and passes ----------*- C++ -*-===//
//
// Part of strata. One register call per subsystem, used by every tool.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_INITALL_H
#define STRATA_LIB_INITALL_H

#include "mlir/IR/DialectRegistry.h"

#include "dialects/llm/IR/LLMDialect.h"
#include "dialects/llm/Transforms/Passes.h"
#include "lib/Conversion/Passes.h"
#include "lib/Pipelines/Pipelines.h"
#include "lib/Target/Passes.h"

namespace mlir::strata {

/// Adds the dialects strata defines to `registry`.
inline void registerStrataDialects(DialectRegistry &registry) {
  registry.insert<llm::LLMDialect>();
}

/// Registers the passes strata defines (llm transforms, conversions,
/// target passes).
inline void registerStrataPasses() {
  llm::registerLLMPasses();
  registerConversionPasses();
  registerTargetPasses();
  registerStrataPipelines();
}

} // namespace mlir::strata

#endif // STRATA_LIB_INITALL_H
