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
// A block takes one (token, head, column block) (grid (min(T,
// kMlaSplitMaxTokens), H, Z), one block in larger steps, which returns at
// once). Its first subgroup reads the S maxima and sums, one load of each
// per lane, forms the top and the total with shuffles and leaves the S
// weights w_s / sum w in workgroup memory. Z (a grid form on the step
// size, LinearOps.cpp) is R / threads in steps of at most
// kMlaCombineNarrowMaxTokens tokens, every thread one latent column, and 1
// above, every thread R / threads consecutive columns (8-byte-aligned
// vector loads: a parts row holds R + 2 floats). Either way kBatch ranges'
// loads are issued together before any is used (full batches in a loop,
// then the remainder's 16, 8, 4, 2 and 1 under conditions uniform over the
// block: never a range past S). The generic kernel's skip of ranges with
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
/// Ranges whose loads are issued together (a power of two).
constexpr int64_t kBatch = 32;

class MlaCombineBuilder : LaneArith {
public:
  MlaCombineBuilder(OpBuilder &b, Location loc, const MlaCombine &shape,
                    int64_t threads, int64_t lanes)
      : LaneArith(b, loc), s(shape), threads(threads), lanes(lanes) {
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
  /// Element `c` of range `r` of this token (rows past the buffer clamp to
  /// its last; the callers mask ranges past S).
  Value part(Value r, Value c) {
    return memref::LoadOp::create(b, loc, parts, ValueRange{row(r), h, c});
  }
  /// The parts row of range `r` of this token (clamped to the buffer).
  Value row(Value r) { return minu(add(first, r), idx(kMlaSplitSlots - 1)); }
  /// Columns [c, c + width) of range `r` of this token (a parts row is R + 2
  /// floats: 8-byte aligned at most).
  Value columns(Value r, Value c, int64_t width) {
    auto load = vector::LoadOp::create(b, loc, VectorType::get({width}, f32),
                                       parts, ValueRange{row(r), h, c});
    load.setAlignment(uint64_t(std::min<int64_t>(4 * width, 8)));
    return load;
  }
  /// `acc` plus w_r o_r[c, c + width) over the `n` ranges from `base` (all
  /// below S): their loads first, then the sums (ranges of weight 0
  /// skipped).
  Value addRanges(Value base, int64_t n, Value c, int64_t width, Value acc);
  /// Every range's w_r o_r[c, c + width) summed: full batches of kBatch in a
  /// loop, then the rest in pieces of kBatch / 2, ..., 1 where S has that
  /// bit.
  Value sumRanges(Value c, int64_t width);
  /// sumRanges into oh[t, h, c, c + width).
  void storeSum(Value t, Value c, int64_t width);
  const MlaCombine &s;
  int64_t threads, lanes;
  Type f32;
  Value oh, parts, shared, splits, first, h;
};

} // namespace

Value MlaCombineBuilder::addRanges(Value base, int64_t n, Value c,
                                   int64_t width, Value acc) {
  auto type = VectorType::get({width}, f32);
  SmallVector<Value> values, weights;
  for (int64_t i = 0; i < n; ++i)
    values.push_back(columns(add(base, i), c, width));
  for (int64_t i = 0; i < n; ++i)
    weights.push_back(memref::LoadOp::create(
        b, loc, shared,
        ValueRange{minu(add(base, i), idx(kMlaSplitMaxRanges - 1))}));
  for (int64_t i = 0; i < n; ++i) {
    Value take = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                       weights[i], cf32(0.0));
    Value w = vector::BroadcastOp::create(b, loc, type, weights[i]);
    acc = arith::SelectOp::create(b, loc, take, fadd(acc, fmul(w, values[i])),
                                  acc);
  }
  return acc;
}

Value MlaCombineBuilder::sumRanges(Value c, int64_t width) {
  auto type = VectorType::get({width}, f32);
  Value batches = arith::DivUIOp::create(b, loc, splits, idx(kBatch));
  auto loop = scf::ForOp::create(b, loc, idx(0), batches, idx(1),
                                 ValueRange{zeros(width)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(b, loc,
                         addRanges(mul(loop.getInductionVar(), kBatch), kBatch,
                                   c, width, loop.getRegionIterArgs()[0]));
  }
  Value acc = loop.getResult(0);
  Value done = mul(batches, kBatch);
  for (int64_t n = kBatch / 2; n > 0; n /= 2) {
    Value has = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne,
        arith::AndIOp::create(b, loc, splits, idx(n)), idx(0));
    auto piece = scf::IfOp::create(b, loc, TypeRange{type}, has,
                                   /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(piece.thenBlock());
      scf::YieldOp::create(b, loc, addRanges(done, n, c, width, acc));
      b.setInsertionPointToStart(piece.elseBlock());
      scf::YieldOp::create(b, loc, acc);
    }
    acc = piece.getResult(0);
    done = add(done, arith::SelectOp::create(b, loc, has, idx(n), idx(0)));
  }
  return acc;
}

void MlaCombineBuilder::storeSum(Value t, Value c, int64_t width) {
  auto store = vector::StoreOp::create(b, loc, sumRanges(c, width), oh,
                                       ValueRange{t, h, c});
  store.setAlignment(uint64_t(4 * width));
}

Value MlaCombineBuilder::subgroupMax(Value v) {
  return subgroupButterfly(v, lanes,
                           [&](Value x, Value y) { return fmax(x, y); });
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
  // Grid z: R / threads column blocks, a column per thread (steps of at
  // most kMlaCombineNarrowMaxTokens tokens), or one, R / threads
  // consecutive columns per thread (LinearOps.cpp's grid forms).
  Value columnBlocks = gpu::GridDimOp::create(b, loc, gpu::Dimension::z);
  // Steps of more than kMlaSplitMaxTokens tokens (S = 1) wrote oh directly.
  // The condition is the same for the whole block (the barrier inside).
  ifThen(arith::AndIOp::create(b, loc, ult(idx(1), splits), ult(t, tokens)),
         [&] {
    first = arith::MulIOp::create(b, loc, t, splits);
    storeWeights(tid);
    // This thread's columns: sum_r w_r o_r over the ranges of weight > 0
    // (an empty range's o_r need not be written).
    auto narrow = scf::IfOp::create(b, loc, ult(idx(1), columnBlocks),
                                    /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(narrow.thenBlock());
    Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
    storeSum(t, add(mul(block, threads), tid), 1);
    b.setInsertionPointToStart(narrow.elseBlock());
    storeSum(t, mul(tid, s.rank / threads), s.rank / threads);
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
  if (!threads || shape.rank % threads ||
      (width != 1 && width != 2 && width != 4)) {
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
