//===- NarrowKernelSums.cpp - the narrow-kernel-sums pass -----------------===//
//
// Part of strata, under the Apache License v2.0.
//
// fp32 mode's kernels sum in f64 (dotAccumulatorType); GPU targets sum in
// f32. Every f64 value of an llm.kernel function becomes f32 in place; the
// widening and narrowing casts between the two disappear. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/Passes.h"

namespace mlir::strata {
#define GEN_PASS_DEF_NARROWKERNELSUMSPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {

/// `type` with f64 (as itself or as the element of a memref, vector or
/// tensor) replaced by f32; other types unchanged.
Type narrowType(Type type) {
  Builder b(type.getContext());
  if (type.isF64())
    return b.getF32Type();
  if (auto shaped = dyn_cast<ShapedType>(type))
    if (shaped.getElementType().isF64())
      return shaped.clone(b.getF32Type());
  return type;
}

bool holdsF64(Type type) { return narrowType(type) != type; }

/// Narrows the types of every value defined in `func`'s body.
void narrowValueTypes(func::FuncOp func) {
  func.walk([](Operation *op) {
    for (OpResult result : op->getResults())
      result.setType(narrowType(result.getType()));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(narrowType(arg.getType()));
  });
}

/// f64 constants as f32 constants of the same value (rounded), and the
/// casts that narrowing made identities replaced by their operand.
void rebuildConstantsAndCasts(func::FuncOp func) {
  SmallVector<Operation *> dead;
  func.walk([&](Operation *op) {
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto value = dyn_cast<FloatAttr>(constant.getValue());
      if (!value || !value.getType().isF64())
        return;
      OpBuilder b(constant);
      Value narrow = arith::ConstantOp::create(
          b, constant.getLoc(),
          b.getF32FloatAttr(static_cast<float>(value.getValueAsDouble())));
      constant.getResult().replaceAllUsesWith(narrow);
      dead.push_back(op);
      return;
    }
    if (isa<arith::ExtFOp, arith::TruncFOp>(op) &&
        op->getOperand(0).getType() == op->getResult(0).getType()) {
      op->getResult(0).replaceAllUsesWith(op->getOperand(0));
      dead.push_back(op);
    }
  });
  for (Operation *op : dead)
    op->erase();
}

struct NarrowKernelSumsPass
    : mlir::strata::impl::NarrowKernelSumsPassBase<NarrowKernelSumsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !func->hasAttr(kKernelAttrName))
        continue;
      FunctionType signature = func.getFunctionType();
      if (llvm::any_of(signature.getInputs(), holdsF64) ||
          llvm::any_of(signature.getResults(), holdsF64)) {
        func.emitError("kernel '")
            << func.getSymName()
            << "' has an f64 argument; only its sums may be f64";
        return signalPassFailure();
      }
      narrowValueTypes(func);
      rebuildConstantsAndCasts(func);
    }
  }
};

} // namespace
