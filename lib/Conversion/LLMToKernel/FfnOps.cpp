//===- FfnOps.cpp - dense SwiGLU MLP and MoE FFN to kernels ---------------===//
//
// Part of strata, under the Apache License v2.0.
//
// Both ops compute the clamped SwiGLU
//   a = round(silu(min(round(W_gate x), L))) * clamp(round(W_up x), -L, L)
//   E(x) = round(W_down round(a))
// (rounded where HF's bf16 modules round; identity in f32 mode), with the
// weights read through WeightView so bf16, f32 and fp8 block-scaled weights
// share one body.
//
// Each op becomes several kernels whose bodies are scf.parallel nests over
// independent outputs, so that on a GPU a decode step (one token) still
// spreads over the whole grid:
//   swiglu_mlp:  swiglu_up_rows, swiglu_up      (token, i) -> a [T, I]
//                swiglu_down_rows, swiglu_down  (token, o) -> out [T, D]
//   moe_ffn:     moe_router   (token, e) -> fp32 logits [T, E] (a linear
//                             kernel for the GPU targets)
//                moe_select   token      -> chosen [T, k] i32, weight [T, k]
//                moe_group    expert     -> the slots grouped by expert: order
//                             [T, k] (flat slot ids t * k + j, expert by
//                             expert, token order within), starts [E + 1]
//                moe_up_rows, moe_up     (token, slot, i) -> a [T, k, I]
//                moe_down_rows, moe_down (token, slot, o)
//                                        -> y = round(w * E_slot) [T, k, D]
//                moe_shared_up_rows, moe_shared_up  (token, i) -> a_s [T, Is]
//                moe_shared_down_rows, moe_shared_down
//                              (token, o) -> out = round(sum_slot y +
//                                                 E_shared) [T, D]
// Expert-parallel (`expert_shard`): every rank routes over all experts;
// moe_up and moe_down take the rank's coordinate and compute only the slots
// routed to the rank's experts (the others store 0), so the sum is the
// rank's partial sum that an all-reduce completes (RankExperts).
// Routing is fp32: sigmoid scores, optional group-limited selection (group
// score = sum of the top-2 biased scores), top-k by repeated arg-max over
// the biased scores (ties to the lowest expert id), weights from the
// unbiased scores. The weighted routed experts are summed in slot order in
// fp32, then the shared expert, and the sum is rounded once: the same
// operations in the same order as a token loop over the experts.
//
// moe_up and moe_down take the grouping too and walk the slots in its order
// (so the CPU checks the grouping); a GPU target with matrix units replaces
// them by grouped matmuls over each expert's slots (LLMToGPU
// buildGroupedExpertMatmulKernel), the same arguments. Each pair `X_rows` /
// `X` splits the work by the step's size (the `_rows` kernel below 64 routed
// slots or 64 rows, `X` from there), and `X` is the one a GPU target with
// matrix units rebuilds as a matmul (grouped experts; the dense
// projections: buildDenseMatmulKernelFunction).
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The WeightView of a weight of llm type `type` whose kernel arguments start
/// at `first`.
WeightView viewAt(Type type, ValueRange args, unsigned first) {
  return makeWeightView(type,
                        args.slice(first, getWeightArgTypes(type).size()));
}

/// Extent `d` of a weight of llm type `type` (its data memref).
int64_t weightDim(Type type, unsigned d) {
  return cast<MemRefType>(getWeightArgTypes(type).front()).getDimSize(d);
}

/// An activation as an FFN's matmul reads it: its values, or with
/// `fp8_expert_activations` its e4m3 codes and their fp32 scales, one per
/// row and `block`-wide group of the last dimension (emitGroupQuantize).
struct MatmulInput {
  MatmulInput(Value values, Value scales = {}, int64_t block = 0)
      : values(values), scales(scales), block(block) {}

  Value values;
  Value scales;
  int64_t block;

  /// Element `index` as f32 (q * s when quantised).
  Value load(KernelBuilder &kb, SmallVector<Value> index) const {
    Value v = kb.load(values, index);
    if (!scales)
      return v;
    index.back() = kb.idiv(index.back(), kb.idx(block));
    return kb.mul(v, kb.load(scales, index));
  }
};

/// The SwiGLU of one expert (`lead` = expert index, or empty for a dense
/// weight), one output element at a time.
struct Swiglu {
  WeightView gate, up;
  int64_t hidden;
  double limit;
  Type actType;

  /// a[i] = round(silu(min(g, L)) * clamp(u, -L, L)) for x row `t`.
  Value activation(KernelBuilder &kb, const MatmulInput &x, Value t,
                   ValueRange lead, Value i) const {
    auto dot = [&](const WeightView &w) {
      SmallVector<Value> index(lead);
      index.push_back(i);
      index.push_back(Value());
      return kb.round(
          kb.dot(0, hidden, actType,
                 [&](Value c) {
                   index.back() = c;
                   return std::make_pair(x.load(kb, {t, c}), w.load(kb, index));
                 }),
          actType);
    };
    Value g = kb.min(dot(gate), kb.f32(limit));
    Value u = kb.max(kb.min(dot(up), kb.f32(limit)), kb.f32(-limit));
    return kb.round(kb.mul(kb.round(kb.silu(g), actType), u), actType);
  }
};

/// round(W_down a)[o] for the activation row `actRow` (indices of `act`
/// before its last dimension) of width `inter`.
Value downProjection(KernelBuilder &kb, const WeightView &down, ValueRange lead,
                     const MatmulInput &act, ValueRange actRow, Value o,
                     int64_t inter, Type actType) {
  SmallVector<Value> wIndex(lead), aIndex(actRow);
  wIndex.push_back(o);
  wIndex.push_back(Value());
  aIndex.push_back(Value());
  Value dot = kb.dot(0, inter, actType, [&](Value j) {
    wIndex.back() = j;
    aIndex.back() = j;
    return std::make_pair(act.load(kb, aIndex), down.load(kb, wIndex));
  });
  return kb.round(dot, actType);
}

/// Groups of one row that a quantisation kernel's grid row takes.
constexpr int64_t kQuantizeGroupsPerRow = 4;

/// Emits kernel `name` quantising `v` (memref [?, ..., K], dynamic first
/// extent) per row and `block`-wide group of K as llm.moe_ffn's
/// fp8_expert_activations says: s = max(amax, 1e-10) / 448, q = e4m3(clamp(v
/// / s, -448, 448)). Returns {q (f8E4M3FN, v's shape), s (f32, [..., ceil(K
/// / block)])}.
std::pair<Value, Value> emitGroupQuantize(ConversionPatternRewriter &rewriter,
                                          Operation *op, StringRef name,
                                          Value v, int64_t block) {
  Location loc = op->getLoc();
  auto type = cast<MemRefType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  int64_t k = shape.back();
  int64_t groups = (k + block - 1) / block;
  SmallVector<int64_t> scaleShape(shape);
  scaleShape.back() = groups;
  SmallVector<Value> sizes = {getDimValue(rewriter, loc, v, 0)};
  KernelCall call;
  call.addInput(v, llm::KernelRole::X);
  unsigned q = call.addResult(
      MemRefType::get(shape, rewriter.getType<Float8E4M3FNType>()), sizes,
      llm::KernelRole::Out);
  unsigned s =
      call.addResult(MemRefType::get(scaleShape, rewriter.getF32Type()), sizes,
                     llm::KernelRole::XScales);
  // A grid row per row and kQuantizeGroupsPerRow groups (one after another
  // inside): on a GPU the block's threads share each group's amax (a block
  // reduction) and its codes. One block per group cost 1.7 ms per layer
  // for moe_quantize_act at 8192 tokens on an H100, a block per whole row
  // (32 groups of x in sequence) 22 us per decode token.
  call.attributes.push_back(rewriter.getNamedAttr(
      kGroupQuantizeAttrName,
      llm::GroupQuantizeAttr::get(rewriter.getContext(), block)));
  SmallVector<Value> results =
      call.emit(rewriter, op, name, [&](KernelBuilder &kb, ValueRange args) {
        SmallVector<Value> lower, upper;
        for (int64_t d = 0; d + 1 < int64_t(shape.size()); ++d) {
          lower.push_back(kb.idx(0));
          upper.push_back(kb.dim(args[0], d));
        }
        int64_t parts =
            (groups + kQuantizeGroupsPerRow - 1) / kQuantizeGroupsPerRow;
        lower.push_back(kb.idx(0));
        upper.push_back(kb.idx(parts));
        kb.parallelRows(lower, upper, [&](ValueRange at) {
          ValueRange row = at.drop_back();
          Value firstGroup = kb.imul(at.back(), kb.idx(kQuantizeGroupsPerRow));
          Value lastGroup =
              kb.imin(kb.iadd(firstGroup, kb.idx(kQuantizeGroupsPerRow)),
                      kb.idx(groups));
          kb.loop(firstGroup, lastGroup, [&](Value g) {
            SmallVector<Value> index(row);
            index.push_back(g);
            Value first = kb.imul(g, kb.idx(block));
            Value last = kb.imin(kb.iadd(first, kb.idx(block)), kb.idx(k));
            OpBuilder &b = kb.builder();
            auto element = [&](Value c) {
              SmallVector<Value> indices(row);
              indices.push_back(c);
              return indices;
            };
            Value amax =
                kb.reduce(first, last, kb.f32(0.0), [&](Value c, Value acc) {
                  return kb.max(acc, math::AbsFOp::create(
                                         b, loc, kb.load(args[0], element(c))));
                });
            Value scale = kb.div(kb.max(amax, kb.f32(1e-10)), kb.f32(448.0));
            kb.loop(first, last, [&](Value c) {
              Value scaled = kb.div(kb.load(args[0], element(c)), scale);
              scaled = kb.max(kb.min(scaled, kb.f32(448.0)), kb.f32(-448.0));
              memref::StoreOp::create(b, loc, encodeFp8(kb, scaled), args[q],
                                      element(c));
            });
            kb.store(scale, args[s], index);
          });
        });
      });
  return {results[0], results[1]};
}

/// The end of an FFN op: y[t, o] stored into the [T, D] result, or with
/// `streams` (R, post, comb) mHC's residual write into the [T, H, D] result
/// (StreamWrite). The matmul form learns `hc_mult` (its
/// #llm.dense_matmul's).
struct ResidualWrite {
  ResidualWrite(ValueRange streams, MemRefType result) : streams(streams) {
    if (!streams.empty())
      hcMult = result.getDimSize(1);
  }
  /// Adds R, post and comb after the kernel's other inputs.
  void addArgs(KernelCall &call) {
    first = call.argTypes.size();
    const llm::KernelRole roles[] = {llm::KernelRole::Streams,
                                     llm::KernelRole::StreamPost,
                                     llm::KernelRole::StreamComb};
    for (auto [v, role] : llvm::zip_equal(streams, roles))
      call.addInput(v, role);
  }
  /// Stores y (f32, rounded) of (t, o) into `args[out]`.
  void store(KernelBuilder &kb, ValueRange args, unsigned out, Value t,
             Value o, Value y) const {
    if (!hcMult) {
      kb.store(y, args[out], {t, o});
      return;
    }
    StreamWrite{args[first], args[first + 1], args[first + 2], args[out],
                hcMult}
        .emit(kb, t, o, y);
  }

  ValueRange streams;
  int64_t hcMult = 0;
  unsigned first = 0;
};

/// The dense projections (SwiGLU up, down) come in pairs like the routed
/// experts: `<name>_rows` does the work below kDenseMatmulMinRows rows (decode:
/// one block per output on the GPU), `<name>` from it on; it carries
/// kDenseMatmulAttrName, so a GPU target with matrix units replaces it by a
/// tiled matmul with the same epilogue (LLMToGPU
/// buildDenseMatmulKernelFunction). Outside its range a kernel's row loop is
/// empty; both write the same buffer.
constexpr int64_t kDenseMatmulMinRows = 64;

/// kRowsTwinAttrName naming `rowsKernel`, for the matrix form of a pair.
NamedAttribute rowsTwin(RewriterBase &rewriter, func::FuncOp rowsKernel) {
  return NamedAttribute(
      rewriter.getStringAttr(kRowsTwinAttrName),
      FlatSymbolRefAttr::get(rewriter.getContext(), rowsKernel.getSymName()));
}

/// The kernel pair `<name>_rows` / `<name>` of one dense projection:
/// `addArgs` adds the inputs (x first) and weights to a call; `body` stores
/// the outputs of rows [0, rows) into argument `out`. The result has type
/// `type` and the dynamic sizes `sizes`; `epilogue`, `swigluLimit` (with
/// the swiglu epilogue), `topK` (add_slot_sum) and `hcMult` (mHC's streams,
/// or 0) describe the matmul form (kDenseMatmulAttrName).
FailureOr<Value> emitDenseProjection(
    ConversionPatternRewriter &rewriter, Operation *op, StringRef name,
    MemRefType type, SmallVector<Value> sizes, llm::DenseEpilogue epilogue,
    std::optional<double> swigluLimit, int64_t topK, int64_t hcMult,
    llvm::function_ref<LogicalResult(KernelCall &)> addArgs,
    llvm::function_ref<void(KernelBuilder &, ValueRange, Value, unsigned)>
        body) {
  auto info = llm::DenseMatmulAttr::get(
      rewriter.getContext(), epilogue, kDenseMatmulMinRows,
      swigluLimit ? rewriter.getF64FloatAttr(*swigluLimit) : FloatAttr(), topK,
      hcMult, llm::HeadBatchedAttr());
  Value result;
  func::FuncOp rowsKernel;
  for (bool matmul : {false, true}) {
    KernelCall call;
    if (failed(addArgs(call)))
      return failure();
    unsigned out;
    if (matmul) {
      call.attributes.push_back(
          NamedAttribute(rewriter.getStringAttr(kDenseMatmulAttrName), info));
      call.attributes.push_back(rowsTwin(rewriter, rowsKernel));
      out = call.addInput(result, llm::KernelRole::Out);
    } else {
      out = call.addResult(type, sizes, llm::KernelRole::Out);
    }
    std::string kernelName = matmul ? name.str() : (name + "_rows").str();
    auto results = call.emit(rewriter, op, kernelName,
                             [&](KernelBuilder &kb, ValueRange args) {
      Value rows = kb.dim(args[0], 0);
      body(kb, args,
           kb.rowsIfStepSize(rows, rows, kDenseMatmulMinRows, matmul), out);
    });
    if (!matmul) {
      result = results[0];
      rowsKernel = call.kernel;
    }
  }
  return result;
}

/// Emits the SwiGLU up kernels `name`(_rows) over the dense weights
/// gate/up: parallel (token, i), result [T, inter] of `actType`.
FailureOr<Value> emitDenseUp(ConversionPatternRewriter &rewriter,
                             Operation *op, StringRef name, Value x,
                             Value gateOrig, Value gateConv, Value upOrig,
                             Value upConv, int64_t hidden, double limit,
                             Type actType) {
  Location loc = op->getLoc();
  Type gt = gateOrig.getType(), ut = upOrig.getType();
  int64_t inter = weightDim(gt, 0);
  FailureOr<unsigned> g, u;
  return emitDenseProjection(
      rewriter, op, name,
      MemRefType::get({ShapedType::kDynamic, inter}, actType),
      {getDimValue(rewriter, loc, x, 0)}, llm::DenseEpilogue::Swiglu, limit,
      /*topK=*/0, /*hcMult=*/0,
      [&](KernelCall &call) {
        call.addInput(x, llm::KernelRole::X);
        g = call.addWeight(rewriter, loc, gateOrig, gateConv, WeightRoles{});
        u = call.addWeight(rewriter, loc, upOrig, upConv, kUpWeightRoles);
        return success(succeeded(g) && succeeded(u));
      },
      [&](KernelBuilder &kb, ValueRange args, Value rows, unsigned out) {
        Swiglu swiglu{viewAt(gt, args, *g), viewAt(ut, args, *u), hidden,
                      limit, actType};
        kb.parallelRows({kb.idx(0), kb.idx(0)}, {rows, kb.idx(inter)},
                        [&](ValueRange ti) {
          kb.store(swiglu.activation(kb, args[0], ti[0], {}, ti[1]),
                   args[out], ti);
        });
      });
}

struct SwigluMlpToKernel : OpConversionPattern<llm::SwigluMlpOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::SwigluMlpOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MemRefType resultType = getKernelMemRefType(op.getType());
    int64_t hidden = resultType.getDimSize(resultType.getRank() - 1);
    double limit = op.getSwigluLimit().convertToFloat();
    Type actType = op.getType().getElementType();
    FailureOr<Value> act = emitDenseUp(
        rewriter, op, "swiglu_up", adaptor.getInput(), op.getGate(),
        adaptor.getGate(), op.getUp(), adaptor.getUp(), hidden, limit,
        actType);
    if (failed(act))
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");

    Type dt = op.getDown().getType();
    int64_t inter = weightDim(dt, 1);
    FailureOr<unsigned> dn;
    ResidualWrite residual(adaptor.getStreams(), resultType);
    FailureOr<Value> out = emitDenseProjection(
        rewriter, op, "swiglu_down", resultType,
        dynamicSizesLike(rewriter, loc, adaptor.getInput(), resultType),
        llm::DenseEpilogue::Store, std::nullopt, /*topK=*/0, residual.hcMult,
        [&](KernelCall &call) {
          call.addInput(*act, llm::KernelRole::X);
          dn = call.addWeight(rewriter, loc, op.getDown(), adaptor.getDown(),
                              WeightRoles{});
          residual.addArgs(call);
          return success(succeeded(dn));
        },
        [&](KernelBuilder &kb, ValueRange args, Value rows, unsigned out) {
          WeightView down = viewAt(dt, args, *dn);
          kb.parallelRows({kb.idx(0), kb.idx(0)}, {rows, kb.idx(hidden)},
                          [&](ValueRange to) {
            residual.store(kb, args, out, to[0], to[1],
                           downProjection(kb, down, {}, args[0], to[0], to[1],
                                          inter, actType));
          });
        });
    if (failed(out))
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    rewriter.replaceOp(op, *out);
    return success();
  }
};

/// The routed experts of the rank in an expert-parallel llm.moe_ffn
/// (`expert_shard`): the stacked weights hold `count` experts starting at
/// `coordinate * count`, and a slot routed to another rank's expert
/// contributes zero (its activation and weighted output are stored as 0).
/// Without `expert_shard` every expert is the rank's and nothing changes.
struct RankExperts {
  RankExperts(ConversionPatternRewriter &rewriter, llm::MoeFfnOp op,
              int64_t count)
      : count(count) {
    if (llm::ShardAttr shard = op.getExpertShardAttr())
      coordinate = getRankCoordinate(
          rewriter, op.getLoc(), op->getParentOfType<ModuleOp>(),
          llm::RankGroupAttr::get(op.getContext(), shard.getGroup()));
  }
  /// Adds the coordinate to a routed kernel's arguments (expert-parallel).
  std::optional<unsigned> addArg(KernelCall &call) const {
    if (!coordinate)
      return std::nullopt;
    return call.addInput(coordinate, llm::KernelRole::ExpertCoordinate);
  }
  /// (whether expert `e` is the rank's — null when every expert is —, its
  /// index in the rank's stacked weights, 0 for another rank's expert).
  std::pair<Value, Value> local(KernelBuilder &kb, ValueRange args,
                                std::optional<unsigned> arg, Value e) const {
    if (!arg)
      return {Value(), e};
    OpBuilder &b = kb.builder();
    Value first = kb.imul(arith::IndexCastOp::create(
                              b, kb.getLoc(), b.getIndexType(), args[*arg]),
                          kb.idx(count));
    Value index = kb.isub(e, first);
    Value owned = kb.andi(kb.ige(index, kb.idx(0)),
                          kb.ilt(index, kb.idx(count)));
    return {owned, kb.select(owned, index, kb.idx(0))};
  }
  /// Stores `value()` into m[indices] where `owned` (always when null), 0
  /// elsewhere.
  static void store(KernelBuilder &kb, Value owned, Value m,
                    ValueRange indices, llvm::function_ref<Value()> value) {
    if (!owned) {
      kb.store(value(), m, indices);
      return;
    }
    kb.store(kb.f32(0.0), m, indices);
    kb.ifThen(owned, [&] { kb.store(value(), m, indices); });
  }

  int64_t count;
  Value coordinate;
};

struct MoeFfnToKernel : OpConversionPattern<llm::MoeFfnOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::MoeFfnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    MemRefType resultType = getKernelMemRefType(op.getType());
    int64_t hidden = resultType.getDimSize(resultType.getRank() - 1);
    int64_t experts = op.getNumExperts(), topK = op.getTopK();
    int64_t groups = op.getNGroup(), topkGroup = op.getTopkGroup();
    int64_t perGroup = experts / groups;
    bool normalize = op.getNormTopkProb();
    double renormEps = op.getRenormEps().convertToFloat();
    double scaling = op.getRoutedScalingFactor().convertToFloat();
    double limit = op.getSwigluLimit().convertToFloat();
    Type actType = op.getType().getElementType();
    Type f32 = rewriter.getF32Type();
    constexpr int64_t dyn = ShapedType::kDynamic;
    SmallVector<Value> tokens = {getDimValue(rewriter, loc, x, 0)};
    auto noFp8Source = [&] {
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    };

    // Router logits, fp32: one dot per (token, expert).
    Value logits;
    {
      KernelCall call;
      call.addInput(x, llm::KernelRole::X);
      FailureOr<unsigned> r = call.addWeight(
          rewriter, loc, op.getRouter(), adaptor.getRouter(), WeightRoles{});
      if (failed(r))
        return noFp8Source();
      unsigned out = call.addResult(MemRefType::get({dyn, experts}, f32),
                                    tokens, llm::KernelRole::Out);
      Type rt = op.getRouter().getType();
      // An unquantised router (x, W, logits) is a plain linear for the GPU
      // targets: an fp32 weight runs as three exact bf16 terms on the
      // matrix units (MatmulTiling.h MatmulProblem).
      if (cast<ShapedType>(rt).getElementType().isF32() ||
          cast<ShapedType>(rt).getElementType().isBF16())
        call.attributes.push_back(rewriter.getNamedAttr(
            kLinearKernelAttrName, rewriter.getUnitAttr()));
      logits = call.emit(rewriter, op, "moe_router",
                         [&](KernelBuilder &kb, ValueRange args) {
        WeightView router = viewAt(rt, args, *r);
        kb.parallelRows({kb.idx(0), kb.idx(0)},
                        {kb.dim(args[0], 0), kb.idx(experts)},
                        [&](ValueRange te) {
          Value t = te[0], e = te[1];
          kb.store(kb.reduce(0, hidden, kb.f32(0.0),
                             [&](Value c, Value a) {
                               return kb.add(a, kb.mul(kb.load(args[0], {t, c}),
                                                       router.load(kb, {e, c})));
                             }),
                   args[out], te);
        });
      })[0];
    }

    // Selection: per token, the top-k experts and their weights.
    Value chosen, weights;
    {
      KernelCall call;
      unsigned l = call.addInput(logits, llm::KernelRole::X);
      unsigned bias = call.addInput(adaptor.getCorrectionBias(),
                                    llm::KernelRole::CorrectionBias);
      unsigned chosenOut =
          call.addResult(MemRefType::get({dyn, topK}, rewriter.getI32Type()),
                         tokens, llm::KernelRole::Chosen);
      unsigned weightOut =
          call.addResult(MemRefType::get({dyn, topK}, f32), tokens,
                         llm::KernelRole::RouteWeights);
      call.attributes.push_back(rewriter.getNamedAttr(
          kMoeSelectAttrName,
          llm::MoeSelectAttr::get(rewriter.getContext(), experts, groups, topK,
                                  normalize,
                                  rewriter.getF32FloatAttr(renormEps),
                                  rewriter.getF32FloatAttr(scaling))));
      auto results = call.emit(rewriter, op, "moe_select",
                               [&](KernelBuilder &kb, ValueRange args) {
        Value scores = kb.scratch({experts});
        Value choice = kb.scratch({experts});
        Value groupScore = kb.scratch({groups});
        Value kept = kb.scratch({groups});
        Value negInf = kb.f32(-INFINITY);
        // Arg-max of buf[lo, hi) (first index on ties).
        auto argmax = [&](Value buf, Value lo, Value hi) {
          SmallVector<Value> best = kb.loopCarry(
              lo, hi, ValueRange{negInf, lo},
              [&](Value e, ValueRange c) -> SmallVector<Value> {
                Value v = kb.load(buf, e);
                Value better = kb.gt(v, c[0]);
                return {kb.select(better, v, c[0]),
                        kb.select(better, e, c[1])};
              });
          return best[1];
        };
        kb.loop(kb.idx(0), kb.dim(args[l], 0), [&](Value t) {
          kb.loop(0, experts, [&](Value e) {
            Value s = kb.sigmoid(kb.load(args[l], {t, e}));
            kb.store(s, scores, e);
            kb.store(kb.add(s, kb.load(args[bias], e)), choice, e);
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
                            kb.select(first, c[0],
                                      kb.select(second, v, c[1]))};
                  });
              kb.store(kb.add(top2[0], top2[1]), groupScore, gi);
            });
            // Keep the topk_group best groups (kept[g] = 1; a kept group
            // leaves the race at -inf), then mask the experts of the others.
            kb.loop(0, groups,
                    [&](Value gi) { kb.store(kb.f32(0.0), kept, gi); });
            kb.loop(0, topkGroup, [&](Value) {
              Value best = argmax(groupScore, kb.idx(0), kb.idx(groups));
              kb.store(negInf, groupScore, best);
              kb.store(kb.f32(1.0), kept, best);
            });
            kb.loop(0, experts, [&](Value e) {
              Value gi = kb.idiv(e, kb.idx(perGroup));
              Value isKept = kb.gt(kb.load(kept, gi), kb.f32(0.5));
              kb.store(kb.select(isKept, kb.load(choice, e), negInf), choice,
                       e);
            });
          }
          // Top-k by repeated arg-max; chosen experts leave the race.
          Value sum = kb.reduce(0, topK, kb.f32(0.0), [&](Value k, Value a) {
            Value best = argmax(choice, kb.idx(0), kb.idx(experts));
            kb.storeIndex(best, args[chosenOut], {t, k});
            kb.store(negInf, choice, best);
            return kb.add(a, kb.load(scores, best));
          });
          Value denom = kb.add(sum, kb.f32(renormEps));
          kb.loop(0, topK, [&](Value k) {
            Value w = kb.load(scores, kb.loadIndex(args[chosenOut], {t, k}));
            if (normalize)
              w = kb.div(w, denom);
            kb.store(kb.mul(w, kb.f32(scaling)), args[weightOut], {t, k});
          });
        });
        for (Value m : {scores, choice, groupScore, kept})
          kb.dealloc(m);
      });
      chosen = results[0];
      weights = results[1];
    }

    // The slots grouped by expert: one row per expert (a block of the grid
    // on the GPU) counts the slots routed to smaller experts (its start; a
    // block reduction over the slots, in f32: exact below 2^24 slots), then
    // lists its own slots in slot order from there, in kGroupChunks chunks
    // of tokens: each chunk counts its slots of the expert (independent
    // iterations: the block's threads on the GPU), then each chunk writes
    // them from start + the counts of the chunks before it. No row depends
    // on another, so the experts' rows run in parallel.
    Value order, starts;
    {
      // Chunks of tokens an expert's listing is split into: one per thread
      // of an AMD block (256), two per thread of an NVIDIA one (128).
      constexpr int64_t kGroupChunks = 256;
      KernelCall call;
      unsigned c = call.addInput(chosen, llm::KernelRole::Chosen);
      unsigned orderOut =
          call.addResult(MemRefType::get({dyn, topK}, rewriter.getI32Type()),
                         tokens, llm::KernelRole::SlotOrder);
      unsigned startsOut =
          call.addResult(MemRefType::get({experts + 1}, rewriter.getI32Type()),
                         {}, llm::KernelRole::ExpertStarts);
      call.attributes.push_back(rewriter.getNamedAttr(
          kMoeGroupAttrName,
          llm::MoeGroupAttr::get(rewriter.getContext(), experts, topK)));
      auto results = call.emit(rewriter, op, "moe_group",
                               [&](KernelBuilder &kb, ValueRange args) {
        OpBuilder &b = kb.builder();
        Location l = kb.getLoc();
        Value st = args[startsOut];
        Value numTokens = kb.dim(args[c], 0);
        Value one = kb.f32(1.0), zero = kb.f32(0.0);
        // Each chunk's slot count of the row's expert (f32: exact below
        // 2^24), reused row after row.
        Value counts = kb.scratch({kGroupChunks});
        kb.parallelRows({kb.idx(0)}, {kb.idx(experts)}, [&](ValueRange ev) {
          Value e = ev[0];
          Value below = kb.reduce(
              kb.idx(0), numTokens, zero, [&](Value t, Value acc) {
                return kb.add(acc, kb.reduce(0, topK, zero,
                                             [&](Value j, Value a) {
                  Value x = kb.loadIndex(args[c], {t, j});
                  return kb.add(a, kb.select(kb.ilt(x, e), one, zero));
                }));
              });
          Value start = arith::IndexCastOp::create(
              b, l, b.getIndexType(),
              arith::FPToSIOp::create(b, l, b.getI64Type(), below));
          kb.storeIndex(start, st, e);
          kb.ifThen(kb.ieq(e, kb.idx(0)), [&] {
            kb.storeIndex(kb.imul(numTokens, kb.idx(topK)), st,
                          kb.idx(experts));
          });
          // Tokens [chunk * per, min((chunk + 1) * per, T)) of a chunk.
          Value per = kb.idiv(kb.iadd(numTokens, kb.idx(kGroupChunks - 1)),
                              kb.idx(kGroupChunks));
          auto chunkTokens = [&](Value chunk) {
            Value first = kb.imin(kb.imul(chunk, per), numTokens);
            return std::pair{first, kb.imin(kb.iadd(first, per), numTokens)};
          };
          auto hit = [&](Value t, Value j) {
            return kb.ieq(kb.loadIndex(args[c], {t, j}), e);
          };
          kb.parallel({kb.idx(0)}, {kb.idx(kGroupChunks)}, [&](ValueRange cv) {
            auto [first, end] = chunkTokens(cv[0]);
            Value n = kb.reduce(first, end, zero, [&](Value t, Value acc) {
              return kb.add(acc, kb.reduce(0, topK, zero,
                                           [&](Value j, Value a) {
                return kb.add(a, kb.select(hit(t, j), one, zero));
              }));
            });
            kb.store(n, counts, cv[0]);
          });
          // Chunks past the first ceil(T / per) hold no tokens (count 0),
          // so a chunk's prefix stops there: in a decode step of one token
          // every chunk's sum is at most one term instead of up to 255.
          Value used = kb.idiv(kb.iadd(numTokens, kb.isub(per, kb.idx(1))),
                               kb.imax(per, kb.idx(1)));
          kb.parallel({kb.idx(0)}, {kb.idx(kGroupChunks)}, [&](ValueRange cv) {
            Value chunk = cv[0];
            Value before = kb.reduce(kb.idx(0), kb.imin(chunk, used), zero,
                                     [&](Value k, Value acc) {
                                       return kb.add(acc, kb.load(counts, k));
                                     });
            Value from = kb.iadd(
                start, arith::IndexCastOp::create(
                           b, l, b.getIndexType(),
                           arith::FPToSIOp::create(b, l, b.getI64Type(),
                                                   before)));
            auto [first, end] = chunkTokens(chunk);
            kb.loopCarry(
                first, end, ValueRange{from},
                [&](Value t, ValueRange cursor) -> SmallVector<Value> {
                  return kb.loopCarry(
                      kb.idx(0), kb.idx(topK), cursor,
                      [&](Value j, ValueRange at) -> SmallVector<Value> {
                        Value pos = at[0];
                        Value isHit = hit(t, j);
                        kb.ifThen(isHit, [&] {
                          Value slot = kb.iadd(kb.imul(t, kb.idx(topK)), j);
                          kb.storeIndex(slot, args[orderOut],
                                        {kb.idiv(pos, kb.idx(topK)),
                                         kb.irem(pos, kb.idx(topK))});
                        });
                        return {kb.select(isHit, kb.iadd(pos, kb.idx(1)), pos)};
                      });
                });
          });
        });
        kb.dealloc(counts);
      });
      order = results[0];
      starts = results[1];
    }

    // The routed experts: each projection is two kernels writing the same
    // buffer, each doing the work only in its range of slots (T * k), so
    // that the choice follows the step's size at run time: `*_rows` below
    // kGroupedMinSlots (decode: one block per output on the GPU), the
    // grouped one from it on (a grouped matmul on GPU targets with matrix
    // units; here the same loops). Outside its range a kernel's token loop
    // is empty.
    constexpr int64_t kGroupedMinSlots = 64;
    auto activeTokens = [&](KernelBuilder &kb, Value numTokens,
                            bool grouped) {
      return kb.rowsIfStepSize(numTokens,
                               kb.imul(numTokens, kb.idx(topK)),
                               kGroupedMinSlots, grouped);
    };
    // Expert-parallel: `rank_experts`, the experts of the rank's stacked
    // weights (the kernels take the rank's coordinate after `starts`).
    auto groupedAttr = [&](llm::GroupedExpertsKind kind,
                           const RankExperts &own) {
      return NamedAttribute(
          rewriter.getStringAttr(kGroupedExpertsAttrName),
          llm::GroupedExpertsAttr::get(
              rewriter.getContext(), kind, topK, experts, kGroupedMinSlots,
              rewriter.getF64FloatAttr(limit), own.coordinate ? own.count : 0));
    };

    // The grouped kernels' extra arguments, order and starts; returns
    // order's position (none for the `_rows` kernels).
    auto addGrouping = [&](KernelCall &call,
                           bool grouped) -> std::optional<unsigned> {
      if (!grouped)
        return std::nullopt;
      unsigned o = call.addInput(order, llm::KernelRole::SlotOrder);
      call.addInput(starts, llm::KernelRole::ExpertStarts);
      return o;
    };
    // The buffer a routed kernel writes: the `_rows` kernel allocates it
    // (`buffer` is set from its result after the call), the grouped one
    // takes it as its last argument and carries kGroupedExpertsAttrName.
    func::FuncOp rowsKernel;
    auto addRoutedOutput = [&](KernelCall &call, bool grouped, Value buffer,
                               MemRefType type, llm::GroupedExpertsKind kind,
                               const RankExperts &own) {
      if (!grouped)
        return call.addResult(type, tokens, llm::KernelRole::Out);
      call.attributes.push_back(groupedAttr(kind, own));
      call.attributes.push_back(rowsTwin(rewriter, rowsKernel));
      return call.addInput(buffer, llm::KernelRole::Out);
    };
    // The slot (token, j) a routed kernel's row (p, q) works on: itself for
    // the `_rows` kernels; for the grouped ones the slot at flat position
    // p * k + q of moe_group's order (argument `o`), so that their loops
    // here use the grouping the matrix-unit form relies on.
    auto slotOf = [&](KernelBuilder &kb, ValueRange args,
                      std::optional<unsigned> o, Value p,
                      Value q) -> std::pair<Value, Value> {
      if (!o)
        return {p, q};
      Value slot = kb.loadIndex(args[*o], {p, q});
      return {kb.idiv(slot, kb.idx(topK)), kb.irem(slot, kb.idx(topK))};
    };

    // Routed experts' SwiGLU: one activation per (token, slot, i).
    Type gt = op.getGate().getType(), ut = op.getUp().getType(),
         dt = op.getDown().getType();
    int64_t inter = weightDim(gt, 1);
    RankExperts own(rewriter, op, weightDim(gt, 0));
    // fp8_expert_activations: the experts read x and the activation as
    // e4m3 codes with per-group scales (the verifier checked that gate, up
    // and down are fp8 with one K block for gate and up).
    bool fp8Inputs = op.getFp8ExpertActivations();
    Value xq, xs;
    int64_t upBlock = 0, downBlock = 0;
    if (fp8Inputs) {
      upBlock = cast<llm::Fp8WeightType>(gt).getBlockCols();
      downBlock = cast<llm::Fp8WeightType>(dt).getBlockCols();
      std::tie(xq, xs) =
          emitGroupQuantize(rewriter, op, "moe_quantize_x", x, upBlock);
    }
    // The matmul input `values` (and its scales) as kernel arguments; the
    // body's view of them.
    auto addMatmulInput = [&](KernelCall &call, Value values, Value scales) {
      unsigned first = call.addInput(values, llm::KernelRole::X);
      if (scales)
        call.addInput(scales, llm::KernelRole::XScales);
      return first;
    };
    auto matmulInput = [&](ValueRange args, unsigned first, int64_t block) {
      return fp8Inputs ? MatmulInput(args[first], args[first + 1], block)
                       : MatmulInput(args[first]);
    };
    Value act;
    for (bool grouped : {false, true}) {
      KernelCall call;
      unsigned xi = addMatmulInput(call, fp8Inputs ? xq : x, xs);
      unsigned c = call.addInput(chosen, llm::KernelRole::Chosen);
      std::optional<unsigned> o = addGrouping(call, grouped);
      std::optional<unsigned> k = own.addArg(call);
      FailureOr<unsigned> g = call.addWeight(rewriter, loc, op.getGate(),
                                             adaptor.getGate(), WeightRoles{});
      FailureOr<unsigned> u = call.addWeight(rewriter, loc, op.getUp(),
                                             adaptor.getUp(), kUpWeightRoles);
      if (failed(g) || failed(u))
        return noFp8Source();
      unsigned out = addRoutedOutput(
          call, grouped, act, MemRefType::get({dyn, topK, inter}, actType),
          llm::GroupedExpertsKind::Up, own);
      auto results = call.emit(rewriter, op, grouped ? "moe_up" : "moe_up_rows",
                               [&](KernelBuilder &kb, ValueRange args) {
        Swiglu swiglu{viewAt(gt, args, *g), viewAt(ut, args, *u), hidden,
                      limit, actType};
        MatmulInput input = matmulInput(args, xi, upBlock);
        kb.parallelRows(
            {kb.idx(0), kb.idx(0), kb.idx(0)},
            {activeTokens(kb, kb.dim(args[xi], 0), grouped), kb.idx(topK),
             kb.idx(inter)},
            [&](ValueRange pi) {
              std::pair<Value, Value> tj = slotOf(kb, args, o, pi[0], pi[1]);
              Value t = tj.first, j = tj.second;
              std::pair<Value, Value> expert =
                  own.local(kb, args, k, kb.loadIndex(args[c], {t, j}));
              Value owned = expert.first, e = expert.second;
              own.store(kb, owned, args[out], {t, j, pi[2]}, [&] {
                return swiglu.activation(kb, input, t, e, pi[2]);
              });
            });
      });
      if (!grouped) {
        act = results[0];
        rowsKernel = call.kernel;
      }
    }

    // Routed experts' down projections, weighted: y = round(w * E_slot).
    Value routed;
    Value actq, acts;
    if (fp8Inputs)
      std::tie(actq, acts) =
          emitGroupQuantize(rewriter, op, "moe_quantize_act", act, downBlock);
    for (bool grouped : {false, true}) {
      KernelCall call;
      unsigned a = addMatmulInput(call, fp8Inputs ? actq : act, acts);
      unsigned c = call.addInput(chosen, llm::KernelRole::Chosen);
      unsigned w = call.addInput(weights, llm::KernelRole::RouteWeights);
      std::optional<unsigned> o = addGrouping(call, grouped);
      std::optional<unsigned> k = own.addArg(call);
      FailureOr<unsigned> dn = call.addWeight(rewriter, loc, op.getDown(),
                                              adaptor.getDown(), WeightRoles{});
      if (failed(dn))
        return noFp8Source();
      unsigned out = addRoutedOutput(
          call, grouped, routed, MemRefType::get({dyn, topK, hidden}, actType),
          llm::GroupedExpertsKind::Down, own);
      auto results = call.emit(
          rewriter, op, grouped ? "moe_down" : "moe_down_rows",
          [&](KernelBuilder &kb, ValueRange args) {
        WeightView down = viewAt(dt, args, *dn);
        MatmulInput input = matmulInput(args, a, downBlock);
        kb.parallelRows(
            {kb.idx(0), kb.idx(0), kb.idx(0)},
            {activeTokens(kb, kb.dim(args[a], 0), grouped), kb.idx(topK),
             kb.idx(hidden)},
            [&](ValueRange po) {
              std::pair<Value, Value> tj = slotOf(kb, args, o, po[0], po[1]);
              Value t = tj.first, j = tj.second;
              std::pair<Value, Value> expert =
                  own.local(kb, args, k, kb.loadIndex(args[c], {t, j}));
              Value owned = expert.first, e = expert.second;
              own.store(kb, owned, args[out], {t, j, po[2]}, [&] {
                Value y = downProjection(kb, down, e, input, {t, j}, po[2],
                                         inter, actType);
                return kb.round(kb.mul(kb.load(args[w], {t, j}), y), actType);
              });
            });
      });
      if (!grouped) {
        routed = results[0];
        rowsKernel = call.kernel;
      }
    }

    // The shared expert, then the sum in slot order.
    FailureOr<Value> sharedAct = emitDenseUp(
        rewriter, op, "moe_shared_up", x, op.getSharedGate(),
        adaptor.getSharedGate(), op.getSharedUp(), adaptor.getSharedUp(),
        hidden, limit, actType);
    if (failed(sharedAct))
      return noFp8Source();
    Type sdt = op.getSharedDown().getType();
    int64_t sharedInter = weightDim(sdt, 1);
    FailureOr<unsigned> dn;
    ResidualWrite residual(adaptor.getStreams(), resultType);
    FailureOr<Value> out = emitDenseProjection(
        rewriter, op, "moe_shared_down", resultType,
        dynamicSizesLike(rewriter, loc, x, resultType),
        llm::DenseEpilogue::AddSlotSum, std::nullopt, topK, residual.hcMult,
        [&](KernelCall &call) {
          call.addInput(*sharedAct, llm::KernelRole::X);
          call.addInput(routed, llm::KernelRole::SlotSum);
          dn = call.addWeight(rewriter, loc, op.getSharedDown(),
                              adaptor.getSharedDown(), WeightRoles{});
          residual.addArgs(call);
          return success(succeeded(dn));
        },
        [&](KernelBuilder &kb, ValueRange args, Value rows, unsigned out) {
          WeightView down = viewAt(sdt, args, *dn);
          kb.parallelRows({kb.idx(0), kb.idx(0)}, {rows, kb.idx(hidden)},
                          [&](ValueRange to) {
            Value t = to[0], o = to[1];
            Value sum = kb.sum(0, topK, actType, [&](Value k) {
              return kb.load(args[1], {t, k, o});
            });
            Value shared = downProjection(kb, down, {}, args[0], t, o,
                                          sharedInter, actType);
            residual.store(kb, args, out, t, o,
                           kb.round(kb.add(sum, shared), actType));
          });
        });
    if (failed(out))
      return noFp8Source();
    rewriter.replaceOp(op, *out);
    return success();
  }
};

} // namespace

void mlir::strata::populateFfnToKernelPatterns(const TypeConverter &converter,
                                               RewritePatternSet &patterns) {
  patterns.add<SwigluMlpToKernel, MoeFfnToKernel>(converter,
                                                  patterns.getContext());
}
