//===- glm5_config.h - typed GLM-5.3-Flash text config from config.json ----===//
//
// Part of strata. Reads a Hugging Face config.json for GLM-5.3-Flash
// (`glm5_next` with a nested `text_config` of type `glm5_next_text`, or the
// flat `glm5_next_text` form) into Glm5TextConfig and validates it. Nothing
// structural is defaulted: a missing required field is an error naming it
// (in particular `index_kpool`, whose transformers default 16 is wrong for
// the real checkpoint, which uses 4). The few optional fields and their
// defaults are listed on the struct. See docs/Checkpoint.md.
//
// Ownership: plain values. Thread-safety: the functions are pure.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_GLM5_CONFIG_H
#define STRATA_RUNTIME_CHECKPOINT_GLM5_CONFIG_H

#include "runtime/base/status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::runtime {

/// Attention kind of one decoder layer (`layer_types`).
enum class Glm5AttentionKind {
  kKda, ///< "linear_attention": Kimi Delta Attention.
  kMla, ///< "deepseek_sparse_attention" (alias "full_attention"): MLA + DSA.
};

/// Feed-forward kind of one decoder layer (`mlp_layer_types`).
enum class Glm5MlpKind {
  kDense,  ///< "dense": SwiGLU with intermediate_size.
  kSparse, ///< "sparse": MoE with routed and shared experts.
};

/// `quantization_config` (only block-FP8 e4m3 is supported).
struct Glm5Quantization {
  std::string quant_method;      ///< "fp8".
  std::string fmt;               ///< "e4m3".
  std::string activation_scheme; ///< e.g. "dynamic" (optional, "" if absent).
  int64_t block_rows = 128;      ///< weight_block_size[0]; must be 128.
  int64_t block_cols = 128;      ///< weight_block_size[1]; must be 128.
};

/// The text-model config. Every field is required in config.json unless its
/// comment says "optional".
struct Glm5TextConfig {
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;     ///< Dense MLP width.
  int64_t moe_intermediate_size = 0; ///< Routed-expert width.
  int64_t num_hidden_layers = 0;     ///< Target layers (MTP not counted).
  int64_t num_nextn_predict_layers = 0; ///< MTP layers, stored after the target.
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0; ///< Must equal num_attention_heads.
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0; ///< Must be 0 (NoPE).
  int64_t v_head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 0;
  std::string hidden_act; ///< Must be "silu".
  int64_t first_k_dense_replace = 0;
  std::vector<Glm5MlpKind> mlp_layer_types;
  int64_t n_routed_experts = 0;
  int64_t n_shared_experts = 0;
  int64_t num_experts_per_tok = 0;
  std::string scoring_func; ///< Must be "sigmoid".
  std::string topk_method;  ///< Must be "noaux_tc".
  bool norm_topk_prob = false;
  double routed_scaling_factor = 0;
  int64_t n_group = 1;    ///< Optional, default 1.
  int64_t topk_group = 1; ///< Optional, default 1.
  double swiglu_limit = 0;
  int64_t hc_mult = 0;
  double hc_eps = 0;
  int64_t hc_sinkhorn_iters = 0;
  std::vector<Glm5AttentionKind> layer_types;
  // linear_attn_config.
  int64_t linear_num_heads = 0;
  int64_t linear_head_dim = 0;
  int64_t linear_conv_kernel_size = 0; ///< short_conv_kernel_size.
  double linear_gate_lower_bound = 0;  ///< gate_lower_bound.
  std::vector<int64_t> kda_layers;       ///< 0-based.
  std::vector<int64_t> full_attn_layers; ///< 0-based.
  // Indexer (DSA with kpool).
  int64_t index_n_heads = 0;
  int64_t index_head_dim = 0;
  int64_t index_topk = 0;
  int64_t index_kpool = 0; ///< Required: never defaulted (HF's 16 is wrong).
  bool index_kpool_compress = false;
  bool index_kpool_always_select_tail = false;
  bool index_share_for_mtp_iteration = false;
  /// Per layer: true = "full" (own indexer), false = "shared". Optional:
  /// absent means every layer "full" (the transformers default schedule).
  std::vector<bool> indexer_full;
  /// End-of-sequence token ids (`eos_token_id`: one id or a list, in
  /// text_config or at the top level); empty when absent.
  std::vector<int64_t> eos_token_ids;
  /// `pad_token_id`, -1 when absent.
  int64_t pad_token_id = -1;
  /// Present when config.json has a quantization_config (top level, or inside
  /// text_config when the top level has none).
  std::optional<Glm5Quantization> quantization;

  /// True when block-FP8 weights are expected (quantization present).
  bool isFp8() const { return quantization.has_value(); }
  /// Checkpoint layer index of the first MTP layer (= num_hidden_layers).
  int64_t firstMtpLayer() const { return num_hidden_layers; }
};

/// Parses and validates config.json text. `source` names the file in errors.
StatusOr<Glm5TextConfig> parseGlm5Config(std::string_view json_text,
                                         std::string_view source);

/// Reads and parses the file at `path`.
StatusOr<Glm5TextConfig> loadGlm5Config(const std::string &path);

/// Cross-field validation (called by parseGlm5Config; exposed for configs
/// built in code). Errors name the field(s) and the values.
Status validateGlm5Config(const Glm5TextConfig &config,
                          std::string_view source);

/// Reads a whole file into `out_text`.
Status readTextFile(const std::string &path, std::string &out_text);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_CHECKPOINT_GLM5_CONFIG_H
