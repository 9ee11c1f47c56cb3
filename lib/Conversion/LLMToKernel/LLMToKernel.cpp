//===- LLMToKernel.cpp - the convert-llm-to-kernel pass -------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// Assembles the op-group patterns of Patterns.h into one partial conversion:
// every llm op becomes a call of an outlined kernel over memrefs; function
// signatures carrying llm cache types are converted to their memref form.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Transforms/DialectConversion.h"

#include "dialects/llm/IR/LLMDialect.h"
#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/KernelPlan.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"
#include "lib/Conversion/Passes.h"

#define DEBUG_TYPE "convert-llm-to-kernel"

namespace mlir::strata {
#define GEN_PASS_DEF_CONVERTLLMTOKERNELPASS
#define GEN_PASS_DEF_PRINTKERNELPLANPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

void mlir::strata::populateLLMToKernelPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  populateWeightToKernelPatterns(converter, patterns);
  populateElementwiseToKernelPatterns(converter, patterns);
  populateLinearToKernelPatterns(converter, patterns);
  populateArgmaxToKernelPatterns(converter, patterns);
  populateHyperConnectionToKernelPatterns(converter, patterns);
  populateFfnToKernelPatterns(converter, patterns);
  populateKdaToKernelPatterns(converter, patterns);
  populateMlaToKernelPatterns(converter, patterns);
  populateIndexerToKernelPatterns(converter, patterns);
  populateCacheToKernelPatterns(converter, patterns);
  populateCollectiveToKernelPatterns(converter, patterns);
  populateUpstreamToKernelPatterns(converter, patterns);
}

//===----------------------------------------------------------------------===//
// --convert-llm-to-kernel
//===----------------------------------------------------------------------===//

namespace {

/// True for the llm types that have no tensor form (caches).
static bool isCacheType(Type type) {
  return isa<llm::LatentPoolType, llm::IndexPoolType, llm::TailRingType,
             llm::KdaStateType, llm::ConvStateType,
             llm::SharedSelectionType>(type);
}

struct ConvertLLMToKernelPass
    : mlir::strata::impl::ConvertLLMToKernelPassBase<ConvertLLMToKernelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    TypeConverter kernelConverter;
    populateKernelTypeConversions(kernelConverter);

    // Signatures: caches become memrefs, tensors stay for one-shot-bufferize.
    TypeConverter signatureConverter;
    signatureConverter.addConversion([](Type type) { return type; });
    signatureConverter.addConversion([](Type type) -> std::optional<Type> {
      if (isCacheType(type))
        return getKernelMemRefType(type);
      return std::nullopt;
    });

    // Step arguments keep their llm cache type for the plan (KernelPlan.h).
    for (auto func : module.getOps<func::FuncOp>())
      for (BlockArgument arg : func.getArguments())
        if (isCacheType(arg.getType()))
          func.setArgAttr(arg.getArgNumber(), kCacheTypeAttrName,
                          TypeAttr::get(arg.getType()));

    RewritePatternSet patterns(ctx);
    populateLLMToKernelPatterns(kernelConverter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(
        patterns, signatureConverter);
    populateCallOpTypeConversionPattern(patterns, signatureConverter);
    populateReturnOpTypeConversionPattern(patterns, signatureConverter);

    ConversionTarget target(*ctx);
    target.markUnknownOpDynamicallyLegal(
        [](Operation *op) { return !isOutlinedUpstreamOp(op); });
    target.addIllegalDialect<llm::LLMDialect>();
    // fp8 weights are read through by their users and erased below.
    target.addDynamicallyLegalOp<llm::WeightOp, llm::ExpertWeightsOp>(
        [](Operation *op) {
          return isa<llm::Fp8WeightType>(op->getResult(0).getType());
        });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
      return signatureConverter.isSignatureLegal(func.getFunctionType()) &&
             signatureConverter.isLegal(&func.getBody());
    });
    target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return signatureConverter.isLegal(op); });

    // The conversion reports each op it cannot lower ("failed to legalize").
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // fp8 weights left without users.
    SmallVector<Operation *> dead;
    module.walk([&](Operation *op) {
      if (isa<llm::WeightOp, llm::ExpertWeightsOp>(op) && op->use_empty())
        dead.push_back(op);
    });
    for (Operation *op : dead)
      op->erase();
    WalkResult left = module.walk([](Operation *op) {
      if (isa<llm::WeightOp, llm::ExpertWeightsOp>(op)) {
        op->emitOpError("fp8 weight is used by an op without a kernel");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// --strata-print-kernel-plan
//===----------------------------------------------------------------------===//

namespace {

struct PrintKernelPlanPass
    : mlir::strata::impl::PrintKernelPlanPassBase<PrintKernelPlanPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || func->hasAttr(kKernelAttrName))
        continue;
      FailureOr<KernelPlan> plan = extractKernelPlan(func);
      if (failed(plan))
        return signalPassFailure();
      llvm::outs() << "plan @" << func.getSymName() << "\n";
      plan->print(llvm::outs());
    }
  }
};

} // namespace
