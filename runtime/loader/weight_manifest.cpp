//===- weight_manifest.cpp - check the manifest against a checkpoint ------===//
//
// Part of strata. See weight_manifest.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/loader/weight_manifest.h"

#include <fmt/ranges.h>

#include "runtime/schemas/weight_shard_extent.h"

namespace strata::runtime {

using namespace strata::artifact;

std::string_view checkpointDTypeName(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "F32";
  case DType::f16:
    return "F16";
  case DType::bf16:
    return "BF16";
  case DType::f8e4m3fn:
    return "F8_E4M3";
  case DType::f8e5m2:
    return "F8_E5M2";
  case DType::i8:
    return "I8";
  case DType::u8:
    return "U8";
  case DType::i32:
    return "I32";
  case DType::i64:
    return "I64";
  case DType::f64:
    return "F64";
  case DType::boolean:
    return "BOOL";
  case DType::invalid:
    break;
  }
  return "INVALID";
}

std::string expertTensorName(std::string_view pattern, int64_t expert) {
  std::string name(pattern);
  size_t at = name.find("{e}");
  if (at != std::string::npos)
    name.replace(at, 3, std::to_string(expert));
  return name;
}

namespace {

/// Appends the problems of one tensor to `errors`.
void checkTensor(const CheckpointLookup &lookup, const std::string &name,
                 DType dtype, const std::vector<int64_t> &expected_shape,
                 std::vector<std::string> &errors) {
  std::optional<CheckpointTensorInfo> found = lookup(name);
  if (!found) {
    errors.push_back(fmt::format("tensor '{}': missing from checkpoint", name));
    return;
  }
  std::string_view expected_dtype = checkpointDTypeName(dtype);
  if (found->dtype != expected_dtype)
    errors.push_back(fmt::format("tensor '{}' dtype: expected {}, found {}",
                                 name, expected_dtype, found->dtype));
  if (found->shape != expected_shape)
    errors.push_back(fmt::format("tensor '{}' shape: expected [{}], found [{}]",
                                 name, fmt::join(expected_shape, ", "),
                                 fmt::join(found->shape, ", ")));
}

} // namespace

std::vector<int64_t> checkpointShape(const WeightEntry &entry) {
  std::vector<int64_t> shape;
  if (entry.shape())
    shape.assign(entry.shape()->begin(), entry.shape()->end());
  if (entry.shards())
    for (const WeightShard *shard : *entry.shards())
      if (shard->dim() < shape.size())
        shape[shard->dim()] = weightShardWholeExtent(
            shard->parts(), shape[shard->dim()], shard->data_extent(),
            shard->block());
  return shape;
}

Status checkWeightManifest(const Artifact &artifact,
                           const CheckpointLookup &lookup) {
  const auto *weights = artifact.def().weights();
  if (!weights)
    return okStatus();
  std::vector<std::string> errors;
  for (const WeightEntry *entry : *weights) {
    if (entry->transform() == WeightTransform::stack_experts) {
      // One checkpoint tensor per expert, each of shape shape[1:] (of every
      // rank's experts: the whole tensors of a sharded entry).
      std::vector<int64_t> shape = checkpointShape(*entry);
      for (int64_t e = 0; e < shape[0]; ++e)
        checkTensor(lookup, expertTensorName(entry->name()->str(), e),
                    entry->dtype(),
                    std::vector<int64_t>(shape.begin() + 1, shape.end()),
                    errors);
      continue;
    }
    checkTensor(lookup, entry->name()->str(), entry->dtype(),
                checkpointShape(*entry), errors);
    if (entry->scale_name() && entry->scale_name()->size() > 0) {
      std::vector<int64_t> scale_shape;
      if (entry->scale_shape())
        scale_shape.assign(entry->scale_shape()->begin(),
                           entry->scale_shape()->end());
      checkTensor(lookup, entry->scale_name()->str(), entry->scale_dtype(),
                  scale_shape, errors);
    }
  }
  if (errors.empty())
    return okStatus();
  return invalidArgument("checkpoint does not match the artifact's weight "
                         "manifest ({} problems): {}",
                         errors.size(), fmt::join(errors, "; "));
}

} // namespace strata::runtime
