//===- ArgmaxOps.cpp - llm.argmax to kernels ------------------------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.argmax is two kernels. argmax_chunks: one row per (logits row, chunk of
// kArgmaxChunk columns), the chunk's maximum and the lowest column holding
// it, in two passes over the chunk (the column carried as an f32, exact
// below 2^24, so that both passes are float min / max reductions a GPU block
// shares; a chunk per block keeps every multiprocessor busy at one row).
// argmax: one row per logits row, the same two passes over its chunks'
// maxima, which picks the row's lowest column holding its maximum. A row
// whose maximum is not finite (a NaN, a +inf, every entry -inf: the rows the
// host sampler refuses) gets -1.
//
//===----------------------------------------------------------------------===//

#include <limits>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// Columns per block of argmax_chunks.
constexpr int64_t kArgmaxChunk = 1024;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The maximum of values [lb, ub) (value(i)) and the lowest position(i)
/// holding it (+inf when none equals it: a NaN maximum).
std::pair<Value, Value>
emitFirstMaximum(KernelBuilder &kb, Value lb, Value ub,
                 llvm::function_ref<Value(Value)> value,
                 llvm::function_ref<Value(Value)> position) {
  Value best = kb.reduce(lb, ub, kb.f32(-kInf), [&](Value i, Value acc) {
    return kb.max(acc, value(i));
  });
  // Below the maximum: +inf (never the minimum unless nothing equals it).
  Value first = kb.reduce(lb, ub, kb.f32(kInf), [&](Value i, Value acc) {
    Value below = kb.lt(value(i), best);
    return kb.min(acc, kb.select(below, kb.f32(kInf), position(i)));
  });
  return {best, first};
}

/// Partial maxima and their first columns [N, chunks] of logits [N, V].
Value emitChunkMaxima(ConversionPatternRewriter &rewriter, llm::ArgmaxOp op,
                      Value logits, int64_t vocab, int64_t chunks) {
  Location loc = op.getLoc();
  auto partType =
      MemRefType::get({ShapedType::kDynamic, chunks, 2}, rewriter.getF32Type());
  KernelCall call;
  call.addInput(logits);
  unsigned out =
      call.addResult(partType, {getDimValue(rewriter, loc, logits, 0)});
  return call.emit(rewriter, op, "argmax_chunks",
                   [&](KernelBuilder &kb, ValueRange args) {
    auto chunk = [&](Value n, Value c) {
      Value lb = kb.imul(c, kb.idx(kArgmaxChunk));
      Value ub = kb.imin(kb.iadd(lb, kb.idx(kArgmaxChunk)), kb.idx(vocab));
      auto [best, first] = emitFirstMaximum(
          kb, lb, ub, [&](Value v) { return kb.load(args[0], {n, v}); },
          [&](Value v) { return kb.toF32(v); });
      kb.store(best, args[out], {n, c, kb.idx(0)});
      kb.store(first, args[out], {n, c, kb.idx(1)});
    };
    // One chunk: a one-dimensional row loop (a unit dimension would fold
    // away and leave the rows, not the columns, to the threads).
    if (chunks == 1) {
      kb.parallelRows({kb.idx(0)}, {kb.dim(args[0], 0)},
                      [&](ValueRange n) { chunk(n[0], kb.idx(0)); });
      return;
    }
    kb.parallelRows({kb.idx(0), kb.idx(0)},
                    {kb.dim(args[0], 0), kb.idx(chunks)},
                    [&](ValueRange nc) { chunk(nc[0], nc[1]); });
  }).front();
}

/// g[n] from the chunk maxima: the first chunk holding the row's maximum
/// gives its column (-1 when the maximum is not finite).
Value emitRowArgmax(ConversionPatternRewriter &rewriter, llm::ArgmaxOp op,
                    Value parts, int64_t chunks) {
  Location loc = op.getLoc();
  KernelCall call;
  call.addInput(parts);
  MemRefType resultType = getKernelMemRefType(op.getType());
  unsigned out =
      call.addResult(resultType, {getDimValue(rewriter, loc, parts, 0)});
  return call.emit(rewriter, op, "argmax",
                   [&](KernelBuilder &kb, ValueRange args) {
    kb.parallelRows({kb.idx(0)}, {kb.dim(args[0], 0)}, [&](ValueRange r) {
      Value n = r[0];
      auto [best, first] = emitFirstMaximum(
          kb, kb.idx(0), kb.idx(chunks),
          [&](Value c) { return kb.load(args[0], {n, c, kb.idx(0)}); },
          [&](Value c) { return kb.load(args[0], {n, c, kb.idx(1)}); });
      OpBuilder &b = kb.builder();
      Value finite = arith::CmpFOp::create(
          b, loc, arith::CmpFPredicate::OLT, math::AbsFOp::create(b, loc, best),
          kb.f32(kInf));
      Value index = arith::FPToSIOp::create(b, loc, b.getI32Type(), first);
      Value g = arith::SelectOp::create(b, loc, finite, index, kb.i32(-1));
      memref::StoreOp::create(b, loc, g, args[out], n);
    });
  }).front();
}

struct ArgmaxToKernel : OpConversionPattern<llm::ArgmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::ArgmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t vocab = op.getInput().getType().getShape()[1];
    if (ShapedType::isDynamic(vocab))
      return rewriter.notifyMatchFailure(op, "dynamic vocabulary");
    int64_t chunks = (vocab + kArgmaxChunk - 1) / kArgmaxChunk;
    Value parts =
        emitChunkMaxima(rewriter, op, adaptor.getInput(), vocab, chunks);
    rewriter.replaceOp(op, emitRowArgmax(rewriter, op, parts, chunks));
    return success();
  }
};

} // namespace

void mlir::strata::populateArgmaxToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ArgmaxToKernel>(converter, patterns.getContext());
}
