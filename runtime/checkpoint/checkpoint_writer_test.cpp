//===- checkpoint_writer_test.cpp - tests of the procedural writer --------===//

#include "runtime/checkpoint/checkpoint_writer.h"

#include "runtime/base/numeric.h"
#include "runtime/checkpoint/procedural.h"
#include "runtime/checkpoint/test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace strata::runtime {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::tinyConfig;

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CheckpointWriterTest, PlansShardsGreedilyInNameOrder) {
  std::vector<TensorSpec> specs = {
      {"c", DType::kF32, {10}, "", false}, // 40 bytes
      {"a", DType::kF32, {5}, "", false},  // 20
      {"b", DType::kF32, {30}, "", false}, // 120 > limit: alone
      {"d", DType::kBF16, {5}, "", false}, // 10
  };
  auto shards = planShards(specs, 50);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].file_name, "model-00001-of-00003.safetensors");
  ASSERT_EQ(shards[0].tensors.size(), 1u);
  EXPECT_EQ(shards[0].tensors[0]->name, "a");
  ASSERT_EQ(shards[1].tensors.size(), 1u);
  EXPECT_EQ(shards[1].tensors[0]->name, "b");
  ASSERT_EQ(shards[2].tensors.size(), 2u); // c (40) + d (10) = 50, not > 50.
  EXPECT_EQ(shards[2].tensor_bytes, 50u);
}

TEST(CheckpointWriterTest, HeaderAndIndexFormatsAreExact) {
  std::vector<TensorSpec> specs = {
      {"b.weight", DType::kBF16, {2, 3}, "", false},
      {"a", DType::kF32, {1}, "", false},
  };
  auto shards = planShards(specs, 1000);
  ASSERT_EQ(shards.size(), 1u);
  std::string header = shardHeader(shards[0]);
  EXPECT_EQ(header.size() % 8, 0u);
  EXPECT_EQ(header,
            std::string(R"({"__metadata__":{"format":"pt"},)"
                        R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                        R"("b.weight":{"dtype":"BF16","shape":[2,3],)"
                        R"("data_offsets":[4,16]}})") +
                "   ");
  EXPECT_EQ(indexJson(shards), "{\n"
                               "  \"metadata\": {\n"
                               "    \"total_size\": 16\n"
                               "  },\n"
                               "  \"weight_map\": {\n"
                               "    \"a\": \"model-00001-of-00001.safetensors\",\n"
                               "    \"b.weight\": \"model-00001-of-00001.safetensors\"\n"
                               "  }\n"
                               "}\n");
}

// Writes `config` to dir/in.json and a checkpoint to dir/out.
StatusOr<WriteCheckpointSummary> writeTo(const TempDir &dir,
                                         const nlohmann::json &config,
                                         uint64_t shard_bytes) {
  dir.write("in.json", config.dump(2));
  WriteCheckpointOptions options;
  options.config_path = dir.file("in.json");
  options.out_dir = dir.file("out");
  options.max_shard_bytes = shard_bytes;
  return writeProceduralCheckpoint(options);
}

TEST(CheckpointWriterTest, WritesALoadableValidDeterministicCheckpoint) {
  TempDir dir;
  auto summary = writeTo(dir, tinyConfig(), 4 << 20);
  ASSERT_TRUE(summary.ok()) << summary.status().toString();
  EXPECT_GE(summary->num_shards, 2u);
  auto ckpt = Checkpoint::open(dir.file("out"));
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  auto config = loadGlm5Config(dir.file("out/config.json"));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(slurp(dir.file("out/config.json")), slurp(dir.file("in.json")));
  auto manifest = glm5TensorManifest(*config);
  ASSERT_TRUE(manifest.ok());
  ValidateOptions strict;
  strict.reject_unlisted = true;
  EXPECT_TRUE(validateCheckpoint(**ckpt, *manifest, strict).ok());
  EXPECT_EQ((*ckpt)->totalTensorBytes(), summary->total_bytes);

  // BF16 values are the RNE rounding of the procedural values.
  const std::string norm = "model.language_model.layers.2.input_layernorm.weight";
  auto view = (*ckpt)->tensor(norm, DType::kBF16, {256});
  ASSERT_TRUE(view.ok());
  auto values = toF32(*view);
  ProceduralTensor gen(norm, {256});
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ((*values)[i], bf16ToF32(f32ToBf16(gen.value(i)))) << i;
  // F32 tensors hold the exact values.
  const std::string bias = "model.language_model.layers.1.mlp.gate."
                           "e_score_correction_bias";
  auto bias_values = toF32(*(*ckpt)->tensor(bias, DType::kF32, {16}));
  ProceduralTensor bias_gen(bias, {16});
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ((*bias_values)[i], bias_gen.value(i));
  // FP8 weights dequantize close to the master values.
  const std::string w = "model.language_model.layers.3.self_attn.o_proj.weight";
  auto fp8 = (*ckpt)->fp8Weight(w, 256, 512);
  ASSERT_TRUE(fp8.ok()) << fp8.status().toString();
  auto deq = dequantizeFp8(*fp8);
  ProceduralTensor w_gen(w, {256, 512});
  for (int64_t i = 0; i < 256 * 512; i += 97) {
    float v = w_gen.value(i);
    EXPECT_LE(std::fabs((*deq)[i] - v), std::fabs(v) / 16 + 1e-3f) << i;
  }

  // Determinism: a second write is byte-identical.
  TempDir dir2;
  auto again = writeTo(dir2, tinyConfig(), 4 << 20);
  ASSERT_TRUE(again.ok());
  for (std::size_t s = 1; s <= summary->num_shards; ++s) {
    std::string name = fmt::format("out/model-{:05d}-of-{:05d}.safetensors", s,
                                   summary->num_shards);
    EXPECT_EQ(slurp(dir.file(name)), slurp(dir2.file(name))) << name;
  }
  EXPECT_EQ(slurp(dir.file("out/model.safetensors.index.json")),
            slurp(dir2.file("out/model.safetensors.index.json")));
}

// The bytes do not depend on the thread count or the chunk size: one thread
// with the default chunks against 4 threads with 1000-element chunks (tiny
// tensors split into many chunks, waves of 16 chunks crossing tensors, fp8
// scales gathered from chunks written by different threads).
TEST(CheckpointWriterTest, ThreadsAndChunksDoNotChangeTheBytes) {
  TempDir dir;
  dir.write("in.json", tinyConfig().dump(2));
  auto write = [&](const std::string &out, unsigned threads, uint64_t chunk) {
    WriteCheckpointOptions options;
    options.config_path = dir.file("in.json");
    options.out_dir = dir.file(out);
    options.max_shard_bytes = 4 << 20;
    options.threads = threads;
    options.chunk_elements = chunk;
    return writeProceduralCheckpoint(options);
  };
  auto one = write("one", 1, 0);
  ASSERT_TRUE(one.ok()) << one.status().toString();
  auto many = write("many", 4, 1000);
  ASSERT_TRUE(many.ok()) << many.status().toString();
  ASSERT_EQ(one->num_shards, many->num_shards);
  ASSERT_GE(one->num_shards, 2u);
  for (std::size_t s = 1; s <= one->num_shards; ++s) {
    std::string name =
        fmt::format("model-{:05d}-of-{:05d}.safetensors", s, one->num_shards);
    std::string a = slurp(dir.file("one/" + name));
    ASSERT_GT(a.size(), 1000u);
    EXPECT_TRUE(a == slurp(dir.file("many/" + name))) << name;
  }
}

TEST(CheckpointWriterTest, OnlyLayersWritesASlice) {
  TempDir dir;
  dir.write("in.json", tinyConfig().dump());
  WriteCheckpointOptions options;
  options.config_path = dir.file("in.json");
  options.out_dir = dir.file("out");
  options.manifest.only_layers = std::vector<int64_t>{0, 3};
  auto summary = writeProceduralCheckpoint(options);
  ASSERT_TRUE(summary.ok()) << summary.status().toString();
  EXPECT_EQ(summary->num_shards, 1u);
  auto ckpt = Checkpoint::open(dir.file("out"));
  ASSERT_TRUE(ckpt.ok());
  EXPECT_TRUE((*ckpt)->tensor("model.language_model.layers.3.mlp.gate.weight")
                  .ok());
  EXPECT_FALSE((*ckpt)->tensor("model.language_model.layers.1.mlp.gate.weight")
                   .ok());
}

TEST(CheckpointWriterTest, ReportsBadConfigAndUnwritableOutput) {
  TempDir dir;
  nlohmann::json bad = tinyConfig();
  bad["text_config"].erase("index_kpool");
  auto result = writeTo(dir, bad, 0);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("required field 'text_config.index_kpool' is missing"));

  dir.write("file", "x");
  dir.write("in.json", tinyConfig().dump());
  WriteCheckpointOptions options;
  options.config_path = dir.file("in.json");
  options.out_dir = dir.file("file/sub");
  result = writeProceduralCheckpoint(options);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("cannot create output directory"));
  options.out_dir = dir.file("file");
  result = writeProceduralCheckpoint(options);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("cannot create output directory '" + dir.file("file") +
                        "': Not a directory"));
  options.config_path = dir.file("missing.json");
  result = writeProceduralCheckpoint(options);
  EXPECT_EQ(result.status().code(), StatusCode::kNotFound);
}

} // namespace
} // namespace strata::runtime
