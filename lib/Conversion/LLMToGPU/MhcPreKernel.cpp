//===- MhcPreKernel.cpp - mHC's per-token collapse in one block ------------===//
//
// Part of strata, under the Apache License v2.0.
//
// buildMhcPreKernel: the GPU form of HyperConnectionOps.cpp's mhc_pre for
// bf16 streams, one block per token (grid-stride), with the same operations
// per value as the generic kernel and none of its memory round trips:
//   1. threads j <= mix add the token's slices of mhc_mix's partial sums
//      (MhcMix.h; all loads issued, then added in slice order) into
//      workgroup memory; after a barrier every thread has m = dot * rsqrt(
//      mean(r^2) + norm_eps) and the pre weights;
//   2. every subgroup runs the softmax and Sinkhorn on its lanes, lane e
//      holding comb entry e = i h + j (lanes past h^2 repeat lane e mod h^2):
//      a pass reads its row's or column's h entries with subgroup shuffles
//      and adds them in index order, then divides its own entry (2 x
//      sinkhorn_iters dependent passes without a barrier; the generic kernel
//      puts a barrier and workgroup memory round trip in each); subgroup 0
//      stores post and comb;
//   3. the collapse: each thread takes runs of 8 columns (16-byte loads of
//      every stream issued together), x = sum_s pre_s R[s] in fp32, rounded
//      to bf16 and kept in registers; in the x_norm form the sum of squares
//      of the rounded row is a block reduction (subgroup butterflies, then
//      the 4 subgroups' sums in order) and the normalised, weighted row is
//      stored once (the generic kernel stored x, read it back twice).
// Decode steps are one block per token: what matters is the dependent chain
// (about 26 us per call for the generic kernel on the H200 at one token).
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

/// Subgroups per block.
constexpr int64_t kSubgroups = 4;
/// Columns per run of the collapse (16 bytes of bf16).
constexpr int64_t kRun = 8;

class MhcPreBuilder : LaneArith {
public:
  MhcPreBuilder(OpBuilder &b, Location loc, const MhcPre &shape,
                int64_t subgroupSize)
      : LaneArith(b, loc), s(shape), subgroupSize(subgroupSize) {
    f32 = b.getF32Type();
    bf16 = b.getBF16Type();
    mix = (2 + s.hcMult) * s.hcMult;
    threads = kSubgroups * subgroupSize;
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  void buildToken(Value t);
  /// comb after the softmax and the Sinkhorn passes, this lane's entry.
  Value sinkhorn();
  /// Stores x (and, x_norm, normalises it) from the collapse.
  void collapse(Value t);

  Value roundBf16(Value v) {
    Type type = v.getType();
    Type narrow = bf16;
    if (auto vec = dyn_cast<VectorType>(type))
      narrow = VectorType::get(vec.getShape(), bf16);
    Value narrowed = arith::TruncFOp::create(b, loc, narrow, v);
    return arith::ExtFOp::create(b, loc, type, narrowed);
  }
  /// `v` as lane `from` (an index) of the subgroup holds it.
  Value readLane(Value v, Value from) {
    Value at = arith::IndexCastOp::create(b, loc, b.getI32Type(), from);
    return gpu::ShuffleOp::create(b, loc, v, at, ci32(subgroupSize),
                                  gpu::ShuffleMode::IDX)
        .getShuffleResult();
  }
  /// m[k] = dot[k] * inv from the workgroup sums.
  Value m(Value k) {
    return fmul(memref::LoadOp::create(b, loc, sums, ValueRange{k}), inv);
  }
  Value baseAt(Value k) {
    return memref::LoadOp::create(b, loc, base, ValueRange{k});
  }

  const MhcPre &s;
  int64_t subgroupSize, mix, threads;
  Type f32, bf16;
  Value r, parts, base, scale, normWeight, x, post, comb;
  Value tid, warp, sums, norms;
  Value scale0, scale1, scale2;
  // Per token.
  Value inv;
  SmallVector<Value> pre;
};

} // namespace

void MhcPreBuilder::build(gpu::GPUFuncOp func, const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  r = at(KernelRole::Streams);
  parts = at(KernelRole::MixParts);
  base = at(KernelRole::MixBase);
  scale = at(KernelRole::MixScale);
  normWeight = at(KernelRole::XNormWeight);
  x = at(KernelRole::Out);
  post = at(KernelRole::StreamPost);
  comb = at(KernelRole::StreamComb);
  sums = addWorkgroupBuffer(func, loc, {mix + 1}, f32);
  norms = addWorkgroupBuffer(func, loc, {kSubgroups}, f32);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(subgroupSize));
  warp = arith::DivUIOp::create(b, loc, tid, idx(subgroupSize));
  scale0 = memref::LoadOp::create(b, loc, scale, ValueRange{idx(0)});
  scale1 = memref::LoadOp::create(b, loc, scale, ValueRange{idx(1)});
  scale2 = memref::LoadOp::create(b, loc, scale, ValueRange{idx(2)});
  forEachGridToken(memref::DimOp::create(b, loc, r, 0),
                   [&](Value t) { buildToken(t); });
  gpu::ReturnOp::create(b, loc);
}

void MhcPreBuilder::buildToken(Value t) {
  int64_t h = s.hcMult;
  // 1. The slices' sums (loads first, then added in slice order).
  ifThen(ult(tid, idx(mix + 1)), [&] {
    SmallVector<Value> slices;
    for (int64_t k = 0; k < s.slices; ++k)
      slices.push_back(memref::LoadOp::create(b, loc, parts,
                                              ValueRange{t, idx(k), tid}));
    Value sum = cf32(0.0);
    for (Value v : slices)
      sum = fadd(sum, v);
    memref::StoreOp::create(b, loc, sum, sums, ValueRange{tid});
  });
  barrier();
  inv = rsqrt(fadd(
      fdiv(memref::LoadOp::create(b, loc, sums, ValueRange{idx(mix)}),
           cf32(double(h * s.width))),
      cf32(s.normEps)));
  Value eps = cf32(s.hcEps);
  pre.clear();
  for (int64_t k = 0; k < h; ++k)
    pre.push_back(
        fadd(sigmoid(fadd(fmul(m(idx(k)), scale0), baseAt(idx(k)))), eps));

  // 2. Softmax and Sinkhorn on the lanes; subgroup 0 stores.
  Value c = sinkhorn();
  Value first = ieq(warp, idx(0));
  ifThen(arith::AndIOp::create(b, loc, first, ult(lane, idx(h))), [&] {
    Value at = add(lane, h);
    Value q = fadd(fmul(m(at), scale1), baseAt(at));
    memref::StoreOp::create(b, loc, fmul(cf32(s.postMult), sigmoid(q)), post,
                            ValueRange{t, lane});
  });
  ifThen(arith::AndIOp::create(b, loc, first, ult(lane, idx(h * h))), [&] {
    memref::StoreOp::create(
        b, loc, c, comb,
        ValueRange{t, arith::DivUIOp::create(b, loc, lane, idx(h)),
                   arith::RemUIOp::create(b, loc, lane, idx(h))});
  });

  // 3. The collapse (and the norm).
  collapse(t);
  // The next token rewrites the workgroup sums.
  barrier();
}

Value MhcPreBuilder::sinkhorn() {
  int64_t h = s.hcMult;
  Value e = arith::RemUIOp::create(b, loc, lane, idx(h * h));
  Value i = arith::DivUIOp::create(b, loc, e, idx(h));
  Value j = arith::RemUIOp::create(b, loc, e, idx(h));
  Value eps = cf32(s.hcEps);
  // The row's logits from the workgroup sums (the lane's row i).
  SmallVector<Value> logits;
  for (int64_t k = 0; k < h; ++k) {
    Value at = add(add(mul(i, h), k), 2 * h);
    logits.push_back(fadd(fmul(m(at), scale2), baseAt(at)));
  }
  Value mx = cf32(-INFINITY);
  for (Value l : logits)
    mx = arith::MaximumFOp::create(b, loc, mx, l);
  Value sum = cf32(0.0);
  for (Value l : logits)
    sum = fadd(sum, fexp(arith::SubFOp::create(b, loc, l, mx)));
  Value own = cf32(0.0);
  for (int64_t k = 0; k < h; ++k)
    own = arith::SelectOp::create(b, loc, ieq(j, idx(k)), logits[k], own);
  Value c = fadd(fdiv(fexp(arith::SubFOp::create(b, loc, own, mx)), sum), eps);
  // c / (sum over the row's (rows) or column's entries + eps), the sum in
  // index order over values read from their lanes.
  auto normalize = [&](Value v, bool rows) {
    Value total = cf32(0.0);
    for (int64_t k = 0; k < h; ++k) {
      Value from = rows ? add(mul(i, h), k) : add(mul(idx(k), h), j);
      total = fadd(total, readLane(v, from));
    }
    return fdiv(v, fadd(total, eps));
  };
  c = normalize(c, /*rows=*/false);
  auto loop = scf::ForOp::create(
      b, loc, idx(1), idx(s.sinkhornIters), idx(1), ValueRange{c},
      [&](OpBuilder &nb, Location, Value, ValueRange carried) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value v = normalize(normalize(carried[0], true), false);
        scf::YieldOp::create(b, loc, ValueRange{v});
      });
  return loop.getResult(0);
}

void MhcPreBuilder::collapse(Value t) {
  int64_t h = s.hcMult, runs = s.width / kRun;
  int64_t rounds = llvm::divideCeil(runs, threads);
  bool masked = runs % threads != 0;
  auto runType = VectorType::get({kRun}, bf16);
  auto wideType = VectorType::get({kRun}, f32);
  // Every stream's runs of this thread first (16-byte loads), then x.
  SmallVector<Value> columns, valid;
  SmallVector<SmallVector<Value>> streams(rounds);
  for (int64_t q = 0; q < rounds; ++q) {
    Value run = add(tid, q * threads);
    valid.push_back(masked ? ult(run, idx(runs)) : Value());
    if (masked)
      run = minu(run, idx(runs - 1));
    columns.push_back(mul(run, kRun));
    for (int64_t k = 0; k < h; ++k) {
      auto load = vector::LoadOp::create(
          b, loc, runType, r, ValueRange{t, idx(k), columns[q]});
      load.setAlignment(uint64_t(16));
      streams[q].push_back(
          arith::ExtFOp::create(b, loc, wideType, load.getResult()));
    }
  }
  SmallVector<Value> xs;
  for (int64_t q = 0; q < rounds; ++q) {
    Value sum = arith::ConstantOp::create(b, loc, b.getZeroAttr(wideType));
    for (int64_t k = 0; k < h; ++k)
      sum = fadd(sum, fmul(vector::BroadcastOp::create(b, loc, wideType,
                                                       pre[k]),
                           streams[q][k]));
    xs.push_back(roundBf16(sum));
  }
  auto store = [&](int64_t q, Value v) {
    auto body = [&] {
      auto st = vector::StoreOp::create(
          b, loc, arith::TruncFOp::create(b, loc, runType, v), x,
          ValueRange{t, columns[q]});
      st.setAlignment(uint64_t(16));
    };
    if (valid[q])
      ifThen(valid[q], body);
    else
      body();
  };
  if (!s.xNorm) {
    for (int64_t q = 0; q < rounds; ++q)
      store(q, xs[q]);
    return;
  }
  // The rounded row's sum of squares: the thread's runs, the subgroup's
  // lanes (butterfly), then the subgroups' sums in order.
  Value ss = cf32(0.0);
  for (int64_t q = 0; q < rounds; ++q) {
    Value squares = fmul(xs[q], xs[q]);
    for (int64_t e = 0; e < kRun; ++e) {
      Value v = vector::ExtractOp::create(b, loc, squares, e);
      if (valid[q])
        v = arith::SelectOp::create(b, loc, valid[q], v, cf32(0.0));
      ss = fadd(ss, v);
    }
  }
  ss = subgroupSum(ss, subgroupSize);
  ifThen(ieq(lane, idx(0)), [&] {
    memref::StoreOp::create(b, loc, ss, norms, ValueRange{warp});
  });
  barrier();
  Value total = cf32(0.0);
  for (int64_t w = 0; w < kSubgroups; ++w)
    total = fadd(total,
                 memref::LoadOp::create(b, loc, norms, ValueRange{idx(w)}));
  Value scaleBy = rsqrt(fadd(fdiv(total, cf32(double(s.width))),
                             cf32(s.xNormEps)));
  Value splat = vector::BroadcastOp::create(b, loc, wideType, scaleBy);
  for (int64_t q = 0; q < rounds; ++q) {
    auto weight = vector::LoadOp::create(b, loc, runType, normWeight,
                                         ValueRange{columns[q]});
    weight.setAlignment(uint64_t(16));
    store(q, fmul(roundBf16(fmul(xs[q], splat)),
                  arith::ExtFOp::create(b, loc, wideType, weight.getResult())));
  }
}

gpu::GPUFuncOp mlir::strata::buildMhcPreKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const MhcPre &shape,
    int64_t subgroupSize) {
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, kSubgroups * subgroupSize,
      /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
        MhcPreBuilder(builder, loc, shape, subgroupSize)
            .build(func, KernelArguments(roles));
      });
}

LogicalResult mlir::strata::checkMhcPre(const TargetInfo &target,
                                        const MhcPre &shape,
                                        std::string &why) {
  int64_t h = shape.hcMult;
  if (h <= 0 || h * h > target.getSubgroupSize() ||
      (2 + h) * h + 1 > kSubgroups * target.getSubgroupSize()) {
    why = "the comb matrix does not fit a subgroup's lanes";
    return failure();
  }
  if (shape.width % kRun) {
    why = "the stream width is not a multiple of 8 columns";
    return failure();
  }
  if (shape.sinkhornIters < 1 || shape.slices < 1) {
    why = "unexpected mhc_pre shape";
    return failure();
  }
  return success();
}
