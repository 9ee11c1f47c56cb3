//===- WeightOps.cpp - checkpoint tensors to memref globals ---------------===//
//
// Part of strata, under the Apache License v2.0.
//
// A bf16/f32 llm.weight or llm.expert_weights becomes `memref.get_global` of
// a global named after the checkpoint tensor (the pattern string for
// stacked experts), of the rank's slice type when sharded; the global then
// carries the shards (kWeightShardsAttrName). The runtime binds these globals from the weight
// manifest; tests define them with initial values. fp8 weights have no
// value of their own: the ops that consume them read the data and scale
// globals directly (getWeightBuffers), and the pass erases them after.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

template <typename OpTy>
struct WeightToGlobal : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto tensorType = dyn_cast<RankedTensorType>(op.getType());
    if (!tensorType)
      return rewriter.notifyMatchFailure(op, "fp8 weights are read by users");
    StringRef name;
    if constexpr (std::is_same_v<OpTy, llm::WeightOp>)
      name = op.getName();
    else
      name = op.getPattern();
    auto module = op->template getParentOfType<ModuleOp>();
    Value global = getWeightGlobal(rewriter, op.getLoc(), module, name,
                                   getKernelMemRefType(tensorType));
    // The rank's slice: the emitter writes the shards into the manifest.
    if (ArrayAttr shards = op.getShardsAttr())
      module.template lookupSymbol<memref::GlobalOp>(name)->setAttr(
          kWeightShardsAttrName, shards);
    rewriter.replaceOp(op, global);
    return success();
  }
};

} // namespace

void mlir::strata::populateWeightToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<WeightToGlobal<llm::WeightOp>,
               WeightToGlobal<llm::ExpertWeightsOp>>(converter,
                                                     patterns.getContext());
}
