//===- MemRefCopyToLinalg.cpp - memref.copy as linalg.copy ----------------===//
//
// Part of strata, under the Apache License v2.0.
//
// convert-memref-copy-to-linalg: see lib/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::strata {
#define GEN_PASS_DEF_CONVERTMEMREFCOPYTOLINALGPASS
#include "lib/Conversion/Passes.h.inc"
} // namespace mlir::strata

using namespace mlir;

namespace {
struct ConvertMemRefCopyToLinalgPass
    : public strata::impl::ConvertMemRefCopyToLinalgPassBase<
          ConvertMemRefCopyToLinalgPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](memref::CopyOp copy) {
      rewriter.setInsertionPoint(copy);
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(),
                                                  copy.getTarget());
    });
  }
};
} // namespace
