//===- test_util.h - helpers shared by the checkpoint unit tests ----------===//
//
// Part of strata. Builds safetensors images and temporary directories for
// tests; not part of the library.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_TEST_UTIL_H
#define STRATA_RUNTIME_CHECKPOINT_TEST_UTIL_H

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace strata::runtime::testing {

/// A safetensors image: 8-byte little-endian length, `header`, `data`.
inline std::string safetensorsImage(const std::string &header,
                                    const std::string &data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

/// A fresh temporary directory, removed on destruction.
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "strata-ckpt-XXXXXX")
            .string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ec);
  }
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }
  void write(const std::string &name, const std::string &bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
  }

private:
  std::string path_;
};

/// The tiny nested FP8 config (values of
/// models/glm5_next/configs/glm5-tiny-fp8.json), for tests to edit.
inline nlohmann::json tinyConfig() {
  nlohmann::json text = {
      {"model_type", "glm5_next_text"}, {"vocab_size", 512},
      {"hidden_size", 256}, {"intermediate_size", 512},
      {"moe_intermediate_size", 128}, {"num_hidden_layers", 5},
      {"num_nextn_predict_layers", 1}, {"num_attention_heads", 2},
      {"num_key_value_heads", 2}, {"head_dim", 0}, {"q_lora_rank", 256},
      {"kv_lora_rank", 512}, {"qk_nope_head_dim", 256},
      {"qk_rope_head_dim", 0}, {"v_head_dim", 256},
      {"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5},
      {"hidden_act", "silu"}, {"first_k_dense_replace", 1},
      {"mlp_layer_types", {"dense", "sparse", "sparse", "sparse", "sparse"}},
      {"n_routed_experts", 16}, {"n_shared_experts", 1},
      {"num_experts_per_tok", 4}, {"scoring_func", "sigmoid"},
      {"topk_method", "noaux_tc"}, {"norm_topk_prob", true},
      {"routed_scaling_factor", 2.5}, {"n_group", 1}, {"topk_group", 1},
      {"swiglu_limit", 10.0}, {"mhc", true}, {"hc_mult", 4},
      {"hc_eps", 1e-6}, {"hc_sinkhorn_iters", 20},
      {"layer_types",
       {"linear_attention", "linear_attention", "linear_attention",
        "deepseek_sparse_attention", "linear_attention"}},
      {"linear_attn_config",
       {{"num_heads", 2}, {"head_dim", 128}, {"short_conv_kernel_size", 4},
        {"gate_lower_bound", -5.0}, {"kda_layers", {0, 1, 2, 4}},
        {"full_attn_layers", {3}}}},
      {"index_n_heads", 2}, {"index_head_dim", 128}, {"index_topk", 64},
      {"index_kpool", 4}, {"index_kpool_compress", true},
      {"index_kpool_always_select_tail", true},
      {"index_share_for_mtp_iteration", true},
      {"indexer_types", {"full", "full", "full", "full", "full"}},
      {"attention_bias", false}, {"tie_word_embeddings", false}};
  return nlohmann::json{{"model_type", "glm5_next"},
              {"tie_word_embeddings", false},
              {"text_config", text},
              {"quantization_config",
               {{"quant_method", "fp8"},
                {"fmt", "e4m3"},
                {"activation_scheme", "dynamic"},
                {"weight_block_size", {128, 128}}}}};
}

} // namespace strata::runtime::testing

#endif // STRATA_RUNTIME_CHECKPOINT_TEST_UTIL_H
