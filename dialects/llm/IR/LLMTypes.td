//===- LLMTypes.td - llm dialect types ---------------------*- tablegen -*-===//
//
// Part of strata, under the Apache License v2.0.
//
// Types of the `llm` dialect: the fp8 block-scaled weight (a weight tensor
// paired with its block scales) and the five cache types (MLA latent page
// pool, pooled index-key page pool, per-request tail ring, KDA recurrent
// state, KDA conv state). Each type verifies its own parameters; ops verify
// how types and operands agree.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_DIALECTS_LLM_IR_LLMTYPES_TD
#define STRATA_DIALECTS_LLM_IR_LLMTYPES_TD

include "dialects/llm/IR/LLMBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

def LLM_Fp8WeightType : LLM_Type<"Fp8Weight", "fp8_weight"> {
  let summary = "fp8 e4m3 weight with fp32 block scales (weight_scale_inv)";
  let description = [{
    A checkpoint weight stored as `f8E4M3FN` together with its fp32
    `weight_scale_inv` tensor, one scale per `block_rows x block_cols` block
    of the last two dimensions:

        W[..., r, c] = fp8(W[..., r, c]) * scale_inv[..., r / block_rows, c / block_cols]

    (the scale is multiplied, despite its name). `weight` is `[out, in]` or,
    for stacked experts, `[experts, out, in]`; `scales` has the same leading
    dimensions and `ceil(out / block_rows) x ceil(in / block_cols)` in the
    last two. Both shapes are static. GLM-5.3-Flash uses 128x128 blocks.

    ```mlir
    !llm.fp8_weight<tensor<1536x4096xf8E4M3FN>, tensor<12x32xf32>, block = [128, 128]>
    ```
  }];
  let parameters = (ins
    "RankedTensorType":$weight,
    "RankedTensorType":$scales,
    "int64_t":$blockRows,
    "int64_t":$blockCols
  );
  let assemblyFormat =
      "`<` $weight `,` $scales `,` `block` `=` `[` $blockRows `,` $blockCols `]` `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Caches
//===----------------------------------------------------------------------===//

def LLM_LatentPoolType : LLM_Type<"LatentPool", "latent_pool"> {
  let summary = "paged pool of MLA latent rows (one row per cached token)";
  let description = [{
    The MLA latent cache of one layer: pages of `page_size` token rows, each
    row `width + pad` elements of `elementType` (`bf16` or `f8E4M3FN`). A
    row holds `c_kv` of one token after `kv_a_layernorm` (`width` =
    kv_lora_rank = 512) followed by `pad` lanes that are always zero (64 to
    reuse 576-wide DeepSeek kernels, 0 otherwise). An `f8E4M3FN` pool stores
    one fp32 scale per 128 data lanes beside each row: a row is `width + pad`
    e4m3 values followed by `width / 128` fp32 scales (512 + 16 = 528 bytes
    for the model), scale = amax / 448 of the group's lanes (1 for an
    all-zero group), value = e4m3(x / scale) rounded to nearest even and
    saturated; a lane reads back as e4m3 * scale (docs/KVCache.md "fp8
    pages"). `width` must be a multiple of 128 and `pad` of 4. Token `x` of request
    `r` lives in page `block_table[r][x / page_size]`, row `x % page_size`.
    The page count is a runtime property and not part of the type.

    ```mlir
    !llm.latent_pool<page_size = 64, width = 512, pad = 0, bf16>
    ```
  }];
  let parameters = (ins
    "int64_t":$pageSize,
    "int64_t":$width,
    "int64_t":$pad,
    "Type":$elementType
  );
  let assemblyFormat = [{
    `<` `page_size` `=` $pageSize `,` `width` `=` $width `,` `pad` `=` $pad `,`
    $elementType `>`
  }];
  let genVerifyDecl = 1;
}

def LLM_IndexPoolType : LLM_Type<"IndexPool", "index_pool"> {
  let summary = "paged pool of pooled indexer keys (one row per kpool tokens)";
  let description = [{
    The indexer key cache of one MLA layer. Pool `p` of a request (tokens
    `kpool*p .. kpool*p + kpool - 1`) has one row of `width` (= index_head_dim)
    elements. Pages share the block ids of the latent pool: a page covers
    `page_size` tokens, hence `page_size / kpool` pooled rows, and pool `p`
    lives in page `block_table[r][p / (page_size / kpool)]`, row
    `p % (page_size / kpool)`. `page_size % kpool == 0`, so no pool straddles
    two pages. An `f8E4M3FN` pool stores Hadamard-rotated keys quantised with
    one power-of-two fp32 scale per row (ue8m0); a `bf16` pool stores the
    pooled keys unrotated. `kpool = 1` is the dense indexer's pool: one row
    per token (`page_size` rows per page), no pooling.

    ```mlir
    !llm.index_pool<page_size = 64, kpool = 4, width = 128, f8E4M3FN>
    !llm.index_pool<page_size = 64, kpool = 1, width = 128, bf16>
    ```
  }];
  let parameters = (ins
    "int64_t":$pageSize,
    "int64_t":$kpool,
    "int64_t":$width,
    "Type":$elementType
  );
  let assemblyFormat = [{
    `<` `page_size` `=` $pageSize `,` `kpool` `=` $kpool `,` `width` `=` $width
    `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Pooled rows per page: page_size / kpool.
    int64_t getRowsPerPage() const { return getPageSize() / getKpool(); }
  }];
}

def LLM_TailRingType : LLM_Type<"TailRing", "tail_ring"> {
  let summary = "per-request ring of raw index keys and gates";
  let description = [{
    The kpool tail ring of one indexer layer: for every request slot, two
    planes (K: the post-LayerNorm index key, G: the pooling gate) of `depth`
    rows of `width` elements; the token at position `x` lives in row
    `x % depth`. It holds the tokens of the incomplete pool (and, under
    speculation, the verify window) so that a pool can be finished when its
    last token arrives. Never prefix-cached. Depth 4 without speculation, 16
    with 3 MTP drafts.

    ```mlir
    !llm.tail_ring<depth = 16, width = 128, bf16>
    ```
  }];
  let parameters = (ins
    "int64_t":$depth,
    "int64_t":$width,
    "Type":$elementType
  );
  let assemblyFormat = [{
    `<` `depth` `=` $depth `,` `width` `=` $width `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
}

def LLM_KdaStateType : LLM_Type<"KdaState", "kda_state"> {
  let summary = "per-request KDA recurrent state pool";
  let description = [{
    The delta-rule state of one KDA layer for every request slot: per slot
    `[heads, key_dim, value_dim]` of `elementType` (fp32), rows indexed by
    the key channel and columns by the value channel (`S` of the spec).

    ```mlir
    !llm.kda_state<heads = 64, key_dim = 128, value_dim = 128, f32>
    ```
  }];
  let parameters = (ins
    "int64_t":$heads,
    "int64_t":$keyDim,
    "int64_t":$valueDim,
    "Type":$elementType
  );
  let assemblyFormat = [{
    `<` `heads` `=` $heads `,` `key_dim` `=` $keyDim `,` `value_dim` `=`
    $valueDim `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
}

def LLM_ConvStateType : LLM_Type<"ConvState", "conv_state"> {
  let summary = "per-request KDA short-convolution state pool";
  let description = [{
    The last `width` (= conv kernel - 1) pre-convolution inputs of the q, k
    and v short convolutions of one KDA layer, for every request slot: per
    slot `[width, channels]` of `elementType`, channels ordered `[q | k | v]`
    (`channels = 3 * heads * head_dim`), row `width - 1` the newest token.

    ```mlir
    !llm.conv_state<channels = 24576, width = 3, bf16>
    ```
  }];
  let parameters = (ins
    "int64_t":$channels,
    "int64_t":$width,
    "Type":$elementType
  );
  let assemblyFormat = [{
    `<` `channels` `=` $channels `,` `width` `=` $width `,` $elementType `>`
  }];
  let genVerifyDecl = 1;
}

def LLM_SharedSelectionType : LLM_Type<"SharedSelection", "shared_selection"> {
  let summary = "per-request MTP draft selections kept for the draft chain";
  let description = [{
    `index_share_for_mtp_iteration` (spec glm5_next-indexer-mtp-cache.md
    §4.4 item 2): the MTP draft layer's indexer selections of a request's
    last `rows` rows of its step 0, kept per request slot so that the draft
    chain's steps 1..k-1 attend to the selection of the request's last
    accepted row without running the indexer. Per slot, `rows` rows of
    `kSelectionColumn + width` i32: the count in column 0, the `width`
    selected positions (`llm.kpool_indexer`'s results) from column
    `kSelectionColumn` (64: a row of 64 * 4 + width * 4 bytes stays a
    multiple of 256 for widths that are multiples of 64); the step's last
    token is row `rows - 1`. Not prefix-cached (step 0 rewrites it before a
    chain reads it).

    ```mlir
    !llm.shared_selection<rows = 4, width = 2176>
    ```
  }];
  let parameters = (ins
    "int64_t":$rows,
    "int64_t":$width
  );
  let assemblyFormat = [{
    `<` `rows` `=` $rows `,` `width` `=` $width `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The column of a row where the selected positions start.
    static constexpr int64_t kSelectionColumn = 64;
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def LLM_ActTensor : RankedTensorOf<[BF16, F32]>;
def LLM_F32Tensor : RankedTensorOf<[F32]>;
def LLM_I32Tensor : RankedTensorOf<[I32]>;
def LLM_IdTensor : RankedTensorOf<[I32, I64]>;
def LLM_AnyWeight : AnyTypeOf<[RankedTensorOf<[BF16, F32]>, LLM_Fp8WeightType],
    "bf16/f32 tensor or !llm.fp8_weight">;
def LLM_CheckpointValue : AnyTypeOf<[
    RankedTensorOf<[BF16, F32, F8E4M3FN]>, LLM_Fp8WeightType],
    "tensor or !llm.fp8_weight">;

#endif // STRATA_DIALECTS_LLM_IR_LLMTYPES_TD
