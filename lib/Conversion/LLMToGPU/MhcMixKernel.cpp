//===- MhcMixKernel.cpp - mHC's mixing projection over token tiles --------===//
//
// Part of strata, under the Apache License v2.0.
//
// buildMhcMixKernel: the GPU form of HyperConnectionOps.cpp's mhc_mix, the
// partial sums of MhcMix.h's contract: for slice s of token t, the dot
// products of the slice of the token's flattened streams r with each of
// the mix rows of fn (fp32 weights), then the slice's sum of squares.
//
// A block takes one (tile of kMhcMixTokens tokens, slice) (grid (ceil(T /
// kMhcMixTokens), S, 1), tiles over grid x with a grid stride), so that each
// weight it loads serves the tile's tokens (the generic kernel, one block
// per (token, output), re-read the 1.5 MB fn for every token) and a decode
// token still spreads over S blocks. Subgroup w takes the outputs [w J,
// (w + 1) J) (J = mix / 4) and every lane the tile's tokens at pairs of
// neighbouring positions of the slice (lane-strided, four loop steps in
// flight; a slice that is not a whole number of iterations masks its last
// pairs): per pair, J two-float weight loads and one two-element stream
// load per token feed J + 1 fp32 accumulators per token. The lanes' sums
// meet by a butterfly of subgroup shuffles; lane 0 stores the subgroup's
// dot products (subgroup 0 also the sums of squares) for the tile's tokens
// below T (tokens past T read the last token's streams). Plain fp32 FMA:
// no matrix instruction (fn is fp32; the sums are the projection's whole
// cost only at prefill, about 1.6 GFLOP for 2048 tokens).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
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

/// Subgroups per block; each takes mix / kSubgroups outputs.
constexpr int64_t kSubgroups = 4;
/// Loop steps whose loads are issued together (H200, one decode token: 12.4
/// us per call with 2, 11.2 with 4).
constexpr int64_t kUnroll = 4;

class MhcMixBuilder : LaneArith {
public:
  MhcMixBuilder(OpBuilder &b, Location loc, const MhcMix &shape,
                int64_t subgroupSize)
      : LaneArith(b, loc), s(shape), subgroupSize(subgroupSize) {
    f32 = b.getF32Type();
    outputs = s.mix / kSubgroups;
    sliceWidth = s.hcMult * s.width / s.slices;
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  void buildTile(Value tile);
  /// The sums' carried values: outputs x tokens dot products (output
  /// major), then the tokens' sums of squares.
  /// With `valid` (past the slice's end: false), positions past the slice
  /// read its last pair and count as zeros.
  SmallVector<Value> accumulate(Value k, ValueRange acc, Value valid);
  Value fma(Value a, Value x, Value acc) {
    return arith::AddFOp::create(b, loc, acc,
                                 arith::MulFOp::create(b, loc, a, x));
  }
  /// Elements 0 and 1 of a two-element vector, widened to f32.
  std::pair<Value, Value> pair(Value v) {
    Value lo = vector::ExtractOp::create(b, loc, v, 0);
    Value hi = vector::ExtractOp::create(b, loc, v, 1);
    if (lo.getType() != f32) {
      lo = arith::ExtFOp::create(b, loc, f32, lo);
      hi = arith::ExtFOp::create(b, loc, f32, hi);
    }
    return {lo, hi};
  }

  const MhcMix &s;
  int64_t subgroupSize, outputs, sliceWidth;
  Type f32;
  Value r, fn, parts;
  Value tid, warp, slice, lastToken;
  SmallVector<Value> rows;
};

} // namespace

void MhcMixBuilder::build(gpu::GPUFuncOp func, const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  r = at(KernelRole::Streams);
  fn = at(KernelRole::MixWeight);
  parts = at(KernelRole::MixParts);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(subgroupSize));
  warp = arith::DivUIOp::create(b, loc, tid, idx(subgroupSize));
  slice = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value tokens = memref::DimOp::create(b, loc, r, 0);
  lastToken = arith::SubIOp::create(b, loc, tokens, idx(1));
  Value tiles = arith::CeilDivUIOp::create(b, loc, tokens, idx(kMhcMixTokens));
  forEachGridToken(tiles, [&](Value tile) { buildTile(tile); });
  gpu::ReturnOp::create(b, loc);
}

SmallVector<Value> MhcMixBuilder::accumulate(Value k, ValueRange acc,
                                             Value valid) {
  if (valid)
    k = minu(k, add(mul(slice, sliceWidth), sliceWidth - 2));
  // Position k (even) of the flattened streams: stream k / d, column k % d;
  // a pair never crosses a stream (d is even).
  Value stream = arith::DivUIOp::create(b, loc, k, idx(s.width));
  Value col = arith::RemUIOp::create(b, loc, k, idx(s.width));
  auto rType = VectorType::get(
      {2}, cast<MemRefType>(r.getType()).getElementType());
  auto fnType = VectorType::get({2}, f32);
  // Pairs start at even positions of rows of even length: aligned to the
  // pair's bytes (one wide load each).
  auto loadPair = [&](VectorType type, Value from, ValueRange at) {
    auto load = vector::LoadOp::create(b, loc, type, from, at);
    load.setAlignment(uint64_t(2 * type.getElementTypeBitWidth() / 8));
    return pair(load);
  };
  SmallVector<std::pair<Value, Value>> weights, values;
  for (int64_t j = 0; j < outputs; ++j)
    weights.push_back(
        loadPair(fnType, fn, ValueRange{add(mul(warp, outputs), j), k}));
  for (Value row : rows) {
    auto [lo, hi] = loadPair(rType, r, ValueRange{row, stream, col});
    if (valid) {
      lo = arith::SelectOp::create(b, loc, valid, lo, cf32(0.0));
      hi = arith::SelectOp::create(b, loc, valid, hi, cf32(0.0));
    }
    values.push_back({lo, hi});
  }
  SmallVector<Value> next(acc.begin(), acc.end());
  int64_t tokens = kMhcMixTokens;
  for (int64_t j = 0; j < outputs; ++j)
    for (int64_t t = 0; t < tokens; ++t) {
      Value &a = next[j * tokens + t];
      a = fma(weights[j].first, values[t].first, a);
      a = fma(weights[j].second, values[t].second, a);
    }
  for (int64_t t = 0; t < tokens; ++t) {
    Value &a = next[outputs * tokens + t];
    a = fma(values[t].first, values[t].first, a);
    a = fma(values[t].second, values[t].second, a);
  }
  return next;
}

void MhcMixBuilder::buildTile(Value tile) {
  Value t0 = mul(tile, kMhcMixTokens);
  rows.clear();
  for (int64_t t = 0; t < kMhcMixTokens; ++t)
    rows.push_back(minu(add(t0, t), lastToken));

  // Lane-strided pairs of the slice, kUnroll steps per iteration (the last
  // ones masked where the slice is not a whole number of iterations).
  int64_t step = 2 * subgroupSize;
  int64_t unroll = sliceWidth >= kUnroll * step ? kUnroll : 1;
  int64_t steps = llvm::alignTo(llvm::divideCeil(sliceWidth, step), unroll);
  bool masked = steps * step != sliceWidth;
  Value sliceStart = mul(slice, sliceWidth);
  Value sliceEnd = add(sliceStart, sliceWidth);
  Value first = add(sliceStart, mul(lane, 2));
  int64_t values = (outputs + 1) * kMhcMixTokens;
  SmallVector<Value> inits(values, cf32(0.0));
  auto loop = scf::ForOp::create(
      b, loc, idx(0), idx(steps), idx(unroll), inits,
      [&](OpBuilder &nb, Location, Value i, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        SmallVector<Value> next(acc.begin(), acc.end());
        for (int64_t u = 0; u < unroll; ++u) {
          Value k = add(first, mul(add(i, u), step));
          next = accumulate(k, next, masked ? ult(k, sliceEnd) : Value());
        }
        scf::YieldOp::create(b, loc, next);
      });

  // Butterfly over the subgroup's lanes: every lane ends with the sums.
  SmallVector<Value> sums;
  for (Value v : loop.getResults())
    sums.push_back(subgroupSum(v, subgroupSize));

  Value tokens = add(lastToken, 1);
  ifThen(ieq(lane, idx(0)), [&] {
    for (int64_t t = 0; t < kMhcMixTokens; ++t) {
      Value token = add(t0, t);
      ifThen(ult(token, tokens), [&] {
        for (int64_t j = 0; j < outputs; ++j)
          memref::StoreOp::create(
              b, loc, sums[j * kMhcMixTokens + t], parts,
              ValueRange{token, slice, add(mul(warp, outputs), j)});
        ifThen(ieq(warp, idx(0)), [&] {
          memref::StoreOp::create(b, loc, sums[outputs * kMhcMixTokens + t],
                                  parts, ValueRange{token, slice, idx(s.mix)});
        });
      });
    }
  });
}

gpu::GPUFuncOp mlir::strata::buildMhcMixKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const MhcMix &shape,
    int64_t subgroupSize) {
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, kSubgroups * subgroupSize,
      /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
        MhcMixBuilder(builder, loc, shape, subgroupSize)
            .build(func, KernelArguments(roles));
      });
}

LogicalResult mlir::strata::checkMhcMix(const MhcMix &shape,
                                        std::string &why) {
  if (shape.mix % kSubgroups) {
    why = "the mixing outputs do not split over 4 subgroups";
    return failure();
  }
  if (shape.width % 2 || shape.slices <= 0 ||
      (shape.hcMult * shape.width) % shape.slices ||
      (shape.hcMult * shape.width / shape.slices) % 2) {
    why = "a slice of the streams does not split into pairs of positions";
    return failure();
  }
  return success();
}
