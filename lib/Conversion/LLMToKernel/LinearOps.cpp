//===- LinearOps.cpp - linears and the LM head to kernels -----------------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm.linear: the leading dimensions of x are collapsed to one row
// dimension M, an fp32 accumulator [M, out] is filled by one
// linalg.generic matmul (x[m, k] * W[n, k], widened to f32 in the body) and
// a second linalg.generic rounds it into y. An fp8 weight is first
// dequantised into an fp32 [out, in] scratch (q * scale_inv of its
// 128x128 block), so the matmul is the same for every weight kind.
// llm.lm_head gathers the selected rows and runs one scf.parallel over
// (selected row, vocabulary entry) with an fp32 accumulator per logit.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "dialects/llm/IR/LLMOps.h"
#include "dialects/llm/IR/LLMTypes.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

/// Widens a scalar block argument to f32.
static Value widen(OpBuilder &b, Location loc, Value v) {
  if (v.getType().isF32())
    return v;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
}

/// Collapses all leading dimensions of `m` into one: [a, b, .., n] -> [a*b*.., n].
static Value collapseRows(OpBuilder &b, Location loc, Value m) {
  auto type = cast<MemRefType>(m.getType());
  if (type.getRank() == 2)
    return m;
  ReassociationIndices lead;
  for (int64_t d = 0; d + 1 < type.getRank(); ++d)
    lead.push_back(d);
  SmallVector<ReassociationIndices> groups = {lead, {type.getRank() - 1}};
  return memref::CollapseShapeOp::create(b, loc, m, groups);
}

/// acc[m, n] += x[m, k] * w[n, k] as one linalg.generic.
static void buildMatmulTransposeB(OpBuilder &b, Location loc, Value x, Value w,
                                  Value acc) {
  MLIRContext *ctx = b.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, k}, ctx),
                                 AffineMap::get(3, 0, {n, k}, ctx),
                                 AffineMap::get(3, 0, {m, n}, ctx)};
  SmallVector<utils::IteratorType> iterators = {
      utils::IteratorType::parallel, utils::IteratorType::parallel,
      utils::IteratorType::reduction};
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{x, w}, ValueRange{acc}, maps, iterators,
      [](OpBuilder &nb, Location l, ValueRange args) {
        Value p = arith::MulFOp::create(nb, l, widen(nb, l, args[0]),
                                        widen(nb, l, args[1]));
        linalg::YieldOp::create(nb, l,
                                ValueRange{arith::AddFOp::create(nb, l, args[2], p)});
      });
}

/// dst = round(src) elementwise (2-D) as one linalg.generic.
static void buildRoundCopy(OpBuilder &b, Location loc, Value src, Value dst) {
  MLIRContext *ctx = b.getContext();
  AffineMap id = AffineMap::getMultiDimIdentityMap(2, ctx);
  SmallVector<utils::IteratorType> iterators(2, utils::IteratorType::parallel);
  Type elementType = cast<MemRefType>(dst.getType()).getElementType();
  linalg::GenericOp::create(
      b, loc, TypeRange{}, ValueRange{src}, ValueRange{dst},
      SmallVector<AffineMap>{id, id}, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value v = args[0];
        if (!elementType.isF32())
          v = arith::TruncFOp::create(nb, l, elementType, v);
        linalg::YieldOp::create(nb, l, ValueRange{v});
      });
}

namespace {

struct LinearToKernel : OpConversionPattern<llm::LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelCall call;
    call.addInput(adaptor.getInput());
    FailureOr<unsigned> weightArg = call.addMatmulWeight(
        rewriter, loc, op.getWeight(), adaptor.getWeight());
    if (failed(weightArg))
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, loc, adaptor.getInput(), resultType));
    Type weightType = op.getWeight().getType();
    int64_t rank = resultType.getRank();
    int64_t outDim = resultType.getDimSize(rank - 1);
    int64_t inDim = op.getInput().getType().getShape().back();
    auto results = call.emit(rewriter, op, "linear",
                             [&](KernelBuilder &kb, ValueRange args) {
      OpBuilder &b = kb.builder();
      Location l = kb.getLoc();
      Value x = collapseRows(b, l, args[0]);
      Value y = collapseRows(b, l, args[out]);
      Value rows = kb.dim(x, 0);
      WeightView weight =
          makeWeightView(weightType, args.slice(*weightArg, out - *weightArg));
      Value w = weight.data;
      if (weight.scales) {
        w = kb.scratch({outDim, inDim});
        kb.loop(0, outDim, [&](Value o) {
          kb.loop(0, inDim, [&](Value i) {
            memref::StoreOp::create(b, l, weight.load(kb, {o, i}), w,
                                    ValueRange{o, i});
          });
        });
      }
      Value acc = kb.scratch({ShapedType::kDynamic, outDim}, rows);
      buildMatmulTransposeB(b, l, x, w, acc);
      buildRoundCopy(b, l, acc, y);
      kb.dealloc(acc);
      if (weight.scales)
        kb.dealloc(w);
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct LmHeadToKernel : OpConversionPattern<llm::LmHeadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LmHeadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    KernelCall call;
    call.addInput(adaptor.getInput());
    FailureOr<unsigned> weightArg = call.addWeight(
        rewriter, loc, op.getWeight(), adaptor.getWeight());
    if (failed(weightArg))
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    unsigned rowsArg = call.addInput(adaptor.getRows());
    MemRefType resultType = getKernelMemRefType(op.getType());
    unsigned out = call.addResult(
        resultType,
        dynamicSizesLike(rewriter, loc, adaptor.getRows(), resultType));
    Type weightType = op.getWeight().getType();
    int64_t vocab = resultType.getDimSize(1);
    int64_t hidden = op.getInput().getType().getDimSize(1);
    auto results = call.emit(rewriter, op, "lm_head",
                             [&](KernelBuilder &kb, ValueRange args) {
      WeightView weight =
          makeWeightView(weightType, args.slice(*weightArg, rowsArg - *weightArg));
      // One independent dot product per (selected row, vocabulary entry):
      // on the GPU the vocabulary is a grid dimension whose entries the
      // threads of a block share, so every block streams weight rows (one
      // block per row left a whole 154,880-row head to one multiprocessor).
      kb.parallelRows({kb.idx(0), kb.idx(0)},
                  {kb.dim(args[rowsArg], 0), kb.idx(vocab)},
                  [&](ValueRange nv) {
        Value n = nv[0], v = nv[1];
        Value row = kb.loadIndex(args[rowsArg], n);
        Value dot = kb.reduce(0, hidden, kb.f32(0.0), [&](Value d, Value acc) {
          return kb.add(acc, kb.mul(kb.load(args[0], {row, d}),
                                    weight.load(kb, {v, d})));
        });
        kb.store(dot, args[out], {n, v});
      });
    });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::strata::populateLinearToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LinearToKernel, LmHeadToKernel>(converter,
                                               patterns.getContext());
}
