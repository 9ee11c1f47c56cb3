//===- KdaTokenKernels.cpp - KDA's per-token kernels, a subgroup per head -===//
//
// Part of strata, under the Apache License v2.0.
//
// The GPU forms of KdaOps.cpp's per-(token, head) kernels of the chunk path,
// which work on every token of a request of more than decode_max_tokens
// tokens. A subgroup takes one (token, head): each lane a run of d / lanes
// adjacent channels (one vector load or store per row it touches), the
// head's sums of squares a butterfly over the subgroup: no block barrier
// (the generic kernels' block per (token, head) reduced over the block's
// threads, and kda_prepare re-read its unnormalised rows from global memory
// to scale them). A block holds kKdaTokenHeadsPerBlock subgroups, heads h0
// .. h0 + kKdaTokenHeadsPerBlock - 1 of one token; grid (tokens, ceil(H /
// kKdaTokenHeadsPerBlock), 1). The same operations per value as the generic
// kernels except the sums of squares' association (lane runs, then
// butterflies).
//
// buildKdaPrepareKernel (kda_prepare): the short causal depthwise conv +
// SiLU of the head's q, k and v channels (history from the conv state, zero
// at position 0), the L2 norms of q (times q_scale) and k, the log-decay g =
// lower * sigmoid(exp(A_log) (f + dt_bias)) and beta = sigmoid(b), into the
// rows the chunk kernels read (q, k and v rounded to the buffers' element
// type, bf16 in bf16 models; g and beta f32).
//
// buildKdaOutputKernel (kda_output): the gated output RMSNorm of
// kda_attention's read-out into o and, in the row of a request's last
// token, the last K - 1 pre-conv inputs of the head's channels into the
// conv state (each lane its own channels, rows in ascending order: as the
// generic kernel, a row read from the source slot is read before it is
// written when source and destination are one slot).
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

/// What both kernels share: the subgroup's (token, head) and request, a
/// lane's run of channels, the pre-conv inputs and the arithmetic of
/// KernelBuilder.
class KdaTokenRowBuilder : protected LaneArith {
protected:
  KdaTokenRowBuilder(OpBuilder &b, Location loc, int64_t heads, int64_t headDim,
                     int64_t convTaps, int64_t lanes)
      : LaneArith(b, loc), heads(heads), headDim(headDim), convTaps(convTaps),
        lanes(lanes), run(headDim / lanes) {
    f32 = b.getF32Type();
  }

  /// The kernel's body: for this subgroup's (token t, head) of a request r
  /// of more than `decodeMaxTokens` tokens [t0, t1), `row(r, t0, t1, t)`
  /// (`head`, `channel` and `lane` set); `rows` is an argument whose extent
  /// is the step's tokens.
  void forEachLongRow(Value rows, Value starts, int64_t decodeMaxTokens,
                      llvm::function_ref<void(Value, Value, Value, Value)> row);

  /// The lane's run of pre-conv inputs of q (which 0), k (1) or v (2) at
  /// token offset `offset` (an index, may be negative: the conv state's row
  /// K - 1 + offset of slot `srcSlot`, zero where `fresh`) from the request's
  /// first token t0, as f32: both candidates loaded at in-range indices and
  /// one selected, as the generic kernel does.
  SmallVector<Value> preConvRun(ArrayRef<Value> qkv, Value conv, int64_t which,
                                Value t0, Value offset, Value srcSlot,
                                Value fresh);

  Value loadIndex(Value m, Value at) {
    return toIndex(memref::LoadOp::create(b, loc, m, ValueRange{at}));
  }
  /// `n` elements of `m` from `at` (contiguous in its last dimension): one
  /// vector load, aligned to its bytes up to 16.
  Value loadVector(Value m, ValueRange at, int64_t n);
  /// The lane's run of `m` at `at`: one vector load, as f32.
  SmallVector<Value> loadRun(Value m, ValueRange at);
  /// Stores the run `values` (f32, rounded to m's element type) into `m` at
  /// `at`, one vector.
  void storeRun(ArrayRef<Value> values, Value m, ValueRange at);
  /// The sum of the subgroup's runs of squares (lane runs in order, then a
  /// butterfly): a head's sum of squares in every lane.
  Value headSumOfSquares(ArrayRef<Value> xs);

  int64_t heads, headDim, convTaps, lanes, run;
  Type f32;
  Value head, channel;
};

class KdaPrepareBuilder : KdaTokenRowBuilder {
public:
  KdaPrepareBuilder(OpBuilder &b, Location loc, const KdaPrepare &shape,
                    int64_t lanes)
      : KdaTokenRowBuilder(b, loc, shape.heads, shape.headDim, shape.convTaps,
                           lanes),
        s(shape) {}

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  /// silu of the conv of the lane's channels of `which` at token t.
  SmallVector<Value> convolveRun(int64_t which, Value t0, Value t);
  void buildRow(Value r, Value t0, Value t);

  const KdaPrepare &s;
  Value qkv[3], f, beta, convW[3], aLog, dtBias, conv, positions, src, qn, kn,
      vn, gl, betaOut;
  Value srcSlot, fresh;
};

class KdaOutputBuilder : KdaTokenRowBuilder {
public:
  KdaOutputBuilder(OpBuilder &b, Location loc, const KdaOutput &shape,
                   int64_t lanes)
      : KdaTokenRowBuilder(b, loc, shape.heads, shape.headDim, shape.convTaps,
                           lanes),
        s(shape) {}

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  void buildRow(Value r, Value t0, Value t1, Value t);
  /// The conv state after the request's n tokens: row w of slot dst[r] is
  /// the pre-conv input at offset n - (K - 1) + w, the lane's channels.
  void writeConvState(Value r, Value t0, Value t1);

  const KdaOutput &s;
  Value readOut, gate, oNorm, qkv[3], conv, positions, src, dst, out;
};

} // namespace

//===----------------------------------------------------------------------===//
// KdaTokenRowBuilder
//===----------------------------------------------------------------------===//

void KdaTokenRowBuilder::forEachLongRow(
    Value rows, Value starts, int64_t decodeMaxTokens,
    llvm::function_ref<void(Value, Value, Value, Value)> row) {
  Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(lanes));
  Value subgroup = arith::DivUIOp::create(b, loc, tid, idx(lanes));
  Value t = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  head = add(mul(gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
                 kKdaTokenHeadsPerBlock),
             subgroup);
  channel = add(mul(head, headDim), mul(lane, run));
  Value numTokens = memref::DimOp::create(b, loc, rows, 0);
  Value live =
      arith::AndIOp::create(b, loc, ult(t, numTokens), ult(head, idx(heads)));
  ifThen(live, [&] {
    Value r = requestOfToken(starts, t);
    Value t0 = loadIndex(starts, r);
    Value t1 = loadIndex(starts, add(r, 1));
    // Requests of at most decodeMaxTokens tokens are kda_decode's.
    ifThen(ult(idx(decodeMaxTokens), sub(t1, t0)), [&] { row(r, t0, t1, t); });
  });
}

Value KdaTokenRowBuilder::loadVector(Value m, ValueRange at, int64_t n) {
  auto type =
      VectorType::get({n}, cast<MemRefType>(m.getType()).getElementType());
  auto load = vector::LoadOp::create(b, loc, type, m, at);
  load.setAlignment(
      std::min<uint64_t>(16, n * type.getElementTypeBitWidth() / 8));
  return load;
}

SmallVector<Value> KdaTokenRowBuilder::loadRun(Value m, ValueRange at) {
  Value load = loadVector(m, at, run);
  SmallVector<Value> values;
  for (int64_t e = 0; e < run; ++e)
    values.push_back(asF32(vector::ExtractOp::create(b, loc, load, e)));
  return values;
}

void KdaTokenRowBuilder::storeRun(ArrayRef<Value> values, Value m,
                                  ValueRange at) {
  Type elem = cast<MemRefType>(m.getType()).getElementType();
  SmallVector<Value> rounded;
  for (Value v : values)
    rounded.push_back(elem.isF32() ? v
                                   : arith::TruncFOp::create(b, loc, elem, v));
  Value vec = vector::FromElementsOp::create(
      b, loc, VectorType::get({run}, elem), rounded);
  auto store = vector::StoreOp::create(b, loc, vec, m, at);
  store.setAlignment(uint64_t(run * elem.getIntOrFloatBitWidth() / 8));
}

Value KdaTokenRowBuilder::headSumOfSquares(ArrayRef<Value> xs) {
  Value ss = cf32(0.0);
  for (Value x : xs)
    ss = fadd(ss, fmul(x, x));
  return subgroupSum(ss, lanes);
}

SmallVector<Value> KdaTokenRowBuilder::preConvRun(ArrayRef<Value> qkv,
                                                  Value conv, int64_t which,
                                                  Value t0, Value offset,
                                                  Value srcSlot, Value fresh) {
  // Row t0 + max(offset, 0) of the input.
  Value inRequest = cmpi(arith::CmpIPredicate::sge, offset, idx(0));
  Value row = add(t0, select(inRequest, offset, idx(0)));
  SmallVector<Value> fromInput = loadRun(qkv[which], ValueRange{row, channel});
  if (convTaps == 1)
    return fromInput;
  // The conv state's row min(K - 1 + offset, K - 2), channel which * P + ch.
  Value stateRow = select(inRequest, idx(convTaps - 2),
                          minu(add(offset, convTaps - 1), idx(convTaps - 2)));
  Value stateColumn = add(channel, which * heads * headDim);
  // Loaded only where the offset is before the request (the same for the
  // subgroup: no divergence), zeros elsewhere.
  auto vecType =
      VectorType::get({run}, cast<MemRefType>(conv.getType()).getElementType());
  auto pick = scf::IfOp::create(b, loc, TypeRange{vecType}, inRequest, true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(pick.thenBlock());
    scf::YieldOp::create(
        b, loc,
        ValueRange{arith::ConstantOp::create(b, loc, b.getZeroAttr(vecType))});
    b.setInsertionPointToStart(pick.elseBlock());
    scf::YieldOp::create(
        b, loc,
        ValueRange{
            loadVector(conv, ValueRange{srcSlot, stateRow, stateColumn}, run)});
  }
  SmallVector<Value> history;
  for (int64_t e = 0; e < run; ++e)
    history.push_back(
        asF32(vector::ExtractOp::create(b, loc, pick.getResult(0), e)));
  SmallVector<Value> values;
  for (int64_t e = 0; e < run; ++e)
    values.push_back(
        select(inRequest, fromInput[e], select(fresh, cf32(0.0), history[e])));
  return values;
}

//===----------------------------------------------------------------------===//
// kda_prepare
//===----------------------------------------------------------------------===//

void KdaPrepareBuilder::build(gpu::GPUFuncOp func,
                              const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  qkv[0] = at(KernelRole::X);
  qkv[1] = at(KernelRole::Key);
  qkv[2] = at(KernelRole::Value);
  f = at(KernelRole::Decay);
  beta = at(KernelRole::Beta);
  convW[0] = at(KernelRole::QueryConv);
  convW[1] = at(KernelRole::KeyConv);
  convW[2] = at(KernelRole::ValueConv);
  aLog = at(KernelRole::DecayRate);
  dtBias = at(KernelRole::DecayBias);
  conv = at(KernelRole::ConvState);
  positions = at(KernelRole::Positions);
  src = at(KernelRole::SourceSlots);
  qn = at(KernelRole::PreparedQuery);
  kn = at(KernelRole::PreparedKey);
  vn = at(KernelRole::PreparedValue);
  gl = at(KernelRole::PreparedDecay);
  betaOut = at(KernelRole::PreparedBeta);
  forEachLongRow(
      qkv[0], at(KernelRole::SeqStarts), s.decodeMaxTokens,
      [&](Value r, Value t0, Value, Value t) { buildRow(r, t0, t); });
  gpu::ReturnOp::create(b, loc);
}

SmallVector<Value> KdaPrepareBuilder::convolveRun(int64_t which, Value t0,
                                                  Value t) {
  SmallVector<SmallVector<Value>> inputs;
  Value i = sub(t, t0);
  for (int64_t j = 0; j < convTaps; ++j)
    inputs.push_back(
        preConvRun(qkv, conv, which, t0,
                   arith::SubIOp::create(b, loc, i, idx(convTaps - 1 - j)),
                   srcSlot, fresh));
  // A channel's K taps: one vector load each.
  SmallVector<Value> out;
  for (int64_t e = 0; e < run; ++e) {
    Value taps = loadVector(
        convW[which], ValueRange{add(channel, e), idx(0), idx(0)}, convTaps);
    Value sum = cf32(0.0);
    for (int64_t j = 0; j < convTaps; ++j)
      sum = fadd(sum, fmul(asF32(vector::ExtractOp::create(b, loc, taps, j)),
                           inputs[j][e]));
    out.push_back(silu(sum));
  }
  return out;
}

void KdaPrepareBuilder::buildRow(Value r, Value t0, Value t) {
  srcSlot = loadIndex(src, r);
  fresh = ieq(loadIndex(positions, t0), idx(0));
  SmallVector<Value> qs = convolveRun(0, t0, t), ks = convolveRun(1, t0, t),
                     vs = convolveRun(2, t0, t);
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
    Value factor =
        fdiv(cf32(scale), fsqrt(fadd(headSumOfSquares(xs), cf32(s.l2Eps))));
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

//===----------------------------------------------------------------------===//
// kda_output
//===----------------------------------------------------------------------===//

void KdaOutputBuilder::build(gpu::GPUFuncOp func,
                             const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  readOut = at(KernelRole::ReadOut);
  gate = at(KernelRole::OutputGate);
  oNorm = at(KernelRole::OutNormWeight);
  qkv[0] = at(KernelRole::X);
  qkv[1] = at(KernelRole::Key);
  qkv[2] = at(KernelRole::Value);
  conv = at(KernelRole::ConvState);
  positions = at(KernelRole::Positions);
  src = at(KernelRole::SourceSlots);
  dst = at(KernelRole::DestSlots);
  out = at(KernelRole::Out);
  forEachLongRow(
      readOut, at(KernelRole::SeqStarts), s.decodeMaxTokens,
      [&](Value r, Value t0, Value t1, Value t) { buildRow(r, t0, t1, t); });
  gpu::ReturnOp::create(b, loc);
}

void KdaOutputBuilder::buildRow(Value r, Value t0, Value t1, Value t) {
  // y = x / sqrt(mean(x^2) + eps) * o_norm * sigmoid(gate).
  SmallVector<Value> xs = loadRun(readOut, ValueRange{t, channel});
  SmallVector<Value> gates = loadRun(gate, ValueRange{t, channel});
  Value inv = fdiv(cf32(1.0),
                   fsqrt(fadd(fdiv(headSumOfSquares(xs), cf32(double(headDim))),
                              cf32(s.normEps))));
  Value j0 = mul(lane, run);
  SmallVector<Value> ys;
  for (int64_t e = 0; e < run; ++e) {
    Value weight = loadF32(oNorm, ValueRange{add(j0, e)});
    ys.push_back(fmul(fmul(fmul(xs[e], inv), weight), sigmoid(gates[e])));
  }
  storeRun(ys, out, ValueRange{t, channel});
  // The request's last token: the conv state.
  ifThen(ieq(add(t, 1), t1), [&] { writeConvState(r, t0, t1); });
}

void KdaOutputBuilder::writeConvState(Value r, Value t0, Value t1) {
  if (convTaps == 1)
    return;
  Value srcSlot = loadIndex(src, r);
  Value dstSlot = loadIndex(dst, r);
  Value fresh = ieq(loadIndex(positions, t0), idx(0));
  Value n = sub(t1, t0);
  for (int64_t w = 0; w + 1 < convTaps; ++w) {
    Value offset = arith::SubIOp::create(b, loc, n, idx(convTaps - 1 - w));
    for (int64_t which = 0; which < 3; ++which) {
      SmallVector<Value> values =
          preConvRun(qkv, conv, which, t0, offset, srcSlot, fresh);
      storeRun(
          values, conv,
          ValueRange{dstSlot, idx(w), add(channel, which * heads * headDim)});
    }
  }
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

gpu::GPUFuncOp mlir::strata::buildKdaPrepareKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles,
    const KdaPrepare &shape, int64_t subgroupSize) {
  return getOrCreateMatrixKernel(builder, loc, module, name, argTypes,
                                 kKdaTokenHeadsPerBlock * subgroupSize,
                                 /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
                                   KdaPrepareBuilder(builder, loc, shape,
                                                     subgroupSize)
                                       .build(func, KernelArguments(roles));
                                 });
}

gpu::GPUFuncOp mlir::strata::buildKdaOutputKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const KdaOutput &shape,
    int64_t subgroupSize) {
  return getOrCreateMatrixKernel(builder, loc, module, name, argTypes,
                                 kKdaTokenHeadsPerBlock * subgroupSize,
                                 /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
                                   KdaOutputBuilder(builder, loc, shape,
                                                    subgroupSize)
                                       .build(func, KernelArguments(roles));
                                 });
}

LogicalResult mlir::strata::checkKdaTokenRows(const TargetInfo &target,
                                              int64_t heads, int64_t headDim,
                                              int64_t convTaps,
                                              std::string &why) {
  int64_t lanes = target.getSubgroupSize();
  int64_t run = headDim / lanes;
  if (headDim % lanes || !llvm::is_contained({1, 2, 4, 8}, run)) {
    why = "a head is not 1, 2, 4 or 8 channels per lane";
    return failure();
  }
  if (convTaps < 1 || heads < 1) {
    why = "unexpected KDA shape";
    return failure();
  }
  return success();
}
