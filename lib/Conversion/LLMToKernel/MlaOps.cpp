//===- MlaOps.cpp - absorbed sparse MLA to kernels ------------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.mla_attention becomes one kernel whose rows are the (token, head)
// pairs (forEachTokenHeadRow: on the GPU a grid of tokens x heads, the
// threads of a block sharing one pair's loops). Per row: the absorbed
// query qa = W_UK^h^T q (fp32 scratch [R]), scores against the latent rows
// of the selected positions read straight from the paged latent pool
// (first R lanes; pad lanes never read; fp8 pools dequantised per lane,
// PagedPoolAccess), a max-subtracted softmax, the
// latent-space output sum and the W_UV^h projection. fp32 throughout with
// one rounding at the store; the selection order does not matter.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

struct MlaAttentionToKernel : OpConversionPattern<llm::MlaAttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::MlaAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto pool = cast<llm::LatentPoolType>(op.getCache().getType());
    KernelCall call;
    call.addInput(adaptor.getQ());
    FailureOr<unsigned> kvb =
        call.addWeight(rewriter, loc, op.getKvB(), adaptor.getKvB());
    if (failed(kvb))
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    unsigned cacheArg = call.addInput(adaptor.getCache());
    for (Value v : {adaptor.getSelection(), adaptor.getCounts(),
                    adaptor.getSeqStarts(), adaptor.getBlockTable()})
      call.addInput(v);
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType, dynamicSizesLike(rewriter, loc, adaptor.getQ(), resultType));
    int64_t heads = op.getHeads(), dq = op.getQkHeadDim();
    int64_t dv = op.getVHeadDim(), rank = op.getKvLoraRank();
    int64_t pageSize = pool.getPageSize();
    double scale = op.getSoftmaxScale().convertToFloat();
    Type kvbType = op.getKvB().getType();
    auto results = call.emit(rewriter, op, "mla_attention",
                             [&](KernelBuilder &kb, ValueRange a) {
      Value q = a[0], sel = a[cacheArg + 1];
      PagedPoolAccess cache(a[cacheArg], pool);
      Value counts = a[cacheArg + 2], starts = a[cacheArg + 3];
      Value bt = a[cacheArg + 4], o = a[out];
      WeightView kvB = makeWeightView(kvbType, a.slice(*kvb, cacheArg - *kvb));
      Value zero = kb.f32(0.0);
      Value qa = kb.scratch({rank}), oh = kb.scratch({rank});
      Value prob = kb.scratch({ShapedType::kDynamic},
                              ValueRange{kb.dim(sel, 1)});
      forEachTokenHeadRow(kb, starts, q, heads, [&](Value r, Value t, Value h) {
        Value count = kb.loadIndex(counts, t);
        auto latent = [&](Value j, Value c) {
          auto [page, row] =
              pagedRow(kb, bt, r, kb.loadIndex(sel, {t, j}), pageSize);
          return cache.load(kb, page, row, c);
        };
        Value rowUK = kb.imul(h, kb.idx(dq + dv));
        Value rowUV = kb.iadd(rowUK, kb.idx(dq));
        kb.loop(0, rank, [&](Value c) {
          Value v = kb.reduce(0, dq, zero, [&](Value i, Value acc) {
            return kb.add(acc, kb.mul(kvB.load(kb, {kb.iadd(rowUK, i), c}),
                                      kb.load(q, {t, h, i})));
          });
          kb.store(v, qa, c);
        });
        Value mx = kb.reduce(kb.idx(0), count, kb.f32(-INFINITY),
                             [&](Value j, Value acc) {
          Value dot = kb.reduce(0, rank, zero, [&](Value c, Value s) {
            return kb.add(s, kb.mul(kb.load(qa, c), latent(j, c)));
          });
          Value score = kb.mul(dot, kb.f32(scale));
          kb.store(score, prob, j);
          return kb.max(acc, score);
        });
        Value sum = kb.reduce(kb.idx(0), count, zero, [&](Value j, Value s) {
          Value e = kb.exp(kb.sub(kb.load(prob, j), mx));
          kb.store(e, prob, j);
          return kb.add(s, e);
        });
        kb.loop(0, rank, [&](Value c) {
          Value v = kb.reduce(kb.idx(0), count, zero, [&](Value j, Value s) {
            return kb.add(s, kb.mul(kb.load(prob, j), latent(j, c)));
          });
          kb.store(kb.div(v, sum), oh, c);
        });
        kb.loop(0, dv, [&](Value e) {
          Value v = kb.reduce(0, rank, zero, [&](Value c, Value s) {
            return kb.add(s, kb.mul(kvB.load(kb, {kb.iadd(rowUV, e), c}),
                                    kb.load(oh, c)));
          });
          kb.store(v, o, {t, h, e});
        });
      });
      for (Value m : {qa, oh, prob})
        kb.dealloc(m);
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::strata::populateMlaToKernelPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<MlaAttentionToKernel>(converter, patterns.getContext());
}
