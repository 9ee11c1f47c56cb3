//===- weight_manifest_test.cpp - tests of the manifest check -------------===//

#include "runtime/loader/weight_manifest.h"

#include <map>

#include <gtest/gtest.h>

#include "runtime/loader/test_artifact_builder.h"

namespace strata::runtime {
namespace {

using Tensors = std::map<std::string, CheckpointTensorInfo, std::less<>>;

Status check(const Tensors &tensors) {
  auto artifact = Artifact::fromBytes(testing::buildTestArtifact());
  EXPECT_TRUE(artifact.ok());
  return checkWeightManifest(
      **artifact,
      [&](std::string_view name) -> std::optional<CheckpointTensorInfo> {
        auto it = tensors.find(name);
        if (it == tensors.end())
          return std::nullopt;
        return it->second;
      });
}

// Tests that a matching checkpoint passes and extra tensors are ignored.
TEST(WeightManifest, Matches) {
  EXPECT_TRUE(check({{"w", {"F32", {4}}}, {"unused", {"BF16", {2}}}}).ok());
}

// Tests a missing tensor.
TEST(WeightManifest, MissingTensor) {
  Status status = check({});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "checkpoint does not match the artifact's "
                              "weight manifest (1 problems): tensor 'w': "
                              "missing from checkpoint");
}

// Tests that a wrong dtype and a wrong shape are both reported.
TEST(WeightManifest, WrongDtypeAndShape) {
  EXPECT_EQ(check({{"w", {"BF16", {2, 2}}}}).message(),
            "checkpoint does not match the artifact's weight manifest (2 "
            "problems): tensor 'w' dtype: expected F32, found BF16; tensor "
            "'w' shape: expected [4], found [2, 2]");
}

// Tests the safetensors dtype names.
TEST(WeightManifest, DtypeNames) {
  EXPECT_EQ(checkpointDTypeName(artifact::DType::f8e4m3fn), "F8_E4M3");
  EXPECT_EQ(checkpointDTypeName(artifact::DType::bf16), "BF16");
  EXPECT_EQ(checkpointDTypeName(artifact::DType::boolean), "BOOL");
}

} // namespace
} // namespace strata::runtime
