//===- PromoteActivations.cpp - bf16 activations and caches to f32 --------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm-promote-activations: see Passes.td. Every type outside the weights is
// rewritten with one AttrTypeReplacer (bf16 -> f32, recursing into tensor
// and cache types); op verifiers run afterwards and name any op whose
// contract the new types break.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/Transforms/Passes.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/BuiltinOps.h"

#include "dialects/llm/IR/LLMOps.h"

namespace mlir::strata::llm {
#define GEN_PASS_DEF_LLMPROMOTEACTIVATIONSPASS
#include "dialects/llm/Transforms/Passes.h.inc"
} // namespace mlir::strata::llm

using namespace mlir;
using namespace mlir::strata;

namespace {

struct LLMPromoteActivationsPass
    : public llm::impl::LLMPromoteActivationsPassBase<
          LLMPromoteActivationsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    AttrTypeReplacer replacer;
    replacer.addReplacement([context](FloatType type) -> std::optional<Type> {
      if (type.isBF16())
        return Float32Type::get(context);
      return std::nullopt;
    });

    getOperation()->walk([&](Operation *op) {
      // Weights keep the checkpoint's type; kernels widen them on load.
      if (isa<llm::WeightOp, llm::ExpertWeightsOp>(op))
        return;
      if (auto func = dyn_cast<func::FuncOp>(op))
        func.setFunctionType(
            cast<FunctionType>(replacer.replace(func.getFunctionType())));
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument argument : block.getArguments())
            argument.setType(replacer.replace(argument.getType()));
      for (OpResult result : op->getResults())
        result.setType(replacer.replace(result.getType()));
    });
  }
};

} // namespace
