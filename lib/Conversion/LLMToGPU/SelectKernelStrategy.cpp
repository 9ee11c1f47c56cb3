//===- SelectKernelStrategy.cpp - the select-kernel-strategy pass ---------===//
//
// Part of strata, under the Apache License v2.0.
//
// Marks every llm.kernel function with the builder a GPU target makes its
// kernel with (kGpuStrategyAttrName, a #llm.gpu_strategy): a matrix-unit
// builder of LinearOps.cpp that accepts the function (tried once in a
// scratch module; the builders read the arguments by their #llm.kernel
// roles), else the generic rows; `_rows` twins of matrix kernels that take
// every step size are marked empty. With `remarks`, a remark for every kernel
// that falls back: to the generic kernel, or to unstaged row tiles in large
// steps. compileGpuKernels (lib/Driver) runs it and builds each kernel by its
// mark; strata-opt runs it alone for the IR-level tests.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "lib/Conversion/LLMToGPU/LinearKernel.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/Passes.h"
#include "lib/Target/TargetInfo.h"

namespace mlir::strata {
#define GEN_PASS_DEF_SELECTKERNELSTRATEGYPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

std::optional<llm::GpuStrategy>
mlir::strata::matrixStrategyOf(func::FuncOp kernel) {
  using llm::GpuStrategy;
  if (isGroupedExpertKernelFunction(kernel))
    return GpuStrategy::GroupedExperts;
  if (isDenseMatmulKernelFunction(kernel))
    return GpuStrategy::DenseMatmul;
  if (isMlaAttendKernelFunction(kernel))
    return GpuStrategy::MlaAttend;
  if (isMlaCombineKernelFunction(kernel))
    return GpuStrategy::MlaCombine;
  if (isMoeSelectKernelFunction(kernel))
    return GpuStrategy::MoeSelect;
  if (isMoeGroupKernelFunction(kernel))
    return GpuStrategy::MoeGroup;
  if (isKdaChunkKernelFunction(kernel))
    return GpuStrategy::KdaChunk;
  if (isKdaCoefficientsKernelFunction(kernel))
    return GpuStrategy::KdaCoefficients;
  if (isKdaDecodeKernelFunction(kernel))
    return GpuStrategy::KdaDecode;
  if (isKdaPrepareKernelFunction(kernel))
    return GpuStrategy::KdaPrepare;
  if (isKdaOutputKernelFunction(kernel))
    return GpuStrategy::KdaOutput;
  if (isGroupQuantizeKernelFunction(kernel))
    return GpuStrategy::GroupQuantize;
  if (isKpoolScoresKernelFunction(kernel))
    return GpuStrategy::KpoolScores;
  if (isKpoolSelectKernelFunction(kernel))
    return GpuStrategy::KpoolSelect;
  if (isMhcMixKernelFunction(kernel))
    return GpuStrategy::MhcMix;
  if (isMhcPreKernelFunction(kernel))
    return GpuStrategy::MhcPre;
  if (isLinearKernelFunction(kernel))
    return GpuStrategy::TiledMatmul;
  return std::nullopt;
}

namespace {

// --select-kernel-strategy
struct SelectKernelStrategyPass
    : mlir::strata::impl::SelectKernelStrategyPassBase<
          SelectKernelStrategyPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::unique_ptr<TargetInfo> target = createGpuTargetInfo(module, chip);
    if (!target)
      return signalPassFailure();
    // The builders' trial runs go into a scratch module, dropped at the end.
    OwningOpRef<ModuleOp> scratch = ModuleOp::create(module.getLoc());
    OpBuilder builder(&getContext());
    builder.setInsertionPointToEnd(scratch->getBody());
    auto gpuModule =
        gpu::GPUModuleOp::create(builder, module.getLoc(), "strata_trial");
    SmallVector<std::pair<std::string, std::string>> twins;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func->hasAttr(kKernelAttrName))
        continue;
      llm::GpuStrategy strategy = llm::GpuStrategy::Generic;
      std::optional<llm::GpuStrategy> matrix = matrixStrategyOf(func);
      if (matrix && llvm::is_contained(genericStrategies,
                                       llm::stringifyGpuStrategy(*matrix))) {
        if (remarks)
          func.emitRemark() << chip << ": kernel '" << func.getSymName()
                            << "' keeps the generic kernel: strategy '"
                            << llm::stringifyGpuStrategy(*matrix)
                            << "' is in generic-strategies";
        matrix.reset();
      }
      if (matrix) {
        strategy = *matrix;
        std::string why;
        FailureOr<MatmulKernelFunction> built = buildKernelByStrategy(
            strategy, builder, gpuModule, func, *target, why);
        if (succeeded(built)) {
          if (!built->rowsTwin.empty())
            twins.push_back({built->rowsTwin, func.getSymName().str()});
          if (auto why =
                  built->func->getAttrOfType<StringAttr>(kUnstagedAttrName);
              why && remarks)
            func.emitRemark()
                << chip << ": kernel '" << func.getSymName()
                << "' keeps unstaged row tiles: " << why.getValue();
        } else {
          if (remarks)
            func.emitRemark() << chip << ": kernel '" << func.getSymName()
                              << "' keeps the generic kernel: " << why;
          strategy = llm::GpuStrategy::Generic;
        }
      }
      func->setAttr(kGpuStrategyAttrName,
                    llm::GpuStrategyAttr::get(&getContext(), strategy));
    }
    for (const auto &[twin, matrix] : twins) {
      auto func = module.lookupSymbol<func::FuncOp>(twin);
      if (!func)
        continue;
      func->setAttr(kGpuStrategyAttrName,
                    llm::GpuStrategyAttr::get(&getContext(),
                                              llm::GpuStrategy::EmptyTwin));
      if (remarks)
        func.emitRemark() << chip << ": kernel '" << twin << "' is empty: '"
                          << matrix << "' takes every step size";
    }
  }
};

} // namespace
