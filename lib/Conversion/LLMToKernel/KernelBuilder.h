//===- KernelBuilder.h - shared helpers of the llm kernel lowering -*- C++ -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// What every op group of convert-llm-to-kernel shares:
//  * the memref form of llm values (tensors, caches) as kernel arguments;
//  * outlining: getOrCreateKernel() builds one kernel func per distinct
//    (op name, attributes, types, kernel name), replaceWithKernelCall()
//    allocates the results and calls it;
//  * KernelBuilder, a thin layer over OpBuilder for kernel bodies: scf.for
//    loops with lambdas, loads that widen to f32 (bf16 extension, fp8 e4m3
//    decoding), stores that round to the destination element type.
// All arithmetic in kernel bodies is fp32 (the dialect's accumulate rule).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_LIB_CONVERSION_LLMTOKERNEL_KERNELBUILDER_H
#define STRATA_LIB_CONVERSION_LLMTOKERNEL_KERNELBUILDER_H

#include <functional>
#include <optional>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

#include "dialects/llm/IR/LLMDialect.h"

namespace mlir::strata {

/// Attribute marking an outlined kernel func: a #llm.kernel holding the
/// dedup key and, for kernels a GPU strategy builds, the arguments' roles.
inline constexpr llvm::StringLiteral kKernelAttrName = "llm.kernel";
/// On moe_up / moe_down kernel functions: a #llm.grouped_experts (kind,
/// top_k, experts, min_slots, swiglu_limit[, rank_experts]), what a GPU
/// target needs to build them as grouped matmuls over the expert's slots
/// (LLMToGPU buildGroupedExpertMatmulKernel); they work only for steps of
/// at least min_slots slots. An expert-parallel MoE adds rank_experts: the
/// stacked weights hold that many experts from expert coordinate *
/// rank_experts, the rank's ep coordinate being the i64 argument after
/// `starts`.
inline constexpr llvm::StringLiteral kGroupedExpertsAttrName =
    "llm.grouped_experts";
/// On the matrix-unit half of a dense projection pair (FfnOps.cpp: swiglu_up,
/// swiglu_down, moe_shared_up, moe_shared_down): a #llm.dense_matmul
/// (epilogue store | swiglu | add_slot_sum, [min_rows], [swiglu_limit],
/// [top_k], [hc_mult], [#llm.head_batched]), what a GPU target needs to
/// build it as a tiled matmul (LLMToGPU
/// buildDenseMatmulKernelFunction); with min_rows it works only for steps of
/// at least min_rows rows (the FFN pairs), without for every step (MLA's
/// head-batched absorb and project).
inline constexpr llvm::StringLiteral kDenseMatmulAttrName = "llm.dense_matmul";
/// On a kernel function that is a linear with an epilogue (HyperConnectionOps'
/// mhc_post_linear: x, W[, scales], R, post, comb, R'): a
/// #llm.linear_epilogue, what a GPU target needs to build it as the linear's
/// matmul kernel (both its forms) with the residual write as the epilogue
/// (LLMToGPU buildLinearMatmulKernel).
inline constexpr llvm::StringLiteral kLinearEpilogueAttrName =
    "llm.linear_epilogue";
/// On the matrix form of a kernel pair (a dense projection, moe_up,
/// moe_down): the symbol of its `_rows` twin, which does the steps below the
/// matrix form's min_rows / min_slots. A GPU target whose matrix kernel
/// covers every step size (a decode split form) builds the twin empty.
inline constexpr llvm::StringLiteral kRowsTwinAttrName = "llm.rows_twin";
/// Unit attribute on a plain linear kernel function (x, W[, scales], y):
/// llm.linear's, and the logits matmul of llm.lm_head. GPU targets rebuild
/// it as the linear's matmul kernel (LLMToGPU buildLinearMatmulKernel).
inline constexpr llvm::StringLiteral kLinearKernelAttrName =
    "llm.linear_kernel";
/// On mla_attend (MlaOps.cpp): a #llm.mla_attend (softmax scale and, for an
/// fp8 latent pool, its #llm.fp8_page layout), what a GPU target needs to
/// rebuild it with the heads of a block sharing the latent rows on the
/// matrix units (LLMToGPU buildMlaAttendKernelFunction).
inline constexpr llvm::StringLiteral kMlaAttendAttrName = "llm.mla_attend";
/// Unit attribute on mla_combine (MlaOps.cpp): a GPU target rebuilds it with
/// a block per (token, head) whose threads own the latent columns (LLMToGPU
/// buildMlaCombineKernelFunction).
inline constexpr llvm::StringLiteral kMlaCombineAttrName = "llm.mla_combine";
/// On moe_select (FfnOps.cpp): a #llm.moe_select; a GPU target rebuilds it with
/// the top-k races over a block's threads (LLMToGPU
/// buildMoeSelectKernelFunction) when there is one expert group.
inline constexpr llvm::StringLiteral kMoeSelectAttrName = "llm.moe_select";
/// On moe_group (FfnOps.cpp): a #llm.moe_group; a GPU target rebuilds it as a
/// histogram, a scan and a stable scatter in one block (LLMToGPU
/// buildMoeGroupKernelFunction).
inline constexpr llvm::StringLiteral kMoeGroupAttrName = "llm.moe_group";
/// On kda_attention in chunked mode (KdaOps.cpp): a #llm.kda_chunk; a GPU
/// target with f32 matrix instructions rebuilds it with the chunk products
/// on the matrix units (LLMToGPU buildKdaChunkKernelFunction) where the
/// bound keeps its factored decays finite.
inline constexpr llvm::StringLiteral kKdaChunkAttrName = "llm.kda_chunk";
/// On kda_coefficients (KdaOps.cpp): the same #llm.kda_chunk; a GPU target
/// rebuilds it with a block per chunk start window and the coefficient
/// products on the matrix units (LLMToGPU
/// buildKdaCoefficientsKernelFunction).
inline constexpr llvm::StringLiteral kKdaCoefficientsAttrName =
    "llm.kda_coefficients";
/// On kda_decode (KdaOps.cpp): a #llm.kda_decode; a GPU target rebuilds it
/// with a state column per thread held in registers across the request's
/// tokens (LLMToGPU buildKdaDecodeKernelFunction).
inline constexpr llvm::StringLiteral kKdaDecodeAttrName = "llm.kda_decode";
/// On kda_prepare (KdaOps.cpp): a #llm.kda_prepare; a GPU target rebuilds it
/// with a subgroup per (token, head) (LLMToGPU
/// buildKdaPrepareKernelFunction).
inline constexpr llvm::StringLiteral kKdaPrepareAttrName = "llm.kda_prepare";
/// On kda_output (KdaOps.cpp): a #llm.kda_output; a GPU target rebuilds it
/// with a subgroup per (token, head) (LLMToGPU
/// buildKdaOutputKernelFunction).
inline constexpr llvm::StringLiteral kKdaOutputAttrName = "llm.kda_output";
/// On moe_quantize_x / moe_quantize_act (FfnOps.cpp): a #llm.group_quantize;
/// a GPU target rebuilds it with a subgroup per group (LLMToGPU
/// buildGroupQuantizeKernelFunction).
inline constexpr llvm::StringLiteral kGroupQuantizeAttrName =
    "llm.group_quantize";
/// On a kernel that works only for requests of at least this many tokens
/// (i64; the chunk path of KDA: kda_prepare, kda_attention, kda_output) and
/// does nothing in a step whose requests are all shorter: a decode plan (one
/// token per request) leaves its dispatches out (ArtifactEmitter buildPlan).
inline constexpr llvm::StringLiteral kMinRequestTokensAttrName =
    "llm.min_request_tokens";
/// The blocks that split a KDA head's `headDim` value columns in
/// kda_attention (rows of the generic kernel, grid z of LLMToGPU's chunk
/// kernel): 32 columns each, one part when the width is not a multiple of
/// 32. With 16-column parts one long request ran faster on the H200 and
/// several requests slower (docs/bench/h200-matrix.md).
inline int64_t kdaAttentionParts(int64_t headDim) {
  return headDim % 32 == 0 ? headDim / 32 : 1;
}
/// On mhc_mix (HyperConnectionOps.cpp): a #llm.mhc_mix, the slices of
/// MhcMix.h's contract; a GPU target rebuilds it with a block per (tile of
/// tokens, slice) (LLMToGPU buildMhcMixKernelFunction).
inline constexpr llvm::StringLiteral kMhcMixAttrName = "llm.mhc_mix";

/// On mhc_pre (HyperConnectionOps.cpp): a #llm.mhc_pre, what a GPU target
/// needs to rebuild it with Sinkhorn on subgroup shuffles (LLMToGPU
/// buildMhcPreKernelFunction).
inline constexpr llvm::StringLiteral kMhcPreAttrName = "llm.mhc_pre";

/// On kpool_scores (IndexerOps.cpp): a #llm.kpool_scores, what a GPU target
/// needs to rebuild it with the heads' dot products of a token on the matrix
/// units (LLMToGPU buildKpoolScoresKernelFunction; bf16 queries and pool).
inline constexpr llvm::StringLiteral kKpoolScoresAttrName = "llm.kpool_scores";
/// On kpool_indexer's selection (IndexerOps.cpp): a #llm.kpool_select, what a
/// GPU target needs to rebuild it as a radix select over a block's threads
/// (LLMToGPU buildKpoolSelectKernelFunction).
inline constexpr llvm::StringLiteral kKpoolSelectAttrName = "llm.kpool_select";
/// Unit attribute on a kernel's multi-dimensional scf.parallel row loop: every
/// iteration is one GPU row (grid dimensions) whose inner loops the threads
/// of a block share, as for a one-dimensional row loop; without it the
/// threads take the innermost row dimension (docs/GPULowering.md).
inline constexpr llvm::StringLiteral kThreadsWithinRowAttrName =
    "llm.threads_within_row";
/// On a kernel function taking an fp8 block-scaled weight: the block shape
/// [rows, cols] of its scales (the kernel arguments carry only the data and
/// scale memrefs; GPU targets read it to build matrix-unit kernels).
inline constexpr llvm::StringLiteral kWeightBlockAttrName = "llm.weight_block";

/// On a private function declaration a step function calls for a
/// collective (CollectiveOps.cpp): {kind = "all_reduce" | "all_gather",
/// group = #llm.rank_group<...>, dim}. Its arguments are send and recv
/// memrefs; the plan turns each call into a collective dispatch
/// (KernelPlan.h), no kernel is compiled for it.
inline constexpr llvm::StringLiteral kCollectiveAttrName = "llm.collective";
/// On a private function declaration `() -> i64` whose calls give the
/// running rank's coordinate in a group (the attribute's value, a
/// #llm.rank_group): the plan binds it as an int scalar of the rank symbol
/// (SizeSymbol tp_rank / ep_rank / world_rank), so that one plan serves
/// every rank.
inline constexpr llvm::StringLiteral kRankCoordinateAttrName =
    "llm.rank_coordinate";
/// On a memref.global of a sharded checkpoint tensor: the weight op's
/// `shards` (#llm.shard array), which the artifact emitter copies into the
/// manifest entry.
inline constexpr llvm::StringLiteral kWeightShardsAttrName = "llm.shards";
/// On the scale global of a sharded fp8 weight (with kWeightShardsAttrName,
/// the data's shards): the data elements per scale in each dimension (1
/// where there are no blocks) ...
inline constexpr llvm::StringLiteral kWeightScaleBlocksAttrName =
    "llm.scale_blocks";
/// ... and the data global's per-rank shape, from which the emitter writes
/// the manifest's block-scale splits (WeightShard.data_extent / block).
inline constexpr llvm::StringLiteral kWeightScaleDataShapeAttrName =
    "llm.scale_data_shape";

/// The running rank's coordinate in `group` (a #llm.rank_group attribute)
/// as an i64 value of the step function: a call of the
/// kRankCoordinateAttrName declaration for the group, declared on first use.
Value getRankCoordinate(RewriterBase &rewriter, Location loc, ModuleOp module,
                        Attribute group);

/// Builds kernel bodies. Values it returns are f32 unless stated.
class KernelBuilder {
public:
  KernelBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location getLoc() const { return loc; }

  /// Constants.
  Value idx(int64_t v);
  Value f32(double v);
  Value i32(int64_t v);

  /// Extent `d` of memref `m` as an index.
  Value dim(Value m, int64_t d);

  /// `for iv in [lb, ub)`.
  void loop(Value lb, Value ub, llvm::function_ref<void(Value)> body);
  void loop(int64_t lb, int64_t ub, llvm::function_ref<void(Value)> body) {
    loop(idx(lb), idx(ub), body);
  }
  /// `scf.parallel (ivs) in [lbs, ubs)`: independent iterations. On the GPU
  /// a kernel whose body is such a loop gets one grid dimension per loop
  /// dimension (up to 3), the threads of a block sharing the innermost one.
  /// Returns the scf.parallel op.
  Operation *parallel(ValueRange lbs, ValueRange ubs,
                      llvm::function_ref<void(ValueRange)> body);
  /// parallel() marked kThreadsWithinRowAttrName: on the GPU every iteration
  /// is one row of the grid whose loops the block's threads share (a dot
  /// product becomes a block reduction over coalesced loads).
  void parallelRows(ValueRange lbs, ValueRange ubs,
                    llvm::function_ref<void(ValueRange)> body);
  /// `for iv in [lb, ub)` carrying `inits`; the body returns the new values.
  SmallVector<Value>
  loopCarry(Value lb, Value ub, ValueRange inits,
            llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body);
  /// Single-value reduction loop.
  Value reduce(Value lb, Value ub, Value init,
               llvm::function_ref<Value(Value, Value)> body);
  Value reduce(int64_t lb, int64_t ub, Value init,
               llvm::function_ref<Value(Value, Value)> body) {
    return reduce(idx(lb), idx(ub), init, body);
  }
  /// sum over i in [lb, ub) of term(i) (f32 values), in i order, for a
  /// reduction whose result is rounded to `actType`: accumulated in
  /// dotAccumulatorType(actType) and returned as f32 (rounded once).
  Value sum(int64_t lb, int64_t ub, Type actType,
            llvm::function_ref<Value(Value)> term);
  /// sum over i of a(i) * b(i) (f32 factors) likewise, each product in the
  /// accumulator type.
  Value dot(int64_t lb, int64_t ub, Type actType,
            llvm::function_ref<std::pair<Value, Value>(Value)> factors);
  /// `if (cond) then()`.
  void ifThen(Value cond, llvm::function_ref<void()> then);
  /// `cond ? then() : other()` for f32/index/i32 values.
  Value ifElse(Value cond, Type type, llvm::function_ref<Value()> then,
               llvm::function_ref<Value()> other);

  /// Element (idx) of `m` widened to f32: bf16/f16 extended, f8E4M3FN
  /// decoded, f32 as is.
  Value load(Value m, ValueRange indices);
  /// Element of an integer memref as an index (sign-extended).
  Value loadIndex(Value m, ValueRange indices);
  /// Stores f32 `v` into `m`, rounding to its element type (RNE).
  void store(Value v, Value m, ValueRange indices);
  /// Stores an index `v` into an i32 memref.
  void storeIndex(Value v, Value m, ValueRange indices);
  /// `v` rounded to `elementType` and widened back (identity for f32): the
  /// rounding points of bf16 mode inside fp32 kernels. An f64 `v` (a
  /// dotAccumulatorType sum) is rounded to f32 first.
  Value round(Value v, Type elementType);
  /// Decodes an f8E4M3FN value to f32 exactly (NaN encodings excluded:
  /// checkpoints hold none).
  Value decodeFp8(Value v);

  /// Float arithmetic.
  Value add(Value a, Value c);
  Value sub(Value a, Value c);
  Value mul(Value a, Value c);
  Value div(Value a, Value c);
  Value neg(Value a);
  Value max(Value a, Value c);
  Value min(Value a, Value c);
  Value exp(Value a);
  Value sqrt(Value a);
  Value rsqrt(Value a);
  Value sigmoid(Value a);
  Value silu(Value a);
  /// Ordered float compares.
  Value gt(Value a, Value c);
  Value lt(Value a, Value c);
  Value select(Value cond, Value a, Value c);

  /// Index arithmetic.
  Value iadd(Value a, Value c);
  Value isub(Value a, Value c);
  Value imul(Value a, Value c);
  Value idiv(Value a, Value c);
  Value irem(Value a, Value c);
  Value imin(Value a, Value c);
  Value imax(Value a, Value c);
  Value ieq(Value a, Value c);
  Value ine(Value a, Value c);
  Value ilt(Value a, Value c);
  Value ige(Value a, Value c);
  Value andi(Value a, Value c);
  /// The row bound of one half of a kernel pair split by the step's size:
  /// `rows` when `size` >= `threshold` matches `atLeast`, else 0, as
  /// select(size >= threshold, rows | 0, 0 | rows): the form whose grid
  /// convert-kernels-to-gpu derives from `rows` (gridEntry), `size` being
  /// `rows` or `rows * m`.
  Value rowsIfStepSize(Value rows, Value size, int64_t threshold,
                       bool atLeast);
  Value toF32(Value indexValue);

  /// A zero-initialised scratch buffer of `elementType` (default f32;
  /// memref.alloc + linalg.fill); free it with dealloc().
  Value scratch(ArrayRef<int64_t> shape, ValueRange dynamicSizes = {},
                Type elementType = {});
  void dealloc(Value m);

private:
  OpBuilder &b;
  Location loc;
};

/// The accumulator of the matmuls' and sums' reductions whose results are
/// rounded to `actType`: f64 for f32 activations, f32 otherwise. f32 is the
/// checking mode: with f64 sums its results are rounded once, so they do not
/// depend on the order of the additions, and a sharded step (partial sums
/// added across ranks, docs/Parallel.md "Rounding") matches one rank's to
/// the last bits instead of to the order's ~1e-6.
Type dotAccumulatorType(Type actType);

/// The memref type a kernel argument of llm type `type` has: identity-layout
/// memref for ranked tensors, the documented cache layouts for cache types
/// (docs/Lowering.md); null for types without a kernel form.
MemRefType getKernelMemRefType(Type type);

/// The type converter of kernel operands (tensors and caches to memrefs,
/// !llm.fp8_weight kept: its patterns look through to llm.weight).
void populateKernelTypeConversions(TypeConverter &converter);

/// Returns the kernel func for `op` with arguments `argTypes` (inputs then
/// outputs), building it with `body` the first time an (op name, attributes,
/// types, name) key is seen in the module. `name` is the kernel's base name;
/// `roles` (one per argument, or none) go into its #llm.kernel.
func::FuncOp
getOrCreateKernel(RewriterBase &rewriter, Operation *op, StringRef name,
                  TypeRange argTypes,
                  llvm::function_ref<void(KernelBuilder &, ValueRange)> body,
                  ArrayRef<llm::KernelRole> roles = {});

/// Allocates one memref per entry of `resultTypes` (dynamic extents from
/// `dynamicSizes[i]`), calls `kernel` with `inputs` followed by the allocs
/// and returns the allocs.
SmallVector<Value> emitKernelCall(RewriterBase &rewriter, Location loc,
                                  func::FuncOp kernel, ValueRange inputs,
                                  ArrayRef<MemRefType> resultTypes,
                                  ArrayRef<SmallVector<Value>> dynamicSizes);

/// The memref(s) bound to a weight operand: for a tensor the converted
/// operand; for !llm.fp8_weight the data and scale globals of the llm.weight
/// / llm.expert_weights that defines it. Fails when the fp8 weight does not
/// come from one of those ops.
FailureOr<SmallVector<Value>> getWeightBuffers(RewriterBase &rewriter,
                                               Location loc, Value original,
                                               Value converted);

/// `memref.get_global` of the global called `name` with `type`, declaring an
/// external constant global when the module has none of that name.
Value getWeightGlobal(RewriterBase &rewriter, Location loc, ModuleOp module,
                      StringRef name, MemRefType type);

/// A weight's view inside kernels: the data memref and, for fp8, its scale
/// memref and block shape.
struct WeightView {
  Value data;
  Value scales;
  int64_t blockRows = 0, blockCols = 0;
  /// Element W[lead..., r, c] as f32 (dequantised for fp8).
  Value load(KernelBuilder &kb, ValueRange indices) const;
};

/// Kernel argument types of a weight operand of type `type`.
SmallVector<Type> getWeightArgTypes(Type type);
/// Builds the WeightView of a weight whose kernel arguments start at `args`.
WeightView makeWeightView(Type type, ValueRange args);

/// Dynamic size `d` of `m` at the call site (for result allocation).
Value getDimValue(OpBuilder &b, Location loc, Value m, int64_t d);

/// The roles of a weight's kernel arguments (its data and, for fp8, its
/// scales): a matmul's weight by default, a SwiGLU pair's up projection
/// with kUpWeightRoles.
struct WeightRoles {
  llm::KernelRole data = llm::KernelRole::Weight;
  llm::KernelRole scales = llm::KernelRole::WeightScales;
};
inline constexpr WeightRoles kUpWeightRoles = {llm::KernelRole::UpWeight,
                                               llm::KernelRole::UpScales};

/// The roles of kda_decode's inputs in order (llm.kda_attention's operands;
/// `token_slots` only where the op has per-token slots), before its `out`:
/// KdaOps.cpp names them, LLMToGPU's kda_decode strategy reads them.
inline constexpr llm::KernelRole kKdaDecodeInputRoles[] = {
    llm::KernelRole::X,
    llm::KernelRole::Key,
    llm::KernelRole::Value,
    llm::KernelRole::Decay,
    llm::KernelRole::Beta,
    llm::KernelRole::OutputGate,
    llm::KernelRole::QueryConv,
    llm::KernelRole::KeyConv,
    llm::KernelRole::ValueConv,
    llm::KernelRole::DecayRate,
    llm::KernelRole::DecayBias,
    llm::KernelRole::OutNormWeight,
    llm::KernelRole::RecurrentState,
    llm::KernelRole::ConvState,
    llm::KernelRole::Positions,
    llm::KernelRole::SeqStarts,
    llm::KernelRole::SourceSlots,
    llm::KernelRole::DestSlots,
    llm::KernelRole::TokenSlots};

/// The roles of kda_prepare's arguments in order (KdaOps.cpp names them,
/// LLMToGPU's kda_prepare strategy reads them): q, k, v, the decay
/// projection and beta before the conv and gates, the three conv weights,
/// A_log, dt_bias, the conv state, positions, sequence starts and source
/// slots; then its results, the prepared q, k, v, log decays and betas.
inline constexpr llm::KernelRole kKdaPrepareRoles[] = {
    llm::KernelRole::X,
    llm::KernelRole::Key,
    llm::KernelRole::Value,
    llm::KernelRole::Decay,
    llm::KernelRole::Beta,
    llm::KernelRole::QueryConv,
    llm::KernelRole::KeyConv,
    llm::KernelRole::ValueConv,
    llm::KernelRole::DecayRate,
    llm::KernelRole::DecayBias,
    llm::KernelRole::ConvState,
    llm::KernelRole::Positions,
    llm::KernelRole::SeqStarts,
    llm::KernelRole::SourceSlots,
    llm::KernelRole::PreparedQuery,
    llm::KernelRole::PreparedKey,
    llm::KernelRole::PreparedValue,
    llm::KernelRole::PreparedDecay,
    llm::KernelRole::PreparedBeta};

/// The roles of kda_output's arguments in order (KdaOps.cpp names them,
/// LLMToGPU's kda_output strategy reads them): kda_attention's read-out, the
/// output gate and norm weight, q, k and v before the conv, the conv state,
/// positions, sequence starts, source and destination slots, and o (written
/// in place: kda_decode allocated it).
inline constexpr llm::KernelRole kKdaOutputRoles[] = {
    llm::KernelRole::ReadOut,       llm::KernelRole::OutputGate,
    llm::KernelRole::OutNormWeight, llm::KernelRole::X,
    llm::KernelRole::Key,           llm::KernelRole::Value,
    llm::KernelRole::ConvState,     llm::KernelRole::Positions,
    llm::KernelRole::SeqStarts,     llm::KernelRole::SourceSlots,
    llm::KernelRole::DestSlots,     llm::KernelRole::Out};

/// The roles of kda_coefficients' arguments in order (KdaOps.cpp names them,
/// LLMToGPU's kda_coefficients strategy reads them): the prepared q, k, log
/// decays and betas and the sequence starts; then its results, the chunks'
/// query coefficients and delta weights.
inline constexpr llm::KernelRole kKdaCoefficientsRoles[] = {
    llm::KernelRole::X,           llm::KernelRole::Key,
    llm::KernelRole::Decay,       llm::KernelRole::Beta,
    llm::KernelRole::SeqStarts,   llm::KernelRole::QueryCoefficients,
    llm::KernelRole::DeltaWeights};

/// The roles of the chunked kda_attention's arguments in order (KdaOps.cpp
/// names them, LLMToGPU's kda_chunk strategy reads them): the prepared q, k,
/// v and log decays, kda_coefficients' results, the state, positions,
/// sequence starts, source and destination slots, and its result, the
/// read-out.
inline constexpr llm::KernelRole kKdaAttentionRoles[] = {
    llm::KernelRole::X,
    llm::KernelRole::Key,
    llm::KernelRole::Value,
    llm::KernelRole::Decay,
    llm::KernelRole::QueryCoefficients,
    llm::KernelRole::DeltaWeights,
    llm::KernelRole::RecurrentState,
    llm::KernelRole::Positions,
    llm::KernelRole::SeqStarts,
    llm::KernelRole::SourceSlots,
    llm::KernelRole::DestSlots,
    llm::KernelRole::Out};

/// The call-site view of one kernel: argument types, call operands and the
/// results to allocate, collected operand by operand. Each add* returns the
/// position of its first kernel argument, which the body uses. An argument
/// may name its role (#llm.kernel); when every argument does, the kernel
/// carries the roles (the contract of the GPU strategies' builders).
struct KernelCall {
  SmallVector<Type> argTypes;
  SmallVector<std::optional<llm::KernelRole>> roles;
  SmallVector<Value> inputs;
  SmallVector<MemRefType> results;
  SmallVector<SmallVector<Value>> resultSizes;
  /// Discardable attributes set on the kernel function.
  SmallVector<NamedAttribute> attributes;
  /// The kernel function emit() built or reused.
  func::FuncOp kernel;

  /// An already converted (memref) operand.
  unsigned addInput(Value converted,
                    std::optional<llm::KernelRole> role = std::nullopt) {
    argTypes.push_back(converted.getType());
    roles.push_back(role);
    inputs.push_back(converted);
    return argTypes.size() - 1;
  }
  /// A weight operand (one argument, or two for fp8), with `weightRoles`
  /// when the kernel names its arguments' roles.
  FailureOr<unsigned>
  addWeight(RewriterBase &rewriter, Location loc, Value original,
            Value converted,
            std::optional<WeightRoles> weightRoles = std::nullopt) {
    FailureOr<SmallVector<Value>> buffers =
        getWeightBuffers(rewriter, loc, original, converted);
    if (failed(buffers))
      return failure();
    unsigned first = argTypes.size();
    for (auto [i, v] : llvm::enumerate(*buffers)) {
      std::optional<llm::KernelRole> role;
      if (weightRoles)
        role = i == 0 ? weightRoles->data : weightRoles->scales;
      addInput(v, role);
    }
    return first;
  }
  /// A matmul's weight (addWeight) that a GPU target may rebuild on the
  /// matrix units: for an !llm.fp8_weight also kWeightBlockAttrName on the
  /// kernel (its arguments carry only the data and scale memrefs).
  FailureOr<unsigned> addMatmulWeight(RewriterBase &rewriter, Location loc,
                                      Value original, Value converted);
  /// A result memref with dynamic extents `sizes`.
  unsigned addResult(MemRefType type, SmallVector<Value> sizes = {},
                     std::optional<llm::KernelRole> role = std::nullopt) {
    argTypes.push_back(type);
    roles.push_back(role);
    results.push_back(type);
    resultSizes.push_back(std::move(sizes));
    return argTypes.size() - 1;
  }
  /// The roles of every argument, empty unless each argument has one.
  SmallVector<llm::KernelRole> namedRoles() const {
    SmallVector<llm::KernelRole> named;
    for (std::optional<llm::KernelRole> role : roles) {
      if (!role)
        return {};
      named.push_back(*role);
    }
    return named;
  }
  /// Builds (or reuses) the kernel and calls it; returns the result allocs.
  SmallVector<Value>
  emit(RewriterBase &rewriter, Operation *op, StringRef name,
       llvm::function_ref<void(KernelBuilder &, ValueRange)> body) {
    kernel =
        getOrCreateKernel(rewriter, op, name, argTypes, body, namedRoles());
    for (NamedAttribute attribute : attributes)
      kernel->setAttr(attribute.getName(), attribute.getValue());
    return emitKernelCall(rewriter, op->getLoc(), kernel, inputs, results,
                          resultSizes);
  }
};

/// mHC's residual write (llm.mhc_post) of column c of token t, from the
/// sub-layer output y (f32, already rounded): every destination stream j
/// gets post[t, j] * y + sum_i comb[t, i, j] * streams[t, i, c] (fp32, in
/// that order), rounded on the store into out[t, j, c]. The mhc_post kernels
/// and the FFN kernels that end in it (streams form) share it.
struct StreamWrite {
  Value streams, post, comb, out;
  int64_t hcMult;
  void emit(KernelBuilder &kb, Value t, Value c, Value y) const;
};

/// Runs `body(lead)` for every combination of the leading `numDims` indices
/// of memref `m` (a row loop nest).
void forEachRow(KernelBuilder &kb, Value m, unsigned numDims,
                llvm::function_ref<void(SmallVector<Value>)> body);

/// The request of token `t` (index): the last r with seq_starts[r] <= t,
/// found by binary search over the non-decreasing `seqStarts` (i32,
/// num_requests + 1 entries; empty requests before t's are skipped):
/// ceil(log2(num_requests)) loads instead of a walk over every request,
/// which at 128 requests was most of a decode step's per-token kernels.
Value emitRequestOfToken(OpBuilder &b, Location loc, Value seqStarts, Value t);

/// Runs `body(r, t)` for every token t in [0, dim(tokens, 0)) with r its
/// request (the last r with seq_starts[r] <= t), tokens in any order: one
/// loop over the tokens, so that on the GPU every token is a grid row. For
/// kernels whose tokens are independent (attention over cached keys, the
/// indexer), not for recurrences.
void forEachTokenRow(KernelBuilder &kb, Value seqStarts, Value tokens,
                     llvm::function_ref<void(Value, Value)> body);

/// Like forEachTokenRow with one row per (token, h), h in [0, perToken):
/// `body(r, t, h)`. One scf.parallel (kThreadsWithinRowAttrName): on the GPU
/// the tokens and h are two grid dimensions, a block's threads sharing the
/// loops of one (token, h); for ops whose heads are independent (attention).
/// `numTokens` bounds the tokens (default: all of `tokens`' first
/// dimension).
void forEachTokenHeadRow(KernelBuilder &kb, Value seqStarts, Value tokens,
                         int64_t perToken,
                         llvm::function_ref<void(Value, Value, Value)> body,
                         Value numTokens = Value());

/// `(page, row)` of the row `index` of request `r` in a paged pool with
/// `rowsPerPage` rows per page: page = block_table[r][index / rowsPerPage].
std::pair<Value, Value> pagedRow(KernelBuilder &kb, Value blockTable, Value r,
                                 Value index, int64_t rowsPerPage);

/// Byte alignment of every cache page (CacheLayout.alignment of the
/// artifact; docs/Lowering.md "Cache buffers").
inline constexpr int64_t kCachePageAlignment = 256;

/// The byte layout of one page of an fp8 paged cache (docs/KVCache.md "fp8
/// pages"). Such a pool is a [pages, pageBytes] i8 memref; a page holds
/// `rowsPerPage` rows of `lanes` e4m3 values and, per row, `groups` fp32
/// scales, scale g covering data lanes [g * groupLanes, (g + 1) * groupLanes).
struct Fp8PageLayout {
  int64_t rowsPerPage = 0;
  /// e4m3 values per row (latent pools: width + pad).
  int64_t lanes = 0;
  /// Data lanes per scale (latent pools: 128; the verifier makes the width
  /// a multiple of it).
  int64_t groupLanes = 0;
  /// Scales per row.
  int64_t groups = 0;
  /// Bytes from one row's first value to the next row's.
  int64_t valueRowStride = 0;
  /// Bytes from the page start to row 0's first scale.
  int64_t scaleOffset = 0;
  /// Bytes from one row's first scale to the next row's.
  int64_t scaleRowStride = 0;
  /// Bytes of one page, a multiple of kCachePageAlignment.
  int64_t pageBytes = 0;
  /// Bytes of one row's values and scales.
  int64_t rowBytes() const { return lanes + 4 * groups; }

  /// An index pool page: all rows' values, then all rows' scales, one scale
  /// per row (values_then_scales, the DeepGEMM paged-MQA layout).
  static Fp8PageLayout valuesThenScales(int64_t rowsPerPage, int64_t width);
  /// A latent pool page: per token row, its `width + pad` values, then one
  /// scale per 128 data lanes (vLLM fp8_ds_mla without the rope part).
  static Fp8PageLayout rowInterleaved(int64_t rowsPerPage, int64_t width,
                                      int64_t pad);
};

/// The fp8 page layout of a latent or index pool type, or std::nullopt for
/// bf16/f32 pools (and every other type).
std::optional<Fp8PageLayout> getFp8PageLayout(Type poolType);

/// Element access to a paged pool buffer (latent or index pool):
/// [pages, rows, lanes] for bf16/f32 pools, [pages, page_bytes] i8 for fp8
/// pools (Fp8PageLayout). One place for both kinds of fp8 page.
struct PagedPoolAccess {
  Value buffer;
  int64_t rowsPerPage, width, pad;
  /// Set for fp8 pools.
  std::optional<Fp8PageLayout> fp8;
  /// Index pools: fp8 rows are Hadamard-rotated with one ue8m0 scale.
  bool indexPool;

  PagedPoolAccess(Value buffer, Type poolType);
  bool isFp8() const { return fp8.has_value(); }
  /// Value of data lane c of row (page, row), dequantised to f32 (rotated
  /// basis for fp8 index pools).
  Value load(KernelBuilder &kb, Value page, Value row, Value c) const;
  /// Index pools: writes the f32 vector `vec` ([width] scratch) as row
  /// (page, row): as is for bf16/f32; for fp8 rounded to bf16,
  /// Hadamard-rotated, rounded to bf16 and ue8m0-quantised (`tmp` is a
  /// [width] f32 scratch).
  void storeIndexRow(KernelBuilder &kb, Value page, Value row, Value vec,
                     Value tmp) const;
  /// Latent pools: writes `lane(c)` (f32) for c in [0, width) and zero pad
  /// lanes as row (page, row). fp8: per group of 128 lanes, scale = amax /
  /// 448 (1 where that is not > 0), values = e4m3(x / scale) rounded to
  /// nearest even, saturated to +-448 (docs/KVCache.md).
  void storeLatentRow(KernelBuilder &kb, Value page, Value row,
                      llvm::function_ref<Value(Value)> lane) const;

private:
  /// [rowsPerPage, valueRowStride] e4m3 view of page `page`.
  Value values(KernelBuilder &kb, Value page) const;
  /// 1-D f32 view of page `page` from row 0's first scale.
  Value scales(KernelBuilder &kb, Value page) const;
  /// Index into scales() of scale `group` of row `row`.
  Value scaleIndex(KernelBuilder &kb, Value row, Value group) const;
};

/// The orthonormal Walsh-Hadamard transform of `vec` ([n] f32, n a power of
/// two) into `out`: out[i] = n^-1/2 sum_j (-1)^popcount(i & j) vec[j].
void buildHadamard(KernelBuilder &kb, Value vec, Value out, int64_t n);

/// Encodes f32 `v` (|v| <= 448) as f8E4M3FN, round to nearest even.
Value encodeFp8(KernelBuilder &kb, Value v);

/// `[dynamic extents of result type]` taken from the same positions of the
/// call-site memref `like` (results shaped like an input).
SmallVector<Value> dynamicSizesLike(OpBuilder &b, Location loc, Value like,
                                    MemRefType result);

} // namespace mlir::strata

#endif // STRATA_LIB_CONVERSION_LLMTOKERNEL_KERNELBUILDER_H
