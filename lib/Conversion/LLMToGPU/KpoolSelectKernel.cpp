//===- KpoolSelectKernel.cpp - the indexer's top pools per token ----------===//
//
// Part of strata, under the Apache License v2.0.
//
// buildKpoolSelectKernel: the GPU form of IndexerOps.cpp's kpool_indexer
// (the selection after kpool_scores), the same selection in the same slots:
// per token the top numSel = min(topk / kpool, visible) of its visible pool
// scores (descending score, ties to the lowest pool), in pool order,
// expanded to kpool positions each, then the open tail, then -1 padding,
// and the count.
//
// A block of kKpoolSelectThreads threads takes one token (grid (T, 1, 1)).
// The threshold key K (the numSel-th largest; keys are the scores' bits
// ordered as unsigned integers, -0 read as +0, as the generic kernel's) is
// found by radix select, 8 bits a pass, most significant first: every
// thread walks the pools p = tid, tid + threads, ... (coalesced), loading
// kSelectLoadsInFlight keys before it counts any, and counts those that
// share the digits found so far into a workgroup histogram of 256 bins with
// workgroup atomics, a run of equal digits added once (the first passes see
// one or two exponents: one add per run instead of one per key on the same
// bin); then one subgroup finds the bin holding the need-th largest key by
// a suffix sum (shuffles down) over the bins. Four passes give K
// and how many keys equal to K are still needed. The emitting pass walks
// the pools in tiles of threads x kSelectPoolsPerThread, each thread
// taking consecutive pools: the counts of keys above K and equal to K (one
// i32, above in the high half) scanned over the block (shuffles up within a
// subgroup, then the subgroups' totals, through a double-buffered workgroup
// row, scanned the same way in every subgroup: one barrier per tile) give every selected pool its slot, (keys above K
// before it) + min(keys equal to K before it, need), as in the generic
// kernel. Cost per token: 5 walks over its visible scores spread over the
// block and ~12 + tiles barriers, whatever numSel is; the generic kernel
// took one block of 128 threads through 8 passes with a serial sum of
// per-slice histograms after each.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "lib/Conversion/LLMToGPU/KernelArguments.h"
#include "lib/Conversion/LLMToGPU/LaneArith.h"
#include "lib/Conversion/LLMToGPU/MatmulTiling.h"
#include "lib/Conversion/LLMToKernel/ScoreKey.h"

using namespace mlir;
using namespace mlir::strata;
using llm::KernelRole;

namespace {

/// Key bits per radix pass, and the bins of a pass.
constexpr int64_t kDigitBits = 8;
constexpr int64_t kBins = int64_t{1} << kDigitBits;
/// Keys a thread loads before it counts any (their loads overlap).
constexpr int64_t kSelectLoadsInFlight = 8;
/// Consecutive pools a thread takes per tile of the emitting pass.
constexpr int64_t kSelectPoolsPerThread = 4;

class KpoolSelectBuilder : LaneArith {
public:
  KpoolSelectBuilder(OpBuilder &b, Location loc, const KpoolSelect &shape,
                     int64_t lanes)
      : LaneArith(b, loc), s(shape), lanes(lanes),
        subgroups(kKpoolSelectThreads / lanes) {
    i32 = b.getI32Type();
  }

  void build(gpu::GPUFuncOp func, const KernelArguments &roles);

private:
  Value iadd(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value isub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value iand(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value ior(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value toI32(Value v) { return arith::IndexCastOp::create(b, loc, i32, v); }
  Value boolToI32(Value c) { return arith::ExtUIOp::create(b, loc, i32, c); }
  Value notI1(Value c) {
    return arith::XOrIOp::create(
        b, loc, c, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
  }
  Value load(Value m, ValueRange at) {
    return memref::LoadOp::create(b, loc, m, at);
  }
  void store(Value v, Value m, ValueRange at) {
    memref::StoreOp::create(b, loc, v, m, at);
  }
  /// An scf.for over [lb, ub) in steps of `step` carrying `init`; `body`
  /// returns the next carried values.
  ValueRange forLoop(
      Value lb, Value ub, Value step, ValueRange init,
      llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(
        b, loc, lb, ub, step, init,
        [&](OpBuilder &nb, Location, Value iv, ValueRange carried) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          scf::YieldOp::create(b, loc, body(iv, carried));
        });
    return loop.getResults();
  }
  /// `body(i)` for i in [from + tid, to) in steps of the block's threads.
  void forEachOfBlock(Value from, Value to,
                      llvm::function_ref<void(Value)> body) {
    forLoop(add(from, tid), to, idx(kKpoolSelectThreads), {},
            [&](Value i, ValueRange) {
              body(i);
              return SmallVector<Value>{};
            });
  }

  /// Pool p's score key (ScoreKey.h, as the generic kernel's). Pools past
  /// the visible ones read the last visible pool (callers mask them out).
  Value key(Value p) {
    Value at = minu(p, lastPool);
    Value rows = idx(s.rowsPerPage);
    return buildOrderedScoreKey(
        b, loc,
        load(scores, {t, arith::DivUIOp::create(b, loc, at, rows),
                      arith::RemUIOp::create(b, loc, at, rows)}));
  }

  void buildToken();
  void selectTopPools(Value numSel);
  void countDigits(Value prefix, Value mask, Value shift);
  void chooseDigit(Value need);
  void emitSelected(Value threshold, Value need);
  /// Pool p's kpool positions at selection slot `slot` (i32).
  void expand(Value p, Value slot);
  /// `v` summed over this lane and the lanes below it (shuffles up).
  Value subgroupInclusiveSum(Value v);
  /// `v` of lane `source` (i32) of this subgroup.
  Value laneValue(Value v, Value source) {
    return gpu::ShuffleOp::create(b, loc, v, source, ci32(lanes),
                                  gpu::ShuffleMode::IDX)
        .getShuffleResult();
  }

  const KpoolSelect &s;
  int64_t lanes, subgroups;
  Type i32;
  // Arguments.
  Value positions, scores, sel, counts;
  // Workgroup buffers: the histogram, the chosen digit and the keys still
  // needed, the subgroups' totals of a tile (two rows, by tile parity).
  Value hist, choice, tileTotals;
  // Per thread.
  Value tid, warp;
  // Per token.
  Value t, visible, lastPool;
};

} // namespace

void KpoolSelectBuilder::build(gpu::GPUFuncOp func,
                               const KernelArguments &roles) {
  ValueRange args = func.getArguments();
  auto at = [&](KernelRole role) { return roles.value(args, role); };
  positions = at(KernelRole::Positions);
  scores = at(KernelRole::Scores);
  sel = at(KernelRole::Selection);
  counts = at(KernelRole::SelectionCounts);
  hist = addWorkgroupBuffer(func, loc, {kBins}, i32);
  choice = addWorkgroupBuffer(func, loc, {2}, i32);
  tileTotals = addWorkgroupBuffer(func, loc, {2, subgroups}, i32);
  tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  lane = arith::RemUIOp::create(b, loc, tid, idx(lanes));
  warp = arith::DivUIOp::create(b, loc, tid, idx(lanes));
  forEachGridToken(memref::DimOp::create(b, loc, positions, 0),
                   [&](Value token) {
                     t = token;
                     buildToken();
                   });
  gpu::ReturnOp::create(b, loc);
}

void KpoolSelectBuilder::buildToken() {
  Value len = add(toIndex(load(positions, {t})), 1);
  visible = arith::DivUIOp::create(b, loc, len, idx(s.kpool));
  lastPool = arith::SubIOp::create(b, loc, visible, idx(1));
  Value numSel = minu(idx(s.topk / s.kpool), visible);
  // Every visible pool selected (short contexts): their positions in order.
  Value everyPool = cmpi(arith::CmpIPredicate::uge, numSel, visible);
  ifThen(everyPool, [&] {
    forEachOfBlock(idx(0), mul(visible, s.kpool),
                   [&](Value i) { store(toI32(i), sel, {t, i}); });
  });
  // The selection (uniform in the block: barriers inside).
  ifThen(ult(numSel, visible), [&] { selectTopPools(toI32(numSel)); });
  // The open tail, -1 padding, the count.
  Value pooled = mul(numSel, s.kpool);
  Value tailStart = mul(visible, s.kpool);
  Value count = add(pooled, arith::SubIOp::create(b, loc, len, tailStart));
  forEachOfBlock(tailStart, len, [&](Value pos) {
    store(toI32(pos), sel,
          {t, add(pooled, arith::SubIOp::create(b, loc, pos, tailStart))});
  });
  forEachOfBlock(count, memref::DimOp::create(b, loc, sel, 1),
                 [&](Value i) { store(ci32(-1), sel, {t, i}); });
  ifThen(ieq(tid, idx(0)), [&] { store(toI32(count), counts, {t}); });
  // The next token of this block rewrites the workgroup buffers.
  barrier();
}

void KpoolSelectBuilder::selectTopPools(Value numSel) {
  // 32 / kDigitBits passes, most significant digit first (a loop: unrolled,
  // the passes' uniform values overflowed gfx942's scalar registers).
  ValueRange found = forLoop(
      idx(0), idx(32 / kDigitBits), idx(1), {ci32(0), ci32(0), numSel},
      [&](Value pass, ValueRange c) -> SmallVector<Value> {
        Value shift =
            isub(ci32(32 - kDigitBits), arith::MulIOp::create(
                                            b, loc, toI32(pass),
                                            ci32(kDigitBits)));
        countDigits(c[0], c[1], shift);
        chooseDigit(c[2]);
        Value digit = load(choice, {idx(0)});
        Value need = load(choice, {idx(1)});
        auto shl = [&](Value v) {
          return arith::ShLIOp::create(b, loc, v, shift);
        };
        return {ior(c[0], shl(digit)), ior(c[1], shl(ci32(kBins - 1))),
                need};
      });
  emitSelected(found[0], found[2]);
}

void KpoolSelectBuilder::countDigits(Value prefix, Value mask, Value shift) {
  ifThen(ult(tid, idx(kBins)), [&] { store(ci32(0), hist, {tid}); });
  barrier();
  auto addRun = [&](Value digit, Value n) {
    memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addi, n, hist,
                                ValueRange{toIndex(digit)});
  };
  int64_t perStep = kKpoolSelectThreads * kSelectLoadsInFlight;
  // The run being counted: its digit (-1: none yet) and length.
  ValueRange run = forLoop(
      tid, visible, idx(perStep), {ci32(-1), ci32(0)},
      [&](Value first, ValueRange carried) -> SmallVector<Value> {
        SmallVector<Value> pools, keys;
        for (int64_t u = 0; u < kSelectLoadsInFlight; ++u) {
          pools.push_back(add(first, u * kKpoolSelectThreads));
          keys.push_back(key(pools.back()));
        }
        Value digit = carried[0], n = carried[1];
        for (int64_t u = 0; u < kSelectLoadsInFlight; ++u) {
          Value counted = iand(
              ult(pools[u], visible),
              cmpi(arith::CmpIPredicate::eq, iand(keys[u], mask), prefix));
          Value d = iand(arith::ShRUIOp::create(b, loc, keys[u], shift),
                         ci32(kBins - 1));
          Value sameRun = cmpi(arith::CmpIPredicate::eq, d, digit);
          Value flush = iand(iand(counted, notI1(sameRun)),
                             cmpi(arith::CmpIPredicate::ne, n, ci32(0)));
          ifThen(flush, [&] { addRun(digit, n); });
          n = select(counted, select(sameRun, iadd(n, ci32(1)), ci32(1)), n);
          digit = select(counted, d, digit);
        }
        return {digit, n};
      });
  ifThen(cmpi(arith::CmpIPredicate::ne, run[1], ci32(0)),
         [&] { addRun(run[0], run[1]); });
  barrier();
}

void KpoolSelectBuilder::chooseDigit(Value need) {
  int64_t perLane = kBins / lanes;
  ifThen(ieq(warp, idx(0)), [&] {
    Value firstBin = mul(lane, perLane);
    SmallVector<Value> bins;
    Value total = ci32(0);
    for (int64_t i = 0; i < perLane; ++i) {
      bins.push_back(load(hist, {add(firstBin, i)}));
      total = iadd(total, bins.back());
    }
    // Keys in the bins of the lanes above this one.
    Value suffix = total;
    for (int64_t offset = 1; offset < lanes; offset *= 2) {
      auto down = gpu::ShuffleOp::create(b, loc, suffix, ci32(offset),
                                         ci32(lanes), gpu::ShuffleMode::DOWN);
      suffix = select(down.getValid(),
                      iadd(suffix, down.getShuffleResult()), suffix);
    }
    Value above = isub(suffix, total);
    // From this lane's top bin down: the bin where the count reaches need,
    // i.e. above < need <= above + bin (exactly one lane finds it: 1 <= need
    // <= the keys counted; the lanes below it start with above >= need and
    // must not write, or the workgroup's choice is whichever lane stores
    // last).
    Value found = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    Value digit = ci32(0), remaining = need;
    for (int64_t i = perLane - 1; i >= 0; --i) {
      Value reaches =
          iand(cmpi(arith::CmpIPredicate::slt, above, need),
               cmpi(arith::CmpIPredicate::sge, iadd(above, bins[i]), need));
      Value hit = iand(notI1(found), reaches);
      digit = select(hit, toI32(add(firstBin, i)), digit);
      remaining = select(hit, isub(need, above), remaining);
      found = ior(found, hit);
      above = iadd(above, bins[i]);
    }
    ifThen(found, [&] {
      store(digit, choice, {idx(0)});
      store(remaining, choice, {idx(1)});
    });
  });
  barrier();
}

Value KpoolSelectBuilder::subgroupInclusiveSum(Value v) {
  for (int64_t offset = 1; offset < lanes; offset *= 2) {
    auto up = gpu::ShuffleOp::create(b, loc, v, ci32(offset), ci32(lanes),
                                     gpu::ShuffleMode::UP);
    v = select(up.getValid(), iadd(v, up.getShuffleResult()), v);
  }
  return v;
}

void KpoolSelectBuilder::expand(Value p, Value slot) {
  Value base = mul(toIndex(slot), s.kpool);
  Value firstPos = mul(p, s.kpool);
  for (int64_t k = 0; k < s.kpool; ++k)
    store(toI32(add(firstPos, k)), sel, {t, add(base, k)});
}

void KpoolSelectBuilder::emitSelected(Value threshold, Value need) {
  int64_t perTile = kKpoolSelectThreads * kSelectPoolsPerThread;
  Value lowHalf = ci32(0xffff), high = ci32(16);
  forLoop(
      idx(0), visible, idx(perTile), {ci32(0), ci32(0)},
      [&](Value tileStart, ValueRange done) -> SmallVector<Value> {
        Value row = arith::RemUIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, tileStart, idx(perTile)),
            idx(2));
        Value first = add(tileStart, mul(tid, kSelectPoolsPerThread));
        // This thread's pools: above K, equal to K; packed counts.
        SmallVector<Value> pools, above, equal;
        Value packed = ci32(0);
        for (int64_t e = 0; e < kSelectPoolsPerThread; ++e) {
          pools.push_back(add(first, e));
          Value k = key(pools.back());
          Value in = ult(pools.back(), visible);
          above.push_back(
              iand(in, cmpi(arith::CmpIPredicate::ugt, k, threshold)));
          equal.push_back(
              iand(in, cmpi(arith::CmpIPredicate::eq, k, threshold)));
          packed = iadd(packed,
                        ior(arith::ShLIOp::create(b, loc,
                                                  boolToI32(above.back()),
                                                  high),
                            boolToI32(equal.back())));
        }
        Value inclusive = subgroupInclusiveSum(packed);
        ifThen(ieq(lane, idx(lanes - 1)),
               [&] { store(inclusive, tileTotals, {row, warp}); });
        barrier();
        // The subgroups' totals scanned in every subgroup (lane w holds
        // subgroup w's): this subgroup's offset and the tile's total.
        Value own = select(
            ult(lane, idx(subgroups)),
            load(tileTotals, {row, minu(lane, idx(subgroups - 1))}),
            ci32(0));
        Value upTo = subgroupInclusiveSum(own);
        Value before = laneValue(isub(upTo, own), toI32(warp));
        Value tileTotal = laneValue(upTo, ci32(subgroups - 1));
        Value exclusive = isub(iadd(before, inclusive), packed);
        Value aboveBefore = iadd(
            done[0], arith::ShRUIOp::create(b, loc, exclusive, high));
        Value equalBefore = iadd(done[1], iand(exclusive, lowHalf));
        for (int64_t e = 0; e < kSelectPoolsPerThread; ++e) {
          Value take = ior(above[e],
                           iand(equal[e], cmpi(arith::CmpIPredicate::slt,
                                               equalBefore, need)));
          Value slot = iadd(aboveBefore, arith::MinSIOp::create(
                                             b, loc, equalBefore, need));
          Value pool = pools[e];
          ifThen(take, [&] { expand(pool, slot); });
          aboveBefore = iadd(aboveBefore, boolToI32(above[e]));
          equalBefore = iadd(equalBefore, boolToI32(equal[e]));
        }
        return {iadd(done[0],
                     arith::ShRUIOp::create(b, loc, tileTotal, high)),
                iadd(done[1], iand(tileTotal, lowHalf))};
      });
}

gpu::GPUFuncOp mlir::strata::buildKpoolSelectKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    TypeRange argTypes, ArrayRef<llm::KernelRole> roles,
    const KpoolSelect &shape, const TargetInfo &target) {
  return getOrCreateMatrixKernel(
      builder, loc, module, name, argTypes, kKpoolSelectThreads,
      /*mnemonic=*/"", [&](gpu::GPUFuncOp func) {
        KpoolSelectBuilder(builder, loc, shape, target.getSubgroupSize())
            .build(func, KernelArguments(roles));
      });
}
