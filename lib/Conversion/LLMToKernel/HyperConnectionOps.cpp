//===- HyperConnectionOps.cpp - mHC residual streams to kernels -----------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.hc_expand / llm.hc_collapse are copy / mean loops. llm.mhc_pre is two
// kernels: mhc_mix, one row per (token, mixing output) (on the GPU a grid of
// tokens x outputs whose blocks reduce one [h * d] dot product each), the
// fp32 mixing projection of the normalised flattened streams; then mhc_pre
// per token: the pre/post sigmoids, the Sinkhorn iterations done in place in
// the comb output, and the pre-weighted stream collapse. llm.mhc_post writes the sub-layer output back into the
// streams. Everything is fp32 with one rounding at each activation store.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

struct HcExpandToKernel : OpConversionPattern<llm::HcExpandOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::HcExpandOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCall call;
    call.addInput(adaptor.getInput());
    MemRefType resultType = getKernelMemRefType(op.getType());
    call.addResult(resultType, dynamicSizesLike(rewriter, op.getLoc(),
                                                adaptor.getInput(),
                                                resultType));
    int64_t h = resultType.getDimSize(1), d = resultType.getDimSize(2);
    auto results = call.emit(rewriter, op, "hc_expand",
                             [&](KernelBuilder &kb, ValueRange args) {
      kb.loop(kb.idx(0), kb.dim(args[0], 0), [&](Value t) {
        kb.loop(0, d, [&](Value c) {
          Value x = kb.load(args[0], {t, c});
          kb.loop(0, h, [&](Value s) { kb.store(x, args[1], {t, s, c}); });
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct HcCollapseToKernel : OpConversionPattern<llm::HcCollapseOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::HcCollapseOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCall call;
    call.addInput(adaptor.getInput());
    MemRefType resultType = getKernelMemRefType(op.getType());
    call.addResult(resultType, dynamicSizesLike(rewriter, op.getLoc(),
                                                adaptor.getInput(),
                                                resultType));
    int64_t h = op.getHcMult(), d = resultType.getDimSize(1);
    auto results = call.emit(rewriter, op, "hc_collapse",
                             [&](KernelBuilder &kb, ValueRange args) {
      kb.loop(kb.idx(0), kb.dim(args[0], 0), [&](Value t) {
        kb.loop(0, d, [&](Value c) {
          Value sum = kb.reduce(0, h, kb.f32(0.0), [&](Value s, Value acc) {
            return kb.add(acc, kb.load(args[0], {t, s, c}));
          });
          kb.store(kb.div(sum, kb.f32(static_cast<double>(h))), args[1],
                   {t, c});
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct MhcPreToKernel : OpConversionPattern<llm::MhcPreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::MhcPreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t h = op.getHcMult();
    int64_t d = op.getResidual().getType().getDimSize(2);
    int64_t mix = (2 + h) * h;
    double normEps = op.getNormEps().convertToFloat();
    // m[t, j] = (fn[j] . r[t]) * rsqrt(mean(r[t]^2) + norm_eps).
    Value mixed;
    {
      KernelCall call;
      call.addInput(adaptor.getResidual());
      call.addInput(adaptor.getFn());
      unsigned out = call.addResult(
          MemRefType::get({ShapedType::kDynamic, mix}, rewriter.getF32Type()),
          {getDimValue(rewriter, loc, adaptor.getResidual(), 0)});
      mixed = call.emit(rewriter, op, "mhc_mix",
                        [&](KernelBuilder &kb, ValueRange args) {
        Value r = args[0], fn = args[1];
        kb.parallelRows({kb.idx(0), kb.idx(0)}, {kb.dim(r, 0), kb.idx(mix)},
                        [&](ValueRange tj) {
          Value t = tj[0], j = tj[1];
          // Flat loops over the h * d stream values: one reduction each,
          // which a GPU block shares.
          auto stream = [&](Value i) {
            return kb.load(r, {t, kb.idiv(i, kb.idx(d)), kb.irem(i, kb.idx(d))});
          };
          Value ss = kb.reduce(0, h * d, kb.f32(0.0), [&](Value i, Value a) {
            Value v = stream(i);
            return kb.add(a, kb.mul(v, v));
          });
          Value inv = kb.rsqrt(
              kb.add(kb.div(ss, kb.f32(static_cast<double>(h * d))),
                     kb.f32(normEps)));
          Value dot = kb.reduce(0, h * d, kb.f32(0.0), [&](Value i, Value a) {
            return kb.add(a, kb.mul(kb.load(fn, {j, i}), stream(i)));
          });
          kb.store(kb.mul(dot, inv), args[out], tj);
        });
      })[0];
    }
    KernelCall call;
    call.addInput(adaptor.getResidual());
    call.addInput(mixed);
    call.addInput(adaptor.getBase());
    call.addInput(adaptor.getScale());
    for (Value result : op->getResults()) {
      MemRefType type = getKernelMemRefType(result.getType());
      call.addResult(type, dynamicSizesLike(rewriter, loc,
                                            adaptor.getResidual(), type));
    }
    int64_t iters = op.getSinkhornIters();
    double hcEps = op.getHcEps().convertToFloat();
    double postMult = op.getPostMult().convertToFloat();
    auto results = call.emit(rewriter, op, "mhc_pre",
                             [&](KernelBuilder &kb, ValueRange args) {
      Value r = args[0], mixed = args[1], base = args[2], scale = args[3];
      Value x = args[4], post = args[5], comb = args[6];
      Value pre = kb.scratch({h});
      Value eps = kb.f32(hcEps);
      Value scale0 = kb.load(scale, kb.idx(0));
      Value scale1 = kb.load(scale, kb.idx(1));
      Value scale2 = kb.load(scale, kb.idx(2));
      // Column normalisation of comb[t]: C[:, j] /= sum_i C[i, j] + eps.
      auto normalizeColumns = [&](Value t) {
        kb.loop(0, h, [&](Value j) {
          Value sum = kb.reduce(0, h, kb.f32(0.0), [&](Value i, Value acc) {
            return kb.add(acc, kb.load(comb, {t, i, j}));
          });
          Value denom = kb.add(sum, eps);
          kb.loop(0, h, [&](Value i) {
            kb.store(kb.div(kb.load(comb, {t, i, j}), denom), comb, {t, i, j});
          });
        });
      };
      auto normalizeRows = [&](Value t) {
        kb.loop(0, h, [&](Value i) {
          Value sum = kb.reduce(0, h, kb.f32(0.0), [&](Value j, Value acc) {
            return kb.add(acc, kb.load(comb, {t, i, j}));
          });
          Value denom = kb.add(sum, eps);
          kb.loop(0, h, [&](Value j) {
            kb.store(kb.div(kb.load(comb, {t, i, j}), denom), comb, {t, i, j});
          });
        });
      };
      kb.loop(kb.idx(0), kb.dim(r, 0), [&](Value t) {
        auto m = [&](Value j) { return kb.load(mixed, {t, j}); };
        kb.loop(0, h, [&](Value s) {
          Value p = kb.add(kb.mul(m(s), scale0), kb.load(base, s));
          kb.store(kb.add(kb.sigmoid(p), eps), pre, s);
          Value hs = kb.iadd(s, kb.idx(h));
          Value q = kb.add(kb.mul(m(hs), scale1), kb.load(base, hs));
          kb.store(kb.mul(kb.f32(postMult), kb.sigmoid(q)), post, {t, s});
        });
        // comb = softmax_j(C0) + eps, then Sinkhorn.
        kb.loop(0, h, [&](Value i) {
          auto logit = [&](Value j) {
            Value k = kb.iadd(kb.idx(2 * h), kb.iadd(kb.imul(i, kb.idx(h)), j));
            return kb.add(kb.mul(m(k), scale2), kb.load(base, k));
          };
          Value mx = kb.reduce(0, h, kb.f32(-INFINITY),
                               [&](Value j, Value acc) {
                                 return kb.max(acc, logit(j));
                               });
          Value sum = kb.reduce(0, h, kb.f32(0.0), [&](Value j, Value acc) {
            Value e = kb.exp(kb.sub(logit(j), mx));
            kb.store(e, comb, {t, i, j});
            return kb.add(acc, e);
          });
          kb.loop(0, h, [&](Value j) {
            kb.store(kb.add(kb.div(kb.load(comb, {t, i, j}), sum), eps), comb,
                     {t, i, j});
          });
        });
        normalizeColumns(t);
        kb.loop(1, iters, [&](Value) {
          normalizeRows(t);
          normalizeColumns(t);
        });
        // x = sum_s pre_s * R[t, s].
        kb.loop(0, d, [&](Value c) {
          Value sum = kb.reduce(0, h, kb.f32(0.0), [&](Value s, Value acc) {
            return kb.add(acc, kb.mul(kb.load(pre, s), kb.load(r, {t, s, c})));
          });
          kb.store(sum, x, {t, c});
        });
      });
      kb.dealloc(pre);
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct MhcPostToKernel : OpConversionPattern<llm::MhcPostOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::MhcPostOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCall call;
    call.addInput(adaptor.getInput());
    call.addInput(adaptor.getResidual());
    call.addInput(adaptor.getPost());
    call.addInput(adaptor.getComb());
    MemRefType resultType = getKernelMemRefType(op.getType());
    call.addResult(resultType, dynamicSizesLike(rewriter, op.getLoc(),
                                                adaptor.getResidual(),
                                                resultType));
    int64_t h = op.getHcMult(), d = resultType.getDimSize(2);
    auto results = call.emit(rewriter, op, "mhc_post",
                             [&](KernelBuilder &kb, ValueRange args) {
      Value y = args[0], r = args[1], post = args[2], comb = args[3];
      kb.loop(kb.idx(0), kb.dim(r, 0), [&](Value t) {
        kb.loop(0, h, [&](Value j) {
          Value pj = kb.load(post, {t, j});
          kb.loop(0, d, [&](Value c) {
            Value acc = kb.reduce(0, h, kb.mul(pj, kb.load(y, {t, c})),
                                  [&](Value i, Value a) {
                                    return kb.add(
                                        a, kb.mul(kb.load(comb, {t, i, j}),
                                                  kb.load(r, {t, i, c})));
                                  });
            kb.store(acc, args[4], {t, j, c});
          });
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::strata::populateHyperConnectionToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<HcExpandToKernel, HcCollapseToKernel, MhcPreToKernel,
               MhcPostToKernel>(converter, patterns.getContext());
}
