//===- Patterns.h - convert-llm-to-gpu pattern groups -----------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// One populate function per op group lowered to GPU kernels. Each pattern
// builds (or reuses) a gpu.func in the module's `gpu.module
// @strata_kernels` and replaces the op by a gpu.launch_func on memrefs
// bridged with bufferization.to_buffer / to_tensor, like
// convert-llm-to-kernel's calls. An op a pattern cannot tile for the target
// is left alone and later gets its CPU-style kernel.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOGPU_PATTERNS_H
#define STRATA_LIB_CONVERSION_LLMTOGPU_PATTERNS_H

#include "mlir/IR/PatternMatch.h"

#include "lib/Target/TargetInfo.h"

namespace mlir::strata {

/// Name of the gpu.module holding every GPU kernel of a model.
inline constexpr llvm::StringLiteral kGpuKernelModuleName = "strata_kernels";

/// llm.linear with a bf16 x (rank 2) and a bf16 or fp8 block-scaled weight.
void populateLinearToGPUPatterns(const TargetInfo &target,
                                 RewritePatternSet &patterns);

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOGPU_PATTERNS_H
