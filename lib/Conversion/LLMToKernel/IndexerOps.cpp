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
// top-(min(topk/kpool, |V|)) pools by repeated arg-max (descending score,
// ties to the lowest pool; each arg-max over 128 strided slices, then their
// bests), or every visible pool in pool order when that is all of them,
// expansion to kpool positions per pool, then the open tail, then -1
// padding. With an fp8 pool (Hadamard-rotated ue8m0 keys) the
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

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Strided slices of the visible pools per arg-max of the indexer's top-k
/// (a GPU block's 128 threads take one each).
constexpr int64_t kTopkChunks = 128;

/// The indices of pool p of token t in kpool_scores' [T, block_table width,
/// rows per page] scores: [t, p / rows, p % rows].
SmallVector<Value> scoreIndices(KernelBuilder &kb, Value t, Value p,
                                int64_t rowsPerPage) {
  return {t, kb.idiv(p, kb.idx(rowsPerPage)), kb.irem(p, kb.idx(rowsPerPage))};
}

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
      forEachToken(kb, starts, [&](Value r, Value t) {
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
    for (Value v : {adaptor.getQ(), adaptor.getWeights(), adaptor.getPool(),
                    adaptor.getPositions(), adaptor.getSeqStarts(),
                    adaptor.getBlockTable()})
      scoring.addInput(v);
    MemRefType scoresType = MemRefType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, rowsPerPage},
        rewriter.getF32Type());
    unsigned scoresOut = scoring.addResult(
        scoresType, {getDimValue(rewriter, loc, adaptor.getQ(), 0),
                     getDimValue(rewriter, loc, adaptor.getBlockTable(), 1)});
    scoring.attributes.push_back(rewriter.getNamedAttr(
        kKpoolScoresAttrName,
        rewriter.getDictionaryAttr(
            {rewriter.getNamedAttr("kpool", rewriter.getI64IntegerAttr(kpool)),
             rewriter.getNamedAttr("scale", op.getScaleAttr())})));
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

    // kpool_indexer, one row per token: the top pools from its scores row
    // (which it overwrites), expanded to positions, the open tail, padding.
    KernelCall call;
    for (Value v : {adaptor.getPositions(), allScores})
      call.addInput(v);
    MemRefType selType = getKernelMemRefType(op.getSelection().getType());
    MemRefType cntType = getKernelMemRefType(op.getCounts().getType());
    unsigned selOut = call.addResult(
        selType, dynamicSizesLike(rewriter, loc, adaptor.getQ(), selType));
    unsigned cntOut = call.addResult(
        cntType, dynamicSizesLike(rewriter, loc, adaptor.getQ(), cntType));
    auto results = call.emit(rewriter, op, "kpool_indexer",
                             [&](KernelBuilder &kb, ValueRange a) {
      Value positions = a[0], allScores = a[1];
      Value sel = a[selOut], counts = a[cntOut];
      OpBuilder &b = kb.builder();
      Location l = kb.getLoc();
      Value negInf = kb.f32(-INFINITY);
      Value width = kb.dim(sel, 1);
      // The per-slice bests of the two-level arg-max (pool ids as f32:
      // exact below 2^24).
      Value chunkScore = kb.scratch({kTopkChunks});
      Value chunkPool = kb.scratch({kTopkChunks});
      // One row per token (on the GPU a grid row); its request is not
      // needed.
      kb.loop(kb.idx(0), kb.dim(allScores, 0), [&](Value t) {
        Value x = kb.loadIndex(positions, t);
        Value len = kb.iadd(x, kb.idx(1));
        Value visible = kb.idiv(len, kb.idx(kpool));
        Value numSel = kb.imin(kb.idx(topk / kpool), visible);
        // Pool p's score.
        auto at = [&](Value p) { return scoreIndices(kb, t, p, rowsPerPage); };
        // Top pools by repeated arg-max (descending score, ties to the
        // lowest pool), expanded to positions. Each arg-max is two-level:
        // the best of each of `chunks` strided slices of the visible pools
        // (independent iterations: a GPU block's threads share them), then
        // the best of those (ties again to the lowest pool), so a selection
        // costs visible / chunks + chunks steps on a thread instead of
        // visible. The same pools in the same order as one scan.
        // (At least 1: with no visible pool nothing is selected, but the
        // slice length below is computed.)
        Value chunks =
            kb.imax(kb.imin(visible, kb.idx(kTopkChunks)), kb.idx(1));
        // Slice length, out of the slice loop (a division there would make
        // its iterations look unsafe to spread).
        Value rounds = kb.idiv(kb.iadd(visible, kb.isub(chunks, kb.idx(1))),
                               chunks);
        Value lastPool = kb.isub(visible, kb.idx(1));
        // Every visible pool selected (short contexts): their positions in
        // order, no arg-max (the order does not matter to the attention).
        Value everyPool = kb.ige(numSel, visible);
        kb.ifThen(everyPool, [&] {
          kb.loop(kb.idx(0), kb.imul(visible, kb.idx(kpool)), [&](Value i) {
            kb.storeIndex(i, sel, {t, i});
          });
        });
        Value argMaxSteps = kb.select(everyPool, kb.idx(0), numSel);
        kb.loop(kb.idx(0), argMaxSteps, [&](Value n) {
          kb.loop(kb.idx(0), chunks, [&](Value q) {
            SmallVector<Value> best = kb.loopCarry(
                kb.idx(0), rounds, ValueRange{negInf, q},
                [&](Value m, ValueRange c) -> SmallVector<Value> {
                  Value p = kb.iadd(q, kb.imul(m, chunks));
                  Value v = kb.load(allScores, at(kb.imin(p, lastPool)));
                  Value better = arith::AndIOp::create(b, l, kb.ilt(p, visible),
                                                       kb.gt(v, c[0]));
                  return {kb.select(better, v, c[0]),
                          kb.select(better, p, c[1])};
                });
            kb.store(best[0], chunkScore, q);
            kb.store(kb.toF32(best[1]), chunkPool, q);
          });
          SmallVector<Value> best = kb.loopCarry(
              kb.idx(0), chunks, ValueRange{negInf, kb.f32(0.0)},
              [&](Value q, ValueRange c) -> SmallVector<Value> {
                Value v = kb.load(chunkScore, q);
                Value pool = kb.load(chunkPool, q);
                Value tie = arith::AndIOp::create(
                    b, l,
                    arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, v,
                                          c[0]),
                    kb.lt(pool, c[1]));
                Value better =
                    arith::OrIOp::create(b, l, kb.gt(v, c[0]), tie);
                return {kb.select(better, v, c[0]),
                        kb.select(better, pool, c[1])};
              });
          Value bestPool = arith::IndexCastOp::create(
              b, l, b.getIndexType(),
              arith::FPToSIOp::create(b, l, b.getI64Type(), best[1]));
          kb.store(negInf, allScores, at(bestPool));
          kb.loop(0, kpool, [&](Value s) {
            kb.storeIndex(kb.iadd(kb.imul(bestPool, kb.idx(kpool)), s), sel,
                          {t, kb.iadd(kb.imul(n, kb.idx(kpool)), s)});
          });
        });
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
      kb.dealloc(chunkScore);
      kb.dealloc(chunkPool);
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
