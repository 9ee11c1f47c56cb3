//===- IndexerOps.cpp - pooled indexer to kernels -------------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.kpool_compress: for each token that closes a pool, a per-dimension
// softmax over the kpool slots of (gate + ape), slot tokens read from the
// batch or, before the request's first batch position, from the tail ring.
// llm.kpool_indexer: `kpool_scores`, per token, fp32 scores of the visible
// complete pools (sum_h w_h relu(q_h . K_p) * scale) into a [T, block_table
// width, rows per page] plan buffer (GPU targets: on the matrix units,
// LLMToGPU/KpoolScoresKernel.cpp); `kpool_indexer`, per token, the
// top-(min(topk/kpool, |V|)) pools (descending score, ties to the lowest
// pool) by radix select over 128 slices of the visible pools
// (TopPoolSelect), or every visible pool when that is all of them, each in
// pool order, expanded to kpool positions per pool, then the open tail,
// then -1 padding. With an fp8 pool (Hadamard-rotated ue8m0 keys) the
// queries are rotated in fp32 (not quantised): scores equal the bf16-pool
// scores up to the key's fp8 rounding.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"
#include "lib/Conversion/LLMToKernel/ScoreKey.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Contiguous slices of the visible pools in the indexer's selection (a GPU
/// block's 128 threads take one each).
constexpr int64_t kSelectSlices = 128;
/// Key bits per radix pass, and the bins of a pass.
constexpr int64_t kRadixBits = 4;
constexpr int64_t kRadixBins = int64_t{1} << kRadixBits;

/// The indices of pool p of token t in kpool_scores' [T, block_table width,
/// rows per page] scores: [t, p / rows, p % rows].
SmallVector<Value> scoreIndices(KernelBuilder &kb, Value t, Value p,
                                int64_t rowsPerPage) {
  return {t, kb.idiv(p, kb.idx(rowsPerPage)), kb.irem(p, kb.idx(rowsPerPage))};
}

/// The top `numSel` (< visible) of a token's visible pool scores, descending
/// score with ties to the lowest pool, by radix select on 32-bit keys that
/// order as the scores do:
///  * 32 / kRadixBits passes, most significant digit first: per slice a
///    histogram of the keys that share the threshold's digits found so far,
///    the bins' totals, then (every thread) the digit whose bin holds the
///    `need`-th largest of them. After the passes the threshold key K is
///    known, and `need` of the keys equal to K are taken;
///  * per slice the keys above K and equal to K, their exclusive prefix sums
///    over the slices (pool order), then each slice emits its selected pools
///    at slot (keys above K before them) + min(keys equal to K before them,
///    need): the pools in pool order, the lowest of the tied ones taken.
/// Per token that is visible / kSelectSlices + kSelectSlices steps per pass
/// on a thread of a GPU block, whatever numSel is.
class TopPoolSelect {
public:
  TopPoolSelect(KernelBuilder &kb, Value scores, int64_t rowsPerPage)
      : kb(kb), scores(scores), rowsPerPage(rowsPerPage) {
    hist = kb.scratch({kSelectSlices, kRadixBins});
    binTotals = kb.scratch({kRadixBins});
    sliceAbove = kb.scratch({kSelectSlices});
    sliceEqual = kb.scratch({kSelectSlices});
  }

  /// Calls `emit(pool, slot)` for every selected pool of token t.
  void build(Value t, Value visible, Value numSel,
             llvm::function_ref<void(Value, Value)> emit) {
    this->t = t;
    this->visible = visible;
    // Slice length, out of the slice loops (a division there would make
    // their iterations look unsafe to spread).
    rounds = kb.idiv(kb.iadd(visible, kb.idx(kSelectSlices - 1)),
                     kb.idx(kSelectSlices));
    Value prefix = i32(0), mask = i32(0), need = kb.toF32(numSel);
    for (int64_t shift = 32 - kRadixBits; shift >= 0; shift -= kRadixBits) {
      countDigits(prefix, mask, shift);
      auto [digit, remaining] = chooseDigit(need);
      OpBuilder &b = kb.builder();
      Location l = kb.getLoc();
      Value shifted = arith::ShLIOp::create(
          b, l, arith::IndexCastOp::create(b, l, b.getI32Type(), digit),
          i32(shift));
      prefix = arith::OrIOp::create(b, l, prefix, shifted);
      mask = arith::OrIOp::create(
          b, l, mask,
          i32(static_cast<int32_t>(uint32_t(kRadixBins - 1) << shift)));
      need = remaining;
    }
    emitSelected(prefix, need, emit);
  }

  void release() {
    for (Value m : {hist, binTotals, sliceAbove, sliceEqual})
      kb.dealloc(m);
  }

private:
  Value i32(int64_t v) { return kb.i32(v); }

  /// Slice q's pools: [lo, hi).
  std::pair<Value, Value> sliceBounds(Value q) {
    Value lo = kb.imin(kb.imul(q, rounds), visible);
    return {lo, kb.imin(kb.iadd(lo, rounds), visible)};
  }

  /// Pool p's score as an i32 whose unsigned order is the scores' order
  /// (-0 read as +0, so that equal scores have equal keys): the bits with
  /// the sign flipped when positive, all flipped when negative.
  Value key(Value p) {
    return buildOrderedScoreKey(
        kb.builder(), kb.getLoc(),
        kb.load(scores, scoreIndices(kb, t, p, rowsPerPage)));
  }

  Value cmpKeys(arith::CmpIPredicate pred, Value a, Value c) {
    return arith::CmpIOp::create(kb.builder(), kb.getLoc(), pred, a, c);
  }

  /// One as f32 where `cond`, else zero.
  Value indicator(Value cond) {
    return kb.select(cond, kb.f32(1.0), kb.f32(0.0));
  }

  /// binTotals[d]: the keys with (key & mask) == prefix whose digit at
  /// `shift` is d.
  void countDigits(Value prefix, Value mask, int64_t shift) {
    OpBuilder &b = kb.builder();
    Location l = kb.getLoc();
    kb.parallel({kb.idx(0)}, {kb.idx(kSelectSlices)}, [&](ValueRange ivs) {
      Value q = ivs[0];
      kb.loop(0, kRadixBins, [&](Value d) {
        kb.store(kb.f32(0.0), hist, {q, d});
      });
      auto [lo, hi] = sliceBounds(q);
      kb.loop(lo, hi, [&](Value p) {
        Value k = key(p);
        Value shares = cmpKeys(arith::CmpIPredicate::eq,
                               arith::AndIOp::create(b, l, k, mask), prefix);
        Value digit = arith::AndIOp::create(
            b, l, arith::ShRUIOp::create(b, l, k, i32(shift)),
            i32(kRadixBins - 1));
        Value d = arith::IndexCastOp::create(b, l, b.getIndexType(), digit);
        kb.ifThen(shares, [&] {
          kb.store(kb.add(kb.load(hist, {q, d}), kb.f32(1.0)), hist, {q, d});
        });
      });
    });
    kb.loop(0, kRadixBins, [&](Value d) {
      Value total =
          kb.reduce(0, kSelectSlices, kb.f32(0.0), [&](Value q, Value acc) {
            return kb.add(acc, kb.load(hist, {q, d}));
          });
      kb.store(total, binTotals, d);
    });
  }

  /// The digit whose bin holds the `need`-th largest counted key, from the
  /// top bin down, and how many of that bin are still needed.
  std::pair<Value, Value> chooseDigit(Value need) {
    OpBuilder &b = kb.builder();
    Location l = kb.getLoc();
    Value no = arith::ConstantIntOp::create(b, l, b.getI1Type(), 0);
    SmallVector<Value> found = kb.loopCarry(
        kb.idx(0), kb.idx(kRadixBins),
        ValueRange{no, kb.idx(0), kb.f32(0.0), need},
        [&](Value i, ValueRange c) -> SmallVector<Value> {
          Value d = kb.isub(kb.idx(kRadixBins - 1), i);
          Value inBin = kb.load(binTotals, d);
          Value notYet = arith::XOrIOp::create(
              b, l, c[0], arith::ConstantIntOp::create(b, l, b.getI1Type(), 1));
          Value reaches = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGE,
                                                kb.add(c[2], inBin), need);
          Value hit = arith::AndIOp::create(b, l, notYet, reaches);
          return {arith::OrIOp::create(b, l, c[0], hit),
                  kb.select(hit, d, c[1]),
                  kb.select(arith::OrIOp::create(b, l, c[0], hit), c[2],
                            kb.add(c[2], inBin)),
                  kb.select(hit, kb.sub(need, c[2]), c[3])};
        });
    return {found[1], found[3]};
  }

  /// Emits the pools above `threshold` and the first `need` equal to it.
  void emitSelected(Value threshold, Value need,
                    llvm::function_ref<void(Value, Value)> emit) {
    kb.parallel({kb.idx(0)}, {kb.idx(kSelectSlices)}, [&](ValueRange ivs) {
      Value q = ivs[0];
      auto [lo, hi] = sliceBounds(q);
      SmallVector<Value> n = kb.loopCarry(
          lo, hi, ValueRange{kb.f32(0.0), kb.f32(0.0)},
          [&](Value p, ValueRange c) -> SmallVector<Value> {
            Value k = key(p);
            return {kb.add(c[0], indicator(cmpKeys(arith::CmpIPredicate::ugt, k,
                                                   threshold))),
                    kb.add(c[1], indicator(cmpKeys(arith::CmpIPredicate::eq, k,
                                                   threshold)))};
          });
      kb.store(n[0], sliceAbove, q);
      kb.store(n[1], sliceEqual, q);
    });
    // Exclusive prefix sums over the slices, in place.
    kb.loopCarry(kb.idx(0), kb.idx(kSelectSlices),
                 ValueRange{kb.f32(0.0), kb.f32(0.0)},
                 [&](Value q, ValueRange c) -> SmallVector<Value> {
                   Value above = kb.load(sliceAbove, q);
                   Value equal = kb.load(sliceEqual, q);
                   kb.store(c[0], sliceAbove, q);
                   kb.store(c[1], sliceEqual, q);
                   return {kb.add(c[0], above), kb.add(c[1], equal)};
                 });
    OpBuilder &b = kb.builder();
    Location l = kb.getLoc();
    kb.parallel({kb.idx(0)}, {kb.idx(kSelectSlices)}, [&](ValueRange ivs) {
      Value q = ivs[0];
      auto [lo, hi] = sliceBounds(q);
      kb.loopCarry(
          lo, hi, ValueRange{kb.load(sliceAbove, q), kb.load(sliceEqual, q)},
          [&](Value p, ValueRange c) -> SmallVector<Value> {
            Value k = key(p);
            Value above = cmpKeys(arith::CmpIPredicate::ugt, k, threshold);
            Value equal = cmpKeys(arith::CmpIPredicate::eq, k, threshold);
            Value take = arith::OrIOp::create(
                b, l, above,
                arith::AndIOp::create(b, l, equal, kb.lt(c[1], need)));
            Value slot = arith::FPToSIOp::create(
                b, l, b.getI64Type(), kb.add(c[0], kb.min(c[1], need)));
            kb.ifThen(take, [&] {
              emit(p, arith::IndexCastOp::create(b, l, b.getIndexType(), slot));
            });
            return {kb.add(c[0], indicator(above)),
                    kb.add(c[1], indicator(equal))};
          });
    });
  }

  KernelBuilder &kb;
  Value scores;
  int64_t rowsPerPage;
  // Scratch: per-slice histograms, bin totals, per-slice counts (then their
  // exclusive prefix sums), all f32 (exact counts below 2^24).
  Value hist, binTotals, sliceAbove, sliceEqual;
  // Per token.
  Value t, visible, rounds;
};

struct KpoolCompressToKernel : OpConversionPattern<llm::KpoolCompressOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::KpoolCompressOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto ring = cast<llm::TailRingType>(op.getRing().getType());
    KernelCall call;
    for (Value v : adaptor.getOperands())
      call.addInput(v);
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, op.getLoc(), adaptor.getK(), resultType));
    int64_t kpool = op.getKpool(), width = resultType.getDimSize(1);
    int64_t depth = ring.getDepth();
    auto results = call.emit(rewriter, op, "kpool_compress",
                             [&](KernelBuilder &kb, ValueRange a) {
      Value k = a[0], g = a[1], ape = a[2], buf = a[3], positions = a[4];
      Value starts = a[5], slots = a[6], y = a[out];
      Type f32 = kb.builder().getF32Type();
      forEachTokenRow(kb, starts, k, [&](Value r, Value t) {
        Value t0 = kb.loadIndex(starts, r);
        Value first = kb.loadIndex(positions, t0);
        Value slot = kb.loadIndex(slots, r);
        Value x = kb.loadIndex(positions, t);
        Value closes = kb.ieq(kb.irem(x, kb.idx(kpool)), kb.idx(kpool - 1));
        Value base = kb.imul(kb.idiv(x, kb.idx(kpool)), kb.idx(kpool));
        // Plane `plane` (0: k, 1: g) of slot token `pos`.
        auto slotValue = [&](Value pos, int64_t plane, Value c) {
          return kb.ifElse(
              kb.ige(pos, first), f32,
              [&] {
                Value tt = kb.iadd(t0, kb.isub(pos, first));
                return kb.load(plane == 0 ? k : g, {tt, c});
              },
              [&] {
                Value row = kb.irem(pos, kb.idx(depth));
                return kb.load(buf, {slot, kb.idx(plane), row, c});
              });
        };
        kb.loop(0, width, [&](Value c) {
          Value v = kb.ifElse(closes, f32, [&] {
            auto logit = [&](Value s) {
              return kb.add(slotValue(kb.iadd(base, s), 1, c),
                            kb.load(ape, {s, c}));
            };
            Value mx = kb.reduce(0, kpool, kb.f32(-INFINITY),
                                 [&](Value s, Value acc) {
                                   return kb.max(acc, logit(s));
                                 });
            SmallVector<Value> sums = kb.loopCarry(
                kb.idx(0), kb.idx(kpool), ValueRange{kb.f32(0.0), kb.f32(0.0)},
                [&](Value s, ValueRange acc) -> SmallVector<Value> {
                  Value e = kb.exp(kb.sub(logit(s), mx));
                  return {kb.add(acc[0], e),
                          kb.add(acc[1],
                                 kb.mul(e, slotValue(kb.iadd(base, s), 0, c)))};
                });
            return kb.div(sums[1], sums[0]);
          }, [&] { return kb.f32(0.0); });
          kb.store(v, y, {t, c});
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct KpoolIndexerToKernel : OpConversionPattern<llm::KpoolIndexerOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::KpoolIndexerOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto pool = cast<llm::IndexPoolType>(op.getPool().getType());
    int64_t topk = op.getTopk(), kpool = op.getKpool();
    int64_t heads = op.getHeads(), headDim = op.getHeadDim();
    int64_t rowsPerPage = pool.getRowsPerPage();
    double scale = op.getScale().convertToFloat();

    // kpool_scores, one row per token: the scores of its visible pools into
    // [T, block_table width, rows per page] f32 (pool p at [t, p / rows,
    // p % rows]: a token sees at most every pool row its block table
    // addresses). It carries kKpoolScoresAttrName, with which a GPU target
    // rebuilds it on the matrix units (bf16 pools).
    KernelCall scoring;
    using llm::KernelRole;
    scoring.addInput(adaptor.getQ(), KernelRole::X);
    scoring.addInput(adaptor.getWeights(), KernelRole::HeadWeights);
    scoring.addInput(adaptor.getPool(), KernelRole::IndexPool);
    scoring.addInput(adaptor.getPositions(), KernelRole::Positions);
    scoring.addInput(adaptor.getSeqStarts(), KernelRole::SeqStarts);
    scoring.addInput(adaptor.getBlockTable(), KernelRole::BlockTable);
    MemRefType scoresType = MemRefType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, rowsPerPage},
        rewriter.getF32Type());
    unsigned scoresOut = scoring.addResult(
        scoresType,
        {getDimValue(rewriter, loc, adaptor.getQ(), 0),
         getDimValue(rewriter, loc, adaptor.getBlockTable(), 1)},
        KernelRole::Scores);
    scoring.attributes.push_back(rewriter.getNamedAttr(
        kKpoolScoresAttrName,
        llm::KpoolScoresAttr::get(rewriter.getContext(), kpool,
                                  op.getScaleAttr())));
    Value allScores = scoring.emit(rewriter, op, "kpool_scores",
                                   [&](KernelBuilder &kb, ValueRange a) {
      Value q = a[0], w = a[1], positions = a[3], starts = a[4], bt = a[5];
      Value scores = a[scoresOut];
      PagedPoolAccess cache(a[2], pool);
      // fp8 pools hold Hadamard-rotated keys: rotate the queries too (fp32).
      Value qRot = cache.isFp8() ? kb.scratch({heads, headDim}) : Value();
      Value qVec = cache.isFp8() ? kb.scratch({headDim}) : Value();
      Value qOut = cache.isFp8() ? kb.scratch({headDim}) : Value();
      Value zero = kb.f32(0.0);
      forEachTokenRow(kb, starts, q, [&](Value r, Value t) {
        Value x = kb.loadIndex(positions, t);
        Value visible = kb.idiv(kb.iadd(x, kb.idx(1)), kb.idx(kpool));
        auto query = [&](Value h, Value c) {
          return cache.isFp8() ? kb.load(qRot, {h, c}) : kb.load(q, {t, h, c});
        };
        if (cache.fp8) {
          kb.loop(0, heads, [&](Value h) {
            kb.loop(0, headDim, [&](Value c) {
              kb.store(kb.load(q, {t, h, c}), qVec, c);
            });
            buildHadamard(kb, qVec, qOut, headDim);
            kb.loop(0, headDim, [&](Value c) {
              kb.store(kb.load(qOut, c), qRot, {h, c});
            });
          });
        }
        // Scores of the visible pools (in `scores`, see below): every head's
        // dot product carried through one walk over the key row, so each
        // key element is loaded (and, fp8, decoded) once per pool, not once
        // per head; then the heads' weighted ReLUs in head order.
        kb.loop(kb.idx(0), visible, [&](Value p) {
          std::pair<Value, Value> pageRow = pagedRow(kb, bt, r, p, rowsPerPage);
          Value page = pageRow.first, row = pageRow.second;
          SmallVector<Value> dots = kb.loopCarry(
              kb.idx(0), kb.idx(headDim), SmallVector<Value>(heads, zero),
              [&](Value c, ValueRange acc) -> SmallVector<Value> {
                Value key = cache.load(kb, page, row, c);
                SmallVector<Value> next;
                for (int64_t h = 0; h < heads; ++h)
                  next.push_back(
                      kb.add(acc[h], kb.mul(query(kb.idx(h), c), key)));
                return next;
              });
          Value s = zero;
          for (int64_t h = 0; h < heads; ++h)
            s = kb.add(s, kb.mul(kb.load(w, {t, kb.idx(h)}),
                                 kb.max(dots[h], zero)));
          kb.store(kb.mul(s, kb.f32(scale)), scores,
                   scoreIndices(kb, t, p, rowsPerPage));
        });
      });
      if (cache.fp8)
        for (Value m : {qRot, qVec, qOut})
          kb.dealloc(m);
    })[0];

    // kpool_indexer, one row per token: the top pools from its scores row,
    // expanded to positions, the open tail, padding.
    KernelCall call;
    call.addInput(adaptor.getPositions(), KernelRole::Positions);
    call.addInput(allScores, KernelRole::Scores);
    MemRefType selType = getKernelMemRefType(op.getSelection().getType());
    MemRefType cntType = getKernelMemRefType(op.getCounts().getType());
    unsigned selOut = call.addResult(
        selType, dynamicSizesLike(rewriter, loc, adaptor.getQ(), selType),
        KernelRole::Selection);
    unsigned cntOut = call.addResult(
        cntType, dynamicSizesLike(rewriter, loc, adaptor.getQ(), cntType),
        KernelRole::SelectionCounts);
    call.attributes.push_back(rewriter.getNamedAttr(
        kKpoolSelectAttrName,
        llm::KpoolSelectAttr::get(rewriter.getContext(), kpool, topk)));
    auto results = call.emit(rewriter, op, "kpool_indexer",
                             [&](KernelBuilder &kb, ValueRange a) {
      Value positions = a[0], allScores = a[1];
      Value sel = a[selOut], counts = a[cntOut];
      Value width = kb.dim(sel, 1);
      TopPoolSelect select(kb, allScores, rowsPerPage);
      // One row per token (on the GPU a grid row); its request is not
      // needed.
      kb.loop(kb.idx(0), kb.dim(allScores, 0), [&](Value t) {
        Value x = kb.loadIndex(positions, t);
        Value len = kb.iadd(x, kb.idx(1));
        Value visible = kb.idiv(len, kb.idx(kpool));
        Value numSel = kb.imin(kb.idx(topk / kpool), visible);
        // Pool p's positions at selection slot n.
        auto expand = [&](Value p, Value n) {
          kb.loop(0, kpool, [&](Value s) {
            kb.storeIndex(kb.iadd(kb.imul(p, kb.idx(kpool)), s), sel,
                          {t, kb.iadd(kb.imul(n, kb.idx(kpool)), s)});
          });
        };
        // Every visible pool selected (short contexts): their positions in
        // order, no selection.
        Value everyPool = kb.ige(numSel, visible);
        kb.ifThen(everyPool, [&] {
          kb.loop(kb.idx(0), kb.imul(visible, kb.idx(kpool)), [&](Value i) {
            kb.storeIndex(i, sel, {t, i});
          });
        });
        kb.ifThen(kb.ilt(numSel, visible),
                  [&] { select.build(t, visible, numSel, expand); });
        // Open tail, then -1 padding.
        Value pooled = kb.imul(numSel, kb.idx(kpool));
        Value tailStart = kb.imul(visible, kb.idx(kpool));
        Value count = kb.iadd(pooled, kb.isub(len, tailStart));
        kb.loop(tailStart, len, [&](Value pos) {
          kb.storeIndex(pos, sel, {t, kb.iadd(pooled, kb.isub(pos, tailStart))});
        });
        kb.loop(count, width, [&](Value i) {
          kb.storeIndex(kb.idx(-1), sel, {t, i});
        });
        kb.storeIndex(count, counts, t);
      });
      select.release();
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::strata::populateIndexerToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<KpoolCompressToKernel, KpoolIndexerToKernel>(
      converter, patterns.getContext());
}
