//===- LLMToGPU.cpp - the convert-llm-to-gpu pass -------------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// Drives the LLMToGPU pattern groups for the TargetInfo of the `chip`
// option. Runs before convert-llm-to-kernel, which lowers every op left.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "lib/Conversion/LLMToGPU/Patterns.h"
#include "lib/Conversion/Passes.h"

#define DEBUG_TYPE "convert-llm-to-gpu"

namespace mlir::strata {
#define GEN_PASS_DEF_CONVERTLLMTOGPUPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

// --convert-llm-to-gpu
struct ConvertLLMToGPUPass
    : mlir::strata::impl::ConvertLLMToGPUPassBase<ConvertLLMToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    std::unique_ptr<TargetInfo> target =
        createGpuTargetInfo(getOperation(), chip);
    if (!target)
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateLinearToGPUPatterns(*target, patterns);
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
  }
};

} // namespace
