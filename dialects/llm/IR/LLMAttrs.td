//===- LLMAttrs.td - llm dialect attributes ----------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Attributes of the `llm` dialect. Numeric hyperparameters are plain
// builtin attributes on each op (I64Attr, F32Attr); only choices between
// algorithms get an enum here, plus the sharding vocabulary of tensor and
// expert parallelism (`#llm.rank_group`, `#llm.shard`) and the contract of
// the outlined kernel functions (`#llm.kernel` with its argument roles,
// `#llm.gpu_strategy`).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMATTRS_TD
#define STRATA_DIALECTS_LLM_IR_LLMATTRS_TD

include "dialects/llm/IR/LLMBase.td"
include "mlir/IR/EnumAttr.td"

def LLM_KdaModeChunked : I32EnumAttrCase<"Chunked", 0, "chunked">;
def LLM_KdaModeRecurrent : I32EnumAttrCase<"Recurrent", 1, "recurrent">;

def LLM_KdaMode : I32EnumAttr<"KdaMode",
    "how llm.kda_attention evaluates the delta-rule recurrence",
    [LLM_KdaModeChunked, LLM_KdaModeRecurrent]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_KdaModeAttr : EnumAttr<LLM_Dialect, LLM_KdaMode, "kda_mode"> {
  let summary = "chunked (prefill, WY form) or recurrent (decode) KDA evaluation";
  let description = [{
    `chunked`: the recurrence is re-associated into chunks of `chunk_size`
    tokens (WY representation), the prefill algorithm. `recurrent`: one token
    at a time, the decode algorithm. Both compute the same function up to
    fp32 rounding.
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Tensor and expert parallelism
//===----------------------------------------------------------------------===//

def LLM_RankGroupTensor : I32EnumAttrCase<"Tensor", 0, "tp">;
def LLM_RankGroupExpert : I32EnumAttrCase<"Expert", 1, "ep">;
def LLM_RankGroupWorld : I32EnumAttrCase<"World", 2, "world">;

def LLM_RankGroup : I32EnumAttr<"RankGroup",
    "a group of ranks of a tensor- and expert-parallel layout",
    [LLM_RankGroupTensor, LLM_RankGroupExpert, LLM_RankGroupWorld]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_RankGroupAttr : EnumAttr<LLM_Dialect, LLM_RankGroup, "rank_group"> {
  let summary = "the ranks a collective or a shard spans";
  let description = [{
    With tensor-parallel size `T` and expert-parallel size `E` there are
    `T * E` ranks; rank `r` has the tensor coordinate `r % T` and the
    expert coordinate `r / T`. `tp`: the `T` ranks of one expert
    coordinate (attention heads, dense MLP, vocabulary); `ep`: the `E`
    ranks of one tensor coordinate (routed experts); `world`: all `T * E`
    ranks, whose coordinate is `r` (the MoE output, the shared expert).
    docs/Parallel.md "Sharding".
  }];
  let assemblyFormat = "`<` $value `>`";
}

def LLM_ShardAttr : LLM_Attr<"Shard", "shard"> {
  let summary = "one dimension of a value split into equal parts over a rank group";
  let description = [{
    The value holds part `k` of `parts` equal parts of dimension `dim` of
    the unsplit value, where `k` is the rank's coordinate in `group`
    (`#llm.rank_group`); its extent along `dim` is the unsplit extent
    divided by `parts`, and part `k` starts at `k * extent`. On
    `llm.weight` / `llm.expert_weights` the shards name the slice of the
    checkpoint tensor each rank reads; the artifact's per-rank manifest
    holds the resulting offsets.

    ```mlir
    #llm.shard<tp, dim = 0, parts = 4>
    ```
  }];
  let parameters = (ins EnumParameter<LLM_RankGroup>:$group, "int64_t":$dim,
                        "int64_t":$parts);
  let assemblyFormat = "`<` $group `,` `dim` `=` $dim `,` `parts` `=` $parts `>`";
  let genVerifyDecl = 1;
}

def LLM_ShardArrayAttr : TypedArrayAttrBase<LLM_ShardAttr,
    "array of #llm.shard">;

//===----------------------------------------------------------------------===//
// The kernel contract
//===----------------------------------------------------------------------===//

def LLM_KernelRoleX : I32EnumAttrCase<"X", 0, "x">;
def LLM_KernelRoleOut : I32EnumAttrCase<"Out", 1, "out">;
def LLM_KernelRoleWeight : I32EnumAttrCase<"Weight", 2, "weight">;
def LLM_KernelRoleWeightScales : I32EnumAttrCase<"WeightScales", 3, "weight_scales">;
def LLM_KernelRoleUpWeight : I32EnumAttrCase<"UpWeight", 4, "up_weight">;
def LLM_KernelRoleUpScales : I32EnumAttrCase<"UpScales", 5, "up_scales">;
def LLM_KernelRoleSlotSum : I32EnumAttrCase<"SlotSum", 6, "slot_sum">;
def LLM_KernelRoleStreams : I32EnumAttrCase<"Streams", 7, "streams">;
def LLM_KernelRoleStreamPost : I32EnumAttrCase<"StreamPost", 8, "stream_post">;
def LLM_KernelRoleStreamComb : I32EnumAttrCase<"StreamComb", 9, "stream_comb">;
def LLM_KernelRoleChosen : I32EnumAttrCase<"Chosen", 10, "chosen">;
def LLM_KernelRoleRouteWeights : I32EnumAttrCase<"RouteWeights", 11, "route_weights">;
def LLM_KernelRoleSlotOrder : I32EnumAttrCase<"SlotOrder", 12, "slot_order">;
def LLM_KernelRoleExpertStarts : I32EnumAttrCase<"ExpertStarts", 13, "expert_starts">;
def LLM_KernelRoleExpertCoordinate : I32EnumAttrCase<"ExpertCoordinate", 14, "expert_coordinate">;
def LLM_KernelRoleCorrectionBias : I32EnumAttrCase<"CorrectionBias", 15, "correction_bias">;
def LLM_KernelRoleLatentPool : I32EnumAttrCase<"LatentPool", 16, "latent_pool">;
def LLM_KernelRoleIndexPool : I32EnumAttrCase<"IndexPool", 17, "index_pool">;
def LLM_KernelRoleSelection : I32EnumAttrCase<"Selection", 18, "selection">;
def LLM_KernelRoleSelectionCounts : I32EnumAttrCase<"SelectionCounts", 19, "selection_counts">;
def LLM_KernelRoleSeqStarts : I32EnumAttrCase<"SeqStarts", 20, "seq_starts">;
def LLM_KernelRoleBlockTable : I32EnumAttrCase<"BlockTable", 21, "block_table">;
def LLM_KernelRolePositions : I32EnumAttrCase<"Positions", 22, "positions">;
def LLM_KernelRoleSplitParts : I32EnumAttrCase<"SplitParts", 23, "split_parts">;
def LLM_KernelRoleHeadWeights : I32EnumAttrCase<"HeadWeights", 24, "head_weights">;
def LLM_KernelRoleScores : I32EnumAttrCase<"Scores", 25, "scores">;
def LLM_KernelRoleKey : I32EnumAttrCase<"Key", 26, "key">;
def LLM_KernelRoleValue : I32EnumAttrCase<"Value", 27, "value">;
def LLM_KernelRoleDecay : I32EnumAttrCase<"Decay", 28, "decay">;
def LLM_KernelRoleBeta : I32EnumAttrCase<"Beta", 29, "beta">;
def LLM_KernelRoleRecurrentState : I32EnumAttrCase<"RecurrentState", 30, "recurrent_state">;
def LLM_KernelRoleSourceSlots : I32EnumAttrCase<"SourceSlots", 31, "source_slots">;
def LLM_KernelRoleDestSlots : I32EnumAttrCase<"DestSlots", 32, "dest_slots">;
def LLM_KernelRoleMixWeight : I32EnumAttrCase<"MixWeight", 33, "mix_weight">;
def LLM_KernelRoleMixParts : I32EnumAttrCase<"MixParts", 34, "mix_parts">;
def LLM_KernelRoleMixBase : I32EnumAttrCase<"MixBase", 35, "mix_base">;
def LLM_KernelRoleMixScale : I32EnumAttrCase<"MixScale", 36, "mix_scale">;
def LLM_KernelRoleXNormWeight : I32EnumAttrCase<"XNormWeight", 37, "x_norm_weight">;
def LLM_KernelRoleXScales : I32EnumAttrCase<"XScales", 38, "x_scales">;
def LLM_KernelRoleOutputGate : I32EnumAttrCase<"OutputGate", 39, "output_gate">;
def LLM_KernelRoleQueryConv : I32EnumAttrCase<"QueryConv", 40, "query_conv">;
def LLM_KernelRoleKeyConv : I32EnumAttrCase<"KeyConv", 41, "key_conv">;
def LLM_KernelRoleValueConv : I32EnumAttrCase<"ValueConv", 42, "value_conv">;
def LLM_KernelRoleDecayRate : I32EnumAttrCase<"DecayRate", 43, "decay_rate">;
def LLM_KernelRoleDecayBias : I32EnumAttrCase<"DecayBias", 44, "decay_bias">;
def LLM_KernelRoleOutNormWeight : I32EnumAttrCase<"OutNormWeight", 45, "out_norm_weight">;
def LLM_KernelRoleConvState : I32EnumAttrCase<"ConvState", 46, "conv_state">;
def LLM_KernelRoleTokenSlots : I32EnumAttrCase<"TokenSlots", 47, "token_slots">;
def LLM_KernelRolePreparedQuery : I32EnumAttrCase<"PreparedQuery", 48, "prepared_query">;
def LLM_KernelRolePreparedKey : I32EnumAttrCase<"PreparedKey", 49, "prepared_key">;
def LLM_KernelRolePreparedValue : I32EnumAttrCase<"PreparedValue", 50, "prepared_value">;
def LLM_KernelRolePreparedDecay : I32EnumAttrCase<"PreparedDecay", 51, "prepared_decay">;
def LLM_KernelRolePreparedBeta : I32EnumAttrCase<"PreparedBeta", 52, "prepared_beta">;
def LLM_KernelRoleReadOut : I32EnumAttrCase<"ReadOut", 53, "read_out">;
def LLM_KernelRoleQueryCoefficients : I32EnumAttrCase<"QueryCoefficients", 54, "query_coefficients">;
def LLM_KernelRoleDeltaWeights : I32EnumAttrCase<"DeltaWeights", 55, "delta_weights">;

def LLM_KernelRole : I32EnumAttr<"KernelRole",
    "what a kernel function's argument holds",
    [LLM_KernelRoleX,
     LLM_KernelRoleOut,
     LLM_KernelRoleWeight,
     LLM_KernelRoleWeightScales,
     LLM_KernelRoleUpWeight,
     LLM_KernelRoleUpScales,
     LLM_KernelRoleSlotSum,
     LLM_KernelRoleStreams,
     LLM_KernelRoleStreamPost,
     LLM_KernelRoleStreamComb,
     LLM_KernelRoleChosen,
     LLM_KernelRoleRouteWeights,
     LLM_KernelRoleSlotOrder,
     LLM_KernelRoleExpertStarts,
     LLM_KernelRoleExpertCoordinate,
     LLM_KernelRoleCorrectionBias,
     LLM_KernelRoleLatentPool,
     LLM_KernelRoleIndexPool,
     LLM_KernelRoleSelection,
     LLM_KernelRoleSelectionCounts,
     LLM_KernelRoleSeqStarts,
     LLM_KernelRoleBlockTable,
     LLM_KernelRolePositions,
     LLM_KernelRoleSplitParts,
     LLM_KernelRoleHeadWeights,
     LLM_KernelRoleScores,
     LLM_KernelRoleKey,
     LLM_KernelRoleValue,
     LLM_KernelRoleDecay,
     LLM_KernelRoleBeta,
     LLM_KernelRoleRecurrentState,
     LLM_KernelRoleSourceSlots,
     LLM_KernelRoleDestSlots,
     LLM_KernelRoleMixWeight,
     LLM_KernelRoleMixParts,
     LLM_KernelRoleMixBase,
     LLM_KernelRoleMixScale,
     LLM_KernelRoleXNormWeight,
     LLM_KernelRoleXScales,
     LLM_KernelRoleOutputGate,
     LLM_KernelRoleQueryConv,
     LLM_KernelRoleKeyConv,
     LLM_KernelRoleValueConv,
     LLM_KernelRoleDecayRate,
     LLM_KernelRoleDecayBias,
     LLM_KernelRoleOutNormWeight,
     LLM_KernelRoleConvState,
     LLM_KernelRoleTokenSlots,
     LLM_KernelRolePreparedQuery,
     LLM_KernelRolePreparedKey,
     LLM_KernelRolePreparedValue,
     LLM_KernelRolePreparedDecay,
     LLM_KernelRolePreparedBeta,
     LLM_KernelRoleReadOut,
     LLM_KernelRoleQueryCoefficients,
     LLM_KernelRoleDeltaWeights]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_KernelAttr : LLM_Attr<"Kernel", "kernel"> {
  let summary = "an outlined kernel function: its identity and its arguments' roles";
  let description = [{
    On every kernel function of `convert-llm-to-kernel` (as the discardable
    attribute `llm.kernel`). `key` tells kernels apart: one function per
    distinct (op name, attributes, argument types, kernel name). `roles`,
    where present, names what each argument holds, one role per argument in
    order, each role once: the GPU strategies' builders look their
    arguments up by role instead of by position. Kernels that only the
    generic thread mapping builds carry no roles.

    The verifier checks the roles against the function's signature (a
    `func.func` or `gpu.func`; an `llvm.func` lowered from one carries the
    attribute unchecked, its memrefs expanded): as many roles as arguments, no role twice, index roles (`chosen`, `slot_order`,
    `expert_starts`, `selection`, `selection_counts`, `seq_starts`,
    `block_table`, `positions`, `source_slots`, `dest_slots`,
    `token_slots`) on memrefs of
    i32, scale roles (`weight_scales`, `up_scales`, `route_weights`) on
    memrefs of f32, `expert_coordinate` on an i64 and every other role on a
    memref.

    Roles:
    * `x`: the rows' input: the step's tokens' activations (queries, logits).
    * `out`: the result the kernel writes (in place for an in/out buffer).
    * `weight`: a matmul's weight (a SwiGLU pair's gate, moe_down's down projection).
    * `weight_scales`: the fp8 block scales of `weight`.
    * `up_weight`: a SwiGLU pair's up projection.
    * `up_scales`: the fp8 block scales of `up_weight`.
    * `slot_sum`: rows added to the result, summed over each token's top-k slots.
    * `streams`: mHC residual streams [T, hc, D].
    * `stream_post`: mHC post weights [T, hc].
    * `stream_comb`: mHC combination matrices [T, hc, hc].
    * `chosen`: each token's routed experts [T, top_k].
    * `route_weights`: each token's routing weights [T, top_k].
    * `slot_order`: the MoE slots grouped by expert.
    * `expert_starts`: the first slot of each expert in `slot_order` (E + 1).
    * `expert_coordinate`: the rank's expert-parallel coordinate (i64).
    * `correction_bias`: the router's per-expert selection bias.
    * `latent_pool`: MLA's paged latent cache.
    * `index_pool`: the indexer's paged pooled keys.
    * `selection`: each token's selected cache rows.
    * `selection_counts`: how many rows of `selection` each token uses.
    * `seq_starts`: N + 1 cumulative token offsets of the step's requests.
    * `block_table`: each request's cache pages.
    * `positions`: each token's position in its request.
    * `split_parts`: flash-decoding partial results (MlaSplit.h).
    * `head_weights`: the indexer's per-token head weights.
    * `scores`: the indexer's pool scores.
    * `key`: KDA's keys (`kda_attention`: prepared; `kda_decode`: before the
      conv).
    * `value`: KDA's values (prepared, or before the conv).
    * `decay`: KDA's per-channel decays (`kda_attention`: log decays;
      `kda_decode`: the decay projection before the gate).
    * `beta`: KDA's per-head write strengths (`kda_decode`: before the
      sigmoid).
    * `recurrent_state`: KDA's state slots (in place).
    * `source_slots`: each request's state slot read.
    * `dest_slots`: each request's state slot written.
    * `mix_weight`: mHC's mixing projection.
    * `mix_parts`: mHC's partial mixing sums per slice.
    * `mix_base`: mHC's mixing bias.
    * `mix_scale`: mHC's mixing scales.
    * `x_norm_weight`: the weight of the norm mhc_pre applies to its output.
    * `x_scales`: the fp32 scales of an fp8 `x`, one per row and K group
      (`fp8_expert_activations`).
    * `output_gate`: KDA's output gate before the sigmoid.
    * `query_conv`, `key_conv`, `value_conv`: KDA's depthwise conv weights of
      q, k and v.
    * `decay_rate`: KDA's per-head decay rate A_log.
    * `decay_bias`: KDA's per-channel decay bias dt_bias.
    * `out_norm_weight`: the weight of KDA's gated output norm.
    * `conv_state`: KDA's conv state slots (in place).
    * `token_slots`: each token's state slot (MTP verification).
    * `prepared_query`, `prepared_key`, `prepared_value`: KDA's q, k and v
      after the conv, SiLU and (q, k) L2 norms (`kda_prepare`'s results):
      bf16 in models with bf16 activations, else f32.
    * `prepared_decay`: KDA's per-channel log decays, f32.
    * `prepared_beta`: KDA's per-head write strengths after the sigmoid, f32.
    * `read_out`: KDA's read-out before the gated output norm, f32
      (`kda_attention`'s result).
    * `query_coefficients`: KDA's in-chunk query coefficients A_q, row i of a
      chunk (token t) holding A_q[i][j] = sum_c Q[i,c] K[j,c] e^(B[i,c] -
      B[j,c]) for j <= i in columns h C + j, f32 (`kda_coefficients`'
      result).
    * `delta_weights`: KDA's in-chunk delta weights T = (I + diag(beta) A_k)^-1
      diag(beta), which turn a chunk's residuals V - (K e^B) S0 into its
      delta rows, laid out like `query_coefficients`, f32.

    ```mlir
    func.func @linear_0(%x: memref<?x64xbf16>, %w: memref<32x64xbf16>,
                        %y: memref<?x32xbf16>)
        attributes {llm.kernel = #llm.kernel<"llm.linear (...) linear",
                                             roles = [x, weight, out]>}
    ```
  }];
  let parameters = (ins StringRefParameter<"the kernel's identity">:$key,
                        OptionalArrayRefParameter<"::mlir::strata::llm::KernelRole">:$roles);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The argument that holds `role`, if any.
    std::optional<unsigned> argumentOf(KernelRole role) const;
    /// True when some argument holds `role`.
    bool has(KernelRole role) const { return argumentOf(role).has_value(); }
  }];
}

//===----------------------------------------------------------------------===//
// Kernel parameters: what a GPU strategy's builder needs beyond the roles
//===----------------------------------------------------------------------===//

def LLM_Fp8PageAttr : LLM_Attr<"Fp8Page", "fp8_page"> {
  let summary = "the byte layout of an fp8 paged-pool page whose rows interleave values and scales";
  let description = [{
    A page of `rows_per_page` rows, row `r` at byte `r * row_bytes`: its
    `row_lanes` e4m3 values, then at byte `scale_offset` of the row one f32
    scale per `group_lanes` values (docs/KVCache.md "fp8 latent pages",
    `Fp8PageLayout::rowInterleaved`). The verifier requires positive
    extents, the scales after the values and inside the row.

    ```mlir
    #llm.fp8_page<rows_per_page = 64, row_lanes = 512, row_bytes = 528,
                  scale_offset = 512, group_lanes = 128>
    ```
  }];
  let parameters = (ins "int64_t":$rows_per_page, "int64_t":$row_lanes,
                        "int64_t":$row_bytes, "int64_t":$scale_offset,
                        "int64_t":$group_lanes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_MlaAttendAttr : LLM_Attr<"MlaAttend", "mla_attend"> {
  let summary = "the parameters of an mla_attend kernel function";
  let description = [{
    On MlaOps.cpp's `mla_attend` kernel functions (as the discardable
    attribute `llm.mla_attend`): the softmax scale and, for an fp8 latent
    pool, its page layout (`#llm.fp8_page`): what the `mla_attend` GPU
    strategy needs to rebuild the kernel with the heads of a block sharing
    the latent rows on the matrix units. The verifier requires a finite
    positive scale.

    ```mlir
    #llm.mla_attend<softmax_scale = 6.250000e-02 : f32>
    ```
  }];
  let parameters = (ins "::mlir::FloatAttr":$softmax_scale,
                        OptionalParameter<"Fp8PageAttr">:$fp8_page);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_KpoolScoresAttr : LLM_Attr<"KpoolScores", "kpool_scores"> {
  let summary = "the parameters of a kpool_scores kernel function";
  let description = [{
    On IndexerOps.cpp's `kpool_scores` kernel functions (as
    `llm.kpool_scores`): the tokens per pool and the scores' scale, what the
    `kpool_scores` GPU strategy needs to rebuild the kernel with a token's
    heads on the matrix units. The verifier requires `kpool >= 1`.

    ```mlir
    #llm.kpool_scores<kpool = 4, scale = 8.838835e-02 : f32>
    ```
  }];
  let parameters = (ins "int64_t":$kpool,
                        "::mlir::FloatAttr":$scale);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_KpoolSelectAttr : LLM_Attr<"KpoolSelect", "kpool_select"> {
  let summary = "the parameters of a kpool_indexer selection kernel function";
  let description = [{
    On IndexerOps.cpp's `kpool_indexer` kernel functions (as
    `llm.kpool_select`): the tokens per pool and the selected tokens, what
    the `kpool_select` GPU strategy needs to rebuild the selection as a radix
    select over a block's threads. The verifier requires both >= 1.

    ```mlir
    #llm.kpool_select<kpool = 4, topk = 2048>
    ```
  }];
  let parameters = (ins "int64_t":$kpool, "int64_t":$topk);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_KdaChunkAttr : LLM_Attr<"KdaChunk", "kda_chunk"> {
  let summary = "the parameters of a chunked kda_attention kernel function";
  let description = [{
    On KdaOps.cpp's chunked `kda_attention` kernel functions (as
    `llm.kda_chunk`) and on their `kda_coefficients` kernels (as
    `llm.kda_coefficients`): the gate's lower bound and the largest request
    that the decode form takes instead, what the `kda_chunk` and
    `kda_coefficients` GPU strategies need to rebuild the kernels with the
    chunk products on the matrix units, and
    whether those products may round their operands to tf32
    (`tf32_products`, default false: set for bf16-activation models, whose
    KDA inputs were bf16; a target whose f32 matrix instruction is tf32 then
    issues one instruction per product instead of the three of an
    fp32-accurate split). The verifier requires a finite bound and
    `decode_max_tokens >= 1`.

    ```mlir
    #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4>
    #llm.kda_chunk<gate_lower_bound = -5.000000e+00 : f32, decode_max_tokens = 4, tf32_products = true>
    ```
  }];
  let parameters = (ins "::mlir::FloatAttr":$gate_lower_bound,
                        "int64_t":$decode_max_tokens,
                        DefaultValuedParameter<"bool", "false">:$tf32_products);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_KdaDecodeAttr : LLM_Attr<"KdaDecode", "kda_decode"> {
  let summary = "the parameters of a kda_decode kernel function";
  let description = [{
    On KdaOps.cpp's `kda_decode` kernel functions (as `llm.kda_decode`): the
    op's gate bound, L2-norm epsilon, query scale and output-norm epsilon,
    and the largest request it takes (`decode_max_tokens`; 0 in recurrent
    mode, where it takes every request), what the `kda_decode` GPU strategy
    needs to rebuild the kernel. The verifier requires finite values,
    positive epsilons and `decode_max_tokens >= 0`.

    ```mlir
    #llm.kda_decode<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 1.0e-06 : f32,
                    q_scale = 0.0883883461 : f32, norm_eps = 1.0e-05 : f32,
                    decode_max_tokens = 4>
    ```
  }];
  let parameters = (ins "::mlir::FloatAttr":$gate_lower_bound,
                        "::mlir::FloatAttr":$l2_eps,
                        "::mlir::FloatAttr":$q_scale,
                        "::mlir::FloatAttr":$norm_eps,
                        "int64_t":$decode_max_tokens);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_KdaPrepareAttr : LLM_Attr<"KdaPrepare", "kda_prepare"> {
  let summary = "the parameters of a kda_prepare kernel function";
  let description = [{
    On KdaOps.cpp's `kda_prepare` kernel functions (as `llm.kda_prepare`):
    the op's gate bound, L2-norm epsilon and query scale, and the largest
    request the decode form takes instead (`decode_max_tokens`: kda_prepare
    works on the longer ones), what the `kda_prepare` GPU strategy needs to
    rebuild the kernel. The verifier requires finite values, a positive
    epsilon and `decode_max_tokens >= 1`.

    ```mlir
    #llm.kda_prepare<gate_lower_bound = -5.000000e+00 : f32, l2_eps = 1.0e-06 : f32,
                     q_scale = 0.0883883461 : f32, decode_max_tokens = 4>
    ```
  }];
  let parameters = (ins "::mlir::FloatAttr":$gate_lower_bound,
                        "::mlir::FloatAttr":$l2_eps,
                        "::mlir::FloatAttr":$q_scale,
                        "int64_t":$decode_max_tokens);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_KdaOutputAttr : LLM_Attr<"KdaOutput", "kda_output"> {
  let summary = "the parameters of a kda_output kernel function";
  let description = [{
    On KdaOps.cpp's `kda_output` kernel functions (as `llm.kda_output`): the
    op's output-norm epsilon and the largest request the decode form takes
    instead (`decode_max_tokens`: kda_output works on the longer ones), what
    the `kda_output` GPU strategy needs to rebuild the kernel. The verifier
    requires a finite positive epsilon and `decode_max_tokens >= 1`.

    ```mlir
    #llm.kda_output<norm_eps = 1.0e-05 : f32, decode_max_tokens = 4>
    ```
  }];
  let parameters = (ins "::mlir::FloatAttr":$norm_eps,
                        "int64_t":$decode_max_tokens);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_GroupQuantizeAttr : LLM_Attr<"GroupQuantize", "group_quantize"> {
  let summary = "the parameters of a group quantisation kernel function";
  let description = [{
    On FfnOps.cpp's `moe_quantize_x` / `moe_quantize_act` kernel functions (as
    `llm.group_quantize`): the width of the groups of the last dimension that
    share one scale (s = max(amax, 1e-10) / 448, q = e4m3(clamp(v / s))),
    what the `group_quantize` GPU strategy needs. The verifier requires
    `block >= 1`.

    ```mlir
    #llm.group_quantize<block = 128>
    ```
  }];
  let parameters = (ins "int64_t":$block);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_MhcMixAttr : LLM_Attr<"MhcMix", "mhc_mix"> {
  let summary = "the parameters of an mhc_mix kernel function";
  let description = [{
    On HyperConnectionOps.cpp's `mhc_mix` kernel functions (as
    `llm.mhc_mix`): the slices of the flattened streams whose partial sums
    the kernel writes (MhcMix.h), what the `mhc_mix` GPU strategy needs to
    rebuild it with a block per (tile of tokens, slice). The verifier
    requires `slices >= 1`.

    ```mlir
    #llm.mhc_mix<slices = 16>
    ```
  }];
  let parameters = (ins "int64_t":$slices);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_MoeSelectAttr : LLM_Attr<"MoeSelect", "moe_select"> {
  let summary = "the parameters of a moe_select kernel function";
  let description = [{
    On FfnOps.cpp's `moe_select` kernel functions (as `llm.moe_select`):
    the routed experts, their groups, the experts per token, whether the
    chosen weights are renormalised (with `renorm_eps`) and the routed
    scaling factor, what the `moe_select` GPU strategy needs to rebuild the
    top-k as races over a block's threads. The verifier requires
    `1 <= top_k <= experts` and `groups >= 1` dividing `experts`.

    ```mlir
    #llm.moe_select<experts = 288, groups = 1, top_k = 8, normalize = true,
                    renorm_eps = 1.000000e-20 : f32, scaling = 2.500000e+00 : f32>
    ```
  }];
  let parameters = (ins "int64_t":$experts, "int64_t":$groups,
                        "int64_t":$top_k, "bool":$normalize,
                        "::mlir::FloatAttr":$renorm_eps,
                        "::mlir::FloatAttr":$scaling);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_MoeGroupAttr : LLM_Attr<"MoeGroup", "moe_group"> {
  let summary = "the parameters of a moe_group kernel function";
  let description = [{
    On FfnOps.cpp's `moe_group` kernel functions (as `llm.moe_group`): the
    routed experts and the experts per token, the shape the `moe_group` GPU
    strategy rebuilds the grouping with (a histogram, a scan and a stable
    scatter in one block instead of the generic kernel's pass over every
    slot per expert). The verifier requires `1 <= top_k <= experts`.

    ```mlir
    #llm.moe_group<experts = 288, top_k = 8>
    ```
  }];
  let parameters = (ins "int64_t":$experts, "int64_t":$top_k);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_MhcPreAttr : LLM_Attr<"MhcPre", "mhc_pre"> {
  let summary = "the parameters of an mhc_pre kernel function";
  let description = [{
    On HyperConnectionOps.cpp's `mhc_pre` kernel functions (as
    `llm.mhc_pre`): the streams, the Sinkhorn iterations and epsilon, the
    mixing norm's epsilon, the post weights' multiplier and, when the kernel
    ends in the consumer's RMSNorm, that norm's epsilon: what the `mhc_pre`
    GPU strategy needs to rebuild it with Sinkhorn on subgroup shuffles. The
    verifier requires `hc_mult >= 1` and `sinkhorn_iters >= 0`.

    ```mlir
    #llm.mhc_pre<hc_mult = 4, sinkhorn_iters = 20, hc_eps = 1.000000e-06 : f32,
                 norm_eps = 1.000000e-05 : f32, post_mult = 2.000000e+00 : f32>
    ```
  }];
  let parameters = (ins "int64_t":$hc_mult, "int64_t":$sinkhorn_iters,
                        "::mlir::FloatAttr":$hc_eps,
                        "::mlir::FloatAttr":$norm_eps,
                        "::mlir::FloatAttr":$post_mult,
                        OptionalParameter<"::mlir::FloatAttr">:$x_norm_eps);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_LinearEpilogueMhcPost : I32EnumAttrCase<"MhcPost", 0, "mhc_post">;

def LLM_LinearEpilogueKind : I32EnumAttr<"LinearEpilogueKind",
    "what a linear kernel function does with its result",
    [LLM_LinearEpilogueMhcPost]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_LinearEpilogueAttr : LLM_Attr<"LinearEpilogue", "linear_epilogue"> {
  let summary = "the epilogue of a linear kernel function";
  let description = [{
    On kernel functions that are a linear followed by more work on its
    result (as `llm.linear_epilogue`): `mhc_post`, HyperConnectionOps.cpp's
    `mhc_post_linear` (x, W[, scales], R, post, comb, R'), the residual write
    of `hc_mult` streams. The `tiled_matmul` GPU strategy builds it as the
    linear's matmul kernel with that write as its epilogue. The verifier
    requires `hc_mult >= 1`.

    ```mlir
    #llm.linear_epilogue<mhc_post, hc_mult = 4>
    ```
  }];
  let parameters = (ins EnumParameter<LLM_LinearEpilogueKind>:$kind,
                        "int64_t":$hc_mult);
  let assemblyFormat = "`<` $kind `,` `hc_mult` `=` $hc_mult `>`";
  let genVerifyDecl = 1;
}

def LLM_GroupedExpertsUp : I32EnumAttrCase<"Up", 0, "up">;
def LLM_GroupedExpertsDown : I32EnumAttrCase<"Down", 1, "down">;

def LLM_GroupedExpertsKind : I32EnumAttr<"GroupedExpertsKind",
    "which projection of the routed experts a grouped kernel function is",
    [LLM_GroupedExpertsUp, LLM_GroupedExpertsDown]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_GroupedExpertsAttr : LLM_Attr<"GroupedExperts", "grouped_experts"> {
  let summary = "the parameters of a grouped routed-expert kernel function";
  let description = [{
    On FfnOps.cpp's `moe_up` / `moe_down` kernel functions (as
    `llm.grouped_experts`): the projection (`up`: gate and up with the
    SwiGLU, clamped at `swiglu_limit`; `down`: times the routing weight),
    the experts per token, the routed experts, the fewest slots (tokens x
    top_k) a step needs for the kernel to work (its `_rows` twin takes the
    smaller steps) and, for an expert-parallel MoE, the experts of the
    rank's stacked weights (`rank_experts`; the rank's coordinate is the
    argument with role `expert_coordinate`). The `grouped_experts` GPU
    strategy builds it as grouped matmuls over the slots sorted by expert.
    The verifier requires `1 <= top_k <= experts`, `min_slots >= 1` and
    `rank_experts` dividing `experts`.

    ```mlir
    #llm.grouped_experts<up, top_k = 8, experts = 288, min_slots = 64,
                         swiglu_limit = 7.000000e+00 : f64>
    ```
  }];
  let parameters = (ins EnumParameter<LLM_GroupedExpertsKind>:$kind,
                        "int64_t":$top_k, "int64_t":$experts,
                        "int64_t":$min_slots,
                        "::mlir::FloatAttr":$swiglu_limit,
                        OptionalParameter<"int64_t">:$rank_experts);
  let assemblyFormat = [{
    `<` $kind `,` `top_k` `=` $top_k `,` `experts` `=` $experts `,`
    `min_slots` `=` $min_slots `,` `swiglu_limit` `=` $swiglu_limit
    (`,` `rank_experts` `=` $rank_experts^)? `>`
  }];
  let genVerifyDecl = 1;
}

def LLM_DenseEpilogueStore : I32EnumAttrCase<"Store", 0, "store">;
def LLM_DenseEpilogueSwiglu : I32EnumAttrCase<"Swiglu", 1, "swiglu">;
def LLM_DenseEpilogueAddSlotSum : I32EnumAttrCase<"AddSlotSum", 2, "add_slot_sum">;

def LLM_DenseEpilogue : I32EnumAttr<"DenseEpilogue",
    "what a dense matmul kernel function does with its products",
    [LLM_DenseEpilogueStore, LLM_DenseEpilogueSwiglu,
     LLM_DenseEpilogueAddSlotSum]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_HeadBatchedAttr : LLM_Attr<"HeadBatched", "head_batched"> {
  let summary = "a matmul per attention head over blocks of one weight";
  let description = [{
    The head-batched form of a `#llm.dense_matmul` (MlaOps.cpp's
    `mla_absorb` and `mla_project`): `heads` matmuls, head h's block of the
    weight starting at row `h * weight_row_stride + weight_row_offset`;
    `weight_transposed`: the weight is stored [K, N] (W_UK read as W^T).
    The verifier requires `heads >= 1`, `weight_row_stride >= 0` and
    `weight_row_offset >= 0`.

    ```mlir
    #llm.head_batched<heads = 64, weight_row_offset = 0,
                      weight_row_stride = 256, weight_transposed = true>
    ```
  }];
  let parameters = (ins "int64_t":$heads, "int64_t":$weight_row_offset,
                        "int64_t":$weight_row_stride,
                        "bool":$weight_transposed);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_DenseMatmulAttr : LLM_Attr<"DenseMatmul", "dense_matmul"> {
  let summary = "the parameters of a dense matmul kernel function";
  let description = [{
    On the matrix-unit half of a dense projection pair (FfnOps.cpp:
    swiglu_up, swiglu_down, moe_shared_up, moe_shared_down) and on MLA's
    head-batched matmuls (as `llm.dense_matmul`): the epilogue (`store`;
    `swiglu` of the gate and up products, clamped at `swiglu_limit`;
    `add_slot_sum`: plus the sum of the `top_k` routed slots), the fewest
    rows a step needs for the kernel to work (`min_rows`; without it every
    step), mHC's residual write of `hc_mult` streams, and the head-batched
    form (`#llm.head_batched`). The `dense_matmul` GPU strategy builds it as
    a tiled matmul with that epilogue. The verifier requires `swiglu_limit`
    exactly with `swiglu`, `top_k >= 1` exactly with `add_slot_sum`,
    `hc_mult >= 1`, `min_rows >= 1`, and the head-batched form only with
    `store` and no streams.

    ```mlir
    #llm.dense_matmul<epilogue = swiglu, min_rows = 64,
                      swiglu_limit = 7.000000e+00 : f64>
    #llm.dense_matmul<epilogue = add_slot_sum, min_rows = 64, top_k = 8,
                      hc_mult = 4>
    #llm.dense_matmul<epilogue = store, head_batched = #llm.head_batched<
                      heads = 64, weight_row_offset = 0,
                      weight_row_stride = 256, weight_transposed = true>>
    ```
  }];
  let parameters = (ins EnumParameter<LLM_DenseEpilogue>:$epilogue,
                        OptionalParameter<"int64_t">:$min_rows,
                        OptionalParameter<"::mlir::FloatAttr">:$swiglu_limit,
                        OptionalParameter<"int64_t">:$top_k,
                        OptionalParameter<"int64_t">:$hc_mult,
                        OptionalParameter<"HeadBatchedAttr">:$head_batched);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LLM_GpuStrategyGeneric : I32EnumAttrCase<"Generic", 0, "generic">;
def LLM_GpuStrategyTiledMatmul : I32EnumAttrCase<"TiledMatmul", 1, "tiled_matmul">;
def LLM_GpuStrategyGroupedExperts : I32EnumAttrCase<"GroupedExperts", 2, "grouped_experts">;
def LLM_GpuStrategyDenseMatmul : I32EnumAttrCase<"DenseMatmul", 3, "dense_matmul">;
def LLM_GpuStrategyMlaAttend : I32EnumAttrCase<"MlaAttend", 4, "mla_attend">;
def LLM_GpuStrategyMlaCombine : I32EnumAttrCase<"MlaCombine", 5, "mla_combine">;
def LLM_GpuStrategyMoeSelect : I32EnumAttrCase<"MoeSelect", 6, "moe_select">;
def LLM_GpuStrategyKdaChunk : I32EnumAttrCase<"KdaChunk", 7, "kda_chunk">;
def LLM_GpuStrategyKpoolScores : I32EnumAttrCase<"KpoolScores", 8, "kpool_scores">;
def LLM_GpuStrategyKpoolSelect : I32EnumAttrCase<"KpoolSelect", 9, "kpool_select">;
def LLM_GpuStrategyMhcMix : I32EnumAttrCase<"MhcMix", 10, "mhc_mix">;
def LLM_GpuStrategyMhcPre : I32EnumAttrCase<"MhcPre", 11, "mhc_pre">;
def LLM_GpuStrategyEmptyTwin : I32EnumAttrCase<"EmptyTwin", 12, "empty_twin">;
def LLM_GpuStrategyKdaDecode : I32EnumAttrCase<"KdaDecode", 13, "kda_decode">;
def LLM_GpuStrategyGroupQuantize : I32EnumAttrCase<"GroupQuantize", 14, "group_quantize">;
def LLM_GpuStrategyKdaPrepare : I32EnumAttrCase<"KdaPrepare", 15, "kda_prepare">;
def LLM_GpuStrategyKdaOutput : I32EnumAttrCase<"KdaOutput", 16, "kda_output">;
def LLM_GpuStrategyKdaCoefficients : I32EnumAttrCase<"KdaCoefficients", 17, "kda_coefficients">;
def LLM_GpuStrategyMoeGroup : I32EnumAttrCase<"MoeGroup", 18, "moe_group">;

def LLM_GpuStrategy : I32EnumAttr<"GpuStrategy",
    "how a GPU target builds a kernel function",
    [LLM_GpuStrategyGeneric,
     LLM_GpuStrategyTiledMatmul,
     LLM_GpuStrategyGroupedExperts,
     LLM_GpuStrategyDenseMatmul,
     LLM_GpuStrategyMlaAttend,
     LLM_GpuStrategyMlaCombine,
     LLM_GpuStrategyMoeSelect,
     LLM_GpuStrategyKdaChunk,
     LLM_GpuStrategyKpoolScores,
     LLM_GpuStrategyKpoolSelect,
     LLM_GpuStrategyMhcMix,
     LLM_GpuStrategyMhcPre,
     LLM_GpuStrategyEmptyTwin,
     LLM_GpuStrategyKdaDecode,
     LLM_GpuStrategyGroupQuantize,
     LLM_GpuStrategyKdaPrepare,
     LLM_GpuStrategyKdaOutput,
     LLM_GpuStrategyKdaCoefficients,
     LLM_GpuStrategyMoeGroup]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::strata::llm";
}

def LLM_GpuStrategyAttr : EnumAttr<LLM_Dialect, LLM_GpuStrategy, "gpu_strategy"> {
  let summary = "the builder a GPU target makes a kernel function with";
  let description = [{
    Set on every `llm.kernel` function by `select-kernel-strategy` (as the
    discardable attribute `llm.gpu_strategy`); the GPU kernel compiler builds
    each kernel by it. A matrix-unit strategy is chosen when its builder
    accepts the function on the chip, else `generic` (with a remark saying
    why).

    * `generic`: the scalar loops mapped to threads (KernelToGPU).
    * `tiled_matmul`: a linear (llm.linear, lm_head's logits, mhc_post_linear) as a tiled matmul with decode split forms.
    * `grouped_experts`: moe_up / moe_down as grouped matmuls over the slots sorted by expert.
    * `dense_matmul`: a dense projection's matmul with its epilogue (SwiGLU, store, slot sum).
    * `mla_attend`: sparse MLA attention, the heads of a block sharing each gathered latent row.
    * `mla_combine`: the combine step of split MLA attention.
    * `moe_select`: the router's top-k as races over a block's threads.
    * `kda_chunk`: chunked KDA with the chunk products on the matrix units.
    * `kda_decode`: KDA's recurrent form, a state column per thread held in registers.
    * `kda_prepare`: KDA's key side (conv, norms, decays) of the chunk path, a subgroup per (token, head).
    * `kda_output`: KDA's gated output norm and conv state of the chunk path, a subgroup per (token, head).
    * `group_quantize`: fp8 activations per row and group, a subgroup per group.
    * `kpool_scores`: the indexer's pool scores on the matrix units.
    * `kpool_select`: the indexer's top-k as a radix select.
    * `mhc_mix`: mHC's mixing projection per (token tile, slice).
    * `mhc_pre`: mHC's Sinkhorn on subgroup shuffles.
    * `empty_twin`: a `_rows` twin whose matrix kernel takes every step size: built empty.

    ```mlir
    llm.gpu_strategy = #llm.gpu_strategy<tiled_matmul>
    ```
  }];
  let assemblyFormat = "`<` $value `>`";
}

#endif // STRATA_DIALECTS_LLM_IR_LLMATTRS_TD
