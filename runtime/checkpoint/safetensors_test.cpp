//===- safetensors_test.cpp - tests of the safetensors reader -------------===//
//
// Every malformed-file case builds its bytes here and checks that the error
// names the file, the tensor and the offending values.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/safetensors.h"

#include "runtime/base/numeric.h"
#include "runtime/checkpoint/test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace strata::runtime {
namespace {

using ::testing::HasSubstr;
using testing::safetensorsImage;
using testing::TempDir;

// Parses `image` as file "t.safetensors"; returns the error message or "ok".
std::string errorOf(const std::string &image) {
  auto file = SafetensorsFile::fromBytes(
      reinterpret_cast<const uint8_t *>(image.data()), image.size(),
      "t.safetensors");
  return file.ok() ? "ok" : std::string(file.status().message());
}

std::string bf16Bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values) {
    uint16_t b = f32ToBf16(v);
    out.push_back(static_cast<char>(b & 0xff));
    out.push_back(static_cast<char>(b >> 8));
  }
  return out;
}

std::string f32Bytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values)
    out.append(reinterpret_cast<const char *>(&v), 4);
  return out;
}

const char *kGoodHeader =
    R"({"__metadata__":{"format":"pt"},)"
    R"("a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";

TEST(SafetensorsTest, ReadsAValidImage) {
  std::string image = safetensorsImage(
      kGoodHeader, bf16Bytes({1.0f, -2.0f, 0.5f, 3.0f}) + f32Bytes({7.25f}));
  auto file = SafetensorsFile::fromBytes(
      reinterpret_cast<const uint8_t *>(image.data()), image.size(), "t");
  ASSERT_TRUE(file.ok()) << file.status().toString();
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  ASSERT_EQ((*file)->entries().size(), 2u);
  const SafetensorsEntry *a = (*file)->find("a");
  ASSERT_NE(a, nullptr);
  TensorView view = (*file)->view(*a);
  EXPECT_EQ(view.dtype, DType::kBF16);
  EXPECT_EQ(view.shape, (std::vector<int64_t>{2, 2}));
  auto values = toF32(view);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<float>{1.0f, -2.0f, 0.5f, 3.0f}));
  auto b = toF32((*file)->view(*(*file)->find("b")));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0], 7.25f);
  EXPECT_EQ((*file)->find("c"), nullptr);
}

TEST(SafetensorsTest, RejectsFileShorterThan8Bytes) {
  EXPECT_THAT(errorOf("abc"), HasSubstr("t.safetensors: file is truncated: 3 "
                                        "bytes"));
}

TEST(SafetensorsTest, RejectsHeaderLengthBeyondFile) {
  std::string image = safetensorsImage(kGoodHeader, "");
  image[0] = static_cast<char>(0xff);
  image[1] = static_cast<char>(0x7f);
  EXPECT_THAT(errorOf(image), HasSubstr("header length 32767 extends beyond"));
}

TEST(SafetensorsTest, RejectsDataBeyondFile) {
  std::string image = safetensorsImage(kGoodHeader, bf16Bytes({1, 2, 3, 4}));
  EXPECT_THAT(errorOf(image),
              HasSubstr("tensor 'b': data_offsets [8, 12] extend beyond the "
                        "data section (8 bytes)"));
}

TEST(SafetensorsTest, RejectsBadHeaderJson) {
  EXPECT_THAT(errorOf(safetensorsImage(R"({"a": )", "")),
              HasSubstr("t.safetensors: header: invalid JSON at byte"));
}

TEST(SafetensorsTest, RejectsNonObjectHeader) {
  EXPECT_THAT(errorOf(safetensorsImage("[1,2]", "")),
              HasSubstr("header must be a JSON object, found array"));
}

TEST(SafetensorsTest, RejectsNonObjectEntry) {
  EXPECT_THAT(errorOf(safetensorsImage(R"({"w":[1,2]})", "")),
              HasSubstr("tensor 'w': header entry must be an object, found "
                        "array"));
}

TEST(SafetensorsTest, RejectsUnknownDtype) {
  EXPECT_THAT(
      errorOf(safetensorsImage(
          R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", "x")),
      HasSubstr("tensor 'w': unknown dtype 'Q4'"));
}

TEST(SafetensorsTest, RejectsByteSizeMismatch) {
  EXPECT_THAT(
      errorOf(safetensorsImage(
          R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,10]}})",
          std::string(10, '\0'))),
      HasSubstr("tensor 'w': dtype BF16 shape [2, 3] needs 12 bytes, but "
                "data_offsets [0, 10] hold 10 bytes"));
}

TEST(SafetensorsTest, RejectsMalformedShapeAndOffsets) {
  EXPECT_THAT(
      errorOf(safetensorsImage(
          R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
          std::string(4, '\0'))),
      HasSubstr("tensor 'w': 'shape' entries must be non-negative integers, "
                "found -1"));
  EXPECT_THAT(errorOf(safetensorsImage(
                  R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})",
                  std::string(4, '\0'))),
              HasSubstr("tensor 'w': 'data_offsets' must be two"));
  EXPECT_THAT(errorOf(safetensorsImage(
                  R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})",
                  std::string(4, '\0'))),
              HasSubstr("tensor 'w': data_offsets [4, 0] are reversed"));
  EXPECT_THAT(
      errorOf(safetensorsImage(
          R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})",
          std::string(4, '\0'))),
      HasSubstr("tensor 'w': unknown header field 'x'"));
}

TEST(SafetensorsTest, RejectsOverlappingOffsets) {
  EXPECT_THAT(
      errorOf(safetensorsImage(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          std::string(8, '\0'))),
      HasSubstr("tensor 'b' data_offsets [4, 8] overlap tensor 'a' "
                "data_offsets [0, 8]"));
}

TEST(SafetensorsTest, RejectsDuplicateTensorName) {
  EXPECT_THAT(
      errorOf(safetensorsImage(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
          R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          std::string(8, '\0'))),
      HasSubstr("t.safetensors: header: duplicate key 'a' at top level"));
}

TEST(SafetensorsTest, RejectsBadMetadata) {
  EXPECT_THAT(errorOf(safetensorsImage(R"({"__metadata__":{"k":1}})", "")),
              HasSubstr("'__metadata__.k' must be a string, found integer"));
}

TEST(SafetensorsTest, OpensAndMapsAFile) {
  TempDir dir;
  dir.write("m.safetensors",
            safetensorsImage(kGoodHeader, bf16Bytes({1, 2, 3, 4}) +
                                              f32Bytes({5})));
  auto file = SafetensorsFile::open(dir.file("m.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().toString();
  EXPECT_EQ((*file)->entries().size(), 2u);
  auto missing = SafetensorsFile::open(dir.file("nope.safetensors"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("nope.safetensors: cannot open"));
  dir.write("empty.safetensors", "");
  EXPECT_THAT(
      std::string(
          SafetensorsFile::open(dir.file("empty.safetensors")).status().message()),
      HasSubstr("file is truncated: 0 bytes"));
}

//===----------------------------------------------------------------------===//
// Sharded checkpoints
//===----------------------------------------------------------------------===//

std::string shardA() {
  return safetensorsImage(
      R"({"x.weight":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
      bf16Bytes({1, 2}));
}
std::string shardB() {
  return safetensorsImage(
      R"({"y.weight":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}})",
      f32Bytes({3, 4}));
}
const char *kIndex = R"({"metadata":{"total_size":12},"weight_map":{
  "x.weight":"a.safetensors","y.weight":"b.safetensors"}})";

std::string openError(const TempDir &dir) {
  auto ckpt = Checkpoint::open(dir.path());
  return ckpt.ok() ? "ok" : std::string(ckpt.status().message());
}

TEST(CheckpointTest, OpensAShardedCheckpoint) {
  TempDir dir;
  dir.write("a.safetensors", shardA());
  dir.write("b.safetensors", shardB());
  dir.write("model.safetensors.index.json", kIndex);
  auto ckpt = Checkpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ((*ckpt)->numTensors(), 2u);
  EXPECT_EQ((*ckpt)->files().size(), 2u);
  EXPECT_EQ((*ckpt)->totalTensorBytes(), 12u);
  EXPECT_EQ((*ckpt)->tensorNames(),
            (std::vector<std::string>{"x.weight", "y.weight"}));
  auto y = (*ckpt)->tensor("y.weight", DType::kF32, {1, 2});
  ASSERT_TRUE(y.ok());
  EXPECT_THAT(std::string(y->file), HasSubstr("b.safetensors"));
}

TEST(CheckpointTest, OpensASingleFileCheckpoint) {
  TempDir dir;
  dir.write("model.safetensors", shardA());
  auto ckpt = Checkpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  EXPECT_EQ((*ckpt)->numTensors(), 1u);
  TempDir empty;
  EXPECT_THAT(openError(empty),
              HasSubstr("no model.safetensors.index.json or model.safetensors"));
}

TEST(CheckpointTest, RejectsIndexNamingAMissingFile) {
  TempDir dir;
  dir.write("a.safetensors", shardA());
  dir.write("model.safetensors.index.json", kIndex);
  EXPECT_THAT(openError(dir), HasSubstr("weight_map names 'b.safetensors', "
                                        "which does not exist (tensor "
                                        "'y.weight')"));
}

TEST(CheckpointTest, RejectsIndexNamingATensorAbsentFromItsFile) {
  TempDir dir;
  dir.write("a.safetensors", shardA());
  dir.write("b.safetensors", shardB());
  dir.write("model.safetensors.index.json",
            R"({"weight_map":{"x.weight":"a.safetensors",)"
            R"("y.weight":"b.safetensors","z.weight":"a.safetensors"}})");
  EXPECT_THAT(openError(dir), HasSubstr("weight_map puts tensor 'z.weight' in "
                                        "'a.safetensors', but that file has "
                                        "no such tensor"));
}

TEST(CheckpointTest, RejectsTensorMissingFromWeightMap) {
  TempDir dir;
  dir.write("c.safetensors",
            safetensorsImage(
                R"({"x.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                R"("y.weight":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                f32Bytes({1, 2})));
  dir.write("model.safetensors.index.json",
            R"({"weight_map":{"x.weight":"c.safetensors"}})");
  EXPECT_THAT(openError(dir), HasSubstr("tensor 'y.weight' in '"));
  EXPECT_THAT(openError(dir), HasSubstr("is not listed in weight_map"));
}

TEST(CheckpointTest, RejectsDuplicateTensorAcrossShards) {
  TempDir dir;
  dir.write("a.safetensors", shardA());
  dir.write("b.safetensors", shardA());
  dir.write("model.safetensors.index.json",
            R"({"weight_map":{"x.weight":"a.safetensors","w":"b.safetensors"}})");
  EXPECT_THAT(openError(dir), HasSubstr("duplicate tensor 'x.weight': in"));
}

TEST(CheckpointTest, RejectsMalformedIndex) {
  TempDir dir;
  dir.write("a.safetensors", shardA());
  dir.write("model.safetensors.index.json", R"({"weight_map":[]})");
  EXPECT_THAT(openError(dir),
              HasSubstr("field 'weight_map' must be an object, found array"));
  dir.write("model.safetensors.index.json",
            R"({"weight_map":{"x.weight":"../a.safetensors"}})");
  EXPECT_THAT(openError(dir), HasSubstr("not a plain file name"));
  dir.write("model.safetensors.index.json",
            R"({"weight_map":{"x.weight":"a.safetensors","x.weight":"a.safetensors"}})");
  EXPECT_THAT(openError(dir),
              HasSubstr("duplicate key 'x.weight' in object 'weight_map'"));
  dir.write("model.safetensors.index.json", R"({"weight_map":{"x.weight":3}})");
  EXPECT_THAT(openError(dir), HasSubstr("weight_map entry 'x.weight' must be "
                                        "a string, found integer"));
  dir.write("model.safetensors.index.json", "{");
  EXPECT_THAT(openError(dir), HasSubstr("invalid JSON"));
}

TEST(CheckpointTest, RejectsCorruptShardNamingTheFile) {
  TempDir dir;
  dir.write("a.safetensors", "1234");
  dir.write("model.safetensors.index.json",
            R"({"weight_map":{"x.weight":"a.safetensors"}})");
  EXPECT_THAT(openError(dir), HasSubstr("a.safetensors: file is truncated"));
}

//===----------------------------------------------------------------------===//
// Typed lookup and FP8
//===----------------------------------------------------------------------===//

TEST(CheckpointTest, TypedLookupNamesTensorAndBothTypes) {
  TempDir dir;
  dir.write("model.safetensors", shardB());
  auto ckpt = Checkpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok());
  auto wrong_dtype = (*ckpt)->tensor("y.weight", DType::kBF16, {1, 2});
  EXPECT_THAT(std::string(wrong_dtype.status().message()),
              HasSubstr("tensor 'y.weight' in '"));
  EXPECT_THAT(std::string(wrong_dtype.status().message()),
              HasSubstr("expected BF16 [1, 2], found F32 [1, 2]"));
  auto wrong_shape = (*ckpt)->tensor("y.weight", DType::kF32, {2, 1});
  EXPECT_THAT(std::string(wrong_shape.status().message()),
              HasSubstr("expected F32 [2, 1], found F32 [1, 2]"));
  auto missing = (*ckpt)->tensor("q.weight");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("tensor 'q.weight' is not in the checkpoint"));
}

// Builds an FP8 weight [rows, cols] with codes `code(r, c)` and per-block
// scales 2^(block index), plus its scale tensor of shape `scale_shape`.
std::string fp8Image(int64_t rows, int64_t cols,
                     std::vector<int64_t> scale_shape) {
  int64_t srows = scale_shape[0], scols = scale_shape[1];
  std::string codes, scales;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      codes.push_back(static_cast<char>(f32ToE4m3(float((r + c) % 7) - 3)));
  for (int64_t i = 0; i < srows * scols; ++i) {
    float s = std::ldexp(1.0f, static_cast<int>(i));
    scales.append(reinterpret_cast<const char *>(&s), 4);
  }
  std::string header = fmt::format(
      R"({{"w.weight":{{"dtype":"F8_E4M3","shape":[{},{}],"data_offsets":[0,{}]}},)"
      R"("w.weight_scale_inv":{{"dtype":"F32","shape":[{},{}],"data_offsets":[{},{}]}}}})",
      rows, cols, codes.size(), srows, scols, codes.size(),
      codes.size() + scales.size());
  return safetensorsImage(header, codes + scales);
}

TEST(CheckpointTest, PairsFp8WeightWithScaleAndDequantizes) {
  TempDir dir;
  dir.write("model.safetensors", fp8Image(130, 200, {2, 2}));
  auto ckpt = Checkpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().toString();
  auto w = (*ckpt)->fp8Weight("w.weight", 130, 200);
  ASSERT_TRUE(w.ok()) << w.status().toString();
  EXPECT_EQ(w->scale_inv.name, "w.weight_scale_inv");
  auto values = dequantizeFp8(*w);
  ASSERT_TRUE(values.ok());
  for (int64_t r : {0, 127, 128, 129})
    for (int64_t c : {0, 127, 128, 199}) {
      float expected = (float((r + c) % 7) - 3) *
                       std::ldexp(1.0f, int((r / 128) * 2 + c / 128));
      EXPECT_EQ((*values)[r * 200 + c], expected) << r << "," << c;
    }
}

TEST(CheckpointTest, RejectsFp8ScaleOfWrongShape) {
  TempDir dir;
  dir.write("model.safetensors", fp8Image(130, 200, {1, 2}));
  auto ckpt = Checkpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok());
  auto w = (*ckpt)->fp8Weight("w.weight", 130, 200);
  EXPECT_THAT(std::string(w.status().message()),
              HasSubstr("scale of fp8 tensor 'w.weight': tensor "
                        "'w.weight_scale_inv' in '"));
  EXPECT_THAT(std::string(w.status().message()),
              HasSubstr("expected F32 [2, 2], found F32 [1, 2]"));
}

TEST(CheckpointTest, RejectsFp8WeightWithoutScale) {
  TempDir dir;
  std::string codes(4, '\0');
  dir.write("model.safetensors",
            safetensorsImage(R"({"w.weight":{"dtype":"F8_E4M3","shape":[2,2],)"
                             R"("data_offsets":[0,4]}})",
                             codes));
  auto ckpt = Checkpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok());
  auto w = (*ckpt)->fp8Weight("w.weight", 2, 2);
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(std::string(w.status().message()),
              HasSubstr("has no scale tensor 'w.weight_scale_inv'"));
  auto bf16 = (*ckpt)->fp8Weight("w.weight", 2, 3);
  EXPECT_THAT(std::string(bf16.status().message()),
              HasSubstr("expected F8_E4M3 [2, 3], found F8_E4M3 [2, 2]"));
}

TEST(CheckpointTest, ToF32RejectsIntegerTensors) {
  TempDir dir;
  dir.write("model.safetensors",
            safetensorsImage(
                R"({"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
                std::string(8, '\0')));
  auto ckpt = Checkpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok());
  auto view = (*ckpt)->tensor("i");
  ASSERT_TRUE(view.ok());
  EXPECT_THAT(std::string(toF32(*view).status().message()),
              HasSubstr("cannot convert dtype I64 to F32"));
}

} // namespace
} // namespace strata::runtime
