//===- glm5_config_test.cpp - tests of config.json parsing ----------------===//
//
// Each case edits a tiny nested config (the values of
// models/glm5_next/configs/glm5-tiny-fp8.json) and checks the message names
// the field.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/glm5_config.h"

#include "runtime/checkpoint/test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace strata::runtime {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;
using testing::tinyConfig;

std::string errorOf(const Json &config) {
  auto parsed = parseGlm5Config(config.dump(), "c.json");
  return parsed.ok() ? "ok" : std::string(parsed.status().message());
}

TEST(Glm5ConfigTest, ParsesNestedFp8Config) {
  auto config = parseGlm5Config(tinyConfig().dump(), "c.json");
  ASSERT_TRUE(config.ok()) << config.status().toString();
  EXPECT_EQ(config->hidden_size, 256);
  EXPECT_EQ(config->index_kpool, 4);
  EXPECT_TRUE(config->isFp8());
  EXPECT_EQ(config->layer_types[3], Glm5AttentionKind::kMla);
  EXPECT_EQ(config->mlp_layer_types[0], Glm5MlpKind::kDense);
  EXPECT_EQ(config->kda_layers, (std::vector<int64_t>{0, 1, 2, 4}));
  EXPECT_EQ(config->firstMtpLayer(), 5);
}

TEST(Glm5ConfigTest, ParsesFlatConfigWithoutQuantization) {
  Json flat = tinyConfig()["text_config"];
  auto config = parseGlm5Config(flat.dump(), "c.json");
  ASSERT_TRUE(config.ok()) << config.status().toString();
  EXPECT_FALSE(config->isFp8());
  Json flat_fp8 = flat;
  flat_fp8["quantization_config"] = tinyConfig()["quantization_config"];
  auto fp8 = parseGlm5Config(flat_fp8.dump(), "c.json");
  ASSERT_TRUE(fp8.ok()) << fp8.status().toString();
  EXPECT_TRUE(fp8->isFp8());
}

TEST(Glm5ConfigTest, OptionalFieldsTakeDocumentedDefaults) {
  Json c = tinyConfig();
  c["text_config"].erase("indexer_types");
  c["text_config"].erase("n_group");
  c["text_config"].erase("topk_group");
  auto config = parseGlm5Config(c.dump(), "c.json");
  ASSERT_TRUE(config.ok()) << config.status().toString();
  EXPECT_TRUE(config->indexer_full.empty());
  EXPECT_EQ(config->n_group, 1);
}

TEST(Glm5ConfigTest, ReadsTokenIdsAsOneIdOrAList) {
  Json c = tinyConfig();
  c["text_config"].erase("eos_token_id");
  c["text_config"].erase("pad_token_id");
  c.erase("eos_token_id");
  c.erase("pad_token_id");
  auto none = parseGlm5Config(c.dump(), "c.json");
  ASSERT_TRUE(none.ok()) << none.status().toString();
  EXPECT_TRUE(none->eos_token_ids.empty());
  EXPECT_EQ(none->pad_token_id, -1);
  c["eos_token_id"] = Json::array({999, 1006, 1008}); // top level, GLM style
  c["text_config"]["pad_token_id"] = 3;
  auto list = parseGlm5Config(c.dump(), "c.json");
  ASSERT_TRUE(list.ok()) << list.status().toString();
  EXPECT_EQ(list->eos_token_ids, (std::vector<int64_t>{999, 1006, 1008}));
  EXPECT_EQ(list->pad_token_id, 3);
  c["text_config"]["eos_token_id"] = 7; // the text config wins
  auto one = parseGlm5Config(c.dump(), "c.json");
  ASSERT_TRUE(one.ok()) << one.status().toString();
  EXPECT_EQ(one->eos_token_ids, (std::vector<int64_t>{7}));
  c["text_config"]["eos_token_id"] = "x";
  EXPECT_THAT(errorOf(c), HasSubstr("text_config.eos_token_id"));
}

TEST(Glm5ConfigTest, MissingIndexKpoolIsAnErrorNotADefault) {
  Json c = tinyConfig();
  c["text_config"].erase("index_kpool");
  EXPECT_EQ(errorOf(c),
            "c.json: required field 'text_config.index_kpool' is missing");
}

TEST(Glm5ConfigTest, RejectsMissingNestedField) {
  Json c = tinyConfig();
  c["text_config"]["linear_attn_config"].erase("kda_layers");
  EXPECT_THAT(errorOf(c), HasSubstr("required field "
                                    "'text_config.linear_attn_config."
                                    "kda_layers' is missing"));
}

TEST(Glm5ConfigTest, RejectsWrongTypes) {
  Json c = tinyConfig();
  c["text_config"]["hidden_size"] = "256";
  EXPECT_THAT(errorOf(c), HasSubstr("field 'text_config.hidden_size' must be "
                                    "an integer, found string"));
  c = tinyConfig();
  c["text_config"]["hidden_size"] = 256.5;
  EXPECT_THAT(errorOf(c), HasSubstr("must be an integer, found number"));
  c = tinyConfig();
  c["text_config"]["layer_types"][1] = 7;
  EXPECT_THAT(errorOf(c), HasSubstr("field 'text_config.layer_types[1]' must "
                                    "be a string, found integer"));
  c = tinyConfig();
  c["text_config"] = 3;
  EXPECT_THAT(errorOf(c), HasSubstr("field 'text_config' must be an object"));
}

TEST(Glm5ConfigTest, RejectsBadJsonAndDuplicateKeys) {
  EXPECT_THAT(std::string(parseGlm5Config("{\"a\":", "c.json")
                              .status()
                              .message()),
              HasSubstr("c.json: invalid JSON at byte"));
  std::string text = tinyConfig().dump();
  text.insert(1, "\"model_type\":\"glm5_next\",");
  EXPECT_THAT(std::string(parseGlm5Config(text, "c.json").status().message()),
              HasSubstr("duplicate key 'model_type' at top level"));
}

TEST(Glm5ConfigTest, RejectsLayerTypesOfWrongLength) {
  Json c = tinyConfig();
  c["text_config"]["layer_types"].erase(4);
  EXPECT_THAT(errorOf(c), HasSubstr("field 'layer_types' has 4 entries, "
                                    "expected num_hidden_layers = 5"));
}

TEST(Glm5ConfigTest, RejectsUnknownLayerType) {
  Json c = tinyConfig();
  c["text_config"]["layer_types"][2] = "sliding_attention";
  EXPECT_THAT(errorOf(c), HasSubstr("field 'text_config.layer_types[2]' has "
                                    "unknown value 'sliding_attention'"));
  c = tinyConfig();
  c["text_config"]["mlp_layer_types"][2] = "moe";
  EXPECT_THAT(errorOf(c), HasSubstr("'text_config.mlp_layer_types[2]' has "
                                    "unknown value 'moe'"));
  c = tinyConfig();
  c["text_config"]["indexer_types"][2] = "half";
  EXPECT_THAT(errorOf(c), HasSubstr("'text_config.indexer_types[2]' has "
                                    "unknown value 'half'"));
}

TEST(Glm5ConfigTest, RejectsTopkNotMultipleOfKpool) {
  Json c = tinyConfig();
  c["text_config"]["index_topk"] = 66;
  EXPECT_THAT(errorOf(c), HasSubstr("field 'index_topk' (66) must be a "
                                    "multiple of index_kpool (4)"));
}

TEST(Glm5ConfigTest, RejectsKdaLayersInconsistentWithLayerTypes) {
  Json c = tinyConfig();
  c["text_config"]["linear_attn_config"]["kda_layers"] = {1, 2, 3, 5};
  EXPECT_THAT(errorOf(c),
              HasSubstr("field 'linear_attn_config.kda_layers' is [1, 2, 3, "
                        "5] but layer_types has linear_attention at [0, 1, "
                        "2, 4]"));
  c = tinyConfig();
  c["text_config"]["linear_attn_config"]["full_attn_layers"] = {4};
  EXPECT_THAT(errorOf(c),
              HasSubstr("field 'linear_attn_config.full_attn_layers' is [4] "
                        "but layer_types has deepseek_sparse_attention at "
                        "[3]"));
}

TEST(Glm5ConfigTest, RejectsMlpTypesInconsistentWithFirstKDense) {
  Json c = tinyConfig();
  c["text_config"]["first_k_dense_replace"] = 2;
  EXPECT_THAT(errorOf(c), HasSubstr("field 'mlp_layer_types[1]' is 'sparse' "
                                    "but first_k_dense_replace = 2"));
}

TEST(Glm5ConfigTest, RejectsUnsupportedValues) {
  Json c = tinyConfig();
  c["text_config"]["qk_rope_head_dim"] = 64;
  EXPECT_THAT(errorOf(c), HasSubstr("'qk_rope_head_dim' must be 0 (NoPE), "
                                    "found 64"));
  c = tinyConfig();
  c["text_config"]["index_kpool"] = 0;
  EXPECT_THAT(errorOf(c), HasSubstr("field 'index_kpool' must be positive, "
                                    "found 0"));
  c = tinyConfig();
  c["quantization_config"]["fmt"] = "e5m2";
  EXPECT_THAT(errorOf(c), HasSubstr("field 'quantization_config.fmt' is "
                                    "'e5m2', only 'e4m3' is supported"));
  c = tinyConfig();
  c["quantization_config"]["weight_block_size"] = {64, 64};
  EXPECT_THAT(errorOf(c), HasSubstr("'quantization_config.weight_block_size' "
                                    "is [64, 64]"));
  c = tinyConfig();
  c["text_config"]["model_type"] = "deepseek_v3";
  EXPECT_THAT(errorOf(c), HasSubstr("'text_config.model_type' is "
                                    "'deepseek_v3'"));
  c = tinyConfig();
  c["tie_word_embeddings"] = true;
  EXPECT_THAT(errorOf(c), HasSubstr("field 'tie_word_embeddings' is true"));
  c = tinyConfig();
  c["text_config"]["num_key_value_heads"] = 1;
  EXPECT_THAT(errorOf(c), HasSubstr("'num_key_value_heads' (1) must equal "
                                    "num_attention_heads (2)"));
  c = tinyConfig();
  c["text_config"]["indexer_types"][3] = "shared";
  EXPECT_THAT(errorOf(c), HasSubstr("'indexer_types[3]' is 'shared' but no "
                                    "earlier MLA layer has a full indexer"));
  c = tinyConfig();
  c["text_config"]["num_experts_per_tok"] = 17;
  EXPECT_THAT(errorOf(c), HasSubstr("'num_experts_per_tok' (17) exceeds "
                                    "n_routed_experts (16)"));
}

TEST(Glm5ConfigTest, LoadReportsUnreadableFile) {
  auto config = loadGlm5Config("/nonexistent/config.json");
  EXPECT_EQ(config.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("cannot open '/nonexistent/config.json'"));
}

} // namespace
} // namespace strata::runtime
