//===- UpstreamOps.cpp - upstream tensor compute in a step to kernels -----===//
//
// Part of strata, under the Apache License v2.0.
//
// A step function may hold upstream tensor ops between llm ops (the MTP
// draft's tensor.concat and arith.addf residual). The runtime executes only
// kernel dispatches, so every region-free arith / math / tensor op with
// ranked tensor results (views and constants excepted) is outlined into its
// own kernel: the body wraps the memref arguments in
// bufferization.to_tensor, clones the op and materializes each result in
// its destination argument; one-shot-bufferize then lowers the body.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

bool mlir::strata::isOutlinedUpstreamOp(Operation *op) {
  if (op->getNumRegions() != 0 || op->getNumResults() == 0)
    return false;
  if (!isa<arith::ArithDialect, math::MathDialect, tensor::TensorDialect>(
          op->getDialect()))
    return false;
  if (isa<arith::ConstantOp, tensor::CastOp, tensor::ExpandShapeOp,
          tensor::CollapseShapeOp, tensor::EmptyOp, tensor::DimOp>(op))
    return false;
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func || func->hasAttr(kKernelAttrName))
    return false;
  return llvm::all_of(op->getResultTypes(),
                      [](Type t) { return isa<RankedTensorType>(t); }) &&
         llvm::all_of(op->getOperandTypes(),
                      [](Type t) { return isa<RankedTensorType>(t); });
}

namespace {

struct UpstreamToKernel : ConversionPattern {
  UpstreamToKernel(const TypeConverter &converter, MLIRContext *ctx)
      : ConversionPattern(converter, MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult
  matchAndRewrite(Operation *op, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isOutlinedUpstreamOp(op))
      return failure();
    Location loc = op->getLoc();
    KernelCall call;
    for (Value v : operands)
      call.addInput(v);
    for (Value result : op->getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (!type.isDynamicDim(d))
          continue;
        // The same dynamic extent of an operand of the same rank.
        Value like;
        for (auto [orig, conv] : llvm::zip_equal(op->getOperands(), operands)) {
          auto t = cast<RankedTensorType>(orig.getType());
          if (t.getRank() == type.getRank() && t.isDynamicDim(d)) {
            like = conv;
            break;
          }
        }
        if (!like)
          return rewriter.notifyMatchFailure(op, "unknown dynamic result extent");
        sizes.push_back(memref::DimOp::create(rewriter, loc, like, d));
      }
      call.addResult(getKernelMemRefType(type), sizes);
    }
    unsigned numInputs = operands.size();
    std::string name = op->getName().getStringRef().str();
    std::replace(name.begin(), name.end(), '.', '_');
    auto results = call.emit(rewriter, op, name,
                             [&](KernelBuilder &kb, ValueRange args) {
      OpBuilder &b = kb.builder();
      IRMapping mapping;
      for (auto [orig, arg] :
           llvm::zip_equal(op->getOperands(), args.take_front(numInputs)))
        mapping.map(orig, bufferization::ToTensorOp::create(
                              b, loc, orig.getType(), arg, /*restrict=*/true,
                              /*writable=*/false));
      Operation *clone = b.clone(*op, mapping);
      for (auto [result, out] :
           llvm::zip_equal(clone->getResults(), args.drop_front(numInputs))) {
        auto materialize = bufferization::MaterializeInDestinationOp::create(
            b, loc, result, out);
        materialize.setRestrict(true);
        materialize.setWritable(true);
      }
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::strata::populateUpstreamToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<UpstreamToKernel>(converter, patterns.getContext());
}
