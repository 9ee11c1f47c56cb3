//===- MlaSplit.cpp - sparse MLA attention split over positions -----------===//
//
// Part of strata, under the Apache License v2.0.
//
//===----------------------------------------------------------------------===//

#include "lib/Conversion/LLMToKernel/MlaSplit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::strata;

Value mlir::strata::buildMlaSplitsPerToken(OpBuilder &b, Location loc,
                                           Value tokens) {
  auto idx = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value small = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                      tokens, idx(kMlaSplitMaxTokens));
  Value perToken = arith::MinUIOp::create(
      b, loc, idx(kMlaSplitMaxRanges),
      arith::DivUIOp::create(b, loc, idx(kMlaSplitSlots),
                             arith::MaxUIOp::create(b, loc, tokens, idx(1))));
  return arith::SelectOp::create(b, loc, small, perToken, idx(1));
}
