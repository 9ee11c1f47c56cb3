//===- LinearOps.cpp - llm.linear to a GPU matmul kernel ------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.linear (x : [M, K] bf16, W : [N, K] bf16 or !llm.fp8_weight with
// 128x128 block scales, y : [M, N] bf16 or f32) becomes a launch of the
// tiled matmul kernel of MatmulTiling.h: grid (ceil(M / tileM), N / tileN,
// 1), block (threads, 1, 1). Ranks other than 2, f32 inputs or weights and
// shapes that do not tile are left to convert-llm-to-kernel.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/FormatVariadic.h"

#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"
#include "lib/Conversion/LLMToGPU/Patterns.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"

using namespace mlir;
using namespace mlir::strata;

/// The module's gpu.module @strata_kernels, created (and the module marked
/// gpu.container_module) on first use.
static gpu::GPUModuleOp getKernelModule(RewriterBase &rewriter,
                                        Operation *anchor) {
  auto module = anchor->getParentOfType<ModuleOp>();
  if (auto existing =
          module.lookupSymbol<gpu::GPUModuleOp>(kGpuKernelModuleName))
    return existing;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  rewriter.getUnitAttr());
  return gpu::GPUModuleOp::create(rewriter, anchor->getLoc(),
                                  kGpuKernelModuleName);
}

namespace {

struct LinearToGPU : OpRewritePattern<llm::LinearOp> {
  LinearToGPU(MLIRContext *ctx, const TargetInfo &target)
      : OpRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(llm::LinearOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto xType = cast<RankedTensorType>(op.getInput().getType());
    auto yType = cast<RankedTensorType>(op.getType());
    if (xType.getRank() != 2 || !xType.getElementType().isBF16())
      return rewriter.notifyMatchFailure(op, "expected a rank-2 bf16 input");
    Type weightType = op.getWeight().getType();
    auto fp8 = dyn_cast<llm::Fp8WeightType>(weightType);
    MatmulProblem problem;
    problem.n = yType.getDimSize(1);
    problem.k = xType.getDimSize(1);
    MatmulTypes types;
    types.x = xType.getElementType();
    types.y = yType.getElementType();
    if (fp8) {
      if (fp8.getWeight().getRank() != 2)
        return rewriter.notifyMatchFailure(op, "expected a 2-D fp8 weight");
      problem.fp8Weight = true;
      problem.scaleBlockN = fp8.getBlockRows();
      problem.scaleBlockK = fp8.getBlockCols();
      types.weight = fp8.getWeight().getElementType();
    } else {
      types.weight = cast<RankedTensorType>(weightType).getElementType();
      if (!types.weight.isBF16())
        return rewriter.notifyMatchFailure(op, "expected a bf16 weight");
    }
    std::string why;
    FailureOr<MatmulTiling> tiling =
        chooseMatmulTiling(target, problem, why);
    if (failed(tiling))
      return rewriter.notifyMatchFailure(op, why);

    // Operands as memrefs.
    SmallVector<Value> operands;
    auto xMemref = MemRefType::get(xType.getShape(), types.x);
    operands.push_back(bufferization::ToBufferOp::create(
        rewriter, loc, xMemref, op.getInput(), /*readOnly=*/true));
    if (fp8) {
      FailureOr<SmallVector<Value>> buffers =
          getWeightBuffers(rewriter, loc, op.getWeight(), op.getWeight());
      if (failed(buffers))
        return rewriter.notifyMatchFailure(
            op, "fp8 weight does not come from llm.weight");
      operands.append(*buffers);
    } else {
      auto wType = cast<RankedTensorType>(weightType);
      operands.push_back(bufferization::ToBufferOp::create(
          rewriter, loc, MemRefType::get(wType.getShape(), types.weight),
          op.getWeight(), /*readOnly=*/true));
    }
    Value rows = memref::DimOp::create(rewriter, loc, operands[0], 0);
    auto yMemref = MemRefType::get(yType.getShape(), types.y);
    Value y = memref::AllocOp::create(rewriter, loc, yMemref, ValueRange{rows});
    operands.push_back(y);

    std::string name = llvm::formatv(
        "linear_{0}_{1}x{2}_{3}", fp8 ? "fp8" : "bf16", problem.n, problem.k,
        types.y.isF32() ? "f32" : "bf16");
    gpu::GPUModuleOp module = getKernelModule(rewriter, op);
    gpu::GPUFuncOp kernel = buildMatmulKernel(rewriter, loc, module, name,
                                              *tiling, problem, types);

    auto idx = [&](int64_t v) {
      return arith::ConstantIndexOp::create(rewriter, loc, v).getResult();
    };
    Value gridX = arith::DivUIOp::create(
        rewriter, loc,
        arith::AddIOp::create(rewriter, loc, rows, idx(tiling->tileM() - 1)),
        idx(tiling->tileM()));
    gpu::KernelDim3 grid{gridX, idx(problem.n / tiling->tileN()), idx(1)};
    gpu::KernelDim3 block{idx(tiling->threads()), idx(1), idx(1)};
    gpu::LaunchFuncOp::create(rewriter, loc, kernel, grid, block,
                              /*dynamicSharedMemorySize=*/Value(), operands);
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, yType, y, /*restrict=*/true,
                               /*writable=*/true));
    return success();
  }

  const TargetInfo &target;
};

} // namespace

void mlir::strata::populateLinearToGPUPatterns(const TargetInfo &target,
                                               RewritePatternSet &patterns) {
  patterns.add<LinearToGPU>(patterns.getContext(), target);
}
