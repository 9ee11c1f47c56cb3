//===- LaneArith.h - index arithmetic of the matrix-unit kernels -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The small builders the matrix-unit kernel generators (MatmulKernel.cpp,
// MlaAttendKernel.cpp, KdaChunkKernel.cpp) share: constants, index additions and products that
// skip their identities, and this lane's coordinate under a LaneMap of
// TargetInfo's fragment layouts.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOGPU_LANEARITH_H
#define STRATA_LIB_CONVERSION_LLMTOGPU_LANEARITH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

#include "lib/Target/TargetInfo.h"

namespace mlir::strata {

class LaneArith {
protected:
  LaneArith(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value cf32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value ci32(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value add(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
  Value minu(Value a, Value c) { return arith::MinUIOp::create(b, loc, a, c); }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  /// A zero vector<n x f32> (an accumulator's start).
  Value zeros(int64_t n) {
    return arith::ConstantOp::create(
        b, loc, b.getZeroAttr(VectorType::get({n}, b.getF32Type())));
  }
  Value add(Value a, int64_t c) { return c ? add(a, idx(c)) : a; }
  Value mul(Value a, int64_t c) {
    return c == 1 ? a : arith::MulIOp::create(b, loc, a, idx(c));
  }
  /// m.mul * (lane / m.div % m.mod) for this thread's `lane` (set by the
  /// kernel generator before use).
  Value laneMap(const LaneMap &m) {
    Value v = lane;
    if (m.div != 1)
      v = arith::DivUIOp::create(b, loc, v, idx(m.div));
    v = arith::RemUIOp::create(b, loc, v, idx(m.mod));
    return mul(v, m.mul);
  }

  OpBuilder &b;
  Location loc;
  /// This thread's lane in its subgroup.
  Value lane;
};

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOGPU_LANEARITH_H
