//===- weight_source_test.cpp - tests of checkpoint and procedural sources -===//

#include "runtime/checkpoint/weight_source.h"

#include "runtime/checkpoint/checkpoint_writer.h"
#include "runtime/checkpoint/test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace strata::runtime {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::tinyConfig;

// Writes `config` with strata-write-checkpoint's writer and opens the same
// config as procedural weights; every tensor must have the same dtype,
// shape and bytes in both. `reverse` asks for the tensors in reverse name
// order, so each fp8 scale is asked for before its weight.
void expectSameBytesAsWriter(const nlohmann::json &config, bool reverse,
                             unsigned threads) {
  TempDir dir;
  dir.write("config.json", config.dump(2));
  WriteCheckpointOptions options;
  options.config_path = dir.file("config.json");
  options.out_dir = dir.file("ck");
  options.threads = 2;
  ASSERT_TRUE(writeProceduralCheckpoint(options).ok());
  auto written = openWeightSource(dir.file("ck"));
  ASSERT_TRUE(written.ok()) << written.status().toString();
  WeightSourceOptions source_options;
  source_options.threads = threads;
  auto procedural = openWeightSource(
      std::string(kProceduralWeightsPrefix) + dir.file("config.json"),
      source_options);
  ASSERT_TRUE(procedural.ok()) << procedural.status().toString();
  EXPECT_EQ((*procedural)->numTensors(), (*written)->numTensors());
  EXPECT_EQ((*procedural)->totalBytes(), (*written)->totalBytes());
  EXPECT_THAT((*procedural)->description(),
              HasSubstr("procedural weights of " + dir.file("config.json")));

  auto ck = Checkpoint::open(dir.file("ck"));
  ASSERT_TRUE(ck.ok());
  std::vector<std::string> names = (*ck)->tensorNames();
  if (reverse)
    std::reverse(names.begin(), names.end());
  std::vector<uint8_t> scratch_a, scratch_b;
  std::size_t fp8 = 0;
  for (const std::string &name : names) {
    std::optional<WeightInfo> a = (*written)->find(name);
    std::optional<WeightInfo> b = (*procedural)->find(name);
    ASSERT_TRUE(a && b) << name;
    EXPECT_EQ(a->dtype, b->dtype) << name;
    EXPECT_EQ(a->shape, b->shape) << name;
    ASSERT_EQ(a->byte_size, b->byte_size) << name;
    fp8 += b->dtype == DType::kF8E4M3;
    auto bytes_a = (*written)->bytes(name, scratch_a);
    auto bytes_b = (*procedural)->bytes(name, scratch_b);
    ASSERT_TRUE(bytes_a.ok() && bytes_b.ok()) << name;
    ASSERT_EQ(std::memcmp(*bytes_a, *bytes_b, a->byte_size), 0) << name;
  }
  EXPECT_EQ(fp8 > 0, config.contains("quantization_config"));
}

// Tests that the tiny fp8 config's procedural bytes equal the written
// checkpoint's, in name order (scales from the cache) and in reverse order
// (scales computed alone).
TEST(WeightSourceTest, ProceduralFp8EqualsWriter) {
  expectSameBytesAsWriter(tinyConfig(), /*reverse=*/false, 3);
  expectSameBytesAsWriter(tinyConfig(), /*reverse=*/true, 1);
}

// Tests partial 128 x 128 blocks at the bottom and right edges of fp8
// weights (experts [96, 256] and [256, 96]).
TEST(WeightSourceTest, ProceduralFp8PartialBlocksEqualWriter) {
  nlohmann::json config = tinyConfig();
  config["text_config"]["moe_intermediate_size"] = 96;
  expectSameBytesAsWriter(config, /*reverse=*/false, 4);
}

// Tests the bf16 config (no quantization_config).
TEST(WeightSourceTest, ProceduralBf16EqualsWriter) {
  nlohmann::json config = tinyConfig();
  config.erase("quantization_config");
  expectSameBytesAsWriter(config, /*reverse=*/false, 2);
}

// Tests the errors of openWeightSource.
TEST(WeightSourceTest, OpenErrors) {
  TempDir dir;
  auto no_folder = openWeightSource(dir.file("nothing"));
  EXPECT_EQ(no_folder.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(no_folder.status().message(),
              HasSubstr("checkpoint folder " + dir.file("nothing") +
                        " does not exist"));
  auto empty = openWeightSource("procedural:");
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(),
              HasSubstr("expected procedural:CONFIG.json"));
  auto no_config = openWeightSource("procedural:" + dir.file("none.json"));
  EXPECT_FALSE(no_config.ok());
  EXPECT_THAT(no_config.status().message(), HasSubstr("none.json"));
  nlohmann::json bad = tinyConfig();
  bad["text_config"].erase("index_kpool");
  dir.write("bad.json", bad.dump());
  auto bad_config = openWeightSource("procedural:" + dir.file("bad.json"));
  EXPECT_EQ(bad_config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_config.status().message(), HasSubstr("index_kpool"));
  dir.write("good.json", tinyConfig().dump());
  auto good = openWeightSource("procedural:" + dir.file("good.json"));
  ASSERT_TRUE(good.ok());
  std::vector<uint8_t> scratch;
  auto unknown = (*good)->bytes("no.such.tensor", scratch);
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE((*good)->find("no.such.tensor").has_value());
}

} // namespace
} // namespace strata::runtime
