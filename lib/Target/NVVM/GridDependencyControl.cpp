//===- GridDependencyControl.cpp - kernels that take dependent launches ---===//
//
// Part of strata, under the Apache License v2.0.
//
// --strata-grid-dependency-control: every NVVM kernel starts with
// `griddepcontrol.wait` (wait until the grids it depends on have finished
// and their writes are visible) and then `griddepcontrol.launch_dependents`
// (the next kernel on the stream may be scheduled once every block of this
// one has got here). With those two instructions first, a kernel launched
// with programmatic stream serialization (CUDA's programmatic dependent
// launch, Hopper and later) reads nothing its predecessor writes before the
// predecessor is complete, as with a plain launch, while its launch and
// block scheduling overlap the predecessor's last blocks: a decode step of
// hundreds of small kernels loses most of the gap between them. Without the
// launch attribute the wait returns at once (docs/GPULowering.md
// "Dependent launches"). The wait makes a kernel N + 1 that reads kernel
// N - 1's output safe too: kernel N passed its own wait, so N - 1 was
// complete.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include "lib/Target/Passes.h"

namespace mlir::strata {
#define GEN_PASS_DEF_GRIDDEPENDENCYCONTROLPASS
#include "lib/Target/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;
using namespace mlir::strata;

namespace {
struct GridDependencyControlPass
    : mlir::strata::impl::GridDependencyControlPassBase<
          GridDependencyControlPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      bool kernel = func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()) ||
                    func->hasAttr("gpu.kernel");
      if (func.isExternal() || !kernel)
        return;
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      NVVM::GriddepcontrolOp::create(b, func.getLoc(),
                                     NVVM::GridDepActionKind::wait);
      NVVM::GriddepcontrolOp::create(
          b, func.getLoc(), NVVM::GridDepActionKind::launch_dependents);
    });
  }
};
} // namespace
