//===- glm5_manifest_test.cpp - tests of the GLM-5.3-Flash manifest -------===//

#include "runtime/checkpoint/glm5_manifest.h"

#include "runtime/checkpoint/test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace strata::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::tinyConfig;

Glm5TextConfig parse(const nlohmann::json &json) {
  auto config = parseGlm5Config(json.dump(), "c.json");
  EXPECT_TRUE(config.ok()) << config.status().toString();
  return config.ok() ? *config : Glm5TextConfig();
}

std::map<std::string, TensorSpec> byName(const std::vector<TensorSpec> &specs) {
  std::map<std::string, TensorSpec> out;
  for (const TensorSpec &s : specs)
    EXPECT_TRUE(out.emplace(s.name, s).second) << "duplicate " << s.name;
  return out;
}

// Expects tensor `name` with `dtype` and `shape` in `m`.
void expectTensor(const std::map<std::string, TensorSpec> &m,
                  const std::string &name, DType dtype,
                  std::vector<int64_t> shape) {
  auto it = m.find(name);
  ASSERT_NE(it, m.end()) << "missing " << name;
  EXPECT_EQ(it->second.dtype, dtype) << name;
  EXPECT_EQ(it->second.shape, shape) << name;
}

const std::string L = "model.language_model.layers.";

TEST(Glm5ManifestTest, TinyFp8HasSpecNamesShapesAndDtypes) {
  auto manifest = glm5TensorManifest(parse(tinyConfig()));
  ASSERT_TRUE(manifest.ok());
  auto m = byName(*manifest);
  // Globals.
  expectTensor(m, "model.language_model.embed_tokens.weight", DType::kBF16,
               {512, 256});
  expectTensor(m, "model.language_model.norm.weight", DType::kBF16, {256});
  expectTensor(m, "lm_head.weight", DType::kBF16, {512, 256});
  // mHC, layer 0 (KDA + dense MLP).
  expectTensor(m, L + "0.hc_attn_fn", DType::kF32, {24, 1024});
  expectTensor(m, L + "0.hc_ffn_base", DType::kF32, {24});
  expectTensor(m, L + "0.hc_ffn_scale", DType::kF32, {3});
  expectTensor(m, L + "0.self_attn.q_proj.weight", DType::kBF16, {256, 256});
  expectTensor(m, L + "0.self_attn.v_conv1d.weight", DType::kBF16,
               {256, 1, 4});
  expectTensor(m, L + "0.self_attn.f_b_proj.weight", DType::kBF16, {256, 128});
  expectTensor(m, L + "0.self_attn.b_proj.weight", DType::kBF16, {2, 256});
  expectTensor(m, L + "0.self_attn.A_log", DType::kF32, {2});
  expectTensor(m, L + "0.self_attn.dt_bias", DType::kF32, {256});
  expectTensor(m, L + "0.self_attn.o_norm.weight", DType::kBF16, {128});
  expectTensor(m, L + "0.self_attn.o_proj.weight", DType::kBF16, {256, 256});
  expectTensor(m, L + "0.mlp.gate_proj.weight", DType::kF8E4M3, {512, 256});
  expectTensor(m, L + "0.mlp.gate_proj.weight_scale_inv", DType::kF32, {4, 2});
  expectTensor(m, L + "0.mlp.down_proj.weight_scale_inv", DType::kF32, {2, 4});
  // Layer 3: MLA + indexer + MoE.
  expectTensor(m, L + "3.self_attn.q_a_proj.weight", DType::kF8E4M3,
               {256, 256});
  expectTensor(m, L + "3.self_attn.q_b_proj.weight", DType::kF8E4M3,
               {512, 256});
  expectTensor(m, L + "3.self_attn.kv_a_proj_with_mqa.weight_scale_inv",
               DType::kF32, {4, 2});
  expectTensor(m, L + "3.self_attn.kv_b_proj.weight", DType::kBF16,
               {1024, 512});
  expectTensor(m, L + "3.self_attn.o_proj.weight", DType::kF8E4M3, {256, 512});
  expectTensor(m, L + "3.self_attn.indexer.wq_b.weight", DType::kBF16,
               {256, 256});
  expectTensor(m, L + "3.self_attn.indexer.k_norm.bias", DType::kBF16, {128});
  expectTensor(m, L + "3.self_attn.indexer.index_kpool_compress_gate",
               DType::kBF16, {128, 256});
  expectTensor(m, L + "3.self_attn.indexer.index_kpool_compress_ape",
               DType::kBF16, {4, 128});
  expectTensor(m, L + "3.mlp.gate.weight", DType::kF32, {16, 256});
  expectTensor(m, L + "3.mlp.gate.e_score_correction_bias", DType::kF32, {16});
  expectTensor(m, L + "3.mlp.experts.15.down_proj.weight", DType::kF8E4M3,
               {256, 128});
  expectTensor(m, L + "3.mlp.shared_experts.up_proj.weight", DType::kF8E4M3,
               {128, 256});
  // MTP layer 5: no mHC, MLA + indexer + MoE.
  expectTensor(m, L + "5.enorm.weight", DType::kBF16, {256});
  expectTensor(m, L + "5.hnorm.weight", DType::kBF16, {256});
  expectTensor(m, L + "5.eh_proj.weight", DType::kBF16, {256, 512});
  expectTensor(m, L + "5.shared_head.norm.weight", DType::kBF16, {256});
  expectTensor(m, L + "5.self_attn.q_a_proj.weight", DType::kF8E4M3,
               {256, 256});
  expectTensor(m, L + "5.self_attn.indexer.wk.weight", DType::kBF16,
               {128, 256});
  expectTensor(m, L + "5.mlp.experts.0.gate_proj.weight", DType::kF8E4M3,
               {128, 256});
  EXPECT_EQ(m.count(L + "5.hc_attn_fn"), 0u);
  EXPECT_EQ(m.count(L + "3.self_attn.q_proj.weight"), 0u);
  EXPECT_EQ(m.count(L + "0.self_attn.indexer.wk.weight"), 0u);
  EXPECT_EQ(m.count(L + "6.input_layernorm.weight"), 0u);
  // KDA o_proj is never FP8 even in the FP8 config.
  EXPECT_EQ(m.count(L + "0.self_attn.o_proj.weight_scale_inv"), 0u);
}

TEST(Glm5ManifestTest, CountsMatchTheLayerStructure) {
  auto manifest = glm5TensorManifest(parse(tinyConfig()));
  ASSERT_TRUE(manifest.ok());
  // Per layer: 2 norms + 6 hc; KDA 18; MLA 10 + 3 scales... counted directly.
  const std::size_t globals = 3, hc = 6, norms = 2;
  const std::size_t kda = 3 + 3 + 4 + 1 + 2 + 1 + 1;         // 15
  const std::size_t mla = 5 + 2 + 4 /*scales*/ + 7 /*indexer*/; // 18
  const std::size_t dense = 3 * 2, expert = 3 * 2;
  const std::size_t moe = 2 + 16 * expert + expert;
  const std::size_t mtp = 4 + norms + mla + moe;
  const std::size_t expected = globals + (norms + hc + kda + dense) +
                               2 * (norms + hc + kda + moe) +
                               (norms + hc + mla + moe) +
                               (norms + hc + kda + moe) + mtp;
  EXPECT_EQ(manifest->size(), expected);
}

TEST(Glm5ManifestTest, Bf16ConfigHasNoFp8) {
  nlohmann::json c = tinyConfig();
  c.erase("quantization_config");
  auto manifest = glm5TensorManifest(parse(c));
  ASSERT_TRUE(manifest.ok());
  auto m = byName(*manifest);
  for (const TensorSpec &s : *manifest) {
    EXPECT_NE(s.dtype, DType::kF8E4M3) << s.name;
    EXPECT_FALSE(s.is_scale_inv) << s.name;
  }
  expectTensor(m, L + "3.self_attn.q_a_proj.weight", DType::kBF16, {256, 256});
}

TEST(Glm5ManifestTest, SharedIndexerLayersHaveNoIndexer) {
  nlohmann::json c = tinyConfig();
  c["text_config"]["layer_types"][4] = "deepseek_sparse_attention";
  c["text_config"]["linear_attn_config"]["kda_layers"] = {0, 1, 2};
  c["text_config"]["linear_attn_config"]["full_attn_layers"] = {3, 4};
  c["text_config"]["indexer_types"][4] = "shared";
  auto manifest = glm5TensorManifest(parse(c));
  ASSERT_TRUE(manifest.ok());
  auto m = byName(*manifest);
  EXPECT_EQ(m.count(L + "3.self_attn.indexer.wk.weight"), 1u);
  EXPECT_EQ(m.count(L + "4.self_attn.indexer.wk.weight"), 0u);
  EXPECT_EQ(m.count(L + "4.self_attn.kv_b_proj.weight"), 1u);
}

TEST(Glm5ManifestTest, DenseIndexerHasNoCompressionTensors) {
  nlohmann::json c = tinyConfig();
  c["text_config"]["index_kpool_compress"] = false;
  auto manifest = glm5TensorManifest(parse(c));
  ASSERT_TRUE(manifest.ok());
  auto m = byName(*manifest);
  for (const char *layer : {"3", "5"}) {
    std::string p = L + layer + ".self_attn.indexer.";
    EXPECT_EQ(m.count(p + "wk.weight"), 1u) << layer;
    EXPECT_EQ(m.count(p + "index_kpool_compress_gate"), 0u) << layer;
    EXPECT_EQ(m.count(p + "index_kpool_compress_ape"), 0u) << layer;
  }
}

TEST(Glm5ManifestTest, OnlyLayersSelectsLayersAndGlobals) {
  ManifestOptions options;
  options.only_layers = std::vector<int64_t>{3};
  auto manifest = glm5TensorManifest(parse(tinyConfig()), options);
  ASSERT_TRUE(manifest.ok());
  for (const TensorSpec &s : *manifest)
    if (s.name.rfind(L, 0) == 0)
      EXPECT_EQ(s.name.rfind(L + "3.", 0), 0u) << s.name;
  EXPECT_EQ(byName(*manifest).count("lm_head.weight"), 1u);
  options.only_layers = std::vector<int64_t>{6};
  auto bad = glm5TensorManifest(parse(tinyConfig()), options);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("layer 6 is out of range: the checkpoint has layers "
                        "0..5 (5 target + 1 MTP)"));
}

TEST(Glm5ManifestTest, RealConfigShapesFollowTheSpec) {
  nlohmann::json c = tinyConfig();
  auto &t = c["text_config"];
  t["vocab_size"] = 154880;
  t["hidden_size"] = 4096;
  t["intermediate_size"] = 12288;
  t["moe_intermediate_size"] = 2048;
  t["q_lora_rank"] = 1536;
  t["num_attention_heads"] = 64;
  t["num_key_value_heads"] = 64;
  t["n_routed_experts"] = 288;
  t["num_experts_per_tok"] = 8;
  t["linear_attn_config"]["num_heads"] = 64;
  t["index_n_heads"] = 32;
  t["index_topk"] = 2048;
  auto manifest = glm5TensorManifest(parse(c));
  ASSERT_TRUE(manifest.ok());
  auto m = byName(*manifest);
  expectTensor(m, L + "3.self_attn.q_a_proj.weight_scale_inv", DType::kF32,
               {12, 32});
  expectTensor(m, L + "3.self_attn.q_b_proj.weight_scale_inv", DType::kF32,
               {128, 12});
  expectTensor(m, L + "3.self_attn.kv_b_proj.weight", DType::kBF16,
               {32768, 512});
  expectTensor(m, L + "3.self_attn.o_proj.weight_scale_inv", DType::kF32,
               {32, 128});
  expectTensor(m, L + "0.hc_attn_fn", DType::kF32, {24, 16384});
  expectTensor(m, L + "0.self_attn.q_conv1d.weight", DType::kBF16,
               {8192, 1, 4});
  expectTensor(m, L + "0.mlp.up_proj.weight_scale_inv", DType::kF32, {96, 32});
  expectTensor(m, L + "3.mlp.experts.287.down_proj.weight_scale_inv",
               DType::kF32, {32, 16});
  expectTensor(m, L + "3.self_attn.indexer.wq_b.weight", DType::kBF16,
               {4096, 1536});
  expectTensor(m, L + "5.eh_proj.weight", DType::kBF16, {4096, 8192});
}

// A checkpoint image holding `specs` with zeroed data.
std::string imageOf(const std::vector<TensorSpec> &specs) {
  std::string header = "{";
  uint64_t offset = 0;
  for (const TensorSpec &s : specs) {
    uint64_t bytes = dtypeSize(s.dtype);
    for (int64_t d : s.shape)
      bytes *= d;
    header += fmt::format(
        R"({}"{}":{{"dtype":"{}","shape":{},"data_offsets":[{},{}]}})",
        header.size() > 1 ? "," : "", s.name, dtypeName(s.dtype),
        nlohmann::json(s.shape).dump(), offset, offset + bytes);
    offset += bytes;
  }
  return testing::safetensorsImage(header + "}", std::string(offset, '\0'));
}

TEST(Glm5ManifestTest, ValidateNamesMissingAndMismatchedTensors) {
  std::vector<TensorSpec> manifest = {
      {"a.weight", DType::kBF16, {4, 8}, "", false},
      {"b.weight", DType::kF32, {2}, "", false},
      {"c.weight", DType::kBF16, {3}, "", false},
  };
  std::vector<TensorSpec> actual = {
      {"a.weight", DType::kF32, {4, 8}, "", false},
      {"b.weight", DType::kF32, {3}, "", false},
      {"d.weight", DType::kF32, {1}, "", false},
  };
  testing::TempDir dir;
  dir.write("model.safetensors", imageOf(actual));
  auto ckpt = Checkpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  std::string message(validateCheckpoint(**ckpt, manifest).message());
  EXPECT_THAT(message, HasSubstr("3 problems"));
  EXPECT_THAT(message, HasSubstr("tensor 'a.weight' in '"));
  EXPECT_THAT(message, HasSubstr("expected BF16 [4, 8], found F32 [4, 8]"));
  EXPECT_THAT(message, HasSubstr("expected F32 [2], found F32 [3]"));
  EXPECT_THAT(message, HasSubstr("missing tensor 'c.weight' (BF16 [3])"));
  EXPECT_THAT(message, Not(HasSubstr("d.weight")));
  ValidateOptions strict;
  strict.reject_unlisted = true;
  EXPECT_THAT(std::string(validateCheckpoint(**ckpt, manifest, strict).message()),
              HasSubstr("unlisted tensor 'd.weight'"));
  EXPECT_TRUE(validateCheckpoint(**ckpt, {actual[0]}).ok());
}

} // namespace
} // namespace strata::runtime
