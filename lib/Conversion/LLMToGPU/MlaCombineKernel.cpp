//===- MlaCombineKernel.cpp - merging MLA's position ranges ---------------===//
//
// Part of strata, under the Apache License v2.0.
//
// buildMlaCombineKernel: the GPU form of MlaOps.cpp's mla_combine, the
// merge of MlaSplit.h's contract: in a step of T <= kMlaSplitMaxTokens
// tokens, oh[t, h] = sum_s (w_s / sum_s' w_s') o_s over the S(T) ranges of
// token t with w_s = exp(m_s - max_s m_s) l_s > 0, where range s of token t
// is row t S + s of the parts buffer (its normalised latent sum o_s, its
// maximum m_s and its sum l_s). Larger steps have nothing to merge.
//
// A block takes one (token, head) (grid (min(T, kMlaSplitMaxTokens), H, 1),
// one block in larger steps, which returns at once). Its first subgroup
// reads the S maxima and sums, one load of each per lane, forms the top and
// the total with shuffles and leaves the S weights w_s / sum w in workgroup
// memory; then every thread owns R / threads consecutive latent columns:
// one vector load per range (8-byte aligned: a parts row holds R + 2
// floats), sixteen ranges' loads issued together. (Three passes over the
// ranges, eight loads at a time, took 32 us at T = 1 on the H200: each pass
// a chain of DRAM latencies.) The generic kernel's skip of ranges with
// w_s = 0 is kept; the total is summed in a tree, not in range order.
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
#include "lib/Conversion/LLMToKernel/MlaSplit.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Subgroups per block.
constexpr int64_t kSubgroups = 4;
/// Ranges whose loads are issued together.
constexpr int64_t kUnroll = 16;

class MlaCombineBuilder : LaneArith {
public:
  MlaCombineBuilder(OpBuilder &b, Location loc, const MlaCombine &shape,
                    int64_t threads, int64_t lanes)
      : LaneArith(b, loc), s(shape), width(shape.rank / threads),
        lanes(lanes) {
    f32 = b.getF32Type();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  /// `v`'s maximum over the subgroup (XOR shuffles; every lane ends with it).
  Value subgroupMax(Value v);
  /// Subgroup 0 reads every range's maximum and sum (one load each per lane)
  /// and stores w_s / sum_s' w_s' for s < S in `shared`; then a barrier.
  void storeWeights(Value tid);
  Value fmax(Value x, Value y) {
    return arith::MaximumFOp::create(b, loc, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  /// Element `c` of range `r` of this token (rows past the buffer clamp to
  /// its last; the callers mask ranges past S).
  Value part(Value r, Value c) {
    Value row = minu(add(first, r), idx(kMlaSplitSlots - 1));
    return memref::LoadOp::create(b, loc, parts, ValueRange{row, h, c});
  }
  /// `body(r, acc)` for the ranges r in [0, S), kUnroll per loop step (the
  /// bodies mask r >= S themselves).
  Value overRanges(Value init, llvm::function_ref<Value(Value, Value)> body);
  const MlaCombine &s;
  int64_t width, lanes;
  Type f32;
  Value oh, parts, shared, splits, first, h;
};

} // namespace

Value MlaCombineBuilder::overRanges(
    Value init, llvm::function_ref<Value(Value, Value)> body) {
  Value steps = arith::CeilDivUIOp::create(b, loc, splits, idx(kUnroll));
  auto loop = scf::ForOp::create(b, loc, idx(0), steps, idx(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value acc = loop.getRegionIterArgs()[0];
  Value base = mul(loop.getInductionVar(), kUnroll);
  for (int64_t i = 0; i < kUnroll; ++i)
    acc = body(add(base, i), acc);
  scf::YieldOp::create(b, loc, acc);
  return loop.getResult(0);
}

Value MlaCombineBuilder::subgroupMax(Value v) {
  for (int64_t offset = lanes / 2; offset > 0; offset /= 2) {
    Value other = gpu::ShuffleOp::create(b, loc, v, ci32(offset), ci32(lanes),
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    v = fmax(v, other);
  }
  return v;
}

void MlaCombineBuilder::storeWeights(Value tid) {
  // Subgroup 0: lane l takes ranges l, l + lanes, ... (at most
  // kMlaSplitMaxRanges); the top and the total over its subgroup's shuffles.
  int64_t perLane = (kMlaSplitMaxRanges + lanes - 1) / lanes;
  ifThen(ult(tid, idx(lanes)), [&] {
    SmallVector<Value> maxima, sums;
    Value laneTop = cf32(-INFINITY);
    for (int64_t k = 0; k < perLane; ++k) {
      Value r = add(tid, k * lanes);
      Value in = ult(r, splits);
      maxima.push_back(arith::SelectOp::create(b, loc, in,
                                               part(r, idx(s.rank)),
                                               cf32(-INFINITY)));
      sums.push_back(part(r, idx(s.rank + 1)));
      laneTop = fmax(laneTop, maxima.back());
    }
    Value top = subgroupMax(laneTop);
    SmallVector<Value> weights;
    Value laneTotal = cf32(0.0);
    for (int64_t k = 0; k < perLane; ++k) {
      Value r = add(tid, k * lanes);
      Value e = math::ExpOp::create(
          b, loc, arith::SubFOp::create(b, loc, maxima[k], top));
      weights.push_back(arith::SelectOp::create(
          b, loc, ult(r, splits), fmul(e, sums[k]), cf32(0.0)));
      laneTotal = fadd(laneTotal, weights.back());
    }
    Value total = subgroupSum(laneTotal, lanes);
    for (int64_t k = 0; k < perLane; ++k) {
      Value r = add(tid, k * lanes);
      ifThen(ult(r, idx(kMlaSplitMaxRanges)), [&] {
        memref::StoreOp::create(
            b, loc, arith::DivFOp::create(b, loc, weights[k], total), shared,
            ValueRange{r});
      });
    }
  });
  barrier();
}

void MlaCombineBuilder::build(gpu::GPUFuncOp func,
                              const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  oh = at(KernelRole::Out);
  parts = at(KernelRole::SplitParts);
  shared = addWorkgroupBuffer(func, loc, {kMlaSplitMaxRanges}, f32);
  Value tokens = memref::DimOp::create(b, loc, oh, 0);
  splits = buildMlaSplitsPerToken(b, loc, tokens);
  Value t = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  h = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  // Steps of more than kMlaSplitMaxTokens tokens (S = 1) wrote oh directly.
  // The condition is the same for the whole block (the barrier inside).
  ifThen(arith::AndIOp::create(b, loc, ult(idx(1), splits), ult(t, tokens)),
         [&] {
    first = arith::MulIOp::create(b, loc, t, splits);
    storeWeights(tid);
    // This thread's columns: sum_r w_r o_r over the ranges of weight > 0
    // (an empty range's o_r need not be written).
    auto type = VectorType::get({width}, f32);
    Value c0 = mul(tid, width);
    Value sum = overRanges(zeros(width), [&](Value r, Value acc) {
      Value in = ult(r, splits);
      Value w = memref::LoadOp::create(
          b, loc, shared, ValueRange{minu(r, idx(kMlaSplitMaxRanges - 1))});
      Value take = arith::AndIOp::create(
          b, loc, in,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, w,
                                cf32(0.0)));
      Value row = minu(add(first, r), idx(kMlaSplitSlots - 1));
      // A parts row is R + 2 floats: its columns are 8-byte aligned only.
      auto load = vector::LoadOp::create(b, loc, type, parts,
                                         ValueRange{row, h, c0});
      load.setAlignment(uint64_t(std::min<int64_t>(4 * width, 8)));
      Value scaled = fmul(vector::BroadcastOp::create(b, loc, type, w), load);
      return arith::SelectOp::create(b, loc, take, fadd(acc, scaled), acc);
    });
    auto store =
        vector::StoreOp::create(b, loc, sum, oh, ValueRange{t, h, c0});
    store.setAlignment(uint64_t(4 * width));
  });
  gpu::ReturnOp::create(b, loc);
}

int64_t mlir::strata::mlaCombineThreads(const TargetInfo &target) {
  return kSubgroups * target.getSubgroupSize();
}

LogicalResult mlir::strata::checkMlaCombine(const MlaCombine &shape,
                                            const TargetInfo &target,
                                            std::string &why) {
  int64_t threads = mlaCombineThreads(target);
  int64_t width = threads ? shape.rank / threads : 0;
  if (shape.rank % threads || (width != 1 && width != 2 && width != 4)) {
    why = "the latent width is not 1, 2 or 4 columns per thread";
    return failure();
  }
  return success();
}

gpu::GPUFuncOp mlir::strata::buildMlaCombineKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles,
    const MlaCombine &shape, const TargetInfo &target) {
  int64_t threads = mlaCombineThreads(target);
  return getOrCreateMatrixKernel(builder, loc, module, name, argTypes, threads,
                                 /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
                                   MlaCombineBuilder(builder, loc, shape,
                                                     threads,
                                                     target.getSubgroupSize())
                                       .build(func, KernelArguments(roles));
                                 });
}
