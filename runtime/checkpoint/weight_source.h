//===- weight_source.h - where a model's weights come from ----------------===//
//
// Part of strata. The tools' `--checkpoint` value names a WeightSource:
//
//   DIR                      a Hugging Face checkpoint folder (safetensors,
//                            memory-mapped; Checkpoint::open)
//   procedural:CONFIG.json   the procedural weights of that config
//                            (docs/ProceduralWeights.md), generated on the
//                            host's cores when a tensor is asked for: the
//                            same bytes strata-write-checkpoint writes, with
//                            nothing on disk
//
// so that real-width models larger than the disk can be loaded. A source
// answers two questions per tensor: what it is (dtype, shape) and its bytes
// in the safetensors layout. The model executor binds weights through it
// tensor by tensor, so a procedural source never holds more than the tensor
// being uploaded.
//
// Ownership: the caller owns the source. bytes() returns a pointer into the
// source's own mapping (files) or into the caller's `scratch` (procedural);
// it is valid until `scratch` is resized or the source is destroyed.
//
// Thread-safety: find() and description() are safe from any thread; bytes()
// from one thread at a time (the procedural source keeps a small cache of
// fp8 block scales and runs its own generator threads).
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_WEIGHT_SOURCE_H
#define STRATA_RUNTIME_CHECKPOINT_WEIGHT_SOURCE_H

#include "runtime/base/status.h"
#include "runtime/checkpoint/glm5_manifest.h"
#include "runtime/checkpoint/safetensors.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::runtime {

/// The `--checkpoint` prefix that selects procedural weights.
inline constexpr std::string_view kProceduralWeightsPrefix = "procedural:";

/// What a source says about one tensor.
struct WeightInfo {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  /// Elements x dtype size.
  uint64_t byte_size = 0;
};

/// A set of named tensors (see the file comment).
class WeightSource {
public:
  virtual ~WeightSource() = default;
  /// One line for logs: "checkpoint DIR: 1794 tensors, 10.4 GB" or
  /// "procedural weights of CONFIG: ...".
  virtual std::string description() const = 0;
  /// The tensor's dtype and shape; nullopt when the source has no such tensor.
  virtual std::optional<WeightInfo> find(std::string_view name) const = 0;
  /// The tensor's bytes (row-major, little-endian, the safetensors encoding),
  /// byte_size of them: into the source's mapping or into `scratch`.
  /// NOT_FOUND for an unknown name.
  virtual StatusOr<const uint8_t *> bytes(std::string_view name,
                                          std::vector<uint8_t> &scratch) = 0;
  /// Tensors and their summed bytes.
  virtual std::size_t numTensors() const = 0;
  virtual uint64_t totalBytes() const = 0;
};

/// Options of openWeightSource. Zero-initialized fields take the defaults.
struct WeightSourceOptions {
  /// Generator threads of a procedural source (0 = every hardware thread).
  unsigned threads = 0;
};

/// Opens `spec`: `procedural:CONFIG.json` or a checkpoint folder. Errors:
/// NOT_FOUND (no such folder or config), INVALID_ARGUMENT (a bad config or
/// checkpoint; the message names the file).
StatusOr<std::unique_ptr<WeightSource>>
openWeightSource(const std::string &spec, const WeightSourceOptions &options = {});

/// A source over an opened checkpoint (takes ownership).
std::unique_ptr<WeightSource>
checkpointWeightSource(std::unique_ptr<Checkpoint> checkpoint, std::string dir);

/// The procedural weights of `config` (the full manifest of
/// glm5TensorManifest), labelled `config_path` in description().
StatusOr<std::unique_ptr<WeightSource>>
proceduralWeightSource(const Glm5TextConfig &config, std::string config_path,
                       const WeightSourceOptions &options = {});

} // namespace strata::runtime

#endif // STRATA_RUNTIME_CHECKPOINT_WEIGHT_SOURCE_H
