//===- CollectiveOps.cpp - collectives to communicator calls --------------===//
//
// Part of strata, under the Apache License v2.0.
//
// A collective is no kernel: the runtime runs it through its communicator
// (runtime/collectives). llm.all_reduce and llm.all_gather therefore become
// calls of private declarations marked kCollectiveAttrName, over the
// converted input (send) and a fresh allocation (recv); the kernel plan turns
// each call into a collective dispatch (KernelPlan.h) and the artifact into a
// Dispatch with a Collective (docs/Parallel.md "Collectives in the plan").
//
// The streams form of llm.all_reduce (the reduction ending in mHC's residual
// write) becomes the bare reduction followed by llm.mhc_post, which its own
// pattern lowers: the residual write needs the whole sum, so it cannot run
// before the communicator call.
//
// The rank coordinates that sharded kernels need (the embedding's first
// vocabulary row, the MoE's first expert) are calls of a second kind of
// declaration (kRankCoordinateAttrName), bound as int scalars of the
// SizeSymbols tp_rank / ep_rank / world_rank.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "dialects/llm/IR/LLMOps.h"
#include "lib/Conversion/LLMToKernel/KernelBuilder.h"
#include "lib/Conversion/LLMToKernel/Patterns.h"

using namespace mlir;
using namespace mlir::strata;

namespace {

/// The first free symbol `<base>_<n>` of `module`.
std::string freshSymbol(ModuleOp module, StringRef base) {
  SymbolTable symbols(module);
  for (unsigned n = 0;; ++n) {
    std::string symbol = (base + "_" + Twine(n)).str();
    if (!symbols.lookup(symbol))
      return symbol;
  }
}

/// The private declaration `name(argTypes) -> resultTypes` carrying
/// `marker` = `value`, reused when the module already has one with the same
/// marker value and type.
func::FuncOp getOrCreateMarkedDeclaration(RewriterBase &rewriter,
                                          Location loc, ModuleOp module,
                                          StringRef base, StringRef marker,
                                          Attribute value,
                                          FunctionType type) {
  for (auto func : module.getOps<func::FuncOp>())
    if (func->getAttr(marker) == value && func.getFunctionType() == type)
      return func;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToEnd(module.getBody());
  auto func =
      func::FuncOp::create(rewriter, loc, freshSymbol(module, base), type);
  func.setPrivate();
  func->setAttr(marker, value);
  return func;
}

/// Calls the collective declaration {kind, group, dim} with `send` and a
/// new allocation of `recvType` (dynamic extents `recvSizes`); returns recv.
Value emitCollectiveCall(ConversionPatternRewriter &rewriter, Operation *op,
                         StringRef kind, Attribute group, int64_t dim,
                         Value send, MemRefType recvType,
                         SmallVector<Value> recvSizes) {
  Location loc = op->getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  DictionaryAttr marker = rewriter.getDictionaryAttr(
      {rewriter.getNamedAttr("kind", rewriter.getStringAttr(kind)),
       rewriter.getNamedAttr("group", group),
       rewriter.getNamedAttr("dim", rewriter.getI64IntegerAttr(dim))});
  FunctionType type =
      rewriter.getFunctionType({send.getType(), recvType}, {});
  func::FuncOp callee = getOrCreateMarkedDeclaration(
      rewriter, loc, module, ("strata_" + kind).str(), kCollectiveAttrName,
      marker, type);
  Value recv = memref::AllocOp::create(rewriter, loc, recvType, recvSizes);
  func::CallOp::create(rewriter, loc, callee, ValueRange{send, recv});
  return recv;
}

struct AllReduceToCollective : OpConversionPattern<llm::AllReduceOp> {
  AllReduceToCollective(const TypeConverter &converter, MLIRContext *context)
      : OpConversionPattern(converter, context) {
    // The streams form creates the bare form, which this pattern lowers.
    setHasBoundedRewriteRecursion();
  }
  LogicalResult
  matchAndRewrite(llm::AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getStreams().empty())
      return splitResidualWrite(op, rewriter);
    MemRefType type = getKernelMemRefType(op.getType());
    Value send = adaptor.getInput();
    Value recv = emitCollectiveCall(
        rewriter, op, "all_reduce", op.getGroupAttr(), /*dim=*/0, send, type,
        dynamicSizesLike(rewriter, op.getLoc(), send, type));
    rewriter.replaceOp(op, recv);
    return success();
  }

  /// all_reduce streams(R, post, comb) -> mhc_post(all_reduce, R, post,
  /// comb); the conversion then lowers both.
  static LogicalResult splitResidualWrite(llm::AllReduceOp op,
                                          ConversionPatternRewriter &rewriter) {
    Location loc = op.getLoc();
    ValueRange streams = op.getStreams();
    auto residualType = cast<RankedTensorType>(streams[0].getType());
    Value sum = llm::AllReduceOp::create(
        rewriter, loc, op.getInput().getType(), op.getInput(), ValueRange{},
        op.getGroupAttr(), op.getGroupSizeAttr());
    Value written = llm::MhcPostOp::create(
        rewriter, loc, op.getType(), sum, streams[0], streams[1], streams[2],
        /*projection=*/Value(),
        rewriter.getI64IntegerAttr(residualType.getDimSize(1)));
    rewriter.replaceOp(op, written);
    return success();
  }
};

struct AllGatherToCollective : OpConversionPattern<llm::AllGatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(llm::AllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MemRefType type = getKernelMemRefType(op.getType());
    int64_t dim = op.getDim();
    // The result's dynamic extents are the input's: the gathered dimension
    // must be static (the lm_head's vocabulary).
    if (type.isDynamicDim(dim))
      return rewriter.notifyMatchFailure(
          op, "all_gather along a dynamic dimension has no kernel lowering");
    Value send = adaptor.getInput();
    Value recv = emitCollectiveCall(
        rewriter, op, "all_gather", op.getGroupAttr(), dim, send, type,
        dynamicSizesLike(rewriter, op.getLoc(), send, type));
    rewriter.replaceOp(op, recv);
    return success();
  }
};

} // namespace

Value mlir::strata::getRankCoordinate(RewriterBase &rewriter, Location loc,
                                      ModuleOp module, Attribute group) {
  FunctionType type = rewriter.getFunctionType({}, {rewriter.getI64Type()});
  func::FuncOp callee = getOrCreateMarkedDeclaration(
      rewriter, loc, module, "strata_rank_coordinate", kRankCoordinateAttrName,
      group, type);
  return func::CallOp::create(rewriter, loc, callee, ValueRange{})
      .getResult(0);
}

void mlir::strata::populateCollectiveToKernelPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AllReduceToCollective, AllGatherToCollective>(
      converter, patterns.getContext());
}
