//===- HyperConnectionOps.cpp - mHC residual streams to kernels -----------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.hc_expand / llm.hc_collapse are copy / mean loops. llm.mhc_pre is two
// kernels (MhcMix.h): mhc_mix, one row per (token, slice of the flattened
// streams, mixing output or the sum of squares), the fp32 mixing
// projection's partial sums (GPU targets build their own kernel,
// LLMToGPU/MhcMixKernel.cpp); then mhc_pre per token: the slices added, the
// norm applied, the pre/post sigmoids, the softmax + Sinkhorn passes as loops
// over the h x h comb entries, the pre-weighted stream collapse and, in the
// x_norm form, the sub-layer's input RMSNorm (GPU targets build their own
// for bf16 streams, LLMToGPU/MhcPreKernel.cpp).
// llm.mhc_post writes the sub-layer output back into the streams, one
// (token, column) per iteration; its projection form (mhc_post_linear) first
// computes that column of the sub-layer's output projection. Everything is
// fp32 with one rounding at each activation store.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/MhcMix.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Columns per iteration of forColumnGroups.
constexpr int64_t kColumnGroup = 4;

/// body(cols) for every column of [0, d) in groups of kColumnGroup columns
/// d / kColumnGroup apart (the iterations independent: on the GPU spread over
/// the block's threads, each iteration's loads issued together before its
/// stores, where a loop of one column waited for each column's loads in
/// turn); one column per iteration when d does not divide.
void forColumnGroups(KernelBuilder &kb, int64_t d,
                     llvm::function_ref<void(ArrayRef<Value>)> body) {
  int64_t group = d % kColumnGroup == 0 ? kColumnGroup : 1;
  int64_t stride = d / group;
  kb.parallel({kb.idx(0)}, {kb.idx(stride)}, [&](ValueRange ivs) {
    SmallVector<Value> cols;
    for (int64_t k = 0; k < group; ++k)
      cols.push_back(kb.iadd(ivs[0], kb.idx(k * stride)));
    body(cols);
  });
}

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
    int64_t slices = mhcMixSlices(h * d), sliceWidth = h * d / slices;
    double normEps = op.getNormEps().convertToFloat();
    // parts[t, s, j]: slice s's dot products with fn's rows, then its sum of
    // squares (MhcMix.h).
    Value parts;
    {
      KernelCall call;
      call.addInput(adaptor.getResidual(), llm::KernelRole::Streams);
      call.addInput(adaptor.getFn(), llm::KernelRole::MixWeight);
      unsigned out = call.addResult(
          MemRefType::get({ShapedType::kDynamic, slices, mix + 1},
                          rewriter.getF32Type()),
          {getDimValue(rewriter, loc, adaptor.getResidual(), 0)},
          llm::KernelRole::MixParts);
      call.attributes.push_back(rewriter.getNamedAttr(
          kMhcMixAttrName,
          llm::MhcMixAttr::get(rewriter.getContext(), slices)));
      parts = call.emit(rewriter, op, "mhc_mix",
                        [&](KernelBuilder &kb, ValueRange args) {
        Value r = args[0], fn = args[1];
        kb.parallelRows({kb.idx(0), kb.idx(0), kb.idx(0)},
                        {kb.dim(r, 0), kb.idx(slices), kb.idx(mix + 1)},
                        [&](ValueRange tsj) {
          Value t = tsj[0], j = tsj[2];
          // Row `mix` squares the streams instead of weighing them.
          Value squares = kb.ieq(j, kb.idx(mix));
          Value row = kb.imin(j, kb.idx(mix - 1));
          Value k0 = kb.imul(tsj[1], kb.idx(sliceWidth));
          Value sum = kb.reduce(
              k0, kb.iadd(k0, kb.idx(sliceWidth)), kb.f32(0.0),
              [&](Value k, Value acc) {
                Value v = kb.load(
                    r, {t, kb.idiv(k, kb.idx(d)), kb.irem(k, kb.idx(d))});
                Value w = kb.select(squares, v, kb.load(fn, {row, k}));
                return kb.add(acc, kb.mul(w, v));
              });
          kb.store(sum, args[out], tsj);
        });
      })[0];
    }
    KernelCall call;
    using llm::KernelRole;
    call.addInput(adaptor.getResidual(), KernelRole::Streams);
    call.addInput(parts, KernelRole::MixParts);
    call.addInput(adaptor.getBase(), KernelRole::MixBase);
    call.addInput(adaptor.getScale(), KernelRole::MixScale);
    int normArg = -1;
    if (adaptor.getXNormWeight())
      normArg =
          call.addInput(adaptor.getXNormWeight(), KernelRole::XNormWeight);
    // The results: x, post, comb.
    const KernelRole resultRoles[] = {KernelRole::Out, KernelRole::StreamPost,
                                      KernelRole::StreamComb};
    for (auto [result, role] : llvm::zip_equal(op->getResults(), resultRoles)) {
      MemRefType type = getKernelMemRefType(result.getType());
      call.addResult(
          type, dynamicSizesLike(rewriter, loc, adaptor.getResidual(), type),
          role);
    }
    int64_t iters = op.getSinkhornIters();
    double hcEps = op.getHcEps().convertToFloat();
    double postMult = op.getPostMult().convertToFloat();
    double xNormEps = op.getXNormEps() ? op.getXNormEps()->convertToFloat() : 0;
    Type xElement = op.getResult().getType().getElementType();
    call.attributes.push_back(rewriter.getNamedAttr(
        kMhcPreAttrName,
        llm::MhcPreAttr::get(rewriter.getContext(), h, iters, op.getHcEpsAttr(),
                             op.getNormEpsAttr(), op.getPostMultAttr(),
                             op.getXNormEpsAttr())));
    auto results = call.emit(rewriter, op, "mhc_pre",
                             [&](KernelBuilder &kb, ValueRange args) {
      Value r = args[0], parts = args[1], base = args[2], scale = args[3];
      unsigned firstResult = normArg >= 0 ? 5 : 4;
      Value x = args[firstResult], post = args[firstResult + 1],
            comb = args[firstResult + 2];
      Value eps = kb.f32(hcEps);
      Value scale0 = kb.load(scale, kb.idx(0));
      Value scale1 = kb.load(scale, kb.idx(1));
      Value scale2 = kb.load(scale, kb.idx(2));
      // Per token: the slices' sums, the mixing values m, and the comb
      // matrix's two Sinkhorn buffers (row-major c[i * h + j]). Every step
      // below is a loop over independent entries (on the GPU spread over
      // the block's threads, one barrier apart: a thread does one division
      // per entry and pass instead of all h * h of them).
      Value sums = kb.scratch({mix + 1}), m = kb.scratch({mix});
      Value c = kb.scratch({h * h}), next = kb.scratch({h * h});
      auto entries = [&](int64_t n, llvm::function_ref<void(Value)> body) {
        kb.parallel({kb.idx(0)}, {kb.idx(n)},
                    [&](ValueRange iv) { body(iv[0]); });
      };
      // to[i * h + j] = from[i * h + j] / (sum over j' (rows) or i' (columns)
      // of from + eps), the sum in index order.
      auto normalize = [&](Value from, Value to, bool rows) {
        entries(h * h, [&](Value e) {
          Value i = kb.idiv(e, kb.idx(h)), j = kb.irem(e, kb.idx(h));
          Value sum = kb.f32(0.0);
          for (int64_t k = 0; k < h; ++k) {
            Value at = rows ? kb.iadd(kb.imul(i, kb.idx(h)), kb.idx(k))
                            : kb.iadd(kb.idx(k * h), j);
            sum = kb.add(sum, kb.load(from, at));
          }
          kb.store(kb.div(kb.load(from, e), kb.add(sum, eps)), to, e);
        });
      };
      kb.loop(kb.idx(0), kb.dim(r, 0), [&](Value t) {
        entries(mix + 1, [&](Value j) {
          kb.store(kb.reduce(0, slices, kb.f32(0.0),
                             [&](Value s, Value acc) {
                               return kb.add(acc, kb.load(parts, {t, s, j}));
                             }),
                   sums, j);
        });
        // m[j] = dot[j] * rsqrt(mean(r^2) + norm_eps); entries [h, 2h) also
        // give the post weights.
        entries(mix, [&](Value j) {
          Value inv = kb.rsqrt(
              kb.add(kb.div(kb.load(sums, kb.idx(mix)),
                            kb.f32(static_cast<double>(h * d))),
                     kb.f32(normEps)));
          Value mj = kb.mul(kb.load(sums, j), inv);
          kb.store(mj, m, j);
          Value s = kb.isub(j, kb.idx(h));
          kb.ifThen(kb.andi(kb.ige(j, kb.idx(h)), kb.ilt(j, kb.idx(2 * h))),
                    [&] {
                      Value q = kb.add(kb.mul(mj, scale1), kb.load(base, j));
                      kb.store(kb.mul(kb.f32(postMult), kb.sigmoid(q)), post,
                               {t, s});
                    });
        });
        // comb = softmax_j(C0) + eps, then Sinkhorn: columns, then
        // (rows, columns) sinkhorn_iters - 1 times.
        entries(h * h, [&](Value e) {
          Value i = kb.idiv(e, kb.idx(h));
          auto logit = [&](Value k) {
            Value at = kb.iadd(kb.idx(2 * h), k);
            return kb.add(kb.mul(kb.load(m, at), scale2), kb.load(base, at));
          };
          Value rowStart = kb.imul(i, kb.idx(h));
          SmallVector<Value> row;
          for (int64_t k = 0; k < h; ++k)
            row.push_back(logit(kb.iadd(rowStart, kb.idx(k))));
          Value mx = kb.f32(-INFINITY);
          for (Value l : row)
            mx = kb.max(mx, l);
          Value sum = kb.f32(0.0);
          for (Value l : row)
            sum = kb.add(sum, kb.exp(kb.sub(l, mx)));
          Value own = kb.exp(kb.sub(logit(e), mx));
          kb.store(kb.add(kb.div(own, sum), eps), c, e);
        });
        normalize(c, next, /*rows=*/false);
        kb.loop(1, iters, [&](Value) {
          normalize(next, c, /*rows=*/true);
          normalize(c, next, /*rows=*/false);
        });
        entries(h * h, [&](Value e) {
          kb.store(kb.load(next, e), comb,
                   {t, kb.idiv(e, kb.idx(h)), kb.irem(e, kb.idx(h))});
        });
        SmallVector<Value> pre;
        for (int64_t s = 0; s < h; ++s)
          pre.push_back(kb.add(
              kb.sigmoid(kb.add(kb.mul(kb.load(m, kb.idx(s)), scale0),
                                kb.load(base, kb.idx(s)))),
              eps));
        // x = sum_s pre_s * R[t, s].
        forColumnGroups(kb, d, [&](ArrayRef<Value> cols) {
          SmallVector<SmallVector<Value>> streams;
          for (Value col : cols) {
            streams.emplace_back();
            for (int64_t s = 0; s < h; ++s)
              streams.back().push_back(kb.load(r, {t, kb.idx(s), col}));
          }
          for (auto [col, values] : llvm::zip_equal(cols, streams)) {
            Value sum = kb.f32(0.0);
            for (int64_t s = 0; s < h; ++s)
              sum = kb.add(sum, kb.mul(pre[s], values[s]));
            kb.store(sum, x, {t, col});
          }
        });
        if (normArg >= 0) {
          // The sub-layer's input RMSNorm on the rounded x, in place: the
          // steps of llm.rms_norm (ElementwiseOps.cpp). (A sum of squares
          // taken inside the collapse loop would make the GPU mapping run
          // the collapse twice: once storing, once reducing.)
          Value ss = kb.reduce(0, d, kb.f32(0.0), [&](Value col, Value acc) {
            Value v = kb.load(x, {t, col});
            return kb.add(acc, kb.mul(v, v));
          });
          Value inv = kb.rsqrt(kb.add(kb.div(ss, kb.f32(double(d))),
                                      kb.f32(xNormEps)));
          forColumnGroups(kb, d, [&](ArrayRef<Value> cols) {
            SmallVector<Value> values, weights;
            for (Value col : cols) {
              values.push_back(kb.load(x, {t, col}));
              weights.push_back(kb.load(args[normArg], col));
            }
            for (auto [col, v, w] : llvm::zip_equal(cols, values, weights))
              kb.store(kb.mul(kb.round(kb.mul(v, inv), xElement), w), x,
                       {t, col});
          });
        }
      });
      for (Value buffer : {sums, m, c, next})
        kb.dealloc(buffer);
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
    if (op.getProjection())
      return emitProjected(op, adaptor, rewriter);
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
      Value y = args[0];
      StreamWrite write{args[1], args[2], args[3], args[4], h};
      kb.parallel({kb.idx(0), kb.idx(0)}, {kb.dim(y, 0), kb.idx(d)},
                  [&](ValueRange tc) {
        write.emit(kb, tc[0], tc[1], kb.load(y, tc));
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }

  /// The projection form: kernel `mhc_post_linear` (x, W[, scales], R,
  /// post, comb, R'), one independent iteration per (token, column): the
  /// column's dot product in k order from 0 (llm.linear's sum), rounded to
  /// the stream type, then the residual write of that column into every
  /// stream (the unfused mhc_post's sum). GPU targets with matrix units
  /// replace it by the projection's matmul with this write as epilogue
  /// (kLinearEpilogueAttrName).
  LogicalResult emitProjected(llm::MhcPostOp op, OpAdaptor adaptor,
                              ConversionPatternRewriter &rewriter) const {
    Location loc = op.getLoc();
    KernelCall call;
    call.addInput(adaptor.getInput(), llm::KernelRole::X);
    FailureOr<unsigned> weightArg = call.addMatmulWeight(
        rewriter, loc, op.getProjection(), adaptor.getProjection());
    if (failed(weightArg))
      return rewriter.notifyMatchFailure(
          op, "fp8 projection does not come from llm.weight");
    unsigned residualArg =
        call.addInput(adaptor.getResidual(), llm::KernelRole::Streams);
    call.addInput(adaptor.getPost(), llm::KernelRole::StreamPost);
    call.addInput(adaptor.getComb(), llm::KernelRole::StreamComb);
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, loc, adaptor.getResidual(), resultType),
        llm::KernelRole::Out);
    Type weightType = op.getProjection().getType();
    int64_t h = op.getHcMult(), d = resultType.getDimSize(2);
    int64_t k = op.getInput().getType().getDimSize(1);
    call.attributes.push_back(rewriter.getNamedAttr(
        kLinearEpilogueAttrName,
        llm::LinearEpilogueAttr::get(rewriter.getContext(),
                                     llm::LinearEpilogueKind::MhcPost, h)));
    Type act = resultType.getElementType();
    auto results = call.emit(rewriter, op, "mhc_post_linear",
                             [&](KernelBuilder &kb, ValueRange args) {
      WeightView weight = makeWeightView(
          weightType, args.slice(*weightArg, residualArg - *weightArg));
      Value x = args[0];
      StreamWrite write{args[residualArg], args[residualArg + 1],
                        args[residualArg + 2], args[out], h};
      kb.parallel({kb.idx(0), kb.idx(0)}, {kb.dim(x, 0), kb.idx(d)},
                  [&](ValueRange tc) {
        Value t = tc[0], c = tc[1];
        Value dot = kb.dot(0, k, act, [&](Value i) {
          return std::make_pair(kb.load(x, {t, i}), weight.load(kb, {c, i}));
        });
        write.emit(kb, t, c, kb.round(dot, act));
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
