//===- FuseHyperConnections.cpp - mHC ops absorb norm and projection ------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm-fuse-hyper-connections: see Passes.td. Two rewrite patterns, applied
// greedily: the input RMSNorm of a sub-layer into its llm.mhc_pre (x_norm
// form); at the sub-layer's end, an output projection into its
// llm.mhc_post (projection form) or its llm.mhc_post into the FFN op or the
// tensor-parallel all-reduce (streams form). Each applies only where the
// intermediate value has no other use, so no work is repeated.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "dialects/llm/IR/LLMOps.h"

namespace mlir::strata::llm {
#define GEN_PASS_DEF_LLMFUSEHYPERCONNECTIONSPASS
#include "dialects/llm/Transforms/Passes.h.inc"
} // namespace mlir::strata::llm

using namespace mlir;
using namespace mlir::strata;

namespace {

/// rms_norm(mhc_pre(...).x, w) -> mhc_pre(...) x_norm(w).
struct FuseInputNorm : OpRewritePattern<llm::RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::RmsNormOp norm,
                                PatternRewriter &rewriter) const override {
    auto pre = norm.getInput().getDefiningOp<llm::MhcPreOp>();
    if (!pre || norm.getInput() != pre.getResult())
      return rewriter.notifyMatchFailure(norm, "input is not an mhc_pre x");
    if (pre.getXNormWeight())
      return rewriter.notifyMatchFailure(norm, "mhc_pre already normalises");
    if (!norm.getWeight() || norm.getGate())
      return rewriter.notifyMatchFailure(norm, "not a weighted, ungated norm");
    if (!pre.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(norm, "x has other uses");
    if (norm.getType() != pre.getResult().getType())
      return rewriter.notifyMatchFailure(norm, "the norm changes the type");
    // The norm weight (an llm.weight, no operands) usually comes after
    // mhc_pre; it moves up to the fused op.
    Value weight = norm.getWeight();
    if (Operation *def = weight.getDefiningOp();
        def && def->getBlock() == pre->getBlock() &&
        pre->isBeforeInBlock(def)) {
      if (def->getNumOperands() != 0)
        return rewriter.notifyMatchFailure(norm, "weight computed after x");
      rewriter.moveOpBefore(def, pre);
    }
    rewriter.setInsertionPoint(pre);
    auto fused = llm::MhcPreOp::create(
        rewriter, pre.getLoc(), pre.getResultTypes(), pre.getResidual(),
        pre.getFn(), pre.getBase(), pre.getScale(), weight,
        pre.getHcMultAttr(), pre.getHcEpsAttr(), pre.getNormEpsAttr(),
        pre.getSinkhornItersAttr(), pre.getPostMultAttr(), norm.getEpsAttr());
    rewriter.replaceOp(norm, fused.getResult());
    rewriter.replaceAllUsesWith(pre.getPost(), fused.getPost());
    rewriter.replaceAllUsesWith(pre.getComb(), fused.getComb());
    rewriter.eraseOp(pre);
    return success();
  }
};

/// An mhc_post whose input only it reads takes in the op producing it:
///   mhc_post(linear(o, W), R, post, comb)
///       -> mhc_post(o, R, post, comb) projection(W)     (rank-2 o)
///   mhc_post(ffn(x, ...), R, post, comb)
///       -> ffn(x, ...) streams(R, post, comb)          (swiglu_mlp, moe_ffn)
///   mhc_post(all_reduce(p), R, post, comb)
///       -> all_reduce(p) streams(R, post, comb)
struct FuseResidualWrite : OpRewritePattern<llm::MhcPostOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::MhcPostOp post,
                                PatternRewriter &rewriter) const override {
    Operation *producer = post.getInput().getDefiningOp();
    if (post.getProjection() || !producer ||
        !post.getInput().hasOneUse())
      return rewriter.notifyMatchFailure(
          post, "already projects, or the input has other uses");
    if (auto linear = dyn_cast<llm::LinearOp>(producer)) {
      if (linear.getInput().getType().getRank() != 2)
        return rewriter.notifyMatchFailure(post, "linear input is not [T, K]");
      rewriter.replaceOpWithNewOp<llm::MhcPostOp>(
          post, post.getType(), linear.getInput(), post.getResidual(),
          post.getPost(), post.getComb(), linear.getWeight(),
          post.getHcMultAttr());
      rewriter.eraseOp(linear);
      return success();
    }
    auto streams = llvm::TypeSwitch<Operation *, std::optional<ValueRange>>(
                       producer)
                       .Case<llm::SwigluMlpOp, llm::MoeFfnOp,
                             llm::AllReduceOp>(
                           [](auto ffn) { return ValueRange(ffn.getStreams()); })
                       .Default([](Operation *) { return std::nullopt; });
    if (!streams || !streams->empty())
      return rewriter.notifyMatchFailure(
          post, "input is not a linear, an FFN or an all-reduce without "
                "streams");
    OperationState state(producer->getLoc(), producer->getName());
    state.addOperands(producer->getOperands());
    state.addOperands({post.getResidual(), post.getPost(), post.getComb()});
    state.addAttributes(producer->getAttrs());
    state.addTypes(post.getType());
    // At the mhc_post: every operand of both ops is defined before it.
    rewriter.setInsertionPoint(post);
    Operation *fused = rewriter.create(state);
    rewriter.replaceOp(post, fused->getResults());
    rewriter.eraseOp(producer);
    return success();
  }
};

struct LLMFuseHyperConnectionsPass
    : public llm::impl::LLMFuseHyperConnectionsPassBase<
          LLMFuseHyperConnectionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseInputNorm, FuseResidualWrite>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
