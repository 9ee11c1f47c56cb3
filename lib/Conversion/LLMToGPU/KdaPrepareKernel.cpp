//===- KdaPrepareKernel.cpp - KDA's key side, a subgroup per (token, head) ===//
//
// Part of strata, under the Apache License v2.0.
//
// buildKdaPrepareKernel: the GPU form of KdaOps.cpp's kda_prepare, the key
// side of the chunk path for every token of a request of more than
// decode_max_tokens tokens: the short causal depthwise conv + SiLU of the
// head's q, k and v channels (history from the conv state, zero at position
// 0), the L2 norms of q (times q_scale) and k, the log-decay g = lower *
// sigmoid(exp(A_log) (f + dt_bias)) and beta = sigmoid(b), into the f32
// rows kda_attention reads. A subgroup takes one (token, head): each lane a
// run of d / lanes adjacent channels (one vector load per tap and input, one
// vector store per output), the norms' sums of squares a butterfly over the
// subgroup (no block barrier: the generic kernel's block per (token, head)
// reduced twice over the block's threads and re-read its stores from global
// memory to scale them). A block holds kHeadsPerBlock subgroups, heads h0 ..
// h0 + kHeadsPerBlock - 1 of one token; grid (tokens, ceil(H /
// kHeadsPerBlock), 1). The same operations per value as the generic kernel
// except the sums of squares' association (lane runs, then butterflies).
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

class KdaPrepareBuilder : LaneArith {
public:
  KdaPrepareBuilder(OpBuilder &b, Location loc, const KdaPrepare &shape,
                    int64_t lanes)
      : LaneArith(b, loc), s(shape), lanes(lanes), run(shape.headDim / lanes) {
    f32 = b.getF32Type();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  /// This subgroup's (token t, head) of request r starting at token t0.
  void buildRow(Value r, Value t0, Value t);
  /// The lane's run of pre-conv inputs of q (which 0), k (1) or v (2) at
  /// token offset `off` (a constant, may be negative: the conv state's row)
  /// from token t, as f32: both candidates loaded at in-range indices and
  /// one selected, as the generic kernel does.
  SmallVector<Value> preConvRun(int64_t which, Value t, int64_t off);
  /// silu of the conv of the lane's channels of `which` at token t.
  SmallVector<Value> convolveRun(int64_t which, Value t);

  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fdiv(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value fexp(Value x) { return math::ExpOp::create(b, loc, x); }
  /// KernelBuilder's sigmoid and silu: 1 / (1 + exp(-x)), x * sigmoid(x).
  Value sigmoid(Value x) {
    return fdiv(cf32(1.0),
                fadd(cf32(1.0), fexp(arith::NegFOp::create(b, loc, x))));
  }
  Value silu(Value x) { return fmul(x, sigmoid(x)); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value asF32(Value v) {
    return v.getType().isF32() ? v : arith::ExtFOp::create(b, loc, f32, v);
  }
  Value loadF32(Value m, ValueRange at) {
    return asF32(memref::LoadOp::create(b, loc, m, at));
  }
  Value loadIndex(Value m, Value at) {
    return toIndex(memref::LoadOp::create(b, loc, m, ValueRange{at}));
  }
  /// The lane's run of `m` at (row, column): one vector load, as f32.
  SmallVector<Value> loadRun(Value m, ValueRange at);
  /// Stores the run `values` (f32) into `m` at (row, column), one vector.
  void storeRun(ArrayRef<Value> values, Value m, ValueRange at);

  const KdaPrepare &s;
  int64_t lanes, run;
  Type f32;
  // Arguments.
  Value q, k, v, f, beta, convW[3], aLog, dtBias, conv, positions, starts, src,
      qn, kn, vn, gl, betaOut;
  // Per row.
  Value head, channel, srcSlot, fresh, rowOffset;
};

} // namespace

void KdaPrepareBuilder::build(gpu::GPUFuncOp func,
                              const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  q = at(KernelRole::X);
  k = at(KernelRole::Key);
  v = at(KernelRole::Value);
  f = at(KernelRole::Decay);
  beta = at(KernelRole::Beta);
  convW[0] = at(KernelRole::QueryConv);
  convW[1] = at(KernelRole::KeyConv);
  convW[2] = at(KernelRole::ValueConv);
  aLog = at(KernelRole::DecayRate);
  dtBias = at(KernelRole::DecayBias);
  conv = at(KernelRole::ConvState);
  positions = at(KernelRole::Positions);
  starts = at(KernelRole::SeqStarts);
  src = at(KernelRole::SourceSlots);
  qn = at(KernelRole::PreparedQuery);
  kn = at(KernelRole::PreparedKey);
  vn = at(KernelRole::PreparedValue);
  gl = at(KernelRole::PreparedDecay);
  betaOut = at(KernelRole::PreparedBeta);

  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(lanes));
  Value subgroup = arith::DivUIOp::create(b, loc, tid, idx(lanes));
  Value t = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  head = add(mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
                 kKdaPrepareHeadsPerBlock),
             subgroup);
  Value numTokens = memref::DimOp::create(b, loc, q, 0);
  Value live =
      arith::AndIOp::create(b, loc, ult(t, numTokens), ult(head, idx(s.heads)));
  ifThen(live, [&] {
    Value r = requestOfToken(starts, t);
    Value t0 = loadIndex(starts, r);
    Value t1 = loadIndex(starts, add(r, 1));
    // Requests of at most decodeMaxTokens tokens are kda_decode's.
    ifThen(ult(idx(s.decodeMaxTokens), sub(t1, t0)),
           [&] { buildRow(r, t0, t); });
  });
  gpu::ReturnOp::create(b, loc);
}

SmallVector<Value> KdaPrepareBuilder::loadRun(Value m, ValueRange at) {
  auto type =
      VectorType::get({run}, cast<MemRefType>(m.getType()).getElementType());
  auto load = vector::LoadOp::create(b, loc, type, m, at);
  load.setAlignment(uint64_t(run * type.getElementTypeBitWidth() / 8));
  SmallVector<Value> values;
  for (int64_t e = 0; e < run; ++e)
    values.push_back(asF32(vector::ExtractOp::create(b, loc, load, e)));
  return values;
}

void KdaPrepareBuilder::storeRun(ArrayRef<Value> values, Value m,
                                 ValueRange at) {
  Value vec = vector::FromElementsOp::create(
      b, loc, VectorType::get({run}, f32), values);
  auto store = vector::StoreOp::create(b, loc, vec, m, at);
  store.setAlignment(uint64_t(run * 4));
}

SmallVector<Value> KdaPrepareBuilder::preConvRun(int64_t which, Value t,
                                                 int64_t off) {
  Value input = which == 0 ? q : which == 1 ? k : v;
  // The token's row t + off, clamped into the request (rowOffset = t - t0,
  // so the row is t0 + max(t - t0 + off, 0)).
  Value offset = arith::AddIOp::create(b, loc, rowOffset, idx(off));
  Value inRequest = cmpi(arith::CmpIPredicate::sge, offset, idx(0));
  Value row = select(inRequest, add(t, off), sub(t, rowOffset));
  SmallVector<Value> fromInput = loadRun(input, ValueRange{row, channel});
  if (s.convTaps == 1)
    return fromInput;
  // The conv state's row K - 1 + offset for offsets below 0 (clamped to
  // K - 2), channel which * P + ch.
  Value stateRow =
      minu(select(inRequest, idx(s.convTaps - 2), add(offset, s.convTaps - 1)),
           idx(s.convTaps - 2));
  Value stateColumn = add(channel, which * s.heads * s.headDim);
  SmallVector<Value> history =
      loadRun(conv, ValueRange{srcSlot, stateRow, stateColumn});
  SmallVector<Value> values;
  for (int64_t e = 0; e < run; ++e)
    values.push_back(
        select(inRequest, fromInput[e], select(fresh, cf32(0.0), history[e])));
  return values;
}

SmallVector<Value> KdaPrepareBuilder::convolveRun(int64_t which, Value t) {
  int64_t taps = s.convTaps;
  SmallVector<SmallVector<Value>> inputs;
  for (int64_t j = 0; j < taps; ++j)
    inputs.push_back(preConvRun(which, t, j - (taps - 1)));
  SmallVector<Value> out;
  for (int64_t e = 0; e < run; ++e) {
    Value ch = add(channel, e);
    Value sum = cf32(0.0);
    for (int64_t j = 0; j < taps; ++j)
      sum =
          fadd(sum, fmul(loadF32(convW[which], ValueRange{ch, idx(0), idx(j)}),
                         inputs[j][e]));
    out.push_back(silu(sum));
  }
  return out;
}

void KdaPrepareBuilder::buildRow(Value r, Value t0, Value t) {
  srcSlot = loadIndex(src, r);
  fresh = ieq(loadIndex(positions, t0), idx(0));
  rowOffset = sub(t, t0);
  channel = add(mul(head, s.headDim), mul(lane, run));
  SmallVector<Value> qs = convolveRun(0, t), ks = convolveRun(1, t),
                     vs = convolveRun(2, t);
  // g = lower * sigmoid(exp(A_log[h]) * (f + dt_bias)) per channel.
  Value rate = fexp(loadF32(aLog, ValueRange{head}));
  SmallVector<Value> fs = loadRun(f, ValueRange{t, channel});
  SmallVector<Value> gs;
  for (int64_t e = 0; e < run; ++e) {
    Value bias = loadF32(dtBias, ValueRange{add(channel, e)});
    gs.push_back(
        fmul(cf32(s.gateLowerBound), sigmoid(fmul(rate, fadd(fs[e], bias)))));
  }
  // x * scale / sqrt(sum of squares + eps) over the head's channels.
  auto l2 = [&](SmallVector<Value> &xs, double scale) {
    Value ss = cf32(0.0);
    for (Value x : xs)
      ss = fadd(ss, fmul(x, x));
    ss = subgroupSum(ss, lanes);
    Value factor = fdiv(cf32(scale),
                        math::SqrtOp::create(b, loc, fadd(ss, cf32(s.l2Eps))));
    for (Value &x : xs)
      x = fmul(x, factor);
  };
  l2(qs, s.qScale);
  l2(ks, 1.0);
  storeRun(qs, qn, ValueRange{t, channel});
  storeRun(ks, kn, ValueRange{t, channel});
  storeRun(vs, vn, ValueRange{t, channel});
  storeRun(gs, gl, ValueRange{t, channel});
  ifThen(ieq(lane, idx(0)), [&] {
    memref::StoreOp::create(b, loc, sigmoid(loadF32(beta, ValueRange{t, head})),
                            betaOut, ValueRange{t, head});
  });
}

gpu::GPUFuncOp mlir::strata::buildKdaPrepareKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles,
    const KdaPrepare &shape, int64_t subgroupSize) {
  return getOrCreateMatrixKernel(builder, loc, module, name, argTypes,
                                 kKdaPrepareHeadsPerBlock * subgroupSize,
                                 /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
                                   KdaPrepareBuilder(builder, loc, shape,
                                                     subgroupSize)
                                       .build(func, KernelArguments(roles));
                                 });
}

LogicalResult mlir::strata::checkKdaPrepare(const TargetInfo &target,
                                            const KdaPrepare &shape,
                                            std::string &why) {
  int64_t lanes = target.getSubgroupSize();
  int64_t run = shape.headDim / lanes;
  if (shape.headDim % lanes || !llvm::is_contained({1, 2, 4, 8}, run)) {
    why = "a head is not 1, 2, 4 or 8 channels per lane";
    return failure();
  }
  if (shape.convTaps < 1 || shape.heads < 1) {
    why = "unexpected kda_prepare shape";
    return failure();
  }
  return success();
}
