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
// Four kernels, every step size (decode included):
//   mla_absorb     (token, head) -> qa [T, H, R] f32,
//   mla_attend     (token, head) -> oh [T, H, R] f32 (scores, softmax, sum),
//                  or in steps of at most 32 tokens per (token, position
//                  range) partial results into a parts buffer (MlaSplit.h),
//   mla_combine    (token, head) of those steps: the ranges merged into oh,
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
#include "lib/Conversion/LLMToKernel/MlaSplit.h"
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

  /// The softmax over the selected latent rows [j0, j1) of token t
  /// (request r) of the scores qa . latent * scale, and oh[c] = sum_j p_j
  /// latent_j[c] (stored through `store`; 0 for an empty range); `prob` is a
  /// [width of sel] f32 scratch. Returns the largest score and the sum of
  /// exp(score - it).
  std::pair<Value, Value>
  attend(KernelBuilder &kb, const PagedPoolAccess &cache, Value sel, Value bt,
         Value prob, Value r, Value t, Value j0, Value j1,
         llvm::function_ref<Value(Value)> qaAt,
         llvm::function_ref<void(Value, Value)> store) const {
    Value zero = kb.f32(0.0);
    auto latent = [&](Value j, Value c) {
      auto [page, row] =
          pagedRow(kb, bt, r, kb.loadIndex(sel, {t, j}), pageSize);
      return cache.load(kb, page, row, c);
    };
    Value mx = kb.reduce(j0, j1, kb.f32(-INFINITY), [&](Value j, Value acc) {
      Value dot = kb.reduce(0, rank, zero, [&](Value c, Value s) {
        return kb.add(s, kb.mul(qaAt(c), latent(j, c)));
      });
      Value score = kb.mul(dot, kb.f32(scale));
      kb.store(score, prob, j);
      return kb.max(acc, score);
    });
    Value sum = kb.reduce(j0, j1, zero, [&](Value j, Value s) {
      Value e = kb.exp(kb.sub(kb.load(prob, j), mx));
      kb.store(e, prob, j);
      return kb.add(s, e);
    });
    Value nonEmpty = kb.gt(sum, zero);
    kb.loop(0, rank, [&](Value c) {
      Value v = kb.reduce(j0, j1, zero, [&](Value j, Value s) {
        return kb.add(s, kb.mul(kb.load(prob, j), latent(j, c)));
      });
      store(c, kb.select(nonEmpty, kb.div(v, sum), zero));
    });
    return {mx, sum};
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
  MLIRContext *ctx = b.getContext();
  return b.getNamedAttr(
      kDenseMatmulAttrName,
      llm::DenseMatmulAttr::get(
          ctx, llm::DenseEpilogue::Store, /*min_rows=*/0, FloatAttr(),
          /*top_k=*/0, /*hc_mult=*/0,
          llm::HeadBatchedAttr::get(ctx, heads, offset, stride, transposed)));
}

/// mla_combine, rows (token, head) of steps of at most kMlaSplitMaxTokens
/// tokens: the token's ranges in `parts` merged into `oh` in place
/// (MlaSplit.h). The ranges' normalised weights are computed once per row
/// into a scratch row; the loops over the ranges take 8 per iteration
/// (masked past S), so that their loads are in flight together.
void emitMlaCombine(ConversionPatternRewriter &rewriter, Operation *op,
                    Value ohAll, Value partsAll, int64_t heads, int64_t rank) {
  KernelCall call;
  unsigned oh = call.addInput(ohAll, llm::KernelRole::Out);
  unsigned parts = call.addInput(partsAll, llm::KernelRole::SplitParts);
  call.attributes.push_back(
      rewriter.getNamedAttr(kMlaCombineAttrName, rewriter.getUnitAttr()));
  call.emit(rewriter, op, "mla_combine", [&](KernelBuilder &kb, ValueRange a) {
    Value tokens = kb.dim(a[oh], 0);
    Value splits = buildMlaSplitsPerToken(kb.builder(), kb.getLoc(), tokens);
    Value rows = kb.rowsIfStepSize(tokens, tokens, kMlaSplitMaxTokens + 1,
                                   /*atLeast=*/false);
    Value weights = kb.scratch({kMlaSplitSlots});
    constexpr int64_t kUnroll = 8;
    Value steps =
        kb.idiv(kb.iadd(splits, kb.idx(kUnroll - 1)), kb.idx(kUnroll));
    Value lastSlot = kb.idx(kMlaSplitSlots - 1);
    auto inRange = [&](Value s) { return kb.ilt(s, splits); };
    // body(s, acc) for s in [0, S), kUnroll per iteration written out (the
    // bodies mask s >= S themselves).
    auto overRanges = [&](Value init,
                          llvm::function_ref<Value(Value, Value)> body) {
      return kb.reduce(kb.idx(0), steps, init, [&](Value step, Value acc) {
        for (int64_t i = 0; i < kUnroll; ++i)
          acc = body(kb.iadd(kb.imul(step, kb.idx(kUnroll)), kb.idx(i)), acc);
        return acc;
      });
    };
    kb.parallelRows({kb.idx(0), kb.idx(0)}, {rows, kb.idx(heads)},
                    [&](ValueRange th) {
      Value t = th[0], h = th[1];
      Value first = kb.imul(t, splits);
      auto part = [&](Value s, Value c) {
        return kb.load(a[parts], {kb.imin(kb.iadd(first, s), lastSlot), h, c});
      };
      Value top = overRanges(kb.f32(-INFINITY), [&](Value s, Value acc) {
        return kb.select(inRange(s), kb.max(acc, part(s, kb.idx(rank))), acc);
      });
      // Range s's weight: exp(m_s - top) l_s (0 for an empty range).
      auto weight = [&](Value s) {
        return kb.mul(kb.exp(kb.sub(part(s, kb.idx(rank)), top)),
                      part(s, kb.idx(rank + 1)));
      };
      Value total = overRanges(kb.f32(0.0), [&](Value s, Value acc) {
        return kb.select(inRange(s), kb.add(acc, weight(s)), acc);
      });
      kb.loop(kb.idx(0), splits,
              [&](Value s) { kb.store(kb.div(weight(s), total), weights, s); });
      // sum_s (w_s / total) o_s over the ranges of weight > 0 (an empty
      // range's o_s need not be written): exactly o_0 when range 0 is the
      // only non-empty one (the generic mla_attend's form).
      kb.loop(0, rank, [&](Value c) {
        Value v = overRanges(kb.f32(0.0), [&](Value s, Value acc) {
          Value w = kb.load(weights, kb.imin(s, lastSlot));
          Value take = kb.andi(inRange(s), kb.gt(w, kb.f32(0.0)));
          return kb.select(take, kb.add(acc, kb.mul(w, part(s, c))), acc);
        });
        kb.store(v, a[oh], {t, h, c});
      });
    });
    kb.dealloc(weights);
  });
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
      unsigned cacheArg =
          call.addInput(adaptor.getCache(), llm::KernelRole::LatentPool);
      call.addInput(adaptor.getSelection(), llm::KernelRole::Selection);
      call.addInput(adaptor.getCounts(), llm::KernelRole::SelectionCounts);
      call.addInput(adaptor.getSeqStarts(), llm::KernelRole::SeqStarts);
      call.addInput(adaptor.getBlockTable(), llm::KernelRole::BlockTable);
      return cacheArg;
    };

    Value out;
    auto perHead = MemRefType::get({ShapedType::kDynamic, heads, rank},
                                   rewriter.getF32Type());
    SmallVector<Value> tokens = {getDimValue(rewriter, loc, adaptor.getQ(), 0)};
    Value qaAll;
    {
      KernelCall call;
      call.addInput(adaptor.getQ(), llm::KernelRole::X);
      FailureOr<unsigned> kvb = call.addWeight(rewriter, loc, op.getKvB(),
                                               adaptor.getKvB(), WeightRoles{});
      if (failed(kvb))
        return noFp8Source();
      unsigned o = call.addResult(perHead, tokens, llm::KernelRole::Out);
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
    Value ohAll, partsAll;
    {
      KernelCall call;
      call.addInput(qaAll, llm::KernelRole::X);
      unsigned cacheArg = addCacheArgs(call);
      unsigned o = call.addResult(perHead, tokens, llm::KernelRole::Out);
      unsigned parts =
          call.addResult(MemRefType::get({kMlaSplitSlots, heads, rank + 2},
                                         rewriter.getF32Type()),
                         {}, llm::KernelRole::SplitParts);
      // With an fp8 pool its page layout, for the matrix-unit kernel's
      // row copies (its rows are bytes of [pages, page bytes]).
      llm::Fp8PageAttr fp8Page;
      if (std::optional<Fp8PageLayout> fp8 = getFp8PageLayout(pool))
        fp8Page = llm::Fp8PageAttr::get(rewriter.getContext(), fp8->rowsPerPage,
                                        fp8->lanes, fp8->valueRowStride,
                                        fp8->scaleOffset, fp8->groupLanes);
      call.attributes.push_back(rewriter.getNamedAttr(
          kMlaAttendAttrName,
          llm::MlaAttendAttr::get(rewriter.getContext(),
                                  op.getSoftmaxScaleAttr(), fp8Page)));
      auto results = call.emit(
          rewriter, op, "mla_attend", [&](KernelBuilder &kb, ValueRange a) {
            MlaHead mla = head(a, 0);
            Value sel = a[cacheArg + 1];
            PagedPoolAccess cache(a[cacheArg], pool);
            Value prob =
                kb.scratch({ShapedType::kDynamic}, ValueRange{kb.dim(sel, 1)});
            // One range per token, all of its positions (the others empty: only
            // their maximum and sum are written, mla_combine skips their sums):
            // mla_combine then reproduces the unsplit result exactly, so the
            // generic kernels' results do not depend on how tokens are grouped
            // into steps.
            Value splits = buildMlaSplitsPerToken(kb.builder(), kb.getLoc(),
                                                  kb.dim(a[0], 0));
            Value split = kb.ilt(kb.idx(1), splits);
            Value whole = kb.ige(kb.idx(1), splits);
            forEachTokenHeadRow(
                kb, a[cacheArg + 3], a[0], heads,
                [&](Value r, Value t, Value h) {
                  Value count = kb.loadIndex(a[cacheArg + 2], t);
                  Value first = kb.imul(t, splits);
                  std::pair<Value, Value> stats = mla.attend(
                      kb, cache, sel, a[cacheArg + 4], prob, r, t, kb.idx(0),
                      count,
                      [&](Value c) {
                        return kb.load(a[0], {t, h, c});
                      },
                      [&](Value c, Value v) {
                        kb.ifThen(whole, [&] { kb.store(v, a[o], {t, h, c}); });
                        kb.ifThen(split, [&] {
                          kb.store(v, a[parts], {first, h, c});
                        });
                      });
                  kb.ifThen(split, [&] {
                    kb.store(stats.first, a[parts], {first, h, kb.idx(rank)});
                    kb.store(stats.second, a[parts],
                             {first, h, kb.idx(rank + 1)});
                    kb.loop(kb.idx(1), splits, [&](Value s) {
                      Value slot = kb.iadd(first, s);
                      kb.store(kb.f32(-INFINITY), a[parts],
                               {slot, h, kb.idx(rank)});
                      kb.store(kb.f32(0.0), a[parts],
                               {slot, h, kb.idx(rank + 1)});
                    });
                  });
                });
            kb.dealloc(prob);
          });
      ohAll = results[0];
      partsAll = results[1];
    }
    emitMlaCombine(rewriter, op, ohAll, partsAll, heads, rank);
    {
      // Marked as a head-batched matmul (W_UV^h: the rows [h (dq + dv) + dq,
      // + dv) of kv_b) for matrix-unit targets (LLMToGPU
      // buildDenseMatmulKernelFunction).
      KernelCall call;
      unsigned oh = call.addInput(ohAll, llm::KernelRole::X);
      FailureOr<unsigned> kvb = call.addWeight(rewriter, loc, op.getKvB(),
                                               adaptor.getKvB(), WeightRoles{});
      if (failed(kvb))
        return noFp8Source();
      call.addResult(resultType, resultSizes, llm::KernelRole::Out);
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
