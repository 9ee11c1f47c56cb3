//===- ShardModel.cpp - split the model over tensor/expert-parallel ranks -===//
//
// Part of strata, under the Apache License v2.0.
//
// llm-shard-model: see Passes.td. Rewrites the graph every rank runs for a
// layout of T tensor-parallel and E expert-parallel ranks. Each rewrite is
// anchored on the op whose work is split (llm.kda_attention,
// llm.mla_attention, llm.swiglu_mlp, llm.moe_ffn, llm.embedding,
// llm.lm_head): the projections feeding it and following it get sharded
// weights (`shards` on the llm.weight / llm.expert_weights that each rank
// reads), the split activations and caches get their per-rank types, and an
// llm.all_reduce (partial sums) or llm.all_gather (vocabulary logits) goes
// after the last projection. Everything else (mHC, norms, the indexer, MLA's
// q_a / kv_a projections and latent cache, the router) stays replicated.
// The rewrite assumes the shapes the model DSL emits (models/common) and
// reports any other shape as an error instead of guessing. T = E = 1 leaves
// the module untouched.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

#include "dialects/llm/IR/LLMOps.h"

#define DEBUG_TYPE "llm-shard-model"

namespace mlir::strata::llm {
#define GEN_PASS_DEF_LLMSHARDMODELPASS
#include "dialects/llm/Transforms/Passes.h.inc"
} // namespace mlir::strata::llm

using namespace mlir;
using namespace mlir::strata;
using llm::RankGroup;

namespace {

/// One dimension of a weight split into `parts` over `group`.
struct Split {
  int64_t dim;
  RankGroup group;
  int64_t parts;
};

/// `type` with dimension `dim` set to `size`.
RankedTensorType withDim(Type type, int64_t dim, int64_t size) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(tensor.getShape());
  shape[dim] = size;
  return tensor.clone(shape);
}

/// The logical shape of a weight: the tensor's, or an fp8 weight's data.
ArrayRef<int64_t> weightShape(Type type) {
  if (auto fp8 = dyn_cast<llm::Fp8WeightType>(type))
    return fp8.getWeight().getShape();
  return cast<RankedTensorType>(type).getShape();
}

/// The checkpoint name of a weight op, for messages.
StringRef weightName(Operation *op) {
  if (auto weight = dyn_cast<llm::WeightOp>(op))
    return weight.getName();
  return cast<llm::ExpertWeightsOp>(op).getPattern();
}

/// The per-rank type of a checkpoint value of type `type` under `splits`
/// (an fp8 weight's scales follow its block dimensions).
FailureOr<Type> splitWeightType(Operation *weight, Type type,
                                ArrayRef<Split> splits) {
  auto fp8 = dyn_cast<llm::Fp8WeightType>(type);
  RankedTensorType data = fp8 ? fp8.getWeight() : cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(data.getShape());
  for (const Split &split : splits) {
    if (shape[split.dim] % split.parts != 0)
      return weight->emitError()
             << "llm-shard-model: cannot split dimension " << split.dim
             << " of '" << weightName(weight) << "' (extent "
             << shape[split.dim] << ") into " << split.parts << " parts";
    shape[split.dim] /= split.parts;
  }
  if (!fp8)
    return Type(data.clone(shape));
  int64_t rank = shape.size();
  SmallVector<int64_t> scales(shape);
  scales[rank - 2] = llvm::divideCeil(shape[rank - 2], fp8.getBlockRows());
  scales[rank - 1] = llvm::divideCeil(shape[rank - 1], fp8.getBlockCols());
  return Type(llm::Fp8WeightType::get(type.getContext(), data.clone(shape),
                                      fp8.getScales().clone(scales),
                                      fp8.getBlockRows(), fp8.getBlockCols()));
}

/// Makes `use` (a weight operand) read the rank's part of its checkpoint
/// tensor: a copy of its llm.weight / llm.expert_weights with `shards` and
/// the per-rank type. Splits of one part are dropped.
LogicalResult shardWeight(OpOperand &use, ArrayRef<Split> allSplits) {
  SmallVector<Split> splits;
  for (const Split &split : allSplits)
    if (split.parts > 1)
      splits.push_back(split);
  if (splits.empty())
    return success();
  Operation *weight = use.get().getDefiningOp();
  if (!isa_and_nonnull<llm::WeightOp, llm::ExpertWeightsOp>(weight))
    return use.getOwner()->emitError()
           << "llm-shard-model: operand " << use.getOperandNumber()
           << " is not an llm.weight or llm.expert_weights";
  bool alreadySharded =
      isa<llm::WeightOp>(weight)
          ? cast<llm::WeightOp>(weight).getShards().has_value()
          : cast<llm::ExpertWeightsOp>(weight).getShards().has_value();
  if (alreadySharded)
    return weight->emitError() << "llm-shard-model: '" << weightName(weight)
                               << "' is already sharded";
  FailureOr<Type> type = splitWeightType(weight, use.get().getType(), splits);
  if (failed(type))
    return failure();
  MLIRContext *ctx = weight->getContext();
  SmallVector<Attribute> shards;
  for (const Split &split : splits)
    shards.push_back(
        llm::ShardAttr::get(ctx, split.group, split.dim, split.parts));
  OpBuilder builder(weight);
  builder.setInsertionPointAfter(weight);
  Operation *part = builder.clone(*weight);
  part->getResult(0).setType(*type);
  ArrayAttr shardsAttr = builder.getArrayAttr(shards);
  if (auto experts = dyn_cast<llm::ExpertWeightsOp>(part)) {
    experts.setShardsAttr(shardsAttr);
    experts.setNumExperts(weightShape(*type).front());
  } else {
    cast<llm::WeightOp>(part).setShardsAttr(shardsAttr);
  }
  if (failed(verify(part)))
    return failure();
  use.set(part->getResult(0));
  if (weight->use_empty())
    weight->erase();
  return success();
}

/// Inserts `llm.all_reduce` over `group` after `partial` and makes every
/// other user read the sum.
void reduceAfter(Value partial, RankGroup group, int64_t size) {
  OpBuilder builder(partial.getContext());
  builder.setInsertionPointAfterValue(partial);
  auto reduce = llm::AllReduceOp::create(
      builder, partial.getLoc(), partial.getType(), partial, ValueRange(),
      llm::RankGroupAttr::get(partial.getContext(), group),
      builder.getI64IntegerAttr(size));
  partial.replaceAllUsesExcept(reduce.getResult(), reduce);
}

/// The llm.linear that is the only user of `value`, or an error on `anchor`.
FailureOr<llm::LinearOp> onlyLinearUser(Operation *anchor, Value value,
                                        StringRef what) {
  if (!value.hasOneUse())
    return anchor->emitError() << "llm-shard-model: expected " << what
                               << " to have one user, an llm.linear";
  auto linear = dyn_cast<llm::LinearOp>(*value.user_begin());
  if (!linear || linear.getInput() != value)
    return anchor->emitError()
           << "llm-shard-model: expected " << what << " to feed an llm.linear";
  return linear;
}

/// Splits the rows of the projection producing operand `operand` of
/// `anchor` (a column-parallel llm.linear: `[T, out]` -> `[T, out / T]`).
LogicalResult shardColumnProjection(Operation *anchor, OpOperand &operand,
                                    int64_t parts) {
  auto linear = operand.get().getDefiningOp<llm::LinearOp>();
  if (!linear)
    return anchor->emitError()
           << "llm-shard-model: expected operand " << operand.getOperandNumber()
           << " to be an llm.linear";
  if (!linear.getResult().hasOneUse())
    return anchor->emitError()
           << "llm-shard-model: the projection of operand "
           << operand.getOperandNumber() << " has other users";
  if (failed(shardWeight(linear.getWeightMutable(),
                         {{0, RankGroup::Tensor, parts}})))
    return failure();
  auto type = linear.getResult().getType();
  linear.getResult().setType(
      withDim(type, type.getRank() - 1,
              weightShape(linear.getWeight().getType()).front()));
  return success();
}

/// Splits the input features of the row-parallel projection `linear`
/// (`W : [out, in]` -> `[out, in / T]`) and sums its output over the tensor
/// group.
LogicalResult shardRowProjection(llm::LinearOp linear, int64_t parts) {
  if (failed(shardWeight(linear.getWeightMutable(),
                         {{1, RankGroup::Tensor, parts}})))
    return failure();
  reduceAfter(linear.getResult(), RankGroup::Tensor, parts);
  return success();
}

/// A step-function argument of cache type whose per-rank type is `type`.
LogicalResult setCacheType(Operation *anchor, Value cache, Type type) {
  auto arg = dyn_cast<BlockArgument>(cache);
  if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    return anchor->emitError()
           << "llm-shard-model: expected the cache operand to be an argument "
              "of the step function";
  arg.setType(type);
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// KDA: heads split over the tensor group. q, k, v, f_b, g_b and b_proj are
/// column-parallel, the conv taps, A_log and dt_bias follow their channels,
/// the recurrent and conv states hold the rank's heads, o_proj is
/// row-parallel. f_a / g_a (shared low-rank inputs) and o_norm (per
/// head_dim) stay whole.
LogicalResult shardKda(llm::KdaAttentionOp op, int64_t tp) {
  int64_t heads = op.getHeads();
  if (heads % tp != 0)
    return op.emitError() << "llm-shard-model: " << heads
                          << " KDA heads do not split over tensor-parallel "
                             "size "
                          << tp;
  int64_t local = heads / tp;
  for (OpOperand *operand :
       {&op.getQMutable(), &op.getKMutable(), &op.getVMutable(),
        &op.getForgetMutable(), &op.getBetaMutable(), &op.getGateMutable()})
    if (failed(shardColumnProjection(op, *operand, tp)))
      return failure();
  for (OpOperand *operand :
       {&op.getQConvMutable(), &op.getKConvMutable(), &op.getVConvMutable(),
        &op.getALogMutable(), &op.getDtBiasMutable()})
    if (failed(shardWeight(*operand, {{0, RankGroup::Tensor, tp}})))
      return failure();
  auto state = op.getState().getType();
  auto stateType =
      llm::KdaStateType::get(op.getContext(), local, state.getKeyDim(),
                             state.getValueDim(), state.getElementType());
  auto conv = op.getConvState().getType();
  auto convType =
      llm::ConvStateType::get(op.getContext(), conv.getChannels() / tp,
                              conv.getWidth(), conv.getElementType());
  if (failed(setCacheType(op, op.getState(), stateType)) ||
      failed(setCacheType(op, op.getConvState(), convType)))
    return failure();
  op.setHeads(local);
  op.getStateOut().setType(stateType);
  op.getConvStateOut().setType(convType);
  auto result = op.getResult().getType();
  op.getResult().setType(withDim(result, 1, result.getDimSize(1) / tp));
  FailureOr<llm::LinearOp> oProj =
      onlyLinearUser(op, op.getResult(), "the KDA output");
  if (failed(oProj))
    return failure();
  return shardRowProjection(*oProj, tp);
}

/// MLA: heads split over the tensor group. q_b_proj and kv_b_proj are
/// column-parallel (both are head-major), o_proj row-parallel; q_a, kv_a,
/// their norms, the latent cache and the indexer stay whole on every rank.
LogicalResult shardMla(llm::MlaAttentionOp op, int64_t tp) {
  int64_t heads = op.getHeads();
  if (heads % tp != 0)
    return op.emitError() << "llm-shard-model: " << heads
                          << " MLA heads do not split over tensor-parallel "
                             "size "
                          << tp;
  int64_t local = heads / tp;
  // q {T, H, dq} = expand_shape(linear(q_latent, q_b_proj)).
  auto expand = op.getQ().getDefiningOp<tensor::ExpandShapeOp>();
  auto qb = expand ? expand.getSrc().getDefiningOp<llm::LinearOp>() : nullptr;
  if (!qb || !op.getQ().hasOneUse())
    return op.emitError() << "llm-shard-model: expected q to be the "
                             "reshaped output of its own llm.linear";
  if (failed(shardWeight(qb.getWeightMutable(), {{0, RankGroup::Tensor, tp}})))
    return failure();
  auto flat = qb.getResult().getType();
  qb.getResult().setType(withDim(flat, 1, flat.getDimSize(1) / tp));
  OpBuilder builder(expand);
  SmallVector<OpFoldResult> outputShape = expand.getMixedOutputShape();
  outputShape[1] = builder.getIndexAttr(local);
  auto q = tensor::ExpandShapeOp::create(
      builder, expand.getLoc(), withDim(expand.getType(), 1, local),
      qb.getResult(), expand.getReassociationIndices(), outputShape);
  expand.replaceAllUsesWith(q.getResult());
  expand.erase();
  if (failed(shardWeight(op.getKvBMutable(), {{0, RankGroup::Tensor, tp}})))
    return failure();
  op.setHeads(local);
  op.getResult().setType(withDim(op.getResult().getType(), 1, local));
  // o {T, H*dv} = collapse_shape(attention) -> o_proj.
  if (!op.getResult().hasOneUse())
    return op.emitError() << "llm-shard-model: expected the MLA output to "
                             "have one user, its reshape";
  auto collapse =
      dyn_cast<tensor::CollapseShapeOp>(*op.getResult().user_begin());
  if (!collapse)
    return op.emitError() << "llm-shard-model: expected the MLA output to "
                             "be reshaped to [T, heads * v_head_dim]";
  builder.setInsertionPoint(collapse);
  auto o = tensor::CollapseShapeOp::create(builder, collapse.getLoc(),
                                           op.getResult(),
                                           collapse.getReassociationIndices());
  collapse.replaceAllUsesWith(o.getResult());
  collapse.erase();
  FailureOr<llm::LinearOp> oProj =
      onlyLinearUser(op, o.getResult(), "the MLA output");
  if (failed(oProj))
    return failure();
  return shardRowProjection(*oProj, tp);
}

//===----------------------------------------------------------------------===//
// Feed-forward
//===----------------------------------------------------------------------===//

/// Dense MLP: gate / up column-parallel, down row-parallel (the
/// intermediate dimension split over the tensor group).
LogicalResult shardMlp(llm::SwigluMlpOp op, int64_t tp) {
  if (!op.getStreams().empty())
    return op.emitError() << "llm-shard-model: runs before "
                             "llm-fuse-hyper-connections (found streams)";
  if (failed(shardWeight(op.getGateMutable(), {{0, RankGroup::Tensor, tp}})) ||
      failed(shardWeight(op.getUpMutable(), {{0, RankGroup::Tensor, tp}})) ||
      failed(shardWeight(op.getDownMutable(), {{1, RankGroup::Tensor, tp}})))
    return failure();
  reduceAfter(op.getResult(), RankGroup::Tensor, tp);
  return success();
}

/// MoE: routed experts split over the expert group (dimension 0) and each
/// expert's intermediate dimension over the tensor group; the shared
/// expert's intermediate dimension over all T * E ranks; the router whole.
/// Every rank then holds a partial sum of the output over all ranks, which
/// one all-reduce completes (tokens are replicated on every rank, so no
/// dispatch is needed: docs/Parallel.md).
LogicalResult shardMoe(llm::MoeFfnOp op, int64_t tp, int64_t ep) {
  if (!op.getStreams().empty())
    return op.emitError() << "llm-shard-model: runs before "
                             "llm-fuse-hyper-connections (found streams)";
  int64_t world = tp * ep;
  if (op.getNumExperts() % ep != 0)
    return op.emitError() << "llm-shard-model: " << op.getNumExperts()
                          << " routed experts do not split over "
                             "expert-parallel size "
                          << ep;
  if (failed(shardWeight(op.getGateMutable(), {{0, RankGroup::Expert, ep},
                                               {1, RankGroup::Tensor, tp}})) ||
      failed(shardWeight(op.getUpMutable(), {{0, RankGroup::Expert, ep},
                                             {1, RankGroup::Tensor, tp}})) ||
      failed(shardWeight(op.getDownMutable(), {{0, RankGroup::Expert, ep},
                                               {2, RankGroup::Tensor, tp}})) ||
      failed(shardWeight(op.getSharedGateMutable(),
                         {{0, RankGroup::World, world}})) ||
      failed(shardWeight(op.getSharedUpMutable(),
                         {{0, RankGroup::World, world}})) ||
      failed(shardWeight(op.getSharedDownMutable(),
                         {{1, RankGroup::World, world}})))
    return failure();
  if (ep > 1)
    op.setExpertShardAttr(
        llm::ShardAttr::get(op.getContext(), RankGroup::Expert, 0, ep));
  reduceAfter(op.getResult(), RankGroup::World, world);
  return success();
}

//===----------------------------------------------------------------------===//
// Vocabulary
//===----------------------------------------------------------------------===//

/// Embedding: the table's rows split over the tensor group; each rank looks
/// up the ids in its rows (zero otherwise) and the all-reduce adds the one
/// non-zero row.
LogicalResult shardEmbedding(llm::EmbeddingOp op, int64_t tp) {
  if (failed(shardWeight(op.getTableMutable(), {{0, RankGroup::Tensor, tp}})))
    return failure();
  op.setVocabShardAttr(
      llm::ShardAttr::get(op.getContext(), RankGroup::Tensor, 0, tp));
  reduceAfter(op.getResult(), RankGroup::Tensor, tp);
  return success();
}

/// LM head: the weight's rows (vocabulary) split over the tensor group;
/// each rank computes its logits columns and an all-gather concatenates
/// them in rank order.
LogicalResult shardLmHead(llm::LmHeadOp op, int64_t tp) {
  if (failed(shardWeight(op.getWeightMutable(), {{0, RankGroup::Tensor, tp}})))
    return failure();
  Value logits = op.getResult();
  auto full = cast<RankedTensorType>(logits.getType());
  logits.setType(withDim(full, 1, full.getDimSize(1) / tp));
  OpBuilder builder(op);
  builder.setInsertionPointAfter(op);
  auto gather = llm::AllGatherOp::create(
      builder, op.getLoc(), full, logits,
      llm::RankGroupAttr::get(op.getContext(), RankGroup::Tensor),
      builder.getI64IntegerAttr(tp), builder.getI64IntegerAttr(1));
  logits.replaceAllUsesExcept(gather.getResult(), gather);
  return success();
}

//===----------------------------------------------------------------------===//
// --llm-shard-model
//===----------------------------------------------------------------------===//

struct LLMShardModelPass
    : public llm::impl::LLMShardModelPassBase<LLMShardModelPass> {
  using Base::Base;

  void runOnOperation() override {
    int64_t tp = tensorParallelSize, ep = expertParallelSize;
    ModuleOp module = getOperation();
    if (tp < 1 || ep < 1) {
      module.emitError() << "llm-shard-model: expected tensor-parallel-size "
                            "and expert-parallel-size >= 1, got "
                         << tp << " and " << ep;
      return signalPassFailure();
    }
    if (tp == 1 && ep == 1)
      return;
    // Collect first: the rewrites create and erase ops.
    SmallVector<Operation *> anchors;
    module.walk([&](Operation *op) {
      if (isa<llm::KdaAttentionOp, llm::MlaAttentionOp, llm::SwigluMlpOp,
              llm::MoeFfnOp, llm::EmbeddingOp, llm::LmHeadOp>(op))
        anchors.push_back(op);
    });
    for (Operation *anchor : anchors) {
      LogicalResult result = success();
      if (auto op = dyn_cast<llm::MoeFfnOp>(anchor))
        result = shardMoe(op, tp, ep);
      else if (tp == 1)
        continue;
      else if (auto op = dyn_cast<llm::KdaAttentionOp>(anchor))
        result = shardKda(op, tp);
      else if (auto op = dyn_cast<llm::MlaAttentionOp>(anchor))
        result = shardMla(op, tp);
      else if (auto op = dyn_cast<llm::SwigluMlpOp>(anchor))
        result = shardMlp(op, tp);
      else if (auto op = dyn_cast<llm::EmbeddingOp>(anchor))
        result = shardEmbedding(op, tp);
      else if (auto op = dyn_cast<llm::LmHeadOp>(anchor))
        result = shardLmHead(op, tp);
      if (failed(result))
        return signalPassFailure();
    }
    // Cache arguments and results changed type: the signatures follow.
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Operation *terminator = func.getBody().back().getTerminator();
      func.setFunctionType(FunctionType::get(
          &getContext(), func.getBody().front().getArgumentTypes(),
          terminator->getOperandTypes()));
    }
  }
};

} // namespace
