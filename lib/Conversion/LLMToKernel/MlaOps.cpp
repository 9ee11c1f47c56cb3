//===- MlaOps.cpp - absorbed sparse MLA to kernels ------------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.mla_attention computes, per (token, head): the absorbed query
// qa = W_UK^h^T q, scores against the latent rows of the selected positions
// read straight from the paged latent pool (first R lanes; pad lanes never
// read; fp8 pools dequantised per lane, PagedPoolAccess), a max-subtracted
// softmax, the latent-space output sum oh and the W_UV^h projection. fp32
// throughout with one rounding at the store; the selection order does not
// matter.
//
// Three kernels, every step size (decode included):
//   mla_absorb     (token, head) -> qa [T, H, R] f32,
//   mla_attend     (token, head) -> oh [T, H, R] f32 (scores, softmax, sum),
//   mla_project    (token, head) -> the result.
// mla_attend carries kMlaAttendAttrName: a GPU target with matrix units
// replaces it by a kernel in which the 16 heads of a block share each
// latent row (LLMToGPU buildMlaAttendKernel); mla_absorb and mla_project
// carry kDenseMatmulAttrName with `heads`: there a matmul per head against
// W_UK^h (read transposed; qa stays f32) and W_UV^h (oh rounded to bf16 on
// the way in). (Until session 10 steps below 64 tokens ran one kernel per
// (token, head) doing all three; on the H200 the three-kernel form takes
// the slice's decode MLA from 395 to 104 us.)
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// One MLA head's math on kernel arguments; `at(buffer, t, h)` addresses
/// a per-(token, head) vector of R values (a [R] scratch or a [T, H, R]
/// buffer).
struct MlaHead {
  int64_t heads, dq, dv, rank, pageSize;
  double scale;
  WeightView kvB;

  Value rowUK(KernelBuilder &kb, Value h) const {
    return kb.imul(h, kb.idx(dq + dv));
  }

  /// qa[c] = sum_i W_UK^h[i, c] q[t, h, i], stored through `store(c, v)`.
  void absorb(KernelBuilder &kb, Value q, Value t, Value h,
              llvm::function_ref<void(Value, Value)> store) const {
    Value uk = rowUK(kb, h);
    kb.loop(0, rank, [&](Value c) {
      Value v = kb.reduce(0, dq, kb.f32(0.0), [&](Value i, Value acc) {
        return kb.add(acc, kb.mul(kvB.load(kb, {kb.iadd(uk, i), c}),
                                  kb.load(q, {t, h, i})));
      });
      store(c, v);
    });
  }

  /// The softmax over the selected latent rows of token t (request r) of
  /// the scores qa . latent * scale, and oh[c] = sum_j p_j latent_j[c]
  /// (stored through `store`); `prob` is a [width of sel] f32 scratch.
  void attend(KernelBuilder &kb, const PagedPoolAccess &cache, Value sel,
              Value counts, Value bt, Value prob, Value r, Value t,
              llvm::function_ref<Value(Value)> qaAt,
              llvm::function_ref<void(Value, Value)> store) const {
    Value zero = kb.f32(0.0);
    Value count = kb.loadIndex(counts, t);
    auto latent = [&](Value j, Value c) {
      auto [page, row] =
          pagedRow(kb, bt, r, kb.loadIndex(sel, {t, j}), pageSize);
      return cache.load(kb, page, row, c);
    };
    Value mx = kb.reduce(kb.idx(0), count, kb.f32(-INFINITY),
                         [&](Value j, Value acc) {
      Value dot = kb.reduce(0, rank, zero, [&](Value c, Value s) {
        return kb.add(s, kb.mul(qaAt(c), latent(j, c)));
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
      store(c, kb.div(v, sum));
    });
  }

  /// out[t, h, e] = sum_c W_UV^h[e, c] oh[c].
  void project(KernelBuilder &kb, Value out, Value t, Value h,
               llvm::function_ref<Value(Value)> ohAt) const {
    Value uv = kb.iadd(rowUK(kb, h), kb.idx(dq));
    kb.loop(0, dv, [&](Value e) {
      Value v = kb.reduce(0, rank, kb.f32(0.0), [&](Value c, Value s) {
        return kb.add(s, kb.mul(kvB.load(kb, {kb.iadd(uv, e), c}), ohAt(c)));
      });
      kb.store(v, out, {t, h, e});
    });
  }
};

/// kDenseMatmulAttrName of a head-batched matmul (mla_absorb, mla_project):
/// head h's block of kv_b starts at row h * stride + offset (transposed:
/// [K, N] rows).
NamedAttribute headBatchedMatmul(Builder &b, int64_t heads, int64_t offset,
                                 int64_t stride, bool transposed) {
  return b.getNamedAttr(
      kDenseMatmulAttrName,
      b.getDictionaryAttr(
          {b.getNamedAttr("epilogue", b.getStringAttr("store")),
           b.getNamedAttr("heads", b.getI64IntegerAttr(heads)),
           b.getNamedAttr("weight_row_offset", b.getI64IntegerAttr(offset)),
           b.getNamedAttr("weight_row_stride", b.getI64IntegerAttr(stride)),
           b.getNamedAttr("weight_transposed", b.getBoolAttr(transposed))}));
}

struct MlaAttentionToKernel : OpConversionPattern<llm::MlaAttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::MlaAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto pool = cast<llm::LatentPoolType>(op.getCache().getType());
    int64_t heads = op.getHeads(), rank = op.getKvLoraRank();
    Type kvbType = op.getKvB().getType();
    auto noFp8Source = [&] {
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    };
    auto head = [&](ValueRange args, unsigned kvb) {
      return MlaHead{heads,
                     int64_t(op.getQkHeadDim()),
                     int64_t(op.getVHeadDim()),
                     rank,
                     pool.getPageSize(),
                     op.getSoftmaxScale().convertToDouble(),
                     makeWeightView(kvbType,
                                    args.slice(kvb, getWeightArgTypes(kvbType)
                                                        .size()))};
    };
    MemRefType resultType = getKernelMemRefType(op.getType());
    SmallVector<Value> resultSizes =
        dynamicSizesLike(rewriter, loc, adaptor.getQ(), resultType);
    // The selection, counts, sequence starts and block table, after the
    // cache; returns the cache's argument.
    auto addCacheArgs = [&](KernelCall &call) {
      unsigned cacheArg = call.addInput(adaptor.getCache());
      for (Value v : {adaptor.getSelection(), adaptor.getCounts(),
                      adaptor.getSeqStarts(), adaptor.getBlockTable()})
        call.addInput(v);
      return cacheArg;
    };

    Value out;
    auto perHead = MemRefType::get({ShapedType::kDynamic, heads, rank},
                                   rewriter.getF32Type());
    SmallVector<Value> tokens = {getDimValue(rewriter, loc, adaptor.getQ(), 0)};
    Value qaAll;
    {
      KernelCall call;
      call.addInput(adaptor.getQ());
      FailureOr<unsigned> kvb =
          call.addWeight(rewriter, loc, op.getKvB(), adaptor.getKvB());
      if (failed(kvb))
        return noFp8Source();
      unsigned o = call.addResult(perHead, tokens);
      // A head-batched matmul with W_UK^h = rows [h (dq + dv), + dq) of
      // kv_b as W^T, for matrix-unit targets.
      call.attributes.push_back(headBatchedMatmul(
          rewriter, heads, 0, op.getQkHeadDim() + op.getVHeadDim(),
          /*transposed=*/true));
      qaAll = call.emit(rewriter, op, "mla_absorb",
                        [&](KernelBuilder &kb, ValueRange a) {
        MlaHead mla = head(a, *kvb);
        kb.parallelRows({kb.idx(0), kb.idx(0)},
                        {kb.dim(a[0], 0), kb.idx(heads)},
                        [&](ValueRange th) {
          mla.absorb(kb, a[0], th[0], th[1], [&](Value c, Value v) {
            kb.store(v, a[o], {th[0], th[1], c});
          });
        });
      })[0];
    }
    Value ohAll;
    {
      KernelCall call;
      call.addInput(qaAll);
      unsigned cacheArg = addCacheArgs(call);
      unsigned o = call.addResult(perHead, tokens);
      call.attributes.push_back(rewriter.getNamedAttr(
          kMlaAttendAttrName,
          rewriter.getDictionaryAttr(
              {rewriter.getNamedAttr("softmax_scale",
                                     op.getSoftmaxScaleAttr())})));
      ohAll = call.emit(rewriter, op, "mla_attend",
                        [&](KernelBuilder &kb, ValueRange a) {
        MlaHead mla = head(a, 0);
        Value sel = a[cacheArg + 1];
        PagedPoolAccess cache(a[cacheArg], pool);
        Value prob = kb.scratch({ShapedType::kDynamic},
                                ValueRange{kb.dim(sel, 1)});
        forEachTokenHeadRow(kb, a[cacheArg + 3], a[0], heads,
                            [&](Value r, Value t, Value h) {
          mla.attend(kb, cache, sel, a[cacheArg + 2], a[cacheArg + 4], prob,
                     r, t, [&](Value c) { return kb.load(a[0], {t, h, c}); },
                     [&](Value c, Value v) { kb.store(v, a[o], {t, h, c}); });
        });
        kb.dealloc(prob);
      })[0];
    }
    {
      // Marked as a head-batched matmul (W_UV^h: the rows [h (dq + dv) + dq,
      // + dv) of kv_b) for matrix-unit targets (LLMToGPU
      // buildDenseMatmulKernelFunction).
      KernelCall call;
      unsigned oh = call.addInput(ohAll);
      FailureOr<unsigned> kvb =
          call.addWeight(rewriter, loc, op.getKvB(), adaptor.getKvB());
      if (failed(kvb))
        return noFp8Source();
      call.addResult(resultType, resultSizes);
      int64_t dq = op.getQkHeadDim(), dv = op.getVHeadDim();
      call.attributes.push_back(
          headBatchedMatmul(rewriter, heads, dq, dq + dv, /*transposed=*/false));
      out = call.emit(rewriter, op, "mla_project",
                      [&](KernelBuilder &kb, ValueRange a) {
        MlaHead mla = head(a, *kvb);
        kb.parallelRows({kb.idx(0), kb.idx(0)},
                        {kb.dim(a[oh], 0), kb.idx(heads)},
                        [&](ValueRange th) {
          mla.project(kb, a.back(), th[0], th[1], [&](Value c) {
            return kb.load(a[oh], {th[0], th[1], c});
          });
        });
      })[0];
    }
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::strata::populateMlaToKernelPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<MlaAttentionToKernel>(converter, patterns.getContext());
}
