//===- ScoreKey.h - the indexer's ordered score keys ------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The key by which the indexer's selections order and tie pool scores: the
// generic radix select (IndexerOps.cpp, TopPoolSelect) and the GPU's
// kpool_select (LLMToGPU/KpoolSelectKernel.cpp) must agree on it bit for
// bit, so both build it here.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOKERNEL_SCOREKEY_H
#define STRATA_LIB_CONVERSION_LLMTOKERNEL_SCOREKEY_H

#include <cstdint>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir::strata {

/// The f32 `score` as an i32 whose unsigned order is the scores' order: -0
/// read as +0 (equal scores, equal keys), then the sign bit flipped when
/// positive, every bit when negative.
inline Value buildOrderedScoreKey(OpBuilder &b, Location loc, Value score) {
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value isZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       score, zero);
  score = arith::SelectOp::create(b, loc, isZero, zero, score);
  Type i32 = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, loc, i32, score);
  Value sign = arith::ShRSIOp::create(
      b, loc, bits, arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(31)));
  Value flip = arith::OrIOp::create(
      b, loc, sign,
      arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(INT32_MIN)));
  return arith::XOrIOp::create(b, loc, bits, flip);
}

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOKERNEL_SCOREKEY_H
