//===- KdaDecodeKernel.cpp - KDA's recurrent form, state held in registers ===//
//
// Part of strata, under the Apache License v2.0.
//
// buildKdaDecodeKernel: the GPU form of KdaOps.cpp's kda_decode, one block
// per (request, head) (grid (requests + 1, H, 1); the last block has no
// request), d threads. Thread t works on channel t of the token side and on
// a part of the state: a 16-byte run of kRun columns (c0 = kRun (t mod
// d / kRun)) over d / kRun rows (row group t div (d / kRun)), so that a
// subgroup's state loads are whole 512-byte rows of 16-byte vectors.
//   1. the thread's state loads (slot src_slots[r]) are issued before
//      anything else, in flight while the token's conv and norms are
//      computed (the zero state at position 0 is selected where the first
//      token uses them);
//   2. per token: the conv + SiLU of channel t of q, k and v, its log-decay
//      and the head's beta; the L2 norms of q and k as block sums (subgroup
//      butterflies, then the subgroups' sums in order); q, k and the decays
//      (each twice: the update reads its own copies) and v into workgroup
//      rows;
//   3. the delta rule on the thread's part in registers: the decay and the
//      row group's share of k . S (summed in row order; the row groups'
//      shares added in order through workgroup memory), delta, the rank-one
//      update and the row group's share of the read-out; the part stored
//      where a slot keeps it (per-token slots: after a token whose slot the
//      next token does not share; else after the last token) and kept for
//      the next token (never read back);
//   4. the read-out of channel t (the row groups' shares in order), the
//      gated output norm (a block sum) and the output;
// then the conv state as the generic kernel writes it. The same operations
// per value as the generic kernel except the sums' association (row
// groups, block sums).
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

/// The block sums a token needs: the L2 norms' two (q, k), the output
/// norm's one; each subgroup's share in a workgroup row of its own.
enum BlockSum : int64_t { kQueryNorm, kKeyNorm, kOutNorm, kBlockSums };

/// State columns per thread: a 16-byte run of f32 (the head's d threads
/// then hold d / kRun runs x kRun row groups).
constexpr int64_t kRun = 4;

class KdaDecodeBuilder : LaneArith {
public:
  KdaDecodeBuilder(OpBuilder &b, Location loc, const KdaDecode &shape,
                   int64_t lanes)
      : LaneArith(b, loc), s(shape), lanes(lanes),
        subgroups(shape.headDim / lanes), runGroups(shape.headDim / kRun),
        rowGroups(kRun), rowsPerThread(shape.headDim / kRun) {
    f32 = b.getF32Type();
    runType = VectorType::get({kRun}, f32);
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  void buildRequest(Value r);
  /// One token: the column after it (`column` before).
  SmallVector<Value> buildToken(Value t, ArrayRef<Value> column);
  /// The pre-conv input of this thread's channel of q (which 0), k (1) or v
  /// (2) at token offset `off` from t0 (negative: the conv state's row).
  Value preConv(Value off, int64_t which);
  /// silu of the conv of this thread's channel of `which` at offset i.
  Value convolve(int64_t which, Value i);
  /// Writes the conv state after the request's first `n` tokens to `slot`.
  void writeConvState(Value slot, Value n);
  /// `v` summed over the block (butterflies, then the subgroups' sums in
  /// order through workgroup row `which`); one barrier.
  SmallVector<Value> blockSums(ArrayRef<Value> values, ArrayRef<int64_t> which);

  /// KernelBuilder::store: rounded to the buffer's element type.
  void storeF32(Value v, Value m, ValueRange at) {
    Type elem = cast<MemRefType>(m.getType()).getElementType();
    if (!elem.isF32())
      v = arith::TruncFOp::create(b, loc, elem, v);
    memref::StoreOp::create(b, loc, v, m, at);
  }
  Value loadIndex(Value m, Value at) {
    return toIndex(memref::LoadOp::create(b, loc, m, ValueRange{at}));
  }
  /// Rows r0 + r .. r0 + r + kRun of a workgroup row (one 16-byte load: r0
  /// and r are multiples of kRun), each broadcast to a run.
  SmallVector<Value> readRuns(Value row, int64_t r) {
    Value four = loadRun(row, {add(r0, r)});
    SmallVector<Value> runs;
    for (int64_t e = 0; e < kRun; ++e)
      runs.push_back(vector::BroadcastOp::create(
          b, loc, runType, vector::ExtractOp::create(b, loc, four, e)));
    return runs;
  }
  /// The run of `row` (a workgroup row or [.., d] buffer) at `at`.
  Value loadRun(Value m, ValueRange at) {
    auto load = vector::LoadOp::create(b, loc, runType, m, at);
    load.setAlignment(uint64_t(kRun * 4));
    return load;
  }
  void storeRun(Value v, Value m, ValueRange at) {
    auto store = vector::StoreOp::create(b, loc, v, m, at);
    store.setAlignment(uint64_t(kRun * 4));
  }

  const KdaDecode &s;
  int64_t lanes, subgroups;
  /// The state's threads: runs of kRun columns x row groups of
  /// rowsPerThread rows.
  int64_t runGroups, rowGroups, rowsPerThread;
  Type f32;
  VectorType runType;
  // Arguments.
  Value q, k, v, f, beta, gate, qConv, kConv, vConv, aLog, dtBias, oNorm;
  Value state, conv, positions, starts, src, dst, tokenSlots, out;
  // Workgroup rows: q, k (twice), the decays and v of the token; each row
  // group's partial sums of k . S and of the read-out; the block sums.
  Value qRow, kRow, kUpdateRow, alphaRow, alphaUpdateRow, vRow, predParts,
      readParts, sums;
  // Per block: this thread's channel and its part of the state (columns
  // c0 .. c0 + kRun, rows r0 .. r0 + rowsPerThread, row group rg).
  Value tid, warp, h, ch, t0, t1, srcSlot, dstSlot, fresh, rate, dtb, onw;
  Value c0, r0, rg;
  SmallVector<Value> weights[3];
};

} // namespace

void KdaDecodeBuilder::build(gpu::GPUFuncOp func,
                             const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  q = at(KernelRole::X);
  k = at(KernelRole::Key);
  v = at(KernelRole::Value);
  f = at(KernelRole::Decay);
  beta = at(KernelRole::Beta);
  gate = at(KernelRole::OutputGate);
  qConv = at(KernelRole::QueryConv);
  kConv = at(KernelRole::KeyConv);
  vConv = at(KernelRole::ValueConv);
  aLog = at(KernelRole::DecayRate);
  dtBias = at(KernelRole::DecayBias);
  oNorm = at(KernelRole::OutNormWeight);
  state = at(KernelRole::RecurrentState);
  conv = at(KernelRole::ConvState);
  positions = at(KernelRole::Positions);
  starts = at(KernelRole::SeqStarts);
  src = at(KernelRole::SourceSlots);
  dst = at(KernelRole::DestSlots);
  tokenSlots = at(KernelRole::TokenSlots);
  out = at(KernelRole::Out);
  qRow = addWorkgroupBuffer(func, loc, {s.headDim}, f32);
  kRow = addWorkgroupBuffer(func, loc, {s.headDim}, f32);
  kUpdateRow = addWorkgroupBuffer(func, loc, {s.headDim}, f32);
  alphaRow = addWorkgroupBuffer(func, loc, {s.headDim}, f32);
  alphaUpdateRow = addWorkgroupBuffer(func, loc, {s.headDim}, f32);
  vRow = addWorkgroupBuffer(func, loc, {s.headDim}, f32);
  predParts = addWorkgroupBuffer(func, loc, {rowGroups, s.headDim}, f32);
  readParts = addWorkgroupBuffer(func, loc, {rowGroups, s.headDim}, f32);
  sums = addWorkgroupBuffer(func, loc, {kBlockSums, subgroups}, f32);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(lanes));
  warp = arith::DivUIOp::create(b, loc, tid, idx(lanes));
  c0 = mul(arith::RemUIOp::create(b, loc, tid, idx(runGroups)), kRun);
  rg = arith::DivUIOp::create(b, loc, tid, idx(runGroups));
  r0 = mul(rg, rowsPerThread);
  Value r = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
  h = gpu::BlockIdOp::create(b, loc, gpu::Dimension::y);
  Value requests =
      sub(memref::DimOp::create(b, loc, starts, 0).getResult(), idx(1));
  // Block-uniform branches: every thread of a block takes the same ones.
  ifThen(ult(r, requests), [&] { buildRequest(r); });
  gpu::ReturnOp::create(b, loc);
}

void KdaDecodeBuilder::buildRequest(Value r) {
  t0 = loadIndex(starts, r);
  t1 = loadIndex(starts, add(r, 1));
  Value n = sub(t1, t0);
  auto request = [&] {
    int64_t d = s.headDim;
    srcSlot = loadIndex(src, r);
    dstSlot = loadIndex(dst, r);
    fresh = ieq(loadIndex(positions, t0), idx(0));
    ch = add(arith::MulIOp::create(b, loc, h, idx(d)), tid);
    // 1. The thread's part of the state first (16-byte runs): its loads
    // are in flight while the first token's conv and norms are computed
    // (a zero state at position 0 is selected where the first token uses
    // them, not here, which would wait for the loads).
    SmallVector<Value> column;
    for (int64_t i = 0; i < rowsPerThread; ++i)
      column.push_back(loadRun(state, {srcSlot, h, add(r0, i), c0}));
    rate = fexp(loadF32(aLog, h));
    dtb = loadF32(dtBias, ch);
    onw = loadF32(oNorm, tid);
    Value zero = idx(0);
    for (auto [which, w] :
         llvm::enumerate(ArrayRef<Value>{qConv, kConv, vConv}))
      for (int64_t j = 0; j < s.convTaps; ++j)
        weights[which].push_back(loadF32(w, {ch, zero, idx(j)}));
    // 2.-4. Token by token, the column carried in registers.
    auto loop = scf::ForOp::create(
        b, loc, t0, t1, idx(1), column,
        [&](OpBuilder &nb, Location, Value t, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> in(carried.begin(), carried.end());
          scf::YieldOp::create(b, loc, buildToken(t, in));
        });
    (void)loop;
    // The conv state: after the last token into dst; with per-token slots
    // after every token whose slot the next token does not share, the last
    // token first (only the first token's slot may be the source, written
    // last, in place, in ascending rows).
    if (!tokenSlots) {
      writeConvState(dstSlot, n);
      return;
    }
    scf::ForOp::create(
        b, loc, idx(0), n, idx(1), ValueRange{},
        [&](OpBuilder &nb, Location, Value back, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value i = sub(sub(n, idx(1)), back);
          Value t = add(t0, i);
          Value last = ieq(back, idx(0));
          Value next = minu(add(t, 1), sub(t1, idx(1)));
          Value slot = loadIndex(tokenSlots, t);
          Value nextSlot = select(last, idx(-1), loadIndex(tokenSlots, next));
          ifThen(cmpi(arith::CmpIPredicate::ne, slot, nextSlot),
                 [&] { writeConvState(slot, add(i, 1)); });
          scf::YieldOp::create(b, loc);
        });
  };
  if (s.decodeMaxTokens > 0)
    ifThen(cmpi(arith::CmpIPredicate::sle, n, idx(s.decodeMaxTokens)), request);
  else
    request();
}

Value KdaDecodeBuilder::preConv(Value off, int64_t which) {
  Value input = which == 0 ? q : which == 1 ? k : v;
  Value zero = idx(0);
  Value row = add(t0, arith::MaxSIOp::create(b, loc, off, zero));
  Value fromInput = loadF32(input, {row, ch});
  if (s.convTaps == 1)
    return fromInput;
  // Both candidates at in-range indices, one selected (no branches).
  Value history = arith::MinSIOp::create(b, loc, add(off, s.convTaps - 1),
                                         idx(s.convTaps - 2));
  Value column = add(ch, which * s.heads * s.headDim);
  Value old =
      select(fresh, cf32(0.0), loadF32(conv, {srcSlot, history, column}));
  return select(cmpi(arith::CmpIPredicate::sge, off, zero), fromInput, old);
}

Value KdaDecodeBuilder::convolve(int64_t which, Value i) {
  Value sum = cf32(0.0);
  for (int64_t j = 0; j < s.convTaps; ++j) {
    Value off = add(sub(i, idx(s.convTaps - 1)), idx(j));
    sum = fadd(sum, fmul(weights[which][j], preConv(off, which)));
  }
  return silu(sum);
}

SmallVector<Value> KdaDecodeBuilder::blockSums(ArrayRef<Value> values,
                                               ArrayRef<int64_t> which) {
  for (auto [value, row] : llvm::zip_equal(values, which)) {
    Value total = subgroupSum(value, lanes);
    Value at = idx(row);
    ifThen(ieq(lane, idx(0)), [&] {
      memref::StoreOp::create(b, loc, total, sums, ValueRange{at, warp});
    });
  }
  barrier();
  SmallVector<Value> totals;
  for (int64_t row : which) {
    Value total = cf32(0.0);
    for (int64_t w = 0; w < subgroups; ++w)
      total = fadd(total, memref::LoadOp::create(b, loc, sums,
                                                 ValueRange{idx(row), idx(w)}));
    totals.push_back(total);
  }
  return totals;
}

SmallVector<Value> KdaDecodeBuilder::buildToken(Value t,
                                                ArrayRef<Value> column) {
  int64_t d = s.headDim;
  Value i = sub(t, t0);
  // 2. This thread's channel: conv + SiLU, decay; the head's beta; the
  // output gate (loaded now, used at the end).
  Value qv = convolve(0, i), kv = convolve(1, i), vv = convolve(2, i);
  Value g = fmul(cf32(s.gateLowerBound),
                 sigmoid(fmul(rate, fadd(loadF32(f, {t, ch}), dtb))));
  Value alpha = fexp(g);
  Value strength = sigmoid(loadF32(beta, {t, h}));
  Value gateValue = loadF32(gate, {t, ch});
  SmallVector<Value> norms =
      blockSums({fmul(qv, qv), fmul(kv, kv)}, {kQueryNorm, kKeyNorm});
  Value eps = cf32(s.l2Eps);
  Value qn = fmul(qv, fdiv(cf32(s.qScale), fsqrt(fadd(norms[0], eps))));
  Value kn = fmul(kv, fdiv(cf32(1.0), fsqrt(fadd(norms[1], eps))));
  for (auto [value, row] : {std::pair{qn, qRow},
                            {kn, kRow},
                            {kn, kUpdateRow},
                            {alpha, alphaRow},
                            {alpha, alphaUpdateRow},
                            {vv, vRow}})
    memref::StoreOp::create(b, loc, value, row, ValueRange{tid});
  barrier();
  // 3. The delta rule on the thread's part, each sum in row order: the
  // decay and this row group's k . S (the row groups' partial sums added
  // in order after a barrier), delta, the update and the read-out's part.
  // The update reads k from a copy of its row: from one row, the compiler
  // keeps the first pass's loads of k for the update as well (a second
  // part's worth of registers).
  Value zeroState = arith::AndIOp::create(b, loc, ieq(t, t0), fresh);
  SmallVector<Value> state0;
  for (Value x : column)
    state0.push_back(select(zeroState, zeros(kRun), x));
  column = state0;
  Value pred = zeros(kRun);
  for (int64_t r = 0; r < rowsPerThread; r += kRun) {
    SmallVector<Value> alphas = readRuns(alphaRow, r), ks = readRuns(kRow, r);
    for (int64_t e = 0; e < kRun; ++e)
      pred = fadd(pred, fmul(fmul(alphas[e], column[r + e]), ks[e]));
  }
  storeRun(pred, predParts, {rg, c0});
  barrier();
  Value total = zeros(kRun);
  for (int64_t g = 0; g < rowGroups; ++g)
    total = fadd(total, loadRun(predParts, {idx(g), c0}));
  Value delta = fmul(vector::BroadcastOp::create(b, loc, runType, strength),
                     fsub(loadRun(vRow, {c0}), total));
  SmallVector<Value> updated;
  Value part = zeros(kRun);
  for (int64_t r = 0; r < rowsPerThread; r += kRun) {
    SmallVector<Value> alphas = readRuns(alphaUpdateRow, r);
    SmallVector<Value> ks = readRuns(kUpdateRow, r), qs = readRuns(qRow, r);
    for (int64_t e = 0; e < kRun; ++e) {
      Value decayed = fmul(alphas[e], column[r + e]);
      updated.push_back(fadd(decayed, fmul(ks[e], delta)));
      part = fadd(part, fmul(updated[r + e], qs[e]));
    }
  }
  storeRun(part, readParts, {rg, c0});
  // Stored where a slot keeps it.
  Value last = ieq(add(t, 1), t1);
  Value slot = dstSlot, keep = last;
  if (tokenSlots) {
    slot = loadIndex(tokenSlots, t);
    Value next = loadIndex(tokenSlots, minu(add(t, 1), sub(t1, idx(1))));
    keep = arith::OrIOp::create(b, loc, last,
                                cmpi(arith::CmpIPredicate::ne, slot, next));
  }
  ifThen(keep, [&] {
    for (int64_t r = 0; r < rowsPerThread; ++r)
      storeRun(updated[r], state, {slot, h, add(r0, r), c0});
  });
  barrier();
  // 4. The gated output norm of this thread's channel.
  Value read = cf32(0.0);
  for (int64_t g = 0; g < rowGroups; ++g)
    read = fadd(read, memref::LoadOp::create(b, loc, readParts,
                                             ValueRange{idx(g), tid}));
  Value ss = blockSums({fmul(read, read)}, {kOutNorm})[0];
  Value inv =
      fdiv(cf32(1.0), fsqrt(fadd(fdiv(ss, cf32(double(d))), cf32(s.normEps))));
  Value y = fmul(fmul(fmul(read, inv), onw), sigmoid(gateValue));
  storeF32(y, out, {t, ch});
  return updated;
}

void KdaDecodeBuilder::writeConvState(Value slot, Value n) {
  int64_t p = s.heads * s.headDim;
  for (int64_t w = 0; w + 1 < s.convTaps; ++w) {
    Value off = add(sub(n, idx(s.convTaps - 1)), idx(w));
    for (int64_t which = 0; which < 3; ++which)
      storeF32(preConv(off, which), conv, {slot, idx(w), add(ch, which * p)});
  }
}

gpu::GPUFuncOp mlir::strata::buildKdaDecodeKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles, const KdaDecode &shape,
    int64_t subgroupSize) {
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, shape.headDim,
      /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
        KdaDecodeBuilder(builder, loc, shape, subgroupSize)
            .build(func, KernelArguments(roles));
      });
}

LogicalResult mlir::strata::checkKdaDecode(const TargetInfo &target,
                                           const KdaDecode &shape,
                                           std::string &why) {
  int64_t lanes = target.getSubgroupSize();
  if (shape.headDim < lanes || shape.headDim % lanes) {
    why = "the head's channels are not whole subgroups";
    return failure();
  }
  if (shape.headDim % (kRun * kRun)) {
    why = "the head's channels are not a multiple of 16";
    return failure();
  }
  if (shape.headDim > kKdaDecodeHeldRows) {
    why = "a state column of more than " + std::to_string(kKdaDecodeHeldRows) +
          " rows does not fit a thread's registers";
    return failure();
  }
  if (shape.convTaps < 1 || shape.heads < 1) {
    why = "unexpected kda_decode shape";
    return failure();
  }
  return success();
}
