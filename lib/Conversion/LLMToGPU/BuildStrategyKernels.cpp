//===- BuildStrategyKernels.cpp - the build-strategy-kernels pass ---------===//
//
// Part of strata, under the Apache License v2.0.
//
// Builds every llm.kernel function marked by select-kernel-strategy with a
// matrix-unit or SIMT strategy as a gpu.func of the same name and arguments
// (buildKernelByStrategy: one builder per strategy), recording the grid the
// builder chose on it (LaunchGridAttr.h; the builders tag their matrix
// instruction as strata.mma); empties
// the `_rows` twins marked empty_twin and leaves the generic functions to
// convert-kernels-to-gpu. compileGpuKernels (lib/Driver) runs it; strata-opt
// runs it alone for the IR-level tests of each strategy.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "lib/Conversion/LLMToGPU/LaunchGridAttr.h"
#include "lib/Conversion/LLMToGPU/LinearKernel.h"
#include "lib/Conversion/LLMToGPU/Patterns.h"
#include "lib/Conversion/Passes.h"
#include "lib/Target/TargetInfo.h"

namespace mlir::strata {
#define GEN_PASS_DEF_BUILDSTRATEGYKERNELSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The module's `strata_kernels` gpu.module, created (and the module marked
/// a container) on first use.
gpu::GPUModuleOp getOrCreateKernelModule(ModuleOp module) {
  if (auto existing =
          module.lookupSymbol<gpu::GPUModuleOp>(kGpuKernelModuleName))
    return existing;
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule =
      gpu::GPUModuleOp::create(b, module.getLoc(), kGpuKernelModuleName);
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  return gpuModule;
}

/// Replaces `func`'s body by a bare return.
void emptyBody(func::FuncOp func) {
  Block &body = func.getBody().front();
  body.clear();
  OpBuilder b(func.getContext());
  b.setInsertionPointToEnd(&body);
  func::ReturnOp::create(b, func.getLoc());
}

// --build-strategy-kernels
struct BuildStrategyKernelsPass
    : mlir::strata::impl::BuildStrategyKernelsPassBase<
          BuildStrategyKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::unique_ptr<TargetInfo> target = createGpuTargetInfo(module, chip);
    if (!target)
      return signalPassFailure();
    for (auto func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      auto strategy =
          func->getAttrOfType<llm::GpuStrategyAttr>(kGpuStrategyAttrName);
      if (!strategy || strategy.getValue() == llm::GpuStrategy::Generic)
        continue;
      if (strategy.getValue() == llm::GpuStrategy::EmptyTwin) {
        emptyBody(func);
        continue;
      }
      OpBuilder b(&getContext());
      std::string why;
      FailureOr<MatmulKernelFunction> built = buildKernelByStrategy(
          strategy.getValue(), b, getOrCreateKernelModule(module), func,
          *target, why);
      if (failed(built)) {
        func.emitError() << chip << ": the "
                         << llm::stringifyGpuStrategy(strategy.getValue())
                         << " builder accepted kernel '" << func.getSymName()
                         << "' once, then: " << why;
        return signalPassFailure();
      }
      built->func->setAttr(kMatrixGridAttrName, encodeGrid(b, built->grid));
      func.erase();
    }
  }
};

} // namespace
