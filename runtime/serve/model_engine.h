//===- model_engine.h - the engine strata-serve serves a model with ---------===//
//
// Part of strata. The single place where strata-serve turns its flags into a
// real Engine (engine.h): the scheduler (batching, paged KV cache, prefix
// reuse, MTP) over the model executor. strata-serve's CLI (cli.h) loads and
// validates the tokenizer and the artifact, then calls createModelEngine;
// everything else the server needs already exists.
//
// Ownership: the returned engine is owned by the caller (the Server). It
// keeps the artifact alive through the shared_ptr.
//
//===----------------------------------------------------------------------===//

#ifndef STRATA_RUNTIME_SERVE_MODEL_ENGINE_H
#define STRATA_RUNTIME_SERVE_MODEL_ENGINE_H

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "runtime/base/progress.h"
#include "runtime/base/status.h"
#include "runtime/executor/rank_groups.h"
#include "runtime/loader/artifact.h"
#include "runtime/serve/engine.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata::runtime::serve {

/// What the model engine is built from.
struct ModelEngineOptions {
  /// A sharded artifact: this process's rank, which must be 0 (the others
  /// follow: runEngineFollower). Empty: one rank.
  std::optional<RankGroupsOptions> ranks;
  /// The validated compiled model (--artifact) and its path.
  std::shared_ptr<const Artifact> artifact;
  std::string artifact_path;
  /// Checkpoint folder with config.json and *.safetensors (--checkpoint).
  std::string checkpoint_dir;
  /// Requests the server admits at once (--max-queue); the engine's queue
  /// needs no more room than this.
  size_t max_queue = 0;
  /// Cache memory budget in bytes (--kv-memory-mb): KV blocks are what is
  /// left after the per-request and snapshot states. Ignored when
  /// kv_blocks is set.
  uint64_t kv_memory_bytes = 256ull << 20;
  /// KV blocks (--kv-blocks); 0: derived from kv_memory_bytes.
  uint64_t kv_blocks = 0;
  /// --gpu-memory-utilization: when > 0 the caches are sized from the
  /// device memory left after the weights (memory_sizing.h) and
  /// kv_memory_bytes / kv_blocks are ignored. 0: off.
  double gpu_memory_utilization = 0;
  /// Receives start-up log lines (the memory sizing, the weights). Optional.
  std::function<void(const std::string &)> log;
  /// Shows the weight upload (bytes, rate, ETA); not owned, must outlive
  /// the engine's creation. Optional.
  ProgressReporter *progress = nullptr;
  /// Artifact target to run on (--target: cpu, sm_90, sm_90a, gfx942, gfx950).
  std::string target = "cpu";
  /// Decode and MTP steps replayed from captured graphs (--step-graphs).
  bool step_graphs = true;
  /// Kernels of graph-replayed steps as programmatic dependent launches
  /// (ExecutorOptions::dependent_launches). Default off.
  bool dependent_launches = false;
  /// Requests running at once (--max-requests).
  uint32_t max_requests = 8;
  /// Tokens per engine step (--max-step-tokens) and per prefill chunk of one
  /// request (--chunk); 0: the scheduler's defaults.
  size_t max_step_tokens = 0, max_chunk_tokens = 0;
  /// max_step_tokens is a default that the device's memory replaces once it
  /// is known (defaultMaxStepTokens: vLLM's 8192 on devices of 70 GiB or
  /// more, else 2048).
  bool step_tokens_from_device = false;
  /// Prefix caching (--prefix-cache on|off) and its KDA checkpoint interval
  /// in tokens (--checkpoint-interval; 0: the default).
  bool prefix_cache = true;
  uint64_t checkpoint_interval_tokens = 0;
  /// KDA snapshot slots of the prefix cache (--snapshot-slots; 0: the
  /// scheduler's default, 2 per running request).
  uint32_t snapshot_slots = 0;
  /// MTP draft tokens per verification (--mtp 0..3).
  uint32_t mtp_draft_tokens = 0;
  /// The draft's step 0 in the same graph as greedy decode and verify steps
  /// (--mtp-draft-with-target, SchedulerOptions::draft_with_target).
  bool mtp_draft_with_target = true;
  /// The draft chain's passes as one step (--mtp-chain-in-one-step,
  /// SchedulerOptions::chain_in_one_step).
  bool mtp_chain_in_one_step = true;
  /// The draft chain after the draft's first pass in the verify's graph
  /// (--mtp-chain-with-target, SchedulerOptions::chain_with_target).
  bool mtp_chain_with_target = true;
  /// Detokenizes for the scheduler's text stream (optional; the server
  /// detokenizes itself).
  const tokenizer::Tokenizer *tokenizer = nullptr;
};

/// Builds the engine that runs the model: the scheduler's engine over the
/// model executor, its caches sized from kv_memory_bytes, kv_blocks or
/// gpu_memory_utilization.
StatusOr<std::unique_ptr<Engine>>
createModelEngine(const ModelEngineOptions &options);

} // namespace strata::runtime::serve

#endif // STRATA_RUNTIME_SERVE_MODEL_ENGINE_H
