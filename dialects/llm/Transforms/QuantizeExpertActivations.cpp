//===- QuantizeExpertActivations.cpp - fp8 inputs for the routed experts --===//
//
// Part of strata, under the Apache License v2.0.
//
// llm-quantize-expert-activations: see Passes.td. The op's verifier checks
// that the experts are fp8; the pass names the op before setting anything.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include "dialects/llm/IR/LLMOps.h"

namespace mlir::strata::llm {
#define GEN_PASS_DEF_LLMQUANTIZEEXPERTACTIVATIONSPASS
#include "dialects/llm/Transforms/Passes.h.inc"
} // namespace mlir::strata::llm

using namespace mlir;
using namespace mlir::strata;

namespace {

bool hasFp8Experts(llm::MoeFfnOp op) {
  return isa<llm::Fp8WeightType>(op.getGate().getType()) &&
         isa<llm::Fp8WeightType>(op.getUp().getType()) &&
         isa<llm::Fp8WeightType>(op.getDown().getType());
}

struct LLMQuantizeExpertActivationsPass
    : public llm::impl::LLMQuantizeExpertActivationsPassBase<
          LLMQuantizeExpertActivationsPass> {
  void runOnOperation() override {
    WalkResult walk = getOperation()->walk([](llm::MoeFfnOp op) {
      if (!hasFp8Experts(op)) {
        op.emitOpError("fp8 expert activations need fp8 block-scaled expert "
                       "weights; this model's experts are not fp8");
        return WalkResult::interrupt();
      }
      op.setFp8ExpertActivations(true);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
