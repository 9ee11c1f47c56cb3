//===- glm5_manifest.h - the GLM-5.3-Flash checkpoint tensor list ---------===//
//
// Part of strata. glm5TensorManifest() lists every tensor (name, dtype,
// shape) a GLM-5.3-Flash checkpoint holds for a config: the target layers
// under `model.language_model.layers.{i}.`, the MTP layers after them
// (index num_hidden_layers + k), the embedding, final norm and the top-level
// `lm_head.weight`. It follows glm5_next-target.md section 4 and
// glm5_next-indexer-mtp-cache.md section 4.1; dtypes the spec leaves open are
// fixed here and listed in docs/Checkpoint.md. validateCheckpoint() compares
// a loaded checkpoint with a manifest.
//
// Ownership: plain values. Thread-safety: pure functions.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_GLM5_MANIFEST_H
#define STRATA_RUNTIME_CHECKPOINT_GLM5_MANIFEST_H

#include "runtime/checkpoint/glm5_config.h"
#include "runtime/checkpoint/safetensors.h"

#include <optional>
#include <string>
#include <vector>

namespace strata::runtime {

/// One checkpoint tensor.
struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  /// For an F8_E4M3 weight: the name of its F32 scale tensor (also in the
  /// manifest). For a scale tensor: the name of its weight. Else empty.
  std::string fp8_partner;
  /// True for a `..._scale_inv` tensor (derived from its weight, not
  /// procedural itself).
  bool is_scale_inv = false;
};

/// Selection of the manifest. Zero-initialized = the whole checkpoint.
struct ManifestOptions {
  /// When set, only these checkpoint layers (target 0..L-1 or MTP L..) plus
  /// the global tensors (embed_tokens, norm, lm_head). Default: all layers.
  std::optional<std::vector<int64_t>> only_layers;
};

/// Prefix of every language-model tensor except lm_head.
inline constexpr const char *kGlm5Prefix = "model.language_model.";

/// The tensor list, in model order (globals, then layer by layer). Fails
/// (INVALID_ARGUMENT) only when `options.only_layers` names a layer outside
/// [0, num_hidden_layers + num_nextn_predict_layers).
StatusOr<std::vector<TensorSpec>>
glm5TensorManifest(const Glm5TextConfig &config,
                   const ManifestOptions &options = {});

/// Options of validateCheckpoint. Zero-initialized = defaults.
struct ValidateOptions {
  /// Also fail on checkpoint tensors the manifest does not list (default:
  /// allowed, e.g. the vision tower `model.visual.*`).
  bool reject_unlisted = false;
  /// Cap on the problems quoted in the message (0 = 20).
  int max_reported = 0;
};

/// Checks that every manifest tensor exists with its dtype and shape.
/// INVALID_ARGUMENT lists each problem: "missing tensor 'x'", "tensor 'x' in
/// 'f': expected BF16 [4, 8], found F32 [4, 8]", "unlisted tensor 'y'".
Status validateCheckpoint(const Checkpoint &checkpoint,
                          const std::vector<TensorSpec> &manifest,
                          const ValidateOptions &options = {});

} // namespace strata::runtime

#endif // STRATA_RUNTIME_CHECKPOINT_GLM5_MANIFEST_H
