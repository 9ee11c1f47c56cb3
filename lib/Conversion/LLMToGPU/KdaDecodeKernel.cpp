//===- KdaDecodeKernel.cpp - KDA's recurrent form, state held in registers ===//
//
// Part of strata, under the Apache License v2.0.
//
// buildKdaDecodeKernel: the GPU form of KdaOps.cpp's kda_decode, one block
// per (request, head) (grid (requests + 1, H, 1); the last block has no
// request), one thread per channel and value column of the head (d
// threads). Thread c:
//   1. issues the loads of its state column S[:, c] (slot src_slots[r];
//      zero at position 0 by select) before anything else, so that they are
//      in flight while the token's conv and norms are computed (the generic
//      kernel loads the column after those phases, each a chain of
//      latencies: two blocks per SM at its 252 registers left the state
//      stream idle between them, 2.2 TB/s);
//   2. per token: the conv + SiLU of channel c of q, k and v, its log-decay
//      and the head's beta; the L2 norms of q and k as block sums (subgroup
//      butterflies, then the subgroups' sums in order); q, k and the decays
//      into workgroup rows;
//   3. the delta rule on the column in registers (decay, k . S, delta, the
//      rank-one update, the read-out, each sum in row order), the column
//      stored where a slot keeps it (per-token slots: after a token whose
//      slot the next token does not share; else after the last token), and
//      kept for the next token (never read back);
//   4. the gated output norm (a block sum) and the output;
// then the conv state as the generic kernel writes it. The same operations
// per value as the generic kernel except the block sums' order.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

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

class KdaDecodeBuilder : LaneArith {
public:
  KdaDecodeBuilder(OpBuilder &b, Location loc, const KdaDecode &shape,
                   int64_t lanes)
      : LaneArith(b, loc), s(shape), lanes(lanes),
        subgroups(shape.headDim / lanes) {
    f32 = b.getF32Type();
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

  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fdiv(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value fexp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value fsqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  /// KernelBuilder's sigmoid and silu: 1 / (1 + exp(-x)), x * sigmoid(x).
  Value sigmoid(Value x) {
    return fdiv(cf32(1.0),
                fadd(cf32(1.0), fexp(arith::NegFOp::create(b, loc, x))));
  }
  Value silu(Value x) { return fmul(x, sigmoid(x)); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  /// An element as f32 (KernelBuilder::load for float elements).
  Value loadF32(Value m, ValueRange at) {
    Value v = memref::LoadOp::create(b, loc, m, at);
    return v.getType().isF32() ? v : arith::ExtFOp::create(b, loc, f32, v);
  }
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
  Value readRow(Value row, int64_t i) {
    return memref::LoadOp::create(b, loc, row, ValueRange{idx(i)});
  }

  const KdaDecode &s;
  int64_t lanes, subgroups;
  Type f32;
  // Arguments.
  Value q, k, v, f, beta, gate, qConv, kConv, vConv, aLog, dtBias, oNorm;
  Value state, conv, positions, starts, src, dst, tokenSlots, out;
  // Workgroup rows: q, k and the decays of the token; the block sums.
  Value qRow, kRow, kUpdateRow, alphaRow, sums;
  // Per block.
  Value tid, warp, h, ch, t0, t1, srcSlot, dstSlot, fresh, rate, dtb, onw;
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
  sums = addWorkgroupBuffer(func, loc, {kBlockSums, subgroups}, f32);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(lanes));
  warp = arith::DivUIOp::create(b, loc, tid, idx(lanes));
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
    // 1. The state column first: its loads are in flight while the first
    // token's conv and norms are computed.
    SmallVector<Value> column;
    for (int64_t i = 0; i < d; ++i)
      column.push_back(memref::LoadOp::create(
          b, loc, state, ValueRange{srcSlot, h, idx(i), tid}));
    for (Value &x : column)
      x = select(fresh, cf32(0.0), x);
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
  memref::StoreOp::create(b, loc, qn, qRow, ValueRange{tid});
  memref::StoreOp::create(b, loc, kn, kRow, ValueRange{tid});
  memref::StoreOp::create(b, loc, kn, kUpdateRow, ValueRange{tid});
  memref::StoreOp::create(b, loc, alpha, alphaRow, ValueRange{tid});
  barrier();
  // 3. The delta rule on the column, sums in row order. The update reads k
  // from a copy of its row: from one row, the compiler keeps the first
  // pass's loads of k for the update as well (a second column's worth of
  // registers; on sm_90 255 and spills).
  SmallVector<Value> decayed;
  Value pred = cf32(0.0);
  for (int64_t r = 0; r < d; ++r) {
    decayed.push_back(fmul(readRow(alphaRow, r), column[r]));
    pred = fadd(pred, fmul(decayed[r], readRow(kRow, r)));
  }
  Value delta = fmul(strength, fsub(vv, pred));
  SmallVector<Value> updated;
  Value read = cf32(0.0);
  for (int64_t r = 0; r < d; ++r) {
    updated.push_back(fadd(decayed[r], fmul(readRow(kUpdateRow, r), delta)));
    read = fadd(read, fmul(updated[r], readRow(qRow, r)));
  }
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
    for (int64_t r = 0; r < d; ++r)
      memref::StoreOp::create(b, loc, updated[r], state,
                              ValueRange{slot, h, idx(r), tid});
  });
  // 4. The gated output norm.
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
