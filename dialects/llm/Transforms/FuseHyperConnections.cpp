//===- FuseHyperConnections.cpp - mHC ops absorb norm and projection ------===//
//
// Part of strata, under the Apache License v2.0.
//
// llm-fuse-hyper-connections: see Passes.td. Three rewrite patterns,
// applied greedily: the input RMSNorm of a sub-layer into its llm.mhc_pre
// (x_norm form), an attention sub-layer's output projection into its
// llm.mhc_post (projection form), an FFN sub-layer's llm.mhc_post into the
// FFN op (streams form). Each applies only where the intermediate value has
// no other use, so no work is repeated.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
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

/// mhc_post(linear(o, W), R, post, comb) -> mhc_post(o, R, post, comb)
/// projection(W).
struct FuseOutputProjection : OpRewritePattern<llm::MhcPostOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::MhcPostOp post,
                                PatternRewriter &rewriter) const override {
    if (post.getProjection())
      return rewriter.notifyMatchFailure(post, "already projects");
    auto linear = post.getInput().getDefiningOp<llm::LinearOp>();
    if (!linear || !linear.getResult().hasOneUse())
      return rewriter.notifyMatchFailure(
          post, "input is not a linear used only here");
    if (linear.getInput().getType().getRank() != 2)
      return rewriter.notifyMatchFailure(post, "linear input is not [T, K]");
    rewriter.replaceOpWithNewOp<llm::MhcPostOp>(
        post, post.getType(), linear.getInput(), post.getResidual(),
        post.getPost(), post.getComb(), linear.getWeight(),
        post.getHcMultAttr());
    rewriter.eraseOp(linear);
    return success();
  }
};

/// mhc_post(ffn(x, ...), R, post, comb) -> ffn(x, ...) streams(R, post,
/// comb) for llm.swiglu_mlp and llm.moe_ffn: the FFN's last kernel writes
/// the streams.
struct FuseFfnResidualWrite : OpRewritePattern<llm::MhcPostOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::MhcPostOp post,
                                PatternRewriter &rewriter) const override {
    if (post.getProjection())
      return rewriter.notifyMatchFailure(post, "already projects");
    Operation *ffn = post.getInput().getDefiningOp();
    if (!ffn || !isa<llm::SwigluMlpOp, llm::MoeFfnOp>(ffn) ||
        !ffn->getResult(0).hasOneUse())
      return rewriter.notifyMatchFailure(
          post, "input is not an FFN result used only here");
    auto streams = isa<llm::SwigluMlpOp>(ffn)
                       ? cast<llm::SwigluMlpOp>(ffn).getStreams()
                       : cast<llm::MoeFfnOp>(ffn).getStreams();
    if (!streams.empty())
      return rewriter.notifyMatchFailure(post, "the FFN writes streams");
    OperationState state(ffn->getLoc(), ffn->getName());
    state.addOperands(ffn->getOperands());
    state.addOperands({post.getResidual(), post.getPost(), post.getComb()});
    state.addAttributes(ffn->getAttrs());
    state.addTypes(post.getType());
    // At the mhc_post: every operand of both ops is defined before it.
    rewriter.setInsertionPoint(post);
    Operation *fused = rewriter.create(state);
    rewriter.replaceOp(post, fused->getResults());
    rewriter.eraseOp(ffn);
    return success();
  }
};

struct LLMFuseHyperConnectionsPass
    : public llm::impl::LLMFuseHyperConnectionsPassBase<
          LLMFuseHyperConnectionsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseInputNorm, FuseOutputProjection, FuseFfnResidualWrite>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
