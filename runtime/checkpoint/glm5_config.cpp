//===- glm5_config.cpp - typed GLM-5.3-Flash text config from config.json -===//
//
// Part of strata. See glm5_config.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/glm5_config.h"

#include "runtime/checkpoint/json_util.h"

#include <fmt/ranges.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace strata::runtime {

using json_util::Json;
using json_util::Reader;

Status readTextFile(const std::string &path, std::string &out_text) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return notFound("cannot open '{}': {}", path, std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad())
    return dataLoss("cannot read '{}'", path);
  out_text = buffer.str();
  return okStatus();
}

namespace {

// Reads `key` into `out` (int) from `obj` at `path`.
#define READ_FIELD(kind, out, obj, path, key)                                  \
  do {                                                                         \
    auto _value = reader.kind(obj, path, key);                                 \
    if (!_value.ok())                                                          \
      return _value.status();                                                  \
    out = std::move(_value).value();                                           \
  } while (false)

Status parseLayerTypes(const Reader &reader, const Json &text,
                       std::string_view path, Glm5TextConfig &config) {
  std::vector<std::string> names;
  READ_FIELD(requireStringArray, names, text, path, "layer_types");
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "linear_attention")
      config.layer_types.push_back(Glm5AttentionKind::kKda);
    else if (names[i] == "deepseek_sparse_attention" ||
             names[i] == "full_attention")
      config.layer_types.push_back(Glm5AttentionKind::kMla);
    else
      return invalidArgument(
          "{}: field '{}[{}]' has unknown value '{}' (expected "
          "'linear_attention' or 'deepseek_sparse_attention')",
          reader.source, json_util::joinPath(path, "layer_types"), i, names[i]);
  }
  READ_FIELD(requireStringArray, names, text, path, "mlp_layer_types");
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "dense")
      config.mlp_layer_types.push_back(Glm5MlpKind::kDense);
    else if (names[i] == "sparse")
      config.mlp_layer_types.push_back(Glm5MlpKind::kSparse);
    else
      return invalidArgument("{}: field '{}[{}]' has unknown value '{}' "
                             "(expected 'dense' or 'sparse')",
                             reader.source,
                             json_util::joinPath(path, "mlp_layer_types"), i,
                             names[i]);
  }
  if (Reader::has(text, "indexer_types")) {
    READ_FIELD(requireStringArray, names, text, path, "indexer_types");
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] != "full" && names[i] != "shared")
        return invalidArgument("{}: field '{}[{}]' has unknown value '{}' "
                               "(expected 'full' or 'shared')",
                               reader.source,
                               json_util::joinPath(path, "indexer_types"), i,
                               names[i]);
      config.indexer_full.push_back(names[i] == "full");
    }
  }
  return okStatus();
}

Status parseQuantization(const Reader &reader, const Json &q,
                         std::string_view path, Glm5TextConfig &config) {
  Glm5Quantization quant;
  READ_FIELD(requireString, quant.quant_method, q, path, "quant_method");
  READ_FIELD(requireString, quant.fmt, q, path, "fmt");
  if (Reader::has(q, "activation_scheme"))
    READ_FIELD(requireString, quant.activation_scheme, q, path,
               "activation_scheme");
  std::vector<int64_t> block;
  READ_FIELD(requireIntArray, block, q, path, "weight_block_size");
  if (quant.quant_method != "fp8")
    return invalidArgument("{}: field '{}' is '{}', only 'fp8' is supported",
                           reader.source,
                           json_util::joinPath(path, "quant_method"),
                           quant.quant_method);
  if (quant.fmt != "e4m3")
    return invalidArgument("{}: field '{}' is '{}', only 'e4m3' is supported",
                           reader.source, json_util::joinPath(path, "fmt"),
                           quant.fmt);
  if (block.size() != 2 || block[0] != 128 || block[1] != 128)
    return invalidArgument(
        "{}: field '{}' is [{}], only [128, 128] is supported", reader.source,
        json_util::joinPath(path, "weight_block_size"),
        fmt::join(block, ", "));
  quant.block_rows = block[0];
  quant.block_cols = block[1];
  config.quantization = quant;
  return okStatus();
}

Status parseText(const Reader &reader, const Json &t, std::string_view p,
                 Glm5TextConfig &c) {
  READ_FIELD(requireInt, c.vocab_size, t, p, "vocab_size");
  READ_FIELD(requireInt, c.hidden_size, t, p, "hidden_size");
  READ_FIELD(requireInt, c.intermediate_size, t, p, "intermediate_size");
  READ_FIELD(requireInt, c.moe_intermediate_size, t, p, "moe_intermediate_size");
  READ_FIELD(requireInt, c.num_hidden_layers, t, p, "num_hidden_layers");
  READ_FIELD(requireInt, c.num_nextn_predict_layers, t, p,
             "num_nextn_predict_layers");
  READ_FIELD(requireInt, c.num_attention_heads, t, p, "num_attention_heads");
  READ_FIELD(requireInt, c.num_key_value_heads, t, p, "num_key_value_heads");
  READ_FIELD(requireInt, c.q_lora_rank, t, p, "q_lora_rank");
  READ_FIELD(requireInt, c.kv_lora_rank, t, p, "kv_lora_rank");
  READ_FIELD(requireInt, c.qk_nope_head_dim, t, p, "qk_nope_head_dim");
  READ_FIELD(requireInt, c.qk_rope_head_dim, t, p, "qk_rope_head_dim");
  READ_FIELD(requireInt, c.v_head_dim, t, p, "v_head_dim");
  READ_FIELD(requireInt, c.max_position_embeddings, t, p,
             "max_position_embeddings");
  READ_FIELD(requireNumber, c.rms_norm_eps, t, p, "rms_norm_eps");
  READ_FIELD(requireString, c.hidden_act, t, p, "hidden_act");
  READ_FIELD(requireInt, c.first_k_dense_replace, t, p, "first_k_dense_replace");
  READ_FIELD(requireInt, c.n_routed_experts, t, p, "n_routed_experts");
  READ_FIELD(requireInt, c.n_shared_experts, t, p, "n_shared_experts");
  READ_FIELD(requireInt, c.num_experts_per_tok, t, p, "num_experts_per_tok");
  READ_FIELD(requireString, c.scoring_func, t, p, "scoring_func");
  READ_FIELD(requireString, c.topk_method, t, p, "topk_method");
  READ_FIELD(requireBool, c.norm_topk_prob, t, p, "norm_topk_prob");
  READ_FIELD(requireNumber, c.routed_scaling_factor, t, p,
             "routed_scaling_factor");
  if (Reader::has(t, "n_group"))
    READ_FIELD(requireInt, c.n_group, t, p, "n_group");
  if (Reader::has(t, "topk_group"))
    READ_FIELD(requireInt, c.topk_group, t, p, "topk_group");
  READ_FIELD(requireNumber, c.swiglu_limit, t, p, "swiglu_limit");
  bool mhc = false;
  READ_FIELD(requireBool, mhc, t, p, "mhc");
  if (!mhc)
    return invalidArgument("{}: field '{}' is false; only mHC models "
                           "(mhc: true) are supported",
                           reader.source, json_util::joinPath(p, "mhc"));
  READ_FIELD(requireInt, c.hc_mult, t, p, "hc_mult");
  READ_FIELD(requireNumber, c.hc_eps, t, p, "hc_eps");
  READ_FIELD(requireInt, c.hc_sinkhorn_iters, t, p, "hc_sinkhorn_iters");
  STRATA_RETURN_IF_ERROR(parseLayerTypes(reader, t, p, c));

  const Json *linear = nullptr;
  READ_FIELD(requireObject, linear, t, p, "linear_attn_config");
  std::string lp = json_util::joinPath(p, "linear_attn_config");
  READ_FIELD(requireInt, c.linear_num_heads, *linear, lp, "num_heads");
  READ_FIELD(requireInt, c.linear_head_dim, *linear, lp, "head_dim");
  READ_FIELD(requireInt, c.linear_conv_kernel_size, *linear, lp,
             "short_conv_kernel_size");
  READ_FIELD(requireNumber, c.linear_gate_lower_bound, *linear, lp,
             "gate_lower_bound");
  READ_FIELD(requireIntArray, c.kda_layers, *linear, lp, "kda_layers");
  READ_FIELD(requireIntArray, c.full_attn_layers, *linear, lp,
             "full_attn_layers");

  READ_FIELD(requireInt, c.index_n_heads, t, p, "index_n_heads");
  READ_FIELD(requireInt, c.index_head_dim, t, p, "index_head_dim");
  READ_FIELD(requireInt, c.index_topk, t, p, "index_topk");
  READ_FIELD(requireInt, c.index_kpool, t, p, "index_kpool");
  READ_FIELD(requireBool, c.index_kpool_compress, t, p, "index_kpool_compress");
  READ_FIELD(requireBool, c.index_kpool_always_select_tail, t, p,
             "index_kpool_always_select_tail");
  READ_FIELD(requireBool, c.index_share_for_mtp_iteration, t, p,
             "index_share_for_mtp_iteration");

  if (Reader::has(t, "attention_bias")) {
    bool bias = false;
    READ_FIELD(requireBool, bias, t, p, "attention_bias");
    if (bias)
      return invalidArgument("{}: field '{}' is true; attention biases are "
                             "not supported",
                             reader.source,
                             json_util::joinPath(p, "attention_bias"));
  }
  return okStatus();
}

#undef READ_FIELD

// Formats an index list for messages.
std::string listString(const std::vector<int64_t> &values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

} // namespace

StatusOr<Glm5TextConfig> parseGlm5Config(std::string_view json_text,
                                         std::string_view source) {
  STRATA_ASSIGN_OR_RETURN(Json root, json_util::parse(json_text, source));
  Reader reader{std::string(source)};
  if (!root.is_object())
    return invalidArgument("{}: top level must be an object, found {}", source,
                           json_util::typeName(root));
  Glm5TextConfig config;
  // Retrieve the text object and its path; check model types.
  STRATA_ASSIGN_OR_RETURN(std::string model_type,
                          reader.requireString(root, "", "model_type"));
  const Json *text = &root;
  std::string text_path;
  if (Reader::has(root, "text_config")) {
    if (model_type != "glm5_next")
      return invalidArgument("{}: field 'model_type' is '{}', expected "
                             "'glm5_next' for a config with text_config",
                             source, model_type);
    STRATA_ASSIGN_OR_RETURN(text, reader.requireObject(root, "", "text_config"));
    text_path = "text_config";
    STRATA_ASSIGN_OR_RETURN(std::string text_type,
                            reader.requireString(*text, text_path, "model_type"));
    if (text_type != "glm5_next_text")
      return invalidArgument("{}: field 'text_config.model_type' is '{}', "
                             "expected 'glm5_next_text'",
                             source, text_type);
  } else if (model_type != "glm5_next_text" && model_type != "glm5_next") {
    return invalidArgument("{}: field 'model_type' is '{}', expected "
                           "'glm5_next_text' (flat form) or 'glm5_next'",
                           source, model_type);
  }
  // tie_word_embeddings may sit at either level; true is unsupported.
  for (const auto &[object, path] :
       {std::pair<const Json *, std::string>{&root, ""}, {text, text_path}}) {
    if (!Reader::has(*object, "tie_word_embeddings"))
      continue;
    STRATA_ASSIGN_OR_RETURN(
        bool tied, reader.requireBool(*object, path, "tie_word_embeddings"));
    if (tied)
      return invalidArgument("{}: field '{}' is true; GLM-5.3-Flash has an "
                             "untied lm_head",
                             source,
                             json_util::joinPath(path, "tie_word_embeddings"));
  }
  STRATA_RETURN_IF_ERROR(parseText(reader, *text, text_path, config));
  // Token ids: text_config first, then the top level; eos may be a list.
  for (const auto &[object, path] :
       {std::pair<const Json *, std::string>{text, text_path}, {&root, ""}}) {
    if (config.eos_token_ids.empty() && Reader::has(*object, "eos_token_id")) {
      if ((*object)["eos_token_id"].is_array()) {
        STRATA_ASSIGN_OR_RETURN(config.eos_token_ids,
                                reader.requireIntArray(*object, path,
                                                       "eos_token_id"));
      } else {
        STRATA_ASSIGN_OR_RETURN(int64_t id, reader.requireInt(*object, path,
                                                               "eos_token_id"));
        config.eos_token_ids.push_back(id);
      }
    }
    if (config.pad_token_id < 0 && Reader::has(*object, "pad_token_id") &&
        !(*object)["pad_token_id"].is_null()) {
      STRATA_ASSIGN_OR_RETURN(config.pad_token_id,
                              reader.requireInt(*object, path, "pad_token_id"));
    }
  }
  if (Reader::has(root, "quantization_config")) {
    STRATA_ASSIGN_OR_RETURN(const Json *q,
                            reader.requireObject(root, "", "quantization_config"));
    STRATA_RETURN_IF_ERROR(
        parseQuantization(reader, *q, "quantization_config", config));
  } else if (text != &root && Reader::has(*text, "quantization_config")) {
    STRATA_ASSIGN_OR_RETURN(
        const Json *q, reader.requireObject(*text, text_path, "quantization_config"));
    STRATA_RETURN_IF_ERROR(parseQuantization(
        reader, *q, json_util::joinPath(text_path, "quantization_config"),
        config));
  }
  STRATA_RETURN_IF_ERROR(validateGlm5Config(config, source));
  return config;
}

StatusOr<Glm5TextConfig> loadGlm5Config(const std::string &path) {
  std::string text;
  STRATA_RETURN_IF_ERROR(readTextFile(path, text));
  return parseGlm5Config(text, path);
}

Status validateGlm5Config(const Glm5TextConfig &c, std::string_view source) {
  const std::pair<const char *, int64_t> positives[] = {
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"moe_intermediate_size", c.moe_intermediate_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"q_lora_rank", c.q_lora_rank},
      {"kv_lora_rank", c.kv_lora_rank},
      {"qk_nope_head_dim", c.qk_nope_head_dim},
      {"v_head_dim", c.v_head_dim},
      {"n_routed_experts", c.n_routed_experts},
      {"num_experts_per_tok", c.num_experts_per_tok},
      {"n_group", c.n_group},
      {"topk_group", c.topk_group},
      {"hc_mult", c.hc_mult},
      {"hc_sinkhorn_iters", c.hc_sinkhorn_iters},
      {"linear_attn_config.num_heads", c.linear_num_heads},
      {"linear_attn_config.head_dim", c.linear_head_dim},
      {"linear_attn_config.short_conv_kernel_size", c.linear_conv_kernel_size},
      {"index_n_heads", c.index_n_heads},
      {"index_head_dim", c.index_head_dim},
      {"index_topk", c.index_topk},
      {"index_kpool", c.index_kpool},
  };
  for (const auto &[name, value] : positives)
    if (value <= 0)
      return invalidArgument("{}: field '{}' must be positive, found {}",
                             source, name, value);
  // Bound sizes so products of dims cannot overflow int64 anywhere.
  const int64_t kMaxDim = int64_t(1) << 24;
  for (const auto &[name, value] : positives)
    if (value > kMaxDim)
      return invalidArgument("{}: field '{}' is {}, above the supported "
                             "maximum {}",
                             source, name, value, kMaxDim);
  if (c.n_shared_experts < 0 || c.n_shared_experts > 64)
    return invalidArgument("{}: field 'n_shared_experts' must be in [0, 64], "
                           "found {}",
                           source, c.n_shared_experts);
  if (c.num_nextn_predict_layers < 0 || c.num_nextn_predict_layers > 16)
    return invalidArgument("{}: field 'num_nextn_predict_layers' must be in "
                           "[0, 16], found {}",
                           source, c.num_nextn_predict_layers);
  if (c.qk_rope_head_dim != 0)
    return invalidArgument("{}: field 'qk_rope_head_dim' must be 0 (NoPE), "
                           "found {}",
                           source, c.qk_rope_head_dim);
  if (c.num_key_value_heads != c.num_attention_heads)
    return invalidArgument("{}: field 'num_key_value_heads' ({}) must equal "
                           "num_attention_heads ({})",
                           source, c.num_key_value_heads,
                           c.num_attention_heads);
  if (c.hidden_act != "silu")
    return invalidArgument("{}: field 'hidden_act' is '{}', expected 'silu'",
                           source, c.hidden_act);
  if (c.scoring_func != "sigmoid")
    return invalidArgument("{}: field 'scoring_func' is '{}', expected "
                           "'sigmoid'",
                           source, c.scoring_func);
  if (c.topk_method != "noaux_tc")
    return invalidArgument("{}: field 'topk_method' is '{}', expected "
                           "'noaux_tc'",
                           source, c.topk_method);
  if (c.num_experts_per_tok > c.n_routed_experts)
    return invalidArgument("{}: field 'num_experts_per_tok' ({}) exceeds "
                           "n_routed_experts ({})",
                           source, c.num_experts_per_tok, c.n_routed_experts);
  if (c.n_routed_experts % c.n_group != 0 || c.topk_group > c.n_group)
    return invalidArgument("{}: fields 'n_group' ({}) and 'topk_group' ({}) "
                           "must satisfy n_routed_experts ({}) % n_group == 0 "
                           "and topk_group <= n_group",
                           source, c.n_group, c.topk_group, c.n_routed_experts);
  if (c.index_topk % c.index_kpool != 0)
    return invalidArgument("{}: field 'index_topk' ({}) must be a multiple of "
                           "index_kpool ({})",
                           source, c.index_topk, c.index_kpool);
  const auto layers = static_cast<std::size_t>(c.num_hidden_layers);
  if (c.layer_types.size() != layers)
    return invalidArgument("{}: field 'layer_types' has {} entries, expected "
                           "num_hidden_layers = {}",
                           source, c.layer_types.size(), layers);
  if (c.mlp_layer_types.size() != layers)
    return invalidArgument("{}: field 'mlp_layer_types' has {} entries, "
                           "expected num_hidden_layers = {}",
                           source, c.mlp_layer_types.size(), layers);
  if (!c.indexer_full.empty() && c.indexer_full.size() != layers)
    return invalidArgument("{}: field 'indexer_types' has {} entries, "
                           "expected num_hidden_layers = {}",
                           source, c.indexer_full.size(), layers);
  if (c.first_k_dense_replace < 0 ||
      c.first_k_dense_replace > c.num_hidden_layers)
    return invalidArgument("{}: field 'first_k_dense_replace' ({}) must be in "
                           "[0, num_hidden_layers = {}]",
                           source, c.first_k_dense_replace, layers);
  for (std::size_t i = 0; i < layers; ++i) {
    Glm5MlpKind expected = static_cast<int64_t>(i) < c.first_k_dense_replace
                               ? Glm5MlpKind::kDense
                               : Glm5MlpKind::kSparse;
    if (c.mlp_layer_types[i] != expected)
      return invalidArgument(
          "{}: field 'mlp_layer_types[{}]' is '{}' but first_k_dense_replace "
          "= {} makes layer {} '{}'",
          source, i,
          c.mlp_layer_types[i] == Glm5MlpKind::kDense ? "dense" : "sparse",
          c.first_k_dense_replace, i,
          expected == Glm5MlpKind::kDense ? "dense" : "sparse");
  }
  std::vector<int64_t> kda, mla;
  for (std::size_t i = 0; i < layers; ++i)
    (c.layer_types[i] == Glm5AttentionKind::kKda ? kda : mla)
        .push_back(static_cast<int64_t>(i));
  if (c.kda_layers != kda)
    return invalidArgument("{}: field 'linear_attn_config.kda_layers' is {} "
                           "but layer_types has linear_attention at {}",
                           source, listString(c.kda_layers), listString(kda));
  if (c.full_attn_layers != mla)
    return invalidArgument("{}: field 'linear_attn_config.full_attn_layers' "
                           "is {} but layer_types has "
                           "deepseek_sparse_attention at {}",
                           source, listString(c.full_attn_layers),
                           listString(mla));
  if (!c.indexer_full.empty()) {
    for (int64_t layer : mla) {
      if (c.indexer_full[layer])
        break;
      return invalidArgument("{}: field 'indexer_types[{}]' is 'shared' but "
                             "no earlier MLA layer has a full indexer",
                             source, layer);
    }
  }
  if (c.rms_norm_eps <= 0 || c.hc_eps <= 0)
    return invalidArgument("{}: fields 'rms_norm_eps' ({}) and 'hc_eps' ({}) "
                           "must be positive",
                           source, c.rms_norm_eps, c.hc_eps);
  return okStatus();
}

} // namespace strata::runtime
