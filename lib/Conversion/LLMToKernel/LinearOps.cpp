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
// llm.lm_head is two kernels: lm_head_rows gathers the selected rows of h
// and lm_head is the same matmul as a linear with an f32 result, so every
// target runs the logits as a GEMM that reads the weight once per step
// (kLinearKernelAttrName: GPU targets rebuild both as the linear's matmul
// kernel). The summation order of each logit is the same as before the
// split (d = 0, 1, ..., fp32), so CPU logits are bit-identical.
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
static Value widen(OpBuilder &b, Location loc, Value v, Type to) {
  if (v.getType() == to)
    return v;
  return arith::ExtFOp::create(b, loc, to, v);
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
        Type accType = args[2].getType();
        Value p = arith::MulFOp::create(nb, l, widen(nb, l, args[0], accType),
                                        widen(nb, l, args[1], accType));
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
        if (v.getType() != elementType)
          v = arith::TruncFOp::create(nb, l, elementType, v);
        linalg::YieldOp::create(nb, l, ValueRange{v});
      });
}

/// Emits the plain linear kernel `name`: y[m, n] = round(sum_k x[m, k] *
/// W[n, k]) over the rows of `x` (leading dimensions collapsed), marked
/// kLinearKernelAttrName. `weightOriginal` is the op's weight operand (its
/// type selects the fp8 path), `weight` its converted buffer; the result has
/// `resultType` with the dynamic extents of `x`. Returns the result buffer.
static FailureOr<Value> emitLinearKernel(ConversionPatternRewriter &rewriter,
                                         Operation *op, StringRef name,
                                         Value x, Value weightOriginal,
                                         Value weight, MemRefType resultType) {
  Location loc = op->getLoc();
  KernelCall call;
  call.addInput(x, llm::KernelRole::X);
  FailureOr<unsigned> weightArg =
      call.addMatmulWeight(rewriter, loc, weightOriginal, weight);
  if (failed(weightArg))
    return failure();
  unsigned out =
      call.addResult(resultType, dynamicSizesLike(rewriter, loc, x, resultType),
                     llm::KernelRole::Out);
  call.attributes.push_back(
      rewriter.getNamedAttr(kLinearKernelAttrName, rewriter.getUnitAttr()));
  Type weightType = weightOriginal.getType();
  int64_t rank = resultType.getRank();
  int64_t outDim = resultType.getDimSize(rank - 1);
  int64_t inDim = cast<MemRefType>(x.getType()).getShape().back();
  auto results = call.emit(rewriter, op, name,
                           [&](KernelBuilder &kb, ValueRange args) {
    OpBuilder &b = kb.builder();
    Location l = kb.getLoc();
    Value xs = collapseRows(b, l, args[0]);
    Value y = collapseRows(b, l, args[out]);
    Value rows = kb.dim(xs, 0);
    WeightView view =
        makeWeightView(weightType, args.slice(*weightArg, out - *weightArg));
    Value w = view.data;
    if (view.scales) {
      w = kb.scratch({outDim, inDim});
      kb.loop(0, outDim, [&](Value o) {
        kb.loop(0, inDim, [&](Value i) {
          memref::StoreOp::create(b, l, view.load(kb, {o, i}), w,
                                  ValueRange{o, i});
        });
      });
    }
    Value acc = kb.scratch(
        {ShapedType::kDynamic, outDim}, rows,
        dotAccumulatorType(cast<MemRefType>(xs.getType()).getElementType()));
    buildMatmulTransposeB(b, l, xs, w, acc);
    buildRoundCopy(b, l, acc, y);
    kb.dealloc(acc);
    if (view.scales)
      kb.dealloc(w);
  });
  return results.front();
}

namespace {

struct LinearToKernel : OpConversionPattern<llm::LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<Value> y = emitLinearKernel(
        rewriter, op, "linear", adaptor.getInput(), op.getWeight(),
        adaptor.getWeight(), getKernelMemRefType(op.getType()));
    if (failed(y))
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    rewriter.replaceOp(op, *y);
    return success();
  }
};

struct LmHeadToKernel : OpConversionPattern<llm::LmHeadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::LmHeadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    // lm_head_rows: x[n, :] = h[rows[n], :].
    auto hType = cast<MemRefType>(adaptor.getInput().getType());
    int64_t hidden = hType.getDimSize(1);
    auto rowsType = MemRefType::get({ShapedType::kDynamic, hidden},
                                    hType.getElementType());
    KernelCall gather;
    gather.addInput(adaptor.getInput());
    unsigned rowsArg = gather.addInput(adaptor.getRows());
    unsigned out = gather.addResult(
        rowsType, dynamicSizesLike(rewriter, loc, adaptor.getRows(), rowsType));
    Value rows = gather.emit(rewriter, op, "lm_head_rows",
                             [&](KernelBuilder &kb, ValueRange args) {
      kb.loop(kb.idx(0), kb.dim(args[rowsArg], 0), [&](Value n) {
        Value row = kb.loadIndex(args[rowsArg], n);
        kb.loop(0, hidden, [&](Value d) {
          kb.store(kb.load(args[0], ValueRange{row, d}), args[out],
                   ValueRange{n, d});
        });
      });
    }).front();
    // lm_head: logits = x W^T in fp32, a linear with an f32 result.
    FailureOr<Value> logits =
        emitLinearKernel(rewriter, op, "lm_head", rows, op.getWeight(),
                         adaptor.getWeight(), getKernelMemRefType(op.getType()));
    if (failed(logits))
      return rewriter.notifyMatchFailure(
          op, "fp8 weight does not come from llm.weight");
    rewriter.replaceOp(op, *logits);
    return success();
  }
};

} // namespace

void mlir::strata::populateLinearToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LinearToKernel, LmHeadToKernel>(converter,
                                               patterns.getContext());
}
