//===- checkpoint_writer.h - deterministic procedural checkpoint writer ---===//
//
// Part of strata. Writes a GLM-5.3-Flash checkpoint in the Hugging Face
// layout (sharded model-NNNNN-of-NNNNN.safetensors, an index.json and a
// verbatim config.json) whose tensors are the procedural weights of
// docs/ProceduralWeights.md, byte for byte as that document fixes the
// layout. Tensors are generated in chunks (a 128-row block of an fp8 tensor,
// `chunk_elements` elements of any other) by `threads` worker threads, a wave
// of 4 chunks per thread at a time, while the calling thread writes the
// previous wave in file order; at most two waves are in memory, so
// real-width configs work. The bytes do not depend on the thread count or the
// chunk size.
//
// Ownership: plain values. Thread-safety: one call writes one directory; two
// concurrent calls must use different directories.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_CHECKPOINT_CHECKPOINT_WRITER_H
#define STRATA_RUNTIME_CHECKPOINT_CHECKPOINT_WRITER_H

#include "runtime/base/progress.h"
#include "runtime/base/status.h"
#include "runtime/checkpoint/glm5_manifest.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::runtime {

/// The default shard limit (Hugging Face's "5GB"): 5,000,000,000 bytes.
inline constexpr uint64_t kDefaultMaxShardBytes = 5000000000ull;

/// What to write. Zero-initialized fields take the defaults in comments.
struct WriteCheckpointOptions {
  std::string config_path; ///< Required: config.json to read and copy.
  std::string out_dir;     ///< Required: created if missing.
  /// Shard limit on summed tensor bytes (0 = kDefaultMaxShardBytes).
  uint64_t max_shard_bytes = 0;
  /// Restrict the manifest (default: every tensor).
  ManifestOptions manifest;
  /// Generator threads (0 = std::thread::hardware_concurrency(), at least 1).
  unsigned threads = 0;
  /// Elements per chunk of a non-fp8 tensor (0 = 2^20). Tests make it small
  /// to split tiny tensors.
  uint64_t chunk_elements = 0;
  /// Shows the tensor bytes written (rate, ETA) when set; not owned.
  /// Default: none.
  ProgressReporter *progress = nullptr;
};

/// One shard of a write plan.
struct ShardPlan {
  std::string file_name;
  std::vector<const TensorSpec *> tensors; ///< In write order.
  uint64_t tensor_bytes = 0;
};

/// Result of a write.
struct WriteCheckpointSummary {
  std::size_t num_tensors = 0;
  std::size_t num_shards = 0;
  uint64_t total_bytes = 0; ///< Sum of tensor bytes (index total_size).
};

/// Byte size of one tensor.
uint64_t tensorBytes(const TensorSpec &spec);

/// Sorts `specs` by name (byte-wise) and splits them into shards by the
/// greedy rule of docs/ProceduralWeights.md. Pointers refer into `specs`.
std::vector<ShardPlan> planShards(std::vector<TensorSpec> &specs,
                                  uint64_t max_shard_bytes);

/// The compact safetensors header JSON of one shard, padded with spaces to a
/// multiple of 8 bytes (without the 8-byte length prefix).
std::string shardHeader(const ShardPlan &shard);

/// The model.safetensors.index.json text for `shards`.
std::string indexJson(const std::vector<ShardPlan> &shards);

/// Writes the checkpoint. Errors: INVALID_ARGUMENT (bad config or options),
/// NOT_FOUND (config unreadable), PERMISSION_DENIED / DATA_LOSS (output).
StatusOr<WriteCheckpointSummary>
writeProceduralCheckpoint(const WriteCheckpointOptions &options);

} // namespace strata::runtime

#endif // STRATA_RUNTIME_CHECKPOINT_CHECKPOINT_WRITER_H
