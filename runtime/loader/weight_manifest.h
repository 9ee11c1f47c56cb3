//===- weight_manifest.h - check the weight manifest against a checkpoint -===//
//
// Part of strata. The artifact's weight manifest lists every checkpoint tensor
// the plans bind (name, dtype, shape, transform, fp8 scale tensor). Before any
// weight is loaded the runtime checks the manifest against the checkpoint it
// was given, through a lookup callback, so this file does not depend on the
// checkpoint reader (runtime/checkpoint): wire it with a lambda over that
// reader's tensor table, e.g.
//
//   checkWeightManifest(artifact, [&](std::string_view name)
//       -> std::optional<CheckpointTensorInfo> { ... });
//
// Dtypes cross this boundary as safetensors dtype names ("F32", "BF16",
// "F8_E4M3", ...), the names checkpoint files use themselves.
//
// Thread-safety: pure; the callback is called from the calling thread only.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_LOADER_WEIGHT_MANIFEST_H
#define STRATA_RUNTIME_LOADER_WEIGHT_MANIFEST_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/loader/artifact.h"

namespace strata::runtime {

/// What the checkpoint says about one tensor.
struct CheckpointTensorInfo {
  /// safetensors dtype name, e.g. "BF16".
  std::string dtype;
  /// Extents.
  std::vector<int64_t> shape;
};

/// Returns the tensor's info, or std::nullopt when the checkpoint has no
/// tensor of that name.
using CheckpointLookup =
    std::function<std::optional<CheckpointTensorInfo>(std::string_view name)>;

/// The safetensors name of `dtype` ("F32", "F16", "BF16", "F8_E4M3",
/// "F8_E5M2", "I8", "U8", "I32", "I64", "F64", "BOOL").
std::string_view checkpointDTypeName(artifact::DType dtype);

/// The checkpoint name of expert `expert`'s tensor of a stack_experts entry:
/// the first "{e}" of `pattern` replaced by the number.
std::string expertTensorName(std::string_view pattern, int64_t expert);

/// The checkpoint tensor's shape of `entry` (for stack_experts, of the
/// stacked experts): its shape with every sharded dimension times its parts
/// (a block-scale split: ceil(data extent * parts / block)).
std::vector<int64_t> checkpointShape(const artifact::WeightEntry &entry);

/// Checks every manifest entry (and its fp8 scale tensor) against `lookup`;
/// a sharded entry against the whole checkpoint tensor (every rank's slice
/// is inside it).
/// On mismatch returns INVALID_ARGUMENT listing every bad tensor, each as
/// "tensor '<name>': missing from checkpoint", "... dtype: expected BF16,
/// found F32" or "... shape: expected [256, 512], found [512, 256]".
Status checkWeightManifest(const Artifact &artifact,
                           const CheckpointLookup &lookup);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_LOADER_WEIGHT_MANIFEST_H
