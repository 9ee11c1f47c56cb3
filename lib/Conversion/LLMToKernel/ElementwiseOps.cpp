//===- ElementwiseOps.cpp - embedding, masks and norms to kernels ---------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.embedding (ids outside the table's rows, with vocab_shard outside
// the rank's rows, give zero rows), llm.position_mask, llm.rms_norm and
// llm.layer_norm become row kernels: an scf loop nest over the leading dimensions, fp32 reductions
// over the last dimension, one rounding at the store (plus the extra
// rounding of weighted rms_norm, HF order: round(n) * weight).
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

struct EmbeddingToKernel : OpConversionPattern<llm::EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelCall call;
    unsigned ids = call.addInput(adaptor.getIds());
    unsigned table = call.addInput(adaptor.getTable());
    // Vocabulary-parallel: the rank's coordinate selects its rows.
    std::optional<unsigned> coordinate;
    if (llm::ShardAttr shard = op.getVocabShardAttr())
      coordinate = call.addInput(getRankCoordinate(
          rewriter, loc, op->getParentOfType<ModuleOp>(),
          llm::RankGroupAttr::get(op.getContext(), shard.getGroup())));
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, loc, adaptor.getIds(), resultType));
    int64_t hidden = resultType.getDimSize(1);
    int64_t rows = getKernelMemRefType(op.getTable().getType()).getDimSize(0);
    auto results = call.emit(rewriter, op,
                             coordinate ? "embedding_vocab_shard" : "embedding",
                             [&](KernelBuilder &kb, ValueRange args) {
      kb.loop(kb.idx(0), kb.dim(args[ids], 0), [&](Value t) {
        Value id = kb.loadIndex(args[ids], t);
        // Vocabulary-parallel: rows [k * rows, (k + 1) * rows) are the
        // rank's. Ids outside the table's rows (another rank's, or an id
        // the device computed from a row without a finite maximum: the
        // greedy -1 a fused MTP draft step may embed) read row 0 and store
        // zeros, never memory outside the table.
        if (coordinate) {
          Value first = kb.imul(
              arith::IndexCastOp::create(kb.builder(), kb.getLoc(),
                                         kb.builder().getIndexType(),
                                         args[*coordinate]),
              kb.idx(rows));
          id = kb.isub(id, first);
        }
        Value inside =
            kb.andi(kb.ige(id, kb.idx(0)), kb.ilt(id, kb.idx(rows)));
        id = kb.select(inside, id, kb.idx(0));
        kb.loop(0, hidden, [&](Value d) {
          // Widened and rounded back: a copy for equal types, the exact
          // bf16 -> f32 widening of the f32 mode otherwise.
          Value row = kb.load(args[table], ValueRange{id, d});
          row = kb.select(inside, row, kb.f32(0.0));
          kb.store(row, args[out], ValueRange{t, d});
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct PositionMaskToKernel : OpConversionPattern<llm::PositionMaskOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::PositionMaskOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelCall call;
    call.addInput(adaptor.getInput());
    call.addInput(adaptor.getPositions());
    MemRefType resultType = getKernelMemRefType(op.getType());
    call.addResult(resultType, dynamicSizesLike(rewriter, loc,
                                                adaptor.getInput(),
                                                resultType));
    int64_t position = op.getPosition();
    unsigned rank = resultType.getRank();
    auto results = call.emit(rewriter, op, "position_mask",
                             [&](KernelBuilder &kb, ValueRange args) {
      forEachRow(kb, args[0], rank, [&](SmallVector<Value> index) {
        Value pos = kb.loadIndex(args[1], index[0]);
        Value x = kb.load(args[0], index);
        kb.store(kb.select(kb.ieq(pos, kb.idx(position)), kb.f32(0.0), x),
                 args[2], index);
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct RmsNormToKernel : OpConversionPattern<llm::RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelCall call;
    call.addInput(adaptor.getInput());
    int weightArg = -1, gateArg = -1;
    if (adaptor.getWeight())
      weightArg = call.addInput(adaptor.getWeight());
    if (adaptor.getGate())
      gateArg = call.addInput(adaptor.getGate());
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, loc, adaptor.getInput(), resultType));
    unsigned rank = resultType.getRank();
    int64_t d = resultType.getDimSize(rank - 1);
    double eps = op.getEps().convertToFloat();
    Type inputElement = op.getInput().getType().getElementType();
    auto results = call.emit(rewriter, op, "rms_norm",
                             [&](KernelBuilder &kb, ValueRange args) {
      forEachRow(kb, args[0], rank - 1, [&](SmallVector<Value> lead) {
        auto at = [&](Value c) {
          SmallVector<Value> index = lead;
          index.push_back(c);
          return index;
        };
        Value ss = kb.reduce(0, d, kb.f32(0.0), [&](Value c, Value acc) {
          Value x = kb.load(args[0], at(c));
          return kb.add(acc, kb.mul(x, x));
        });
        Value inv = kb.rsqrt(
            kb.add(kb.div(ss, kb.f32(static_cast<double>(d))), kb.f32(eps)));
        kb.loop(0, d, [&](Value c) {
          Value n = kb.mul(kb.load(args[0], at(c)), inv);
          Value y = n;
          if (gateArg >= 0) {
            y = kb.mul(kb.mul(n, kb.load(args[weightArg], c)),
                       kb.sigmoid(kb.load(args[gateArg], at(c))));
          } else if (weightArg >= 0) {
            y = kb.mul(kb.round(n, inputElement), kb.load(args[weightArg], c));
          }
          kb.store(y, args[out], at(c));
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct LayerNormToKernel : OpConversionPattern<llm::LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelCall call;
    call.addInput(adaptor.getInput());
    call.addInput(adaptor.getWeight());
    call.addInput(adaptor.getBias());
    MemRefType resultType = getKernelMemRefType(op.getType());
    call.addResult(resultType, dynamicSizesLike(rewriter, loc,
                                                adaptor.getInput(),
                                                resultType));
    unsigned rank = resultType.getRank();
    int64_t d = resultType.getDimSize(rank - 1);
    double eps = op.getEps().convertToFloat();
    auto results = call.emit(rewriter, op, "layer_norm",
                             [&](KernelBuilder &kb, ValueRange args) {
      forEachRow(kb, args[0], rank - 1, [&](SmallVector<Value> lead) {
        auto at = [&](Value c) {
          SmallVector<Value> index = lead;
          index.push_back(c);
          return index;
        };
        Value count = kb.f32(static_cast<double>(d));
        Value mean = kb.div(
            kb.reduce(0, d, kb.f32(0.0),
                      [&](Value c, Value acc) {
                        return kb.add(acc, kb.load(args[0], at(c)));
                      }),
            count);
        Value var = kb.div(
            kb.reduce(0, d, kb.f32(0.0),
                      [&](Value c, Value acc) {
                        Value x = kb.sub(kb.load(args[0], at(c)), mean);
                        return kb.add(acc, kb.mul(x, x));
                      }),
            count);
        Value inv = kb.rsqrt(kb.add(var, kb.f32(eps)));
        kb.loop(0, d, [&](Value c) {
          Value x = kb.mul(kb.sub(kb.load(args[0], at(c)), mean), inv);
          kb.store(kb.add(kb.mul(x, kb.load(args[1], c)), kb.load(args[2], c)),
                   args[3], at(c));
        });
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::strata::populateElementwiseToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<EmbeddingToKernel, PositionMaskToKernel, RmsNormToKernel,
               LayerNormToKernel>(converter, patterns.getContext());
}
