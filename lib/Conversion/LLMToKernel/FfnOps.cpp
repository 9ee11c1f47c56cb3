//===- FfnOps.cpp - dense SwiGLU MLP and MoE FFN to kernels ---------------===//
//
// Part of strata, under the Apache License v2.0.
//
// Both ops are token loops over the clamped SwiGLU
//   a = round(silu(min(round(W_gate x), L))) * clamp(round(W_up x), -L, L)
//   E(x) = round(W_down round(a))
// (rounded where HF's bf16 modules round; identity in f32 mode), with the
// weights read through WeightView so bf16, f32 and fp8 block-scaled weights
// share one body. llm.moe_ffn routes in fp32: sigmoid scores, optional
// group-limited selection (group score = sum of the top-2 biased scores),
// top-k by repeated arg-max over the biased scores (ties to the lowest
// expert id), weights from the unbiased scores; the weighted routed experts
// and the shared expert are summed in fp32 and rounded once.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The SwiGLU of one token and one expert (`lead` = expert index, or empty).
struct SwigluBody {
  WeightView gate, up, down;
  int64_t inter, hidden;
  double limit;
  Type actType;

  /// act[j] = round(silu(min(g, L)) * clamp(u, -L, L)) for x row `t`.
  void intermediate(KernelBuilder &kb, Value x, Value t, ValueRange lead,
                    Value act) const {
    auto at = [&](Value a, Value b) {
      SmallVector<Value> index(lead);
      index.push_back(a);
      index.push_back(b);
      return index;
    };
    kb.loop(0, inter, [&](Value j) {
      auto dot = [&](const WeightView &w) {
        return kb.round(
            kb.reduce(0, hidden, kb.f32(0.0),
                      [&](Value c, Value acc) {
                        return kb.add(acc, kb.mul(kb.load(x, {t, c}),
                                                  w.load(kb, at(j, c))));
                      }),
            actType);
      };
      Value g = kb.min(dot(gate), kb.f32(limit));
      Value u = kb.max(kb.min(dot(up), kb.f32(limit)), kb.f32(-limit));
      Value a = kb.round(kb.mul(kb.round(kb.silu(g), actType), u), actType);
      memref::StoreOp::create(kb.builder(), kb.getLoc(), a, act, j);
    });
  }

  /// acc[o] += weight * round(W_down act)[o].
  void accumulateDown(KernelBuilder &kb, ValueRange lead, Value act,
                      Value weight, Value acc) const {
    kb.loop(0, hidden, [&](Value o) {
      Value dot = kb.reduce(0, inter, kb.f32(0.0), [&](Value j, Value a) {
        SmallVector<Value> index(lead);
        index.push_back(o);
        index.push_back(j);
        return kb.add(a, kb.mul(kb.load(act, j), down.load(kb, index)));
      });
      Value e = kb.round(dot, actType);
      if (weight)
        e = kb.round(kb.mul(weight, e), actType);
      kb.store(kb.add(kb.load(acc, o), e), acc, o);
    });
  }
};

struct SwigluMlpToKernel : OpConversionPattern<llm::SwigluMlpOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::SwigluMlpOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelCall call;
    call.addInput(adaptor.getInput());
    FailureOr<unsigned> g =
        call.addWeight(rewriter, loc, op.getGate(), adaptor.getGate());
    FailureOr<unsigned> u =
        call.addWeight(rewriter, loc, op.getUp(), adaptor.getUp());
    FailureOr<unsigned> dn =
        call.addWeight(rewriter, loc, op.getDown(), adaptor.getDown());
    if (failed(g) || failed(u) || failed(dn))
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, loc, adaptor.getInput(), resultType));
    Type gt = op.getGate().getType(), ut = op.getUp().getType(),
         dt = op.getDown().getType();
    int64_t hidden = resultType.getDimSize(1);
    int64_t inter = cast<MemRefType>(getWeightArgTypes(gt).front()).getDimSize(0);
    double limit = op.getSwigluLimit().convertToFloat();
    Type actType = op.getType().getElementType();
    auto results = call.emit(rewriter, op, "swiglu_mlp",
                             [&](KernelBuilder &kb, ValueRange args) {
      SwigluBody body{makeWeightView(gt, args.slice(*g, *u - *g)),
                      makeWeightView(ut, args.slice(*u, *dn - *u)),
                      makeWeightView(dt, args.slice(*dn, out - *dn)),
                      inter, hidden, limit, actType};
      Value act = kb.scratch({inter});
      Value acc = kb.scratch({hidden});
      kb.loop(kb.idx(0), kb.dim(args[0], 0), [&](Value t) {
        body.intermediate(kb, args[0], t, {}, act);
        kb.loop(0, hidden,
                [&](Value o) { kb.store(kb.f32(0.0), acc, o); });
        body.accumulateDown(kb, {}, act, Value(), acc);
        kb.loop(0, hidden, [&](Value o) {
          kb.store(kb.load(acc, o), args[out], {t, o});
        });
      });
      kb.dealloc(act);
      kb.dealloc(acc);
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct MoeFfnToKernel : OpConversionPattern<llm::MoeFfnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::MoeFfnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelCall call;
    call.addInput(adaptor.getInput());
    SmallVector<unsigned> first;
    SmallVector<Type> types;
    for (auto [orig, conv] :
         llvm::zip_equal(op->getOperands().drop_front(),
                         adaptor.getOperands().drop_front())) {
      if (orig == op.getCorrectionBias()) {
        first.push_back(call.addInput(conv));
        types.push_back(orig.getType());
        continue;
      }
      FailureOr<unsigned> arg = call.addWeight(rewriter, loc, orig, conv);
      if (failed(arg))
        return rewriter.notifyMatchFailure(
            op, "fp8 weight does not come from llm.weight");
      first.push_back(*arg);
      types.push_back(orig.getType());
    }
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, loc, adaptor.getInput(), resultType));
    first.push_back(out);
    int64_t hidden = resultType.getDimSize(1);
    int64_t experts = op.getNumExperts(), topK = op.getTopK();
    int64_t groups = op.getNGroup(), topkGroup = op.getTopkGroup();
    int64_t perGroup = experts / groups;
    bool normalize = op.getNormTopkProb();
    double renormEps = op.getRenormEps().convertToFloat();
    double scaling = op.getRoutedScalingFactor().convertToFloat();
    double limit = op.getSwigluLimit().convertToFloat();
    Type actType = op.getType().getElementType();
    auto dimOf = [](Type weight, unsigned d) {
      return cast<MemRefType>(getWeightArgTypes(weight).front()).getDimSize(d);
    };
    int64_t inter = dimOf(types[2], 1);
    int64_t sharedInter = dimOf(types[5], 0);
    auto results = call.emit(rewriter, op, "moe_ffn",
                             [&](KernelBuilder &kb, ValueRange args) {
      auto view = [&](unsigned k) {
        return makeWeightView(types[k],
                              args.slice(first[k], first[k + 1] - first[k]));
      };
      WeightView router = view(0);
      Value bias = args[first[1]];
      SwigluBody routed{view(2), view(3), view(4), inter, hidden, limit,
                        actType};
      SwigluBody shared{view(5), view(6), view(7), sharedInter, hidden, limit,
                        actType};
      Value x = args[0];
      OpBuilder &b = kb.builder();
      Location l = kb.getLoc();
      Value scores = kb.scratch({experts});
      Value choice = kb.scratch({experts});
      Value groupScore = kb.scratch({groups});
      Value kept = kb.scratch({groups});
      auto chosenType = MemRefType::get({topK}, b.getIndexType());
      Value chosen = memref::AllocOp::create(b, l, chosenType);
      Value act = kb.scratch({std::max(inter, sharedInter)});
      Value acc = kb.scratch({hidden});
      Value negInf = kb.f32(-INFINITY);
      // Arg-max of buf[lo, hi) (first index on ties).
      auto argmax = [&](Value buf, Value lo, Value hi) {
        SmallVector<Value> best = kb.loopCarry(
            lo, hi, ValueRange{negInf, lo},
            [&](Value e, ValueRange c) -> SmallVector<Value> {
              Value v = kb.load(buf, e);
              Value better = kb.gt(v, c[0]);
              return {kb.select(better, v, c[0]), kb.select(better, e, c[1])};
            });
        return best[1];
      };
      kb.loop(kb.idx(0), kb.dim(x, 0), [&](Value t) {
        kb.loop(0, experts, [&](Value e) {
          Value logit = kb.reduce(0, hidden, kb.f32(0.0),
                                  [&](Value c, Value a) {
                                    return kb.add(a, kb.mul(kb.load(x, {t, c}),
                                                            router.load(kb, {e, c})));
                                  });
          Value s = kb.sigmoid(logit);
          kb.store(s, scores, e);
          kb.store(kb.add(s, kb.load(bias, e)), choice, e);
        });
        if (groups > 1) {
          // Group score: sum of the two largest biased scores of the group.
          kb.loop(0, groups, [&](Value gi) {
            Value lo = kb.imul(gi, kb.idx(perGroup));
            Value hi = kb.iadd(lo, kb.idx(perGroup));
            SmallVector<Value> top2 = kb.loopCarry(
                lo, hi, ValueRange{negInf, negInf},
                [&](Value e, ValueRange c) -> SmallVector<Value> {
                  Value v = kb.load(choice, e);
                  Value first = kb.gt(v, c[0]);
                  Value second = kb.gt(v, c[1]);
                  return {kb.select(first, v, c[0]),
                          kb.select(first, c[0], kb.select(second, v, c[1]))};
                });
            kb.store(kb.add(top2[0], top2[1]), groupScore, gi);
          });
          // Keep the topk_group best groups (kept[g] = 1; a kept group
          // leaves the race at -inf), then mask the experts of the others.
          kb.loop(0, groups, [&](Value gi) { kb.store(kb.f32(0.0), kept, gi); });
          kb.loop(0, topkGroup, [&](Value) {
            Value best = argmax(groupScore, kb.idx(0), kb.idx(groups));
            kb.store(negInf, groupScore, best);
            kb.store(kb.f32(1.0), kept, best);
          });
          kb.loop(0, experts, [&](Value e) {
            Value gi = kb.idiv(e, kb.idx(perGroup));
            Value isKept = kb.gt(kb.load(kept, gi), kb.f32(0.5));
            kb.store(kb.select(isKept, kb.load(choice, e), negInf), choice, e);
          });
        }
        // Top-k by repeated arg-max; chosen experts leave the race.
        Value sum = kb.reduce(0, topK, kb.f32(0.0), [&](Value k, Value a) {
          Value best = argmax(choice, kb.idx(0), kb.idx(experts));
          memref::StoreOp::create(b, l, best, chosen, k);
          kb.store(negInf, choice, best);
          return kb.add(a, kb.load(scores, best));
        });
        Value denom = kb.add(sum, kb.f32(renormEps));
        kb.loop(0, hidden, [&](Value o) { kb.store(kb.f32(0.0), acc, o); });
        kb.loop(0, topK, [&](Value k) {
          Value e = memref::LoadOp::create(b, l, chosen, k);
          Value w = kb.load(scores, e);
          if (normalize)
            w = kb.div(w, denom);
          w = kb.mul(w, kb.f32(scaling));
          routed.intermediate(kb, x, t, e, act);
          routed.accumulateDown(kb, e, act, w, acc);
        });
        shared.intermediate(kb, x, t, {}, act);
        shared.accumulateDown(kb, {}, act, Value(), acc);
        kb.loop(0, hidden, [&](Value o) {
          kb.store(kb.load(acc, o), args[out], {t, o});
        });
      });
      for (Value m : {scores, choice, groupScore, kept, chosen, act, acc})
        kb.dealloc(m);
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::strata::populateFfnToKernelPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<SwigluMlpToKernel, MoeFfnToKernel>(converter,
                                                  patterns.getContext());
}
