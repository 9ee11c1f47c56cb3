//===- LLMOps.cpp - llm dialect op verifiers --------------------*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Verifiers of the `llm` ops: every shape and attribute rule stated in the
// op descriptions of LLMOps.td. Dynamic dimensions (`?`) agree with any size;
// static sizes must match exactly. Messages follow style.md rule 7 (lower
// case, no final period, expected vs found with values); each message has a
// case in test/Dialect/llm/invalid.mlir, which
// test/Dialect/llm/verifier-coverage.test enforces.
//
//===----------------------------------------------------------------------===//

#include "dialects/llm/IR/LLMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::strata::llm;

#define GET_OP_CLASSES
#include "dialects/llm/IR/LLMOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

/// True when two sizes agree: equal, or either one dynamic.
bool sizesAgree(int64_t a, int64_t b) { return a == kDyn || b == kDyn || a == b; }

/// Prints a shape as `4x?x128`.
std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (d == kDyn)
          os << "?";
        else
          os << d;
      },
      "x");
  return s;
}

/// The logical shape of a weight operand: the tensor shape, or the shape of
/// the fp8 data tensor of an `!llm.fp8_weight`.
ArrayRef<int64_t> weightShape(Type type) {
  if (auto fp8 = dyn_cast<Fp8WeightType>(type))
    return fp8.getWeight().getShape();
  return cast<ShapedType>(type).getShape();
}

/// Checks that `shape` (of the operand or result called `what`) has the
/// shape `expected`, where a dynamic expected size matches anything. Emits
/// "expected <what> shape AxB, got CxD".
LogicalResult checkShape(Operation *op, StringRef what, ArrayRef<int64_t> shape,
                         ArrayRef<int64_t> expected) {
  bool ok = shape.size() == expected.size() &&
            llvm::all_of(llvm::zip(shape, expected), [](auto pair) {
              return sizesAgree(std::get<0>(pair), std::get<1>(pair));
            });
  if (ok)
    return success();
  return op->emitOpError() << "expected " << what << " shape "
                           << shapeStr(expected) << ", got " << shapeStr(shape);
}

LogicalResult checkShape(Operation *op, StringRef what, Value value,
                         ArrayRef<int64_t> expected) {
  return checkShape(op, what, weightShape(value.getType()), expected);
}

/// Checks the rank of `value`. Emits "expected <what> rank N, got M".
LogicalResult checkRank(Operation *op, StringRef what, Value value,
                        int64_t rank) {
  int64_t found = weightShape(value.getType()).size();
  if (found == rank)
    return success();
  return op->emitOpError() << "expected " << what << " rank " << rank
                           << ", got " << found;
}

/// Checks that an attribute is strictly positive. Emits
/// "expected <what> > 0, got V".
template <typename T>
LogicalResult checkPositive(Operation *op, StringRef what, T value) {
  if (value > 0)
    return success();
  return op->emitOpError() << "expected " << what << " > 0, got " << value;
}

/// Checks that two types are identical. Emits
/// "expected <what> type T, got U".
LogicalResult checkSameType(Operation *op, StringRef what, Type found,
                            Type expected) {
  if (found == expected)
    return success();
  return op->emitOpError() << "expected " << what << " type " << expected
                           << ", got " << found;
}

/// The batch metadata every cache-addressing op takes: `positions : [T]`,
/// `seq_starts : [N+1]`, optional `slots : [N]`, optional
/// `block_table : [N, pages]`.
LogicalResult checkMetadata(Operation *op, int64_t tokens, Value positions,
                            Value seqStarts, Value slots, Value blockTable) {
  if (positions && failed(checkShape(op, "positions", positions, {tokens})))
    return failure();
  if (failed(checkRank(op, "seq_starts", seqStarts, 1)))
    return failure();
  if (slots && failed(checkRank(op, "slots", slots, 1)))
    return failure();
  if (blockTable && failed(checkRank(op, "block_table", blockTable, 2)))
    return failure();
  return success();
}

/// The leading (token) size of a ranked value, or kDyn.
int64_t tokensOf(Value value) {
  auto shape = cast<ShapedType>(value.getType()).getShape();
  return shape.empty() ? kDyn : shape.front();
}

/// Element type of a shaped value.
Type elementTypeOf(Value value) {
  return cast<ShapedType>(value.getType()).getElementType();
}
} // namespace

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

/// Checks that a plain-tensor checkpoint value has a static shape.
static LogicalResult checkStaticCheckpoint(Operation *op, Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || tensor.hasStaticShape())
    return success();
  return op->emitOpError() << "expected a static checkpoint tensor shape, got "
                           << type;
}

/// Checks the `shards` of a checkpoint value: each inside the rank, at most
/// one per dimension, and on a block dimension of an fp8 weight an extent
/// that is a multiple or a divisor of the block (so that every part reads
/// whole scale rows, or lies inside one block).
static LogicalResult verifyShards(Operation *op,
                                  std::optional<ArrayAttr> shards, Type type) {
  if (!shards)
    return success();
  ArrayRef<int64_t> shape = weightShape(type);
  int64_t rank = shape.size();
  llvm::SmallDenseSet<int64_t> seen;
  for (auto shard : shards->getAsRange<ShardAttr>()) {
    int64_t dim = shard.getDim();
    if (dim >= rank)
      return op->emitOpError()
             << "expected shard dimension < rank " << rank << ", got " << dim;
    if (!seen.insert(dim).second)
      return op->emitOpError()
             << "expected at most one shard per dimension, got two of "
                "dimension "
             << dim;
    auto fp8 = dyn_cast<Fp8WeightType>(type);
    if (!fp8 || dim < rank - 2)
      continue;
    int64_t block = dim == rank - 2 ? fp8.getBlockRows() : fp8.getBlockCols();
    int64_t extent = shape[dim];
    if (extent % block != 0 && block % extent != 0)
      return op->emitOpError()
             << "expected sharded fp8 extent " << extent << " of dimension "
             << dim << " to be a multiple or a divisor of the block size "
             << block;
  }
  return success();
}

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError() << "expected a non-empty checkpoint tensor name";
  if (failed(checkStaticCheckpoint(*this, getType())))
    return failure();
  return verifyShards(*this, getShards(), getType());
}

LogicalResult ExpertWeightsOp::verify() {
  StringRef pattern = getPattern();
  size_t count = 0;
  for (size_t pos = pattern.find("{e}"); pos != StringRef::npos;
       pos = pattern.find("{e}", pos + 3))
    ++count;
  if (count != 1)
    return emitOpError() << "expected exactly one '{e}' in the name pattern, got "
                         << count;
  if (failed(checkStaticCheckpoint(*this, getType())) ||
      failed(checkRank(*this, "stacked expert weight", getResult(), 3)))
    return failure();
  int64_t leading = weightShape(getType()).front();
  if (leading != static_cast<int64_t>(getNumExperts()))
    return emitOpError() << "expected leading dimension num_experts "
                         << getNumExperts() << ", got " << leading;
  return verifyShards(*this, getShards(), getType());
}

//===----------------------------------------------------------------------===//
// Embedding, norms, linears, LM head
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (failed(checkRank(*this, "ids", getIds(), 1)) ||
      failed(checkRank(*this, "table", getTable(), 2)))
    return failure();
  auto table = getTable().getType().getShape();
  if (failed(checkShape(*this, "result", getResult(),
                        {tokensOf(getIds()), table[1]})))
    return failure();
  if (auto shard = getVocabShardAttr(); shard && shard.getDim() != 0)
    return emitOpError() << "expected vocab_shard on dimension 0, got "
                         << shard.getDim();
  // f32 rows from a bf16 table: the exact widening of the f32 mode.
  if (elementTypeOf(getResult()).isF32())
    return success();
  return checkSameType(*this, "result element", elementTypeOf(getResult()),
                       elementTypeOf(getTable()));
}

LogicalResult PositionMaskOp::verify() {
  if (failed(checkShape(*this, "positions", getPositions(),
                        {tokensOf(getInput())})))
    return failure();
  return checkSameType(*this, "result", getResult().getType(),
                       getInput().getType());
}

/// Checks `weight : [d]` against the last dimension `d` of `input`.
static LogicalResult checkNormParam(Operation *op, StringRef what, Value param,
                                    Value input) {
  auto shape = cast<ShapedType>(input.getType()).getShape();
  if (shape.empty())
    return op->emitOpError() << "expected a ranked input with rank >= 1";
  return checkShape(op, what, param, {shape.back()});
}

LogicalResult RmsNormOp::verify() {
  if (failed(checkPositive(*this, "eps", getEps().convertToFloat())))
    return failure();
  if (getWeight() &&
      failed(checkNormParam(*this, "weight", getWeight(), getInput())))
    return failure();
  if (getGate()) {
    if (!getWeight())
      return emitOpError() << "expected a weight with the gate (gated norm)";
    if (failed(checkShape(*this, "gate", getGate(),
                          getInput().getType().getShape())))
      return failure();
  }
  return checkShape(*this, "result", getResult(),
                    getInput().getType().getShape());
}

LogicalResult LayerNormOp::verify() {
  if (failed(checkPositive(*this, "eps", getEps().convertToFloat())) ||
      failed(checkNormParam(*this, "weight", getWeight(), getInput())) ||
      failed(checkNormParam(*this, "bias", getBias(), getInput())))
    return failure();
  return checkShape(*this, "result", getResult(),
                    getInput().getType().getShape());
}

LogicalResult LinearOp::verify() {
  if (failed(checkRank(*this, "weight [out, in]", getWeight(), 2)))
    return failure();
  auto w = weightShape(getWeight().getType());
  auto x = getInput().getType().getShape();
  if (x.empty())
    return emitOpError() << "expected a ranked input with rank >= 1";
  if (!sizesAgree(x.back(), w[1]))
    return emitOpError() << "expected input features " << w[1]
                         << " (weight in), got " << x.back();
  SmallVector<int64_t> expected(x.drop_back());
  expected.push_back(w[0]);
  return checkShape(*this, "result", getResult(), expected);
}

LogicalResult LmHeadOp::verify() {
  if (failed(checkRank(*this, "input", getInput(), 2)) ||
      failed(checkRank(*this, "weight [out, in]", getWeight(), 2)) ||
      failed(checkRank(*this, "rows", getRows(), 1)))
    return failure();
  auto w = weightShape(getWeight().getType());
  if (!sizesAgree(getInput().getType().getShape()[1], w[1]))
    return emitOpError() << "expected input features " << w[1]
                         << " (weight in), got "
                         << getInput().getType().getShape()[1];
  return checkShape(*this, "result", getResult(), {tokensOf(getRows()), w[0]});
}

LogicalResult ArgmaxOp::verify() {
  if (failed(checkRank(*this, "input", getInput(), 2)))
    return failure();
  int64_t vocab = getInput().getType().getShape()[1];
  if (!ShapedType::isDynamic(vocab) && (vocab < 1 || vocab >= (1 << 24)))
    return emitOpError() << "expected 1 <= vocab < 2^24 (indices exact in "
                            "f32), got "
                         << vocab;
  return checkShape(*this, "result", getResult(), {tokensOf(getInput())});
}

//===----------------------------------------------------------------------===//
// Hyper-connections
//===----------------------------------------------------------------------===//

/// Checks `residual : [T, hc_mult, D]`; the stream count must be hc_mult.
static LogicalResult checkStreams(Operation *op, Value residual,
                                  int64_t hcMult) {
  if (failed(checkPositive(op, "hc_mult", hcMult)) ||
      failed(checkRank(op, "residual streams", residual, 3)))
    return failure();
  int64_t streams = weightShape(residual.getType())[1];
  if (streams != hcMult)
    return op->emitOpError() << "expected stream count hc_mult " << hcMult
                             << ", got " << streams;
  return success();
}

LogicalResult HcExpandOp::verify() {
  if (failed(checkRank(*this, "input", getInput(), 2)) ||
      failed(checkStreams(*this, getResult(), getHcMult())))
    return failure();
  auto x = getInput().getType().getShape();
  return checkShape(*this, "result", getResult(),
                    {x[0], static_cast<int64_t>(getHcMult()), x[1]});
}

LogicalResult HcCollapseOp::verify() {
  if (failed(checkStreams(*this, getInput(), getHcMult())))
    return failure();
  auto r = getInput().getType().getShape();
  return checkShape(*this, "result", getResult(), {r[0], r[2]});
}

LogicalResult MhcPreOp::verify() {
  int64_t h = getHcMult();
  if (failed(checkStreams(*this, getResidual(), h)))
    return failure();
  if (failed(checkPositive(*this, "sinkhorn_iters", getSinkhornIters())) ||
      failed(checkPositive(*this, "hc_eps", getHcEps().convertToFloat())) ||
      failed(checkPositive(*this, "norm_eps", getNormEps().convertToFloat())))
    return failure();
  auto r = getResidual().getType().getShape();
  int64_t t = r[0], d = r[2];
  int64_t mixes = (2 + h) * h;
  int64_t flat = d == kDyn ? kDyn : h * d;
  if (failed(checkShape(*this, "fn", getFn(), {mixes, flat})) ||
      failed(checkShape(*this, "base", getBase(), {mixes})) ||
      failed(checkShape(*this, "scale", getScale(), {3})) ||
      failed(checkShape(*this, "result", getResult(), {t, d})) ||
      failed(checkShape(*this, "post", getPost(), {t, h})) ||
      failed(checkShape(*this, "comb", getComb(), {t, h, h})))
    return failure();
  if (bool(getXNormWeight()) != getXNormEps().has_value())
    return emitOpError()
           << "expected x_norm weight and x_norm_eps together or neither";
  if (getXNormWeight() &&
      (failed(checkShape(*this, "x_norm weight", getXNormWeight(), {d})) ||
       failed(checkPositive(*this, "x_norm_eps",
                            getXNormEps()->convertToFloat()))))
    return failure();
  return success();
}

LogicalResult MhcPostOp::verify() {
  int64_t h = getHcMult();
  if (failed(checkStreams(*this, getResidual(), h)))
    return failure();
  auto r = getResidual().getType().getShape();
  int64_t t = r[0];
  int64_t in = r[2];
  if (Value projection = getProjection()) {
    // y = round(input . W^T): W is [D, K], the input [T, K].
    if (failed(checkRank(*this, "projection weight [out, in]", projection, 2)))
      return failure();
    auto w = weightShape(projection.getType());
    if (!sizesAgree(w[0], r[2]))
      return emitOpError() << "expected projection weight out " << r[2]
                           << " (stream width), got " << w[0];
    in = w[1];
  }
  if (failed(checkShape(*this, "input", getInput(), {t, in})) ||
      failed(checkShape(*this, "post", getPost(), {t, h})) ||
      failed(checkShape(*this, "comb", getComb(), {t, h, h})))
    return failure();
  return checkShape(*this, "result", getResult(), r);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult KdaAttentionOp::verify() {
  int64_t h = getHeads(), d = getHeadDim(), k = getConvKernel();
  if (failed(checkPositive(*this, "heads", h)) ||
      failed(checkPositive(*this, "head_dim", d)) ||
      failed(checkPositive(*this, "conv_kernel", k)) ||
      failed(checkPositive(*this, "l2_eps", getL2Eps().convertToFloat())) ||
      failed(checkPositive(*this, "q_scale", getQScale().convertToFloat())) ||
      failed(checkPositive(*this, "norm_eps", getNormEps().convertToFloat())))
    return failure();
  if (getGateLowerBound().convertToFloat() >= 0)
    return emitOpError() << "expected gate_lower_bound < 0, got "
                         << getGateLowerBound().convertToFloat();
  if (getMode() == KdaMode::Chunked &&
      failed(checkPositive(*this, "chunk_size", getChunkSize())))
    return failure();
  int64_t p = h * d;
  int64_t t = tokensOf(getQ());
  if (failed(checkShape(*this, "q", getQ(), {t, p})) ||
      failed(checkShape(*this, "k", getK(), {t, p})) ||
      failed(checkShape(*this, "v", getV(), {t, p})) ||
      failed(checkShape(*this, "forget", getForget(), {t, p})) ||
      failed(checkShape(*this, "beta", getBeta(), {t, h})) ||
      failed(checkShape(*this, "gate", getGate(), {t, p})) ||
      failed(checkShape(*this, "q_conv", getQConv(), {p, 1, k})) ||
      failed(checkShape(*this, "k_conv", getKConv(), {p, 1, k})) ||
      failed(checkShape(*this, "v_conv", getVConv(), {p, 1, k})) ||
      failed(checkShape(*this, "a_log", getALog(), {h})) ||
      failed(checkShape(*this, "dt_bias", getDtBias(), {p})) ||
      failed(checkShape(*this, "o_norm", getONorm(), {d})) ||
      failed(checkShape(*this, "result", getResult(), {t, p})))
    return failure();
  KdaStateType state = getState().getType();
  if (state.getHeads() != h || state.getKeyDim() != d ||
      state.getValueDim() != d)
    return emitOpError() << "expected kda state [heads, key_dim, value_dim] = ["
                         << h << ", " << d << ", " << d << "], got ["
                         << state.getHeads() << ", " << state.getKeyDim()
                         << ", " << state.getValueDim() << "]";
  ConvStateType conv = getConvState().getType();
  if (conv.getChannels() != 3 * p || conv.getWidth() != k - 1)
    return emitOpError() << "expected conv state channels " << 3 * p
                         << " (3 * heads * head_dim) and width " << k - 1
                         << " (conv_kernel - 1), got channels "
                         << conv.getChannels() << " and width "
                         << conv.getWidth();
  if (failed(checkSameType(*this, "state_out", getStateOut().getType(), state)) ||
      failed(checkSameType(*this, "conv_state_out",
                           getConvStateOut().getType(), conv)))
    return failure();
  if (failed(checkMetadata(*this, t, getPositions(), getSeqStarts(),
                           getSrcSlots(), Value())) ||
      failed(checkRank(*this, "dst_slots", getDstSlots(), 1)))
    return failure();
  if (getTokenSlots() &&
      failed(checkShape(*this, "token_slots", getTokenSlots(), {t})))
    return failure();
  return success();
}

LogicalResult MlaAttentionOp::verify() {
  int64_t h = getHeads(), dq = getQkHeadDim(), dv = getVHeadDim(),
          r = getKvLoraRank();
  if (failed(checkPositive(*this, "heads", h)) ||
      failed(checkPositive(*this, "qk_head_dim", dq)) ||
      failed(checkPositive(*this, "v_head_dim", dv)) ||
      failed(checkPositive(*this, "kv_lora_rank", r)))
    return failure();
  double expectedScale = 1.0 / std::sqrt(static_cast<double>(dq));
  double scale = getSoftmaxScale().convertToDouble();
  if (std::abs(scale - expectedScale) > 1e-6 * expectedScale)
    return emitOpError() << "expected softmax_scale " << expectedScale
                         << " (qk_head_dim^-1/2), got " << scale;
  LatentPoolType cache = getCache().getType();
  if (cache.getWidth() != r)
    return emitOpError() << "expected kv_lora_rank " << r
                         << " to match the cache latent width, got "
                         << cache.getWidth();
  int64_t t = tokensOf(getQ());
  if (failed(checkShape(*this, "q", getQ(), {t, h, dq})) ||
      failed(checkShape(*this, "kv_b", getKvB(), {h * (dq + dv), r})) ||
      failed(checkRank(*this, "selection", getSelection(), 2)) ||
      failed(checkShape(*this, "selection", getSelection(), {t, kDyn})) ||
      failed(checkShape(*this, "counts", getCounts(), {t})) ||
      failed(checkShape(*this, "result", getResult(), {t, h, dv})))
    return failure();
  return checkMetadata(*this, t, Value(), getSeqStarts(), Value(),
                       getBlockTable());
}

//===----------------------------------------------------------------------===//
// Indexer
//===----------------------------------------------------------------------===//

LogicalResult KpoolCompressOp::verify() {
  int64_t kpool = getKpool();
  if (failed(checkPositive(*this, "kpool", kpool)))
    return failure();
  TailRingType ring = getRing().getType();
  if (ring.getDepth() < kpool)
    return emitOpError() << "expected tail ring depth >= kpool " << kpool
                         << ", got " << ring.getDepth();
  int64_t t = tokensOf(getK()), w = ring.getWidth();
  if (failed(checkShape(*this, "k", getK(), {t, w})) ||
      failed(checkShape(*this, "g", getG(), {t, w})) ||
      failed(checkShape(*this, "ape", getApe(), {kpool, w})) ||
      failed(checkShape(*this, "result", getResult(), {t, w})))
    return failure();
  return checkMetadata(*this, t, getPositions(), getSeqStarts(), getSlots(),
                       Value());
}

LogicalResult KpoolIndexerOp::verify() {
  int64_t topk = getTopk(), kpool = getKpool(), h = getHeads(),
          d = getHeadDim();
  if (failed(checkPositive(*this, "topk", topk)) ||
      failed(checkPositive(*this, "kpool", kpool)) ||
      failed(checkPositive(*this, "heads", h)) ||
      failed(checkPositive(*this, "head_dim", d)) ||
      failed(checkPositive(*this, "scale", getScale().convertToFloat())))
    return failure();
  if (topk % kpool != 0)
    return emitOpError() << "expected topk " << topk
                         << " to be divisible by kpool " << kpool;
  IndexPoolType pool = getPool().getType();
  if (pool.getKpool() != kpool)
    return emitOpError() << "expected index pool kpool " << kpool << ", got "
                         << pool.getKpool();
  if (pool.getWidth() != d)
    return emitOpError() << "expected index pool width head_dim " << d
                         << ", got " << pool.getWidth();
  int64_t t = tokensOf(getQ());
  if (failed(checkShape(*this, "q", getQ(), {t, h, d})) ||
      failed(checkShape(*this, "weights", getWeights(), {t, h})) ||
      failed(checkRank(*this, "selection", getSelection(), 2)) ||
      failed(checkShape(*this, "counts", getCounts(), {t})))
    return failure();
  int64_t width = getSelection().getType().getShape()[1];
  if (width != kDyn && width < topk + kpool - 1)
    return emitOpError() << "expected selection width >= topk + kpool - 1 = "
                         << topk + kpool - 1 << ", got " << width;
  if (failed(checkShape(*this, "selection", getSelection(), {t, width})))
    return failure();
  return checkMetadata(*this, t, getPositions(), getSeqStarts(), Value(),
                       getBlockTable());
}

//===----------------------------------------------------------------------===//
// Paged caches
//===----------------------------------------------------------------------===//

LogicalResult LatentCacheWriteOp::verify() {
  LatentPoolType cache = getCache().getType();
  int64_t t = tokensOf(getLatent());
  if (failed(checkShape(*this, "latent", getLatent(), {t, cache.getWidth()})) ||
      failed(checkSameType(*this, "result", getResult().getType(), cache)))
    return failure();
  return checkMetadata(*this, t, getPositions(), getSeqStarts(), Value(),
                       getBlockTable());
}

LogicalResult LatentCacheGatherOp::verify() {
  if (failed(checkRank(*this, "ids", getIds(), 2)))
    return failure();
  auto ids = getIds().getType().getShape();
  if (failed(checkShape(*this, "result", getResult(),
                        {ids[0], ids[1], getCache().getType().getWidth()})))
    return failure();
  return checkMetadata(*this, ids[0], Value(), getSeqStarts(), Value(),
                       getBlockTable());
}

LogicalResult IndexCacheWriteOp::verify() {
  IndexPoolType pool = getPool().getType();
  int64_t t = tokensOf(getKeys());
  if (failed(checkShape(*this, "keys", getKeys(), {t, pool.getWidth()})) ||
      failed(checkSameType(*this, "result", getResult().getType(), pool)))
    return failure();
  return checkMetadata(*this, t, getPositions(), getSeqStarts(), Value(),
                       getBlockTable());
}

LogicalResult IndexCacheGatherOp::verify() {
  if (failed(checkRank(*this, "pool_ids", getPoolIds(), 2)))
    return failure();
  auto ids = getPoolIds().getType().getShape();
  if (failed(checkShape(*this, "result", getResult(),
                        {ids[0], ids[1], getPool().getType().getWidth()})))
    return failure();
  return checkMetadata(*this, ids[0], Value(), getSeqStarts(), Value(),
                       getBlockTable());
}

LogicalResult TailRingWriteOp::verify() {
  TailRingType ring = getRing().getType();
  int64_t t = tokensOf(getK());
  if (failed(checkShape(*this, "k", getK(), {t, ring.getWidth()})) ||
      failed(checkShape(*this, "g", getG(), {t, ring.getWidth()})) ||
      failed(checkSameType(*this, "result", getResult().getType(), ring)))
    return failure();
  return checkMetadata(*this, t, getPositions(), getSeqStarts(), getSlots(),
                       Value());
}

LogicalResult SharedSelectionWriteOp::verify() {
  SharedSelectionType cache = getCache().getType();
  int64_t t = tokensOf(getSelection());
  if (failed(checkShape(*this, "selection", getSelection(),
                        {t, cache.getWidth()})) ||
      failed(checkShape(*this, "counts", getCounts(), {t})) ||
      failed(checkSameType(*this, "result", getResult().getType(), cache)))
    return failure();
  return checkMetadata(*this, t, Value(), getSeqStarts(), getSlots(),
                       Value());
}

LogicalResult SharedSelectionReadOp::verify() {
  SharedSelectionType cache = getCache().getType();
  int64_t t = tokensOf(getSelection());
  if (failed(checkShape(*this, "selection", getSelection(),
                        {t, cache.getWidth()})) ||
      failed(checkShape(*this, "counts", getCounts(), {t})) ||
      failed(checkRank(*this, "rows", getRows(), 1)))
    return failure();
  return checkMetadata(*this, t, getPositions(), getSeqStarts(), getSlots(),
                       Value());
}

LogicalResult TailRingGatherOp::verify() {
  TailRingType ring = getRing().getType();
  if (failed(checkRank(*this, "slots", getSlots(), 1)) ||
      failed(checkShape(*this, "result", getResult(),
                        {tokensOf(getSlots()), 2, ring.getDepth(),
                         ring.getWidth()})))
    return failure();
  return checkSameType(*this, "result element", elementTypeOf(getResult()),
                       ring.getElementType());
}

//===----------------------------------------------------------------------===//
// Feed-forward
//===----------------------------------------------------------------------===//

/// Checks the three projections of a clamped SwiGLU: `gate, up : [lead..., I,
/// D]`, `down : [lead..., D, I]` (`lead` is `[E]` for stacked experts).
static LogicalResult checkSwiglu(Operation *op, StringRef prefix, Value gate,
                                 Value up, Value down,
                                 ArrayRef<int64_t> lead, int64_t hidden) {
  int64_t rank = lead.size() + 2;
  std::string gateName = (prefix + "gate").str();
  std::string upName = (prefix + "up").str();
  std::string downName = (prefix + "down").str();
  if (failed(checkRank(op, gateName, gate, rank)))
    return failure();
  int64_t inter = weightShape(gate.getType())[rank - 2];
  SmallVector<int64_t> gateShape(lead), downShape(lead);
  gateShape.append({inter, hidden});
  downShape.append({hidden, inter});
  if (failed(checkShape(op, gateName, gate, gateShape)) ||
      failed(checkShape(op, upName, up, gateShape)) ||
      failed(checkShape(op, downName, down, downShape)))
    return failure();
  return success();
}

/// The result of an FFN op of input `x : [T, D]`: `[T, D]`, or with
/// `streams` (R, post, comb) the residual streams `[T, H, D]` of R.
static LogicalResult checkFfnResult(Operation *op, ArrayRef<int64_t> x,
                                    ValueRange streams, Value result) {
  if (streams.empty())
    return checkShape(op, "result", result, x);
  if (streams.size() != 3)
    return op->emitOpError()
           << "expected streams (residual, post, comb), got "
           << streams.size() << " values";
  Value r = streams[0];
  if (failed(checkRank(op, "residual streams", r, 3)))
    return failure();
  auto rs = weightShape(r.getType());
  int64_t h = rs[1];
  if (!cast<ShapedType>(streams[1].getType()).getElementType().isF32() ||
      !cast<ShapedType>(streams[2].getType()).getElementType().isF32())
    return op->emitOpError() << "expected f32 post and comb";
  if (failed(checkShape(op, "residual streams", r, {x[0], h, x[1]})) ||
      failed(checkShape(op, "post", streams[1], {x[0], h})) ||
      failed(checkShape(op, "comb", streams[2], {x[0], h, h})))
    return failure();
  return checkShape(op, "result", result, rs);
}

LogicalResult SwigluMlpOp::verify() {
  if (failed(checkPositive(*this, "swiglu_limit",
                           getSwigluLimit().convertToFloat())) ||
      failed(checkRank(*this, "input", getInput(), 2)))
    return failure();
  auto x = getInput().getType().getShape();
  if (failed(checkSwiglu(*this, "", getGate(), getUp(), getDown(), {}, x[1])))
    return failure();
  return checkFfnResult(*this, x, getStreams(), getResult());
}

LogicalResult MoeFfnOp::verify() {
  int64_t e = getNumExperts(), k = getTopK(), groups = getNGroup(),
          topkGroup = getTopkGroup();
  if (failed(checkPositive(*this, "num_experts", e)) ||
      failed(checkPositive(*this, "swiglu_limit",
                           getSwigluLimit().convertToFloat())) ||
      failed(checkPositive(*this, "routed_scaling_factor",
                           getRoutedScalingFactor().convertToFloat())))
    return failure();
  if (k < 1 || k > e)
    return emitOpError() << "expected top_k in [1, num_experts " << e
                         << "], got " << k;
  if (groups < 1 || e % groups != 0)
    return emitOpError() << "expected n_group to divide num_experts " << e
                         << ", got " << groups;
  if (topkGroup < 1 || topkGroup > groups)
    return emitOpError() << "expected topk_group in [1, n_group " << groups
                         << "], got " << topkGroup;
  if (getRenormEps().convertToFloat() < 0)
    return emitOpError() << "expected renorm_eps >= 0, got "
                         << getRenormEps().convertToFloat();
  if (failed(checkRank(*this, "input", getInput(), 2)))
    return failure();
  // The stacked experts are the rank's part of the experts.
  int64_t local = e;
  if (ShardAttr shard = getExpertShardAttr()) {
    if (shard.getDim() != 0)
      return emitOpError() << "expected expert_shard on dimension 0, got "
                           << shard.getDim();
    if (e % shard.getParts() != 0)
      return emitOpError() << "expected expert_shard parts to divide "
                              "num_experts "
                           << e << ", got " << shard.getParts();
    local = e / shard.getParts();
  }
  auto x = getInput().getType().getShape();
  if (failed(checkShape(*this, "router", getRouter(), {e, x[1]})) ||
      failed(checkShape(*this, "correction_bias", getCorrectionBias(), {e})) ||
      failed(checkSwiglu(*this, "expert ", getGate(), getUp(), getDown(),
                         {local}, x[1])) ||
      failed(checkSwiglu(*this, "shared_", getSharedGate(), getSharedUp(),
                         getSharedDown(), {}, x[1])))
    return failure();
  if (getFp8ExpertActivations()) {
    auto gate = dyn_cast<Fp8WeightType>(getGate().getType());
    auto up = dyn_cast<Fp8WeightType>(getUp().getType());
    auto down = dyn_cast<Fp8WeightType>(getDown().getType());
    if (!gate || !up || !down)
      return emitOpError("fp8_expert_activations needs fp8 block-scaled "
                         "expert weights (gate, up and down)");
    if (gate.getBlockCols() != up.getBlockCols())
      return emitOpError("fp8_expert_activations needs gate and up to share "
                         "their K block, got ")
             << gate.getBlockCols() << " and " << up.getBlockCols();
  }
  return checkFfnResult(*this, x, getStreams(), getResult());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (failed(checkPositive(*this, "group_size", getGroupSize())))
    return failure();
  if (getStreams().empty())
    return checkSameType(*this, "result", getResult().getType(),
                         getInput().getType());
  if (failed(checkRank(*this, "reduced input", getInput(), 2)))
    return failure();
  return checkFfnResult(*this, getInput().getType().getShape(), getStreams(),
                        getResult());
}

LogicalResult AllGatherOp::verify() {
  if (failed(checkPositive(*this, "group_size", getGroupSize())))
    return failure();
  RankedTensorType input = getInput().getType();
  int64_t rank = input.getRank(), dim = getDim();
  if (dim < 0 || dim >= rank)
    return emitOpError() << "expected gather dim in [0, " << rank << "), got "
                         << dim;
  SmallVector<int64_t> expected(input.getShape());
  if (expected[dim] != kDyn)
    expected[dim] *= getGroupSize();
  if (failed(checkShape(*this, "gathered result", getResult(), expected)))
    return failure();
  return checkSameType(*this, "gathered element", elementTypeOf(getResult()),
                       elementTypeOf(getInput()));
}
