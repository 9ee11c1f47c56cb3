//===- GroupQuantizeKernel.cpp - fp8 activations, a subgroup per group ----===//
//
// Part of strata, under the Apache License v2.0.
//
// buildGroupQuantizeKernel: the GPU form of FfnOps.cpp's moe_quantize_x /
// moe_quantize_act (emitGroupQuantize): per row and `block`-wide group of
// the last dimension, s = max(amax, 1e-10) / 448 and q = e4m3(clamp(v / s,
// -448, 448)) rounded to the nearest, ties to even. A subgroup takes a group
// (block / lanes values a lane, one vector load), its amax a butterfly of
// maxima: no block barrier (the generic kernel reduced each group over the
// block's threads, a barrier per group, and a grid row per 4 groups: 2.97
// ms for 65,536 activation rows at 8192 tokens on an H100). A block of
// kSubgroups subgroups takes kGroupsPerSubgroup groups each, their loads
// issued first; grid (extent of dim 0, ceil(groups of a dim-0 index /
// groups a block), 1). The same operations per value as the generic kernel
// (the maxima are exact in any order).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Subgroups per block and groups per subgroup.
constexpr int64_t kSubgroups = 4;
constexpr int64_t kGroupsPerSubgroup = 4;

class GroupQuantizeBuilder : LaneArith {
public:
  GroupQuantizeBuilder(OpBuilder &b, Location loc, const GroupQuantize &shape,
                       int64_t lanes)
      : LaneArith(b, loc), s(shape), lanes(lanes),
        perLane(shape.block / lanes) {
    f32 = b.getF32Type();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  /// The index of group `flat` of row `t` in an operand of the row rank,
  /// at column `column`.
  SmallVector<Value> at(Value t, Value flat, Value column);
  /// OCP e4m3 codes (vector of i8) of f32 values within +-448, rounded to
  /// the nearest, ties to even: KernelBuilder's encodeFp8 on integer lanes
  /// (the same codes on every target; gfx942's own fp8 is FNUZ, NVIDIA's
  /// conversion an intrinsic).
  Value encodeE4M3(Value v);
  Value splatI32(int64_t c) {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(VectorType::get({perLane}, b.getI32Type()),
                               b.getI32IntegerAttr(c)));
  }

  const GroupQuantize &s;
  int64_t lanes, perLane;
  Type f32;
};

} // namespace

SmallVector<Value> GroupQuantizeBuilder::at(Value t, Value flat, Value column) {
  SmallVector<Value> index = {t};
  if (s.inner > 0)
    index.push_back(arith::DivUIOp::create(b, loc, flat, idx(s.groups)));
  index.push_back(column);
  return index;
}

Value GroupQuantizeBuilder::encodeE4M3(Value v) {
  auto i32 = VectorType::get({perLane}, b.getI32Type());
  auto wide = VectorType::get({perLane}, f32);
  Value bits = arith::BitcastOp::create(b, loc, i32, v);
  Value mag = arith::AndIOp::create(b, loc, bits, splatI32(0x7FFFFFFF));
  // Normal: the f32 mantissa rounded to 3 bits (RNE), bias 127 -> 7.
  Value lsb = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, mag, splatI32(20)), splatI32(1));
  Value rounded = arith::AddIOp::create(
      b, loc, mag, arith::AddIOp::create(b, loc, splatI32(0x7FFFF), lsb));
  Value normal = arith::SubIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, rounded, splatI32(20)),
      splatI32(120 << 3));
  // Subnormal (|v| < 2^-6): rne(|v| * 2^9), the sum with 2^23 rounding it
  // to an integer in the f32 mantissa.
  auto splatF = [&](double c) -> Value {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(wide, b.getF32FloatAttr(c)));
  };
  Value magnitude = arith::BitcastOp::create(b, loc, wide, mag);
  Value shifted = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, magnitude, splatF(512.0)),
      splatF(8388608.0));
  Value sub = arith::SubIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, i32, shifted),
      splatI32(0x4B000000));
  Value isSub = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, mag,
                                      splatI32(0x3C800000));
  Value code = arith::SelectOp::create(b, loc, isSub, sub, normal);
  // The sign of a nonzero negative value (-0 encodes as +0, as in
  // encodeFp8's v < 0).
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                         bits, splatI32(0x80000000));
  code = arith::SelectOp::create(
      b, loc, negative, arith::OrIOp::create(b, loc, code, splatI32(128)),
      code);
  return arith::TruncIOp::create(
      b, loc, VectorType::get({perLane}, b.getI8Type()), code);
}

void GroupQuantizeBuilder::build(gpu::GPUFuncOp func,
                                 const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  Value x = roles.value(args, KernelRole::X);
  Value codes = roles.value(args, KernelRole::Out);
  Value scales = roles.value(args, KernelRole::XScales);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(lanes));
  Value warp = arith::DivUIOp::create(b, loc, tid, idx(lanes));
  Value t = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  Value part = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  int64_t total = std::max<int64_t>(s.inner, 1) * s.groups;
  Type elem = cast<MemRefType>(x.getType()).getElementType();
  auto wide = VectorType::get({perLane}, f32);
  auto narrow = VectorType::get({perLane}, elem);
  auto codeType = VectorType::get({perLane}, b.getType<Float8E4M3FNType>());
  Value rows = memref::DimOp::create(b, loc, x, 0);
  ifThen(ult(t, rows), [&] {
    // The subgroup's groups: their loads first.
    SmallVector<Value> flats, valid, values;
    Value first = add(mul(part, kSubgroups * kGroupsPerSubgroup),
                      mul(warp, kGroupsPerSubgroup));
    for (int64_t j = 0; j < kGroupsPerSubgroup; ++j) {
      Value flat = add(first, j);
      valid.push_back(ult(flat, idx(total)));
      flat = minu(flat, idx(total - 1));
      flats.push_back(flat);
      Value group = arith::RemUIOp::create(b, loc, flat, idx(s.groups));
      Value column = add(mul(group, s.block), mul(lane, perLane));
      auto load =
          vector::LoadOp::create(b, loc, narrow, x, at(t, flat, column));
      load.setAlignment(
          uint64_t(perLane * narrow.getElementTypeBitWidth() / 8));
      Value v = load.getResult();
      values.push_back(elem.isF32() ? v
                                    : arith::ExtFOp::create(b, loc, wide, v));
    }
    for (int64_t j = 0; j < kGroupsPerSubgroup; ++j) {
      Value magnitude =
          vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF,
                                      math::AbsFOp::create(b, loc, values[j]));
      Value amax = subgroupButterfly(magnitude, lanes, [&](Value p, Value q) {
        return arith::MaximumFOp::create(b, loc, p, q).getResult();
      });
      Value scale = arith::DivFOp::create(
          b, loc, arith::MaximumFOp::create(b, loc, amax, cf32(1e-10)),
          cf32(448.0));
      Value scaled = arith::DivFOp::create(
          b, loc, values[j], vector::BroadcastOp::create(b, loc, wide, scale));
      auto splat = [&](double c) -> Value {
        return arith::ConstantOp::create(
            b, loc, DenseElementsAttr::get(wide, b.getF32FloatAttr(c)));
      };
      scaled = arith::MaximumFOp::create(
          b, loc, arith::MinimumFOp::create(b, loc, scaled, splat(448.0)),
          splat(-448.0));
      Value q = arith::BitcastOp::create(b, loc, codeType, encodeE4M3(scaled));
      Value group = arith::RemUIOp::create(b, loc, flats[j], idx(s.groups));
      Value column = add(mul(group, s.block), mul(lane, perLane));
      ifThen(valid[j], [&] {
        auto store =
            vector::StoreOp::create(b, loc, q, codes, at(t, flats[j], column));
        store.setAlignment(uint64_t(perLane));
        ifThen(ieq(lane, idx(0)), [&] {
          memref::StoreOp::create(b, loc, scale, scales,
                                  at(t, flats[j], group));
        });
      });
    }
  });
  gpu::ReturnOp::create(b, loc);
}

gpu::GPUFuncOp mlir::strata::buildGroupQuantizeKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles,
    const GroupQuantize &shape, int64_t subgroupSize) {
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, kSubgroups * subgroupSize,
      /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
        GroupQuantizeBuilder(builder, loc, shape, subgroupSize)
            .build(func, KernelArguments(roles));
      });
}

int64_t mlir::strata::groupQuantizeBlocksPerRow(const GroupQuantize &shape) {
  int64_t total = std::max<int64_t>(shape.inner, 1) * shape.groups;
  return (total + kSubgroups * kGroupsPerSubgroup - 1) /
         (kSubgroups * kGroupsPerSubgroup);
}

LogicalResult mlir::strata::checkGroupQuantize(const TargetInfo &target,
                                               const GroupQuantize &shape,
                                               std::string &why) {
  int64_t lanes = target.getSubgroupSize();
  int64_t perLane = shape.block / lanes;
  if (shape.block % lanes || !llvm::is_contained({1, 2, 4, 8}, perLane)) {
    why = "a group is not 1, 2, 4 or 8 values per lane";
    return failure();
  }
  if (shape.groups < 1 || shape.width != shape.groups * shape.block) {
    why = "the last dimension is not whole groups";
    return failure();
  }
  return success();
}
