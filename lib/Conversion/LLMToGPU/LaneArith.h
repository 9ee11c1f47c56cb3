//===- LaneArith.h - index arithmetic of the matrix-unit kernels -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// The small builders the kernel generators of LLMToGPU (MatmulKernel.cpp,
// MlaAttendKernel.cpp, KdaChunkKernel.cpp, KpoolScoresKernel.cpp,
// KpoolSelectKernel.cpp, MoeSelectKernel.cpp, MhcMixKernel.cpp,
// MhcPreKernel.cpp, ...) share: constants, index additions and products
// that skip their identities, integer compares, selects, guarded regions
// and barriers, a subgroup sum, the exact decode of e4m3 bytes, this lane's
// coordinate under a LaneMap of TargetInfo's fragment layouts, an operand
// assembled from its pieces, and the per-token grid loop.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOGPU_LANEARITH_H
#define STRATA_LIB_CONVERSION_LLMTOGPU_LANEARITH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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
  Value sub(Value a, Value c) { return arith::SubIOp::create(b, loc, a, c); }
  Value minu(Value a, Value c) { return arith::MinUIOp::create(b, loc, a, c); }
  Value toIndex(Value v) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y);
  }
  Value ieq(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// A float value as f32 (bf16 / f16 extended, f32 as is).
  Value asF32(Value v) {
    return v.getType().isF32()
               ? v
               : arith::ExtFOp::create(b, loc, b.getF32Type(), v).getResult();
  }
  /// Element `at` of float memref `m` as f32 (KernelBuilder::load for float
  /// elements).
  Value loadF32(Value m, ValueRange at) {
    return asF32(memref::LoadOp::create(b, loc, m, at));
  }
  /// Runs `body` in the threads for which `cond` holds.
  void ifThen(Value cond, llvm::function_ref<void()> body) {
    auto op = scf::IfOp::create(b, loc, cond, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    body();
  }
  void barrier() { gpu::BarrierOp::create(b, loc); }
  /// Float arithmetic with the generic kernels' formulas (KernelBuilder):
  /// sigmoid 1 / (1 + exp(-x)), silu x * sigmoid(x), rsqrt 1 / sqrt(x).
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fdiv(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value fexp(Value x) { return math::ExpOp::create(b, loc, x); }
  /// 2^x: one instruction on NVIDIA (ex2.approx) and AMD (v_exp_f32), where
  /// exp takes about ten more for its range reduction.
  Value fexp2(Value x) { return math::Exp2Op::create(b, loc, x); }
  Value fsqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value sigmoid(Value x) {
    return fdiv(cf32(1.0),
                fadd(cf32(1.0), fexp(arith::NegFOp::create(b, loc, x))));
  }
  Value silu(Value x) { return fmul(x, sigmoid(x)); }
  Value rsqrt(Value x) { return fdiv(cf32(1.0), fsqrt(x)); }
  /// `v` combined over the `lanes` lanes of a subgroup by a butterfly of XOR
  /// shuffles (`combine(mine, other's)` at offsets lanes / 2, ..., 1):
  /// every lane ends with the result.
  Value subgroupButterfly(Value v, int64_t lanes,
                          llvm::function_ref<Value(Value, Value)> combine) {
    for (int64_t offset = lanes / 2; offset > 0; offset /= 2) {
      Value other = gpu::ShuffleOp::create(b, loc, v, ci32(offset),
                                           ci32(lanes), gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      v = combine(v, other);
    }
    return v;
  }
  /// `v` summed over the `lanes` lanes of a subgroup (subgroupButterfly).
  Value subgroupSum(Value v, int64_t lanes) {
    return subgroupButterfly(v, lanes, [&](Value x, Value y) -> Value {
      return arith::AddFOp::create(b, loc, x, y);
    });
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

  /// The operand of `layout` with `type` elements from its pieces (one
  /// vector<count> each, in piece order).
  Value concat(ArrayRef<Value> parts, const FragmentLayout &layout,
               Type type) {
    if (parts.size() == 1)
      return parts.front();
    Value frag = arith::ConstantOp::create(
        b, loc, b.getZeroAttr(VectorType::get({layout.size()}, type)));
    for (auto [i, p] : llvm::enumerate(parts))
      frag = vector::InsertStridedSliceOp::create(
          b, loc, p, frag, ArrayRef<int64_t>{int64_t(i) * layout.count},
          ArrayRef<int64_t>{1});
    return frag;
  }
  /// OCP e4m3 (f8E4M3FN) bytes `bits` (vector<n x i8>) as f32, exactly,
  /// with integer operations on every target (gfx942's own fp8 format is
  /// FNUZ; NaN encodings excluded: caches and checkpoints hold none).
  Value decodeE4M3ToF32(Value bits) {
    int64_t n = cast<VectorType>(bits.getType()).getNumElements();
    auto i32 = VectorType::get({n}, b.getI32Type());
    auto vf32 = VectorType::get({n}, b.getF32Type());
    auto splatI = [&](int64_t c) -> Value {
      return arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(i32, b.getI32IntegerAttr(c)));
    };
    Value word = arith::ExtUIOp::create(b, loc, i32, bits);
    Value sign = arith::ShLIOp::create(
        b, loc, arith::AndIOp::create(b, loc, word, splatI(0x80)), splatI(24));
    Value em = arith::AndIOp::create(b, loc, word, splatI(0x7f));
    // Normal: exponent and mantissa moved into f32's fields, the bias from 7
    // to 127. Subnormal (exponent 0): mantissa / 512.
    Value normal = arith::AddIOp::create(
        b, loc, arith::ShLIOp::create(b, loc, em, splatI(20)),
        splatI(120 << 23));
    Value mant = arith::AndIOp::create(b, loc, em, splatI(7));
    Value sub = arith::MulFOp::create(
        b, loc, arith::UIToFPOp::create(b, loc, vf32, mant),
        arith::ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(vf32, b.getF32FloatAttr(1.0 / 512.0))));
    Value subBits = arith::BitcastOp::create(b, loc, i32, sub);
    Value isSub =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, em, splatI(8));
    Value magnitude = arith::SelectOp::create(b, loc, isSub, subBits, normal);
    return arith::BitcastOp::create(
        b, loc, vf32, arith::OrIOp::create(b, loc, magnitude, sign));
  }
  /// Tokens [0, numTokens) over grid x with a grid stride: `body(t)` for
  /// each token of this block.
  void forEachGridToken(Value numTokens, llvm::function_ref<void(Value)> body) {
    Value bx = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value gx = gpu::GridDimOp::create(b, loc, gpu::Dimension::x);
    auto loop = scf::ForOp::create(b, loc, bx, numTokens, gx);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }
  /// The request of token `t`: the last r with seq_starts[r] <= t. A walk
  /// over the requests (L1 hits after the first): the binary search of the
  /// generic kernels (emitRequestOfToken) carries two values through its
  /// loop and made mla_attend, at sm_90's 255 registers, spill.
  Value requestOfToken(Value starts, Value t) {
    Value numRequests = arith::SubIOp::create(
        b, loc, memref::DimOp::create(b, loc, starts, 0), idx(1));
    auto scan = scf::ForOp::create(
        b, loc, idx(1), numRequests, idx(1), ValueRange{idx(0)},
        [&](OpBuilder &nb, Location, Value r, ValueRange c) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value begins = toIndex(memref::LoadOp::create(b, loc, starts, r));
          Value in = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                                           begins, t);
          scf::YieldOp::create(
              b, loc,
              ValueRange{arith::SelectOp::create(b, loc, in, r, c[0])});
        });
    return scan.getResult(0);
  }

  OpBuilder &b;
  Location loc;
  /// This thread's lane in its subgroup.
  Value lane;
};

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOGPU_LANEARITH_H
